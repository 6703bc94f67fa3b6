//! Safe editing: `coord write`, `coord run`, `coord restore`, with real processes.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use crate::planted::{Case, Kind, expect, never, read, sweep, write, zero};
use crate::rigs::{lock_names, mkfifo};
use crate::support::Env;

pub(crate) fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32).unwrap();
    kill_process(pid, sig).unwrap();
}

/// Wait (generously) until `cond` holds; panics with `what` otherwise.
#[track_caller]
pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// coord's temporary files anywhere in the workspace (outside `.coord/`).
pub(crate) fn temps(env: &Env) -> Vec<String> {
    env.snapshot()
        .into_keys()
        .filter(|k| !k.starts_with(".coord/"))
        .filter(|k| {
            let name = k.rsplit('/').next().unwrap_or(k);
            name.starts_with(".coord-") && name.ends_with(".tmp")
        })
        .collect()
}

pub(crate) fn locks(env: &Env) -> Vec<String> {
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

/// A folder put in FILE's place while `coord write` reads its content (by someone who ignores
/// the lock): the write is refused as for a folder there from the start (exit 2), and the
/// content it read is kept in `FILE.rejected.<agent>`, never lost with the refusal.
#[test]
fn a_folder_put_in_place_during_a_write_keeps_the_content() {
    let env = Env::new();
    env.write("F", "old\n");
    env.agent("a").args(["lock", "F"]).ok();
    let mut child = env
        .agent("a")
        .args(["write", "F"])
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"precious first half, ").unwrap();
    stdin.flush().unwrap();
    // The content is being spooled: FILE was checked already.
    wait_until("the write spools its content", || !temps(&env).is_empty());
    std::fs::remove_file(env.path("F")).unwrap();
    std::fs::create_dir(env.path("F")).unwrap();
    stdin.write_all(b"and the second\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("F.rejected.a"), "{stderr}");
    assert_eq!(
        env.read("F.rejected.a"),
        "precious first half, and the second\n",
        "the content read was lost"
    );
    assert!(env.path("F").is_dir());
    assert!(temps(&env).is_empty(), "{:?}", temps(&env));
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

/// Text over 1 MiB on stdin is refused with exit 2 and the limit named, never cut silently.
#[test]
fn oversize_stdin_is_refused_not_truncated() {
    let env = Env::new();
    env.write("F", "start\n");
    let big = "x".repeat(1024 * 1024 + 10);
    env.agent("a")
        .args(["collab", "write", "-"])
        .stdin(&big)
        .code(2)
        .stderr_has("1 MiB");
    env.agent("a")
        .args(["note", "F", "-"])
        .stdin(&big)
        .code(2)
        .stderr_has("1 MiB");
    assert_eq!(env.read("F"), "start\n");
    assert!(!env.exists("F.lock.a"));
    assert!(!env.exists("collaboration_file.txt"));
    // Under the limit is taken whole.
    let fits = "y".repeat(512 * 1024);
    env.agent("a")
        .args(["collab", "write", "-"])
        .stdin(&fits)
        .ok();
    assert!(env.read("collaboration_file.txt").contains(&fits));
}

// --- backups and rejected content ---

#[test]
fn hostile_backup_for_restore() {
    fn copyable(k: Kind) -> i32 {
        if k.readable() || k == Kind::Huge {
            0
        } else {
            1
        }
    }
    fn held(k: Kind) -> i32 {
        // The backup is checked first; a good one waits for the lock another holds.
        if k.readable() || k == Kind::Huge {
            3
        } else {
            1
        }
    }
    sweep(&Case {
        target: "a.md.bak",
        setup: |bed| {
            expect(&bed.run(Some("claude"), &["lock", "a.md"]), 0);
        },
        age: 0,
        listed: never,
        steps: &[
            write(Some("claude"), &["restore", "a.md"], copyable),
            read(Some("gemini"), &["restore", "a.md", "--no-wait"], held),
            write(Some("claude"), &["unlock"], zero),
            write(Some("claude"), &["restore", "a.md"], copyable),
        ],
    });
}

#[test]
fn hostile_rejected_file_for_write() {
    // Refused, and the content kept: at `a.md.rejected.claude`, or beside it
    // (`a.md.rejected.claude.1`) when a folder, FIFO or socket stands there.
    fn kept(_: Kind) -> i32 {
        3
    }
    sweep(&Case {
        target: "a.md.rejected.claude",
        setup: |bed| std::fs::write(bed.at("new.txt"), "new\n").unwrap(),
        age: 0,
        listed: never,
        steps: &[
            write(
                Some("claude"),
                &["write", "a.md", "--from", "new.txt"],
                kept,
            ),
            read(None, &["status"], zero),
        ],
    });
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
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
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
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
}
