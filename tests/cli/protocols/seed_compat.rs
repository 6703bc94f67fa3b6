//! Byte compatibility with seed 001: the example session replayed, presence and lock files
//! written key for key as the seed writes them.

use crate::locks::lock_unlock::{T0, eventually};
use crate::support::Env;

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
