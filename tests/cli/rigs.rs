//! Rigs for tests that need the machine: root, another Unix user, a small tmpfs for a full disk,
//! a command fed on stdin. A test whose rig is missing prints why and returns.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin};

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

pub(crate) fn eventually_within(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// Data: a full disk (a small tmpfs)

/// A tmpfs mounted for one test, unmounted (by its path) when dropped.
pub(crate) struct Tmpfs {
    pub(crate) dir: tempfile::TempDir,
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

/// Lock files in the root, found by name only (nothing is opened: a FIFO may stand there).
pub(crate) fn lock_names(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.contains(".lock."))
        .collect()
}

/// Make a FIFO at `rel`, or `false` (with the reason printed) when `mkfifo` is not there.
pub(crate) fn mkfifo(env: &Env, rel: &str) -> bool {
    let made = std::process::Command::new("mkfifo")
        .arg(env.path(rel))
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: mkfifo is not available");
    }
    made
}

/// Whether `git` runs here; a test that needs it and finds none says so and skips.
pub(crate) fn git_or_skip() -> bool {
    let found = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: git is not installed");
    }
    found
}

/// `git` in `dir` as a developer's shell runs it, apart from this machine: a fixed identity, no
/// global or system configuration, and none of coord's variables (a test adds what it needs).
pub(crate) fn git(dir: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new("git");
    c.current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("COORD_GUARD")
        .env_remove("COORD_AGENT")
        .env_remove("COORD_DIR");
    c
}

/// A lock record in the seed's form, as an agent following the protocol by hand writes it.
pub(crate) fn seed_lock(file: &str, agent: &str, locked_at: &str) -> String {
    format!("Agent: {agent}\nlocked_at: {locked_at}\nfile: {file}\n")
}

/// The local time now without an offset, as an agent writing a lock by hand often does.
pub(crate) fn local_stamp() -> String {
    chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// The local time now, as coord writes `locked_at`.
pub(crate) fn now_stamp() -> String {
    chrono::Local::now()
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// Shared folders: daemons and FUSE mounts of the machine (tests/cli/robustness/netfs*.rs)

/// Whether `tool` is on the PATH.
pub(crate) fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Start a daemon that writes its pid to `pid_file`; its pid once written (within 10 s), `None`
/// when it did not start.
pub(crate) fn start_daemon(cmd: &mut Command, pid_file: &Path) -> Option<u32> {
    let started = cmd.status().is_ok_and(|s| s.success());
    let pid = || {
        std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    };
    // Until the file holds a whole pid: a daemon may create it before it writes it, and a pid
    // read as nothing would leave the daemon running after the test.
    let start = Instant::now();
    while started && pid().is_none() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    pid()
}

/// Unmount the FUSE mount at `mnt` (lazily: a process still in it does not keep it).
pub(crate) fn unmount_fuse(mnt: &Path) {
    for tool in ["fusermount3", "fusermount"] {
        if Command::new(tool)
            .arg("-uz")
            .arg(mnt)
            .status()
            .is_ok_and(|s| s.success())
        {
            return;
        }
    }
    let _ = Command::new("umount").arg("-l").arg(mnt).status();
}

/// `coord` run in `dir` (a shared folder), free of the test environment's coord variables.
pub(crate) fn coord_in(dir: &Path) -> Command {
    let mut cmd = Command::new(coord_bin());
    cmd.current_dir(dir)
        .env_remove("COORD_ARBITRATION")
        .env_remove("COORD_DIR")
        .env_remove("COORD_AGENT")
        .env("NO_COLOR", "1");
    cmd
}
