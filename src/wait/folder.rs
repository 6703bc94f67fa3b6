//! Folder events: a waiter sleeps until something changes in a few folders.
//!
//! A [`FolderWatch`] subscribes to events in a few folders (inotify on Linux, through `notify`)
//! and wakes its waiter on any change there. Because network filesystems send no events, and
//! because a watch can fail to start, every wait is also bounded by a short re-check interval
//! ([`RECHECK`]): events make waits fast, the re-check makes them certain.
//!
//! Subscribe first, then test the condition, then wait: a change that lands between the test
//! and the wait is still seen.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::RECHECK;

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

    /// Watch `dir`, waking only when a name that starts with one of `prefixes` (`None`: any
    /// name) goes away, deleted or renamed to another name, or when the folder itself does.
    ///
    /// A lock waiter watches the locked file's folder and its queue folders this way. It is
    /// blocked by names that exist (a lock, a ticket ahead of it): one appearing or being
    /// rewritten never unblocks it, and neither do the locked file being written or other
    /// agents' presence and temporary files coming and going. Waking every waiter on those would
    /// only make them compete for the processor with the one whose turn it is. Where events are
    /// not filtered (outside Linux) every change wakes the waiter, which is slower but never
    /// wrong.
    pub fn add_removals(&mut self, dir: &Path, prefixes: Option<Vec<String>>) {
        // Only Linux's own watch filters by name.
        #[cfg(not(target_os = "linux"))]
        let _ = prefixes;
        match self.inner.as_mut() {
            #[cfg(target_os = "linux")]
            Some(Inner::Direct(w)) => w.add_interest(
                dir,
                direct::Interest {
                    prefixes,
                    removals_only: true,
                },
            ),
            Some(Inner::Threaded(w)) => {
                w.add(dir, false);
            }
            None => {}
        }
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
    //! itself, and each other, by merely looking. coord's own temporary files (a record being
    //! written before it is published under its name) change nothing either: the publication
    //! itself (a rename or link to the final name) is the event that counts.
    //!
    //! Closing an inotify descriptor that watched anything waits in the kernel for the watches to
    //! be freed (an SRCU grace period: 5 to 20 ms, measured, when the folders just saw events,
    //! which is always the case when a waiter was woken). A woken waiter would spend that time
    //! with its work done but its process not yet gone, and a `coord run` would spend it holding
    //! the lock before its command starts. So the last reference to the descriptor is handed to
    //! a short-lived helper process (`cat`, as its standard output, ended by closing its input),
    //! whose exit pays for it instead; where that cannot be started the descriptor is closed here.

    use std::collections::HashMap;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    pub(super) struct Watch {
        /// `None` only once handed off (in `drop`).
        fd: Option<OwnedFd>,
        /// Per watch descriptor: which events on which names matter.
        names: HashMap<i32, Interest>,
    }

    /// Which events in one watched folder wake the waiter.
    #[derive(Debug, Clone, Default)]
    pub(in crate::wait) struct Interest {
        /// The name prefixes that matter (`None`: every name).
        pub(in crate::wait) prefixes: Option<Vec<String>>,
        /// Only a name going away (deleted or renamed away) matters.
        pub(in crate::wait) removals_only: bool,
    }

    impl Interest {
        /// What a folder watched for two interests wakes for: either's.
        fn union(self, other: Interest) -> Interest {
            let prefixes = match (self.prefixes, other.prefixes) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                _ => None,
            };
            Interest {
                prefixes,
                removals_only: self.removals_only && other.removals_only,
            }
        }
    }

    /// What the kernel reports for a folder watched with `interest`. A watch for removals only
    /// asks for nothing else: the kernel then does not wake the waiter at all for the writes,
    /// creations and renames into the folder that happen while others work there.
    fn mask(interest: &Interest) -> WatchFlags {
        let removals = WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW;
        if interest.removals_only {
            removals
        } else {
            removals
                | WatchFlags::CREATE
                | WatchFlags::MOVED_TO
                | WatchFlags::MODIFY
                | WatchFlags::CLOSE_WRITE
        }
    }

    impl Watch {
        pub(super) fn new() -> Option<Watch> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            Some(Watch {
                fd: Some(fd),
                names: HashMap::new(),
            })
        }

        pub(super) fn add(&mut self, dir: &Path) {
            self.add_interest(dir, Interest::default());
        }

        pub(super) fn add_interest(&mut self, dir: &Path, interest: Interest) {
            let Some(fd) = &self.fd else { return };
            let asked = mask(&interest);
            if let Ok(wd) = inotify::add_watch(fd, dir, asked) {
                // The same folder added twice shares one descriptor: the union of interests,
                // and the mask that serves it (adding a watch again replaces its mask).
                let merged = match self.names.remove(&wd) {
                    None => interest,
                    Some(old) => old.union(interest),
                };
                if mask(&merged) != asked {
                    let _ = inotify::add_watch(fd, dir, mask(&merged));
                }
                self.names.insert(wd, merged);
            }
        }

        /// Whether an event (`flags`) on `name` in the folder of `wd` is one a waiter cares
        /// about.
        fn matters(&self, wd: i32, flags: ReadFlags, name: Option<&[u8]>) -> bool {
            let Some(name) = name.filter(|n| !n.is_empty()) else {
                return true; // the folder itself
            };
            if std::str::from_utf8(name).is_ok_and(crate::layout::is_temp_name) {
                return false;
            }
            let Some(interest) = self.names.get(&wd) else {
                return true;
            };
            if interest.removals_only
                && !flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM)
            {
                return false;
            }
            match &interest.prefixes {
                Some(prefixes) => prefixes.iter().any(|p| name.starts_with(p.as_bytes())),
                None => true,
            }
        }

        pub(super) fn wait(&self, max: Duration) -> bool {
            let deadline = Instant::now() + max;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let timeout = Timespec {
                    tv_sec: left.as_secs().min(i64::MAX as u64) as i64,
                    tv_nsec: i64::from(left.subsec_nanos()),
                };
                let Some(fd) = &self.fd else { return false };
                let mut fds = [PollFd::new(fd, PollFlags::IN)];
                match poll(&mut fds, Some(&timeout)) {
                    Ok(0) => return false,
                    Ok(_) => {
                        if self.drain() {
                            return true;
                        }
                        // Only the kernel's own bookkeeping (a watch removed): wait on.
                    }
                    // A signal: the caller sees a request to stop at once.
                    Err(Errno::INTR) if crate::wait::stop_requested().is_some() => return false,
                    Err(Errno::INTR) => {}
                    Err(_) => {
                        std::thread::sleep(left.min(crate::wait::RECHECK));
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
            let Some(fd) = &self.fd else { return true };
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(fd, &mut buf);
            let mut changed = false;
            loop {
                match reader.next() {
                    Ok(event) => {
                        let flags = event.events();
                        if flags.intersects(ReadFlags::QUEUE_OVERFLOW)
                            || (!flags.intersects(ReadFlags::IGNORED)
                                && self.matters(
                                    event.wd(),
                                    flags,
                                    event.file_name().map(|n| n.to_bytes()),
                                ))
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

    impl Drop for Watch {
        fn drop(&mut self) {
            let Some(fd) = self.fd.take() else { return };
            if self.names.is_empty() {
                return; // nothing watched: closing is quick
            }
            if super::KEEP_UNTIL_EXIT.load(std::sync::atomic::Ordering::Relaxed) {
                // Closed by the exit of this process, after its work (see `keep_until_exit`).
                super::KEPT
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(fd);
                return;
            }
            // In the background: whoever dropped the watch goes on at once (a `coord run` to
            // its command, with the lock held). [`super::settle`] waits for it before exit.
            let mut pending = super::PENDING.lock().unwrap_or_else(|e| e.into_inner());
            pending.retain(|h| !h.is_finished());
            let (tx, rx) = std::sync::mpsc::channel::<OwnedFd>();
            match std::thread::Builder::new()
                .name("watch-release".into())
                .spawn(move || {
                    if let Ok(fd) = rx.recv() {
                        hand_off(fd);
                    }
                }) {
                Ok(handle) => {
                    if let Err(back) = tx.send(fd) {
                        hand_off(back.0);
                    }
                    pending.push(handle);
                }
                Err(_) => hand_off(fd),
            }
        }
    }

    /// The helper: `cat` from the usual place (no search along `PATH`), else from `PATH`.
    fn cat() -> &'static str {
        static FOUND: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
        FOUND.get_or_init(|| {
            ["/usr/bin/cat", "/bin/cat"]
                .into_iter()
                .find(|p| Path::new(p).is_file())
                .unwrap_or("cat")
        })
    }

    /// Give the last reference to `fd` to a helper process that lets go of it once this one
    /// has (see the module's notes), or close it here when no helper can be started.
    fn hand_off(fd: OwnedFd) {
        let helper = Command::new(cat())
            .stdin(Stdio::piped())
            .stdout(Stdio::from(fd))
            .stderr(Stdio::null())
            .spawn();
        // The command (and with it this process's copy of the descriptor) is gone here. Closing
        // the helper's input then ends it; it is reaped in the background (a process that
        // exits first leaves that to the system).
        if let Ok(mut child) = helper {
            drop(child.stdin.take());
            let _ = std::thread::Builder::new()
                .name("watch-reaper".into())
                .spawn(move || {
                    let _ = child.wait();
                });
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
                    std::thread::sleep(max.min(crate::wait::RECHECK));
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

/// Watches being let go of in the background (see the Linux watch's notes).
#[cfg(target_os = "linux")]
static PENDING: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> =
    std::sync::Mutex::new(Vec::new());

/// See [`keep_until_exit`].
#[cfg(target_os = "linux")]
static KEEP_UNTIL_EXIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Watches kept open until this process exits.
#[cfg(target_os = "linux")]
static KEPT: std::sync::Mutex<Vec<std::os::fd::OwnedFd>> = std::sync::Mutex::new(Vec::new());

/// From now on, watches dropped by this process stay open until it exits instead of being let
/// go of at once. For a process that waits once and then works on (`coord run`: its command
/// runs, then it releases its locks and exits): the kernel's wait on close then comes at its
/// exit, after the release, and no helper process is started.
pub fn keep_until_exit() {
    #[cfg(target_os = "linux")]
    KEEP_UNTIL_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Wait until every watch dropped so far is let go of. A short-lived process calls this before
/// it exits: a process that exits first closes them itself, and pays the wait they avoid.
pub fn settle() {
    #[cfg(target_os = "linux")]
    {
        let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
        for handle in pending {
            let _ = handle.join();
        }
    }
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

    #[cfg(target_os = "linux")]
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
}
