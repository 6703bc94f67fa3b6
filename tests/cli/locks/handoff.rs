//! Waiters woken by the hand-off of the file in front of them (`flock` on a ticket, or on the
//! lock of a `coord run`), with real processes: a holder killed by `SIGKILL`, a holder's lock
//! removed by hand, signals to a waiting run, and what a waiter sleeps on. The race of `coord
//! run`s under the hand-off is `edit::runs_exclude_each_other`.

use std::process::Child;

use crate::support::{Env, cpu_ticks, eventually, finish, hold_with_run, stop_run, tickets};

/// Whether process `pid` has an inotify descriptor open (`None` where `/proc` cannot tell).
fn has_inotify(pid: u32) -> Option<bool> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .is_ok_and(|target| target.to_string_lossy().contains("inotify"))
    }))
}

/// A `coord run FILE --wait 20s` by `agent` whose command writes `ran.<agent>`.
fn waiting_run(env: &Env, agent: &str, file: &str) -> Child {
    env.agent(agent)
        .args(["run", file, "--wait", "20s", "--", "sh", "-c"])
        .arg(format!("echo ran > ran.{agent}"))
        .spawn()
}

fn waits(env: &Env, agent: &str) -> bool {
    let presence = format!(".{agent}_presence");
    env.exists(&presence) && env.read(&presence).contains("lock_status: WAITING")
}

#[test]
fn waiting_runs_sleep_on_the_hand_off_and_a_waiter_behind_coord_lock_watches() {
    let env = Env::new();
    env.write("a.md", "v1");
    let holder = hold_with_run(&env, "claude", "a.md");
    let first = waiting_run(&env, "gemini", "a.md");
    eventually("gemini waits", || waits(&env, "gemini"));
    let second = waiting_run(&env, "codex", "a.md");
    eventually("codex waits", || waits(&env, "codex"));
    // The first in line sleeps on the holder's lock, the second on the ticket of the first: no
    // folder watch, whose descriptor would make each of them wait for the kernel at exit.
    std::thread::sleep(std::time::Duration::from_millis(200));
    for (who, child) in [("gemini", &first), ("codex", &second)] {
        match has_inotify(child.id()) {
            Some(watching) => assert!(!watching, "{who} watches folders"),
            None => eprintln!("skipped the descriptor check: /proc cannot tell"),
        }
    }
    stop_run(&env, holder);
    for child in [first, second] {
        let out = finish(child);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    assert_eq!(env.read("ran.gemini"), "ran\n");
    assert_eq!(env.read("ran.codex"), "ran\n");

    // A lock taken by `coord lock` outlives its process: nobody keeps it locked, so the waiter
    // watches its folder, and is woken by the unlock all the same.
    env.agent("claude").args(["lock", "a.md"]).ok();
    let waiter = waiting_run(&env, "qwen", "a.md");
    eventually("qwen waits", || waits(&env, "qwen"));
    if has_inotify(waiter.id()).is_some() {
        eventually("qwen watches the folder", || {
            has_inotify(waiter.id()) == Some(true)
        });
    }
    env.agent("claude").args(["unlock", "a.md"]).ok();
    let out = finish(waiter);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(env.read("ran.qwen"), "ran\n");
}

#[test]
fn a_run_killed_by_sigkill_wakes_the_waiter_sleeping_on_its_lock() {
    let env = Env::new();
    env.write("a.md", "v1");
    let mut holder = hold_with_run(&env, "claude", "a.md");
    let waiter = waiting_run(&env, "gemini", "a.md");
    eventually("gemini waits", || waits(&env, "gemini"));
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The kernel lets go of the dead holder's lock: the waiter takes over the stale lock.
    let out = finish(waiter);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(env.read("ran.gemini"), "ran\n");
    assert!(out.stderr.contains("claude"), "{}", out.stderr);
    env.write("stop", "");
}

#[test]
fn a_runs_lock_removed_by_hand_still_lets_the_waiter_in() {
    let env = Env::new();
    env.write("a.md", "v1");
    let holder = hold_with_run(&env, "claude", "a.md");
    let waiter = waiting_run(&env, "gemini", "a.md");
    eventually("gemini waits", || waits(&env, "gemini"));
    // Removed by another process while its holder still keeps the old file locked.
    std::fs::remove_file(env.path("a.md.lock.claude")).unwrap();
    let out = finish(waiter);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(env.read("ran.gemini"), "ran\n");
    env.write("stop", "");
    let out = finish(holder);
    assert!(
        out.stderr.contains("taken over"),
        "the holder says its lock went: {}",
        out.stderr
    );
}

#[test]
fn a_signal_to_a_waiting_run_leaves_the_queue_and_runs_nothing() {
    let env = Env::new();
    env.write("a.md", "v1");
    let holder = hold_with_run(&env, "claude", "a.md");
    for (agent, sig, code) in [
        ("gemini", rustix::process::Signal::INT, 130),
        ("codex", rustix::process::Signal::TERM, 143),
        ("qwen", rustix::process::Signal::HUP, 129),
    ] {
        let waiter = waiting_run(&env, agent, "a.md");
        eventually("the run waits", || waits(&env, agent));
        let pid = rustix::process::Pid::from_child(&waiter);
        rustix::process::kill_process(pid, sig).unwrap();
        let out = finish(waiter);
        assert_eq!(out.code, Some(code), "{}", out.stderr);
        assert!(out.stderr.contains("interrupted"), "{}", out.stderr);
        assert!(!env.exists(&format!("ran.{agent}")), "its command ran");
        assert!(
            env.read(&format!(".{agent}_presence"))
                .contains("lock_status: FREE"),
        );
    }
    assert_eq!(tickets(&env), Vec::<String>::new(), "left in the queue");
    stop_run(&env, holder);
}

#[test]
fn a_waiter_holding_a_lock_and_blocked_by_the_queue_sleeps_instead_of_spinning() {
    let env = Env::new();
    for f in ["a", "b", "c"] {
        env.write(f, "");
    }
    env.agent("y").args(["lock", "c"]).ok();
    // w waits for b and c (c is y's), and so stands first in b's line.
    let w = env
        .agent("w")
        .args(["lock", "b", "c", "--wait", "20s"])
        .spawn();
    eventually("w waits", || waits(&env, "w"));
    env.agent("x").args(["lock", "a"]).ok();
    // x holds a, and b is free, but w stands before it: x waits its turn, holding a lock.
    let x = env.agent("x").args(["lock", "b", "--wait", "2s"]).spawn();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let ticks = std::fs::read_to_string(format!("/proc/{}/stat", x.id()))
        .ok()
        .map(|stat| cpu_ticks(&stat));
    let out = finish(x);
    assert_eq!(out.code, Some(3), "{}", out.stderr);
    // A spinning waiter burns its 1.5 s of waiting (150 ticks at 100 Hz); a sleeping one a few.
    if let Some(ticks) = ticks {
        assert!(ticks < 50, "x used {ticks} ticks of CPU while waiting");
    }
    env.agent("y").args(["unlock", "c"]).ok();
    let out = finish(w);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}
