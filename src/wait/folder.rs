//! Folder events: a waiter sleeps until something changes in a few folders.
//!
//! A [`FolderWatch`] subscribes to events in a few folders and wakes its waiter on a change
//! there that matters. Because network filesystems send no events, and because a watch can fail
//! to start, every wait is also bounded by a short re-check interval ([`RECHECK`]): events make
//! waits fast, the re-check makes them certain.
//!
//! On Linux it reads an inotify descriptor of its own in the waiting thread. The descriptor is
//! closed with its watches in place: removing watches first makes the close wait for the
//! kernel's grace period (about 8 ms a descriptor), which a waiter that just took its lock
//! would spend before it can exit. Elsewhere it uses `notify`'s recommended watcher.
//!
//! Subscribe first, then test the condition, then wait: a change that lands between the test
//! and the wait is still seen.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::RECHECK;

/// Which events in one watched folder wake the waiter (none recorded: every change).
#[derive(Debug, Clone)]
struct Interest {
    /// The name prefixes that matter (`None`: every name).
    prefixes: Option<Vec<String>>,
}

type Interests = Arc<Mutex<HashMap<PathBuf, Interest>>>;

/// A subscription to changes in some folders.
pub struct FolderWatch {
    inner: Option<backend::Watch>,
    removals: Interests,
}

impl FolderWatch {
    /// Watch `dirs` (non-recursively). Folders that cannot be watched are left to the re-check.
    pub fn new(dirs: &[PathBuf]) -> FolderWatch {
        let removals = Interests::default();
        let mut w = FolderWatch {
            inner: backend::Watch::new(&removals),
            removals,
        };
        for dir in dirs {
            w.add(dir);
        }
        w
    }

    /// Watch `dir`, waking only when a name that starts with one of `prefixes` (`None`: any
    /// name) goes away, deleted or renamed to another name, or when the folder itself does.
    ///
    /// A lock waiter is blocked by names that exist (a lock, a ticket ahead of it): one
    /// appearing or being rewritten never unblocks it, and neither do the locked file being
    /// written or other agents' presence and temporary files coming and going.
    pub fn add_removals(&mut self, dir: &Path, prefixes: Option<Vec<String>>) {
        let mut removals = self.removals.lock().unwrap_or_else(|e| e.into_inner());
        let merged = match (removals.remove(dir).map(|i| i.prefixes), prefixes) {
            (Some(Some(mut a)), Some(b)) => Some({
                a.extend(b);
                a
            }),
            (None, p) => p,
            _ => None,
        };
        removals.insert(dir.to_path_buf(), Interest { prefixes: merged });
        drop(removals);
        self.add(dir);
    }

    /// Add another folder to the subscription (any change there wakes the waiter).
    pub fn add(&mut self, dir: &Path) {
        if let Some(w) = self.inner.as_mut() {
            w.add(dir);
        }
    }

    /// Block until a change is seen or `max` has passed (never longer than [`RECHECK`] when the
    /// watch could not start). Returns whether an event arrived. Pending events are drained.
    pub fn wait(&self, max: Duration) -> bool {
        match &self.inner {
            Some(w) => w.wait(max, &self.removals),
            None => {
                std::thread::sleep(max.min(RECHECK));
                false
            }
        }
    }
}

/// One name seen changing in a watched folder, as the waiter judges it.
struct Change<'a> {
    /// The folder the event came from, and the name in it (`None`: the folder itself).
    dir: &'a Path,
    name: Option<&'a str>,
    /// A name going away: deleted, or renamed away.
    removal: bool,
}

/// Whether `change` alters what a waiter looks at: coord's own temporary files never do (the
/// publication, a rename or link to the final name, is the event that counts); in a folder
/// watched for removals only a name going away counts.
fn matters(change: &Change, removals: &Interests) -> bool {
    let Some(name) = change.name else {
        return true; // the watched folder itself
    };
    if crate::layout::is_temp_name(name) {
        return false;
    }
    let removals = removals.lock().unwrap_or_else(|e| e.into_inner());
    match removals.get(change.dir) {
        None => true,
        Some(interest) => {
            change.removal
                && interest
                    .prefixes
                    .as_ref()
                    .is_none_or(|p| p.iter().any(|p| name.starts_with(p.as_str())))
        }
    }
}

#[cfg(target_os = "linux")]
mod backend {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    use super::{Change, Interests, matters};

    /// An inotify descriptor and the folder of each of its watches.
    pub(super) struct Watch {
        fd: OwnedFd,
        dirs: RefCell<HashMap<i32, PathBuf>>,
    }

    impl Watch {
        pub(super) fn new(_: &Interests) -> Option<Watch> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            Some(Watch {
                fd,
                dirs: RefCell::default(),
            })
        }

        pub(super) fn add(&mut self, dir: &Path) {
            // Opening, reading, closing and attribute changes (a waiter touching its ticket)
            // never change what a waiter looks at: not asked for.
            let mask = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MODIFY
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF
                | WatchFlags::ONLYDIR;
            if let Ok(wd) = inotify::add_watch(&self.fd, dir, mask) {
                self.dirs.get_mut().insert(wd, dir.to_path_buf());
            }
        }

        pub(super) fn wait(&self, max: Duration, removals: &Interests) -> bool {
            let until = Instant::now() + max;
            loop {
                if self.drain(removals) {
                    return true;
                }
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                let timeout = Timespec::try_from(left).unwrap_or(Timespec {
                    tv_sec: 1,
                    tv_nsec: 0,
                });
                let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
                match poll(&mut fds, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => {
                        std::thread::sleep(left.min(super::RECHECK));
                        return false;
                    }
                }
            }
        }

        /// Read every pending event; whether one of them matters.
        fn drain(&self, removals: &Interests) -> bool {
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut events = inotify::Reader::new(&self.fd, &mut buf);
            let dirs = self.dirs.borrow();
            let mut woke = false;
            while let Ok(event) = events.next() {
                let flags = event.events();
                // Lost events, a watch gone, the folder itself deleted or moved: look again.
                if flags.intersects(
                    ReadFlags::QUEUE_OVERFLOW
                        | ReadFlags::IGNORED
                        | ReadFlags::DELETE_SELF
                        | ReadFlags::MOVE_SELF
                        | ReadFlags::UNMOUNT,
                ) {
                    woke = true;
                    continue;
                }
                let Some(dir) = dirs.get(&event.wd()) else {
                    continue;
                };
                let name = event.file_name().and_then(|n| n.to_str().ok());
                let change = Change {
                    dir,
                    name: Some(name.unwrap_or("")),
                    removal: flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM),
                };
                woke |= matters(&change, removals);
            }
            woke
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod backend {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
    use std::time::Duration;

    use notify::event::{ModifyKind, RenameMode};
    use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

    use super::{Change, Interests, RECHECK, matters};

    /// `notify`'s recommended watcher and the channel its thread wakes the waiter on.
    pub(super) struct Watch {
        watcher: RecommendedWatcher,
        woken: Receiver<()>,
    }

    impl Watch {
        pub(super) fn new(removals: &Interests) -> Option<Watch> {
            let seen = Arc::clone(removals);
            let (tx, woken) = channel();
            let watcher = notify::recommended_watcher(move |res: notify::Result<Event>| {
                if res.is_ok_and(|event| event_matters(&event, &seen)) {
                    let _ = tx.send(());
                }
            })
            .ok()?;
            Some(Watch { watcher, woken })
        }

        pub(super) fn add(&mut self, dir: &Path) {
            let _ = self.watcher.watch(dir, RecursiveMode::NonRecursive);
        }

        pub(super) fn wait(&self, max: Duration, _: &Interests) -> bool {
            let got = match self.woken.recv_timeout(max) {
                Ok(()) => true,
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(max.min(RECHECK));
                    false
                }
            };
            while self.woken.try_recv().is_ok() {}
            got
        }
    }

    /// Whether one of `event`'s paths is a change that matters ([`matters`]).
    fn event_matters(event: &Event, removals: &Interests) -> bool {
        if matches!(
            event.kind,
            EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_))
        ) {
            return false;
        }
        // A name going away: deleted, or renamed away (the first path of a rename).
        let removal = |i: usize| match event.kind {
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(RenameMode::From)) => true,
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => i == 0,
            _ => event.need_rescan(),
        };
        let watched = |p: &Path| {
            let removals = removals.lock().unwrap_or_else(|e| e.into_inner());
            removals.contains_key(p)
        };
        event.paths.is_empty()
            || event.paths.iter().enumerate().any(|(i, path)| {
                let (dir, name) = match (path.parent(), path.file_name()) {
                    _ if watched(path) => (path.as_path(), None),
                    (Some(dir), Some(name)) => (dir, Some(name.to_str().unwrap_or(""))),
                    _ => (path.as_path(), None),
                };
                matters(
                    &Change {
                        dir,
                        name,
                        removal: removal(i),
                    },
                    removals,
                )
            })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn a_removals_watch_sleeps_through_new_and_rewritten_names_and_wakes_on_a_removal() {
        let dir = tempfile::tempdir().unwrap();
        let held = dir.path().join("f.md.lock.gemini");
        std::fs::write(&held, b"Agent: gemini\n").unwrap();
        let mut w = FolderWatch::new(&[]);
        w.add_removals(dir.path(), Some(vec!["f.md.lock.".into()]));
        // Another agent's lock appears, the held one is rewritten, the locked file is written,
        // a lock of another file goes away: none of it unblocks a waiter for f.md.
        std::fs::write(dir.path().join("f.md.lock.codex"), b"Agent: codex\n").unwrap();
        std::fs::write(&held, b"Agent: gemini\nworking_on: x\n").unwrap();
        std::fs::write(dir.path().join("f.md"), b"new\n").unwrap();
        std::fs::write(dir.path().join("g.md.lock.codex"), b"x").unwrap();
        std::fs::remove_file(dir.path().join("g.md.lock.codex")).unwrap();
        let _ = std::fs::read_dir(dir.path()).unwrap().count();
        assert!(
            !w.wait(Duration::from_millis(300)),
            "woken by a change that unblocks nothing"
        );
        std::fs::remove_file(&held).unwrap();
        assert!(
            w.wait(Duration::from_secs(10)),
            "the release woke the waiter"
        );
    }

    #[test]
    fn a_change_wakes_a_plain_watch_and_looking_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"1").unwrap();
        let w = FolderWatch::new(&[dir.path().to_path_buf()]);
        let _ = std::fs::read(&p).unwrap();
        assert!(
            !w.wait(Duration::from_millis(300)),
            "looking is not a change"
        );
        std::fs::write(dir.path().join("y"), b"1").unwrap();
        assert!(w.wait(Duration::from_secs(10)), "a new name is");
    }
}
