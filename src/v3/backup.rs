//! Backups: `FILE.bak` beside FILE, written before any change coord makes or allows.
//!
//! A backup is a whole copy published by atomic rename: a reader sees the previous backup or
//! the new one, never a mix. A symlink planted at `FILE.bak` is replaced, never followed, and
//! nothing but `FILE.bak` is ever touched. Only regular files are backed up.

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
    fsutil::copy_replace(&target.abs, &dst)?;
    Ok(Some(format!("{}{}", target.rel, layout::BACKUP_SUFFIX)))
}
