//! What the shared folder is, and how coord arbitrates on it.

pub mod doctor;
pub mod lease;
mod mutex;

use std::convert::Infallible;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::wait::RECHECK;
use crate::worktree::{PerRoot, per_root};

pub use mutex::{
    MUTEX_PATIENCE, MutexGuard, cap_mutex_patience, lock_mutex_within, mutex_patience,
};

/// How a filesystem behaves for coord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsClass {
    /// A disk (or memory) of this machine: one kernel sees every process.
    Local,
    /// NFS.
    Nfs,
    /// SMB / CIFS.
    Smb,
    /// A FUSE filesystem (sshfs, rclone, …).
    Fuse,
    /// Not recognised.
    Other,
}

/// The filesystem a folder lives on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsInfo {
    /// `statfs` magic number.
    pub magic: u64,
    /// The filesystem's name (`ext4`, `nfs`, `cifs`, `fuse.sshfs`, …).
    pub name: String,
    /// How it behaves.
    pub class: FsClass,
}

/// Filesystem magic numbers (`statfs(2)`'s `f_type`) coord names.
const NFS: u64 = 0x6969;
const FUSE: u64 = 0x6573_5546;
const EXT4: u64 = 0xEF53;

/// Every filesystem coord knows by its magic number, with its class and name (`9p`: not local).
const KNOWN: [(u64, FsClass, &str); 15] = [
    (NFS, FsClass::Nfs, "nfs"),
    (0x517B, FsClass::Smb, "smb"),
    (0xFF53_4D42, FsClass::Smb, "cifs"),
    (0xFE53_4D42, FsClass::Smb, "smb2"),
    (FUSE, FsClass::Fuse, "fuse"),
    (EXT4, FsClass::Local, "ext4"),
    (0x5846_5342, FsClass::Local, "xfs"),
    (0x9123_683E, FsClass::Local, "btrfs"),
    (0x0102_1994, FsClass::Local, "tmpfs"),
    (0x794C_7630, FsClass::Local, "overlay"),
    (0x2FC1_2FC1, FsClass::Local, "zfs"),
    (0xF2F5_2010, FsClass::Local, "f2fs"),
    (0x8584_58F6, FsClass::Local, "ramfs"),
    (0xCA45_1A4E, FsClass::Local, "bcachefs"),
    (0x0102_1997, FsClass::Other, "9p"),
];

impl FsInfo {
    /// Classify a `statfs` magic number, named by its mount type (`fuse.sshfs`) when known.
    pub fn from_magic(magic: u64, mount_type: Option<&str>) -> FsInfo {
        let known = KNOWN.iter().find(|(m, _, _)| *m == magic);
        let (class, name) = known.map_or((FsClass::Other, "unknown"), |(_, c, n)| (*c, *n));
        // The mount table names the exact type (`fuse.sshfs`, `nfs4`); the magic number decides
        // the class, so a misleading name cannot make a network mount look local.
        let named = |t: &&str| !t.is_empty() && (class != FsClass::Other || name == "unknown");
        let name = mount_type.filter(named).unwrap_or(name).to_string();
        FsInfo { magic, name, class }
    }

    fn detect(dir: &Path) -> Result<FsInfo> {
        let st = rustix::fs::statfs(dir).map_err(io::Error::from);
        let st = st.at("inspect the filesystem of", dir)?;
        // `f_type` is signed on some targets; the magic numbers are 32-bit.
        #[allow(clippy::unnecessary_cast)]
        let magic_number = (st.f_type as i64 as u64) & 0xFFFF_FFFF;
        // Only FUSE needs the mount table (its subtype, `fuse.sshfs`): every other class is told
        // by the magic number alone, and this runs on every command's hot path.
        let mountinfo = || std::fs::read_to_string("/proc/self/mountinfo").ok();
        let table = (magic_number == FUSE).then(mountinfo).flatten();
        let mount_type = table.and_then(|table| mount_type_of(&table, dir));
        Ok(FsInfo::from_magic(magic_number, mount_type.as_deref()))
    }

    /// Whether an arbitration can hold here at all: `false` on a filesystem that offers
    /// neither hard links nor an exclusive create that excludes across mounts. rclone's `mount`
    /// fails `link(2)` with `EIO` and serves an `O_EXCL` create from its own cache, so two
    /// mounts of one remote each see their create succeed.
    fn arbitrable(&self) -> bool {
        !(self.class == FsClass::Fuse && ["fuse.rclone", "rclone"].contains(&self.name.as_str()))
    }

    /// Whether one kernel sees every process that can reach the folder (its locks, its events).
    pub fn served_locally(&self) -> bool {
        self.class == FsClass::Local
    }
}

/// The filesystem type of the deepest mount holding `dir`, from a `/proc/self/mountinfo` table.
fn mount_type_of(table: &str, dir: &Path) -> Option<String> {
    let mounts = table.lines().filter_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let (point, fstype) = (left.split(' ').nth(4)?, right.split(' ').next()?);
        let mount_point = unescape_mount(point);
        let len = mount_point.as_os_str().len();
        dir.starts_with(&mount_point).then_some((len, fstype))
    });
    // The last of the longest: a later mount over the same point hides the earlier one.
    let deepest = mounts.max_by_key(|(len, _)| *len);
    deepest.map(|(_, t)| t.to_string())
}

/// Mount points escape space, tab, newline and backslash as `\ooo` (the backslash last).
fn unescape_mount(s: &str) -> PathBuf {
    let s = s.replace("\\040", " ").replace("\\011", "\t");
    PathBuf::from(s.replace("\\012", "\n").replace("\\134", "\\"))
}

/// How the workspace mutex is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arbitration {
    /// `flock(2)` on `.coord/mutex`: one kernel sees every contender.
    Kernel,
    /// A lease published with `link(2)` at `.coord/mutex.lease` ([`lease`]).
    Link,
    /// None holds on this filesystem: every command that takes a lock refuses.
    None,
}

impl Arbitration {
    /// The word used in output and in `COORD_ARBITRATION`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arbitration::Kernel => "kernel",
            Arbitration::Link => "link",
            Arbitration::None => "none",
        }
    }
}

/// The environment variable that overrides the arbitration.
pub const ENV_ARBITRATION: &str = "COORD_ARBITRATION";

/// How often a waiter re-checks where other machines' events never arrive (else [`RECHECK`]).
const RECHECK_REMOTE: Duration = Duration::from_millis(50);

/// Everything coord decides from the filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// What the folder is on.
    pub fs: FsInfo,
    /// The arbitration in use.
    pub arbitration: Arbitration,
    /// Whether the arbitration was chosen by `COORD_ARBITRATION` rather than detected.
    pub overridden: bool,
    /// How often a waiter looks again without an event.
    pub recheck: Duration,
    /// Whether lock files are also looked up by exact name (a listing may lag other machines).
    pub exact_lookups: bool,
}

impl Policy {
    /// The policy for a filesystem, with the value of `COORD_ARBITRATION` when set.
    pub fn choose(fs: FsInfo, override_value: Option<&str>) -> Result<Policy> {
        let local = fs.served_locally();
        let detected = match (fs.arbitrable(), local) {
            (false, _) => Arbitration::None,
            (true, true) => Arbitration::Kernel,
            (true, false) => Arbitration::Link,
        };
        let value = override_value.map(|v| v.trim().to_ascii_lowercase());
        let forced = match value.as_deref() {
            None | Some("") => None,
            Some("kernel" | "flock") => Some(Arbitration::Kernel),
            Some("link" | "lease") => Some(Arbitration::Link),
            Some(_) => {
                return Err(Error::bad_input(format!(
                    "{ENV_ARBITRATION}={} is not an arbitration: use `kernel` or `link`",
                    override_value.unwrap_or_default()
                )));
            }
        };
        Ok(Policy {
            arbitration: forced.unwrap_or(detected),
            overridden: forced.is_some(),
            recheck: if local { RECHECK } else { RECHECK_REMOTE },
            exact_lookups: !local,
            fs,
        })
    }
}

/// The policy for the workspace at `root` (honouring `COORD_ARBITRATION`), found once a process.
pub fn policy(root: &Path) -> Result<Policy> {
    static CACHE: PerRoot<Policy> = OnceLock::new();
    per_root(&CACHE, root, || {
        let value = std::env::var(ENV_ARBITRATION).ok();
        let p = Policy::choose(FsInfo::detect(root)?, value.as_deref())?;
        if !p.fs.served_locally() {
            crate::fsutil::mark_network_fs();
            crate::fsutil::read_past_cache();
        }
        Ok(p)
    })
}

/// How often a waiter on `dir` re-checks without an event (sooner on a network filesystem).
pub fn recheck_for(dir: &Path) -> Duration {
    policy(dir).map_or(RECHECK, |p| p.recheck)
}

/// How far this machine's clock runs ahead of the folder's, when by more than two seconds. On a
/// disk of this machine its own clock stamps the files: nothing to measure.
pub fn clock_ahead(root: &Path) -> Option<Duration> {
    if std::env::var_os(crate::clock::NOW_ENV).is_some()
        || policy(root).is_ok_and(|p| p.fs.served_locally())
    {
        return None;
    }
    static CACHE: PerRoot<Option<f64>> = OnceLock::new();
    let Ok(skew) = per_root(&CACHE, root, || {
        Ok::<_, Infallible>(measure_skew(&crate::layout::state_dir(root)).ok())
    });
    skew.filter(|s| *s > 2.0).map(Duration::from_secs_f64)
}

/// Seconds this clock is ahead of the clock that stamps a file made in `dir` (negative: behind).
pub fn measure_skew(dir: &Path) -> io::Result<f64> {
    use std::io::Write;
    use std::time::SystemTime;
    let mut tmp = fsutil::temp_in(dir)?;
    let before = SystemTime::now();
    tmp.write_all(b"clock probe\n")?;
    tmp.as_file().sync_all()?;
    let after = SystemTime::now();
    let stamped = tmp.as_file().metadata()?.modified()?;
    let mid = before + after.duration_since(before).unwrap_or_default() / 2;
    Ok(match mid.duration_since(stamped) {
        Ok(ahead) => ahead.as_secs_f64(),
        Err(behind) => -behind.duration().as_secs_f64(),
    })
}

/// The workspace mutex, held: a kernel lock or a lease. Dropping it releases it.
#[derive(Debug)]
pub enum Guard {
    /// `flock` on the mutex file.
    Kernel(MutexGuard),
    /// A `link` lease.
    Lease(lease::LeaseGuard),
}

impl Guard {
    /// Take the workspace mutex at `mutex_path` as `arbitration` says, waiting at most `patience`.
    pub fn take(mutex_path: &Path, arbitration: Arbitration, patience: Duration) -> Result<Guard> {
        match arbitration {
            Arbitration::Kernel => lock_mutex_within(mutex_path, patience).map(Guard::Kernel),
            Arbitration::Link => {
                lease::acquire_with(&crate::layout::lease_of(mutex_path), lease::LEASE, patience)
                    .map(Guard::Lease)
            }
            Arbitration::None => {
                let state = mutex_path.parent().unwrap_or(mutex_path);
                let root = state.parent().unwrap_or(mutex_path).to_path_buf();
                let filesystem = "this filesystem".to_string();
                Err(Error::NoArbitration { root, filesystem })
            }
        }
    }

    /// Fencing: whether this process still holds the mutex (a lease can be lost by stalling
    /// past it; anything decided under a lost lease must be undone before it counts).
    pub fn still_held(&self) -> bool {
        match self {
            Guard::Kernel(_) => true,
            Guard::Lease(l) => l.still_held(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_classify_filesystems() {
        let cases = [
            (0x6969, FsClass::Nfs),
            (0x517B, FsClass::Smb),
            (0xFF53_4D42, FsClass::Smb),
            (0xFE53_4D42, FsClass::Smb),
            (0x6573_5546, FsClass::Fuse),
            (0xEF53, FsClass::Local),
            (0x5846_5342, FsClass::Local),
            (0x9123_683E, FsClass::Local),
            (0x0102_1994, FsClass::Local),
            (0x1234_5678, FsClass::Other),
        ];
        for (m, class) in cases {
            assert_eq!(FsInfo::from_magic(m, None).class, class, "magic {m:#x}");
        }
        let sshfs = FsInfo::from_magic(FUSE, Some("fuse.sshfs"));
        assert_eq!(sshfs.name, "fuse.sshfs");
        assert_eq!(sshfs.class, FsClass::Fuse);
        // A local-sounding name does not make a FUSE mount local.
        assert_eq!(FsInfo::from_magic(FUSE, Some("ext4")).class, FsClass::Fuse);
    }

    #[test]
    fn the_arbitration_follows_the_filesystem_unless_overridden() {
        let choose = |m, mount, forced| Policy::choose(FsInfo::from_magic(m, mount), forced);
        let local = choose(EXT4, None, None).unwrap();
        assert_eq!(local.recheck, RECHECK);
        assert!(!local.exact_lookups && !local.overridden);
        for m in [NFS, 0x517B, 0xFF53_4D42, 0xFE53_4D42, FUSE, 0x1234] {
            let p = choose(m, Some("fuse.sshfs"), None).unwrap();
            assert_eq!(p.arbitration, Arbitration::Link, "magic {m:#x}");
            assert!(!p.fs.served_locally());
            assert!(p.recheck <= Duration::from_millis(100));
            assert!(p.exact_lookups);
        }
        // No arbitration holds on an rclone mount, unless the user forces one.
        let rclone = Some("fuse.rclone");
        for (m, mount, forced, want, overridden) in [
            (EXT4, None, None, Arbitration::Kernel, false),
            (FUSE, rclone, None, Arbitration::None, false),
            (FUSE, rclone, Some("link"), Arbitration::Link, true),
            (EXT4, None, Some("link"), Arbitration::Link, true),
            (NFS, None, Some("kernel"), Arbitration::Kernel, true),
            (NFS, None, Some(""), Arbitration::Link, false),
        ] {
            let p = choose(m, mount, forced).unwrap();
            let got = (p.arbitration, p.overridden);
            assert_eq!(got, (want, overridden), "{m:#x} {forced:?}");
        }
        assert_eq!(Arbitration::None.as_str(), "none");
        assert!(!FsInfo::from_magic(FUSE, rclone).arbitrable());
        // sshfs and a name that only looks like rclone on a local disk are unaffected.
        assert!(FsInfo::from_magic(FUSE, Some("fuse.sshfs")).arbitrable());
        assert!(FsInfo::from_magic(EXT4, Some("rclone")).arbitrable());
        let err = choose(EXT4, None, Some("maybe")).unwrap_err();
        assert!(err.to_string().contains("COORD_ARBITRATION"));
    }

    #[test]
    fn the_mount_table_names_the_filesystem_of_the_deepest_mount() {
        let table = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:50 / /mnt/shared\\040dir rw,nosuid - fuse.sshfs me@host:/srv rw,user_id=0
41 22 0:51 / /mnt/nfs rw - nfs4 srv:/export rw,vers=4.2
";
        // The last: a mount point matches whole components only.
        for (dir, want) in [
            ("/mnt/shared dir/work", "fuse.sshfs"),
            ("/mnt/nfs", "nfs4"),
            ("/home/me", "ext4"),
            ("/mnt/nfsx", "ext4"),
        ] {
            let found = mount_type_of(table, Path::new(dir));
            assert_eq!(found.as_deref(), Some(want), "{dir}");
        }
    }

    #[test]
    fn this_machines_temp_folder_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FsInfo::detect(dir.path()).unwrap();
        assert!(!fs.name.is_empty());
        assert_ne!(fs.magic, 0);
    }
}
