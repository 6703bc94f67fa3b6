//! coord inside a pid namespace whose session and process-group leaders live outside it (a
//! container, a CI sandbox, `unshare --pid`): the kernel reports those ids as 0 there, and
//! coord must still lock, supervise and release. Needs root for `unshare`; skips elsewhere.

use std::process::{Command, Output};

use crate::support::{Env, coord_bin};

/// `coord ARGS` run as agent `agent` in a new pid namespace (with a private `/proc` when
/// `own_proc`), or `None` (with the reason printed) when this machine cannot make one.
fn in_new_pid_namespace(env: &Env, own_proc: bool, agent: &str, args: &[&str]) -> Option<Output> {
    let mut probe = Command::new("unshare");
    probe.args(["--pid", "--fork"]);
    if own_proc {
        probe.arg("--mount-proc");
    }
    if !probe.arg("true").status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: `unshare --pid --fork` is not available here (needs root)");
        return None;
    }
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork"]);
    if own_proc {
        cmd.arg("--mount-proc");
    }
    let out = cmd
        .arg(coord_bin())
        .args(args)
        .current_dir(env.root())
        .env("COORD_DIR", env.root())
        .env("COORD_AGENT", agent)
        .env_remove("COORD_SESSION")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Some(out)
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
        let Some(out) = in_new_pid_namespace(&env, own_proc, "a", &["lock", "F"]) else {
            return;
        };
        succeeded(&out);
        let lock = env.read("F.lock.a");
        assert!(lock.contains("\norigin: "), "{lock}");
        succeeded(&in_new_pid_namespace(&env, own_proc, "a", &["unlock", "F"]).unwrap());
        assert!(!env.exists("F.lock.a"));

        let out = in_new_pid_namespace(
            &env,
            own_proc,
            "b",
            &["run", "F", "--", "sh", "-c", "echo two >> F"],
        )
        .unwrap();
        succeeded(&out);
        assert_eq!(env.read("F"), "one\ntwo\n");
        assert!(!env.exists("F.lock.b"), "run released its lock");

        let out = in_new_pid_namespace(&env, own_proc, "c", &["session", "--", "true"]).unwrap();
        succeeded(&out);
        assert!(env.read(".c_presence").contains("status: FINISHED\n"));
    }
}
