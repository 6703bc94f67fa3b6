//! Folder events: a waiter sleeps until something changes in a few folders.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::RECHECK;

/// The folders watched for removals only, each with the name prefixes that matter (`None`:
/// every name); a change in any other folder wakes the waiter.
type Interests = Arc<Mutex<HashMap<PathBuf, Option<Vec<String>>>>>;

/// A subscription to changes in some folders.
pub struct FolderWatch {
    inner: Option<(RecommendedWatcher, Receiver<()>)>,
    removals: Interests,
    /// Every folder watched, and whether the watches are removed until the next wait.
    dirs: Vec<PathBuf>,
    paused: bool,
}

impl FolderWatch {
    /// Watch `dirs` (non-recursively). Folders that cannot be watched are left to the re-check.
    pub fn new(dirs: &[PathBuf]) -> FolderWatch {
        let removals = Interests::default();
        let seen = Arc::clone(&removals);
        let (tx, rx) = channel();
        let watcher = notify::recommended_watcher(move |res: notify::Result<Event>| {
            if res.is_ok_and(|event| matters(&event, &seen)) {
                let _ = tx.send(());
            }
        });
        let mut w = FolderWatch {
            inner: watcher.ok().map(|w| (w, rx)),
            removals,
            dirs: Vec::new(),
            paused: false,
        };
        for dir in dirs {
            w.add(dir);
        }
        w
    }

    /// Watch `dir`, waking only when a name that starts with one of `prefixes` (`None`: any
    /// name) goes away, deleted or renamed to another name, or when the folder itself does.
    pub fn add_removals(&mut self, dir: &Path, prefixes: Option<Vec<String>>) {
        let mut removals = self.removals.lock().unwrap_or_else(|e| e.into_inner());
        let merged = match (removals.remove(dir), prefixes) {
            (Some(Some(a)), Some(b)) => Some([a, b].concat()),
            (None, p) => p,
            _ => None,
        };
        removals.insert(dir.to_path_buf(), merged);
        drop(removals);
        self.add(dir);
    }

    /// Add another folder to the subscription (any change there wakes the waiter).
    pub fn add(&mut self, dir: &Path) {
        if let Some((w, _)) = self.inner.as_mut()
            && !self.paused
        {
            let _ = w.watch(dir, RecursiveMode::NonRecursive);
        }
        if !self.dirs.iter().any(|d| d == dir) {
            self.dirs.push(dir.to_path_buf());
        }
    }

    /// Block until a change is seen or `max` has passed (never longer than [`RECHECK`] when the
    /// watch could not start). Returns whether an event arrived. Pending events are drained.
    ///
    /// A wait that an event ended removes the watches, and the next wait puts them back and
    /// returns at once (what changed in between was not seen: the caller looks again). A woken
    /// waiter most often takes what it waited for and exits, and on Linux the exit would wait
    /// for the kernel to retire watches still in place (milliseconds when events came in
    /// lately); watches removed before the waiter's look are retired while it looks.
    pub fn wait(&mut self, max: Duration) -> bool {
        let Some((w, rx)) = &mut self.inner else {
            std::thread::sleep(max.min(RECHECK));
            return false;
        };
        if std::mem::take(&mut self.paused) {
            for dir in &self.dirs {
                let _ = w.watch(dir, RecursiveMode::NonRecursive);
            }
            return true;
        }
        let got = match rx.recv_timeout(max) {
            Ok(()) => true,
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(max.min(RECHECK));
                false
            }
        };
        if got {
            for dir in &self.dirs {
                let _ = w.unwatch(dir);
            }
            self.paused = true;
        }
        while rx.try_recv().is_ok() {}
        got
    }
}

/// Whether `event` changes what a waiter looks at.
fn matters(event: &Event, removals: &Interests) -> bool {
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
    let removals = removals.lock().unwrap_or_else(|e| e.into_inner());
    event.paths.is_empty()
        || event.paths.iter().enumerate().any(|(i, path)| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if removals.contains_key(path.as_path()) {
                return true; // the watched folder itself
            }
            match path.parent().and_then(|dir| removals.get(dir)) {
                _ if crate::layout::is_temp_name(name) => false,
                None => true,
                Some(prefixes) => {
                    removal(i)
                        && prefixes
                            .as_ref()
                            .is_none_or(|p| p.iter().any(|p| name.starts_with(p.as_str())))
                }
            }
        })
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
        let (short, long) = (Duration::from_millis(300), Duration::from_secs(10));
        assert!(!w.wait(short), "woken by a change that unblocks nothing");
        std::fs::remove_file(&held).unwrap();
        assert!(w.wait(long), "the release woke the waiter");
    }

    #[test]
    fn a_change_wakes_a_plain_watch_and_looking_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"1").unwrap();
        let mut w = FolderWatch::new(&[dir.path().to_path_buf()]);
        let _ = std::fs::read(&p).unwrap();
        let (short, long) = (Duration::from_millis(300), Duration::from_secs(10));
        assert!(!w.wait(short), "looking is not a change");
        std::fs::write(dir.path().join("y"), b"1").unwrap();
        assert!(w.wait(long), "a new name is");
        // Woken, the watch stands down until the next wait, which reports at once that a
        // change may have been missed, then sleeps again until the next one.
        std::fs::write(dir.path().join("z"), b"1").unwrap();
        assert!(w.wait(long), "a change between two waits");
        assert!(!w.wait(short), "nothing changed since");
        std::fs::remove_file(dir.path().join("z")).unwrap();
        assert!(w.wait(long), "watched again");
    }
}
