//! `coord write`, `run` and `restore` at the edges the other tests did not reach: each test here
//! fails on a realistic bug that `cargo mutants` showed the rest of the suite would let through
//! (see docs/reliability.md, "Mutation testing").

use std::os::unix::fs::PermissionsExt;

use crate::support::Env;

fn locks(env: &Env) -> Vec<String> {
    env.files_ending("")
        .into_iter()
        .filter(|f| f.contains(".lock."))
        .collect()
}

/// A file deleted by mistake comes back from its backup; there is nothing to swap it with.
#[test]
fn restore_brings_back_a_deleted_file() {
    let env = Env::new();
    env.write("f.txt", "precious\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    std::fs::remove_file(env.path("f.txt")).unwrap();
    let out = env.agent("claude").args(["restore", "f.txt"]).ok();
    out.stdout_has("Restored: f.txt from f.txt.bak")
        .stdout_lacks("now holds");
    assert_eq!(env.read("f.txt"), "precious\n");
    assert_eq!(env.read("f.txt.bak"), "precious\n");
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}

/// As shells do: 127 when CMD does not exist, 126 when it exists but cannot be executed.
#[test]
fn run_exits_126_for_a_command_that_cannot_be_executed() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write("not-executable.sh", "#!/bin/sh\ntouch ran\n");
    std::fs::set_permissions(
        env.path("not-executable.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    env.agent("claude")
        .args(["run", "f.txt", "--", "./not-executable.sh"])
        .code(126)
        .stderr_has("cannot run `./not-executable.sh`");
    assert!(!env.exists("ran"));
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
    env.agent("claude")
        .args(["run", "f.txt", "--", "./no-such-script.sh"])
        .code(127);
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}

fn heartbeat(env: &Env, agent: &str) -> chrono::DateTime<chrono::FixedOffset> {
    let text = env.read(&format!(".{agent}_presence"));
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("heartbeat:"))
        .unwrap_or_else(|| panic!("no heartbeat in {text:?}"));
    chrono::DateTime::parse_from_rfc3339(line.trim()).unwrap()
}

/// A `coord run` longer than the heartbeat timeout keeps its agent ACTIVE (its lock must not
/// go stale under a command still running): the heartbeat is refreshed every 30 s while CMD
/// runs, and not on every wake-up in between.
#[test]
fn a_long_run_refreshes_the_heartbeat_every_30_seconds() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let run = env
        .agent("claude")
        .args(["run", "f.txt", "--", "sh", "-c", ": > started; sleep 36"])
        .spawn();
    crate::support::eventually("the command started", || env.exists("started"));
    let first = heartbeat(&env, "claude");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(heartbeat(&env, "claude"), first, "refreshed within 3 s");
    let start = std::time::Instant::now();
    let mut refreshed = first;
    while start.elapsed() < std::time::Duration::from_secs(40) && refreshed == first {
        std::thread::sleep(std::time::Duration::from_millis(200));
        refreshed = heartbeat(&env, "claude");
    }
    let gap = refreshed - first;
    assert!(
        gap >= chrono::Duration::seconds(29) && gap <= chrono::Duration::seconds(33),
        "heartbeat went from {first} to {refreshed} while CMD ran"
    );
    crate::support::finish(run);
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}
