//! The stamp card: `coord startup`, `coord shutdown`, `coord partners`.

use serde::Deserialize;

use crate::planted::{Bed, Case, Step, always, dir_fails, dir_ok, never, read, sweep, write, zero};
use crate::support::Env;

#[derive(Debug, Deserialize)]
struct Partners {
    partners: Vec<Row>,
}

#[derive(Debug, Deserialize)]
struct Row {
    id: u64,
    partner_name: String,
    status: String,
    clocked_in: String,
    clocked_out: Option<String>,
    last_heartbeat: Option<String>,
    current_task: Option<String>,
    session_id: String,
}

fn partners(env: &Env) -> Vec<Row> {
    env.cmd()
        .args(["partners", "--json"])
        .ok()
        .json::<Partners>()
        .partners
}

fn row_file(id: u64) -> String {
    format!(".coord/partners/{id:010}.session")
}

#[test]
fn a_silent_old_session_is_marked_crashed_by_the_next_startup() {
    let env = Env::new();
    // A session clocked in ten minutes ago and never clocked out.
    env.cmd()
        .env("COORD_NOW", "2026-01-28T01:00:00+01:00")
        .args(["startup", "--partner", "claude", "--task", "Task_1"])
        .ok();
    // One written by hand, seed style (offset-less times), by an agent without coord: the next
    // id up.
    env.write(
        &row_file(2),
        "id: 2\npartner_name: claude\nstatus: online\nclocked_in: 2026-01-28T00:00:00\nlast_heartbeat: 2026-01-28T00:01:00\ncurrent_task: old\nsession_id: by-hand\n",
    );
    // Another partner's silent session is not ours to judge.
    env.write(
        &row_file(3),
        "partner_name: gemini\nstatus: online\nclocked_in: 2026-01-28T00:00:00\n",
    );
    let out = env
        .cmd()
        .args(["startup", "--partner", "claude", "--task", "Task_2"])
        .ok();
    out.stdout_has("Marked crashed: earlier session by-hand (row 2)")
        .stdout_has("(row 1) never clocked out: no heartbeat for")
        .stdout_has("Clocked in: claude");
    let rows = partners(&env);
    let by_id = |id: u64| rows.iter().find(|r| r.id == id).unwrap();
    assert_eq!(by_id(1).status, "crashed");
    assert_eq!(by_id(2).status, "crashed");
    assert_eq!(by_id(3).status, "online", "gemini's row is left alone");
    let new = rows.last().unwrap();
    assert_eq!(new.id, 4, "ids keep increasing past rows written by hand");
    assert_eq!(new.status, "online");
    assert_eq!(new.current_task.as_deref(), Some("Task_2"));
    assert!(new.clocked_out.is_none());
    assert!(env.read(&row_file(2)).contains("status: crashed\n"));

    // A fresh session of the same partner is not crashed by a second startup.
    env.cmd().args(["startup", "--partner", "claude"]).ok();
    assert_eq!(
        partners(&env).iter().find(|r| r.id == 4).unwrap().status,
        "online"
    );
}

#[test]
fn shutdown_clocks_out_finishes_the_presence_and_releases_each_lock() {
    let env = Env::new();
    env.write("a.md", "a");
    env.write("docs/b.md", "b");
    env.cmd()
        .args(["startup", "--partner", "claude", "--task", "Task_123"])
        .ok();
    env.agent("claude").args(["lock", "a.md", "docs/b.md"]).ok();
    env.agent("gemini").args(["presence", ".", "x"]).ok();
    env.agent("gemini").args(["lock", "c.md"]).ok();
    let out = env.agent("claude").args(["shutdown"]).ok();
    out.stdout_has("Lock released: a.md")
        .stdout_has("Lock released: docs/b.md")
        .stdout_has("Clocked out: claude")
        .stdout_has("Presence: FINISHED");
    assert!(!env.exists("a.md.lock.claude"));
    assert!(!env.exists("docs/b.md.lock.claude"));
    assert!(env.exists("c.md.lock.gemini"), "others' locks stay");
    let row = &partners(&env)[0];
    assert_eq!(row.partner_name, "claude");
    assert_eq!(row.status, "offline");
    assert!(row.clocked_out.is_some());
    assert!(row.last_heartbeat.is_some());
    assert!(!row.clocked_in.is_empty());
    assert!(!row.session_id.is_empty());
    let presence = env.read(".claude_presence");
    assert!(presence.contains("status: FINISHED\n"), "{presence}");
    assert!(presence.contains("lock_status: FREE\n"), "{presence}");

    // Nothing open any more: said so, still fine.
    env.agent("claude")
        .args(["shutdown"])
        .ok()
        .stdout_has("No open session of claude");
}

#[test]
fn partner_new_picks_a_free_name() {
    let env = Env::new();
    // partner-1 has a presence, partner-2 a row: both names are taken.
    env.agent("partner-1").args(["presence", ".", "x"]).ok();
    env.write(
        &row_file(1),
        "partner_name: partner-2\nstatus: offline\nclocked_in: 2026-01-28T00:00:00\n",
    );
    env.cmd()
        .args(["startup", "--partner", "new", "--mode", "silent"])
        .ok()
        .stdout_has("Partner name: partner-3");
    assert!(env.exists(".partner-3_presence"));
    let out = env
        .cmd()
        .args(["startup", "--partner", "new", "--json"])
        .ok();
    let v: serde_json::Value = out.json();
    assert_eq!(v["partner"], "partner-4");
    assert_eq!(v["picked"], true);
    assert_eq!(v["row"]["partner_name"], "partner-4");
}

#[test]
fn partner_and_agent_must_agree() {
    let env = Env::new();
    let before = env.snapshot();
    env.agent("claude")
        .args(["startup", "--partner", "gemini"])
        .code(2)
        .stderr_has("error:");
    env.agent("claude")
        .args(["startup", "--partner", "new"])
        .code(2);
    env.cmd()
        .args(["startup"])
        .code(2)
        .stderr_has("COORD_AGENT");
    env.cmd()
        .args(["startup", "--partner", "../x"])
        .code(2)
        .stderr_has("invalid agent name");
    assert_eq!(env.snapshot(), before, "nothing written");
    // The same agent both ways is fine; `-a` alone too.
    env.agent("Claude")
        .args(["startup", "--partner", "claude"])
        .ok();
    env.agent("gemini").args(["startup"]).ok();
}

#[test]
fn startup_lists_partners_and_recommends_a_handshake() {
    let env = Env::new();
    env.cmd()
        .args(["startup", "--partner", "claude", "--task", "Task_123"])
        .ok()
        .stdout_has("Partners online: none")
        .stdout_lacks("handshake");
    let out = env
        .cmd()
        .args(["startup", "--partner", "gemini", "--mode", "verbose"])
        .ok();
    out.stdout_has("claude")
        .stdout_has("Task_123")
        .stdout_has("Active agents: claude, gemini")
        .stdout_has("run `coord handshake`");
    let silent = env
        .cmd()
        .args(["startup", "--partner", "copilot", "--mode", "silent"])
        .ok();
    silent
        .stdout_lacks("Partners online")
        .stdout_has("Clocked in: copilot")
        .stdout_has("3 agents are active");
    env.cmd()
        .args(["partners"])
        .ok()
        .stdout_has("PARTNER")
        .stdout_has("copilot")
        .stdout_has("online");
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st["partners"].as_array().unwrap().len(), 3);
}

#[test]
fn a_corrupt_row_is_reported_not_fatal() {
    let env = Env::new();
    env.cmd().args(["startup", "--partner", "claude"]).ok();
    env.write(&row_file(2), [0u8, 159, 146, 150, 255]);
    let out = env.cmd().args(["partners", "--json"]).ok();
    out.stderr_has("0000000002.session");
    assert_eq!(out.json::<Partners>().partners.len(), 1);
    env.cmd().args(["startup", "--partner", "gemini"]).ok();
    assert_eq!(partners(&env).last().unwrap().id, 3);
}

#[test]
fn presence_heartbeats_keep_the_stamp_card_row_alive() {
    let env = Env::new();
    // Clocked in long ago; since then the agent only ran `coord presence` by hand.
    env.cmd()
        .env("COORD_NOW", "2026-01-28T01:00:00+01:00")
        .args(["startup", "--partner", "claude"])
        .ok();
    env.agent("claude")
        .args(["presence", ".", "still here"])
        .ok();
    let row = partners(&env).pop().unwrap();
    assert_ne!(
        row.last_heartbeat.as_deref(),
        Some("2026-01-28T01:00:00+01:00")
    );
    // So a second startup of the same partner does not take the first for crashed.
    env.cmd()
        .args(["startup", "--partner", "claude"])
        .ok()
        .stdout_lacks("Marked crashed");
    assert!(partners(&env).iter().all(|r| r.status == "online"));
}

// --- stamp card ---

fn clocked_in(bed: &Bed) {
    bed.run(Some("claude"), &["startup", "--partner", "claude"]);
}

const STAMP_STEPS: &[Step] = &[
    read(None, &["partners"], zero),
    read(None, &["partners", "--json"], zero),
    read(None, &["status"], zero),
    write(Some("gemini"), &["startup", "--partner", "gemini"], zero),
    write(Some("claude"), &["shutdown"], zero),
    write(Some("claude"), &["startup", "--partner", "claude"], zero),
];

#[test]
fn hostile_stamp_card_rows() {
    sweep(&Case {
        target: ".coord/partners/0000000001.session",
        setup: clocked_in,
        age: 0,
        // Even a small one has no `partner_name`: listed.
        listed: always,
        steps: STAMP_STEPS,
    });
}

#[test]
fn hostile_stamp_card_counter_and_folder() {
    // A damaged counter is recounted from the rows; only a folder cannot be replaced.
    sweep(&Case {
        target: ".coord/partners/seq",
        setup: clocked_in,
        age: 0,
        listed: never,
        steps: &[
            read(None, &["partners"], zero),
            read(None, &["status"], zero),
            write(
                Some("gemini"),
                &["startup", "--partner", "gemini"],
                dir_fails,
            ),
            write(Some("claude"), &["shutdown"], zero),
            write(
                Some("claude"),
                &["startup", "--partner", "claude"],
                dir_fails,
            ),
        ],
    });
    sweep(&Case {
        target: ".coord/partners",
        setup: clocked_in,
        age: 0,
        listed: never,
        steps: &[
            read(None, &["partners", "--json"], zero),
            read(None, &["status"], zero),
            write(Some("gemini"), &["startup", "--partner", "gemini"], dir_ok),
            write(Some("claude"), &["shutdown"], zero),
        ],
    });
}

#[test]
fn hostile_index_of_open_rows() {
    sweep(&Case {
        target: ".coord/partners/open",
        setup: clocked_in,
        age: 0,
        listed: never,
        steps: STAMP_STEPS,
    });
}

/// A card written before the index of open rows gets one at the next startup, from the whole
/// card; rows written by hand later (ids above the counter) are still found and kept alive.
#[test]
fn the_index_of_open_rows_follows_the_card_and_rows_written_by_hand() {
    let env = Env::new();
    env.write(".coord/partners/seq", "4\n");
    env.write(
        &row_file(3),
        "id: 3\npartner_name: claude\nstatus: online\nclocked_in: 2026-01-28T00:00:00\nlast_heartbeat: 2026-01-28T00:01:00\nsession_id: old-open\n",
    );
    env.write(
        &row_file(4),
        "id: 4\npartner_name: claude\nstatus: offline\nclocked_in: 2026-01-28T00:00:00\nclocked_out: 2026-01-28T00:02:00\nsession_id: old-closed\n",
    );
    env.cmd()
        .args(["startup", "--partner", "claude"])
        .ok()
        .stdout_has("Marked crashed: earlier session old-open (row 3)")
        .stdout_lacks("old-closed");
    let mut open: Vec<String> = std::fs::read_dir(env.path(".coord/partners/open"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    open.sort();
    assert_eq!(open, ["3", "5"], "the crashed row and the new one are open");
    // A row written by hand after that, the next id up, is kept alive by heartbeats.
    env.write(
        &row_file(6),
        "id: 6\npartner_name: claude\nstatus: online\nclocked_in: 2026-01-28T00:00:00\nlast_heartbeat: 2026-01-28T00:01:00\nsession_id: by-hand\n",
    );
    env.agent("claude").args(["presence", ".", "here"]).ok();
    assert!(
        !env.read(&row_file(6))
            .contains("last_heartbeat: 2026-01-28T00:01:00"),
        "{}",
        env.read(&row_file(6))
    );
    // Clocking out closes every open row of the partner and empties the index of them.
    env.agent("claude").args(["shutdown"]).ok();
    let rows = partners(&env);
    let status = |id: u64| rows.iter().find(|r| r.id == id).unwrap().status.clone();
    assert_eq!(status(5), "offline");
    assert_eq!(status(6), "offline");
    assert_eq!(status(4), "offline");
    assert!(!env.exists(".coord/partners/open/5") && !env.exists(".coord/partners/open/6"));
}

/// Rows of earlier sessions are not read to clock in or out: ids go on from the counter, past
/// the rows written by hand right above it, whether their names carry the zeros or not.
#[test]
fn ids_go_on_past_rows_written_by_hand_above_the_counter() {
    let env = Env::new();
    env.cmd().args(["startup", "--partner", "claude"]).ok();
    env.cmd()
        .args(["shutdown"])
        .env("COORD_AGENT", "claude")
        .ok();
    assert_eq!(env.read(".coord/partners/seq").trim(), "1");
    env.write(
        &row_file(2),
        "id: 2\npartner_name: gemini\nstatus: offline\nclocked_in: 2026-01-28T00:00:00\n",
    );
    env.write(
        ".coord/partners/3.session",
        "id: 3\npartner_name: qwen\nstatus: offline\nclocked_in: 2026-01-28T00:00:00\n",
    );
    env.cmd().args(["startup", "--partner", "claude"]).ok();
    assert_eq!(env.read(".coord/partners/seq").trim(), "4");
    assert!(env.read(&row_file(4)).contains("partner_name: claude\n"));
    assert!(
        env.read(".coord/partners/3.session")
            .contains("partner_name: qwen\n")
    );
    assert!(env.read(&row_file(2)).contains("partner_name: gemini\n"));
}

/// A client hook's heartbeat keeps the session's stamp-card row alive even when the presence is
/// fresh already (a lock just refreshed it, not the row): left old, the row would be taken for
/// crashed by the partner's next startup.
#[test]
fn a_hook_heartbeat_refreshes_an_old_row_behind_a_fresh_presence() {
    let env = Env::new();
    let agent = "claude-7684f1ed";
    env.cmd()
        .env("COORD_NOW", "2026-01-28T01:00:00+01:00")
        .args(["startup", "--partner", agent])
        .ok();
    env.write("x.txt", "x\n");
    env.agent(agent).args(["lock", "x.txt"]).ok();
    let payload = crate::clients::hooks::fixture_json(
        &env,
        &format!(
            "{}/write_allow.PostToolUse.json",
            crate::clients::hooks::CLAUDE
        ),
    );
    crate::clients::hooks::hook(&env, "claude", &payload.to_string(), &[]);
    let row = partners(&env)
        .into_iter()
        .find(|r| r.partner_name == agent)
        .unwrap();
    assert_eq!(row.status, "online");
    assert_ne!(
        row.last_heartbeat.as_deref(),
        Some("2026-01-28T01:00:00+01:00"),
        "the row was left as the startup wrote it"
    );
}
