//! Files kept for reuse. What a replace swaps out of one of coord's own records (a presence, a
//! lock file, a file in `.coord/` but backups), such a record removed, and a spare a process did
//! not use, is renamed into `.coord/recycled/` rather than removed; the next publish in the
//! workspace takes a file from there rather than making one.
//!
//! Why: making a file can cost many times what renaming one does. ext4 without a journal (the
//! disk of many virtual machines and CI runners) looks, for every inode it hands out, at each
//! inode of the group freed in the last half minute, reading its inode-table block; coord makes
//! and removes a few files per command, so each file made costs more the busier the folder:
//! 30 to 90 µs there, against 2 to 6 µs for a rename (docs/performance.md).
//!
//! At most [`SLOTS`] files, named `0` to `7`. A file is taken by renaming it to a temporary name
//! of this process in `.coord/` (a rename has one winner: two processes never share a file),
//! and used only when it is a regular file of this user with no other name, of at most 64 KiB
//! (anything else planted there is left alone), that nobody holds a kernel lock on (a released
//! lock file a waiter still has open); it gets the mode of a new file, and the group one made
//! in its new folder would get (a setgid folder's: see `fit_to_folder`; a file whose group
//! cannot be given is not used), and what it held is cut past the new content. The folder itself is never followed when it is a link. A process
//! killed between taking and publishing leaves a temporary file, swept like any other. Only for
//! folders on a local filesystem (elsewhere every try is a round trip to the server), and only
//! for files in the workspace that enabled it.
//!
//! A reader that opened a file before it was swapped out, and reads it after another process
//! took it for new content, reads that content: a window of the microseconds between an open
//! and its read. Nothing that excludes depends on it: a lock is the creation of its name, and a
//! stale lock is taken over only when what is renamed aside holds the very bytes and mtime that
//! were judged stale (a reused file is always written anew, so its mtime is fresh). At worst a
//! view reads one record as unreadable, once.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

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

/// The largest file kept: records are a few hundred bytes; a big file would make the next small
/// write pay for cutting it.
const MAX_KEPT: u64 = 64 * 1024;

/// A kept file older than this is removed rather than used: other processes sweep temporary
/// names older than an hour, and a file taken keeps its time until it is written.
const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(50 * 60);

/// The file mode creation mask, plus one (0: not known, and nothing is reused).
static UMASK: AtomicU32 = AtomicU32::new(0);

/// Learn the process's file mode creation mask (by setting it and setting it back), for the
/// mode a reused file gets: call it while the process has one thread.
pub fn learn_umask() {
    use rustix::fs::Mode;
    let mask = rustix::process::umask(Mode::from_raw_mode(0o022));
    let _ = rustix::process::umask(mask);
    UMASK.store(mask.as_raw_mode() as u32 + 1, Ordering::Relaxed);
}

/// The mode a file made now in `dir` would have: 0666 less the mask, plus what the folder's
/// sharing adds. `None` while the mask is not known.
fn new_file_mode(dir: &Path) -> Option<u32> {
    let mask = UMASK.load(Ordering::Relaxed).checked_sub(1)?;
    Some((0o666 & !mask) | super::shared_bits(dir, false))
}

/// Whether the pool's folder is a real folder or not there yet (never a link to elsewhere):
/// looked at once per process.
fn dir_is_real(pool: &Pool) -> bool {
    static REAL: OnceLock<bool> = OnceLock::new();
    *REAL.get_or_init(|| match fs::symlink_metadata(&pool.dir) {
        Ok(m) if m.is_symlink() => super::refuse_linked(&pool.dir, true).is_ok(),
        Ok(m) => m.is_dir(),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    })
}

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
    (inside && !OFF.load(Ordering::Relaxed) && dir_is_real(pool)).then_some(pool)
}

/// A file taken from the pool, open for writing from its start under a temporary name in
/// `.coord/` (the publisher cuts what it held past the new content), for publishing at `path`;
/// `None` when the pool is off, has none, or `path` lies outside its workspace.
pub(super) fn take(path: &Path) -> Option<NamedTempFile> {
    use rustix::fs::{CWD, RenameFlags};
    let pool = pool_for(path)?;
    for slot in 0..SLOTS {
        let from = pool.dir.join(slot_name(slot));
        // Anything but a file of ours with one name (planted there) is left where it is; one
        // of ours kept too long goes.
        match fs::symlink_metadata(&from) {
            Ok(m) if reusable(&m) => {
                if m.modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_none_or(|a| a > MAX_AGE)
                {
                    let _ = fs::remove_file(&from);
                    continue;
                }
            }
            _ => continue,
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
    meta.is_file()
        && meta.nlink() == 1
        && meta.len() <= MAX_KEPT
        && meta.uid() == rustix::process::geteuid().as_raw()
}

/// The file just taken at `name`, opened, when it is still [`reusable`]; given the mode a new
/// file in `dir` gets (nothing is reused while the mask is not known). Not emptied: the writer
/// writes from the start and cuts what is left beyond (emptying a file costs ext4 a hundred
/// times more than cutting it short, and makes it write the file out at close).
fn usable(name: &Path, dir: &Path) -> Option<File> {
    use std::os::unix::fs::PermissionsExt;
    let mode = new_file_mode(dir)?;
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
    if meta.mode() & 0o7777 != mode {
        file.set_permissions(fs::Permissions::from_mode(mode))
            .ok()?;
    }
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
            // A file on another filesystem (a mount inside the workspace) is only removed.
            Err(Errno::XDEV) => return false,
            Err(_) => {
                OFF.store(true, Ordering::Relaxed);
                return false;
            }
        }
    }
    false
}

/// Whether `path` is one of coord's own records, whose file is coord's to reuse once done with:
/// a file in `.coord/`, a lock, presence or handshake file. Not a user's file that coord
/// replaced (a note, a dialogue, a tracker: its inode's history, extended attributes or an
/// access list, stays out of coord's records), nor a copy of one (a backup, and its older
/// generations in `.coord/backups/`: the user's content under the user's mode).
fn is_record(pool: &Pool, path: &Path) -> bool {
    if path.starts_with(&pool.state) {
        return !path.starts_with(pool.state.join(layout::BACKUPS_DIR));
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    layout::parse_lock_name(name).is_some()
        || layout::presence_agent(name).is_some()
        || layout::handshake_agent(name).is_some()
}

fn slot_name(slot: usize) -> &'static str {
    const NAMES: [&str; SLOTS] = ["0", "1", "2", "3", "4", "5", "6", "7"];
    NAMES[slot]
}
