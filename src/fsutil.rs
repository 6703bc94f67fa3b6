//! Every write coord makes to disk, every capped read, and the workspace mutex.
//!
//! Invariants kept here, so no other module has to think about them:
//!
//! - A file coord publishes never appears half-written: content goes to a unique temporary file
//!   in the target's own folder (`.coord-<host>-<pid>-XXXXXX.tmp`), which is then linked or renamed
//!   into place. [`create_new`] never replaces anything; [`replace`] replaces atomically;
//!   [`replace_durable`] also fsyncs the file and the folder (for content that matters).
//! - Creating or replacing never follows a symlink: `rename` replaces a link itself, and the
//!   temporary file is created with `O_EXCL`.
//! - Reads of state files are capped in size, never follow a symlink, never block on a FIFO,
//!   and refuse anything but a regular file.
//! - Temporary files left behind by a killed process are swept by the next coord in that folder
//!   ([`sweep_temps`]): at once when their process is known gone, after an hour otherwise.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::{Mode, OFlags};
use tempfile::NamedTempFile;

use crate::error::{IoResultExt, Result};
use crate::host;
use crate::layout;

/// Size cap for small state files (presence, lock, handshake, tickets).
pub const RECORD_CAP: u64 = 64 * 1024;

/// Read at most `cap` bytes of a regular file, without following a symlink or blocking on a FIFO.
///
/// # Errors
///
/// `NotFound` when it does not exist; `InvalidData` when it is not a regular file or is larger
/// than `cap`; any other open/read error as is.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            io::Error::new(io::ErrorKind::InvalidData, "is a symlink (not followed)")
        } else {
            io::Error::from(e)
        }
    })?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "is not a regular file",
        ));
    }
    if meta.len() > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is larger than {cap} bytes"),
        ));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is larger than {cap} bytes"),
        ));
    }
    Ok(buf)
}

/// [`read_capped`] as text (invalid UTF-8 replaced), with the file's mtime.
///
/// # Errors
///
/// As [`read_capped`].
pub fn read_text_capped(path: &Path, cap: u64) -> io::Result<(String, Option<SystemTime>)> {
    let bytes = read_capped(path, cap)?;
    let mtime = fs::symlink_metadata(path).and_then(|m| m.modified()).ok();
    Ok((String::from_utf8_lossy(&bytes).into_owned(), mtime))
}

/// The modification time of `path` itself (not a link's target).
pub fn mtime(path: &Path) -> Option<SystemTime> {
    fs::symlink_metadata(path).and_then(|m| m.modified()).ok()
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A new temporary file in `dir`, named so that [`sweep_temps`] can tell whose it is.
///
/// # Errors
///
/// Any error creating the file.
pub fn temp_in(dir: &Path) -> io::Result<NamedTempFile> {
    // 0666 less the umask, like any new file: state files are shared with agents that may run
    // as other users.
    tempfile::Builder::new()
        .prefix(&layout::temp_prefix(host::host_tag(), host::pid()))
        .suffix(layout::TEMP_SUFFIX)
        .rand_bytes(6)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
}

fn filled_temp(path: &Path, bytes: &[u8], durable: bool) -> Result<NamedTempFile> {
    let dir = parent_of(path);
    let mut tmp = temp_in(dir).at("create a temporary file in", dir)?;
    tmp.write_all(bytes).at("write", tmp.path())?;
    if durable {
        tmp.as_file().sync_all().at("sync", tmp.path())?;
    }
    Ok(tmp)
}

/// Publish `bytes` at `path` only if nothing is there yet (no file, no link).
///
/// Returns `false` when `path` already exists; nothing is changed then.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path on any other failure.
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    let tmp = filled_temp(path, bytes, false)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.error).at("create", path),
    }
}

/// Replace (or create) `path` with `bytes` atomically. A symlink at `path` is replaced, not followed.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = filled_temp(path, bytes, false)?;
    tmp.persist(path).map_err(|e| e.error).at("replace", path)?;
    Ok(())
}

/// Replace `path` durably: temp file, fsync, rename, fsync of the folder. The mode of an
/// existing regular file at `path` is kept.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn replace_durable(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = filled_temp(path, bytes, false)?;
    keep_mode(path, tmp.as_file())?;
    tmp.as_file().sync_all().at("sync", tmp.path())?;
    tmp.persist(path).map_err(|e| e.error).at("replace", path)?;
    sync_dir(parent_of(path))
}

/// Give `file` the permissions of the regular file at `path`, when there is one.
fn keep_mode(path: &Path, file: &File) -> Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path)
        && meta.is_file()
    {
        file.set_permissions(meta.permissions())
            .at("set permissions of", path)?;
    }
    Ok(())
}

/// Copy the regular file `src` to `dst`, replacing `dst` atomically (never following a link at
/// `dst`, never touching anything but `dst`). Returns the bytes copied.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the file involved.
pub fn copy_replace(src: &Path, dst: &Path) -> Result<u64> {
    let mut input = open_regular_nofollow(src).at("read", src)?;
    let dir = parent_of(dst);
    let mut tmp = temp_in(dir).at("create a temporary file in", dir)?;
    let n = io::copy(&mut input, tmp.as_file_mut()).at("copy", src)?;
    if let Ok(meta) = input.metadata() {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .at("set permissions of", tmp.path())?;
    }
    tmp.persist(dst).map_err(|e| e.error).at("replace", dst)?;
    Ok(n)
}

/// Open a regular file for reading without following a symlink or blocking on a FIFO.
///
/// # Errors
///
/// As [`read_capped`], without a size cap.
pub fn open_regular_nofollow(path: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "is not a regular file",
        ));
    }
    Ok(file)
}

/// fsync a folder, so a rename in it survives a crash.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the folder.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .at("sync folder", dir)
}

/// Remove `path` (a file or a link, never a link's target). `Ok(false)` when it was not there.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn remove(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).at("remove", path),
    }
}

/// Rename `from` to `to`, replacing `to`.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming `from`.
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).at("rename", from)
}

/// Create `dir` and its parents. A symlink where a folder should be is refused.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the folder.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "exists and is not a folder",
        ))
        .at("create folder", dir),
        Err(_) => fs::create_dir_all(dir).at("create folder", dir),
    }
}

/// Set the modification time of `path` to now (a heartbeat for wait tickets).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn touch(path: &Path) -> Result<()> {
    // O_NONBLOCK: opening a FIFO planted here for writing would otherwise wait for a reader
    // forever. Only a regular file is touched.
    let file = OpenOptions::new()
        .write(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .at("open", path)?;
    if !file.metadata().at("open", path)?.is_file() {
        return Err(not_regular()).at("touch", path);
    }
    file.set_modified(SystemTime::now()).at("touch", path)
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "is not a regular file")
}

/// Remove coord's temporary files in `dir` whose writer is gone: at once when their process
/// is known dead on this host, after an hour in any case. Returns how many were removed.
pub fn sweep_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((tag, pid)) = layout::parse_temp_name(name) else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        let gone = tag == host::host_tag() && pid != host::pid() && !host::pid_alive(pid);
        if (gone || old) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The workspace mutex: a short kernel lock on a file that is never deleted.
///
/// Every lock transition (acquire, stale takeover, release, fenced commit) happens while one
/// of these is held. Dropping it releases the kernel lock.
#[derive(Debug)]
pub struct MutexGuard {
    _file: File,
    path: PathBuf,
}

impl MutexGuard {
    /// The mutex file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Take the workspace mutex at `path`, blocking until it is free (it is held for microseconds).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) when the mutex file cannot be opened (a symlink is refused)
/// or locked.
pub fn lock_mutex(path: &Path) -> Result<MutexGuard> {
    // O_NONBLOCK so that a FIFO planted at `path` cannot make the open wait (it does not affect
    // `flock`, which still blocks). Anything but a regular file is refused: every coord process
    // must lock the same kind of object, and a symlink could point anywhere.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                io::Error::new(io::ErrorKind::InvalidData, "is a symlink (not followed)")
            } else {
                e
            }
        })
        .at("open the workspace mutex", path)?;
    if !file
        .metadata()
        .at("open the workspace mutex", path)?
        .is_file()
    {
        return Err(not_regular()).at("open the workspace mutex", path);
    }
    file.lock().at("lock the workspace mutex", path)?;
    Ok(MutexGuard {
        _file: file,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.lock.x");
        assert!(create_new(&p, b"one").unwrap());
        assert!(!create_new(&p, b"two").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"one");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp left");
    }

    #[test]
    fn create_new_does_not_follow_a_dangling_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        let link = dir.path().join("a.lock.x");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(!create_new(&link, b"x").unwrap());
        assert!(!victim.exists());
    }

    #[test]
    fn replace_replaces_a_link_not_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let link = dir.path().join("f.bak");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        replace(&link, b"backup").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(&link).unwrap(), b"backup");
        assert!(!fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn capped_reads_refuse_links_fifos_dirs_and_giants() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, b"hello").unwrap();
        assert_eq!(read_capped(&f, 5).unwrap(), b"hello");
        assert!(read_capped(&f, 4).is_err());
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(read_capped(&link, 100).is_err());
        assert!(read_capped(dir.path(), 100).is_err());
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(
            read_capped(&fifo, 100).is_err(),
            "a FIFO is refused, not waited on"
        );
    }

    #[test]
    fn touch_and_the_mutex_refuse_a_fifo_instead_of_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ticket");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(touch(&fifo).is_err(), "no reader: must not block");
        assert!(lock_mutex(&fifo).is_err());
        assert!(touch(dir.path()).is_err());
        let link = dir.path().join("mutex");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
        assert!(lock_mutex(&link).is_err());
        assert!(
            !dir.path().join("elsewhere").exists(),
            "the link was not followed"
        );
    }

    #[test]
    fn sweep_removes_temps_of_dead_processes_only() {
        let dir = tempfile::tempdir().unwrap();
        let mine = temp_in(dir.path()).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let orphan = dir.path().join(format!(
            "{}abc123{}",
            layout::temp_prefix(host::host_tag(), dead),
            layout::TEMP_SUFFIX
        ));
        fs::write(&orphan, b"partial").unwrap();
        assert_eq!(sweep_temps(dir.path()), 1);
        assert!(!orphan.exists());
        assert!(mine.path().exists());
    }

    #[test]
    fn new_files_get_the_usual_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        assert!(create_new(&p, b"1").unwrap());
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
            .unwrap();
        assert_eq!(mode, 0o666 & !umask);
    }

    #[test]
    fn replace_durable_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("script.sh");
        fs::write(&f, b"old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o751)).unwrap();
        replace_durable(&f, b"new").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o751
        );
    }
}
