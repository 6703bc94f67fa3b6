//! Backups: `FILE.bak` beside FILE, written before any change coord makes or allows.
//!
//! A backup is a whole copy published by atomic rename: a reader sees the previous backup or
//! the new one, never a mix. A symlink planted at `FILE.bak` is replaced, never followed, and
//! nothing but `FILE.bak` is ever touched. Only regular files are backed up. A `FILE.bak` that
//! already is a regular file with the same content and mode is not rewritten.

use std::fs;

use crate::error::Result;
use crate::fsutil;
use crate::layout;
use crate::workspace::Target;

/// Copy `target` to `target.bak` when it is a regular file. Returns the backup's path relative
/// to the root, or `None` when there was nothing to back up.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the file when the copy fails.
pub fn write(target: &Target) -> Result<Option<String>> {
    match fs::symlink_metadata(&target.abs) {
        Ok(meta) if meta.is_file() => {}
        _ => return Ok(None),
    }
    let dst = layout::backup(&target.abs);
    // A backup that already holds exactly this content (and mode) is left as it is: locking a
    // file again without changing it then costs no write, no new inode, no rename.
    if !fsutil::same_regular_files(&target.abs, &dst) {
        fsutil::copy_replace(&target.abs, &dst)?;
    }
    Ok(Some(format!("{}{}", target.rel, layout::BACKUP_SUFFIX)))
}

/// The backup of `target` as it stands (a regular `FILE.bak`), relative to the root; `None`
/// when there is none.
pub fn existing(target: &Target) -> Option<String> {
    fs::symlink_metadata(layout::backup(&target.abs))
        .is_ok_and(|m| m.is_file())
        .then(|| format!("{}{}", target.rel, layout::BACKUP_SUFFIX))
}

/// A backup copied aside and fsynced, not yet published: [`Staged::commit`] puts it at
/// `FILE.bak` with one rename. Copying before taking the workspace mutex keeps the mutex
/// short; the copy is of a file whose lock the caller holds, so it cannot change meanwhile
/// (through coord). Dropping it unpublished removes the copy.
#[derive(Debug)]
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    dst: std::path::PathBuf,
    rel: String,
}

/// Copy `target` aside for a backup when it is a regular file; `None` when there is nothing
/// to back up.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the file when the copy fails.
pub fn stage(target: &Target) -> Result<Option<Staged>> {
    match fs::symlink_metadata(&target.abs) {
        Ok(meta) if meta.is_file() => {}
        _ => return Ok(None),
    }
    let dst = layout::backup(&target.abs);
    let dir = dst.parent().unwrap_or(std::path::Path::new("."));
    let (tmp, _) = fsutil::copy_to_temp(&target.abs, dir, true)?;
    Ok(Some(Staged {
        tmp,
        dst,
        rel: format!("{}{}", target.rel, layout::BACKUP_SUFFIX),
    }))
}

impl Staged {
    /// Publish the copy at `FILE.bak` (replacing it, never following a link there). Returns
    /// the backup's path relative to the root.
    ///
    /// # Errors
    ///
    /// [`Error::Io`](crate::Error::Io) naming `FILE.bak`.
    pub fn commit(self) -> Result<String> {
        fsutil::persist(self.tmp, &self.dst)?;
        Ok(self.rel)
    }
}
