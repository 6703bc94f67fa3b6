//! `coord status` and `coord who`: what they show people and scripts about agents and locks,
//! whatever the lock files hold.

use crate::locks::lock_unlock::status;
use crate::planted::{ALL, Bed, StatusDoc, expect, plant};
use crate::support::Env;

/// A lock file whose name is not UTF-8 is shown by `status` (lossy name, flagged) and counted
/// by `check --strict`.
#[test]
fn a_lock_with_a_non_utf8_name_is_shown_and_counted() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt.lock.gemini");
    let path = env.root().join(name);
    std::fs::write(
        &path,
        "Agent: Gemini\nlocked_at: 2000-01-01T00:00:00+00:00\nfile: caf.txt\n",
    )
    .unwrap();
    let out = env.cmd().args(["status"]).ok();
    assert!(out.stdout.contains("caf\u{FFFD}.txt"), "{}", out.stdout);
    assert!(out.stdout.contains("not valid UTF-8"), "{}", out.stdout);
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("caf\u{FFFD}.txt");
}

#[test]
fn escape_sequences_in_a_lock_file_never_reach_the_terminal() {
    let bed = Bed::new();
    std::fs::write(
        bed.at("a.md.lock.ghost"),
        "Agent: \u{1b}[2J\u{1b}]0;pwned\u{7}Ghost\nreason: \u{1b}[31mred\n",
    )
    .unwrap();
    let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
    expect(&out, 3);
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
    let status = bed.run(None, &["status"]);
    assert!(!status.stdout.contains('\u{1b}'), "{:?}", status.stdout);
    let check = bed.run(None, &["check"]);
    assert!(!check.stderr.contains('\u{1b}') && !check.stdout.contains('\u{1b}'));
}

#[test]
fn every_kind_at_once_in_one_workspace_still_gives_a_status() {
    // The whole zoo in one workspace: status lists each unreadable file once and goes on.
    let bed = Bed::new();
    for (i, kind) in ALL.iter().enumerate() {
        plant(&bed.at(&format!(".p{i}_presence")), *kind, &bed.victim());
        plant(&bed.at(&format!("a.md.lock.l{i}")), *kind, &bed.victim());
    }
    let out = bed.run(None, &["status", "--json"]);
    expect(&out, 0);
    let doc: StatusDoc = out.json();
    let unreadable = ALL.iter().filter(|k| !k.readable()).count();
    assert_eq!(doc.unreadable.len(), 2 * unreadable, "{:?}", doc.unreadable);
    assert_eq!(doc.locks.len(), ALL.len());
    assert!(doc.locks.iter().all(|l| l.state == "CONFLICT"));
    bed.assert_victim_untouched();
}

/// A `.gitignore` that is no small regular file (a FIFO, a folder, a link to one, 100 MiB),
/// in the workspace's folder or the one above it, is not opened by the walk of the tree: the
/// status comes in time and still lists a hand-made lock under that folder.
#[test]
fn a_hostile_gitignore_neither_stalls_the_status_nor_hides_a_lock() {
    use crate::planted::{Kind, LIMIT, bounded};
    for kind in [Kind::Fifo, Kind::Dir, Kind::Huge, Kind::Symlink] {
        let bed = Bed::new();
        std::fs::create_dir_all(bed.at("sub/deep")).unwrap();
        std::fs::write(bed.at("sub/deep/F"), "f\n").unwrap();
        let lock = "Agent: hand\nlocked_at: 2099-01-01T00:00:00+00:00\nfile: F\n";
        std::fs::write(bed.at("sub/deep/F.lock.hand"), lock).unwrap();
        let fifo = bed.env.path("fifo");
        plant(&fifo, Kind::Fifo, &bed.victim());
        let target = if kind == Kind::Symlink {
            &fifo
        } else {
            &bed.victim()
        };
        plant(&bed.at("sub/.gitignore"), kind, target);
        if kind != Kind::Dir {
            plant(&bed.env.path(".gitignore"), kind, target);
        }
        let out = bounded(bed.cmd(None).args(["status", "--json"]), LIMIT);
        expect(&out, 0);
        let doc: StatusDoc = out.json();
        assert!(
            doc.locks.iter().any(|l| l.file == "sub/deep/F"),
            "{kind:?}: the lock under the folder is missing: {}",
            out.stdout
        );
        bed.assert_victim_untouched();
    }
}

/// A repository nested in the workspace (a submodule's place) whose `info/exclude` is a FIFO:
/// the walk does not open it, and a hand-made lock inside that repository is still listed.
#[test]
fn a_fifo_excludes_file_of_a_nested_repository_neither_stalls_the_status_nor_hides_a_lock() {
    use crate::planted::{Kind, LIMIT, bounded};
    if !crate::rigs::git_or_skip() {
        return;
    }
    let bed = Bed::new();
    let inner = bed.at("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&inner)
        .status()
        .unwrap();
    assert!(git.success());
    let exclude = inner.join(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    plant(&exclude, Kind::Fifo, &bed.victim());
    std::fs::write(inner.join("F"), "f\n").unwrap();
    let lock = "Agent: hand\nlocked_at: 2099-01-01T00:00:00+00:00\nfile: F\n";
    std::fs::write(inner.join("F.lock.hand"), lock).unwrap();
    let out = bounded(bed.cmd(None).args(["status", "--json"]), LIMIT);
    expect(&out, 0);
    let doc: StatusDoc = out.json();
    assert!(
        doc.locks.iter().any(|l| l.file == "inner/F"),
        "the lock in the nested repository is missing: {}",
        out.stdout
    );
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

#[test]
fn status_json_has_the_contract_fields() {
    let env = Env::new();
    env.agent("Claude").args(["presence", ".", "Task_123"]).ok();
    env.write("docs/SHARED.txt", "");
    env.agent("claude").args(["lock", "docs/SHARED.txt"]).ok();
    let st = status(&env);
    assert_eq!(st.root, env.root().display().to_string());
    assert_eq!(st.agents.len(), 1);
    let a = &st.agents[0];
    assert_eq!(
        (a.agent.as_str(), a.name.as_str(), a.status.as_str()),
        ("claude", "Claude", "ACTIVE")
    );
    assert!(a.heartbeat.is_some());
    assert_eq!(a.working_on.as_deref(), Some("Task_123"));
    assert_eq!(a.current_file.as_deref(), Some("docs/SHARED.txt"));
    assert_eq!(st.locks.len(), 1);
    let l = &st.locks[0];
    assert_eq!(
        (l.file.as_str(), l.agent.as_str(), l.state.as_str()),
        ("docs/SHARED.txt", "claude", "LIVE")
    );
    assert!(l.locked_at.is_some());
    assert!(st.handshakes.is_empty());
    assert!(st.unread.values().all(|n| *n == 0));
}

#[test]
fn human_status_reads_at_a_glance() {
    let env = Env::new();
    // One instant for every command, so "0s ago" does not depend on how fast they run.
    let now = chrono::Local::now();
    let at = now.to_rfc3339();
    env.agent("claude")
        .env("COORD_NOW", &at)
        .args(["presence", ".", "Task_123"])
        .ok();
    env.agent("gemini")
        .env("COORD_NOW", &at)
        .args(["presence", ".", "Task_456"])
        .ok();
    env.agent("claude")
        .env("COORD_NOW", &at)
        .args(["lock", "SHARED.txt"])
        .ok();
    let old = (now - chrono::Duration::minutes(30)).to_rfc3339();
    env.write(
        "old.md.lock.ollama",
        format!("Agent: Ollama\nlocked_at: {old}\nfile: old.md\n"),
    );
    let out = env.cmd().env("COORD_NOW", &at).arg("status").ok();
    // #48: the task tells who is who; what the agent is working on is the files it holds.
    out.stdout_has("  AGENT   STATUS  HEARTBEAT  WHO       WORKING ON  LOCK\n")
        .stdout_has("  claude  ACTIVE  0s ago     Task_123  SHARED.txt  LOCKED\n")
        .stdout_has("  gemini  ACTIVE  0s ago     Task_456  -           FREE\n")
        .stdout_has("STALE")
        .stdout_has("30m ago")
        .stdout_lacks("\x1b[");
}

#[test]
fn hostile_presence_text_cannot_drive_the_terminal() {
    let env = Env::new();
    env.write(
        ".evil_presence",
        "Agent: Evil\nstatus: ACTIVE\nworking_on: \x1b]0;pwned\x07\x1b[2Jclear\n",
    );
    let out = env.cmd().arg("status").ok();
    out.stdout_lacks("\x1b");
    env.write(".bin_presence", [0u8, 159, 146, 150, 255, 10, 0]);
    env.cmd().arg("status").ok();
    env.cmd().args(["status", "--json"]).ok();
}

/// A busy lock names both what the holder works on and why it locked; an empty `COORD_AGENT`
/// is no agent at all.
#[test]
fn a_busy_lock_shows_task_and_reason_and_an_empty_agent_is_missing() {
    let env = Env::new();
    env.agent("gemini").args(["presence", ".", "Task_456"]).ok();
    env.agent("gemini")
        .args(["lock", "a.md", "--reason", "fixing typos"])
        .ok();
    env.agent("claude")
        .args(["lock", "a.md", "--no-wait"])
        .code(3)
        .stderr_has("held by gemini since")
        .stderr_has("(working on Task_456; reason: fixing typos)");
    env.agent("claude")
        .args(["lock", "a.md", "--wait", "100ms"])
        .code(3)
        .stderr_has("(working on Task_456; reason: fixing typos)");
    env.cmd()
        .env("COORD_AGENT", "")
        .args(["lock", "b.md"])
        .code(2)
        .stderr_has("error: no agent given")
        .stderr_has("COORD_AGENT=NAME");
    assert!(!env.exists("b.md.lock."));
}

/// An agent that released its locks, or finished, is not shown working on a file any more.
#[test]
fn free_and_finished_agents_drop_their_current_file() {
    let env = Env::new();
    env.agent("claude").args(["lock", "a.md"]).ok();
    assert!(
        env.read(".claude_presence")
            .contains("current_file: a.md\n")
    );
    env.agent("claude").args(["unlock"]).ok();
    let p = env.read(".claude_presence");
    assert!(
        p.contains("lock_status: FREE\n") && p.contains("current_file: -\n"),
        "{p}"
    );
    // A file named on purpose stays, until the agent finishes.
    env.agent("claude")
        .args(["presence", "--file", "b.md"])
        .ok();
    assert!(
        env.read(".claude_presence")
            .contains("current_file: b.md\n")
    );
    env.agent("claude").args(["presence", "."]).ok();
    assert!(
        env.read(".claude_presence")
            .contains("current_file: b.md\n")
    );
    env.agent("claude")
        .args(["presence", "--status", "finished"])
        .ok();
    let p = env.read(".claude_presence");
    assert!(
        p.contains("status: FINISHED\n") && p.contains("current_file: -\n"),
        "{p}"
    );
}

/// `agent`'s `lock_status` and `current_file` in `coord status --json` and `coord check --json`
/// (each must say the same).
#[track_caller]
fn lock_status_of(env: &Env, agent: &str) -> (String, serde_json::Value) {
    let a = env.status_of(agent);
    let check: serde_json::Value = env.cmd().args(["check", "--json"]).run().json();
    let in_check = check["agents"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["agent"] == agent))
        .cloned()
        .unwrap_or_else(|| panic!("no {agent} in {check:#}"));
    assert_eq!(in_check["lock_status"], a["lock_status"], "{check:#}");
    (
        a["lock_status"].as_str().unwrap_or("").to_string(),
        a["current_file"].clone(),
    )
}

/// #45: an agent killed with SIGKILL while it waits, or while it holds a lock that is then
/// taken over, left a presence saying `WAITING` or `LOCKED`; the views say what is true: FREE
/// once it holds nothing and has no live ticket, LOCKED while its (STALE) lock still stands.
#[test]
fn a_killed_waiter_or_holder_is_shown_free_once_it_holds_nothing() {
    let env = Env::new();
    env.write("a.md", "a\n");
    env.write("b.md", "b\n");
    env.agent("bob").args(["lock", "a.md"]).ok();
    let mut waiter = env
        .agent("alice")
        .args(["lock", "a.md", "--wait", "1m"])
        .spawn();
    crate::support::eventually("alice waits", || {
        env.exists(".alice_presence") && lock_status_of(&env, "alice").0 == "WAITING"
    });
    waiter.kill().unwrap();
    waiter.wait().unwrap();
    assert!(env.read(".alice_presence").contains("lock_status: WAITING"));
    assert_eq!(lock_status_of(&env, "alice").0, "FREE", "a dead waiter");
    // bob still holds and no one waits for him: LOCKED.
    assert_eq!(lock_status_of(&env, "bob").0, "LOCKED");

    // Killed while holding b.md through `coord run`: its lock stands (STALE), then is taken over.
    let mut run = env
        .agent("alice")
        .args(["run", "b.md", "--", "sh", "-c", "sleep 3"])
        .spawn();
    // Its presence is written after the lock file: wait for both, so the kill finds it saying
    // LOCKED (the killed holder's last word, which the views must not believe).
    crate::support::eventually("alice holds b.md", || {
        env.exists("b.md.lock.alice")
            && std::fs::read_to_string(env.path(".alice_presence"))
                .is_ok_and(|t| t.contains("lock_status: LOCKED"))
    });
    run.kill().unwrap();
    run.wait().unwrap();
    assert_eq!(lock_status_of(&env, "alice").0, "LOCKED", "its lock stands");
    env.agent("carol").args(["lock", "b.md"]).ok();
    assert!(env.read(".alice_presence").contains("lock_status: LOCKED"));
    let (status, file) = lock_status_of(&env, "alice");
    assert_eq!(status, "FREE", "taken over: alice holds nothing");
    assert!(file.is_null(), "no file worked on: {file}");
    let human = env.cmd().args(["status"]).ok();
    let row = human
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("alice"))
        .unwrap_or_default();
    assert!(
        row.contains("FREE") && !row.contains("LOCKED"),
        "{}",
        human.stdout
    );
}

/// `coord who FILE` answers who holds one file, in text and in JSON.
#[test]
fn who_says_who_holds_a_file() {
    let env = Env::new();
    env.agent("gemini").args(["presence", ".", "Task_456"]).ok();
    env.agent("gemini")
        .args(["lock", "a.md", "--reason", "typos"])
        .ok();
    let out = env.cmd().args(["who", "a.md", "b.md"]).ok();
    out.stdout_has("a.md: held by gemini since ")
        .stdout_has("(working on Task_456; reason: typos) [LIVE]")
        .stdout_has("b.md: not locked");
    let doc: serde_json::Value = env
        .cmd()
        .args(["who", "a.md", "b.md", "--json"])
        .ok()
        .json();
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files[0]["file"], "a.md");
    assert_eq!(files[0]["locks"][0]["agent"], "gemini");
    assert_eq!(files[0]["locks"][0]["state"], "LIVE");
    assert_eq!(files[0]["locks"][0]["working_on"], "Task_456");
    assert_eq!(files[0]["locks"][0]["reason"], "typos");
    assert_eq!(files[1]["locks"].as_array().unwrap().len(), 0);
    env.cmd().args(["who", "../x"]).code(2);
}

/// `status` fits the terminal's width, and colour follows `--color`, `NO_COLOR` and
/// `CLICOLOR_FORCE`.
#[test]
fn status_fits_the_width_and_colour_is_chosen() {
    let env = Env::new();
    env.agent("claude")
        .args([
            "presence",
            ".",
            "a task with a very long description that would never fit in forty columns",
        ])
        .ok();
    env.agent("claude").args(["lock", "a.md"]).ok();
    let wide = env.cmd().args(["status"]).ok().stdout;
    assert!(wide.contains("never fit in forty columns"), "{wide}");
    let narrow = env.cmd().env("COLUMNS", "50").args(["status"]).ok().stdout;
    for line in narrow.lines().filter(|l| l.starts_with("  ")) {
        assert!(
            line.chars().count() <= 50,
            "{line:?} is wider than 50\n{narrow}"
        );
    }
    // Narrower than the columns can give way: the table is cut as far as it goes, never a crash.
    for width in ["40", "24", "1"] {
        let out = env.cmd().env("COLUMNS", width).args(["status"]).ok().stdout;
        assert!(out.contains("a.md"), "COLUMNS={width}\n{out}");
    }
    assert!(narrow.contains('…'), "{narrow}");
    let esc = |out: &str| out.contains('\u{1b}');
    assert!(esc(&env
        .cmd()
        .args(["--color", "always", "status"])
        .ok()
        .stdout));
    assert!(!esc(&env
        .cmd()
        .args(["status", "--color", "never"])
        .ok()
        .stdout));
    assert!(!esc(&env.cmd().args(["status"]).ok().stdout), "NO_COLOR=1");
    let forced = env
        .cmd()
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .args(["status"])
        .ok()
        .stdout;
    assert!(esc(&forced));
    let piped = env
        .cmd()
        .env_remove("NO_COLOR")
        .args(["status"])
        .ok()
        .stdout;
    assert!(!esc(&piped), "auto: no colour into a pipe");
    env.cmd().args(["--color", "sometimes", "status"]).code(2);
}

pub(crate) fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// The clocked-in sessions are listed only where they add to the agents table (#9: each hook
/// session stood twice, once as an agent and once on the "stamp card"): an agent's one session
/// is its row; an agent clocked in twice, or clocked in with no presence here, is shown with
/// a note saying so. `--json` keeps every session in `partners`.
#[test]
fn status_lists_only_the_sessions_the_agents_table_does_not_show() {
    let env = Env::new();
    for session in ["aaaa1111", "bbbb2222"] {
        env.cmd()
            .args(["hook", "claude"])
            .stdin(
                serde_json::json!({
                    "hook_event_name": "SessionStart", "session_id": session,
                    "cwd": env.root(), "source": "startup",
                })
                .to_string(),
            )
            .ok();
    }
    env.agent("human").args(["startup"]).ok();
    let out = env.cmd().args(["status"]).ok();
    assert_eq!(
        out.stdout.matches("claude-bbbb2222").count(),
        1,
        "{}",
        out.stdout
    );
    out.stdout_lacks("stamp card").stdout_lacks("SESSION");
    // Twice clocked in, and clocked in without a presence.
    env.agent("dup").args(["startup"]).ok();
    env.agent("dup").args(["startup"]).ok();
    env.agent("ghost").args(["startup"]).ok();
    std::fs::remove_file(env.path(".ghost_presence")).unwrap();
    let out = env.cmd().args(["status"]).ok();
    let shown: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("More clocked-in sessions"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(shown.len(), 3, "{}", out.stdout);
    assert!(
        shown
            .iter()
            .filter(|l| l.trim_start().starts_with("dup "))
            .all(|l| l.ends_with("one of 2 sessions of this agent")),
        "{}",
        out.stdout
    );
    assert!(
        shown
            .iter()
            .any(|l| l.trim_start().starts_with("ghost ") && l.contains("no presence here")),
        "{}",
        out.stdout
    );
    let v: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(v["partners"].as_array().unwrap().len(), 6, "{v:#}");
}

/// #48: every work tree of a repository shows the one workspace they share (its state lives in
/// the main work tree) and says which tree this is; the locks table names each lock's work tree
/// and branch; `--json` adds `shared_root`, `branch` and `worktrees`.
#[test]
fn status_in_each_worktree_names_the_shared_workspace_this_tree_and_each_locks_tree() {
    use crate::locks::worktrees::{coord, repo};
    let r = repo();
    let main = std::fs::canonicalize(&r.main).unwrap();
    let b = std::fs::canonicalize(&r.b).unwrap();
    coord(&r, &r.b, "alice").args(["lock", "src/x.rs"]).ok();
    coord(&r, &r.main, "bob").args(["lock", "a.txt"]).ok();
    let here_b = format!("you are in {}, branch feature", b.display());
    let here_main = "you are in the main one, branch trunk".to_string();
    for (dir, here) in [(&r.b, here_b), (&r.main, here_main)] {
        let out = r
            .env
            .cmd()
            .env_remove("COORD_DIR")
            .cwd(dir)
            .arg("status")
            .ok();
        out.stdout_has(&format!("Workspace {}\n", main.display()))
            .stdout_has(&format!("  shared by 3 work trees; {here}\n"))
            .stdout_has("  FILE      HOLDER  WORKTREE  BRANCH   SINCE");
        let row = |file: &str| -> Vec<String> {
            let line = out
                .stdout
                .lines()
                .find(|l| l.starts_with(&format!("  {file} ")))
                .unwrap_or_else(|| panic!("no row for {file}:\n{}", out.stdout));
            line.split_whitespace().map(str::to_string).collect()
        };
        assert_eq!(row("src/x.rs")[..4], ["src/x.rs", "alice", "b", "feature"]);
        assert_eq!(row("a.txt")[..4], ["a.txt", "bob", "main", "trunk"]);
    }
    let st: serde_json::Value = r
        .env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&r.b)
        .args(["status", "--json"])
        .ok()
        .json();
    assert_eq!(st["root"], b.display().to_string());
    assert_eq!(st["shared_root"], main.display().to_string());
    assert_eq!(st["branch"], "feature");
    assert_eq!(st["worktrees"].as_array().unwrap().len(), 3, "{st:#}");
    assert_eq!(st["worktrees"][0]["worktree"], b.display().to_string());
    // A lone folder says nothing of work trees, and its locks table keeps its columns.
    let env = Env::new();
    env.agent("alice").args(["lock", "f.txt"]).ok();
    let out = env.cmd().arg("status").ok();
    out.stdout_has(&format!("Workspace {}\n\n", env.root().display()))
        .stdout_has("  FILE   HOLDER  SINCE")
        .stdout_lacks("work trees");
}

/// A view only reads: on a disk of this machine, `status` leaves `.coord/` as it found it, even
/// beside a lock past its TTL (whose age is judged by this machine's clock, the folder's own).
#[test]
fn status_writes_nothing_beside_a_lock_past_its_ttl() {
    use std::time::{Duration, SystemTime};
    let env = Env::new();
    env.agent("gemini").args(["presence", ".", "Task_1"]).ok();
    let old = (chrono::Local::now() - chrono::Duration::hours(1)).to_rfc3339();
    env.write(
        "f.txt.lock.gemini",
        format!("Agent: gemini\nlocked_at: {old}\nfile: f.txt\n"),
    );
    let state = std::fs::File::open(env.path(".coord")).unwrap();
    let then = SystemTime::now() - Duration::from_secs(3600);
    state.set_modified(then).unwrap();
    env.cmd().arg("status").ok().stdout_has("f.txt");
    let now = state.metadata().unwrap().modified().unwrap();
    assert_eq!(now, then, "`coord status` wrote in `.coord/`");
}
