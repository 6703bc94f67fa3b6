//! Every write coord makes to disk and every capped read (the workspace mutex is `arbiter`'s).
#![allow(clippy::disallowed_methods)]

use std::fs::{self, File};
use std::io;
use std::path::Path;

use rustix::fs::OFlags;

mod append;
mod atomic;
mod entry;
pub mod raw;
mod read;
mod sweep;
#[cfg(test)]
pub(crate) mod tests;

pub use append::{
    FINISH_APPEND_ARG, append_durable, append_line, append_line_durable_numbered,
    append_line_rotating, finish_append, finish_appends, sync_file,
};
pub use atomic::{
    copy_replace, copy_to_temp, create_new, create_new_held, persist, persist_durable, persist_new,
    replace, replace_durable, replace_staged, spool, temp_in,
};
pub use entry::{
    empty_marker, ensure_dir, make_executable, remove, remove_tree, rename, rewrite_in_place,
    set_mtime_epoch, sync_dir, touch, touch_if_same,
};
pub use raw::mark_network_fs;
pub use read::{
    RECORD_CAP, Stat, forget_cached_pages, if_found, linked_ancestor, linked_state_folder,
    list_names, mtime, ns_since_epoch, open_regular_nofollow, read_capped, read_capped_with_meta,
    read_capped_with_mtime, read_dir, read_past_cache, read_tail, read_text_capped, real_entry,
    refresh_attributes, refuse_linked, same_regular_files, take_link_warning,
};
pub use sweep::{sweep_entry, sweep_temps};

/// How [`open_nofollow`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    /// Write only, the file must exist (touching its mtime).
    Write,
    Append,
    /// Read and append, created (mode 0666 less the umask) when missing.
    AppendOrCreate,
    /// Read and write, created when missing, never truncated.
    ReadWriteOrCreate,
}

/// Open the regular file at `path` the one way coord opens files: never through a symlink
/// (nor a symlinked state folder), never waiting on a FIFO, never taking a controlling terminal;
/// anything but a regular file is refused.
pub(crate) fn open_nofollow(path: &Path, access: Access) -> io::Result<(File, fs::Metadata)> {
    read::refuse_linked(path, false)?;
    // Through rustix, not `OpenOptions`: musl's `open` follows an `O_CLOEXEC` open with an
    // `fcntl` for kernels older than 2.6.23, one system call in ten of a hook's.
    let flags = OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let flags = flags
        | match access {
            Access::Read => OFlags::RDONLY,
            Access::Write => OFlags::WRONLY,
            Access::Append => OFlags::WRONLY | OFlags::APPEND,
            Access::AppendOrCreate => OFlags::RDWR | OFlags::APPEND | OFlags::CREATE,
            Access::ReadWriteOrCreate => OFlags::RDWR | OFlags::CREATE,
        };
    let mode = rustix::fs::Mode::from_raw_mode(0o666);
    let opened = rustix::fs::open(path, flags, mode).map_err(|e| match e {
        // `O_NOFOLLOW` met a symlink.
        rustix::io::Errno::LOOP => symlink_refused(),
        e => e.into(),
    });
    let file = File::from(opened?);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    if matches!(access, Access::AppendOrCreate | Access::ReadWriteOrCreate) {
        fit_file_mode(&file, parent_of(path));
    }
    Ok((file, meta))
}

/// The bits a new entry in the folder `dir` must have beyond what the umask left: in a
/// group-shared (setgid) folder, its group bits (`rw` for a file, `rwx` for a folder), so that
/// everyone who can use the folder can use the entry; nothing elsewhere.
fn shared_bits(dir: &Path, is_dir: bool) -> u32 {
    use std::os::unix::fs::MetadataExt;
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() && m.mode() & 0o2000 != 0 => {
            m.mode() & if is_dir { 0o070 } else { 0o060 }
        }
        _ => 0,
    }
}

/// Give `file`, just created in `dir`, the bits the folder's sharing asks for.
pub(crate) fn fit_file_mode(file: &File, dir: &Path) {
    add_bits(file, shared_bits(dir, false));
}

/// Add the permission `bits` to `file` (or folder) when it lacks them and this user owns it.
fn add_bits(file: &File, bits: u32) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Through std's `File`: its mode is a `u32` on every Unix (`st_mode` is 16 bits wide on
    // macOS).
    if bits != 0
        && let Ok(m) = file.metadata()
        && m.mode() & bits != bits
        && m.uid() == rustix::process::geteuid().as_raw()
    {
        let _ = file.set_permissions(fs::Permissions::from_mode((m.mode() & 0o7777) | bits));
    }
}

/// Make `file`, made in another folder, look like a file made now in `dir`, where it is about to
/// be published: the group and bits such a file gets; `false` when its group cannot be set.
pub(crate) fn fit_to_folder(file: &File, dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(folder), Ok(m)) = (fs::metadata(dir), file.metadata()) else {
        return false;
    };
    let setgid = folder.mode() & 0o2000 != 0;
    let gid = if setgid || !cfg!(any(target_os = "linux", target_os = "android")) {
        folder.gid()
    } else {
        rustix::process::getegid().as_raw()
    };
    if m.gid() != gid
        && rustix::fs::fchown(file, None, Some(rustix::process::Gid::from_raw(gid))).is_err()
    {
        return false;
    }
    fit_file_mode(file, dir);
    true
}

/// [`fit_file_mode`] for the folder `dir`, just created (never through a symlink).
pub(crate) fn fit_dir_mode(dir: &Path) {
    let bits = shared_bits(parent_of(dir), true);
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
    if bits != 0
        && let Ok(fd) = rustix::fs::open(dir, flags, rustix::fs::Mode::empty())
    {
        add_bits(&File::from(fd), bits);
    }
}

/// The folder holding `path` (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn symlink_refused() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "is a symlink (not followed)")
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "is not a regular file")
}
