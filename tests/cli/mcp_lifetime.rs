//! `coord mcp`'s life: heartbeats while it runs, locks released and presence clocked out at the
//! end of input or on SIGTERM, stale at once when killed.

use serde_json::{Value, json};

use crate::mcp::{Client, assert_ok, wait_until};
use crate::support::Env;

#[test]
fn end_of_input_releases_the_locks_and_clocks_out() {
    let env = Env::new();
    env.write("a.md", "a");
    env.write("b.md", "b");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    assert_ok(&c.call("lock", json!({"files": ["a.md", "b.md"]})));
    assert!(env.exists("a.md.lock.claude") && env.exists("b.md.lock.claude"));
    let (code, stderr) = c.finish();
    assert_eq!(code, 0);
    assert!(stderr.contains("Lock released: a.md"), "{stderr}");
    assert!(!env.exists("a.md.lock.claude"));
    assert!(!env.exists("b.md.lock.claude"));
    assert!(env.read(".claude_presence").contains("status: FINISHED\n"));
    let rows: Value = env.cmd().args(["partners", "--json"]).ok().json();
    assert_eq!(rows["partners"][0]["status"], "offline");
}

#[test]
fn sigterm_releases_the_locks_and_clocks_out() {
    let env = Env::new();
    env.write("a.md", "a");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    assert_ok(&c.call("lock", json!({"files": ["a.md"]})));
    let pid = rustix::process::Pid::from_raw(c.pid() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = c.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!env.exists("a.md.lock.claude"));
    assert!(env.read(".claude_presence").contains("status: FINISHED\n"));
}

#[test]
fn a_killed_server_leaves_locks_that_are_stale_at_once() {
    let env = Env::new();
    env.write("a.md", "a");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    assert_ok(&c.call("lock", json!({"files": ["a.md"], "ttl_s": "1h"})));
    c.child.kill().unwrap(); // SIGKILL: no chance to clean up
    c.child.wait().unwrap();
    assert!(env.exists("a.md.lock.claude"), "nothing cleaned up");
    let st: Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st["locks"][0]["state"], "STALE", "{st}");
    env.agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .ok()
        .stderr_has("took over the stale lock of claude");
}

#[test]
fn the_server_heartbeats_while_it_runs() {
    let env = Env::new();
    let mut c = Client::start_with(
        &env,
        Some("claude"),
        &[("COORD_HEARTBEAT_INTERVAL", "200ms")],
    );
    c.initialize("2025-06-18");
    assert_ok(&c.call("status", json!({})));
    let rows = || -> Value { env.cmd().args(["partners", "--json"]).ok().json() };
    let first = rows()["partners"][0]["last_heartbeat"].clone();
    wait_until("a heartbeat", || {
        rows()["partners"][0]["last_heartbeat"] != first
    });
    assert_eq!(rows()["partners"][0]["status"], "online");
}
