//! What a coord process may rely on before it does anything: descriptors 0–2 are open (a
//! closed one is never handed to a file coord opens), and a closed stdout is an error coord
//! handles, not a SIGPIPE that kills it mid-command.

use std::process::{Command, Stdio};

use crate::support::{Env, coord_bin};

/// `coord ARGS` as agent bob with stdin, stdout and stderr all closed; returns its exit code.
fn with_closed_descriptors(env: &Env, args: &str) -> i32 {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("\"$0\" {args} <&- >&- 2>&-"))
        .arg(coord_bin())
        .current_dir(env.root())
        .env("COORD_DIR", env.root())
        .env("COORD_AGENT", "bob")
        .env_remove("COORD_SESSION_PID")
        .status()
        .unwrap();
    status.code().expect("coord ended by a signal")
}

#[test]
fn a_command_run_by_coord_with_closed_descriptors_gets_dev_null_on_them() {
    let env = Env::new();
    env.write("F.md", "text\n");
    // The command inherits coord's descriptors 0-2 and writes what they are to `seen` (through
    // command substitutions, which leave the shell's own descriptors as they are).
    let probe = "s=; for fd in 0 1 2; do s=\"$s$(readlink /proc/$$/fd/$fd || echo closed) \"; done; echo \"$s\" >seen";
    assert_eq!(
        with_closed_descriptors(&env, &format!("run F.md -- sh -c '{probe}'")),
        0
    );
    assert_eq!(env.read("seen"), "/dev/null /dev/null /dev/null \n");
    assert!(!env.exists("F.md.lock.bob"));
    assert_eq!(env.read("F.md"), "text\n");
}

#[test]
fn lock_and_unlock_work_with_stdin_stdout_and_stderr_closed() {
    let env = Env::new();
    env.write("F.md", "text\n");
    assert_eq!(with_closed_descriptors(&env, "lock F.md"), 0);
    let lock = env.read("F.md.lock.bob");
    assert!(lock.starts_with("Agent: bob\n"), "lock file: {lock:?}");
    assert!(env.read(".bob_presence").contains("lock_status: LOCKED"));
    assert_eq!(with_closed_descriptors(&env, "unlock F.md"), 0);
    assert!(!env.exists("F.md.lock.bob"));
    // What coord printed went nowhere: no file in the folder holds its messages.
    for (name, bytes) in env.snapshot() {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("Lock acquired") && !text.contains("Lock released"),
            "{name} received coord's output: {text:?}"
        );
    }
    assert_eq!(env.read("F.md"), "text\n");
}

#[test]
fn a_reader_gone_from_stdout_ends_coord_quietly() {
    let env = Env::new();
    env.write("F.md", "x\n");
    env.agent("bob").args(["lock", "F.md"]).ok();
    // The reader is gone before coord starts: its first write to stdout meets a closed pipe.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = env
        .agent("bob")
        .args(["status"])
        .command()
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "status into a closed pipe: {:?}, stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
