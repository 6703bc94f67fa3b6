//! Waking a waiter the way the kernel hands over a lock: `flock` on the file of whoever stands
//! in front of it.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::fsutil;

/// Files this process keeps locked, by path.
static HELD: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

/// Whether the lock files this process publishes are kept locked (see [`hold_locks`]).
static HOLD_LOCKS: AtomicBool = AtomicBool::new(false);

fn held() -> MutexGuard<'static, Vec<(PathBuf, File)>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// From now on, keep the lock files this process publishes locked until it releases them: for a
/// process that holds its locks while it lives and releases them before it exits (`coord run`).
pub fn hold_locks() {
    HOLD_LOCKS.store(true, Ordering::Relaxed);
}

/// Whether [`hold_locks`] was called.
pub fn holds_locks() -> bool {
    HOLD_LOCKS.load(Ordering::Relaxed)
}

/// Keep `file`, published at `path` and locked, until [`let_go`] of `path`.
pub fn keep(path: &Path, file: File) {
    held().push((path.to_path_buf(), file));
}

/// Close what this process kept locked at `path`, waking whoever waits for it. Call it after
/// removing the file: the waiter then finds it gone.
pub fn let_go(path: &Path) {
    // Dropped outside the registry's lock.
    let gone: Vec<(PathBuf, File)> = held().extract_if(.., |(p, _)| p == path).collect();
    drop(gone);
}

/// From now on, what this process keeps at `from` is let go with `to` instead.
pub fn rekey(from: &Path, to: &Path) {
    for (path, _) in held().iter_mut().filter(|(p, _)| p == from) {
        *path = to.to_path_buf();
    }
}

/// One helper thread's wait, shared by every [`Handoff`] of this process on the same file:
/// how its `flock` ended (`None`: still waiting).
#[derive(Default)]
struct Shared {
    outcome: Mutex<Option<Woken>>,
    changed: Condvar,
}

/// A file by device and inode.
type FileId = (u64, u64);

/// The helper threads still waiting, by file: a process waits once per file, however often its
/// waiters start and stop (a server retrying a lock for minutes).
static WAITING: Mutex<Vec<(FileId, Arc<Shared>)>> = Mutex::new(Vec::new());

fn waiting() -> MutexGuard<'static, Vec<(FileId, Arc<Shared>)>> {
    WAITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a wait on a [`Handoff`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The owner let the file go (or died).
    LetGo,
    /// The time given passed first.
    TimedOut,
    /// The kernel refused the lock (a filesystem that cannot lock, say): this file cannot be
    /// waited for this way.
    Refused,
}

/// A wait for the owner of a locked file to let it go.
pub struct Handoff {
    path: PathBuf,
    shared: Arc<Shared>,
}

impl Handoff {
    /// Start waiting for the file at `path`, when its owner keeps it locked. `None` when nobody
    /// does (or it is gone, or not a regular file): the caller watches its folder instead.
    pub fn start(path: &Path) -> Option<Handoff> {
        use std::os::unix::fs::MetadataExt;
        let file = fsutil::open_regular_nofollow(path).ok()?;
        match file.try_lock_shared() {
            Err(TryLockError::WouldBlock) => {}
            // Unlocked: nobody keeps it (the lock is dropped with `file`).
            Ok(()) | Err(TryLockError::Error(_)) => return None,
        }
        let meta = file.metadata().ok()?;
        let key = (meta.dev(), meta.ino());
        let mut all = waiting();
        let shared = match all.iter().find(|(k, _)| *k == key) {
            Some((_, shared)) => Arc::clone(shared),
            None => {
                let shared = Arc::new(Shared::default());
                let theirs = Arc::clone(&shared);
                // A thread blocks in `flock` for us; callers wait on `shared`, with a timeout. At
                // exit the kernel ends a thread blocked there at once.
                std::thread::Builder::new()
                    .name("handoff".into())
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        let outcome = match file.lock_shared() {
                            Ok(()) => Woken::LetGo,
                            Err(_) => Woken::Refused,
                        };
                        drop(file);
                        waiting().retain(|(k, _)| *k != key);
                        *theirs.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                        theirs.changed.notify_all();
                    })
                    .ok()?;
                all.push((key, Arc::clone(&shared)));
                shared
            }
        };
        let path = path.to_path_buf();
        Some(Handoff { path, shared })
    }

    /// The file waited for.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Block until the owner lets the file go or `max` has passed.
    pub fn wait(&self, max: Duration) -> Woken {
        let shared = &self.shared;
        let outcome = shared.outcome.lock().unwrap_or_else(|e| e.into_inner());
        let (outcome, _) = (shared.changed)
            .wait_timeout_while(outcome, max, |o| o.is_none())
            .unwrap_or_else(|e| e.into_inner());
        outcome.unwrap_or(Woken::TimedOut)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;
    use std::time::Instant;

    /// Create `p` locked and keep it, as a holder does; returns its device and inode.
    fn kept(p: &Path) -> FileId {
        use std::os::unix::fs::MetadataExt;
        let f = File::create(p).unwrap();
        f.lock().unwrap();
        let meta = f.metadata().unwrap();
        keep(p, f);
        (meta.dev(), meta.ino())
    }

    #[test]
    fn a_file_nobody_keeps_locked_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ticket");
        assert!(Handoff::start(&p).is_none(), "missing");
        std::fs::write(&p, "x").unwrap();
        assert!(Handoff::start(&p).is_none(), "unlocked");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert!(Handoff::start(&dir.path().join("d")).is_none(), "folder");
    }

    #[test]
    fn the_waiter_wakes_when_the_owner_lets_go_and_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ticket");
        kept(&p);
        let h = Handoff::start(&p).expect("kept locked");
        assert_eq!(h.path(), p);
        let ms = Duration::from_millis;
        assert_eq!(h.wait(ms(50)), Woken::TimedOut, "still kept");
        std::fs::remove_file(&p).unwrap();
        let t = Instant::now();
        let_go(&p);
        assert_eq!(h.wait(Duration::from_secs(20)), Woken::LetGo);
        assert!(t.elapsed() < Duration::from_secs(20));
        assert!(held().iter().all(|(q, _)| q != &p));
    }

    #[test]
    fn waits_for_one_file_share_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let key = kept(&p);
        let first = Handoff::start(&p).unwrap();
        let second = Handoff::start(&p).unwrap();
        drop(Handoff::start(&p).unwrap());
        assert_eq!(waiting().iter().filter(|(k, _)| *k == key).count(), 1);
        let_go(&p);
        assert_eq!(first.wait(Duration::from_secs(20)), Woken::LetGo);
        assert_eq!(second.wait(Duration::from_secs(20)), Woken::LetGo);
        let start = Instant::now();
        while waiting().iter().any(|(k, _)| *k == key) {
            let limit = Duration::from_secs(20);
            assert!(start.elapsed() < limit, "thread still listed");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn letting_go_of_one_path_keeps_the_others_and_a_rekeyed_file_goes_with_its_new_name() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        kept(&a);
        kept(&b);
        let_go(&a);
        assert!(Handoff::start(&a).is_none());
        // Kept under another name: let go with that one.
        let h = Handoff::start(&b).expect("b still kept");
        rekey(&b, &a);
        let ms = Duration::from_millis;
        assert_eq!(h.wait(ms(20)), Woken::TimedOut);
        let_go(&b);
        assert_eq!(h.wait(ms(20)), Woken::TimedOut, "rekeyed away from b");
        let_go(&a);
        assert_eq!(h.wait(Duration::from_secs(20)), Woken::LetGo);
        kept(&b);
        let h = Handoff::start(&b).expect("b still kept");
        let_go(&b);
        assert_eq!(h.wait(Duration::from_secs(20)), Woken::LetGo);
    }
}
