//! `coord run`: a command under the locks: its exit status, its signals and process group, its
//! heartbeat, and the release that comes only after the command is gone.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::Signal;

use crate::protocols::edit::{locks, signal, wait_until};
use crate::rigs::{eventually_within, lock_names};
use crate::support::{Env, cpu_ticks};

fn sigterm(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
}

/// SIGTERM to `coord run` reaches CMD's whole process group: a child CMD left running in the
/// background dies with it instead of writing FILE after the lock went to another agent.
#[test]
fn sigterm_to_run_ends_cmds_background_children_before_releasing() {
    let env = Env::new();
    env.write("F", "");
    let child = env
        .agent("a")
        .args(["run", "F", "--", "sh", "-c"])
        .arg(r#"sh -c "sleep 2; echo late >> F" & touch started; sleep 30"#)
        .spawn();
    eventually_within("CMD to start", Duration::from_secs(10), || {
        env.exists("started")
    });
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env.agent("b").args(["lock", "F", "--no-wait"]).ok();
    env.agent("b").args(["write", "F"]).stdin("b's\n").ok();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        env.read("F"),
        "b's\n",
        "an orphan of the run wrote under b's lock"
    );
}

/// SIGTERM `child` (a `coord run`/`coord session` whose CMD writes `late` to F when told to
/// stop): it exits 143, and only after the whole group ended is F's lock released.
#[track_caller]
fn sigterm_ends_the_group_then_releases(env: &Env, child: std::process::Child) {
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        env.read("F"),
        "late\n",
        "the lock was released before the group ended"
    );
    assert!(!env.exists("F.lock.a"));
}

/// A child that ignores SIGTERM is waited for (it is killed only after a grace period): the
/// lock is released once the whole group has ended, never while a member still runs.
#[test]
fn run_and_session_release_only_after_cmds_group_has_ended() {
    let env = Env::new();
    env.write("F", "");
    // `started` is touched by the child itself once it ignores SIGTERM.
    let stubborn = r#"sh -c "trap '' TERM; touch started; sleep 1; echo late >> F" & sleep 30"#;
    let child = env
        .agent("a")
        .args(["run", "F", "--", "sh", "-c", stubborn])
        .spawn();
    eventually_within("CMD to start", Duration::from_secs(10), || {
        env.exists("started")
    });
    sigterm_ends_the_group_then_releases(&env, child);

    // The same inside `coord session`, for a lock taken by CMD.
    std::fs::remove_file(env.path("started")).unwrap();
    env.write("F", "");
    let script = format!(
        "'{}' lock F --no-backup; {stubborn}",
        crate::support::coord_bin()
    );
    let child = env
        .agent("a")
        .args(["session", "--", "sh", "-c", &script])
        .spawn();
    eventually_within("CMD to start", Duration::from_secs(10), || {
        env.exists("started")
    });
    assert!(env.exists("F.lock.a"));
    sigterm_ends_the_group_then_releases(&env, child);
}

// ---------------------------------------------------------------------------------------------
// Tests that let bugs through

/// The cleanup of `coord run` deletes only the lock it took (compare-and-delete by token): a
/// newer lock CMD took after releasing the run's own stays, and the run says it lost its lock.
#[test]
fn run_never_releases_a_lock_whose_token_is_not_its_own() {
    let env = Env::new();
    env.write("f", "");
    let bin = crate::support::coord_bin();
    let out = env
        .agent("a")
        .args(["run", "f", "--", "sh", "-c"])
        .arg(format!("'{bin}' unlock f && '{bin}' lock f --no-backup"))
        .ok();
    assert!(
        out.stderr.contains("taken over while the command ran"),
        "{}",
        out.stderr
    );
    assert!(env.exists("f.lock.a"), "the run deleted the newer lock");
    env.agent("b")
        .args(["lock", "f", "--no-wait"])
        .code(3)
        .stderr_has("held by a");
}

/// 8 agents × 25 `coord run` increments of one counter: exactly 200, never two inside at once.
#[test]
fn runs_exclude_each_other() {
    let env = Arc::new(Env::new());
    env.write("counter.txt", "0\n");
    let script = "set -C; : > witness || exit 99; \
                  n=$(cat counter.txt); echo $((n + 1)) >| counter.txt; rm -f witness";
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let env = Arc::clone(&env);
            std::thread::spawn(move || {
                for _ in 0..25 {
                    env.agent(&format!("agent-{i}"))
                        .args([
                            "run",
                            "counter.txt",
                            "--wait",
                            "5m",
                            "--",
                            "sh",
                            "-c",
                            script,
                        ])
                        .ok();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(env.read("counter.txt").trim(), "200");
    assert!(!env.exists("witness"));
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}

#[test]
fn run_passes_the_command_status_on_and_always_releases() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    for (script, code) in [
        ("exit 0", 0),
        ("exit 7", 7),
        ("kill -9 $$", 128 + 9),
        ("kill -15 $$", 128 + 15),
    ] {
        env.agent("claude")
            .args(["run", "f.txt", "--", "sh", "-c", script])
            .code(code);
        assert!(
            locks(&env).is_empty(),
            "after `{script}`: {:?}",
            locks(&env)
        );
    }
    // Inside CMD the lock is held by this agent, so `coord write` works there.
    let exe = crate::support::coord_bin();
    env.agent("claude")
        .args(["run", "f.txt", "--", "sh", "-c"])
        .arg(format!(
            "test -e f.txt.lock.claude && echo inside | {exe} write f.txt"
        ))
        .ok();
    assert_eq!(env.read("f.txt"), "inside\n");
    assert_eq!(env.read("f.txt.bak"), "x\n");
    env.agent("claude")
        .args(["run", "f.txt", "--", "no-such-command-here"])
        .code(127)
        .stderr_has("cannot run `no-such-command-here`");
    assert!(locks(&env).is_empty());
    env.agent("claude").args(["run", "f.txt"]).code(2);
}

#[test]
fn signals_to_run_reach_the_command_and_release_the_locks() {
    for (sig, name, code) in [
        (Signal::TERM, "TERM", 143),
        (Signal::INT, "INT", 130),
        (Signal::HUP, "HUP", 129),
    ] {
        let env = Env::new();
        env.write("f.txt", "x\n");
        let script = format!(
            "trap 'echo {name} > got_signal; trap - {name}; kill -{name} $$' {name}; \
             : > started; while :; do sleep 0.05; done"
        );
        let run = env
            .agent("claude")
            .args(["run", "f.txt", "--", "sh", "-c", &script])
            .spawn();
        wait_until("the command started", || env.exists("started"));
        signal(&run, sig);
        let out = run.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "SIG{name}: stderr {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(env.read("got_signal"), format!("{name}\n"));
        assert!(locks(&env).is_empty(), "SIG{name}: {:?}", locks(&env));
    }
}

#[test]
fn run_refuses_when_the_lock_is_held() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("gemini")
        .args(["lock", "f.txt", "--reason", "refactoring"])
        .ok();
    env.agent("claude")
        .args(["run", "f.txt", "--wait", "0", "--", "sh", "-c", ": > ran"])
        .code(3)
        .stderr_has("held by gemini")
        .stderr_has("refactoring");
    assert!(!env.exists("ran"));
    assert!(env.exists("f.txt.lock.gemini"));
    assert!(!env.exists("f.txt.lock.claude"));
}

/// A `coord run` killed outright leaves a lock that is stale at once: the next run takes it.
#[test]
fn a_killed_run_leaves_a_lock_that_is_stale_at_once() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let mut run = env
        .agent("claude")
        .args([
            "run",
            "f.txt",
            "--",
            "sh",
            "-c",
            ": > started; exec sleep 30",
        ])
        .spawn();
    wait_until("the command started", || env.exists("started"));
    run.kill().unwrap();
    run.wait().unwrap();
    env.agent("gemini")
        .args(["run", "f.txt", "--wait", "0", "--", "true"])
        .ok()
        .stderr_has("took over the stale lock of claude");
}

/// A `coord run` killed outright takes its CMD with it (Linux): the lock it leaves is stale at
/// once, so CMD must not go on writing FILE under the lock the next agent takes.
#[cfg(target_os = "linux")]
#[test]
fn a_killed_runs_command_does_not_write_under_the_next_holder() {
    let env = Env::new();
    env.write("F", "");
    let mut run = env
        .agent("a")
        .args(["run", "F", "--", "sh", "-c"])
        .arg(": > started; while :; do echo late >> F; sleep 0.05; done")
        .spawn();
    wait_until("the command started", || env.exists("started"));
    run.kill().unwrap();
    run.wait().unwrap();
    env.agent("b").args(["lock", "F", "--no-wait"]).ok();
    env.agent("b").args(["write", "F"]).stdin("b's\n").ok();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        env.read("F"),
        "b's\n",
        "the killed run's command wrote under b's lock"
    );
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
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
    env.agent("claude")
        .args(["run", "f.txt", "--", "./no-such-script.sh"])
        .code(127);
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
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
/// runs, and not on every wake-up in between; after a refresh, coord sleeps until the next.
/// (CMD ends by itself after a minute should the test fail before telling it to stop.)
#[test]
fn a_long_run_refreshes_the_heartbeat_every_30_seconds() {
    use std::time::{Duration, Instant};
    let env = Env::new();
    env.write("f.txt", "x\n");
    // CMD reads its parent's (coord run's) CPU time just before it ends.
    let run = env
        .agent("claude")
        .args([
            "run",
            "f.txt",
            "--",
            "sh",
            "-c",
            ": > started; i=0; while [ ! -e stop ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; cat /proc/$PPID/stat > stat",
        ])
        .spawn();
    crate::support::eventually("the command started", || env.exists("started"));
    let first = heartbeat(&env, "claude");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(heartbeat(&env, "claude"), first, "refreshed within 3 s");
    let start = Instant::now();
    let mut refreshed = first;
    while start.elapsed() < Duration::from_secs(40) && refreshed == first {
        std::thread::sleep(Duration::from_millis(200));
        refreshed = heartbeat(&env, "claude");
    }
    let gap = refreshed - first;
    assert!(
        gap >= chrono::Duration::seconds(29) && gap <= chrono::Duration::seconds(33),
        "heartbeat went from {first} to {refreshed} while CMD ran"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        heartbeat(&env, "claude"),
        refreshed,
        "refreshed again within 3 s of a refresh"
    );
    env.write("stop", "");
    let out = crate::support::finish(run);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
    let ticks = cpu_ticks(&env.read("stat"));
    assert!(
        ticks < 15,
        "coord run used {ticks} clock ticks of CPU while CMD ran for 36 s"
    );
}

/// Others are told what a `coord run` holds a file for: the program's file name; the same
/// agent from another shell is kept out as well. (CMD ends
/// by itself after 20 s should the test fail before telling it to stop.)
#[test]
fn a_run_tells_others_which_program_holds_the_file() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let run = crate::support::hold_with_run(&env, "claude", "f.txt");
    env.agent("gemini")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("is held by claude")
        .stderr_has("(working on coord run sh)");
    // The same agent in another shell is kept out too: the lock follows the run's process.
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("is held by claude (process ");
    crate::support::stop_run(&env, run);
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
}

/// While CMD runs, `coord run` sleeps until a signal or the next heartbeat: over 2 seconds it
/// uses next to no CPU (a loop that polled instead would use a core's worth).
#[test]
fn a_run_sleeps_while_its_command_runs() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    // CMD reads its parent's (coord run's) CPU time just before it ends.
    env.agent("claude")
        .args([
            "run",
            "f.txt",
            "--",
            "sh",
            "-c",
            "sleep 2; cat /proc/$PPID/stat > stat",
        ])
        .ok();
    let ticks = cpu_ticks(&env.read("stat"));
    assert!(
        ticks < 15,
        "coord run used {ticks} clock ticks of CPU while CMD slept 2 s"
    );
}

/// `SIGINT` to a `coord run` off a terminal goes to CMD's whole group; a CMD that ignores it
/// is killed 10 s later (exit 137), and the lock is released.
#[test]
fn a_command_ignoring_sigint_is_killed_after_the_grace_period() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let run = env
        .agent("claude")
        .args([
            "run",
            "f.txt",
            "--",
            "sh",
            "-c",
            "trap '' INT; : > started; sleep 25",
        ])
        .spawn();
    crate::support::eventually("the command started", || env.exists("started"));
    let pid = rustix::process::Pid::from_raw(run.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = crate::support::finish(run);
    assert_eq!(out.code, Some(137), "{}", out.stderr);
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
}

/// Ctrl-C typed at the terminal where `coord run` runs in the foreground reaches CMD (the
/// terminal's foreground group) and never gets it killed: an interactive CMD that lives on
/// past the 10 s grace a SIGTERM gets ends by itself, with its own status, and the lock is
/// released then.
#[test]
fn ctrl_c_at_a_terminal_never_gets_a_runs_command_killed() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let cmd = env.agent("claude").args(["run", "f.txt", "--"]);
    let Some(out) = crate::protocols::session::ctrl_c_at_a_terminal(&env, cmd, 11) else {
        return;
    };
    assert_eq!(
        out.code, "5",
        "coord run must exit with CMD's own status\n{}",
        out.shown
    );
    assert!(
        !out.sigints.is_empty(),
        "the Ctrl-C never reached CMD\n{}",
        out.shown
    );
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
}

/// Two `coord run`s of one agent on one file exclude each other: the lock follows the first
/// run's process, and the second run, another process, is refused (exit 3) without running
/// its command.
#[test]
fn two_runs_of_one_agent_exclude_each_other() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let run = crate::support::hold_with_run(&env, "claude", "f.txt");
    env.agent("claude")
        .args([
            "run",
            "f.txt",
            "--wait",
            "0",
            "--",
            "/bin/sh",
            "-c",
            ": > second",
        ])
        .code(3)
        .stderr_has("is held by claude (process ");
    assert!(!env.exists("second"), "the second run ran its command");
    crate::support::stop_run(&env, run);
    assert!(!env.exists("f.txt.lock.claude"));
}
