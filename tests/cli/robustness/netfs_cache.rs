//! A shared folder through mounts that cache what the server holds: two sshfs mounts of one
//! folder, served by a private sshd on 127.0.0.1, that keep a file's contents across opens
//! (FUSE `kernel_cache`) or remember names as absent (`negative_timeout`, as NFS clients do).
//! A lock record is judged by what the file server holds, never by what one mount cached.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A private sshd serving `real/`, mounted twice with sshfs with one cache option; torn down
/// on drop.
struct CachedMounts {
    dir: tempfile::TempDir,
    sshd: Option<u32>,
    mounted: Vec<PathBuf>,
}

impl CachedMounts {
    /// Serve `real/` and mount it at `m1/` and `m2/` with the sshfs option `cache`, or say why
    /// not.
    fn new(cache: &str) -> Option<CachedMounts> {
        if !crate::rigs::is_root() {
            eprintln!("skipped: the sshfs mounts need root (a private sshd)");
            return None;
        }
        let have = crate::rigs::have;
        if !have("sshfs") || !have("ssh-keygen") || !Path::new("/usr/sbin/sshd").exists() {
            eprintln!(
                "skipped: sshfs or sshd is not installed (`apt-get install sshfs openssh-server`)"
            );
            return None;
        }
        if !Path::new("/dev/fuse").exists() {
            eprintln!("skipped: no /dev/fuse here");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = |s: &str| dir.path().join(s);
        for d in ["real", "m1", "m2"] {
            std::fs::create_dir_all(p(d)).unwrap();
        }
        for key in ["host_key", "user_key"] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(p(key))
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                eprintln!("skipped: ssh-keygen failed");
                return None;
            }
        }
        std::fs::copy(p("user_key.pub"), p("authorized_keys")).unwrap();
        // A port of its own, from a listener that is closed at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {0}/host_key\n\
             AuthorizedKeysFile {0}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nPidFile {0}/sshd.pid\nSubsystem sftp internal-sftp\n",
            dir.path().display()
        );
        std::fs::write(p("sshd_config"), conf).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut me = CachedMounts {
            dir,
            sshd: None,
            mounted: Vec::new(),
        };
        me.sshd = crate::rigs::start_daemon(
            Command::new("/usr/sbin/sshd")
                .arg("-f")
                .arg(me.dir.path().join("sshd_config")),
            &me.dir.path().join("sshd.pid"),
        );
        if me.sshd.is_none() {
            eprintln!("skipped: sshd did not start");
            return None;
        }
        for m in ["m1", "m2"] {
            let mnt = me.dir.path().join(m);
            let ok = Command::new("timeout")
                .arg("30")
                .arg("sshfs")
                .arg(format!(
                    "root@127.0.0.1:{}",
                    me.dir.path().join("real").display()
                ))
                .arg(&mnt)
                .args(["-p", &port.to_string(), "-o"])
                .arg(format!(
                    "IdentityFile={}",
                    me.dir.path().join("user_key").display()
                ))
                .args([
                    "-o",
                    "StrictHostKeyChecking=no",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                    "-o",
                    "BatchMode=yes",
                    "-o",
                    "LogLevel=ERROR",
                    "-o",
                    cache,
                ])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                eprintln!("skipped: sshfs could not mount the folder");
                return None;
            }
            me.mounted.push(mnt);
        }
        Some(me)
    }

    /// Folder `ws` through mount `n` (1 or 2).
    fn ws(&self, n: u8, ws: &str) -> PathBuf {
        self.dir.path().join(format!("m{n}/{ws}"))
    }

    /// Folder `ws` on the server itself.
    fn real(&self, ws: &str) -> PathBuf {
        self.dir.path().join("real").join(ws)
    }
}

impl Drop for CachedMounts {
    fn drop(&mut self) {
        for m in &self.mounted {
            crate::rigs::unmount_fuse(m);
        }
        if let Some(pid) = self.sshd {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// `coord -q -a AGENT ARGS` in `dir`.
fn coord(dir: &Path, agent: &str, args: &[&str]) -> Command {
    let mut cmd = crate::rigs::coord_in(dir);
    cmd.args(["-q", "-a", agent]).args(args);
    cmd
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn locked_at(lock: &Path) -> String {
    std::fs::read_to_string(lock)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("locked_at: ").map(str::to_string))
        .unwrap_or_default()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Issue #45 item 10: through a mount that keeps a file's contents across opens (sshfs `-o
/// kernel_cache`), a lock re-taken by its agent within the same second, with a record of the
/// same size (a new pid of as many digits), read on the other mount as the previous record,
/// whose process is gone: every time, the other mount took over the LIVE lock (and the running
/// command was told its lock had gone STALE). Records are now read past this machine's cache:
/// the re-taken lock is seen as it is, live, and refused.
#[test]
fn a_lock_retaken_within_the_second_is_not_taken_over_through_a_cached_mount() {
    let Some(mounts) = CachedMounts::new("kernel_cache") else {
        return;
    };
    // A round shows the defect only when both records are stamped within one second (sshfs's
    // times are whole seconds): rounds start just after a second begins, until three did.
    let mut shown = 0;
    for round in 1..=8 {
        if shown == 3 {
            break;
        }
        let ws = format!("ws{round}");
        std::fs::create_dir(mounts.real(&ws)).unwrap();
        std::fs::write(mounts.real(&ws).join("F"), "x\n").unwrap();
        let (a, b) = (mounts.ws(1, &ws), mounts.ws(2, &ws));
        let lock = mounts.real(&ws).join("F.lock.alice");
        let into_second = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_millis();
        std::thread::sleep(Duration::from_millis(u64::from(1020 - into_second)));
        let mut first: Child = coord(&a, "alice", &["run", "F", "--", "sleep", "0.2"])
            .spawn()
            .unwrap();
        wait_for(&lock);
        let first_at = locked_at(&lock);
        // Bob looks (and mount 2 caches alice's first record): held.
        let out = coord(&b, "bob", &["lock", "F", "--no-wait", "--no-backup"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(first.wait().unwrap().success());
        // The second run lasts until bob has looked (at most a minute), however slow bob is.
        let done = mounts.real(&format!("{ws}.done"));
        let until_done = format!(
            "for _ in $(seq 1200); do [ -e '{}' ] && exit 0; sleep 0.05; done",
            done.display()
        );
        let second = coord(&a, "alice", &["run", "F", "--", "sh", "-c", &until_done])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&lock);
        let second_at = locked_at(&lock);
        let out = coord(&b, "bob", &["lock", "F", "--no-wait", "--no-backup"])
            .output()
            .unwrap();
        std::fs::write(&done, "").unwrap();
        let run = second.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "round {round}: bob got the file while alice's second run held it: {}",
            text(&out)
        );
        assert!(
            !text(&out).contains("took over"),
            "round {round}: {}",
            text(&out)
        );
        assert!(
            run.status.success() && !text(&run).contains("taken over"),
            "round {round}: alice's run lost its lock: {}",
            text(&run)
        );
        if first_at == second_at {
            shown += 1;
        }
    }
    if shown == 0 {
        eprintln!(
            "note: no round re-took the lock within one second (a slow machine): the rounds showed nothing"
        );
    }
}

/// Issue #45 item 11: through a mount that remembers a name as absent (`negative_timeout`, as
/// NFS's `lookupcache=all`), a lock made on the other mount is found by the exclusive create
/// that the server answers, but could not be read: a waiter refused was told "held since an
/// unknown time". The name is read again once the failed create made the mount forget it, and
/// the refusal says since when.
#[test]
fn a_lock_behind_a_negative_lookup_cache_is_refused_saying_since_when() {
    let Some(mounts) = CachedMounts::new("negative_timeout=20") else {
        return;
    };
    std::fs::create_dir(mounts.real("ws")).unwrap();
    std::fs::write(mounts.real("ws").join("W.txt"), "x\n").unwrap();
    let (a, b) = (mounts.ws(1, "ws"), mounts.ws(2, "ws"));
    // B looks up the lock's name before it exists: its kernel remembers it as absent.
    assert!(!b.join("W.txt.lock.holder").exists());
    let out = coord(&a, "holder", &["lock", "W.txt"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let since = locked_at(&mounts.real("ws").join("W.txt.lock.holder"));
    let out = coord(&b, "other", &["lock", "W.txt", "--no-wait"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    // As the record gives it (its own offset).
    let hh_mm = chrono::DateTime::parse_from_rfc3339(&since)
        .unwrap()
        .format("%H:%M")
        .to_string();
    assert!(
        text(&out).contains(&format!("held by holder since {hh_mm}")),
        "{}",
        text(&out)
    );
}
