//! The workspace mutex: a short kernel lock on a file that is never deleted.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{Access, open_nofollow};
use crate::error::{IoResultExt, Result};

/// The workspace mutex: a short kernel lock on a file that is never deleted.
///
/// Every lock transition (acquire, stale takeover, release, fenced commit) happens while one
/// of these is held. Dropping it releases the kernel lock.
#[derive(Debug)]
pub struct MutexGuard {
    file: Option<File>,
    path: PathBuf,
    held: (u64, u64),
}

impl MutexGuard {
    /// The mutex file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MutexGuard {
    fn drop(&mut self) {
        let Some(file) = self.file.take() else {
            return;
        };
        // Closing the file releases the lock; a process that keeps it open unlocks it instead.
        if KEEP_OPEN.load(Ordering::Relaxed) && file.unlock().is_ok() {
            let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.is_none() {
                *kept = Some(Kept {
                    file,
                    path: std::mem::take(&mut self.path),
                    held: self.held,
                });
            }
        }
    }
}

/// Set by a long-running process that takes the mutex for every request (`coord mcp`): the
/// mutex file stays open between takes, unlocked.
static KEEP_OPEN: AtomicBool = AtomicBool::new(false);

/// The mutex file last released, open and unlocked, with its device and inode.
static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

#[derive(Debug)]
struct Kept {
    file: File,
    path: PathBuf,
    held: (u64, u64),
}

/// From now on, keep the mutex file open between takes (unlocked) instead of opening it for
/// each. Every take still checks, once locked, that the file is the one at the path.
pub fn keep_mutex_open() {
    KEEP_OPEN.store(true, Ordering::Relaxed);
}

/// Whether the mutex at `path` is kept open, so that taking it needs no open (nor its folder).
pub fn mutex_kept_open(path: &Path) -> bool {
    KEPT.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_some_and(|k| k.path == path)
}

/// Take the workspace mutex at `path`, blocking until it is free (it is held for microseconds).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when the mutex file cannot be opened (a symlink is refused)
/// or locked.
pub fn lock_mutex(path: &Path) -> Result<MutexGuard> {
    lock_mutex_within(path, MUTEX_PATIENCE)
}

/// [`lock_mutex`], waiting at most `patience` (and never past [`mutex_patience`]).
///
/// # Errors
///
/// As [`lock_mutex`]; [`Error::Interrupted`](crate::Error::Interrupted) when a signal asked
/// this process to stop meanwhile (see [`crate::wait::stop_on_signals`]).
pub fn lock_mutex_within(path: &Path, patience: Duration) -> Result<MutexGuard> {
    let deadline = Instant::now() + patience.min(mutex_patience());
    // A mutex file deleted and created anew (`git clean`, an agent tidying up) between our open
    // and our lock would let two processes hold "the" mutex, each on its own file: after
    // locking, make sure the file we hold is still the one at the path, else start over.
    let kept = KEPT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take_if(|k| k.path == path);
    let mut kept = kept.map(|k| (k.file, k.held));
    let from_kept = kept.is_some();
    loop {
        let (file, held) = match kept.take() {
            Some(open) => open,
            None => {
                let (file, meta) = open_mutex(path)?;
                (file, (meta.dev(), meta.ino()))
            }
        };
        lock_patiently(&file, path, deadline)?;
        match fs::symlink_metadata(path) {
            Ok(now) if (now.dev(), now.ino()) == held => {
                return Ok(MutexGuard {
                    file: Some(file),
                    path: path.to_path_buf(),
                    held,
                });
            }
            // The file kept open is not the one at the path any more (`.coord/` removed, or
            // replaced): the caller looks at the folder again before opening anything there.
            _ if from_kept => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "was replaced since it was last taken",
                ))
                .at("lock the workspace mutex", path);
            }
            _ if Instant::now() >= deadline => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "keeps being replaced while coord locks it",
                ))
                .at("lock the workspace mutex", path);
            }
            _ => continue,
        }
    }
}

/// How long coord waits for the workspace mutex before giving up. It is held for microseconds;
/// only a process stopped (or stuck) while holding it makes anyone wait this long.
pub const MUTEX_PATIENCE: Duration = Duration::from_secs(30);

/// The patience of this process for the workspace mutex, in milliseconds, when capped below
/// [`MUTEX_PATIENCE`] (0: not capped).
static PATIENCE_CAP_MS: AtomicU64 = AtomicU64::new(0);

/// From now on, wait at most `cap` for the workspace mutex, whoever takes it: for a process
/// that must answer within a budget of its own (a client's hook), whatever it calls.
pub fn cap_mutex_patience(cap: Duration) {
    let ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX).max(1);
    PATIENCE_CAP_MS.store(ms, Ordering::Relaxed);
}

/// How long this process waits for the workspace mutex at most: [`MUTEX_PATIENCE`], or less
/// after [`cap_mutex_patience`].
pub fn mutex_patience() -> Duration {
    match PATIENCE_CAP_MS.load(Ordering::Relaxed) {
        0 => MUTEX_PATIENCE,
        ms => Duration::from_millis(ms).min(MUTEX_PATIENCE),
    }
}

/// Why a wait for the mutex ends early: a signal asked this process to stop.
fn interrupted(path: &Path) -> Option<crate::Error> {
    crate::wait::stop_requested().map(|signal| crate::Error::Interrupted {
        signal,
        file: path.display().to_string(),
    })
}

/// The mutex file, open, and what it is (its device and inode do not change while it is open).
fn open_mutex(path: &Path) -> Result<(File, fs::Metadata)> {
    // O_NONBLOCK so that a FIFO planted at `path` cannot make the open wait (it does not affect
    // `flock`). Anything but a regular file is refused: every coord process must lock the same
    // kind of object, and a symlink could point anywhere.
    open_nofollow(path, Access::ReadWriteOrCreate).at("open the workspace mutex", path)
}

/// Take the kernel lock, trying again with short growing pauses until `deadline`, so that a
/// process frozen while holding the mutex cannot freeze every other coord forever. The mutex is
/// held for a fraction of a millisecond, and a waiter woken by a release usually finds its
/// releaser still finishing: pauses stay at most 0.2 ms for the first 50 ms, then grow to 1 ms.
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
        if let Some(e) = interrupted(path) {
            return Err(e);
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "another process has held it too long (a coord process stopped with Ctrl-Z?)",
            ))
            .at("lock the workspace mutex", path);
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
