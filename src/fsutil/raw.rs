//! The bare system calls, `io::Error` as is, for protocols that tell errors apart themselves
//! (the NFS-safe lease of `arbiter::lease`, the aside-move of a stale lock): nothing here names
//! a path in its error or retries.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `link(2)`: `to` names the file at `from`; fails when `to` exists, never replaces.
///
/// # Errors
///
/// The system's error.
pub fn hard_link(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)
}

/// `rename(2)`: `from` moves to `to`, replacing it.
///
/// # Errors
///
/// The system's error.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)
}

/// `unlink(2)` of a file or link (never a link's target).
///
/// # Errors
///
/// The system's error.
pub fn remove_file(path: &Path) -> io::Result<()> {
    fs::remove_file(path)
}

/// `mkdir(2)` of one folder (mode 0777 less the umask).
///
/// # Errors
///
/// The system's error.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir(dir)?;
    super::fit_dir_mode(dir);
    Ok(())
}

/// Remove the folder `dir` when it is empty. Returns whether it was removed; any failure (not
/// empty, gone, not a folder) reads as `false`.
pub fn remove_empty_dir(dir: &Path) -> bool {
    fs::remove_dir(dir).is_ok()
}

/// Create `path` with `O_EXCL` (never through a symlink) holding `bytes`, for filesystems
/// without hard links. `Ok(false)` when something is there already.
///
/// # Errors
///
/// The system's error.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(path)
    {
        Ok(mut f) => {
            super::fit_file_mode(&f, super::parent_of(path));
            f.write_all(bytes)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}
