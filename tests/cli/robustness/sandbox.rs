//! coord inside a pid namespace whose session and process-group leaders live outside it (a
//! container, a CI sandbox, `unshare --pid`): the kernel reports those ids as 0 there, and
//! coord must still lock, supervise and release. Needs root for `unshare`; skips elsewhere.

use std::process::{Command, Output};

use crate::support::{Env, coord_bin};

/// A command that runs PROGRAM in a new pid namespace (with a private `/proc` when
/// `own_proc`) in `env` as agent `agent`, or `None` (with the reason printed) when this
/// machine cannot make one.
fn sandboxed(env: &Env, own_proc: bool, agent: &str) -> Option<Command> {
    let base = || {
        let mut cmd = Command::new("unshare");
        cmd.args(["--pid", "--fork"]);
        if own_proc {
            cmd.arg("--mount-proc");
        }
        cmd
    };
    if !base().arg("true").status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: `unshare --pid --fork` is not available here (needs root)");
        return None;
    }
    let mut cmd = base();
    cmd.current_dir(env.root())
        .env("COORD_DIR", env.root())
        .env("COORD_AGENT", agent)
        .env_remove("COORD_SESSION")
        .env("NO_COLOR", "1");
    Some(cmd)
}

/// `coord ARGS` in a new pid namespace.
fn coord_in(env: &Env, own_proc: bool, agent: &str, args: &[&str]) -> Option<Output> {
    let mut cmd = sandboxed(env, own_proc, agent)?;
    Some(cmd.arg(coord_bin()).args(args).output().unwrap())
}

#[track_caller]
fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn lock_run_and_session_work_where_the_session_leader_is_outside_the_namespace() {
    for own_proc in [false, true] {
        let env = Env::new();
        env.write("F", "one\n");
        let Some(out) = coord_in(&env, own_proc, "a", &["lock", "F"]) else {
            return;
        };
        succeeded(&out);
        let lock = env.read("F.lock.a");
        assert!(lock.contains("\norigin: "), "{lock}");
        succeeded(&coord_in(&env, own_proc, "a", &["unlock", "F"]).unwrap());
        assert!(!env.exists("F.lock.a"));

        let run = ["run", "F", "--", "sh", "-c", "echo two >> F"];
        succeeded(&coord_in(&env, own_proc, "b", &run).unwrap());
        assert_eq!(env.read("F"), "one\ntwo\n");
        assert!(!env.exists("F.lock.b"), "run released its lock");

        succeeded(&coord_in(&env, own_proc, "c", &["session", "--", "true"]).unwrap());
        assert!(env.read(".c_presence").contains("status: FINISHED\n"));
    }
}

/// Two commands of one shell inside the sandbox are one origin: the refresh is quiet.
#[test]
fn a_refresh_from_the_same_sandboxed_shell_is_not_warned_about() {
    for own_proc in [false, true] {
        let env = Env::new();
        env.write("G", "x");
        let Some(mut cmd) = sandboxed(&env, own_proc, "a") else {
            return;
        };
        let script = format!("{0} lock G && {0} lock G --no-wait", coord_bin());
        let out = cmd.args(["sh", "-c", &script]).output().unwrap();
        succeeded(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("Lock refreshed: G"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("another session"), "{stderr}");
    }
}
