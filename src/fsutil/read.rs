//! Capped reads of state files that never follow a symlink nor block on a FIFO.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use super::{Access, open_nofollow};

/// A file's identity and change marks: a rewrite changes its mtime or change time, a
/// replacement its inode number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Status change time, nanoseconds since the epoch.
    pub ctime_ns: i128,
}

impl Stat {
    /// The stat data of `path` (not following a link), `None` when nothing is there.
    pub fn read(path: &Path) -> Option<Stat> {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(path).ok()?;
        Some(Stat {
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        })
    }
}

/// `t` in nanoseconds since the epoch (negative before it), as [`Stat`] gives times.
pub fn ns_since_epoch(t: SystemTime) -> i128 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Size cap for small state files (presence, lock, handshake, tickets).
pub const RECORD_CAP: u64 = 64 * 1024;

/// Read at most `cap` bytes of a regular file, without following a symlink or blocking on a FIFO.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_capped_with_mtime(path, cap).map(|(bytes, _)| bytes)
}

/// [`read_capped`], with the mtime of the file as opened (a network filesystem revalidates it
/// on open, where a `stat` of the path may be served from a cache).
pub fn read_capped_with_mtime(path: &Path, cap: u64) -> io::Result<(Vec<u8>, Option<SystemTime>)> {
    read_capped_with_meta(path, cap).map(|(bytes, meta)| (bytes, meta.modified().ok()))
}

/// [`read_capped`], with the metadata of the file as opened (its identity: device and inode).
pub fn read_capped_with_meta(path: &Path, cap: u64) -> io::Result<(Vec<u8>, fs::Metadata)> {
    let (file, meta) = open_nofollow(path, Access::Read)?;
    let bytes = read_open_capped(&file, &meta, cap)?;
    Ok((bytes, meta))
}

/// At most `cap` bytes of the open regular `file`, whose metadata is `meta` (past this
/// machine's cache once told so: [`read_past_cache`]).
pub(super) fn read_open_capped(file: &File, meta: &fs::Metadata, cap: u64) -> io::Result<Vec<u8>> {
    if PAST_CACHE.load(Ordering::Relaxed) {
        let _ = forget_cached_pages(file);
    }
    let mut buf = Vec::new();
    if meta.len() <= cap {
        // Room for the whole file: one read takes it, the next one finds its end.
        buf.reserve_exact(meta.len() as usize + 1);
        file.take(cap + 1).read_to_end(&mut buf)?;
    }
    if meta.len() > cap || buf.len() as u64 > cap {
        let why = format!("is larger than {cap} bytes");
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    Ok(buf)
}

/// The last `cap` bytes of a regular file (opened as [`read_capped`] does), and whether it was cut.
pub fn read_tail(path: &Path, cap: u64) -> io::Result<(Vec<u8>, bool)> {
    use std::io::{Seek, SeekFrom};
    let (mut file, meta) = open_nofollow(path, Access::Read)?;
    let from = meta.len().saturating_sub(cap);
    file.seek(SeekFrom::Start(from))?;
    // What was appended since the `fstat` is read too, up to the cap.
    let mut bytes = Vec::with_capacity(meta.len().min(cap) as usize);
    file.take(cap).read_to_end(&mut bytes)?;
    Ok((bytes, from > 0))
}

/// [`read_capped`] as text (invalid UTF-8 replaced), with the file's mtime.
pub fn read_text_capped(path: &Path, cap: u64) -> io::Result<(String, Option<SystemTime>)> {
    let (bytes, mtime) = read_capped_with_mtime(path, cap)?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), mtime))
}

/// `read`'s value, `None` when the file is not there (`NotFound`).
pub fn if_found<T>(read: io::Result<T>) -> io::Result<Option<T>> {
    match read {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        read => read.map(Some),
    }
}

/// Make this machine's kernel ask the file server for `path`'s attributes now (`statx` with
/// `AT_STATX_FORCE_SYNC`; FUSE and NFS honour it), and forget the file's cached content.
pub fn refresh_attributes(path: &Path) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
        let _ = statx(
            CWD,
            path,
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_FORCE_SYNC,
            StatxFlags::SIZE | StatxFlags::MTIME,
        );
    }
    if let Ok((file, _)) = open_nofollow(path, Access::Read) {
        let _ = forget_cached_pages(&file);
    }
}

static PAST_CACHE: AtomicBool = AtomicBool::new(false);

/// From now on, every capped read forgets this machine's cached pages of the file first.
pub fn read_past_cache() {
    PAST_CACHE.store(true, Ordering::Relaxed);
}

/// Drop `file`'s clean cached pages (`POSIX_FADV_DONTNEED`); whether this system can.
pub fn forget_cached_pages(file: &File) -> io::Result<bool> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed)?;
        Ok(true)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = file;
        Ok(false)
    }
}

/// The metadata of `path` itself (not a link's target) when something really stands there.
pub fn real_entry(path: &Path) -> Option<fs::Metadata> {
    let meta = fs::symlink_metadata(path).ok()?;
    use rustix::fs::{Mode, OFlags};
    // Opened, not listed: a folder smbnetfs shows at its host level cannot be opened.
    let opened = || rustix::fs::open(path, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty());
    if meta.is_dir()
        && let Err(e) = opened().map_err(io::Error::from)
        && (e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(5))
    {
        return None;
    }
    Some(meta)
}

/// The modification time of `path` itself (not a link's target).
pub fn mtime(path: &Path) -> Option<SystemTime> {
    fs::symlink_metadata(path).and_then(|m| m.modified()).ok()
}

/// Whether `a` and `b` are regular files (no link followed) with the same mode and bytes.
pub fn same_regular_files(a: &Path, b: &Path) -> bool {
    fn same(a: &Path, b: &Path) -> io::Result<bool> {
        let (mut fa, ma) = open_nofollow(a, Access::Read)?;
        let (mut fb, mb) = open_nofollow(b, Access::Read)?;
        if ma.len() != mb.len() || ma.permissions() != mb.permissions() {
            return Ok(false);
        }
        // Plus the byte that tells they did not grow.
        let size = usize::try_from(ma.len()).map_or(64 * 1024, |n| n.clamp(1, 64 * 1024 - 1) + 1);
        let (mut ba, mut bb) = (vec![0u8; size], vec![0u8; size]);
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
pub fn open_regular_nofollow(path: &Path) -> io::Result<File> {
    open_nofollow(path, Access::Read).map(|(file, _)| file)
}

/// The first folder above `path` (nearest first) that is a symlink, if any.
pub fn linked_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| fs::symlink_metadata(a).is_ok_and(|m| m.is_symlink()))
        .map(Path::to_path_buf)
}

/// The first of coord's own folders (below a `.coord/`) on the way to `path` that is a symlink,
/// `path` itself included when `with_self`.
pub fn linked_state_folder(path: &Path, with_self: bool) -> Option<PathBuf> {
    let state = std::ffi::OsStr::new(crate::layout::STATE_DIR);
    let start = if with_self { path } else { path.parent()? };
    // Nothing is looked up on a path with no `.coord` among its ancestors.
    let below = start
        .ancestors()
        .position(|a| a.file_name() == Some(state))?;
    let is_link = |a: &&Path| fs::symlink_metadata(a).is_ok_and(|m| m.is_symlink());
    let last = start.ancestors().take(below).filter(is_link).last();
    last.map(Path::to_path_buf)
}

/// Refuse a path that [`linked_state_folder`] finds a symlink on the way to: `InvalidData`,
/// naming the link, noted for [`take_link_warning`].
pub fn refuse_linked(path: &Path, with_self: bool) -> io::Result<()> {
    let Some(link) = linked_state_folder(path, with_self) else {
        return Ok(());
    };
    let why = crate::error::LinkedFolder(link);
    let mut noted = LINK_WARNING.lock().unwrap_or_else(|e| e.into_inner());
    noted.get_or_insert_with(|| {
        let said = format!(
            "{why}: nothing was read or written through it, and what belongs there was left out; remove it, and coord makes the folder again"
        );
        (why.0.clone(), said)
    });
    Err(io::Error::new(io::ErrorKind::InvalidData, why))
}

static LINK_WARNING: std::sync::Mutex<Option<(PathBuf, String)>> = std::sync::Mutex::new(None);

/// The first symlink met (not followed) in place of one of coord's folders, and what to say, once.
pub fn take_link_warning() -> Option<(PathBuf, String)> {
    let mut noted = LINK_WARNING.lock().unwrap_or_else(|e| e.into_inner());
    noted.take()
}

/// [`fs::read_dir`], refused (`InvalidData`) through a symlinked state folder ([`refuse_linked`]).
pub fn read_dir(dir: impl AsRef<Path>) -> io::Result<fs::ReadDir> {
    let dir = dir.as_ref();
    refuse_linked(dir, true)?;
    fs::read_dir(dir)
}

/// The names in folder `dir`, in the order the folder lists them (read through rustix: musl's
/// `opendir` costs an `fcntl` and an allocation that maps and unmaps memory).
pub fn list_names(dir: &Path) -> io::Result<Vec<std::ffi::OsString>> {
    use rustix::fs::{Mode, OFlags};
    use std::os::unix::ffi::OsStringExt;
    refuse_linked(dir, true)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::new(rustix::fs::open(dir, flags, Mode::empty())?)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(std::ffi::OsString::from_vec(name));
        }
    }
    Ok(names)
}
