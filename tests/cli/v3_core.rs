//! Protocol V3 core: presence, check, lock, unlock, status — the seed's files byte for byte,
//! staleness, waiting, and every exit code of the contract.

use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::support::Env;

const T0: &str = "2026-01-28T01:00:00+01:00";

#[derive(Debug, Deserialize)]
struct StatusJson {
    root: String,
    agents: Vec<AgentJson>,
    locks: Vec<LockJson>,
    handshakes: Vec<serde_json::Value>,
    unread: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct AgentJson {
    agent: String,
    name: String,
    status: String,
    heartbeat: Option<String>,
    working_on: Option<String>,
    current_file: Option<String>,
}

#[derive(Debug, Deserialize)]
struct LockJson {
    file: String,
    agent: String,
    locked_at: Option<String>,
    state: String,
}

fn status(env: &Env) -> StatusJson {
    env.cmd().args(["status", "--json"]).ok().json()
}

/// Wait (bounded) until `cond` holds; panics with `what` when it never does.
#[track_caller]
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for: {what}");
}

#[test]
fn the_seed_example_session_replayed() {
    let env = Env::new();
    // Agent A starts
    env.agent("claude").args(["presence", ".", "Task_123"]).ok();
    env.agent("claude")
        .arg("check")
        .ok()
        .stdout_has("No other agents");
    // Agent B starts
    env.agent("gemini").args(["presence", ".", "Task_456"]).ok();
    env.agent("gemini")
        .arg("check")
        .ok()
        .stdout_has("claude: ACTIVE");
    // Agent A wants to edit SHARED.txt
    env.write("SHARED.txt", "v1\n");
    env.agent("claude")
        .args(["lock", "SHARED.txt"])
        .ok()
        .stdout_has("Lock acquired");
    env.write("SHARED.txt", "v2 by claude\n");
    env.agent("claude").args(["unlock", "SHARED.txt"]).ok();
    // Agent B waits automatically if lock exists
    env.agent("claude").args(["lock", "SHARED.txt"]).ok();
    let waiter = env
        .agent("gemini")
        .args(["lock", "SHARED.txt", "--wait", "60s"])
        .spawn();
    eventually("gemini waits", || {
        env.read(".gemini_presence")
            .contains("lock_status: WAITING")
    });
    assert!(env.exists("SHARED.txt.lock.claude"));
    assert!(
        !env.exists("SHARED.txt.lock.gemini"),
        "gemini must not hold it yet"
    );
    env.agent("claude").args(["unlock", "SHARED.txt"]).ok();
    let out = waiter.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("Lock acquired: SHARED.txt"), "{stdout}");
    assert!(
        stderr.contains("waiting for `SHARED.txt`: held by claude since"),
        "says once who holds it: {stderr}"
    );
    assert_eq!(
        stderr.matches("waiting for").count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("working on Task_123"), "{stderr}");
    assert!(env.exists("SHARED.txt.lock.gemini"));
    assert!(env.read(".gemini_presence").contains("lock_status: LOCKED"));
    assert!(env.read(".claude_presence").contains("lock_status: FREE"));
}

#[test]
fn presence_file_is_the_seeds_byte_for_byte() {
    let env = Env::new();
    env.agent("Claude")
        .env("COORD_NOW", T0)
        .args(["presence", ".", "Task_123"])
        .ok()
        .stdout_has("Presence updated: claude ACTIVE (working on Task_123)");
    assert_eq!(
        env.read(".claude_presence"),
        format!(
            "Agent: Claude\nstatus: ACTIVE\nstarted: {T0}\nheartbeat: {T0}\nworking_on: Task_123\ncurrent_file: -\nlock_status: FREE\n"
        )
    );
    // A refresh keeps `started`, moves the heartbeat, and keeps keys someone else added.
    let mut text = env.read(".claude_presence");
    text.push_str("model: opus\n");
    env.write(".claude_presence", text);
    env.agent("Claude")
        .env("COORD_NOW", "2026-01-28T01:05:00+01:00")
        .args(["presence", "--file", "SHARED.txt"])
        .ok();
    assert_eq!(
        env.read(".claude_presence"),
        format!(
            "Agent: Claude\nstatus: ACTIVE\nstarted: {T0}\nheartbeat: 2026-01-28T01:05:00+01:00\nworking_on: Task_123\ncurrent_file: SHARED.txt\nlock_status: FREE\nmodel: opus\n"
        )
    );
    env.agent("claude")
        .args(["presence", "--status", "finished"])
        .ok();
    assert!(env.read(".claude_presence").contains("status: FINISHED"));
}

#[test]
fn lock_file_has_the_seeds_keys_first() {
    let env = Env::new();
    env.write("SHARED.txt", "hello\n");
    env.agent("Claude")
        .env("COORD_NOW", T0)
        .args(["lock", "SHARED.txt", "--reason", "fixing typos"])
        .ok();
    let text = env.read("SHARED.txt.lock.claude");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        &lines[..3],
        [
            "Agent: Claude",
            &format!("locked_at: {T0}"),
            "file: SHARED.txt"
        ]
    );
    let keys: Vec<&str> = lines[3..]
        .iter()
        .map(|l| l.split_once(": ").unwrap().0)
        .collect();
    assert_eq!(keys, ["token", "ttl", "host", "origin", "reason"]);
    assert!(text.contains("ttl: 5m\n") && text.contains("reason: fixing typos\n"));
    let presence = env.read(".claude_presence");
    assert!(
        presence.contains("current_file: SHARED.txt\nlock_status: LOCKED\n"),
        "{presence}"
    );
}

#[test]
fn lock_writes_a_backup_and_unlock_removes_only_the_lock() {
    let env = Env::new();
    env.write("docs/PROTOKOL.md", "original\n");
    env.agent("claude")
        .args(["lock", "docs/PROTOKOL.md"])
        .ok()
        .stdout_has("(backup docs/PROTOKOL.md.bak)");
    assert_eq!(env.read("docs/PROTOKOL.md.bak"), "original\n");
    env.write("docs/PROTOKOL.md", "edited\n");
    env.agent("claude")
        .args(["unlock", "docs/PROTOKOL.md"])
        .ok()
        .stdout_has("Lock released: docs/PROTOKOL.md");
    assert!(!env.exists("docs/PROTOKOL.md.lock.claude"));
    assert_eq!(env.read("docs/PROTOKOL.md.bak"), "original\n");
    assert_eq!(env.read("docs/PROTOKOL.md"), "edited\n");
    // --no-backup leaves the old backup alone; a file that does not exist yet gets none.
    env.agent("claude")
        .args(["lock", "docs/PROTOKOL.md", "--no-backup"])
        .ok();
    assert_eq!(env.read("docs/PROTOKOL.md.bak"), "original\n");
    env.agent("claude").args(["lock", "new.md"]).ok();
    assert!(!env.exists("new.md.bak"));
}

#[test]
fn a_backup_never_follows_a_planted_symlink() {
    let env = Env::new();
    env.write("victim.txt", "precious\n");
    env.write("a.md", "content\n");
    std::os::unix::fs::symlink(env.path("victim.txt"), env.path("a.md.bak")).unwrap();
    env.agent("claude").args(["lock", "a.md"]).ok();
    assert_eq!(env.read("victim.txt"), "precious\n");
    assert_eq!(env.read("a.md.bak"), "content\n");
    assert!(
        !std::fs::symlink_metadata(env.path("a.md.bak"))
            .unwrap()
            .is_symlink()
    );
}

#[test]
fn a_hand_made_stale_lock_is_taken_over() {
    let env = Env::new();
    env.write("SHARED.txt", "x\n");
    // Written by an agent following the seed by hand, 10 minutes ago, offset-less time.
    let old = (chrono::Local::now() - chrono::Duration::minutes(10))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    env.write(
        "SHARED.txt.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {old}\nfile: SHARED.txt\n"),
    );
    let st = status(&env);
    assert_eq!(st.locks.len(), 1);
    assert_eq!(st.locks[0].state, "STALE");
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .ok()
        .stdout_has("Lock acquired: SHARED.txt")
        .stderr_has("took over the stale lock of Gemini");
    assert!(!env.exists("SHARED.txt.lock.gemini"));
    assert!(env.exists("SHARED.txt.lock.claude"));
}

#[test]
fn a_fresh_hand_made_lock_is_honoured() {
    let env = Env::new();
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    env.write(
        "SHARED.txt.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {now}\nfile: SHARED.txt\n"),
    );
    let before = env.snapshot();
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .code(3)
        .stderr_has("error: lock on `SHARED.txt` is held by Gemini since")
        .stderr_has("hint: wait with `coord lock SHARED.txt --wait 5m`");
    let after = env.snapshot();
    let new: Vec<_> = after
        .keys()
        .filter(|k| !before.contains_key(*k) && !k.starts_with(".coord"))
        .collect();
    assert!(
        new.iter().all(|k| k.as_str() == ".claude_presence"),
        "{new:?}"
    );
    assert!(!env.exists("SHARED.txt.lock.claude"));
}

#[test]
fn an_old_lock_is_kept_while_its_holder_heartbeats() {
    let env = Env::new();
    let old = (chrono::Local::now() - chrono::Duration::minutes(10)).to_rfc3339();
    env.write(
        "SHARED.txt.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {old}\nfile: SHARED.txt\n"),
    );
    env.agent("gemini")
        .args(["presence", ".", "long task"])
        .ok();
    assert_eq!(status(&env).locks[0].state, "LIVE");
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .code(3)
        .stderr_has("held by Gemini")
        .stderr_has("working on long task");
    env.agent("claude").args(["check", "--strict"]).ok();
    // Once the heartbeat is older than two minutes, the lock is stale.
    let hb = (chrono::Local::now() - chrono::Duration::minutes(3)).to_rfc3339();
    let p = env.read(".gemini_presence");
    let p: String = p
        .lines()
        .map(|l| {
            if l.starts_with("heartbeat:") {
                format!("heartbeat: {hb}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    env.write(".gemini_presence", p);
    assert_eq!(status(&env).locks[0].state, "STALE");
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .ok();
}

#[test]
fn check_strict_fails_on_stale_and_conflicting_locks() {
    let env = Env::new();
    env.agent("claude").args(["check", "--strict"]).ok();
    let old = (chrono::Local::now() - chrono::Duration::minutes(30)).to_rfc3339();
    env.write(
        "a.md.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {old}\nfile: a.md\n"),
    );
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("error: 1 lock problem")
        .stderr_has("`a.md` has a STALE lock of Gemini");
    // Without --strict the problem is a warning, not a failure.
    env.cmd()
        .arg("check")
        .ok()
        .stderr_has("warning: `a.md` has a STALE lock");
    std::fs::remove_file(env.path("a.md.lock.gemini")).unwrap();
    // Two live locks on one file: somebody bypassed the protocol.
    let now = chrono::Local::now().to_rfc3339();
    for who in ["gemini", "copilot"] {
        env.write(
            &format!("b.md.lock.{who}"),
            format!("Agent: {who}\nlocked_at: {now}\nfile: b.md\n"),
        );
    }
    let st = status(&env);
    assert!(st.locks.iter().all(|l| l.state == "CONFLICT"), "{st:?}");
    let out = env.cmd().args(["check", "--strict", "--json"]).code(4);
    let report: serde_json::Value = out.json();
    assert_eq!(report["ok"], false);
    assert_eq!(report["problems"].as_array().unwrap().len(), 2);
    out.stderr_has("CONFLICT");
}

#[test]
fn unlock_never_removes_someone_elses_live_lock() {
    let env = Env::new();
    env.agent("gemini").args(["lock", "a.md"]).ok();
    env.agent("claude")
        .args(["unlock", "a.md"])
        .code(3)
        .stderr_has("error: `a.md` is locked by gemini, not by claude");
    env.agent("claude")
        .args(["unlock", "a.md", "--force"])
        .code(3);
    assert!(env.exists("a.md.lock.gemini"));
    env.agent("claude")
        .args(["unlock", "b.md"])
        .ok()
        .stdout_has("b.md: not locked");
    // --force removes a STALE one, and says whose it was.
    let old = (chrono::Local::now() - chrono::Duration::minutes(30)).to_rfc3339();
    env.write(
        "c.md.lock.ollama",
        format!("Agent: Ollama\nlocked_at: {old}\nfile: c.md\n"),
    );
    env.agent("claude")
        .args(["unlock", "c.md"])
        .code(3)
        .stderr_has("hint: remove it with `coord unlock c.md --force`");
    env.agent("claude")
        .args(["unlock", "c.md", "--force"])
        .ok()
        .stdout_has("Stale lock of Ollama on c.md removed");
    assert!(!env.exists("c.md.lock.ollama"));
}

#[test]
fn unlock_without_files_releases_everything_held() {
    let env = Env::new();
    env.write("sub/x.md", "");
    env.agent("claude")
        .args(["lock", "a.md", "b.md", "sub/x.md"])
        .ok();
    env.agent("gemini").args(["lock", "c.md"]).ok();
    let out = env.agent("claude").arg("unlock").ok();
    for f in ["a.md", "b.md", "sub/x.md"] {
        out.stdout_has(&format!("Lock released: {f}"));
        assert!(!env.exists(&format!("{f}.lock.claude")));
    }
    assert!(env.exists("c.md.lock.gemini"));
    env.agent("claude")
        .arg("unlock")
        .ok()
        .stdout_has("No locks held");
    assert!(env.read(".claude_presence").contains("lock_status: FREE"));
}

#[test]
fn locking_again_refreshes_and_keeps_the_token() {
    let env = Env::new();
    env.agent("claude")
        .env("COORD_NOW", T0)
        .args(["lock", "a.md"])
        .ok();
    let first = env.read("a.md.lock.claude");
    env.agent("claude")
        .env("COORD_NOW", "2026-01-28T01:03:00+01:00")
        .args(["lock", "a.md"])
        .ok()
        .stdout_has("Lock refreshed: a.md");
    let second = env.read("a.md.lock.claude");
    let token = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("token:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(token(&first), token(&second));
    assert!(second.contains("locked_at: 2026-01-28T01:03:00+01:00"));
}

#[test]
fn all_or_nothing_when_one_file_is_held() {
    let env = Env::new();
    env.agent("gemini").args(["lock", "b.md"]).ok();
    env.agent("claude")
        .args(["lock", "a.md", "b.md", "c.md", "--no-wait"])
        .code(3);
    assert!(!env.exists("a.md.lock.claude"));
    assert!(!env.exists("c.md.lock.claude"));
}

#[test]
fn a_waiter_times_out_with_exit_3_and_leaves_the_queue() {
    let env = Env::new();
    env.agent("gemini")
        .args(["lock", "a.md", "--reason", "refactoring"])
        .ok();
    env.agent("claude")
        .args(["lock", "a.md", "--wait", "300ms"])
        .code(3)
        .stderr_has("error: gave up waiting for `a.md` after")
        .stderr_has("held by gemini")
        .stderr_has("(working on refactoring)");
    assert!(env.read(".claude_presence").contains("lock_status: FREE"));
    env.agent("gemini").args(["unlock", "a.md"]).ok();
    // The queue is empty again: a lock without waiting succeeds at once.
    env.agent("claude").args(["lock", "a.md", "--no-wait"]).ok();
}

#[test]
fn waiters_are_served_in_arrival_order() {
    use rustix::process::{Pid, Signal, kill_process_group};
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    env.agent("a0").args(["lock", "f.md"]).ok();
    let mut waiters = Vec::new();
    for i in 1..=4 {
        let name = format!("a{i}");
        // Each waiter appends its name when it gets the lock, then releases it.
        let script = format!(
            "{bin} lock f.md --wait 60s -q && echo {name} >> order.txt && {bin} unlock f.md -q",
            bin = crate::support::coord_bin()
        );
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(env.root())
            .env("COORD_DIR", env.root())
            .env("COORD_AGENT", &name)
            .process_group(0)
            .spawn()
            .unwrap();
        waiters.push(child);
        eventually("the waiter queues up", || {
            env.exists(&format!(".{name}_presence"))
                && env.read(&format!(".{name}_presence")).contains("WAITING")
        });
    }
    // Make the wake-up order the reverse of the arrival order: every waiter but the last is
    // stopped when the lock is released, and they resume last-come first. Only the queue can
    // then serve them in arrival order.
    let group = |w: &std::process::Child| Pid::from_raw(w.id() as i32).unwrap();
    for w in &waiters[..3] {
        kill_process_group(group(w), Signal::STOP).unwrap();
    }
    env.agent("a0").args(["unlock", "f.md"]).ok();
    for w in waiters[..3].iter().rev() {
        std::thread::sleep(Duration::from_millis(400));
        kill_process_group(group(w), Signal::CONT).unwrap();
    }
    for mut w in waiters {
        assert!(w.wait().unwrap().success());
    }
    assert_eq!(env.read("order.txt"), "a1\na2\na3\na4\n");
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
    out.stdout_has("  AGENT   STATUS  HEARTBEAT  WORKING ON  FILE        LOCK\n")
        .stdout_has("  claude  ACTIVE  0s ago     Task_123    SHARED.txt  LOCKED\n")
        .stdout_has("  gemini  ACTIVE  0s ago     Task_456    -           FREE\n")
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

#[test]
fn bad_agent_names_are_refused_before_anything_is_written() {
    let env = Env::new();
    env.write("a.md", "x\n");
    let before = env.snapshot();
    for bad in ["../x", "a/b", ".", "x y", "ünï", &"a".repeat(33), "-dash"] {
        env.agent(bad)
            .args(["lock", "a.md"])
            .code(2)
            .stderr_has("error: invalid agent name");
        env.agent(bad).args(["presence", ".", "t"]).code(2);
    }
    // Empty (`COORD_AGENT=`): refused the same way, reported as the missing name it is.
    env.agent("")
        .args(["lock", "a.md"])
        .code(2)
        .stderr_has("error: no agent given");
    env.agent("").args(["presence", ".", "t"]).code(2);
    env.cmd()
        .args(["lock", "a.md"])
        .code(2)
        .stderr_has("error: no agent given")
        .stderr_has("--agent NAME")
        .stderr_has("COORD_AGENT");
    assert_eq!(env.snapshot(), before, "nothing may be written");
}

#[test]
fn paths_outside_the_root_are_refused_before_anything_is_written() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(env.path(".coord")).unwrap();
    std::fs::write(outside.path().join("victim"), "v").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim"), env.path("flink")).unwrap();
    let before = env.snapshot();
    let victim = outside.path().join("victim").display().to_string();
    for bad in [
        "../x",
        "/etc/passwd",
        &victim,
        "link/victim",
        "flink",
        "sub/../../x",
    ] {
        env.agent("claude")
            .args(["lock", bad])
            .code(2)
            .stderr_has("error:");
    }
    env.agent("claude")
        .args(["lock", ".coord/mutex"])
        .code(2)
        .stderr_has("belong to coord itself");
    assert_eq!(env.snapshot(), before, "nothing may be written");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    env.cmd().arg("frobnicate").code(2);
    env.agent("claude").args(["lock"]).code(2);
    env.agent("claude")
        .args(["lock", "a.md", "--wait", "5 fortnights"])
        .code(2)
        .stderr_has("invalid duration");
    env.agent("claude")
        .args(["lock", "a.md", "--ttl", "0"])
        .code(2);
    env.cmd().args(["status", "/nonexistent/folder"]).code(2);
    env.cmd().arg("--help").ok().stdout_has("Usage");
}

#[test]
fn an_unusable_state_folder_is_an_io_failure() {
    let env = Env::new();
    env.write(".coord", "not a folder");
    env.agent("claude")
        .args(["lock", "a.md"])
        .code(1)
        .stderr_has("error: cannot create folder");
}

#[test]
fn global_options_go_before_or_after_the_command() {
    let env = Env::new();
    env.cmd()
        .args(["lock", "a.md", "-a", "claude", "--json"])
        .ok();
    let out = env
        .cmd()
        .args(["--agent", "gemini", "--json", "lock", "a.md", "--no-wait"])
        .code(3);
    let err: serde_json::Value = out.json();
    assert_eq!(err["error"]["kind"], "lock_held");
    assert_eq!(err["error"]["exit_code"], 3);
    env.cmd()
        .args(["-q", "-a", "claude", "unlock", "a.md"])
        .ok();
}

#[test]
fn root_is_found_from_a_subfolder() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".coord")).unwrap();
    std::fs::create_dir_all(env.path("src/deep")).unwrap();
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(env.path("src/deep"))
        .args(["lock", "../lib.rs"])
        .ok()
        .stdout_has("Lock acquired: src/lib.rs");
    assert!(env.exists("src/lib.rs.lock.claude"));
    assert!(env.exists(".claude_presence"), "presence lives at the root");
}

#[test]
fn lock_json_reports_what_was_taken() {
    let env = Env::new();
    env.write("a.md", "x");
    let got: serde_json::Value = env
        .agent("claude")
        .args(["lock", "a.md", "b.md", "--json"])
        .ok()
        .json();
    let acquired = got["acquired"].as_array().unwrap();
    assert_eq!(acquired.len(), 2);
    assert_eq!(acquired[0]["file"], "a.md");
    assert_eq!(acquired[0]["lock_file"], "a.md.lock.claude");
    assert_eq!(acquired[0]["backup"], "a.md.bak");
    assert!(acquired[1]["backup"].is_null());
    let rel: serde_json::Value = env
        .agent("claude")
        .args(["unlock", "--json", "a.md", "z.md"])
        .ok()
        .json();
    assert_eq!(rel["results"][0]["outcome"], "released");
    assert_eq!(rel["results"][1]["outcome"], "not_locked");
}

#[test]
fn a_lone_plain_word_is_the_task_even_if_a_folder_has_that_name() {
    let env = Env::new();
    std::fs::create_dir(env.path("bench")).unwrap();
    env.agent("claude").args(["presence", "bench"]).ok();
    assert!(env.read(".claude_presence").contains("working_on: bench\n"));
    env.agent("claude").args(["presence", "."]).ok();
    assert!(env.read(".claude_presence").contains("working_on: bench\n"));
    assert!(!env.exists("bench/.claude_presence"));
    // `bench/` is a DIR; inside this workspace it means this workspace (no nested one)...
    env.agent("claude").args(["presence", "bench/", "t"]).ok();
    assert!(!env.exists("bench/.claude_presence"));
    assert!(env.read(".claude_presence").contains("working_on: t\n"));
    // ... unless it was made a workspace of its own.
    std::fs::create_dir(env.path("bench/.coord")).unwrap();
    env.agent("claude").args(["presence", "bench/", "t"]).ok();
    assert!(env.exists("bench/.claude_presence"));
}

#[test]
fn a_hand_made_lock_spelled_with_capitals_is_honoured() {
    let env = Env::new();
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    env.write(
        "X.md.lock.Claude",
        format!("Agent: Claude\nlocked_at: {now}\nfile: X.md\n"),
    );
    env.agent("gemini")
        .args(["lock", "X.md", "--no-wait"])
        .code(3)
        .stderr_has("held by Claude");
    let st = status(&env);
    assert_eq!(st.locks.len(), 1);
    assert_eq!(
        (st.locks[0].agent.as_str(), st.locks[0].state.as_str()),
        ("claude", "LIVE")
    );
    // Its owner, using coord, takes it up under the canonical name; no second lock stays beside.
    env.agent("claude")
        .args(["lock", "X.md"])
        .ok()
        .stdout_has("Lock refreshed");
    assert!(env.exists("X.md.lock.claude"));
    assert!(!env.exists("X.md.lock.Claude"));
}

#[test]
fn refreshing_a_held_lock_never_queues_behind_its_own_waiters() {
    let env = Env::new();
    env.agent("alice").args(["lock", "a.md"]).ok();
    let waiter = env
        .agent("bob")
        .args(["lock", "a.md", "b.md", "--wait", "60s"])
        .spawn();
    eventually("bob waits", || {
        env.exists(".bob_presence") && env.read(".bob_presence").contains("WAITING")
    });
    // Bob waits for a.md (held by alice): alice refreshing a.md, or taking b.md which bob also
    // wants, must not wait behind bob, who waits for alice.
    env.agent("alice")
        .args(["lock", "a.md", "--no-wait"])
        .ok()
        .stdout_has("Lock refreshed: a.md");
    env.agent("alice")
        .args(["lock", "b.md", "--no-wait"])
        .ok()
        .stdout_has("Lock acquired: b.md");
    // A third agent holding nothing does queue behind bob for b.md once alice lets it go.
    env.agent("alice").args(["unlock", "b.md"]).ok();
    env.agent("carol")
        .args(["lock", "b.md", "--no-wait"])
        .code(3)
        .stderr_has("earlier waiter");
    env.agent("alice").arg("unlock").ok();
    let out = waiter.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env.exists("a.md.lock.bob") && env.exists("b.md.lock.bob"));
}

#[test]
fn a_lock_held_by_another_process_of_the_same_agent_is_not_shared() {
    let env = Env::new();
    env.write("f.txt", "x");
    let runner = env
        .agent("claude")
        .args([
            "run",
            "f.txt",
            "--",
            "sh",
            "-c",
            "touch started; exec sleep 30",
        ])
        .spawn();
    eventually("the run holds the lock", || env.exists("started"));
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("(process ");
    // SIGTERM: `coord run` passes it to its command and releases the lock.
    let status = std::process::Command::new("kill")
        .arg(runner.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let out = runner.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .ok();
}

#[test]
fn a_forged_session_pid_does_not_tie_a_lock_to_a_stranger() {
    let env = Env::new();
    env.agent("alice")
        .env("COORD_SESSION_PID", "999999")
        .env("COORD_SESSION", "forged")
        .args(["lock", "a.md"])
        .ok();
    let record = env.read("a.md.lock.alice");
    assert!(!record.contains("pid:"), "{record}");
    env.agent("bob").args(["lock", "a.md", "--no-wait"]).code(3);
}

/// One agent name used from two shells excludes nothing: the second `lock` refreshes the lock,
/// and says so on stderr; the same shell refreshing its own lock is quiet.
#[test]
fn a_lock_refreshed_from_another_shell_is_warned_about() {
    let env = Env::new();
    env.write("G", "x");
    env.agent("claude").args(["lock", "G"]).ok();
    assert!(env.read("G.lock.claude").contains("\norigin: "));
    let same = env.agent("claude").args(["lock", "G", "--no-wait"]).ok();
    same.stdout_has("Lock refreshed: G");
    assert!(!same.stderr.contains("another session"), "{}", same.stderr);
    // Another terminal: a new POSIX session (`setsid`), as a second shell window is.
    if std::process::Command::new("setsid")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success())
    {
        let out = env
            .agent("claude")
            .args(["lock", "G", "--no-wait"])
            .command();
        let mut other = std::process::Command::new("setsid");
        other.arg("-w").arg(out.get_program()).args(out.get_args());
        for (k, v) in out.get_envs() {
            match v {
                Some(v) => other.env(k, v),
                None => other.env_remove(k),
            };
        }
        let got = other.current_dir(env.root()).output().unwrap();
        assert_eq!(got.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert!(
            stderr.contains("warning: claude already holds `G` from another session"),
            "{stderr}"
        );
    } else {
        eprintln!("skipped the setsid half: no `setsid` on this machine");
    }
    // Another coord session (COORD_SESSION) is another origin too.
    env.agent("claude")
        .env("COORD_SESSION", "s-other")
        .args(["lock", "G", "--no-wait"])
        .ok()
        .stdout_has("Lock refreshed: G")
        .stderr_has("claude already holds `G` from another session");
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
