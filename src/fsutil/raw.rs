//! The bare system calls, `io::Error` as is, for protocols that tell errors apart themselves
//! (the lease of `arbiter::lease`, the aside-move of a stale lock). None goes through a
//! symlinked state folder; only `EBUSY` on a network filesystem is tried again.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::read::refuse_linked;

static NETWORK_FS: AtomicBool = AtomicBool::new(false);

/// Whether this process works on a network filesystem (see [`mark_network_fs`]).
pub(super) fn on_network_fs() -> bool {
    NETWORK_FS.load(Ordering::Relaxed)
}

/// From now on, publish files as network filesystems need (closed, renamed again while busy).
pub fn mark_network_fs() {
    NETWORK_FS.store(true, Ordering::Relaxed);
}

/// `link(2)`: `to` names the file at `from`; fails when `to` exists, never replaces.
pub fn hard_link(from: &Path, to: &Path) -> io::Result<()> {
    refuse_linked(from, false)?;
    refuse_linked(to, false)?;
    if no_links_here() {
        return Err(rustix::io::Errno::PERM.into());
    }
    fs::hard_link(from, to)
}

/// `rename(2)`: `from` moves to `to`, replacing it.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    refuse_linked(from, false)?;
    refuse_linked(to, false)?;
    while_busy(|| fs::rename(from, to))
}

/// `unlink(2)` of a file or link (never a link's target).
pub fn remove_file(path: &Path) -> io::Result<()> {
    refuse_linked(path, false)?;
    while_busy(|| fs::remove_file(path))
}

/// `mkdir(2)` of one folder (mode 0777 less the umask).
pub fn create_dir(dir: &Path) -> io::Result<()> {
    refuse_linked(dir, false)?;
    fs::create_dir(dir)?;
    super::fit_dir_mode(dir);
    Ok(())
}

/// Remove the folder `dir` when it is empty; whether it was (any failure reads as `false`).
pub fn remove_empty_dir(dir: &Path) -> bool {
    refuse_linked(dir, false).is_ok() && fs::remove_dir(dir).is_ok()
}

/// Create `path` with `O_EXCL` (never through a symlink) holding `bytes`, for filesystems
/// without hard links. `Ok(false)` when something is there already.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    refuse_linked(path, false)?;
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

/// Put the record moved aside to `aside` back at `path`, never over a record standing there: a
/// link, else (no hard links, as on SMB) an exclusive create of the same bytes.
pub fn put_back(aside: &Path, path: &Path, bytes: &[u8]) {
    if let Err(e) = hard_link(aside, path)
        && e.kind() != io::ErrorKind::AlreadyExists
    {
        let _ = create_exclusive(path, bytes);
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: behave as on a filesystem without hard links.
    static NO_LINKS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tests: run `f` as on a filesystem without hard links (`EPERM`, as on SMB).
#[cfg(test)]
pub(crate) fn without_hard_links<T>(f: impl FnOnce() -> T) -> T {
    NO_LINKS.with(|n| n.set(true));
    let out = f();
    NO_LINKS.with(|n| n.set(false));
    out
}

fn no_links_here() -> bool {
    #[cfg(test)]
    return NO_LINKS.with(std::cell::Cell::get);
    #[cfg(not(test))]
    false
}

/// Whether a failed `link(2)` says the filesystem has no hard links rather than that the name
/// is taken (sshfs also says `EPERM` for a taken name: look whether it opens first).
pub fn no_hard_links(e: &io::Error) -> bool {
    use rustix::io::Errno;
    [Errno::PERM, Errno::OPNOTSUPP, Errno::NOSYS, Errno::MLINK]
        .iter()
        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()))
}

/// `op`, tried again while it fails with `EBUSY` on a network filesystem.
fn while_busy<T>(op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    retry(|e| is_busy(e) && on_network_fs(), op)
}

/// `op`, tried again for up to 3 s (pauses from 0.5 ms doubling to 20 ms) while `passing` says
/// its error is one the file server will get over.
pub(super) fn retry<T>(
    passing: impl Fn(&io::Error) -> bool,
    mut op: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let mut pause = Duration::from_micros(500);
    loop {
        match op() {
            Err(e) if passing(&e) && started.elapsed() < Duration::from_secs(3) => {
                std::thread::sleep(pause + Duration::from_micros(crate::host::random_u64() % 500));
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Whether `e` is `EBUSY`.
pub fn is_busy(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::BUSY.raw_os_error())
}
