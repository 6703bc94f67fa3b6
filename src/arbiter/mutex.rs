//! The workspace mutex: a short kernel lock on a file that is never deleted.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{IoResultExt, Result};
use crate::fsutil::{Access, open_nofollow};

/// The workspace mutex: a short kernel lock on a file that is never deleted.
#[derive(Debug)]
pub struct MutexGuard {
    // Closing the file releases the kernel lock.
    _file: File,
}

/// Take the workspace mutex at `path`, waiting at most `patience` (and [`mutex_patience`]).
pub fn lock_mutex_within(path: &Path, patience: Duration) -> Result<MutexGuard> {
    let deadline = Instant::now() + patience.min(mutex_patience());
    // A mutex file deleted and created anew (`git clean`, an agent tidying up) between our open
    // and our lock would let two processes hold "the" mutex, each on its own file: after
    // locking, make sure the file we hold is still the one at the path, else start over.
    loop {
        // Non-blocking, so that a FIFO planted at `path` cannot make the open wait; anything but
        // a regular file is refused (every coord must lock the same object).
        let (file, meta) =
            open_nofollow(path, Access::ReadWriteOrCreate).at("open the workspace mutex", path)?;
        lock_patiently(&file, path, deadline)?;
        match fs::symlink_metadata(path) {
            Ok(now) if (now.dev(), now.ino()) == (meta.dev(), meta.ino()) => {
                return Ok(MutexGuard { _file: file });
            }
            _ if Instant::now() >= deadline => {
                let why = "keeps being replaced while coord locks it";
                let e = io::Error::new(io::ErrorKind::TimedOut, why);
                return Err(e).at("lock the workspace mutex", path);
            }
            _ => continue,
        }
    }
}

/// How long coord waits for the workspace mutex before giving up. It is held for microseconds;
/// only a process stopped (or stuck) while holding it makes anyone wait this long.
pub const MUTEX_PATIENCE: Duration = Duration::from_secs(30);

/// This process's cap on its patience for the workspace mutex, in milliseconds (0: none).
static PATIENCE_CAP_MS: AtomicU64 = AtomicU64::new(0);

/// From now on, wait at most `cap` for the workspace mutex (a hook answers within a budget).
pub fn cap_mutex_patience(cap: Duration) {
    let ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX).max(1);
    PATIENCE_CAP_MS.store(ms, Ordering::Relaxed);
}

/// How long this process waits for the workspace mutex at most (see [`cap_mutex_patience`]).
pub fn mutex_patience() -> Duration {
    match PATIENCE_CAP_MS.load(Ordering::Relaxed) {
        0 => MUTEX_PATIENCE,
        ms => Duration::from_millis(ms).min(MUTEX_PATIENCE),
    }
}

/// Take the kernel lock, trying again with short growing pauses until `deadline`, so that a
/// process frozen while holding the mutex cannot freeze every other coord forever.
fn lock_patiently(file: &File, path: &Path, deadline: Instant) -> Result<()> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(20);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).at("lock the workspace mutex", path);
            }
        }
        crate::wait::stopped(|| path.display().to_string())?;
        if Instant::now() >= deadline {
            let why = "another process has held it too long (a coord process stopped with Ctrl-Z?)";
            let e = io::Error::new(io::ErrorKind::TimedOut, why);
            return Err(e).at("lock the workspace mutex", path);
        }
        std::thread::sleep(pause);
        let cap = if started.elapsed() < Duration::from_millis(50) {
            Duration::from_micros(200)
        } else {
            Duration::from_millis(1)
        };
        pause = (pause * 2).min(cap);
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // removes the mutex file on purpose
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_a_link_is_refused_not_waited_on_or_followed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = crate::fsutil::tests::fifo_at(&dir.path().join("fifo"));
        assert!(lock_mutex_within(&fifo, MUTEX_PATIENCE).is_err());
        let link = dir.path().join("mutex");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
        assert!(lock_mutex_within(&link, MUTEX_PATIENCE).is_err());
        assert!(!dir.path().join("elsewhere").exists(), "not followed");
    }

    #[test]
    fn a_mutex_replaced_while_waiting_is_not_shared() {
        use std::sync::mpsc::channel;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mutex");
        let old = lock_mutex_within(&path, MUTEX_PATIENCE).unwrap();
        let (tx, rx) = channel();
        let p = path.clone();
        let waiter = std::thread::spawn(move || {
            let guard = lock_mutex_within(&p, MUTEX_PATIENCE).unwrap();
            tx.send(()).unwrap();
            drop(guard);
        });
        std::thread::sleep(Duration::from_millis(100));
        // Someone deletes the mutex file and another process takes a new one.
        fs::remove_file(&path).unwrap();
        let new = lock_mutex_within(&path, MUTEX_PATIENCE).unwrap();
        drop(old);
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the waiter must not hold the old file while another holds the new one"
        );
        drop(new);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
    }

    #[test]
    fn a_mutex_held_too_long_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mutex");
        let _held = lock_mutex_within(&path, MUTEX_PATIENCE).unwrap();
        let err = lock_mutex_within(&path, Duration::from_millis(200)).unwrap_err();
        assert!(err.to_string().contains("held it too long"), "{err}");
    }
}
