//! Locks and the presence judgement at the edges the other tests did not reach: each test here
//! fails on a realistic bug that `cargo mutants` showed the rest of the suite would let through
//! (see docs/reliability.md, "Mutation testing").

use crate::support::Env;

fn field(env: &Env, agent: &str, key: &str) -> Option<String> {
    env.read(&format!(".{agent}_presence"))
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{key}:"))
                .map(|v| v.trim().to_string())
        })
}

/// The display name follows the spelling last given, except that a name given in lower case
/// does not replace a capitalised one of the same id.
#[test]
fn the_display_name_follows_the_spelling_given() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("claude"));
    env.agent("Claude").args(["unlock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("Claude"));
    env.agent("claude").args(["lock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("Claude"));
    env.agent("CLAUDE").args(["unlock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("CLAUDE"));
}

/// A lock names its first file as the agent's `current_file`; after its last unlock the
/// presence is back in the seed's form: no `locks` line.
#[test]
fn the_last_unlock_leaves_a_presence_in_the_seed_form() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    env.write("b.txt", "x\n");
    env.agent("claude").args(["lock", "a.txt", "b.txt"]).ok();
    assert!(field(&env, "claude", "locks").is_some());
    assert_eq!(
        field(&env, "claude", "current_file").as_deref(),
        Some("a.txt")
    );
    env.agent("claude").args(["unlock", "a.txt"]).ok();
    assert_eq!(
        field(&env, "claude", "locks").as_deref(),
        Some(r#"["b.txt"]"#)
    );
    env.agent("claude").args(["unlock", "b.txt"]).ok();
    let text = env.read(".claude_presence");
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        [
            "Agent",
            "status",
            "started",
            "heartbeat",
            "working_on",
            "current_file",
            "lock_status"
        ],
        "{text}"
    );
    assert_eq!(
        field(&env, "claude", "lock_status").as_deref(),
        Some("FREE")
    );
}

/// An agent that said it is done stays FINISHED through later commands that only update its
/// locks; `startup` makes it ACTIVE again.
#[test]
fn finished_stays_finished_until_startup() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("claude").args(["shutdown"]).ok();
    assert_eq!(field(&env, "claude", "status").as_deref(), Some("FINISHED"));
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "status").as_deref(), Some("FINISHED"));
    env.agent("claude").args(["startup"]).ok();
    assert_eq!(field(&env, "claude", "status").as_deref(), Some("ACTIVE"));
}

/// "held by X since T": `HH:MM` for a lock taken today, the date too for an older one.
#[test]
fn held_since_shows_the_date_only_for_another_day() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("gemini")
        .env("TZ", "UTC")
        .env("COORD_NOW", "2026-01-27T23:50:00+00:00")
        .args(["lock", "f.txt", "--ttl", "1h"])
        .ok();
    env.agent("claude")
        .env("TZ", "UTC")
        .env("COORD_NOW", "2026-01-27T23:58:00+00:00")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("is held by gemini since 23:50");
    env.agent("claude")
        .env("TZ", "UTC")
        .env("COORD_NOW", "2026-01-28T00:10:00+00:00")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("is held by gemini since 2026-01-27 23:50");
}

/// A wait that ran out is reported in whole seconds.
#[test]
fn a_wait_that_ran_out_is_reported_in_whole_seconds() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("gemini").args(["lock", "f.txt"]).ok();
    env.agent("claude")
        .args(["lock", "f.txt", "--wait", "1s"])
        .code(3)
        .stderr_has("gave up waiting for `f.txt` after 1s: held by gemini");
}

/// `--no-wait` never waits, so it can close no cycle: a held file is reported as held, even
/// when its holder waits for a file the asker holds.
#[test]
fn a_no_wait_lock_reports_the_holder_not_a_deadlock() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write("g.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("gemini").args(["lock", "g.txt"]).ok();
    let waiter = env
        .agent("claude")
        .args(["lock", "g.txt", "--wait", "30s"])
        .spawn();
    crate::support::eventually("claude waits", || {
        env.read(".claude_presence").contains("WAITING")
    });
    let out = env
        .agent("gemini")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3);
    out.stderr_has("is held by claude");
    assert!(
        !out.stderr.to_lowercase().contains("deadlock"),
        "{}",
        out.stderr
    );
    env.agent("gemini").args(["unlock", "g.txt"]).ok();
    let got = crate::support::finish(waiter);
    assert_eq!(got.code, Some(0), "{}", got.stderr);
}

/// `status --json` shows a lock's `locked_at` as written (a hand-made one has no offset) and
/// the session it was taken in.
#[test]
fn status_json_shows_locked_at_and_session_as_written() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write(
        "f.txt.lock.claude",
        "Agent: Claude\nlocked_at: 2026-01-28T01:00:00\nfile: f.txt\nsession: s-123\nttl: 100000h\n",
    );
    let out = env.agent("gemini").args(["status", "--json"]).ok();
    let status: serde_json::Value = out.json();
    let lock = &status["locks"][0];
    assert_eq!(lock["file"], "f.txt");
    assert_eq!(lock["locked_at"], "2026-01-28T01:00:00");
    assert_eq!(lock["session"], "s-123");
    assert_eq!(lock["state"], "LIVE");
}
