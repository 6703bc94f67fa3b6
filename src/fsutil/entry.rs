//! Entries of a folder: remove, rename, link, create folders, touch, chmod, fsync a folder.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::SystemTime;

use super::{Access, linked_ancestor, not_regular, open_nofollow};
use crate::error::{IoResultExt, Result};

/// fsync a folder, so a rename in it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let folder = File::open(dir).at("sync folder", dir)?;
    folder.sync_all().at("sync folder", dir)
}

/// Remove `path` (a file or a link, never a link's target). `Ok(false)` when it was not there.
pub fn remove(path: &Path) -> Result<bool> {
    match super::raw::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).at("remove", path),
    }
}

/// Remove the folder `dir` and everything in it, never following a link: a link, at `dir` or
/// inside it, is removed as itself.
pub fn remove_tree(dir: &Path) -> Result<bool> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).at("remove", dir),
        Ok(m) if !m.is_dir() => return remove(dir),
        Ok(_) => {}
    }
    for name in super::list_names(dir).at("list", dir)? {
        remove_tree(&dir.join(name))?;
    }
    super::read::refuse_linked(dir, false).at("remove", dir)?;
    fs::remove_dir(dir).at("remove", dir)?;
    Ok(true)
}

/// Make `path` an empty marker file (and missing folders); nothing when something is there.
pub fn empty_marker(path: &Path) -> Result<()> {
    use super::raw;
    let made = match raw::create_exclusive(path, b"") {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            ensure_dir(super::parent_of(path))?;
            raw::create_exclusive(path, b"")
        }
        other => other,
    };
    made.map(drop).at("create", path)
}

/// Rename `from` to `to`, replacing `to`.
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    super::raw::rename(from, to).at("rename", from)
}

/// Create `dir` and its parents, refusing a symlink at `dir` or at any folder above it.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    super::read::refuse_linked(dir, true).at("create folder", dir)?;
    // A symlinked folder above `dir` (`.metadata -> /elsewhere`, `archive -> /elsewhere`) would
    // make `create_dir_all` and every later write land outside the workspace.
    if let Some(link) = linked_ancestor(dir) {
        return Err(super::symlink_refused()).at("create folder", &link);
    }
    // Someone may be removing the folder while it is created (`rm -rf .coord` while agents
    // wait): mkdir then finds it "exists" and it is gone a moment later.
    let mut tries = 0;
    let e = loop {
        match create_dir_all_fitted(dir) {
            Ok(()) => return Ok(()),
            Err(_) if is_dir(dir) => return Ok(()),
            Err(_) if fs::symlink_metadata(dir).is_ok() => {
                break io::Error::new(io::ErrorKind::AlreadyExists, "exists and is not a folder");
            }
            Err(_) if tries < 20 => tries += 1,
            Err(e) => break e,
        }
    };
    Err(e).at("create folder", dir)
}

/// Whether a folder (not a link to one) stands at `path`.
fn is_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// `create_dir_all`, each folder given the mode its parent's sharing asks for.
fn create_dir_all_fitted(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => return Err(io::Error::from(io::ErrorKind::AlreadyExists)),
        Err(_) => {}
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all_fitted(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {
            super::fit_dir_mode(dir);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && is_dir(dir) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Set the modification time of `path` to now (a heartbeat for wait tickets).
pub fn touch(path: &Path) -> Result<()> {
    let (file, _) = open_nofollow(path, Access::Write).at("touch", path)?;
    file.set_modified(SystemTime::now()).at("touch", path)
}

/// Mark the regular file at `path` as written now (`UTIME_NOW`: the file server's clock) when it
/// already holds exactly `bytes`, content and inode kept; returns whether it did.
pub fn touch_if_same(path: &Path, bytes: &[u8]) -> bool {
    let Ok((file, meta)) = open_nofollow(path, Access::Read) else {
        return false;
    };
    meta.len() == bytes.len() as u64
        && super::read::read_open_capped(&file, &meta, meta.len()).is_ok_and(|have| have == bytes)
        && set_mtime(&file, rustix::fs::UTIME_NOW).is_ok()
}

/// Set the modification time of the regular file at `path` to the epoch, content and inode
/// kept: how a record says it has been used without removing it.
pub fn set_mtime_epoch(path: &Path) -> Result<()> {
    let (file, _) = open_nofollow(path, Access::Read).at("set the time of", path)?;
    let set = set_mtime(&file, 0).map_err(io::Error::from);
    set.at("set the time of", path)
}

/// Set an open file's modification time (`nanos` 0: the epoch, or `UTIME_NOW`).
fn set_mtime(file: &File, nanos: rustix::fs::Nsecs) -> rustix::io::Result<()> {
    use rustix::fs::{Timespec, Timestamps, UTIME_OMIT};
    let at = |tv_nsec| Timespec { tv_sec: 0, tv_nsec };
    let times = Timestamps {
        last_access: at(UTIME_OMIT),
        last_modification: at(nanos),
    };
    rustix::fs::futimens(file, &times)
}

/// Rewrite the small regular file at `path` with `bytes` in place, making it when missing.
pub fn rewrite_in_place(path: &Path, bytes: &[u8]) -> Result<bool> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let opened = open_nofollow(path, Access::ReadWriteOrCreate).ok();
    let Some((file, _)) = opened.filter(|(_, meta)| meta.nlink() == 1) else {
        return Ok(false);
    };
    file.write_all_at(bytes, 0).at("write", path)?;
    file.set_len(bytes.len() as u64).at("write", path)?;
    Ok(true)
}

/// Make the regular file at `path` executable by whoever may read it (a git hook script).
pub fn make_executable(path: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(path).at("inspect", path)?;
    if !meta.is_file() {
        return Err(not_regular()).at("make executable", path);
    }
    let mode = meta.permissions().mode();
    let exec = (mode & 0o444) >> 2;
    fs::set_permissions(path, fs::Permissions::from_mode(mode | exec)).at("make executable", path)
}
