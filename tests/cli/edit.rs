//! Safe editing: `coord write`, `coord run`, `coord restore`, with real processes.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use crate::support::Env;

fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32).unwrap();
    kill_process(pid, sig).unwrap();
}

/// Wait (generously) until `cond` holds; panics with `what` otherwise.
#[track_caller]
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// coord's temporary files anywhere in the workspace (outside `.coord/`).
fn temps(env: &Env) -> Vec<String> {
    env.snapshot()
        .into_keys()
        .filter(|k| !k.starts_with(".coord/"))
        .filter(|k| {
            let name = k.rsplit('/').next().unwrap_or(k);
            name.starts_with(".coord-") && name.ends_with(".tmp")
        })
        .collect()
}

fn locks(env: &Env) -> Vec<String> {
    env.snapshot()
        .into_keys()
        .filter(|k| k.contains(".lock."))
        .collect()
}

/// A small deterministic random sequence (xorshift), seeded from the clock.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        Rng(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn write_without_the_lock_is_refused_and_the_content_kept() {
    let env = Env::new();
    env.write("f.txt", "original\n");
    env.agent("claude")
        .args(["write", "f.txt"])
        .stdin("my edit\n")
        .code(3)
        .stderr_has("not locked by claude")
        .stderr_has("f.txt.rejected.claude")
        .stderr_has("hint: take the lock first");
    assert_eq!(env.read("f.txt"), "original\n");
    assert_eq!(env.read("f.txt.rejected.claude"), "my edit\n");
    assert!(!env.exists("f.txt.bak"));

    env.agent("gemini").args(["lock", "f.txt"]).ok();
    env.agent("claude")
        .args(["write", "f.txt"])
        .stdin("second try\n")
        .code(3)
        .stderr_has("locked by gemini, not by claude");
    assert_eq!(env.read("f.txt"), "original\n");
    assert_eq!(env.read("f.txt.rejected.claude"), "second try\n");
    assert!(temps(&env).is_empty(), "{:?}", temps(&env));
}

#[test]
fn write_under_the_lock_backs_up_and_keeps_the_mode() {
    let env = Env::new();
    env.write("script.sh", "echo old\n");
    std::fs::set_permissions(
        env.path("script.sh"),
        std::fs::Permissions::from_mode(0o751),
    )
    .unwrap();
    env.write("src.txt", "echo from src\n");
    env.agent("claude").args(["lock", "script.sh"]).ok();
    env.agent("claude")
        .args(["write", "script.sh"])
        .stdin("echo new\n")
        .ok()
        .stdout_has("Written: script.sh (9 bytes, backup script.sh.bak)");
    assert_eq!(env.read("script.sh"), "echo new\n");
    assert_eq!(env.read("script.sh.bak"), "echo old\n");
    let mode = std::fs::metadata(env.path("script.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o751);

    env.agent("claude")
        .args(["write", "script.sh", "--from", "src.txt"])
        .ok();
    assert_eq!(env.read("script.sh"), "echo from src\n");
    assert_eq!(env.read("script.sh.bak"), "echo new\n");

    // A file that does not exist yet is created.
    env.agent("claude").args(["lock", "new.md"]).ok();
    env.agent("claude")
        .args(["--json", "write", "new.md"])
        .stdin("hello")
        .ok()
        .stdout_has("\"bytes\": 5");
    assert_eq!(env.read("new.md"), "hello");
    assert!(!env.exists("new.md.bak"));
    assert!(temps(&env).is_empty(), "{:?}", temps(&env));
}

#[test]
fn backups_never_follow_a_symlink() {
    let env = Env::new();
    env.write("victim.txt", "precious\n");
    env.write("f.txt", "v1\n");
    std::os::unix::fs::symlink(env.path("victim.txt"), env.path("f.txt.bak")).unwrap();
    env.agent("claude")
        .args(["lock", "f.txt", "--no-backup"])
        .ok();
    env.agent("claude")
        .args(["write", "f.txt"])
        .stdin("v2\n")
        .ok();
    assert_eq!(env.read("victim.txt"), "precious\n");
    assert!(
        !std::fs::symlink_metadata(env.path("f.txt.bak"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(env.read("f.txt.bak"), "v1\n");
    env.agent("claude").args(["unlock", "f.txt"]).ok();

    // `run` backs up through the acquire: same rule.
    std::fs::remove_file(env.path("f.txt.bak")).unwrap();
    std::os::unix::fs::symlink(env.path("victim.txt"), env.path("f.txt.bak")).unwrap();
    env.agent("claude")
        .args(["run", "f.txt", "--", "true"])
        .ok();
    assert_eq!(env.read("victim.txt"), "precious\n");
    assert_eq!(env.read("f.txt.bak"), "v2\n");

    // `restore` refuses to read a planted link, and changes nothing.
    std::fs::remove_file(env.path("f.txt.bak")).unwrap();
    std::os::unix::fs::symlink(env.path("victim.txt"), env.path("f.txt.bak")).unwrap();
    env.agent("claude")
        .args(["restore", "f.txt"])
        .code(1)
        .stderr_has("symlink");
    assert_eq!(env.read("f.txt"), "v2\n");
    assert_eq!(env.read("victim.txt"), "precious\n");
    assert!(locks(&env).is_empty());
}

#[test]
fn restore_swaps_and_twice_gives_the_original() {
    let env = Env::new();
    env.write("f.txt", "one\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("claude")
        .args(["write", "f.txt"])
        .stdin("two\n")
        .ok();
    env.agent("claude")
        .args(["restore", "f.txt"])
        .ok()
        .stdout_has("Restored: f.txt from f.txt.bak");
    assert_eq!(env.read("f.txt"), "one\n");
    assert_eq!(env.read("f.txt.bak"), "two\n");
    // Held before: still held after.
    assert!(env.exists("f.txt.lock.claude"));
    env.agent("claude").args(["unlock", "f.txt"]).ok();

    // Not held: taken for the swap and released after.
    env.agent("claude").args(["restore", "f.txt"]).ok();
    assert_eq!(env.read("f.txt"), "two\n");
    assert_eq!(env.read("f.txt.bak"), "one\n");
    assert!(locks(&env).is_empty());

    // Held by someone else: refused, nothing changes.
    env.agent("gemini")
        .args(["lock", "f.txt", "--no-backup"])
        .ok();
    env.agent("claude")
        .args(["restore", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("gemini");
    assert_eq!(env.read("f.txt"), "two\n");
    assert_eq!(env.read("f.txt.bak"), "one\n");
}

#[test]
fn restore_without_a_backup_fails_clearly() {
    let env = Env::new();
    env.write("f.txt", "one\n");
    env.agent("claude")
        .args(["restore", "f.txt"])
        .code(1)
        .stderr_has("error: cannot find the backup `f.txt.bak`")
        .stderr_has("nothing to restore");
    assert_eq!(env.read("f.txt"), "one\n");
    assert!(locks(&env).is_empty());
}

/// `coord write` killed with SIGKILL at random moments: FILE is always whole (old or new).
#[test]
fn killed_writes_leave_the_file_whole() {
    let env = Env::new();
    let line_a = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n";
    let line_b =
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n";
    let a: Arc<Vec<u8>> = Arc::new(line_a.repeat(48 * 1024).into_bytes()); // 3 MiB
    let b: Arc<Vec<u8>> = Arc::new(line_b.repeat(48 * 1024).into_bytes()); // 3.75 MiB
    std::fs::write(env.path("big.txt"), a.as_slice()).unwrap();
    env.agent("claude").args(["lock", "big.txt"]).ok();
    let mut rng = Rng::new();
    let (mut committed, mut killed) = (0, 0);
    for round in 0..60 {
        let current = std::fs::read(env.path("big.txt")).unwrap();
        let next = if current == *a {
            Arc::clone(&b)
        } else {
            Arc::clone(&a)
        };
        let mut child = env
            .agent("claude")
            .args(["write", "big.txt"])
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&next);
        });
        std::thread::sleep(Duration::from_micros(rng.below(80_000)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        feeder.join().unwrap();
        if status.success() {
            committed += 1;
        } else {
            killed += 1;
        }
        let now = std::fs::read(env.path("big.txt")).unwrap();
        assert!(
            now == *a || now == *b,
            "round {round}: big.txt is neither the old nor the new content ({} bytes)",
            now.len()
        );
    }
    eprintln!("kill sweep: {committed} writes committed, {killed} killed");
    // The next command in that folder sweeps what the killed ones left.
    env.agent("claude")
        .args(["write", "big.txt"])
        .stdin("done\n")
        .ok();
    assert_eq!(env.read("big.txt"), "done\n");
    assert!(
        temps(&env).is_empty(),
        "temporary files left: {:?}",
        temps(&env)
    );
}

/// A writer whose stale lock was taken over can never overwrite the new holder.
#[test]
fn a_taken_over_writer_is_fenced_off() {
    let env = Env::new();
    env.write("f.txt", "original\n");
    env.agent("a").args(["lock", "f.txt", "--ttl", "1s"]).ok();
    let mut writer = env
        .agent("a")
        .args(["write", "f.txt"])
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The temporary file appears once A has read its token and is reading stdin.
    wait_until("A is reading its input", || !temps(&env).is_empty());
    signal(&writer, Signal::STOP);

    // A looks gone: its heartbeat is old, and its 1 s TTL passes.
    let presence = env.read(".a_presence");
    let old: String = presence
        .lines()
        .map(|l| {
            if l.starts_with("heartbeat:") {
                "heartbeat: 2020-01-01T00:00:00+00:00".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    env.write(".a_presence", old + "\n");
    std::thread::sleep(Duration::from_millis(2200));

    env.agent("b")
        .args(["lock", "f.txt", "--wait", "0"])
        .ok()
        .stderr_has("took over the stale lock of a");
    env.agent("b")
        .args(["write", "f.txt"])
        .stdin("B's work\n")
        .ok();

    signal(&writer, Signal::CONT);
    {
        let mut stdin = writer.stdin.take().unwrap();
        stdin.write_all(b"A's late work\n").unwrap();
    }
    let out = writer.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {stderr}");
    assert!(stderr.contains("taken over by b"), "stderr: {stderr}");
    assert!(stderr.contains("f.txt.rejected.a"), "stderr: {stderr}");
    assert_eq!(env.read("f.txt"), "B's work\n");
    assert_eq!(env.read("f.txt.rejected.a"), "A's late work\n");
    assert_eq!(env.read("f.txt.bak"), "original\n");
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

#[test]
fn refused_content_is_kept_even_when_a_folder_blocks_the_usual_name() {
    let env = Env::new();
    env.write("a.md", "original\n");
    std::fs::create_dir(env.path("a.md.rejected.claude")).unwrap();
    env.agent("claude")
        .args(["write", "a.md"])
        .stdin("my precious edit\n")
        .code(3)
        .stderr_has("kept in `a.md.rejected.claude.1`");
    assert_eq!(env.read("a.md.rejected.claude.1"), "my precious edit\n");
    assert_eq!(env.read("a.md"), "original\n");
}
