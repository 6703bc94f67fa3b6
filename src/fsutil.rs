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
//! - Appends ([`append_line`]) are one `write(2)` of a whole line on an `O_APPEND` descriptor,
//!   made while holding a kernel lock (`flock`) on the file itself, so two coord writers never
//!   interleave and a line never lands glued to a previous line that lacked its newline.
//! - Temporary files left behind by a killed process are swept by the next coord in that folder
//!   ([`sweep_temps`]): at once when their process is known gone, after an hour otherwise.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

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
    read_capped_with_mtime(path, cap).map(|(bytes, _)| bytes)
}

/// [`read_capped`], with the mtime of the file as opened (`fstat` on the open file: a network
/// filesystem revalidates it on open, where a `stat` of the path may be served from a cache).
///
/// # Errors
///
/// As [`read_capped`].
pub fn read_capped_with_mtime(path: &Path, cap: u64) -> io::Result<(Vec<u8>, Option<SystemTime>)> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| not_followed(e.into()))?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    let bytes = read_open_capped(file, &meta, cap)?;
    Ok((bytes, meta.modified().ok()))
}

fn read_open_capped(file: File, meta: &fs::Metadata, cap: u64) -> io::Result<Vec<u8>> {
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
    let (bytes, mtime) = read_capped_with_mtime(path, cap)?;
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
    // The error of `tempfile` names the temporary file (`… at path ".coord-….tmp"`), which means
    // nothing to the user: keep only the system's error, the caller names the file.
    temp_builder().tempfile_in(dir).map_err(bare)
}

/// An OS error without the path `tempfile` adds to its message.
fn bare(e: io::Error) -> io::Error {
    e.raw_os_error().map_or(e, io::Error::from_raw_os_error)
}

fn temp_builder() -> tempfile::Builder<'static, 'static> {
    // 0666 less the umask, like any new file: state files are shared with agents that may run
    // as other users.
    let mut b = tempfile::Builder::new();
    b.prefix(layout_prefix())
        .suffix(layout::TEMP_SUFFIX)
        .rand_bytes(6)
        .permissions(std::fs::Permissions::from_mode(0o666));
    b
}

/// This process's temporary-file prefix, built once.
fn layout_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| layout::temp_prefix(host::host_tag(), host::pid()))
}

fn filled_temp(path: &Path, bytes: &[u8], durable: bool) -> Result<NamedTempFile> {
    let dir = parent_of(path);
    let mut tmp = temp_in(dir).at("create a temporary file in", dir)?;
    // Errors name the file being written, not its temporary copy (on a full disk, the user
    // needs to know which file was not written).
    tmp.write_all(bytes).at("write", path)?;
    if durable {
        tmp.as_file().sync_all().at("write", path)?;
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
    persist(tmp, path)
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
    tmp.as_file().sync_all().at("write", path)?;
    persist(tmp, path)?;
    sync_dir(parent_of(path))
}

/// Append `bytes` to the existing regular file at `path` with one `write`, then fsync it.
///
/// For append-only logs (a dialogue's `conversation.md`): the file is never truncated or
/// rewritten, a symlink at `path` is refused, and a missing file is an error (never created).
/// One `write` on an `O_APPEND` descriptor lands whole at the end of the file as seen at that
/// instant, so an earlier byte is never lost.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path (also for a short write).
pub fn append_durable(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .at("open for appending", path)?;
    if !file.metadata().at("inspect", path)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "is not a regular file",
        ))
        .at("append to", path);
    }
    let len = file.metadata().at("inspect", path)?.len();
    if let Err(e) = file.write_all(bytes) {
        // Whole or absent: a failed append (a full disk) is cut back to the previous length.
        let _ = file.set_len(len);
        return Err(e).at("append to", path);
    }
    file.sync_all().at("sync", path)
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
    let (tmp, n) = copy_to_temp(src, parent_of(dst), false)?;
    persist(tmp, dst)?;
    Ok(n)
}

/// A temporary copy of the regular file `src` (never following a link at `src`) in `dir`, with
/// `src`'s mode, fsynced when `durable`; publish it with [`persist`]. Returns it and its size.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the file involved.
pub fn copy_to_temp(src: &Path, dir: &Path, durable: bool) -> Result<(NamedTempFile, u64)> {
    let mut input = open_regular_nofollow(src).at("read", src)?;
    let mut tmp = temp_in(dir).at("create a temporary file in", dir)?;
    let n = io::copy(&mut input, tmp.as_file_mut()).at("copy", src)?;
    if let Ok(meta) = input.metadata() {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .at("set permissions of", tmp.path())?;
    }
    if durable {
        tmp.as_file().sync_all().at("copy", src)?;
    }
    Ok((tmp, n))
}

/// Everything `input` yields, in a new temporary file in `dir`, fsynced: content on its way to
/// a path, published later with [`persist`]. The file gets the mode of the regular file at
/// `like` when there is one, else the usual mode of a new file (0666 less the umask). Returns
/// it and its size. On error the temporary file is removed.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the folder, the temporary file, or `what` (the input).
pub fn spool(
    dir: &Path,
    input: &mut dyn Read,
    what: &Path,
    like: &Path,
) -> Result<(NamedTempFile, u64)> {
    let mut tmp = temp_builder()
        .tempfile_in(dir)
        .map_err(bare)
        .at("create a temporary file in", dir)?;
    // Write errors name the file the content is for, not its temporary copy.
    let n = copy_input(input, tmp.as_file_mut(), what, like)?;
    keep_mode(like, tmp.as_file())?;
    tmp.as_file().sync_all().at("write", like)?;
    Ok((tmp, n))
}

/// `io::copy`, telling a read error (blamed on `what`) from a write error (blamed on `to`).
fn copy_input(input: &mut dyn Read, out: &mut File, what: &Path, to: &Path) -> Result<u64> {
    let mut buf = vec![0u8; 128 * 1024];
    let mut total = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).at("read", what),
        };
        out.write_all(&buf[..n]).at("write", to)?;
        total += n as u64;
    }
}

/// Publish a filled temporary file at `path` by rename: atomic, replacing whatever is there
/// (a symlink at `path` is replaced, never followed). Pair with [`sync_dir`] for durability.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path; the temporary file is removed then.
pub fn persist(tmp: NamedTempFile, path: &Path) -> Result<()> {
    if exchange(&tmp, path) {
        return Ok(());
    }
    tmp.persist(path).map_err(|e| e.error).at("replace", path)?;
    Ok(())
}

/// Replace a regular file (or a symlink) at `path` by swapping it with `tmp` in one atomic
/// `renameat2(RENAME_EXCHANGE)`, then dropping `tmp`, which now names the old content.
/// Returns `false` (nothing changed) when there is nothing to swap with or the filesystem
/// cannot exchange; the caller then renames.
///
/// Why: ext4 starts writeback of the new file on a rename that replaces an existing file
/// (`auto_da_alloc`), which makes every small replace wait on the disk; an exchange does not.
/// Content that must survive a crash is fsynced before it gets here ([`replace_durable`],
/// [`spool`]), which is what `auto_da_alloc` only approximates.
fn exchange(tmp: &NamedTempFile, path: &Path) -> bool {
    use rustix::fs::{CWD, RenameFlags};
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() || meta.is_symlink() => {}
        _ => return false,
    }
    if rustix::fs::renameat_with(CWD, tmp.path(), CWD, path, RenameFlags::EXCHANGE).is_err() {
        return false;
    }
    if fs::symlink_metadata(tmp.path()).is_ok_and(|m| m.is_dir()) {
        // A folder appeared at `path` in between: put it back, and let the rename refuse.
        let _ = rustix::fs::renameat_with(CWD, tmp.path(), CWD, path, RenameFlags::EXCHANGE);
        return false;
    }
    true
}

/// [`persist`], then fsync of the folder, so the new content survives a crash.
///
/// # Errors
///
/// As [`persist`] and [`sync_dir`].
pub fn persist_durable(tmp: NamedTempFile, path: &Path) -> Result<()> {
    persist(tmp, path)?;
    sync_dir(parent_of(path))
}

/// Whether `a` and `b` are both regular files (neither followed through a symlink) with the
/// same permissions and the same bytes. Any error reads as "not the same".
pub fn same_regular_files(a: &Path, b: &Path) -> bool {
    fn same(a: &Path, b: &Path) -> io::Result<bool> {
        let (mut fa, mut fb) = (open_regular_nofollow(a)?, open_regular_nofollow(b)?);
        let (ma, mb) = (fa.metadata()?, fb.metadata()?);
        if ma.len() != mb.len() || ma.permissions() != mb.permissions() {
            return Ok(false);
        }
        let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
        loop {
            let n = fa.read(&mut ba)?;
            if n == 0 {
                // Same length as `a` (checked above), unless `b` grew meanwhile.
                return Ok(fb.read(&mut bb[..1])? == 0);
            }
            fb.read_exact(&mut bb[..n])?;
            if ba[..n] != bb[..n] {
                return Ok(false);
            }
        }
    }
    same(a, b).unwrap_or(false)
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
    )
    .map_err(|e| not_followed(e.into()))?;
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

/// The first folder above `path` (nearest first) that is a symlink, if any.
///
/// Every path coord builds starts at a workspace root that was resolved (`canonicalize`), so a
/// symlink among the ancestors of a state path was planted below the root: following it would
/// read or write outside the workspace.
pub fn linked_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| fs::symlink_metadata(a).is_ok_and(|m| m.is_symlink()))
        .map(Path::to_path_buf)
}

/// Create `dir` and its parents. A symlink where a folder should be is refused, at `dir` or
/// at any folder above it.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the folder.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    // A symlinked folder above `dir` (`.metadata -> /elsewhere`, `archive -> /elsewhere`) would
    // make `create_dir_all` and every later write land outside the workspace.
    if let Some(link) = linked_ancestor(dir) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "is a symlink (not followed)",
        ))
        .at("create folder", &link);
    }
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "exists and is not a folder",
        ))
        .at("create folder", dir),
        Err(_) => {
            // Someone may be removing the folder while it is created (`rm -rf .coord` while
            // agents wait): mkdir then finds it "exists" and it is gone a moment later. Try
            // again a few times; what stands there in the end decides.
            let mut tries = 0;
            loop {
                match fs::create_dir_all(dir) {
                    Ok(()) => return Ok(()),
                    Err(_) if fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) => {
                        return Ok(());
                    }
                    Err(_) if tries < 20 => tries += 1,
                    Err(e) => return Err(e).at("create folder", dir),
                }
            }
        }
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

/// Make the regular file at `path` executable by whoever may read it (a git hook script).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn make_executable(path: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(path).at("inspect", path)?;
    if !meta.is_file() {
        return Err(not_regular()).at("make executable", path);
    }
    let mode = meta.permissions().mode();
    let exec = (mode & 0o444) >> 2;
    fs::set_permissions(path, fs::Permissions::from_mode(mode | exec)).at("make executable", path)
}

/// An `O_NOFOLLOW` open that met a symlink (`ELOOP`) said as such; other errors unchanged.
fn not_followed(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        io::Error::new(io::ErrorKind::InvalidData, "is a symlink (not followed)")
    } else {
        e
    }
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
    entries.flatten().filter(sweep_entry).count()
}

/// [`sweep_temps`] for one entry of a folder being listed anyway: removes it when it is one of
/// coord's temporary files whose writer is gone. Returns whether it was removed.
pub fn sweep_entry(entry: &fs::DirEntry) -> bool {
    let name = entry.file_name();
    if name.to_str().is_some_and(layout::is_fuse_hidden) {
        return sweep_fuse_hidden(entry);
    }
    let Some((tag, pid)) = name.to_str().and_then(layout::parse_temp_name) else {
        return false;
    };
    let old = entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(3600));
    let gone = tag == host::host_tag() && pid != host::pid() && !host::pid_alive(pid);
    (gone || old) && fs::remove_file(entry.path()).is_ok()
}

/// A `.fuse_hidden…` file: a record removed while a process on the same FUSE mount still had it
/// open, kept by FUSE until that process closes it. coord opens records for milliseconds, so one
/// older than a minute is a leftover (its process was killed, or the mount went away).
fn sweep_fuse_hidden(entry: &fs::DirEntry) -> bool {
    let old = entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(60));
    old && entry.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(entry.path()).is_ok()
}

/// Append `line` to `path` (created when missing, never through a symlink), as one line.
///
/// The file is opened `O_APPEND` and locked with `flock` for the duration of the append, so
/// concurrent coord writers never interleave; the whole line goes out in one `write` call, so
/// even writers that do not lock (the seed's own Python class) cannot split it on a local disk.
/// When the file does not end with a newline (written by hand), one is written first, so the new
/// line stands on its own. A `line` without a trailing newline gets one. Not synced: see
/// [`append_line_durable`] and [`sync_file`].
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path: a symlink, a FIFO or a folder at `path`, or
/// any I/O failure.
pub fn append_line(path: &Path, line: &[u8]) -> Result<()> {
    append_inner(path, line, false).map(drop)
}

/// [`append_line`], then fsync of the file (and of the folder when the file was created).
///
/// # Errors
///
/// As [`append_line`].
pub fn append_line_durable(path: &Path, line: &[u8]) -> Result<()> {
    append_line_durable_numbered(path, line).map(drop)
}

/// [`append_line_durable`], returning the 1-based number of the line written, counted under
/// the same kernel lock as the append (so it is the line's number even with other writers).
///
/// # Errors
///
/// As [`append_line`].
pub fn append_line_durable_numbered(path: &Path, line: &[u8]) -> Result<usize> {
    let (file, created, number) = append_inner(path, line, true)?;
    file.sync_data().at("sync", path)?;
    if created {
        sync_dir(parent_of(path))?;
    }
    Ok(number)
}

/// fsync the regular file at `path` (data written through another descriptor included).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn sync_file(path: &Path) -> Result<()> {
    open_regular_nofollow(path)
        .and_then(|f| f.sync_data())
        .at("sync", path)
}

/// Append under the file's kernel lock; with `count`, also the 1-based number of the new line
/// (0 without).
fn append_inner(path: &Path, line: &[u8], count: bool) -> Result<(File, bool, usize)> {
    use std::os::unix::fs::FileExt;
    let existed = fs::symlink_metadata(path).is_ok();
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o666)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(not_followed)
        .at("open for appending", path)?;
    let meta = file.metadata().at("inspect", path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "is not a regular file",
        ))
        .at("append to", path);
    }
    file.lock().at("lock", path)?;
    // Under the lock the length is final: look at the last byte to decide on a leading newline.
    let len = file.metadata().at("inspect", path)?.len();
    let mut buf = Vec::with_capacity(line.len() + 2);
    let mut number = 0;
    if count {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut at = 0u64;
        let mut newlines = 0usize;
        while at < len {
            let n = file.read_at(&mut chunk, at).at("read", path)?;
            if n == 0 {
                break;
            }
            newlines += chunk[..n].iter().filter(|b| **b == b'\n').count();
            at += n as u64;
        }
        number = newlines + 1;
    }
    if len > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1).at("read", path)?;
        if last[0] != b'\n' {
            buf.push(b'\n');
            number += usize::from(count);
        }
    }
    buf.extend_from_slice(line);
    if buf.last() != Some(&b'\n') {
        buf.push(b'\n');
    }
    if let Err(e) = (&file).write_all(&buf) {
        // Whole or absent: a failed append (a full disk) is cut back to the previous length,
        // so no torn line stays behind.
        let _ = file.set_len(len);
        return Err(e).at("append to", path);
    }
    // Dropping `file` releases the flock; callers that sync do it after, which is fine: the
    // data is in the page cache in its final place already.
    Ok((file, !existed, number))
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
    lock_mutex_within(path, MUTEX_PATIENCE)
}

fn lock_mutex_within(path: &Path, patience: Duration) -> Result<MutexGuard> {
    let deadline = Instant::now() + patience;
    // A mutex file deleted and created anew (`git clean`, an agent tidying up) between our open
    // and our lock would let two processes hold "the" mutex, each on its own file: after
    // locking, make sure the file we hold is still the one at the path, else start over.
    loop {
        let file = open_mutex(path)?;
        lock_patiently(&file, path, deadline)?;
        let held = file.metadata().at("open the workspace mutex", path)?;
        match fs::symlink_metadata(path) {
            Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {
                return Ok(MutexGuard {
                    _file: file,
                    path: path.to_path_buf(),
                });
            }
            _ if Instant::now() >= deadline => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "keeps being replaced while coord locks it",
                ))
                .at("lock the workspace mutex", path);
            }
            _ => continue,
        }
    }
}

/// How long coord waits for the workspace mutex before giving up. It is held for microseconds;
/// only a process stopped (or stuck) while holding it makes anyone wait this long.
pub const MUTEX_PATIENCE: Duration = Duration::from_secs(30);

fn open_mutex(path: &Path) -> Result<File> {
    // O_NONBLOCK so that a FIFO planted at `path` cannot make the open wait (it does not affect
    // `flock`). Anything but a regular file is refused: every coord process must lock the same
    // kind of object, and a symlink could point anywhere.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(not_followed)
        .at("open the workspace mutex", path)?;
    if !file
        .metadata()
        .at("open the workspace mutex", path)?
        .is_file()
    {
        return Err(not_regular()).at("open the workspace mutex", path);
    }
    Ok(file)
}

/// Take the kernel lock, trying again with short growing pauses until `deadline`, so that a
/// process frozen while holding the mutex cannot freeze every other coord forever. The mutex is
/// held for a fraction of a millisecond, and a waiter woken by a release usually finds its
/// releaser still finishing: pauses stay at most 0.2 ms for the first 50 ms, then grow to 1 ms.
fn lock_patiently(file: &File, path: &Path, deadline: Instant) -> Result<()> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(20);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).at("lock the workspace mutex", path);
            }
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "another process has held it too long (a coord process stopped with Ctrl-Z?)",
            ))
            .at("lock the workspace mutex", path);
        }
        std::thread::sleep(pause);
        let cap = if started.elapsed() < Duration::from_millis(50) {
            Duration::from_micros(200)
        } else {
            Duration::from_millis(1)
        };
        pause = (pause * 2).min(cap);
    }
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
    fn old_fuse_leftovers_are_swept_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".fuse_hidden0000000a00000001");
        let fresh = dir.path().join(".fuse_hidden0000000b00000002");
        fs::write(&old, b"Agent: x\n").unwrap();
        fs::write(&fresh, b"Agent: y\n").unwrap();
        let f = OpenOptions::new().write(true).open(&old).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(120))
            .unwrap();
        assert_eq!(sweep_temps(dir.path()), 1);
        assert!(!old.exists());
        assert!(fresh.exists(), "one still in use is left alone");
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
    fn append_adds_whole_lines_and_refuses_links() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("notes.md");
        append_line(&f, b"one").unwrap();
        fs::write(&f, b"one\nhand-written, no newline").unwrap();
        append_line_durable(&f, b"two\n").unwrap();
        assert_eq!(
            fs::read_to_string(&f).unwrap(),
            "one\nhand-written, no newline\ntwo\n"
        );
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(append_line(&link, b"x").is_err());
        assert!(append_line(dir.path(), b"x").is_err());
        assert!(fs::read_to_string(&f).unwrap().ends_with("two\n"));
    }

    #[test]
    fn append_durable_only_appends_to_an_existing_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("conversation.md");
        assert!(
            append_durable(&f, b"x").is_err(),
            "a missing file is not created"
        );
        fs::write(&f, b"one\n").unwrap();
        append_durable(&f, b"two\n").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"one\ntwo\n");
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(
            append_durable(&link, b"three\n").is_err(),
            "a link is not followed"
        );
        assert_eq!(fs::read(&f).unwrap(), b"one\ntwo\n");
    }

    #[test]
    fn replace_over_an_existing_file_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, b"old").unwrap();
        let other = dir.path().join("hardlink");
        fs::hard_link(&f, &other).unwrap();
        replace(&f, b"new").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"new");
        assert_eq!(
            fs::read(&other).unwrap(),
            b"old",
            "other links keep the old content"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temp left");
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        assert!(replace(&sub, b"x").is_err(), "a folder is never replaced");
        assert!(sub.is_dir());
    }

    #[test]
    fn same_regular_files_compares_bytes_and_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&a, b"same").unwrap();
        fs::write(&b, b"same").unwrap();
        fs::set_permissions(&a, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(&b, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(same_regular_files(&a, &b));
        fs::write(&b, b"diff").unwrap();
        assert!(!same_regular_files(&a, &b));
        fs::write(&b, b"same").unwrap();
        fs::set_permissions(&b, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!same_regular_files(&a, &b));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        assert!(!same_regular_files(&a, &link), "a link is never followed");
        assert!(!same_regular_files(&a, &dir.path().join("missing")));
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

    #[test]
    fn a_mutex_replaced_while_waiting_is_not_shared() {
        use std::sync::mpsc::channel;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mutex");
        let old = lock_mutex(&path).unwrap();
        let (tx, rx) = channel();
        let p = path.clone();
        let waiter = std::thread::spawn(move || {
            let guard = lock_mutex(&p).unwrap();
            tx.send(()).unwrap();
            drop(guard);
        });
        std::thread::sleep(Duration::from_millis(100));
        // Someone deletes the mutex file and another process takes a new one.
        fs::remove_file(&path).unwrap();
        let new = lock_mutex(&path).unwrap();
        drop(old);
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the waiter must not hold the old file while another holds the new one"
        );
        drop(new);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
    }

    #[test]
    fn a_mutex_held_too_long_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mutex");
        let _held = lock_mutex(&path).unwrap();
        let err = lock_mutex_within(&path, Duration::from_millis(200)).unwrap_err();
        assert!(err.to_string().contains("held it too long"), "{err}");
    }
}
