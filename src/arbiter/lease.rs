//! The `link` arbitration: a workspace mutex that holds where kernel locks do not cross
//! machines (NFS, SMB, FUSE), with a lease and fencing.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::clock;
use crate::error::{IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::host;
use crate::layout;
use crate::record::Record;

/// How long a holder may keep the mutex before others may take it to be stalled.
pub const LEASE: Duration = Duration::from_secs(5);

/// The shortest and longest lease a record may declare (others are read as the nearest bound).
const LEASE_BOUNDS: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(20));

/// The longest pause between two tries. Every try is a round trip to the file server, which
/// also serves the holder: polling harder slows the holder down.
const MAX_PAUSE: Duration = Duration::from_millis(4);

/// How often a contender reads the record of the lease's holder (to see it stalled or gone).
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// A held lease. Dropping it releases it (compare-and-delete).
#[derive(Debug)]
pub struct LeaseGuard {
    path: PathBuf,
    token: String,
    taken: Instant,
    lease: Duration,
}

impl LeaseGuard {
    /// Fencing: whether the lease is still this process's (see the module documentation).
    pub fn still_held(&self) -> bool {
        self.surely_ours()
            || fsutil::read_capped(&self.path, RECORD_CAP).is_ok_and(|bytes| self.names_us(&bytes))
    }

    /// Taken less than half a lease ago: nobody can have broken it yet.
    fn surely_ours(&self) -> bool {
        self.taken.elapsed() < self.lease / 2
    }

    fn names_us(&self, record: &[u8]) -> bool {
        let rec = Record::parse(&String::from_utf8_lossy(record));
        rec.get_nonempty("token") == Some(self.token.as_str())
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if self.surely_ours() {
            let _ = fsutil::raw::remove_file(&self.path);
        } else {
            // Stalled past half the lease: remove it only if it is still ours.
            let _ = remove_if(&self.path, |bytes| self.names_us(bytes));
        }
    }
}

/// Take the lease at `path` for `lease`, waiting at most `patience`.
pub fn acquire_with(path: &Path, lease: Duration, patience: Duration) -> Result<LeaseGuard> {
    let dir = fsutil::parent_of(path);
    let token = format!("{:016x}", host::random_u64());
    let text = render(&token, lease);
    let deadline = Instant::now() + patience.min(super::mutex_patience());
    let mut seen: Option<(Vec<u8>, Instant)> = None;
    let mut pause = Duration::from_micros(50);
    let mut tmp = None;
    let mut last_error: Option<io::Error> = None;
    let mut next_look = Instant::now();
    loop {
        if tmp.is_none() {
            // Closed once written: SMB refuses to remove a file that is open (a sharing
            // violation), which would leave it behind when it is dropped.
            let made = fsutil::temp_in(dir).and_then(|mut t| {
                t.write_all(text.as_bytes())?;
                Ok(t.into_temp_path())
            });
            match made {
                Ok(t) => tmp = Some(t),
                Err(e) if is_stale_handle(&e) && Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    last_error = Some(e);
                    continue;
                }
                Err(e) => return Err(e).at("create a temporary file in", dir),
            }
        }
        let Some(t) = tmp.as_ref() else { continue };
        let taken = Instant::now();
        match publish(t, path, text.as_bytes()) {
            Ok(true) => {
                return Ok(LeaseGuard {
                    path: path.to_path_buf(),
                    token,
                    taken,
                    lease,
                });
            }
            Ok(false) => {}
            // Our temporary file or the folder vanished (removed by hand, or from another
            // machine while a cache here still shows them): make both anew, asking the server
            // itself (a cached `stat` may still say the folder is there).
            Err(e) if e.kind() == io::ErrorKind::NotFound && Instant::now() < deadline => {
                tmp = None;
                let _ = fsutil::raw::create_dir(dir);
                std::thread::sleep(pause);
                continue;
            }
            // A stale file handle (the lease or our temporary file replaced on the server
            // meanwhile, through a cache): make our file anew and try again.
            Err(e) if is_stale_handle(&e) && Instant::now() < deadline => {
                tmp = None;
                std::thread::sleep(pause);
                last_error = Some(e);
                continue;
            }
            // A failure that may only mean "taken" (see `publish`): look, and try again.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => last_error = Some(e),
            Err(e) => return Err(e).at("take the workspace lease", path),
        }
        // The holder's record is read at most every LOOK_EVERY: every read is round trips to
        // the server that the holder, busy on the same server, waits behind.
        let look = Instant::now() >= next_look;
        if look {
            next_look = Instant::now() + LOOK_EVERY;
        }
        match look.then(|| fsutil::read_capped(path, RECORD_CAP)) {
            None => {}
            // Released between our try and our look: try again at once (after a pause when the
            // try itself failed oddly, so a server that keeps failing is not hammered).
            Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => {
                seen = None;
                if last_error.is_some() {
                    std::thread::sleep(pause);
                }
                if Instant::now() < deadline {
                    continue;
                }
            }
            Some(result) => {
                let bytes = result.unwrap_or_default();
                let holder = Record::parse(&String::from_utf8_lossy(&bytes));
                let stalled = match &seen {
                    Some((before, since)) if *before == bytes => {
                        since.elapsed() >= declared_lease(&holder)
                    }
                    _ => {
                        seen = Some((bytes.clone(), Instant::now()));
                        false
                    }
                };
                if stalled || holder_gone(&holder) {
                    match remove_if(path, |now| *now == bytes[..]) {
                        Ok(_) => {
                            seen = None;
                            continue;
                        }
                        // SMB refuses to move a file its holder still has open (a sharing
                        // violation), as when that holder was stopped between creating its
                        // record and closing it: it cannot be broken until the holder runs or
                        // dies.
                        Err(e) if fsutil::raw::is_busy(&e) => {
                            let why = "its record is held open by a process that does not answer (stopped, or on a machine that stopped), so it cannot be broken until that process runs again or ends";
                            last_error = Some(io::Error::new(e.kind(), why));
                        }
                        Err(e) => return Err(e).at("break the lease", path),
                    }
                }
            }
        }
        crate::wait::stopped(|| path.display().to_string())?;
        if Instant::now() >= deadline {
            let why = "other processes kept the workspace lease for the whole wait (is the folder reachable and writable for them?)";
            let e = last_error.unwrap_or_else(|| io::Error::new(io::ErrorKind::TimedOut, why));
            return Err(e).at("take the workspace lease", path);
        }
        // A little jitter keeps contenders from trying in lockstep.
        std::thread::sleep(pause + Duration::from_micros(host::random_u64() % 500));
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Make `path` name the record in `tmp`, only if nothing is there. `Ok(false)`: taken.
fn publish(tmp: &Path, path: &Path, text: &[u8]) -> io::Result<bool> {
    let Err(e) = fsutil::raw::hard_link(tmp, path) else {
        return Ok(true);
    };
    // A retransmitted NFS `LINK` may fail although the link was made: our own file's link count
    // says whether it was (liblockfile's check).
    if fs::symlink_metadata(tmp).is_ok_and(|m| m.nlink() >= 2) {
        return Ok(true);
    }
    match e.kind() {
        io::ErrorKind::AlreadyExists => Ok(false),
        io::ErrorKind::NotFound => Err(e),
        // Some servers report an existing name as a generic failure (sshfs turns SFTP's FAILURE
        // into EPERM): if a record opens there (an open asks the server), taken.
        _ if fsutil::open_regular_nofollow(path).is_ok() => Ok(false),
        // No hard links here (some SMB servers): an exclusive create is atomic there.
        _ if fsutil::raw::no_hard_links(&e) => fsutil::raw::create_exclusive(path, text)
            .map_err(|_| io::Error::new(io::ErrorKind::WouldBlock, e)),
        _ => Err(e),
    }
}

/// Remove the record at `path` if `judge(bytes)` says so for the record actually moved:
/// it is renamed aside first (one process can move a given name), then judged, then dropped or
/// put back.
fn remove_if(path: &Path, judge: impl Fn(&[u8]) -> bool) -> io::Result<bool> {
    let dir = fsutil::parent_of(path);
    let prefix = layout::temp_prefix(host::host_tag(), host::pid());
    let random = host::random_u64() & 0xFFFF_FFFF_FFFF;
    let aside = dir.join(format!("{prefix}{random:012x}{}", layout::TEMP_SUFFIX));
    match fsutil::raw::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    let moved = fsutil::read_capped(&aside, RECORD_CAP).unwrap_or_default();
    let remove = judge(&moved);
    if !remove {
        // Someone else's (a new holder took the name after we judged): put it back. If yet
        // another holder stands there already, theirs stands, and this one is fenced out.
        fsutil::raw::put_back(&aside, path, &moved);
    }
    let _ = fsutil::raw::remove_file(&aside);
    Ok(remove)
}

/// Whether an error is a stale file handle (`ESTALE`): on NFS, a file or folder replaced on the
/// server between lookup and use. Taking the lease again resolves the names anew.
fn is_stale_handle(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::STALE.raw_os_error())
}

fn render(token: &str, lease: Duration) -> String {
    let mut rec = Record::new();
    rec.set("token", token);
    rec.set("host", host::hostname());
    rec.set("pid", host::pid().to_string());
    rec.set("lease", clock::format_duration(lease));
    rec.set("taken", clock::format_timestamp(&clock::now()));
    rec.render()
}

fn declared_lease(rec: &Record) -> Duration {
    rec.get_nonempty("lease")
        .and_then(|l| clock::parse_duration(l).ok())
        .unwrap_or(LEASE)
        .clamp(LEASE_BOUNDS.0, LEASE_BOUNDS.1)
}

/// Whether the record names a process of this host that no longer exists (not this one).
fn holder_gone(rec: &Record) -> bool {
    let pid = rec.get_nonempty("pid").and_then(|p| p.parse::<u32>().ok());
    match (pid, rec.get_nonempty("host")) {
        (Some(pid), Some(h)) => pid != host::pid() && host::recorded_process_gone(pid, h, None),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_release_removes_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mutex.lease");
        let g = acquire_with(&p, LEASE, crate::arbiter::MUTEX_PATIENCE).unwrap();
        assert!(p.exists());
        assert!(g.still_held());
        let err = acquire_with(&p, LEASE, Duration::from_millis(100)).unwrap_err();
        assert!(err.to_string().contains("lease"), "{err}");
        drop(g);
        assert!(!p.exists());
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert!(names.is_empty(), "nothing left behind: {names:?}");
    }

    #[test]
    fn a_record_of_a_dead_process_is_broken_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mutex.lease");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let host = host::hostname();
        let record = format!("token: 1111\nhost: {host}\npid: {dead}\nlease: 60s\n");
        fs::write(&p, record).unwrap();
        let started = Instant::now();
        let g = acquire_with(&p, LEASE, Duration::from_secs(5)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(g.still_held());
    }

    #[test]
    fn a_stalled_holder_is_overtaken_after_its_lease_and_fenced_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mutex.lease");
        let lease = Duration::from_millis(300);
        let stalled = acquire_with(&p, lease, Duration::from_secs(1)).unwrap();
        let started = Instant::now();
        let next = acquire_with(&p, lease, Duration::from_secs(5)).unwrap();
        assert!(started.elapsed() >= lease, "not before the lease ran out");
        assert!(!stalled.still_held(), "the stalled holder learns it lost");
        assert!(next.still_held());
        drop(stalled);
        let kept = p.exists();
        assert!(kept, "the stalled holder does not remove its successor's");
        std::thread::sleep(lease);
        assert!(next.still_held(), "its own record is still there");
        drop(next);
        assert!(!p.exists());
    }

    #[test]
    fn a_record_moved_aside_is_put_back_without_hard_links() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mutex.lease");
        fs::write(&p, "token: theirs\n").unwrap();
        let removed = fsutil::raw::without_hard_links(|| remove_if(&p, |_| false)).unwrap();
        assert!(!removed);
        assert_eq!(fs::read_to_string(&p).unwrap(), "token: theirs\n");
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "nothing but the record: {left:?}");
    }

    #[test]
    fn a_stale_file_handle_is_retried() {
        let e = io::Error::from_raw_os_error(rustix::io::Errno::STALE.raw_os_error());
        assert!(is_stale_handle(&e));
        assert!(!is_stale_handle(&io::Error::from(io::ErrorKind::NotFound)));
    }

    #[test]
    fn a_garbage_record_is_broken_after_a_lease() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mutex.lease");
        fs::write(&p, b"\xff\xfe not a record").unwrap();
        let started = Instant::now();
        let _g = acquire_with(&p, LEASE, Duration::from_secs(10)).unwrap();
        assert!(started.elapsed() >= LEASE);
    }
}
