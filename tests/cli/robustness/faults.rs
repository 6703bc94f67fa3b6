//! Faults that must not break exclusion or lose data: coord's own failures inside a hook, a
//! stopped holder of the workspace mutex, other Unix users sharing a group folder, full disks,
//! coord's own files named as targets, folders planted above a workspace (issue 26). Each test
//! failed before its fix; tests that need root, another user or a tool skip with a reason.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::rigs::{Tmpfs, is_root};
use crate::support::{Env, Output, coord_bin};

/// A Claude Code `PreToolUse` payload for an `Edit` of `file` in `env`, from session `sid`.
fn pre_edit(env: &Env, sid: &str, file: &str) -> String {
    serde_json::json!({
        "hook_event_name": "PreToolUse",
        "session_id": sid,
        "cwd": env.root(),
        "tool_name": "Edit",
        "tool_input": {"file_path": env.path(file), "old_string": "a", "new_string": "b"},
    })
    .to_string()
}

/// Whether a Claude Code hook answer denies the tool call.
fn denies(out: &Output) -> bool {
    out.stdout.contains("\"permissionDecision\":\"deny\"")
}

/// `flock FILE sleep 600`: a process that holds the kernel lock on `.coord/mutex` and does not
/// let go, as a coord process stopped (Ctrl-Z) while holding it does.
fn hold_mutex(env: &Env) -> Option<Child> {
    if Command::new("flock").arg("--version").output().is_err() {
        eprintln!("skipped: no `flock` command here");
        return None;
    }
    // Its own process group, so that `end` takes `sleep` with it (killing `flock` alone leaves
    // `sleep` holding the lock, and the test run's output pipe, for ten minutes).
    let child = Command::new("flock")
        .arg(env.path(".coord/mutex"))
        .args(["sleep", "600"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // The mutex is held once a non-blocking flock of it fails.
    let start = Instant::now();
    while Command::new("flock")
        .args(["-n"])
        .arg(env.path(".coord/mutex"))
        .arg("true")
        .status()
        .unwrap()
        .success()
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "flock never held"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(child)
}

fn end(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------------------------------------
// Exclusion: a hook that cannot wait

/// Issue 26 item 1: bob's pre-edit hook cannot take a ticket in the wait queue (a plain file
/// stands at `.coord/queue`), for a file alice holds. coord's own failure may let an edit
/// through only when it knows of no holder: this one is denied, naming alice.
#[test]
fn a_hook_whose_wait_fails_still_denies_a_file_seen_held() {
    let env = Env::new();
    env.write("H", "alice's work\n");
    env.agent("alice").args(["lock", "H"]).ok();
    let queue = env.path(".coord/queue");
    let _ = std::fs::remove_dir_all(&queue);
    std::fs::write(&queue, "in the way\n").unwrap();
    let out = env
        .cmd()
        .args(["hook", "claude", "--wait", "1s"])
        .stdin(pre_edit(&env, "b0b0b0b0", "H"))
        .ok();
    assert!(denies(&out), "allowed: {}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("alice"), "{}", out.stdout);
    // A file nobody holds is still allowed (with a warning): coord's failure stops nothing else.
    env.write("FREE", "x\n");
    let out = env
        .cmd()
        .args(["hook", "claude", "--wait", "1s"])
        .stdin(pre_edit(&env, "b0b0b0b0", "FREE"))
        .ok();
    assert!(!denies(&out), "{}", out.stdout);
}

// ---------------------------------------------------------------------------------------------
// Exclusion: a stopped holder of the workspace mutex

/// Issue 26 item 3: while a process holds `.coord/mutex` and does not let go, a hook for a file
/// another agent holds denies it within its budget (it used to block 30 s, then allow), and
/// `coord lock --no-wait` answers at once: held (exit 3) for a held file.
#[test]
fn a_stopped_mutex_holder_neither_lets_a_hook_allow_nor_makes_no_wait_wait() {
    let env = Env::new();
    env.write("H", "alice's work\n");
    env.agent("alice").args(["lock", "H"]).ok();
    let Some(holder) = hold_mutex(&env) else {
        return;
    };
    let started = Instant::now();
    let out = env
        .cmd()
        .args(["hook", "claude", "--wait", "1s"])
        .stdin(pre_edit(&env, "b0b0b0b0", "H"))
        .ok();
    let hook_took = started.elapsed();
    let started = Instant::now();
    let no_wait = env.agent("bob").args(["lock", "H", "--no-wait"]).run();
    let no_wait_took = started.elapsed();
    end(holder);
    assert!(denies(&out), "allowed: {}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("alice"), "{}", out.stdout);
    assert_eq!(no_wait.code, Some(3), "{}", no_wait.stderr);
    assert!(no_wait.stderr.contains("alice"), "{}", no_wait.stderr);
    eprintln!("hook answered in {hook_took:?}, --no-wait in {no_wait_took:?}");
}

/// Issue 26 item 3: a signal ends a wait for the workspace mutex (SIGTERM used to be ignored
/// until coord gave up on the mutex): exit 143, nothing left held.
#[test]
fn a_signal_ends_a_wait_for_a_stopped_mutex_holder() {
    let env = Env::new();
    env.write("F", "x\n");
    env.agent("bob").args(["presence"]).ok();
    let Some(holder) = hold_mutex(&env) else {
        return;
    };
    let waiter = env
        .agent("bob")
        .args(["lock", "F", "--wait", "5m"])
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-TERM", &waiter.id().to_string()])
        .status();
    let out = waiter.wait_with_output().unwrap();
    end(holder);
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!env.exists("F.lock.bob"));
}

// ---------------------------------------------------------------------------------------------
// Group-shared folders: other Unix users

/// The group that shares the folder in these tests (no such group need exist: ids suffice).
const SHARE_GID: u32 = 46_201;

/// `coord ARGS` run as uid `uid` in group [`SHARE_GID`] with umask `umask`, acting as `agent`
/// in `env`; `None` (reason printed) when this cannot run here.
fn as_member(env: &Env, uid: u32, umask: &str, agent: &str) -> Option<Command> {
    if !is_root() {
        eprintln!("skipped: needs root to run coord as other users");
        return None;
    }
    let probe = Command::new("setpriv")
        .args(["--reuid=46202", "--regid=46201", "--clear-groups", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: `setpriv` cannot run a command as another user here");
        return None;
    }
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={SHARE_GID}"))
        .args(["--clear-groups", "--", "sh", "-c"])
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(coord_bin())
        .current_dir(env.root())
        .env("COORD_DIR", env.root())
        .env("COORD_AGENT", agent)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    Some(cmd)
}

/// Make `env`'s root a group-shared folder: group [`SHARE_GID`], mode 2775.
fn share_with_group(env: &Env) {
    std::os::unix::fs::chown(env.root(), None, Some(SHARE_GID)).unwrap();
    std::fs::set_permissions(env.root(), std::fs::Permissions::from_mode(0o2775)).unwrap();
}

fn out_of(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    Output {
        shown: format!("{cmd:?}"),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Issue 26 item 2: in a setgid 2775 folder, alice (umask 077) waits once, sends a message and
/// clocks in; bob (same group, umask 022) can still wait (exit 3 on timeout, not 1), send a
/// message and clock in. What coord creates takes its group bits from the setgid folder.
#[test]
fn a_private_umask_does_not_wedge_a_group_shared_folder() {
    let env = Env::new();
    let Some(_) = as_member(&env, 46_202, "077", "alice") else {
        return;
    };
    share_with_group(&env);
    env.write("H", "carol's work\n");
    std::os::unix::fs::chown(env.path("H"), None, Some(SHARE_GID)).unwrap();
    std::fs::set_permissions(env.path("H"), std::fs::Permissions::from_mode(0o664)).unwrap();
    // carol (root, umask 022) holds H: `.coord/` is made by her.
    env.agent("carol").args(["lock", "H"]).ok();
    let alice = |args: &[&str]| out_of(as_member(&env, 46_202, "077", "alice").unwrap().args(args));
    let bob = |args: &[&str]| out_of(as_member(&env, 46_203, "022", "bob").unwrap().args(args));
    let waited = alice(&["lock", "H", "--wait", "300ms"]);
    assert_eq!(waited.code, Some(3), "{}", waited.stderr);
    assert_eq!(alice(&["msg", "send", "bob", "hi"]).code, Some(0));
    assert_eq!(alice(&["startup"]).code, Some(0));
    let waited = bob(&["lock", "H", "--wait", "300ms"]);
    assert_eq!(waited.code, Some(3), "bob cannot wait: {}", waited.stderr);
    let sent = bob(&["msg", "send", "alice", "hello"]);
    assert_eq!(sent.code, Some(0), "{}", sent.stderr);
    let listed = bob(&["msg", "list"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    assert!(listed.stdout.contains("hi"), "{}", listed.stdout);
    let started = bob(&["startup"]);
    assert_eq!(started.code, Some(0), "{}", started.stderr);
    // And the folders alice made are the group's.
    for dir in [".coord/queue", ".coord/messages", ".coord/partners"] {
        let mode = std::fs::metadata(env.path(dir))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o070, 0o070, "{dir} is {mode:o}");
    }
}

/// The regular files directly in `dir` whose group is not `gid`.
fn not_of_group(dir: &std::path::Path, gid: u32) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            (m.is_file() && m.gid() != gid)
                .then(|| format!("{} (group {})", e.path().display(), m.gid()))
        })
        .collect()
}

/// `rounds` turns of ann and bo replacing and removing records: presences, locks and backups
/// (in the root and in `team/`), a `coord run`'s lock, a message, a handshake.
fn publish_rounds(env: &Env, rounds: usize) {
    for round in 0..rounds {
        for agent in ["ann", "bo"] {
            env.agent(agent)
                .args(["presence", ".", &format!("round {round}")])
                .ok();
            env.agent(agent).args(["lock", "b.md", "team/a.md"]).ok();
            env.agent(agent).args(["unlock", "b.md"]).ok();
            env.agent(agent)
                .args(["run", "team/c.md", "--", "true"])
                .ok();
            env.agent(agent).args(["unlock"]).ok();
        }
        env.agent("ann").args(["msg", "send", "bo", "hi"]).ok();
        env.agent("bo").args(["handshake"]).ok();
    }
}

/// #45: in a group-shared (setgid) folder, every file coord publishes (presence, handshake,
/// lock, backup, message) gets the folder's group, as a new file does, however many times
/// records are replaced and removed: a file coord made earlier elsewhere and reuses (one kept
/// in `.coord/recycled/`, a spare made in `.coord/`) took its old group with it, and the
/// other members could not read the presence.
#[test]
fn every_file_published_in_a_group_shared_folder_gets_its_group() {
    if !is_root() {
        eprintln!("skipped: needs root to give a folder another group");
        return;
    }
    let env = Env::new();
    env.write("team/a.md", "a\n");
    env.write("b.md", "b\n");
    // Before the folder is shared: records made and replaced under root's own group.
    publish_rounds(&env, 6);
    for entry in std::fs::read_dir(env.root()).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    std::fs::remove_dir_all(env.path("team")).unwrap();
    std::fs::remove_dir_all(env.path(".coord/messages")).unwrap();
    // Now shared: the root, a folder in it, and the messages' folder.
    share_with_group(&env);
    for dir in ["team", ".coord/messages"] {
        std::fs::create_dir(env.path(dir)).unwrap();
        std::os::unix::fs::chown(env.path(dir), None, Some(SHARE_GID)).unwrap();
        std::fs::set_permissions(env.path(dir), std::fs::Permissions::from_mode(0o2775)).unwrap();
    }
    env.write("team/a.md", "a\n");
    env.write("b.md", "b\n");
    publish_rounds(&env, 12);
    // One still held, one waited for: their records stand.
    env.agent("ann").args(["lock", "team/a.md"]).ok();
    env.agent("bo")
        .args(["lock", "team/a.md", "b.md", "--wait", "200ms"])
        .code(3);
    for dir in ["", "team", ".coord/messages"] {
        let wrong = not_of_group(&env.path(dir), SHARE_GID);
        assert!(wrong.is_empty(), "not the folder's group: {wrong:#?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

/// Issue 26 item 11: alice (umask 077, in a folder that is not group-shared) makes the message
/// folder; bob cannot list it. His `msg list` and `msg wait` fail naming the folder (exit 1)
/// instead of reading as an empty inbox.
#[test]
fn an_inbox_that_cannot_be_read_is_an_error_not_empty() {
    let env = Env::new();
    let Some(_) = as_member(&env, 46_202, "077", "alice") else {
        return;
    };
    env.agent("carol").args(["presence"]).ok();
    crate::rigs::open_to_all(env.root());
    let sent = out_of(
        as_member(&env, 46_202, "077", "alice")
            .unwrap()
            .args(["msg", "send", "bob", "hi"]),
    );
    assert_eq!(sent.code, Some(0), "{}", sent.stderr);
    let mode = std::fs::metadata(env.path(".coord/messages"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the folder is alice's alone: {mode:o}");
    let bob = |args: &[&str]| out_of(as_member(&env, 46_203, "022", "bob").unwrap().args(args));
    for args in [&["msg", "list"][..], &["msg", "wait", "--timeout", "300ms"]] {
        let out = bob(args);
        assert_eq!(out.code, Some(1), "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("messages"), "{}", out.stderr);
    }
}

// ---------------------------------------------------------------------------------------------
// A full disk

/// Issue 26 item 12: releasing needs no space. On a full disk `coord unlock` succeeds (it used
/// to release the lock, then exit 1), and the presence no longer says LOCKED.
#[test]
fn unlock_on_a_full_disk_succeeds_and_the_presence_tells_the_truth() {
    let Some(fs) = Tmpfs::mount("size=512k,nr_inodes=400") else {
        return;
    };
    std::fs::write(fs.path("F"), "work\n").unwrap();
    let locked = fs.coord("a").args(["lock", "F"]).output().unwrap();
    assert!(locked.status.success());
    fs.fill();
    let out = fs.coord("a").args(["unlock", "F"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!fs.path("F.lock.a").exists());
    let presence = std::fs::read_to_string(fs.path(".a_presence")).unwrap();
    assert!(presence.contains("lock_status: FREE"), "{presence}");
}

// ---------------------------------------------------------------------------------------------
// coord's own files

/// Issue 26 item 13: coord's own files are refused as files to lock or write (exit 2, nothing
/// written): `coord lock *` no longer locks lock files and backups. Locking a file that does
/// not exist says so.
#[test]
fn coords_own_files_are_not_locked_or_written() {
    let env = Env::new();
    env.write("NOTES.md", "notes\n");
    env.agent("claude").args(["lock", "NOTES.md"]).ok();
    let before = env.snapshot();
    for name in [
        "NOTES.md.lock.claude",
        "NOTES.md.bak",
        "NOTES.md.rejected.bob",
        ".claude_presence",
    ] {
        let out = env.agent("bob").args(["lock", name]).code(2);
        assert!(out.stderr.contains(name), "{}", out.stderr);
        env.agent("bob")
            .args(["write", name])
            .stdin("forged\n")
            .code(2);
    }
    env.agent("bob")
        .args(["lock", "NOTES.md", "NOTES.md.bak"])
        .code(2);
    assert_eq!(env.snapshot(), before, "something was written");
    let out = env.agent("bob").args(["lock", "NOTSE.md"]).ok();
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// `-C DIR`

/// Issue 26 item 6: `coord -C proj run F -- CMD` from another folder runs CMD in `proj`, where
/// the `F` it locked is (it used to run CMD in the caller's folder, editing an unlocked `F`).
#[test]
fn run_with_dash_c_runs_the_command_in_that_folder() {
    let env = Env::new();
    env.write("proj/F", "old\n");
    env.write("elsewhere/F", "not mine\n");
    env.cmd()
        .env_remove("COORD_DIR")
        .cwd(env.path("elsewhere"))
        .args(["-C", "../proj", "-a", "bob", "run", "F", "--"])
        .args(["sh", "-c", "test -e F.lock.bob && echo new > F"])
        .ok();
    assert_eq!(env.read("proj/F"), "new\n");
    assert_eq!(env.read("elsewhere/F"), "not mine\n");
}

// ---------------------------------------------------------------------------------------------
// Workspace discovery

/// The workspace root `coord -C DIR status --json` finds.
fn root_found(env: &Env, dir: &str) -> String {
    let out = env
        .cmd()
        .env_remove("COORD_DIR")
        .args(["-C", dir, "status", "--json"])
        .ok();
    let doc: serde_json::Value = out.json();
    doc["root"].as_str().unwrap().to_string()
}

/// Issue 26 item 8: a `.coord/` planted above by another user (as anyone can make
/// `/tmp/.coord`) is not joined from below; one shared with the user's group (group-writable)
/// is, and so is one the user owns.
#[test]
fn a_coord_folder_planted_above_by_another_user_is_not_joined() {
    let env = Env::new();
    if !is_root() {
        eprintln!("skipped: needs root to give a folder to another user");
        return;
    }
    env.write("x/F", "mine\n");
    let planted = env.path(".coord");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::chown(&planted, Some(46_210), Some(46_210)).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let x = env.path("x").display().to_string();
    assert_eq!(root_found(&env, "x"), x, "joined another user's .coord");
    // Shared with one of our groups (root is in group 0): joined.
    let _ = std::fs::remove_dir_all(env.path("x/.coord"));
    std::os::unix::fs::chown(&planted, Some(46_210), Some(0)).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o775)).unwrap();
    assert_eq!(root_found(&env, "x"), env.root().display().to_string());
}

// ---------------------------------------------------------------------------------------------
// The git guard

/// `git ARGS` in `dir` with a fixed identity and no user configuration.
fn git(dir: &std::path::Path, args: &[&str]) {
    let out = crate::rigs::git(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Issue 26 item 4: the workspace is a subfolder of the repository (`repo/sub/.coord`); from
/// the repository's top the guard finds alice's live lock on `sub/F` (it looked for her
/// presence at the top and judged the lock stale).
#[test]
fn the_guard_sees_a_lock_of_a_workspace_in_a_subfolder() {
    let env = Env::new();
    git(env.root(), &["init", "-q", "-b", "main"]);
    env.write("sub/F", "a\n");
    git(env.root(), &["add", "-A"]);
    git(env.root(), &["commit", "-qm", "start"]);
    std::fs::create_dir(env.path("sub/.coord")).unwrap();
    env.agent("alice")
        .cwd(env.path("sub"))
        .env("COORD_DIR", env.path("sub"))
        .args(["lock", "F", "--ttl", "1s"])
        .ok();
    std::thread::sleep(Duration::from_millis(1100));
    env.write("sub/F", "changed behind alice's back\n");
    git(env.root(), &["add", "sub/F"]);
    env.agent("bob")
        .env_remove("COORD_DIR")
        .args(["guard", "check", "--staged"])
        .code(4)
        .stderr_has("alice");
}

/// Issue 26 item 5: a file whose name begins or ends with a newline is checked under its
/// own name (the guard used to strip the newlines and miss its lock).
#[test]
fn the_guard_checks_names_that_begin_or_end_with_a_newline() {
    let env = Env::new();
    git(env.root(), &["init", "-q", "-b", "main"]);
    env.write("a", "a\n");
    git(env.root(), &["add", "-A"]);
    git(env.root(), &["commit", "-qm", "start"]);
    for name in ["\nlead", "trail\n"] {
        env.write(name, "x\n");
        env.agent("alice").args(["lock", name]).ok();
        git(env.root(), &["add", "-A"]);
        git(env.root(), &["reset", "-q", "--", &format!("{name}.bak")]);
        git(
            env.root(),
            &["reset", "-q", "--", &format!("{name}.lock.alice")],
        );
        git(env.root(), &["reset", "-q", "--", ".alice_presence"]);
        let out = env.agent("bob").args(["guard", "check", "--staged"]).run();
        assert_eq!(out.code, Some(4), "{name:?}: {}{}", out.stdout, out.stderr);
        env.agent("alice").args(["unlock", name]).ok();
        git(env.root(), &["reset", "-q"]);
    }
}
