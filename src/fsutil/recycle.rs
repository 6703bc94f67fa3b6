//! Files kept for reuse. What a replace swaps out of one of coord's own files (a presence, a lock
//! file, a backup, a file in `.coord/`), such a file removed, and a spare a process did not use,
//! is renamed into `.coord/recycled/` rather than removed; the next publish in the workspace
//! takes a file from there rather than making one.
//!
//! Why: making a file can cost many times what renaming one does. ext4 without a journal (the
//! disk of many virtual machines and CI runners) looks, for every inode it hands out, at each
//! inode of the group freed in the last half minute, reading its inode-table block; coord makes
//! and removes a few files per command, so each file made costs more the busier the folder:
//! 30 to 90 µs there, against 2 to 6 µs for a rename (docs/performance.md).
//!
//! At most [`SLOTS`] files, named `0` to `7`. A file is taken by renaming it to a temporary name
//! of this process in `.coord/` (a rename has one winner: two processes never share a file),
//! and used only when it is a regular file of this user with no other name (anything else
//! planted there is left alone) that nobody holds a kernel lock on (a released lock file a
//! waiter still has open); what it held is cut past the new content. A process killed between
//! taking and publishing leaves a temporary file, swept like any other. Only for folders on a
//! local filesystem (elsewhere every try is a round trip to the server), and only for files in
//! the workspace that enabled it.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tempfile::{NamedTempFile, TempPath};

use crate::layout;

/// How many files are kept.
pub const SLOTS: usize = 8;

struct Pool {
    /// The workspace root: only files under it (or in `.coord/`, which a linked worktree shares
    /// with its main one) are published from, or given to, the pool.
    root: PathBuf,
    /// `.coord/`, where a taken file gets its temporary name.
    state: PathBuf,
    /// `.coord/recycled/`.
    dir: PathBuf,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// Set when the pool cannot be used here after all (a rename refused for another reason than a
/// missing or taken name): from then on files are made and removed as usual.
static OFF: AtomicBool = AtomicBool::new(false);

/// Reuse files in the workspace at `root`, whose state folder is `state` (`.coord/`), from now
/// on. The first workspace a process enables is the one it recycles in; a later call is ignored.
pub fn recycle_in(root: &Path, state: &Path) {
    let _ = POOL.get_or_init(|| Pool {
        root: root.to_path_buf(),
        state: state.to_path_buf(),
        dir: state.join(layout::RECYCLED_DIR),
    });
}

fn pool_for(path: &Path) -> Option<&'static Pool> {
    let pool = POOL.get()?;
    let inside = path.starts_with(&pool.root) || path.starts_with(&pool.state);
    (inside && !OFF.load(Ordering::Relaxed)).then_some(pool)
}

/// A file taken from the pool, open for writing from its start under a temporary name in
/// `.coord/` (the publisher cuts what it held past the new content), for publishing at `path`;
/// `None` when the pool is off, has none, or `path` lies outside its workspace.
pub(super) fn take(path: &Path) -> Option<NamedTempFile> {
    use rustix::fs::{CWD, RenameFlags};
    let pool = pool_for(path)?;
    for slot in 0..SLOTS {
        let from = pool.dir.join(slot_name(slot));
        // Anything but a file of ours with one name (planted there) is left where it is.
        if !fs::symlink_metadata(&from).is_ok_and(|m| reusable(&m)) {
            continue;
        }
        let taken = super::atomic::temp_builder().make_in(&pool.state, |to| {
            rustix::fs::renameat_with(CWD, &from, CWD, to, RenameFlags::NOREPLACE)?;
            Ok(to.to_path_buf())
        });
        match taken {
            Ok(tmp) => {
                let (_, name) = tmp.into_parts();
                if let Some(file) = usable(&name, super::parent_of(path)) {
                    return Some(NamedTempFile::from_parts(file, name));
                }
                // Swapped for something else meanwhile: that name goes (only the name, for
                // a link; a folder cannot be removed this way and stays, as a temporary name).
                drop(name);
            }
            // Taken by another process meanwhile.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => {
                OFF.store(true, Ordering::Relaxed);
                return None;
            }
        }
    }
    None
}

/// Whether a file with these stat data may be reused: a regular file of this user with no
/// other name (a hard link to a user's file never is).
fn reusable(meta: &fs::Metadata) -> bool {
    meta.is_file() && meta.nlink() == 1 && meta.uid() == rustix::process::geteuid().as_raw()
}

/// The file just taken at `name`, opened, when it is still [`reusable`]; given the bits a new
/// file in `dir` gets. Not emptied: the writer writes from the start and cuts what is left
/// beyond (emptying a file costs ext4 a hundred times more than cutting it short, and makes it
/// write the file out at close). An old file gets the current time, so that no sweep takes it
/// for a leftover under its temporary name.
fn usable(name: &Path, dir: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc_flags())
        .open(name)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !reusable(&meta) {
        return None;
    }
    // A released lock file or ticket may still be open in a waiter, which learns of the
    // release through its kernel lock: one still locked by anyone is not reused. Taken here, the
    // lock goes when the file is closed (a file published locked keeps it).
    file.try_lock().ok()?;
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_none_or(|age| age > std::time::Duration::from_secs(600));
    if old {
        file.set_modified(std::time::SystemTime::now()).ok()?;
    }
    super::fit_file_mode(&file, dir);
    Some(file)
}

/// `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`: a symlink is not followed, a FIFO does not block.
fn libc_flags() -> i32 {
    use rustix::fs::OFlags;
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32
}

/// Keep `old`, which holds what a replace of `path` swapped out, for reuse; given back when it
/// cannot be kept (the pool is off or full, `path` is not one of coord's own records, `old` is
/// not a regular file of this user with one name), for the caller to remove.
pub(super) fn give_back(old: TempPath, path: &Path) -> Result<(), TempPath> {
    let Some(pool) = pool_for(path) else {
        return Err(old);
    };
    if !is_record(pool, path) {
        return Err(old);
    }
    if !fs::symlink_metadata(&old).is_ok_and(|m| reusable(&m)) {
        return Err(old);
    }
    kept(old)
}

/// Remove `path`, one of coord's own records, by keeping its file for reuse; `false` (nothing
/// done) when it cannot be kept, for the caller to remove it.
pub(super) fn keep_removed(path: &Path) -> bool {
    let Some(pool) = pool_for(path) else {
        return false;
    };
    is_record(pool, path) && fs::symlink_metadata(path).is_ok_and(|m| reusable(&m)) && keep(path)
}

/// Keep the spare `tmp` (a file this process made or took, never published) for reuse.
pub(super) fn give_back_spare(tmp: NamedTempFile) -> Result<(), TempPath> {
    let (_, name) = tmp.into_parts();
    if POOL.get().is_none() || OFF.load(Ordering::Relaxed) {
        return Err(name);
    }
    kept(name)
}

/// [`keep`] of a temporary file: its name is not removed once kept.
fn kept(old: TempPath) -> Result<(), TempPath> {
    if keep(&old) {
        let _ = old.keep();
        Ok(())
    } else {
        Err(old)
    }
}

/// Rename `old` to the first free slot, making the folder when it is missing. Whether it was.
fn keep(old: &Path) -> bool {
    use rustix::fs::{CWD, RenameFlags};
    use rustix::io::Errno;
    let Some(pool) = POOL.get() else {
        return false;
    };
    let mut made_dir = false;
    let mut slot = 0;
    while slot < SLOTS {
        let to = pool.dir.join(slot_name(slot));
        match rustix::fs::renameat_with(CWD, old, CWD, &to, RenameFlags::NOREPLACE) {
            Ok(()) => return true,
            Err(Errno::EXIST) => slot += 1,
            // Gone (swept), or the folder is missing: made once.
            Err(Errno::NOENT) => {
                if made_dir || fs::symlink_metadata(old).is_err() {
                    return false;
                }
                made_dir = true;
                if super::ensure_dir(&pool.dir).is_err() {
                    return false;
                }
            }
            Err(_) => {
                OFF.store(true, Ordering::Relaxed);
                return false;
            }
        }
    }
    false
}

/// Whether `path` is one of coord's own files, whose file is coord's to reuse once done with:
/// a file in `.coord/`, a lock, backup, presence or handshake file. Not a user's file that
/// coord replaced (a note, a dialogue, a tracker): its inode's history (extended attributes, an
/// access list) stays out of coord's files.
fn is_record(pool: &Pool, path: &Path) -> bool {
    if path.starts_with(&pool.state) {
        return true;
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    layout::parse_lock_name(name).is_some()
        || layout::is_backup_name(name)
        || layout::presence_agent(name).is_some()
        || layout::handshake_agent(name).is_some()
}

fn slot_name(slot: usize) -> &'static str {
    const NAMES: [&str; SLOTS] = ["0", "1", "2", "3", "4", "5", "6", "7"];
    NAMES[slot]
}
