//! Work a long-running process does between requests rather than during them: temporary files
//! made ahead of need, and the removal of content a replace swapped out.
//!
//! A server that answers one request at a time (`coord mcp`) has idle time between requests
//! and none during one. Publishing a record costs most where the filesystem makes or frees an
//! inode: the temporary file it is written to, and the old content a replace leaves behind.
//! Neither is part of what a reader sees, so neither needs to happen while the client waits.
//! Such a process calls [`keep_spares`] once and [`tidy`] after each answer. A lock acquire on
//! a local folder does the same on a small scale: the files its first try publishes under the
//! workspace mutex are made before it takes the mutex, and a waiter makes those of the try that
//! will succeed while it waits. A process that enabled spares calls [`discard_spares`] before
//! it exits (the `coord` binary does, on every path); spares left by a killed process are swept
//! by the next coord in the folder, as any temporary file whose process is gone.
//!
//! Spares are temporary files in `.coord/`, named like every coord temporary file, so a killed
//! server's spares are swept like any other leftover: made empty, or taken from the files kept
//! for reuse ([`recycle`](super::recycle)), to which they go back unused. A spare is used only
//! when it is still the file this process readied, as it was, and less than half an hour old
//! (the sweep of other processes removes temporary files older than an hour). Made in
//! `.coord/`, it is given the group a file made beside its record would get (a setgid folder's)
//! before it is published there, or left for a file made there.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tempfile::{NamedTempFile, TempPath};

/// A spare older than this is replaced rather than used.
const MAX_AGE: Duration = Duration::from_secs(30 * 60);

struct Spare {
    file: NamedTempFile,
    dev: u64,
    ino: u64,
    /// Its size when made ready: 0 for a file made, the old content's for a file taken from
    /// those kept for reuse.
    len: u64,
    /// Taken from the files kept for reuse ([`recycle`](super::recycle)), to go back there
    /// when not used.
    borrowed: bool,
    made: Instant,
}

struct Ahead {
    dir: PathBuf,
    want: usize,
    spares: Vec<Spare>,
    /// Names holding content a replace swapped out, removed by the next [`tidy`].
    later: Vec<TempPath>,
}

static AHEAD: Mutex<Option<Ahead>> = Mutex::new(None);

fn state() -> MutexGuard<'static, Option<Ahead>> {
    AHEAD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// From now on, keep `want` empty temporary files ready in `dir` (the workspace's `.coord/`),
/// and leave removals of replaced content to [`tidy`] (or to [`discard_spares`], at exit).
/// Makes the spares wanted at once; spares already made are kept (beyond `want`, removed).
pub fn keep_spares(dir: &Path, want: usize) {
    set_want(dir, |_| want);
}

/// [`keep_spares`], never lowering a number already wanted (a process about to wait: what the
/// wait ends with, publishing its records, can then use files made while it waited).
pub fn keep_spares_at_least(dir: &Path, want: usize) {
    set_want(dir, |now| now.max(want));
}

fn set_want(dir: &Path, want: impl FnOnce(usize) -> usize) {
    {
        let mut state = state();
        match state.as_mut() {
            Some(ahead) if ahead.dir == dir => {
                ahead.want = want(ahead.want);
                let keep = ahead.want;
                ahead.spares.truncate(keep);
            }
            _ => {
                let want = want(0);
                *state = Some(Ahead {
                    dir: dir.to_path_buf(),
                    want,
                    spares: Vec::with_capacity(want),
                    later: Vec::new(),
                });
            }
        }
    }
    tidy();
}

/// Between requests: remove the content replaces swapped out, and make spares up to the number
/// wanted. Does nothing unless [`keep_spares`] was called. Failures are ignored: a missing
/// spare only means the next publish makes its own temporary file.
pub fn tidy() {
    let mut state = state();
    let Some(ahead) = state.as_mut() else {
        return;
    };
    for old in ahead.later.drain(..) {
        let _ = old.close();
    }
    ahead.spares.retain(|s| s.made.elapsed() < MAX_AGE);
    while ahead.spares.len() < ahead.want {
        let (file, borrowed) = match super::recycle::take(&ahead.dir) {
            Some(file) => (file, true),
            None => match super::temp_in(&ahead.dir) {
                Ok(file) => (file, false),
                Err(_) => break,
            },
        };
        let Ok(meta) = file.as_file().metadata() else {
            break;
        };
        ahead.spares.push(Spare {
            file,
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            borrowed,
            made: Instant::now(),
        });
    }
}

/// Remove the spares (those taken from the files kept for reuse go back there) and everything
/// left for later, and stop keeping them (at exit). A spare this process made is removed, not
/// kept: a command that published nothing leaves the folder as it found it.
pub fn discard_spares() {
    let Some(ahead) = state().take() else {
        return;
    };
    for spare in ahead.spares {
        if !still_ours(&spare) {
            // Swept, or something else now stands at its name: not ours to remove.
            let _ = spare.file.into_temp_path().keep();
        } else if spare.borrowed {
            let _ = super::recycle::give_back_spare(spare.file);
        }
    }
}

/// Whether the spare is still the file this process readied, as it was.
fn still_ours(spare: &Spare) -> bool {
    fs::symlink_metadata(spare.file.path()).is_ok_and(|m| {
        m.is_file() && m.dev() == spare.dev && m.ino() == spare.ino && m.len() == spare.len
    })
}

/// A spare, when one is kept and still what it was made as, and whether it holds old content
/// (a file used before, to be cut after what is written); `None` otherwise.
pub(super) fn take() -> Option<(NamedTempFile, bool)> {
    let mut state = state();
    let ahead = state.as_mut()?;
    while let Some(spare) = ahead.spares.pop() {
        if !still_ours(&spare) {
            // Swept, or something else now stands at its name: not ours to remove.
            let _ = spare.file.into_temp_path().keep();
        } else if spare.made.elapsed() < MAX_AGE {
            return Some((spare.file, spare.len > 0));
        }
        // Ours but old (a long wait): others may sweep it any moment; removed on drop.
    }
    None
}

/// Whether the removal of `old` (a name holding content a replace swapped out) is left to the
/// next [`tidy`]: when spares are kept and `old` is one of them, in `.coord/`. A temporary name
/// beside a user's file is removed at once, not left there while a command starts or an answer
/// goes out.
pub(super) fn defers(old: &Path) -> bool {
    state()
        .as_ref()
        .is_some_and(|ahead| old.parent() == Some(ahead.dir.as_path()))
}

/// Leave the removal of `old` to the next [`tidy`] (see [`defers`]); removed at once when
/// spares stopped being kept meanwhile.
pub(super) fn later(old: TempPath) {
    if let Some(ahead) = state().as_mut() {
        ahead.later.push(old);
    }
}
