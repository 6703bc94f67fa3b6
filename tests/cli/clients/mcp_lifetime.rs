//! `coord mcp`'s life: heartbeats while it runs, locks released and presence clocked out at the
//! end of input or on SIGTERM, stale at once when killed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::clients::mcp::{Client, assert_ok};
use crate::support::{Env, coord_bin};

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

#[track_caller]
pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} never happened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The wait tickets of `agent` in the queue.
fn tickets_of(env: &Env, agent: &str) -> usize {
    let suffix = format!(".{agent}");
    std::fs::read_dir(env.path(".coord/queue"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|d| d.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter(|t| t.file_name().to_string_lossy().ends_with(&suffix))
        .count()
}

/// How the client of a waiting server goes away.
#[derive(Debug, Clone, Copy)]
enum Leaving {
    /// It closes the server's stdin.
    ClosesStdin,
    /// It is killed with -9 while another process keeps the pipes open.
    KilledWithPipesOpen,
    /// It sends SIGTERM to the server.
    Sigterm,
}

/// Issue 26 item 17: a `lock` call waiting `"forever"` ends when its client goes away (stdin
/// closed, the client process killed while the pipes stay open elsewhere, SIGTERM): the ticket
/// leaves the queue, the presence stops saying WAITING, the server clocks out, and the file
/// is never locked for the departed client.
#[test]
fn a_forever_wait_ends_when_the_client_goes_away() {
    for leaving in [
        Leaving::ClosesStdin,
        Leaving::KilledWithPipesOpen,
        Leaving::Sigterm,
    ] {
        let env = Env::new();
        env.write("a.md", "a");
        env.agent("gemini").args(["lock", "a.md"]).ok();
        let mut c = match leaving {
            Leaving::KilledWithPipesOpen => {
                // The client: a shell that runs the server as its child (not `exec`); the test
                // keeps the other ends of the pipes, as a client's other children might.
                let mut command = Command::new("sh");
                command
                    .arg("-c")
                    .arg("\"$0\" mcp; echo ended >&2")
                    .arg(coord_bin())
                    .current_dir(env.root())
                    .env("COORD_DIR", env.root())
                    .env("COORD_AGENT", "claude");
                Client::spawn(command, Stdio::null())
            }
            _ => Client::start(&env, Some("claude")),
        };
        c.initialize("2025-06-18");
        c.send_line(
            &json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                "params": {"name": "lock", "arguments": {"files": ["a.md"], "wait_s": "forever"}}})
            .to_string(),
        );
        wait_until("the server waits in the queue", || {
            tickets_of(&env, "claude") == 1
                && env
                    .read(".claude_presence")
                    .contains("lock_status: WAITING")
        });
        match leaving {
            Leaving::ClosesStdin => drop(c.stdin.take()),
            Leaving::KilledWithPipesOpen => {
                c.child.kill().unwrap();
                c.child.wait().unwrap();
            }
            Leaving::Sigterm => {
                let pid = rustix::process::Pid::from_raw(c.pid() as i32).unwrap();
                rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
            }
        }
        wait_until(&format!("{leaving:?}: the ticket leaves the queue"), || {
            tickets_of(&env, "claude") == 0
        });
        wait_until(&format!("{leaving:?}: the server clocks out"), || {
            env.read(".claude_presence").contains("status: FINISHED\n")
        });
        assert!(
            !env.read(".claude_presence").contains("WAITING"),
            "{leaving:?}: {}",
            env.read(".claude_presence")
        );
        // The server is gone: its stdout reaches its end.
        drop(c.stdin.take());
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut c.stdout, &mut rest);
        let _ = c.child.wait();
        env.agent("gemini").args(["unlock", "a.md"]).ok();
        assert!(!env.exists("a.md.lock.claude"), "{leaving:?}");
        assert_eq!(tickets_of(&env, "claude"), 0, "{leaving:?}");
    }
}
