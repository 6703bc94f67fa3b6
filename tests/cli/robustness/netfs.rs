//! A shared folder across machines: the `link` arbitration (forced with `COORD_ARBITRATION`
//! on a local folder) with real racing processes, a holder of the arbitration killed with
//! SIGKILL or stopped with SIGSTOP; `coord doctor`; the sync-tool warning.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::fixture::{agent_sh, counter_cycle, wait_all};
use crate::support::Env;

/// Start `coord doctor --hold DUR` with the link arbitration and wait until it holds the lease.
fn holder(env: &Env, hold: &str) -> Child {
    let child = env
        .cmd()
        .env("COORD_ARBITRATION", "link")
        .args(["doctor", "--hold", hold])
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lease = env.path(".coord/mutex.lease");
    let start = Instant::now();
    while !lease.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the holder never took the lease"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} failed");
}

#[test]
fn the_link_arbitration_keeps_eight_racing_processes_apart() {
    let env = Env::new();
    env.write("counter.txt", "0\n");
    // `set -C` makes `>` use O_EXCL: two holders inside the critical section would collide.
    let cycle = counter_cycle(40, "--wait 2m --no-backup");
    let children: Vec<Child> = (1..=8)
        .map(|i| {
            agent_sh(
                &env,
                &format!("agent-{i}"),
                &cycle,
                &[("COORD_ARBITRATION", "link")],
            )
        })
        .collect();
    wait_all(children);
    assert!(
        !env.exists("collisions"),
        "two holders were inside the critical section at once: {}",
        env.read("collisions")
    );
    assert_eq!(env.read("counter.txt").trim(), "320");
    assert!(!env.exists(".coord/mutex.lease"), "the lease is released");
}

#[test]
fn a_holder_of_the_lease_killed_with_sigkill_does_not_wedge_anyone() {
    let env = Env::new();
    let mut h = holder(&env, "60s");
    signal(&h, "-KILL");
    h.wait().unwrap();
    assert!(
        env.exists(".coord/mutex.lease"),
        "the dead holder's lease is left"
    );
    let start = Instant::now();
    env.agent("bob")
        .env("COORD_ARBITRATION", "link")
        .args(["lock", "a.txt", "--wait", "20s"])
        .ok()
        .stdout_has("Lock acquired");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "a lease of a dead process of this host is broken at once, not after the lease"
    );
    assert!(!env.exists(".coord/mutex.lease"));
}

#[test]
fn a_stopped_holder_of_the_lease_is_overtaken_and_fenced() {
    let env = Env::new();
    let h = holder(&env, "2s");
    signal(&h, "-STOP");
    let start = Instant::now();
    env.agent("bob")
        .env("COORD_ARBITRATION", "link")
        .args(["lock", "a.txt", "--wait", "30s"])
        .ok()
        .stdout_has("Lock acquired");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(4),
        "the lease (5 s) is honoured while it runs: {waited:?}"
    );
    // Now the next holder of the lease stands in place: the stopped one resumes while bob's
    // successor holds it, and must neither remove it nor think it still holds.
    let mut next = holder(&env, "3s");
    signal(&h, "-CONT");
    let out = h.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the resumed holder learns it was overtaken: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("fenced"));
    assert!(
        env.exists(".coord/mutex.lease"),
        "the resumed holder left its successor's lease alone"
    );
    assert!(next.wait().unwrap().success(), "the successor kept it");
    assert!(env.exists("a.txt.lock.bob"));
}

#[test]
fn doctor_reports_the_filesystem_and_the_arbitration() {
    let env = Env::new();
    let out = env.cmd().args(["doctor", "--json"]).ok();
    let v: serde_json::Value = out.json();
    for key in [
        "filesystem",
        "class",
        "kernel_locks_cross_machines",
        "events_cross_machines",
        "arbitration",
        "recheck_ms",
        "clock_skew_ms",
    ] {
        assert!(v.get(key).is_some(), "no `{key}` in {v}");
    }
    let skew = v["clock_skew_ms"].as_i64().expect("the skew was measured");
    assert!(
        skew.abs() < 2000,
        "a local folder shares this clock: {skew}"
    );
    let forced: serde_json::Value = env
        .cmd()
        .env("COORD_ARBITRATION", "link")
        .args(["doctor", "--json"])
        .ok()
        .json();
    assert_eq!(forced["arbitration"], "link");
    assert_eq!(forced["arbitration_source"], "COORD_ARBITRATION");
    env.cmd()
        .args(["doctor"])
        .ok()
        .stdout_has("arbitration:")
        .stdout_has("clock skew:")
        .stdout_has("lock lookups:  by the folder's listing, which is always current here")
        .stdout_lacks("exact lookups");
    env.agent("bob")
        .env("COORD_ARBITRATION", "sometimes")
        .args(["lock", "a.txt"])
        .code(2)
        .stderr_has("COORD_ARBITRATION");
    assert!(!env.exists("a.txt.lock.bob"));
}

#[test]
fn a_folder_under_a_sync_tool_is_warned_about_once() {
    let env = Env::new();
    env.write(".stfolder/.keep", "");
    env.agent("bob").args(["presence"]).ok();
    env.agent("bob")
        .args(["status"])
        .ok()
        .stderr_has("Syncthing");
    let again = env.agent("bob").args(["status"]).ok();
    assert!(
        !again.stderr.contains("Syncthing"),
        "said once: {}",
        again.stderr
    );
    env.cmd().args(["doctor"]).ok().stdout_has("Syncthing");
}

/// An rclone mount of a local folder, unmounted on drop.
struct RcloneMount {
    dir: tempfile::TempDir,
}

impl RcloneMount {
    /// Mount `remote/` at `mnt/` with `rclone mount`, or say why not.
    fn new() -> Option<RcloneMount> {
        if !crate::rigs::is_root() {
            eprintln!("skipped: FUSE mounts need root");
            return None;
        }
        if Command::new("rclone").arg("version").output().is_err() {
            eprintln!("skipped: rclone is not installed (`apt-get install rclone`)");
            return None;
        }
        if !std::path::Path::new("/dev/fuse").exists() {
            eprintln!("skipped: no /dev/fuse here");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("remote")).unwrap();
        std::fs::create_dir(dir.path().join("mnt")).unwrap();
        let ok = Command::new("timeout")
            .arg("30")
            .arg("rclone")
            .arg("mount")
            .arg(dir.path().join("remote"))
            .arg(dir.path().join("mnt"))
            .args(["--config", "/dev/null", "--daemon"])
            .status()
            .is_ok_and(|s| s.success());
        let mounted = || {
            std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|t| {
                t.lines().any(|l| {
                    l.contains(" - fuse.rclone ")
                        && l.contains(&*dir.path().join("mnt").to_string_lossy())
                })
            })
        };
        let start = Instant::now();
        while ok && !mounted() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !ok || !mounted() {
            eprintln!("skipped: `rclone mount` did not mount here");
            return None;
        }
        Some(RcloneMount { dir })
    }

    fn mnt(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for RcloneMount {
    fn drop(&mut self) {
        crate::rigs::unmount_fuse(&self.mnt());
    }
}

/// Issue 26 item 20: on an rclone mount `link(2)` fails with EIO and an exclusive create is
/// only exclusive within one mount, so no arbitration holds. `doctor` says so (arbitration
/// `none`, a warning), and a command that would take a lock refuses with exit 1 and that
/// reason, naming the filesystem — never a raw I/O error — leaving no lock file behind.
#[test]
fn an_rclone_mount_is_refused_with_the_reason() {
    let Some(mount) = RcloneMount::new() else {
        return;
    };
    let mnt = mount.mnt();
    std::fs::write(mnt.join("F"), "x\n").unwrap();
    let coord = |args: &[&str]| {
        let out = crate::rigs::coord_in(&mnt).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = coord(&["doctor", "--json"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["filesystem"], "fuse.rclone", "{doc}");
    assert_eq!(doc["arbitration"], "none", "{doc}");
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("no arbitration")),
        "{doc}"
    );
    // #45 item 11: `msg send` failed on a raw EIO, leaving `.coord/messages/`; `shutdown` and
    // `unlock` (all) walked the tree first, leaving `.coord/folders`, then refused.
    for args in [
        &["-a", "alice", "lock", "F"][..],
        &["-a", "alice", "lock", "F", "--no-wait"],
        &["-a", "alice", "run", "F", "--", "true"],
        &["-a", "alice", "msg", "send", "bob", "hello"],
        &["-a", "alice", "shutdown"],
        &["-a", "alice", "unlock"],
        &["dialogue", "init", "--topic", "t"],
    ] {
        let (code, stdout, stderr) = coord(args);
        assert_eq!(code, Some(1), "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.starts_with("error: no arbitration holds in")
                && stderr.contains("fuse.rclone")
                && stderr.contains("hint:"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("Input/output"), "{stderr}");
    }
    let names: Vec<String> = std::fs::read_dir(&mnt)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains(".lock.")),
        "a lock file was left: {names:?}"
    );
    for left in [
        ".coord/messages",
        ".coord/folders",
        "agent-dialogue/conversation.md",
    ] {
        assert!(!mnt.join(left).exists(), "{left} was left");
    }
}

/// A private Samba on 127.0.0.1:445 and two smbnetfs mounts of its share; torn down on drop.
/// One at a time: every Samba of these tests needs port 445.
struct SmbMounts {
    dir: tempfile::TempDir,
    smbd: Option<u32>,
    mounted: Vec<std::path::PathBuf>,
    _port: std::fs::File,
}

/// Port 445 is one per machine: the one [`SmbMounts`] that serves it holds a kernel lock on a
/// file of the temporary folder, so two test processes (or the suites of two checkouts) never
/// mount each other's share, as they could with a lock of this process only.
fn port_445() -> std::fs::File {
    let path = std::env::temp_dir().join("coord-tests-smb-445.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.lock().unwrap();
    file
}

impl SmbMounts {
    /// Serve `real/` and mount it twice, or say why not.
    fn new() -> Option<SmbMounts> {
        if !crate::rigs::is_root() {
            eprintln!("skipped: the SMB mounts need root");
            return None;
        }
        if !std::path::Path::new("/usr/sbin/smbd").exists()
            || !crate::rigs::have("smbnetfs")
            || !crate::rigs::have("smbpasswd")
        {
            eprintln!(
                "skipped: samba and smbnetfs are not installed (`apt-get install samba smbnetfs`)"
            );
            return None;
        }
        if !std::path::Path::new("/dev/fuse").exists() {
            eprintln!("skipped: no /dev/fuse here");
            return None;
        }
        let port = port_445();
        if std::net::TcpStream::connect("127.0.0.1:445").is_ok() {
            eprintln!("skipped: port 445 is taken (another SMB server runs here)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = |s: &str| dir.path().join(s);
        for d in [
            "real",
            "m1",
            "m2",
            "home/.smb",
            "priv",
            "lock",
            "state",
            "cache",
            "run",
            "log",
        ] {
            std::fs::create_dir_all(p(d)).unwrap();
        }
        let conf = format!(
            "[global]\nserver role = standalone server\nsmb ports = 445\ninterfaces = 127.0.0.1\n\
             bind interfaces only = yes\nprivate dir = {0}/priv\nlock directory = {0}/lock\n\
             state directory = {0}/state\ncache directory = {0}/cache\npid directory = {0}/run\n\
             log file = {0}/log/smbd.log\nmap to guest = never\nload printers = no\n\
             disable spoolss = yes\nserver min protocol = SMB2\n\
             [share]\npath = {0}/real\nread only = no\nforce user = root\n",
            dir.path().display()
        );
        std::fs::write(p("smb.conf"), conf).unwrap();
        std::fs::write(
            p("home/.smb/smb.conf"),
            "[global]\nclient min protocol = SMB2\nworkgroup = WORKGROUP\n",
        )
        .unwrap();
        std::fs::write(
            p("home/.smb/smbnetfs.conf"),
            "auth \"127.0.0.1\" \"root\" \"pw-test\"\nsmb_query_browsers false\nshow_hidden_hosts true\nhost 127.0.0.1 visible=true\n",
        )
        .unwrap();
        // smbnetfs ignores credentials in a file others can read.
        for f in ["home/.smb/smb.conf", "home/.smb/smbnetfs.conf"] {
            std::fs::set_permissions(p(f), std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
        }
        let mut me = SmbMounts {
            dir,
            smbd: None,
            mounted: Vec::new(),
            _port: port,
        };
        let mut passwd = Command::new("smbpasswd")
            .arg("-c")
            .arg(me.dir.path().join("smb.conf"))
            .args(["-s", "-a", "root"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(passwd.stdin.as_mut().unwrap(), b"pw-test\npw-test\n").unwrap();
        drop(passwd.stdin.take());
        if !passwd.wait().is_ok_and(|s| s.success()) {
            eprintln!("skipped: smbpasswd failed");
            return None;
        }
        me.smbd = crate::rigs::start_daemon(
            Command::new("/usr/sbin/smbd")
                .arg("-s")
                .arg(me.dir.path().join("smb.conf"))
                .arg("-D"),
            &me.dir.path().join("run/smbd.pid"),
        );
        if me.smbd.is_none() {
            eprintln!("skipped: smbd did not start");
            return None;
        }
        for m in ["m1", "m2"] {
            let mnt = me.dir.path().join(m);
            let ok = Command::new("smbnetfs")
                .arg(&mnt)
                .current_dir(me.dir.path())
                .env("HOME", me.dir.path().join("home"))
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                me.mounted.push(mnt.clone());
            }
            let share = mnt.join("127.0.0.1/share");
            let start = Instant::now();
            while ok
                && std::fs::read_dir(&share).is_err()
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            if std::fs::read_dir(&share).is_err() {
                eprintln!("skipped: smbnetfs could not mount the share");
                return None;
            }
        }
        Some(me)
    }

    /// The share through mount `n` (1 or 2).
    fn share(&self, n: u8) -> std::path::PathBuf {
        self.dir.path().join(format!("m{n}/127.0.0.1/share"))
    }

    fn real(&self) -> std::path::PathBuf {
        self.dir.path().join("real")
    }

    /// `coord ARGS` in the share's folder `ws` through mount `n`.
    fn coord(&self, n: u8, args: &[&str]) -> std::process::Output {
        crate::rigs::coord_in(&self.share(n).join("ws"))
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for SmbMounts {
    fn drop(&mut self) {
        for m in &self.mounted {
            crate::rigs::unmount_fuse(m);
        }
        if let Some(pid) = self.smbd {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// Issue 26 item 18: SMB through smbnetfs (two mounts of one share served by Samba). Before,
/// every command failed: discovery climbed into smbnetfs's virtual host level (where every name,
/// `.coord` and `.stfolder` included, reads as a folder), coord renamed its temporary files while
/// they were open (`EBUSY`, a sharing violation) and left them behind, created names by hard
/// link or `RENAME_NOREPLACE` (neither exists there), and gave up when a reader's open made the
/// server refuse a rename or removal for a moment. Now: the workspace is the share's folder, no
/// sync tool is imagined, one mount's lock refuses the other's, and nothing is left behind.
#[test]
fn coord_runs_on_smb_through_smbnetfs_and_excludes_across_mounts() {
    let Some(smb) = SmbMounts::new() else {
        return;
    };
    std::fs::create_dir(smb.real().join("ws")).unwrap();
    std::fs::write(smb.real().join("ws/F"), "0\n").unwrap();
    let coord = |n: u8, args: &[&str]| {
        let out = smb.coord(n, args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = coord(1, &["doctor", "--json"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["filesystem"], "fuse.smbnetfs", "{doc}");
    assert_eq!(doc["arbitration"], "link", "{doc}");
    assert!(
        doc["root"]
            .as_str()
            .unwrap()
            .ends_with("/127.0.0.1/share/ws"),
        "{doc}"
    );
    assert!(doc["sync_tool"].is_null(), "a sync tool imagined: {doc}");
    let (code, _, stderr) = coord(1, &["-a", "alice", "lock", "F"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = coord(2, &["-a", "bob", "lock", "F", "--no-wait"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("held by alice"), "{stderr}");
    let (code, _, stderr) = coord(1, &["-a", "alice", "unlock", "F"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = coord(2, &["-a", "bob", "lock", "F", "--no-wait"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = coord(2, &["-a", "bob", "unlock", "F"]);
    assert_eq!(code, Some(0), "{stderr}");
    let mut left = Vec::new();
    for dir in [smb.real().join("ws"), smb.real().join("ws/.coord")] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") || name.contains(".lock.") {
                left.push(name);
            }
        }
    }
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue #45 item 11: on SMB through smbnetfs (no hard links, no `RENAME_NOREPLACE`), each
/// backup that replaced a different `FILE.bak` left a `.coord-*.tmp` in `.coord/backups/FILE/`
/// and kept no older generation. Now the generations are kept (the name taken by an exclusive
/// create, the copy renamed over it) and nothing is left behind.
#[test]
fn backup_generations_are_kept_on_smb_and_nothing_is_left_behind() {
    let Some(smb) = SmbMounts::new() else {
        return;
    };
    let ws = smb.real().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("F"), "0\n").unwrap();
    let coord = |n: u8, args: &[&str]| {
        let out = smb.coord(n, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {text}");
        text
    };
    for round in 1..=2 {
        for (n, agent) in [(1, "alice"), (2, "bob")] {
            coord(n, &["-a", agent, "lock", "F"]);
            std::fs::write(ws.join("F"), format!("{agent} {round}\n")).unwrap();
            coord(n, &["-a", agent, "unlock", "F"]);
        }
    }
    let list = coord(1, &["restore", "F", "--list"]);
    let kept: Vec<&str> = list
        .lines()
        .filter(|l| l.contains(".coord/backups/F/"))
        .collect();
    assert_eq!(kept.len(), 3, "older generations kept: {list}");
    let mut left = Vec::new();
    let mut dirs = vec![ws.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else if e.file_name().to_string_lossy().ends_with(".tmp") {
                left.push(e.path());
            }
        }
    }
    assert!(left.is_empty(), "left behind: {left:?}");
}
