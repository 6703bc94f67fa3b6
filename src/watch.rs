//! Waiting for a condition on disk without polling every few seconds.
//!
//! A [`FolderWatch`] subscribes to events in a few folders (inotify on Linux, through `notify`)
//! and wakes its waiter on any change there. Because network filesystems send no events, and
//! because a watch can fail to start, every wait is also bounded by a short re-check interval:
//! events make waits fast, the re-check makes them certain.
//!
//! Subscribe first, then test the condition, then wait: a change that lands between the test
//! and the wait is still seen.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use notify::event::ModifyKind;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// How often a waiter re-checks even without an event (network filesystems send none).
pub const RECHECK: Duration = Duration::from_millis(500);

/// A subscription to changes in some folders.
pub struct FolderWatch {
    watcher: Option<RecommendedWatcher>,
    rx: Receiver<()>,
}

impl FolderWatch {
    /// Watch `dirs` (non-recursively). Folders that cannot be watched are left to the re-check.
    pub fn new(dirs: &[PathBuf]) -> FolderWatch {
        let (tx, rx) = channel();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if res.is_ok_and(|event| is_change(&event.kind)) {
                let _ = tx.send(());
            }
        })
        .ok()
        .map(|mut w| {
            for dir in dirs {
                let _ = w.watch(dir, RecursiveMode::NonRecursive);
            }
            w
        });
        FolderWatch { watcher, rx }
    }

    /// Watch `dir` and every folder below it (a whole workspace, for `coord watch`).
    pub fn recursive(dir: &std::path::Path) -> FolderWatch {
        let mut w = FolderWatch::new(&[]);
        if let Some(watcher) = w.watcher.as_mut()
            && watcher.watch(dir, RecursiveMode::Recursive).is_err()
        {
            w.watcher = None;
        }
        w
    }

    /// Add another folder to the subscription.
    pub fn add(&mut self, dir: &std::path::Path) {
        if let Some(w) = self.watcher.as_mut() {
            let _ = w.watch(dir, RecursiveMode::NonRecursive);
        }
    }

    /// Block until a change is seen or `max` has passed (never longer than [`RECHECK`] when the
    /// watch could not start). Returns whether an event arrived. Pending events are drained.
    pub fn wait(&self, max: Duration) -> bool {
        let max = if self.watcher.is_some() {
            max
        } else {
            max.min(RECHECK)
        };
        let got = match self.rx.recv_timeout(max) {
            Ok(()) => true,
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(max);
                false
            }
        };
        while self.rx.try_recv().is_ok() {}
        got
    }
}

/// Whether an event can change what a waiter looks at. Opening, reading and closing a file
/// (notify reports them as access events) and attribute changes change nothing: waking on them
/// would make every waiter wake itself, and each other, by merely looking. (Setting an mtime,
/// as a waiter touching its ticket does, arrives as a data change: that wakes the queue's other
/// waiters once per touch interval, which is bounded.)
fn is_change(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_))
    )
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
