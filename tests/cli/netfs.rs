//! A shared folder across machines: the `link` arbitration (forced with `COORD_ARBITRATION`
//! on a local folder) with real racing processes, a holder of the arbitration killed with
//! SIGKILL or stopped with SIGSTOP; `coord doctor`; the sync-tool warning.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::fixture::{agent_sh, counter_cycle, wait_all};
use crate::support::Env;

/// Start `coord doctor --hold DUR` with the link arbitration and wait until it holds the lease.
fn holder(env: &Env, hold: &str) -> Child {
    let child = env
        .cmd()
        .env("COORD_ARBITRATION", "link")
        .args(["doctor", "--hold", hold])
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lease = env.path(".coord/mutex.lease");
    let start = Instant::now();
    while !lease.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the holder never took the lease"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} failed");
}

#[test]
fn the_link_arbitration_keeps_eight_racing_processes_apart() {
    let env = Env::new();
    env.write("counter.txt", "0\n");
    // `set -C` makes `>` use O_EXCL: two holders inside the critical section would collide.
    let cycle = counter_cycle(40, "--wait 2m --no-backup");
    let children: Vec<Child> = (1..=8)
        .map(|i| {
            agent_sh(
                &env,
                &format!("agent-{i}"),
                &cycle,
                &[("COORD_ARBITRATION", "link")],
            )
        })
        .collect();
    wait_all(children);
    assert!(
        !env.exists("collisions"),
        "two holders were inside the critical section at once: {}",
        env.read("collisions")
    );
    assert_eq!(env.read("counter.txt").trim(), "320");
    assert!(!env.exists(".coord/mutex.lease"), "the lease is released");
}

#[test]
fn a_holder_of_the_lease_killed_with_sigkill_does_not_wedge_anyone() {
    let env = Env::new();
    let mut h = holder(&env, "60s");
    signal(&h, "-KILL");
    h.wait().unwrap();
    assert!(
        env.exists(".coord/mutex.lease"),
        "the dead holder's lease is left"
    );
    let start = Instant::now();
    env.agent("bob")
        .env("COORD_ARBITRATION", "link")
        .args(["lock", "a.txt", "--wait", "20s"])
        .ok()
        .stdout_has("Lock acquired");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "a lease of a dead process of this host is broken at once, not after the lease"
    );
    assert!(!env.exists(".coord/mutex.lease"));
}

#[test]
fn a_stopped_holder_of_the_lease_is_overtaken_and_fenced() {
    let env = Env::new();
    let h = holder(&env, "2s");
    signal(&h, "-STOP");
    let start = Instant::now();
    env.agent("bob")
        .env("COORD_ARBITRATION", "link")
        .args(["lock", "a.txt", "--wait", "30s"])
        .ok()
        .stdout_has("Lock acquired");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(4),
        "the lease (5 s) is honoured while it runs: {waited:?}"
    );
    // Now the next holder of the lease stands in place: the stopped one resumes while bob's
    // successor holds it, and must neither remove it nor think it still holds.
    let mut next = holder(&env, "3s");
    signal(&h, "-CONT");
    let out = h.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the resumed holder learns it was overtaken: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("fenced"));
    assert!(
        env.exists(".coord/mutex.lease"),
        "the resumed holder left its successor's lease alone"
    );
    assert!(next.wait().unwrap().success(), "the successor kept it");
    assert!(env.exists("a.txt.lock.bob"));
}

#[test]
fn doctor_reports_the_filesystem_and_the_arbitration() {
    let env = Env::new();
    let out = env.cmd().args(["doctor", "--json"]).ok();
    let v: serde_json::Value = out.json();
    for key in [
        "filesystem",
        "class",
        "kernel_locks_cross_machines",
        "events_cross_machines",
        "arbitration",
        "recheck_ms",
        "clock_skew_ms",
    ] {
        assert!(v.get(key).is_some(), "no `{key}` in {v}");
    }
    let skew = v["clock_skew_ms"].as_i64().expect("the skew was measured");
    assert!(
        skew.abs() < 2000,
        "a local folder shares this clock: {skew}"
    );
    let forced: serde_json::Value = env
        .cmd()
        .env("COORD_ARBITRATION", "link")
        .args(["doctor", "--json"])
        .ok()
        .json();
    assert_eq!(forced["arbitration"], "link");
    assert_eq!(forced["arbitration_source"], "COORD_ARBITRATION");
    env.cmd()
        .args(["doctor"])
        .ok()
        .stdout_has("arbitration:")
        .stdout_has("clock skew:");
    env.agent("bob")
        .env("COORD_ARBITRATION", "sometimes")
        .args(["lock", "a.txt"])
        .code(2)
        .stderr_has("COORD_ARBITRATION");
    assert!(!env.exists("a.txt.lock.bob"));
}

#[test]
fn a_folder_under_a_sync_tool_is_warned_about_once() {
    let env = Env::new();
    env.write(".stfolder/.keep", "");
    env.agent("bob").args(["presence"]).ok();
    env.agent("bob")
        .args(["status"])
        .ok()
        .stderr_has("Syncthing");
    let again = env.agent("bob").args(["status"]).ok();
    assert!(
        !again.stderr.contains("Syncthing"),
        "said once: {}",
        again.stderr
    );
    env.cmd().args(["doctor"]).ok().stdout_has("Syncthing");
}
