//! Waiting for a condition on disk without polling every few seconds.
//!
//! A [`FolderWatch`] subscribes to events in a few folders (inotify on Linux, through `notify`)
//! and wakes its waiter on any change there. Because network filesystems send no events, and
//! because a watch can fail to start, every wait is also bounded by a short re-check interval:
//! events make waits fast, the re-check makes them certain.
//!
//! Subscribe first, then test the condition, then wait: a change that lands between the test
//! and the wait is still seen.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a waiter re-checks even without an event (network filesystems send none).
pub const RECHECK: Duration = Duration::from_millis(500);

/// A subscription to changes in some folders.
///
/// On Linux it is an inotify descriptor read in the waiting thread itself: no watcher thread to
/// start, no channel hop between the kernel's event and the waiter. Elsewhere it is `notify`'s
/// recommended watcher.
pub struct FolderWatch {
    inner: Option<Inner>,
}

enum Inner {
    #[cfg(target_os = "linux")]
    Direct(direct::Watch),
    Threaded(threaded::Watch),
}

impl FolderWatch {
    /// Watch `dirs` (non-recursively). Folders that cannot be watched are left to the re-check.
    pub fn new(dirs: &[PathBuf]) -> FolderWatch {
        #[cfg(target_os = "linux")]
        let inner = direct::Watch::new().map(Inner::Direct);
        #[cfg(not(target_os = "linux"))]
        let inner = threaded::Watch::new().map(Inner::Threaded);
        let mut w = FolderWatch { inner };
        for dir in dirs {
            w.add(dir);
        }
        w
    }

    /// Watch `dir` and every folder below it (a whole workspace, for `coord watch`). This one
    /// runs `notify`'s watcher thread, which follows folders as they are created.
    pub fn recursive(dir: &Path) -> FolderWatch {
        let inner = threaded::Watch::new()
            .and_then(|mut w| w.add(dir, true).then_some(w))
            .map(Inner::Threaded);
        FolderWatch { inner }
    }

    /// Add another folder to the subscription.
    pub fn add(&mut self, dir: &Path) {
        match self.inner.as_mut() {
            #[cfg(target_os = "linux")]
            Some(Inner::Direct(w)) => w.add(dir),
            Some(Inner::Threaded(w)) => {
                w.add(dir, false);
            }
            None => {}
        }
    }

    /// Block until a change is seen or `max` has passed (never longer than [`RECHECK`] when the
    /// watch could not start). Returns whether an event arrived. Pending events are drained.
    pub fn wait(&self, max: Duration) -> bool {
        match &self.inner {
            #[cfg(target_os = "linux")]
            Some(Inner::Direct(w)) => w.wait(max),
            Some(Inner::Threaded(w)) => w.wait(max),
            None => {
                std::thread::sleep(max.min(RECHECK));
                false
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod direct {
    //! inotify, read in the caller's thread.
    //!
    //! The mask names only what changes what a waiter looks at: names appearing, going or moving,
    //! and content written. Opening, reading and closing a file, and attribute changes (a waiter
    //! touching its queue ticket), change nothing: waking on them would make every waiter wake
    //! itself, and each other, by merely looking.

    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    pub(super) struct Watch {
        fd: OwnedFd,
    }

    fn mask() -> WatchFlags {
        WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::MODIFY
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW
    }

    impl Watch {
        pub(super) fn new() -> Option<Watch> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            Some(Watch { fd })
        }

        pub(super) fn add(&mut self, dir: &Path) {
            let _ = inotify::add_watch(&self.fd, dir, mask());
        }

        pub(super) fn wait(&self, max: Duration) -> bool {
            let deadline = Instant::now() + max;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let timeout = Timespec {
                    tv_sec: left.as_secs().min(i64::MAX as u64) as i64,
                    tv_nsec: i64::from(left.subsec_nanos()),
                };
                let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
                match poll(&mut fds, Some(&timeout)) {
                    Ok(0) => return false,
                    Ok(_) => {
                        if self.drain() {
                            return true;
                        }
                        // Only the kernel's own bookkeeping (a watch removed): wait on.
                    }
                    Err(Errno::INTR) => {}
                    Err(_) => {
                        std::thread::sleep(left.min(super::RECHECK));
                        return false;
                    }
                }
                if Instant::now() >= deadline {
                    return false;
                }
            }
        }

        /// Read every pending event; whether one of them is a change.
        fn drain(&self) -> bool {
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            let mut changed = false;
            loop {
                match reader.next() {
                    Ok(event) => {
                        if !event.events().intersects(ReadFlags::IGNORED)
                            || event.events().intersects(ReadFlags::QUEUE_OVERFLOW)
                        {
                            changed = true;
                        }
                    }
                    Err(Errno::INTR) => {}
                    // AGAIN: drained. Anything else: treat as a change, the caller re-checks.
                    Err(e) => return changed || e != Errno::AGAIN,
                }
            }
        }
    }
}

mod threaded {
    //! `notify`'s recommended watcher, its events forwarded over a channel.

    use std::path::Path;
    use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
    use std::time::Duration;

    use notify::event::ModifyKind;
    use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

    pub(super) struct Watch {
        watcher: RecommendedWatcher,
        rx: Receiver<()>,
    }

    impl Watch {
        pub(super) fn new() -> Option<Watch> {
            let (tx, rx) = channel();
            let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                if res.is_ok_and(|event| is_change(&event.kind)) {
                    let _ = tx.send(());
                }
            })
            .ok()?;
            Some(Watch { watcher, rx })
        }

        /// Whether the folder is now watched.
        pub(super) fn add(&mut self, dir: &Path, recursive: bool) -> bool {
            let mode = if recursive {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            self.watcher.watch(dir, mode).is_ok()
        }

        pub(super) fn wait(&self, max: Duration) -> bool {
            let got = match self.rx.recv_timeout(max) {
                Ok(()) => true,
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(max.min(super::RECHECK));
                    false
                }
            };
            while self.rx.try_recv().is_ok() {}
            got
        }
    }

    /// Opening, reading and closing a file and attribute changes change nothing a waiter
    /// looks at.
    fn is_change(kind: &EventKind) -> bool {
        !matches!(
            kind,
            EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_))
        )
    }
}

/// A point in time by which a wait ends, or none.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// A deadline `d` from now, or never for `None`.
    pub fn after(d: Option<Duration>) -> Deadline {
        Deadline(d.map(|d| Instant::now() + d))
    }

    /// Whether it has passed.
    pub fn passed(&self) -> bool {
        self.0.is_some_and(|t| Instant::now() >= t)
    }

    /// How long to sleep next: at most `step`, never past the deadline.
    pub fn next_sleep(&self, step: Duration) -> Duration {
        match self.0 {
            Some(t) => t.saturating_duration_since(Instant::now()).min(step),
            None => step,
        }
    }
}

/// Signals that end a wait cleanly once [`stop_on_signals`] was called: the waiter leaves the
/// queue and resets its presence, as when the wait times out, instead of dying mid-wait.
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::OnceLock::new();

/// From now on, `SIGINT` and `SIGTERM` no longer end this process at once: a wait in progress
/// ([`stop_requested`]) ends cleanly and reports the signal. For commands that only wait and
/// then act briefly (`coord lock`).
///
/// # Errors
///
/// When the handlers cannot be installed.
pub fn stop_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let flag = STOP.get_or_init(Default::default);
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_usize(sig, std::sync::Arc::clone(flag), sig as usize)?;
    }
    Ok(())
}

/// The signal that asked this process to stop, if any (see [`stop_on_signals`]).
pub fn stop_requested() -> Option<i32> {
    let sig = STOP.get()?.load(std::sync::atomic::Ordering::SeqCst);
    (sig != 0).then(|| i32::try_from(sig).unwrap_or(15))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn a_file_event_wakes_the_waiter_quickly() {
        let dir = tempfile::tempdir().unwrap();
        let w = FolderWatch::new(&[dir.path().to_path_buf()]);
        let p = dir.path().join("x");
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(p, b"1").unwrap();
        });
        assert!(
            w.wait(Duration::from_secs(10)),
            "the event arrived before the timeout"
        );
        t.join().unwrap();
    }

    #[test]
    fn reading_a_watched_folder_does_not_wake_the_waiter() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"1").unwrap();
        let w = FolderWatch::new(&[dir.path().to_path_buf()]);
        for _ in 0..5 {
            let _ = std::fs::read_dir(dir.path()).unwrap().count();
            let _ = std::fs::read(&p).unwrap();
        }
        assert!(
            !w.wait(Duration::from_millis(300)),
            "looking is not a change"
        );
        std::fs::remove_file(&p).unwrap();
        assert!(w.wait(Duration::from_secs(10)), "a removal is");
    }

    #[test]
    fn deadlines() {
        let d = Deadline::after(Some(Duration::ZERO));
        assert!(d.passed());
        let never = Deadline::after(None);
        assert!(!never.passed());
        assert_eq!(never.next_sleep(RECHECK), RECHECK);
    }
}
