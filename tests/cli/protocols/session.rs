//! `coord session -- CMD`: a supervised agent, its locks and its end, whatever the end.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin};

/// Wait (at most 30 s, generously) until `path` exists.
#[track_caller]
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send(pid: u32, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    let _ = rustix::process::kill_process(pid, sig);
}

/// `coord session` as `claude`, with `$COORD_BIN` naming the binary for CMD.
fn session(env: &Env, script: &str) -> crate::support::Cmd {
    env.cmd().env("COORD_BIN", coord_bin()).args([
        "session",
        "--partner",
        "claude",
        "--task",
        "T1",
        "--",
        "sh",
        "-c",
        script,
    ])
}

#[test]
fn the_command_gets_the_session_and_its_exit_code_is_passed_through() {
    let env = Env::new();
    let out = session(
        &env,
        r#"test "$COORD_AGENT" = claude && test "$COORD_DIR" = "$PWD" && test -n "$COORD_SESSION" && test -n "$COORD_SESSION_PID" && echo "child says hi" && exit 7"#,
    )
    .code(7);
    assert_eq!(
        out.stdout, "child says hi\n",
        "coord's own lines go to stderr"
    );
    out.stderr_has("Clocked in: claude")
        .stderr_has("Clocked out: claude");
    let rows: serde_json::Value = env.cmd().args(["partners", "--json"]).ok().json();
    assert_eq!(rows["partners"][0]["status"], "offline");
    assert_eq!(rows["partners"][0]["current_task"], "T1");
    assert!(env.read(".claude_presence").contains("status: FINISHED\n"));
    session(&env, "exit 0").ok();
}

#[test]
fn a_command_killed_by_sigkill_gives_137_and_its_locks_are_released() {
    let env = Env::new();
    env.write("a.md", "a");
    env.write("keep.md", "k");
    // A lock of claude's taken outside the session is not the session's to release.
    env.agent("claude").args(["lock", "keep.md"]).ok();
    let out = session(&env, r#""$COORD_BIN" lock a.md && kill -9 $$"#).code(137);
    out.stderr_has("Lock released: a.md");
    assert!(!env.exists("a.md.lock.claude"));
    assert!(env.exists("keep.md.lock.claude"));
}

#[test]
fn locks_of_a_killed_session_process_are_stale_at_once() {
    let env = Env::new();
    env.write("a.md", "a");
    let mut sess = session(
        &env,
        r#""$COORD_BIN" lock a.md && echo $$ > child.pid && exec sleep 60"#,
    )
    .spawn();
    wait_for(&env.path("child.pid"));
    let lock = env.read("a.md.lock.claude");
    assert!(lock.contains(&format!("pid: {}\n", sess.id())), "{lock}");
    assert!(lock.contains("session: claude-"), "{lock}");

    sess.kill().unwrap(); // SIGKILL: no chance to clean up
    sess.wait().unwrap();
    env.agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .ok()
        .stderr_has("took over the stale lock of claude");
    assert!(env.exists("a.md.lock.gemini"));
    assert!(!env.exists("a.md.lock.claude"));

    let child: u32 = env.read("child.pid").trim().parse().unwrap();
    send(child, rustix::process::Signal::KILL);
    // The next startup of claude finds the dead session crashed at once (its process is gone).
    env.cmd()
        .args(["startup", "--partner", "claude"])
        .ok()
        .stdout_has("Marked crashed")
        .stdout_has("is gone");
}

#[test]
fn sigterm_ends_the_command_releases_the_locks_and_clocks_out() {
    let env = Env::new();
    env.write("a.md", "a");
    let sess = session(
        &env,
        r#""$COORD_BIN" lock a.md && touch ready && exec sleep 60"#,
    )
    .spawn();
    wait_for(&env.path("ready"));
    assert!(env.exists("a.md.lock.claude"));
    let started = Instant::now();
    send(sess.id(), rustix::process::Signal::TERM);
    let out = sess.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "128 + SIGTERM");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "the command ended on the forwarded signal, not on the kill grace"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Lock released: a.md"), "{stderr}");
    assert!(!env.exists("a.md.lock.claude"));
    let rows: serde_json::Value = env.cmd().args(["partners", "--json"]).ok().json();
    assert_eq!(rows["partners"][0]["status"], "offline");
    assert!(env.read(".claude_presence").contains("status: FINISHED\n"));
}

#[test]
fn the_session_beats_while_the_command_lives() {
    let env = Env::new();
    let out = session(&env, "sleep 2.3; cat .coord/partners/*.session")
        .env("COORD_HEARTBEAT_INTERVAL", "100ms")
        .ok();
    let field = |key: &str| {
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap()
            .to_string()
    };
    assert_eq!(field("status"), "online");
    assert_ne!(
        field("last_heartbeat"),
        field("clocked_in"),
        "{}",
        out.stdout
    );

    let before = env.snapshot();
    session(&env, "exit 0")
        .env("COORD_HEARTBEAT_INTERVAL", "soon")
        .code(2)
        .stderr_has("COORD_HEARTBEAT_INTERVAL");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_missing_command_still_clocks_out() {
    let env = Env::new();
    env.cmd()
        .args(["session", "--partner", "claude", "--", "/no/such/program"])
        .code(2)
        .stderr_has("cannot run `/no/such/program`");
    let rows: serde_json::Value = env.cmd().args(["partners", "--json"]).ok().json();
    assert_eq!(rows["partners"][0]["status"], "offline");
    env.cmd().args(["session", "--partner", "claude"]).code(2);
}

/// The child of the pty test: counts the SIGINTs it gets, says it is ready, lives `LIVE`
/// seconds whatever happens, then exits 5.
const PTY_CHILD: &str = r#"
import os, signal, sys, time
n = 0
def on_int(sig, frame):
    global n
    n += 1
    with open(os.environ["COUNT"], "w") as f:
        f.write(str(n))
signal.signal(signal.SIGINT, on_int)
open(os.environ["READY"], "w").close()
end = time.time() + float(os.environ["LIVE"])
while time.time() < end:
    time.sleep(0.05)
sys.exit(5)
"#;

/// The driver: runs argv under a new pseudo-terminal (its controlling terminal, foreground
/// group), types Ctrl-C once CMD is ready, and prints coord's exit code.
const PTY_DRIVER: &str = r#"
import os, pty, sys, time
argv = sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
deadline = time.time() + 30
while not os.path.exists(os.environ["READY"]):
    if time.time() > deadline:
        sys.exit("the session's command never started")
    time.sleep(0.02)
time.sleep(0.3)
os.write(fd, b"\x03")
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stderr.write(out.decode(errors="replace"))
print(os.waitstatus_to_exitcode(status))
"#;

/// What a Ctrl-C typed at a terminal led to: coord's exit code, what the terminal showed, and
/// how many SIGINTs CMD counted.
pub(crate) struct CtrlC {
    pub code: String,
    pub shown: String,
    pub sigints: String,
}

/// Run `coord` (`cmd`, its arguments ending in `--`) with CMD [`PTY_CHILD`] living `live`
/// seconds, in the foreground of a new pseudo-terminal; type Ctrl-C once CMD is ready. `None`
/// (the reason printed) without python3 and its pty module.
pub(crate) fn ctrl_c_at_a_terminal(
    env: &Env,
    cmd: crate::support::Cmd,
    live: u32,
) -> Option<CtrlC> {
    let python_pty = std::process::Command::new("python3")
        .args(["-c", "import pty"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !python_pty {
        eprintln!("skipped: needs python3 with the pty module to make a pseudo-terminal");
        return None;
    }
    let count = env.path("count");
    let cmd = cmd
        .env("COUNT", &count)
        .env("READY", env.path("ready"))
        .env("LIVE", live.to_string())
        .args(["python3", "-c", PTY_CHILD])
        .command();
    let mut driver = std::process::Command::new("python3");
    driver
        .arg("-c")
        .arg(PTY_DRIVER)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(env.root());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => driver.env(k, v),
            None => driver.env_remove(k),
        };
    }
    let out = driver.output().unwrap();
    let shown = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "driver failed: {shown}");
    Some(CtrlC {
        code: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        shown,
        sigints: std::fs::read_to_string(&count).unwrap_or_default(),
    })
}

/// An interactive agent under `coord session` at a real terminal: one Ctrl-C reaches it once
/// (the terminal delivers it; coord does not pass it on again), coord does not kill it (it
/// lives past the 10 s grace a SIGTERM gets), and the session ends when it ends, with its
/// status.
#[test]
fn ctrl_c_at_a_terminal_reaches_the_agent_once_and_does_not_end_the_session() {
    let env = Env::new();
    let cmd = env.cmd().args(["session", "--partner", "claude", "--"]);
    let Some(out) = ctrl_c_at_a_terminal(&env, cmd, 11) else {
        return;
    };
    let stderr = &out.shown;
    assert_eq!(
        out.code, "5",
        "coord must exit with the agent's own status\n{stderr}"
    );
    assert_eq!(out.sigints, "1", "one Ctrl-C, one SIGINT\n{stderr}");
    assert!(stderr.contains("Clocked out: claude"), "{stderr}");
}

/// A SIGINT sent to coord alone (not typed at its terminal) is passed on once, and does not
/// get the command killed either.
#[test]
fn a_sigint_sent_to_coord_is_passed_on_once_without_a_kill() {
    let env = Env::new();
    let child = session(
        &env,
        r#"n=0; trap 'n=$((n+1)); echo $n > "$COORD_DIR/count"' INT; touch "$COORD_DIR/ready"; i=0; while [ $i -lt 120 ]; do sleep 0.1; i=$((i+1)); [ -f "$COORD_DIR/stop" ] && exit 4; done; exit 9"#,
    )
    .spawn();
    wait_for(&env.path("ready"));
    send(child.id(), rustix::process::Signal::INT);
    wait_for(&env.path("count"));
    std::fs::write(env.path("stop"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("count").trim(), "1");
}

/// `kill -9` of `coord session` takes its command with it (issue 25): the session's locks are
/// STALE at once, so an agent that kept running would edit files others now hold.
#[test]
fn a_command_dies_with_its_killed_session() {
    if !cfg!(target_os = "linux") {
        eprintln!("SKIPPED: the kernel kills a child with its parent on Linux only");
        return;
    }
    let env = Env::new();
    let mut child = session(
        &env,
        r#"echo $$ > cmd.pid.tmp && mv cmd.pid.tmp cmd.pid && exec sleep 300"#,
    )
    .spawn();
    wait_for(&env.path("cmd.pid"));
    let cmd: u32 = env.read("cmd.pid").trim().parse().unwrap();
    child.kill().unwrap(); // SIGKILL to coord alone: no chance to clean up
    child.wait().unwrap();
    let start = Instant::now();
    while rustix::process::test_kill_process(rustix::process::Pid::from_raw(cmd as i32).unwrap())
        .is_ok()
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the command {cmd} outlived its killed session"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
