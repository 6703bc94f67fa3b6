//! `coord write`, `run` and `restore` at the edges the other tests did not reach: each test here
//! fails on a realistic bug that `cargo mutants` showed the rest of the suite would let through
//! (see docs/reliability.md, "Mutation testing").

use std::os::unix::fs::PermissionsExt;

use crate::support::{Env, cpu_ticks};

/// Lock files in the root, found by name only (nothing is opened: a FIFO may stand there).
fn locks(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
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
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
    let ticks = cpu_ticks(&env.read("stat"));
    assert!(
        ticks < 15,
        "coord run used {ticks} clock ticks of CPU while CMD ran for 36 s"
    );
}

/// Make a FIFO at `rel`, or `false` (with the reason printed) when `mkfifo` is not there.
fn mkfifo(env: &Env, rel: &str) -> bool {
    let made = std::process::Command::new("mkfifo")
        .arg(env.path(rel))
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: mkfifo is not available");
    }
    made
}

/// A FILE that is a FIFO or a folder is refused by `write` and `restore` (exit 2) and left
/// as it is: it is never replaced by a regular file, its backup never swapped in. `write`
/// refuses it even under the agent's lock (the file was swapped for a FIFO after the lock).
#[test]
fn write_and_restore_refuse_a_fifo_or_a_folder() {
    use std::os::unix::fs::FileTypeExt;
    let env = Env::new();
    env.write("pipe", "a regular file when locked\n");
    env.agent("claude")
        .args(["lock", "pipe", "--no-backup"])
        .ok();
    std::fs::remove_file(env.path("pipe")).unwrap();
    if !mkfifo(&env, "pipe") {
        return;
    }
    env.agent("claude")
        .args(["write", "pipe"])
        .stdin("new\n")
        .code(2)
        .stderr_has("`pipe`: it is not a regular file");
    let kind = std::fs::symlink_metadata(env.path("pipe")).unwrap();
    assert!(kind.file_type().is_fifo(), "the FIFO was replaced");
    env.agent("claude").args(["unlock", "pipe"]).ok();

    std::fs::create_dir(env.path("dir")).unwrap();
    env.write("dir.bak", "old\n");
    env.agent("claude")
        .args(["restore", "dir"])
        .code(2)
        .stderr_has("`dir`: it is not a regular file");
    assert!(env.path("dir").is_dir());
    assert_eq!(env.read("dir.bak"), "old\n");

    // A backup that is not a regular file is not restored from.
    env.write("g.txt", "current\n");
    std::fs::create_dir(env.path("g.txt.bak")).unwrap();
    env.agent("claude")
        .args(["restore", "g.txt"])
        .code(1)
        .stderr_has("`g.txt.bak`: it is not a regular file");
    assert_eq!(env.read("g.txt"), "current\n");
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
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
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}

/// A lock made by hand (no token) fences a `coord write` on the lock file itself: rewritten
/// in place, or replaced by another file with the same text, it is no longer the lock the
/// write started under, and the content goes to `FILE.rejected.<agent>`.
#[test]
fn a_hand_made_lock_rewritten_or_replaced_mid_write_fences_the_write() {
    use std::io::Write;
    for how in ["rewritten in place", "replaced by a copy"] {
        let env = Env::new();
        env.write("F", "old\n");
        let text = format!(
            "Agent: Claude\nlocked_at: {}\nfile: F\n",
            chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
        );
        env.write("F.lock.Claude", &text);
        let mut child = env
            .agent("claude")
            .args(["write", "F"])
            .command()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"new ").unwrap();
        stdin.flush().unwrap();
        // The fence is read before the content is spooled: wait for the spool file.
        crate::support::eventually("the write to spool its input", || {
            std::fs::read_dir(env.root()).unwrap().flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(".coord-") && name.ends_with(".tmp")
            })
        });
        let lock = env.path("F.lock.Claude");
        if how == "rewritten in place" {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&lock)
                .unwrap();
            f.write_all(format!("{text}reason: again\n").as_bytes())
                .unwrap();
        } else {
            // A new file (made while the old one still exists, so not on its inode) with the
            // same text, renamed over the lock.
            let copy = env.path("lock-copy");
            std::fs::write(&copy, &text).unwrap();
            std::fs::rename(&copy, &lock).unwrap();
        }
        stdin.write_all(b"content\n").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "lock {how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(env.read("F"), "old\n", "lock {how}");
        assert_eq!(env.read("F.rejected.claude"), "new content\n", "lock {how}");
    }
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
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
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
    let Some(out) = crate::session::ctrl_c_at_a_terminal(&env, cmd, 11) else {
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
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}

/// `lock` (and `run`, which locks first) refuses a FILE that is a FIFO, a folder, or a symlink
/// to one, as `write` and `restore` do: exit 2 naming the file, and nothing written (no lock,
/// no backup, no presence), all or nothing with the regular files named beside it.
#[test]
fn lock_and_run_refuse_a_fifo_or_a_folder() {
    use std::os::unix::fs::FileTypeExt;
    let env = Env::new();
    if !mkfifo(&env, "pipe") {
        return;
    }
    std::fs::create_dir(env.path("dir")).unwrap();
    std::os::unix::fs::symlink("pipe", env.path("link")).unwrap();
    env.write("f.txt", "x\n");
    for (arg, shown) in [("pipe", "pipe"), ("dir", "dir"), ("link", "pipe")] {
        env.agent("claude")
            .args(["lock", "f.txt", arg])
            .code(2)
            .stderr_has(&format!(
                "error: invalid path `{shown}`: it is not a regular file"
            ));
        env.agent("claude")
            .args(["run", arg, "--", "touch", "ran"])
            .code(2)
            .stderr_has(&format!("`{shown}`: it is not a regular file"));
    }
    assert!(!env.exists("ran"), "the command ran without its lock");
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
    assert!(!env.exists(".claude_presence"));
    assert!(!env.exists("f.txt.bak") && !env.exists("pipe.bak") && !env.exists("dir.bak"));
    let kind = std::fs::symlink_metadata(env.path("pipe")).unwrap();
    assert!(kind.file_type().is_fifo(), "the FIFO was replaced");
    assert!(env.path("dir").is_dir());
    // The regular file alone is still free to lock.
    env.agent("claude").args(["lock", "f.txt"]).ok();
}

/// Lock records are read up to a cap of 64 KiB: a hand-made lock of exactly that size is read
/// whole, so it is the agent's lock and fences its `write` like any other.
#[test]
fn a_hand_made_lock_of_exactly_64_kib_is_the_agents_lock() {
    let env = Env::new();
    env.write("F", "old\n");
    let mut text = format!(
        "Agent: Claude\nlocked_at: {}\nfile: F\nnote: ",
        chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
    );
    text.push_str(&"x".repeat(64 * 1024 - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), 64 * 1024);
    env.write("F.lock.Claude", &text);
    env.agent("claude")
        .args(["write", "F"])
        .stdin("new\n")
        .ok()
        .stdout_has("Written: F");
    assert_eq!(env.read("F"), "new\n");
    assert_eq!(env.read("F.lock.Claude"), text, "the lock was changed");
}
