//! Taking a stale lock over: the record is renamed aside, re-read and compared with what was
//! judged stale; only an unchanged record is dropped, a refreshed one is put back and honoured.

use std::fs;
use std::path::Path;

use super::LockEntry;
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};

/// Remove a stale lock only if still exactly what was judged stale, and then its index entry.
pub(super) fn take_over(root: &Path, e: &LockEntry) -> Result<bool> {
    let gone = || {
        super::index::forget_removed(root, &e.file, &e.agent, &e.lock_path);
        Ok(true)
    };
    let dir = e.lock_path.parent().unwrap_or(Path::new("."));
    let Ok(meta) = fs::symlink_metadata(&e.lock_path) else {
        return gone(); // already gone
    };
    if meta.is_dir() {
        return Err(Error::Failed {
            message: format!(
                "the stale lock `{}` is a folder, not a file: remove it by hand",
                e.lock_path.display()
            ),
        });
    }
    let aside = (fsutil::temp_in(dir).at("create a temporary file in", dir)?).into_temp_path();
    match fsutil::rename(&e.lock_path, &aside) {
        Ok(()) => {}
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return gone();
        }
        Err(Error::Io { source, .. }) => return Err(source).at("move aside", &e.lock_path),
        Err(other) => return Err(other),
    }
    let now_bytes = fsutil::read_capped(&aside, RECORD_CAP).ok();
    let touched = e.mtime.is_some() && fsutil::mtime(&aside) != e.mtime;
    if (now_bytes.is_some() && now_bytes != e.raw) || touched {
        // Refreshed by its holder in the meantime (rewritten, or touched as a hand-made lock is
        // refreshed): put it back and honour it (a copy where hard links do not exist). A new
        // record the holder made at the path meanwhile stands; the moved copy is dropped.
        fsutil::raw::put_back(
            &aside,
            &e.lock_path,
            now_bytes.as_deref().unwrap_or_default(),
        );
        return Ok(false);
    }
    drop(aside); // removes the renamed record
    gone()
}
