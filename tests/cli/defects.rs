//! Regression tests for defects found by hostile testing: another Unix user, hand-made seed
//! locks, signals to a supervisor, a full disk, a state folder removed under waiters. Each test
//! failed before its fix. Tests that need root (another user, a tmpfs mount) skip with a
//! printed reason elsewhere.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin, tickets};

pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `coord` run as the unprivileged user `nobody` (uid 65534) through `setpriv`, or `None` (with
/// the reason printed) when that is not possible here.
pub(crate) fn as_nobody(env: &Env, agent: &str) -> Option<Command> {
    if !is_root() {
        eprintln!("skipped: needs root to run coord as another user");
        return None;
    }
    let probe = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: `setpriv` cannot run a command as uid 65534 here");
        return None;
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(coord_bin())
        .current_dir(env.root())
        .env("COORD_DIR", env.root())
        .env("COORD_AGENT", agent)
        .env("NO_COLOR", "1");
    Some(cmd)
}

/// Let everyone in: the workspace, `.coord/` and what is in it.
pub(crate) fn open_to_all(dir: &Path) {
    let meta = std::fs::symlink_metadata(dir).unwrap();
    let mode = if meta.is_dir() { 0o777 } else { 0o666 };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    if meta.is_dir() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            open_to_all(&e.path());
        }
    }
}

fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// Exclusion

/// A presence another user cannot read is judged by its mtime, never as "no presence": a live
/// holder with a short TTL keeps its lock; once the file is old, the lock can be taken over.
#[test]
fn an_unreadable_presence_is_judged_by_its_mtime_not_as_absent() {
    let env = Env::new();
    env.write("F", "a's work\n");
    env.agent("a").args(["lock", "F", "--ttl", "1s"]).ok();
    let Some(_) = as_nobody(&env, "b") else {
        return;
    };
    open_to_all(env.root());
    // a's presence: fresh, but only a may read it.
    std::fs::set_permissions(
        env.path(".a_presence"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1300)); // older than its TTL of 1s
    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["lock", "F", "--no-wait"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "b took a live lock over: {stderr}"
    );
    assert!(stderr.contains("held by a"), "{stderr}");
    assert!(env.exists("F.lock.a") && !env.exists("F.lock.b"));

    // Ten minutes without a touch: INACTIVE by its mtime, and the stale lock goes.
    env.age(".a_presence", 600);
    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["lock", "F", "--no-wait"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("a is INACTIVE"), "{stderr}");
    assert!(env.exists("F.lock.b") && !env.exists("F.lock.a"));
}

/// A lock in the seed's form, written by hand (no token), dated now.
fn hand_made_lock(env: &Env, file: &str, name: &str) -> String {
    let text = format!(
        "Agent: {name}\nlocked_at: {}\nfile: {file}\n",
        chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
    );
    let lock = format!("{file}.lock.{name}");
    env.write(&lock, &text);
    lock
}

/// `note` and `restore` use an agent's hand-made lock as they find it, and leave it: a lock the
/// command did not take itself is never released by it.
#[test]
fn note_and_restore_keep_a_hand_made_lock() {
    let env = Env::new();
    env.write("F", "first\n");
    env.write("F.bak", "older\n");
    let lock = hand_made_lock(&env, "F", "Claude");
    let before = env.read(&lock);

    env.agent("claude").args(["note", "F", "hi"]).ok();
    assert!(
        env.read("F").ends_with("[claude] hi\n"),
        "{}",
        env.read("F")
    );
    assert_eq!(env.read(&lock), before, "the hand-made lock was touched");
    env.agent("gemini")
        .args(["lock", "F", "--no-wait"])
        .code(3)
        .stderr_has("held by Claude");

    env.agent("claude").args(["restore", "F"]).ok();
    assert_eq!(env.read("F"), "older\n");
    assert_eq!(env.read(&lock), before, "the hand-made lock was touched");
    env.agent("gemini")
        .args(["lock", "F", "--no-wait"])
        .code(3)
        .stderr_has("held by Claude");
    assert!(!env.exists("F.lock.gemini") && !env.exists("F.lock.claude"));
}

/// `write` honours the agent's own hand-made lock, fenced on that lock file: the write commits
/// while it stands, and is refused (content kept) once it was released and taken by another.
#[test]
fn write_honours_a_hand_made_own_lock_and_fences_on_it() {
    let env = Env::new();
    env.write("F", "old\n");
    let lock = hand_made_lock(&env, "F", "Claude");
    env.agent("claude").args(["write", "F"]).stdin("x\n").ok();
    assert_eq!(env.read("F"), "x\n");
    assert!(env.exists(&lock));

    // The lock goes and gemini takes F while claude's content still streams in.
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
    std::io::Write::write_all(&mut stdin, b"late ").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(env.path(&lock)).unwrap();
    env.agent("gemini").args(["lock", "F", "--no-wait"]).ok();
    env.agent("gemini")
        .args(["write", "F"])
        .stdin("gemini's\n")
        .ok();
    std::io::Write::write_all(&mut stdin, b"claude\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("F"), "gemini's\n");
    assert_eq!(env.read("F.rejected.claude"), "late claude\n");
}

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
    eventually("CMD to start", Duration::from_secs(10), || {
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
    eventually("CMD to start", Duration::from_secs(10), || {
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
    eventually("CMD to start", Duration::from_secs(10), || {
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

// ---------------------------------------------------------------------------------------------
// Liveness and state

/// `dialogue turn` says `status.json needs repair` (the seed's phrase, which scripts grep for),
/// then the detail.
#[test]
fn dialogue_turn_says_status_json_needs_repair() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "t"]).ok();
    env.write("agent-dialogue/status.json", "{ not json");
    env.cmd()
        .args(["dialogue", "turn"])
        .ok()
        .stdout_has("status.json needs repair: ");
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

/// SIGINT or SIGTERM to a waiting `coord lock` cleans up as a timeout does (ticket removed,
/// presence no longer WAITING), then exits with the signal's status.
#[test]
fn a_signal_to_a_waiting_lock_leaves_the_queue_and_resets_waiting() {
    let env = Env::new();
    env.agent("a").args(["lock", "F"]).ok();
    for (sig, code) in [
        (rustix::process::Signal::INT, 130),
        (rustix::process::Signal::TERM, 143),
    ] {
        let child = env.agent("b").args(["lock", "F", "--wait", "60s"]).spawn();
        eventually("b to wait", Duration::from_secs(10), || {
            env.exists(".b_presence")
                && env.read(".b_presence").contains("WAITING")
                && !tickets(&env).is_empty()
        });
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(tickets(&env), Vec::<String>::new());
        assert!(env.read(".b_presence").contains("lock_status: FREE"));
    }
    // Nobody stands in line: a newcomer gets the lock at once when a releases it.
    env.agent("a").args(["unlock", "F"]).ok();
    env.agent("c").args(["lock", "F", "--no-wait"]).ok();
}

/// A lock file whose name is not UTF-8 is shown by `status` (lossy name, flagged) and counted
/// by `check --strict`.
#[test]
fn a_lock_with_a_non_utf8_name_is_shown_and_counted() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt.lock.gemini");
    let path = env.root().join(name);
    std::fs::write(
        &path,
        "Agent: Gemini\nlocked_at: 2000-01-01T00:00:00+00:00\nfile: caf.txt\n",
    )
    .unwrap();
    let out = env.cmd().args(["status"]).ok();
    assert!(out.stdout.contains("caf\u{FFFD}.txt"), "{}", out.stdout);
    assert!(out.stdout.contains("not valid UTF-8"), "{}", out.stdout);
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("caf\u{FFFD}.txt");
}

// ---------------------------------------------------------------------------------------------
// Data: a full disk (a small tmpfs)

/// A tmpfs mounted for one test, unmounted (by its path) when dropped.
pub(crate) struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mount a tmpfs with `options` (`size=…`, `nr_inodes=…`), or `None` with the reason printed.
    pub(crate) fn mount(options: &str) -> Option<Tmpfs> {
        if !is_root() {
            eprintln!("skipped: needs root to mount a small tmpfs");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("coord-tmpfs-")
            .tempdir()
            .unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        Some(Tmpfs { dir })
    }

    pub(crate) fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn coord(&self, agent: &str) -> Command {
        let mut cmd = Command::new(coord_bin());
        cmd.current_dir(self.dir.path())
            .env("COORD_DIR", self.dir.path())
            .env("COORD_AGENT", agent)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// Fill the disk: a file grown until the disk refuses more.
    pub(crate) fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.path("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }

    /// Use up every inode but `spare`: empty files until the disk refuses more, then remove
    /// `spare` of them.
    pub(crate) fn fill_inodes(&self, spare: usize) {
        let mut n = 0;
        while std::fs::File::create(self.path(&format!("inode-{n}"))).is_ok() {
            n += 1;
        }
        for i in 0..spare {
            std::fs::remove_file(self.path(&format!("inode-{}", n - 1 - i))).unwrap();
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn run_with_stdin(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    out
}

/// On a full disk a `collab write` is whole or absent (no torn line), and its error names the
/// collaboration file and says the disk is full.
#[test]
fn a_collab_write_on_a_full_disk_leaves_no_torn_line() {
    let Some(fs) = Tmpfs::mount("size=512k") else {
        return;
    };
    let ok = run_with_stdin(fs.coord("a").args(["collab", "write", "-"]), b"first");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let before = std::fs::read(fs.path("collaboration_file.txt")).unwrap();
    fs.fill();
    std::fs::OpenOptions::new()
        .write(true)
        .open(fs.path("filler"))
        .unwrap()
        .set_len(std::fs::metadata(fs.path("filler")).unwrap().len() - 8192)
        .unwrap();
    let big = vec![b'x'; 200 * 1024];
    let out = run_with_stdin(fs.coord("a").args(["collab", "write", "-"]), &big);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        std::fs::read(fs.path("collaboration_file.txt")).unwrap(),
        before,
        "a torn line stayed"
    );
    assert!(stderr.contains("collaboration_file.txt"), "{stderr}");
    assert!(stderr.contains("disk is full"), "{stderr}");
}

/// On a full disk `coord write` names FILE (not its temporary copy) and says the disk is full;
/// FILE is unchanged.
#[test]
fn a_write_on_a_full_disk_names_the_file() {
    let Some(fs) = Tmpfs::mount("size=512k") else {
        return;
    };
    std::fs::write(fs.path("F"), "old\n").unwrap();
    let out = fs
        .coord("a")
        .args(["lock", "F", "--no-backup"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs.fill();
    let out = run_with_stdin(fs.coord("a").args(["write", "F"]), &vec![b'y'; 300 * 1024]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/F`"), "{stderr}");
    assert!(!stderr.contains(".coord-"), "{stderr}");
    assert!(stderr.contains("disk is full"), "{stderr}");
    assert_eq!(std::fs::read_to_string(fs.path("F")).unwrap(), "old\n");
}

/// A `dialogue say` that cannot finish after its message went in (no inode left for the new
/// `current-turn.txt`) leaves the dialogue as a crash at that point would: the next `say`
/// completes it and goes on, instead of declaring the conversation corrupted.
#[test]
fn a_say_on_a_full_disk_leaves_a_dialogue_the_next_say_completes() {
    let Some(fs) = Tmpfs::mount("size=4m,nr_inodes=64") else {
        return;
    };
    let out = fs
        .coord("x")
        .args(["dialogue", "init", "--topic", "t"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One inode left: `lock.txt` takes it, the message is appended, the turn cannot be written.
    fs.fill_inodes(1);
    let out = fs
        .coord("x")
        .args(["dialogue", "say", "--as", "AGENT-1", "hello"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..8 {
        let _ = std::fs::remove_file(fs.path(&format!("inode-{i}")));
    }
    let out = fs
        .coord("x")
        .args(["dialogue", "say", "--as", "AGENT-2", "hi back"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let conv = std::fs::read_to_string(fs.path("agent-dialogue/conversation.md")).unwrap();
    assert!(!conv.contains("[ERROR]"), "{conv}");
    assert!(conv.contains("hello") && conv.contains("hi back"), "{conv}");
    assert_eq!(conv.matches("## Message #").count(), 2, "{conv}");
}

/// `collab read` takes an unterminated last line that does not parse for an append still
/// being written, not for a corrupt line; a complete bad line is still reported.
#[test]
fn collab_read_leaves_an_unfinished_last_line_alone() {
    let env = Env::new();
    env.write(
        "collaboration_file.txt",
        "{\"llm_id\": \"a\", \"response\": \"one\"}\n{\"llm_id\": \"a\", \"resp",
    );
    let out = env.cmd().args(["collab", "read"]).ok();
    assert!(out.stdout.contains("one"), "{}", out.stdout);
    assert!(
        !out.stderr.contains("collaboration_file.txt:2:"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("not valid JSON"), "{}", out.stderr);
    // Once the line is finished it is read; a finished bad line is reported.
    env.write(
        "collaboration_file.txt",
        "{\"llm_id\": \"a\", \"response\": \"one\"}\n{\"llm_id\": \"a\", \"resp\n{\"llm_id\": \"b\", \"response\": \"two\"}",
    );
    let out = env.cmd().args(["collab", "read"]).ok();
    assert!(out.stdout.contains("two"), "{}", out.stdout);
    assert!(
        out.stderr.contains("collaboration_file.txt:2:"),
        "{}",
        out.stderr
    );
}

/// `rm -rf .coord` while agents wait: every waiter recreates the state folder and goes on; each
/// gets the lock in turn, and no two hold it at once.
#[test]
fn waiters_survive_the_state_folder_being_removed() {
    let env = Env::new();
    env.write("F", "");
    env.agent("a0").args(["lock", "F"]).ok();
    let bin = crate::support::coord_bin();
    let waiters: Vec<_> = (1..=6)
        .map(|i| {
            let script = format!(
                "'{bin}' lock F --wait 60s -q --no-backup && \
                 ls F.lock.* | wc -l >> holders.txt && '{bin}' unlock F -q"
            );
            std::process::Command::new("sh")
                .args(["-c", &script])
                .current_dir(env.root())
                .env("COORD_DIR", env.root())
                .env("COORD_AGENT", format!("w{i}"))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Remove the state folder over and over while they wait, then release.
    std::thread::sleep(Duration::from_millis(300));
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        let _ = std::fs::remove_dir_all(env.path(".coord"));
    }
    env.agent("a0").args(["unlock", "F"]).ok();
    for w in waiters {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a waiter failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let holders = env.read("holders.txt");
    assert_eq!(holders.lines().count(), 6, "{holders}");
    assert!(
        holders.lines().all(|l| l.trim() == "1"),
        "two holders at once: {holders}"
    );
}

/// `startup` on a full disk (no inode left for the presence once the row is written) is all
/// or nothing: it fails and leaves no `online` row on the stamp card.
#[test]
fn startup_on_a_full_disk_leaves_no_online_row() {
    let Some(fs) = Tmpfs::mount("size=4m,nr_inodes=64") else {
        return;
    };
    let first = fs.coord("a").args(["startup"]).output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let shut = fs.coord("a").args(["shutdown"]).output().unwrap();
    assert!(
        shut.status.success(),
        "{}",
        String::from_utf8_lossy(&shut.stderr)
    );
    let rows = || {
        std::fs::read_dir(fs.path(".coord/partners"))
            .unwrap()
            .count()
    };
    let before = rows();
    fs.fill_inodes(1);
    let out = fs.coord("a").args(["startup"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(rows(), before, "a row stayed behind");
    let partners = fs.coord("a").args(["partners", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&partners.stdout);
    assert!(!text.contains("\"online\""), "{text}");
}

/// After a release, the presence lists exactly the locks still held, and names one of them as
/// the current file.
#[test]
fn unlock_brings_the_presence_up_to_date() {
    let env = Env::new();
    env.agent("a")
        .args(["lock", "x.md", "y.md", "--no-backup"])
        .ok();
    env.agent("a").args(["unlock", "x.md"]).ok();
    let p = env.read(".a_presence");
    assert!(p.contains("current_file: y.md"), "{p}");
    assert!(p.contains("locks: [\"y.md\"]"), "{p}");
    assert!(p.contains("lock_status: LOCKED"), "{p}");
    env.agent("a").args(["unlock", "y.md"]).ok();
    let p = env.read(".a_presence");
    assert!(
        p.contains("lock_status: FREE") && !p.contains("locks:"),
        "{p}"
    );
}
