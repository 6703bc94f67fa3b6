//! Whole files published atomically: a filled temporary file linked or renamed into place.

use std::cell::Cell;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tempfile::{NamedTempFile, TempPath};

use super::raw::on_network_fs;
use super::{Access, open_nofollow, parent_of, sync_dir};
use crate::error::{IoResultExt, Result};
use crate::{host, layout};

/// A new temporary file in `dir`, named so that [`sweep_temps`](super::sweep_temps) can tell whose it is.
pub fn temp_in(dir: &Path) -> io::Result<NamedTempFile> {
    super::read::refuse_linked(dir, true)?;
    // 0666 less the umask, like any new file: state files are shared with agents that may run
    // as other users.
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| layout::temp_prefix(host::host_tag(), host::pid()));
    let tmp = tempfile::Builder::new()
        .prefix(prefix)
        .suffix(layout::TEMP_SUFFIX)
        .rand_bytes(6)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(bare)?;
    super::fit_file_mode(tmp.as_file(), dir);
    Ok(tmp)
}

/// An error without the path `tempfile` adds to its message (`… at path ".coord-….tmp"`), which
/// means nothing to the user: the caller names the file.
fn bare(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.rfind(" at path ") {
        Some(cut) if e.raw_os_error().is_none() => io::Error::new(e.kind(), &text[..cut]),
        _ => e,
    }
}

/// A new temporary file in `dir`, its errors naming the folder.
fn made_in(dir: &Path) -> Result<NamedTempFile> {
    temp_in(dir).at("create a temporary file in", dir)
}

/// Publish at `path` what `fill` writes into a new temporary file in `stage` (`path`'s own
/// folder, unless the caller stages elsewhere).
fn publish_via<T>(
    path: &Path,
    stage: &Path,
    fill: impl Fn(NamedTempFile) -> Result<NamedTempFile>,
    publish: impl Fn(NamedTempFile) -> io::Result<T>,
) -> Result<io::Result<T>> {
    let mut first = made_in(stage)?;
    // Made in another folder: it must get what a file made beside `path` gets (the group of a
    // setgid folder), or make way for one that does.
    if stage != parent_of(path) && !super::fit_to_folder(first.as_file(), parent_of(path)) {
        first = made_in(parent_of(path))?;
    }
    match publish(fill(first)?) {
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            Ok(publish(fill(made_in(parent_of(path))?)?))
        }
        done => Ok(done),
    }
}

/// Publish `bytes` at `path` only if nothing is there yet (no file, no link).
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    Ok(create_new_held(path, bytes, false)?.is_some())
}

/// [`create_new`], returning the file open (`None`: taken), locked before publishing if `lock`.
pub fn create_new_held(path: &Path, bytes: &[u8], lock: bool) -> Result<Option<File>> {
    let fill = |tmp| filled(tmp, path, bytes, lock);
    publish_via(path, parent_of(path), fill, |tmp| {
        if on_network_fs() {
            // Renamed closed (see `put`), then opened again for the caller.
            let reopen = || super::open_regular_nofollow(path);
            return persist_new(tmp, path)?.then(reopen).transpose();
        }
        match tmp.persist_noclobber(path) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(None),
            Err(e) => Err(e.error),
        }
    })?
    .at("create", path)
}

/// `tmp` with `bytes` written to it, then locked when `lock` (best effort).
fn filled(mut tmp: NamedTempFile, path: &Path, bytes: &[u8], lock: bool) -> Result<NamedTempFile> {
    // Errors name the file being written, not its temporary copy (on a full disk, the user
    // needs to know which file was not written): written through the file, which adds no path.
    tmp.as_file_mut().write_all(bytes).at("write", path)?;
    if lock {
        let _ = tmp.as_file().try_lock();
    }
    Ok(tmp)
}

/// Replace (or create) `path` with `bytes` atomically. A symlink at `path` is replaced, not followed.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_staged(path, parent_of(path), bytes, false).map(drop)
}

/// [`replace`] through a temporary file made in `stage` rather than beside `path`: `path`'s
/// folder sees no temporary name come and go, which wakes nobody watching it (a queue). With
/// `held`, the file is locked before it is published and returned open.
pub fn replace_staged(path: &Path, stage: &Path, bytes: &[u8], held: bool) -> Result<Option<File>> {
    let fill = |tmp| filled(tmp, path, bytes, held);
    // The same open file as the temporary one: its lock lasts as long as either is open.
    let keep = |file: &File| held.then(|| file.try_clone()).transpose();
    publish_via(path, stage, fill, |tmp| {
        if on_network_fs() {
            // Renamed closed (see `put`), then opened again for the caller.
            put(tmp, path)?;
            return keep(&super::open_regular_nofollow(path)?);
        }
        let kept = keep(tmp.as_file())?;
        swap_in(tmp, path).map(|()| kept)
    })?
    .at("replace", path)
}

/// Publish the filled `tmp` over the regular file at `path` by exchange, the old one removed:
/// readers see old or new as with a rename, but ext4 does not write the new file out at once as
/// for a rename over a file (`auto_da_alloc`). Anything else at `path`, or no exchange: a rename.
fn swap_in(tmp: NamedTempFile, path: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        let regular = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
        if regular(path) && renameat_with(CWD, tmp.path(), CWD, path, RenameFlags::EXCHANGE).is_ok()
        {
            // What came out is the old file, unless `path` changed in between: put it back.
            if !regular(tmp.path()) {
                renameat_with(CWD, tmp.path(), CWD, path, RenameFlags::EXCHANGE)?;
                return put(tmp, path);
            }
            // Published: the old file left under the temporary name, should its removal fail,
            // is swept as a temporary file is.
            let _ = tmp.into_temp_path().close();
            return Ok(());
        }
    }
    put(tmp, path)
}

/// Replace `path` durably (fsync, rename, fsync of the folder), keeping an existing file's mode.
pub fn replace_durable(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = filled(made_in(parent_of(path))?, path, bytes, false)?;
    keep_mode(path, tmp.as_file())?;
    tmp.as_file().sync_all().at("write", path)?;
    persist_durable(tmp, path)
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

/// Copy the regular file `src` over `dst` atomically (never following a link); the bytes copied.
pub fn copy_replace(src: &Path, dst: &Path) -> Result<u64> {
    // Opened before any temporary file is made: a missing source makes none. Opened again only
    // when the copy has to be made a second time (see `publish_via`).
    let open = || open_nofollow(src, Access::Read).at("read", src);
    let opened = Cell::new(Some(open()?));
    let copied = Cell::new(0);
    let fill = |tmp| {
        let (tmp, n) = copy_into(src, opened.take().map_or_else(open, Ok)?, tmp, false)?;
        copied.set(n);
        Ok(tmp)
    };
    publish_via(dst, parent_of(dst), fill, |tmp| put(tmp, dst))?.at("replace", dst)?;
    Ok(copied.get())
}

/// A fsynced temporary copy of the regular file `src` in `dir`, with its mode, and its size.
pub fn copy_to_temp(src: &Path, dir: &Path) -> Result<(NamedTempFile, u64)> {
    let input = open_nofollow(src, Access::Read).at("read", src)?;
    copy_into(src, input, made_in(dir)?, true)
}

/// [`copy_to_temp`] from `src` opened (with its metadata) into a temporary file already made.
fn copy_into(
    src: &Path,
    (mut input, meta): (File, fs::Metadata),
    mut tmp: NamedTempFile,
    durable: bool,
) -> Result<(NamedTempFile, u64)> {
    let n = io::copy(&mut input, tmp.as_file_mut()).at("copy", src)?;
    tmp.as_file()
        .set_permissions(meta.permissions())
        .at("set permissions of", tmp.path())?;
    if durable {
        tmp.as_file().sync_all().at("copy", src)?;
    }
    Ok((tmp, n))
}

/// Everything `input` yields, in a new fsynced temporary file in `dir` with the mode of `like`.
pub fn spool(
    dir: &Path,
    input: &mut dyn Read,
    what: &Path,
    like: &Path,
) -> Result<(NamedTempFile, u64)> {
    let mut tmp = made_in(dir)?;
    // A read error is blamed on `what`; a write error on `like`, not the temporary copy (whose
    // own errors name the temporary path): written through the file.
    let mut buf = vec![0u8; 128 * 1024];
    let mut n = 0u64;
    loop {
        let got = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).at("read", what),
        };
        tmp.as_file_mut().write_all(&buf[..got]).at("write", like)?;
        n += got as u64;
    }
    keep_mode(like, tmp.as_file())?;
    tmp.as_file().sync_all().at("write", like)?;
    Ok((tmp, n))
}

/// Publish a filled temporary file at `path` by rename, replacing anything there (links too).
pub fn persist(tmp: NamedTempFile, path: &Path) -> Result<()> {
    put(tmp, path).at("replace", path)
}

/// [`persist`] with the bare error (`EXDEV` tells a spare on another filesystem).
fn put(tmp: NamedTempFile, path: &Path) -> io::Result<()> {
    if on_network_fs() {
        // SMB refuses to rename a file that is open (a sharing violation: `EBUSY`), and the
        // failed rename would leave the temporary file behind: close it first.
        return put_closed(tmp.into_temp_path(), path);
    }
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Rename the closed temporary file `tmp` to `path`, replacing it.
fn put_closed(tmp: TempPath, path: &Path) -> io::Result<()> {
    let mut tmp = Some(tmp);
    let passing =
        |e: &io::Error| super::raw::is_busy(e) || e.kind() == io::ErrorKind::AlreadyExists;
    super::raw::retry(passing, || {
        let t = tmp.take().expect("kept by the failed rename");
        t.persist(path).map_err(|e| {
            tmp = Some(e.path);
            e.error
        })
    })
}

/// Publish the filled `tmp` at `path` only if nothing is there (else `Ok(false)`, `tmp` removed).
pub fn persist_new(tmp: NamedTempFile, path: &Path) -> io::Result<bool> {
    let e = match tmp.into_temp_path().persist_noclobber(path) {
        Ok(()) => return Ok(true),
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) if super::raw::no_hard_links(&e.error) => e,
        Err(e) => return Err(e.error),
    };
    // sshfs answers `EPERM` for a name that exists, too.
    if super::open_regular_nofollow(path).is_ok() || !super::raw::create_exclusive(path, b"")? {
        return Ok(false);
    }
    put_closed(e.path, path).inspect_err(|_| {
        let _ = super::raw::remove_file(path);
    })?;
    Ok(true)
}

/// [`persist`], then fsync of the folder, so the new content survives a crash.
pub fn persist_durable(tmp: NamedTempFile, path: &Path) -> Result<()> {
    persist(tmp, path)?;
    sync_dir(parent_of(path))
}
