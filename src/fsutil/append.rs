//! Appends: one `write(2)` of a whole line, under the file's kernel lock.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use super::{Access, open_nofollow, open_regular_nofollow, parent_of, sync_dir};
use crate::error::{IoResultExt, Result};

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
    let (mut file, meta) = open_nofollow(path, Access::Append).at("append to", path)?;
    let len = meta.len();
    if let Err(e) = file.write_all(bytes) {
        // Whole or absent: a failed append (a full disk) is cut back to the previous length.
        let _ = file.set_len(len);
        return Err(e).at("append to", path);
    }
    file.sync_all().at("sync", path)
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
    let (file, _) = open_nofollow(path, Access::AppendOrCreate).at("append to", path)?;
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

/// Append one whole `line` to the log at `path` (created when missing, never through a
/// symlink) and, once the log has reached `rotate_at` bytes, rename it to `rotated` (replacing
/// the generation there), all while holding the log's kernel lock.
///
/// Whole or absent: the line goes out in one `write(2)` on an `O_APPEND` descriptor under
/// `flock`; a failed write (a full disk) is cut back to the previous length. A line left torn
/// by a writer killed mid-write (no trailing newline) gets a newline first, so the new line
/// stands on its own. The append is made only to the file that is at `path` while the lock is
/// held (a writer that opened a log just rotated away opens the new one), so a rotation never
/// drops a line.
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) naming the path.
pub fn append_line_rotating(
    path: &Path,
    line: &[u8],
    rotate_at: u64,
    rotated: &Path,
) -> Result<()> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    for _ in 0..8 {
        let (file, _) = open_nofollow(path, Access::AppendOrCreate).at("append to", path)?;
        file.lock().at("lock", path)?;
        let meta = file.metadata().at("inspect", path)?;
        // Rotated away between the open and the lock: append to the log now at `path`.
        match fs::symlink_metadata(path) {
            Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => {}
            _ => continue,
        }
        let len = meta.len();
        let mut buf = Vec::with_capacity(line.len() + 2);
        if len > 0 {
            let mut last = [0u8; 1];
            file.read_exact_at(&mut last, len - 1).at("read", path)?;
            if last[0] != b'\n' {
                buf.push(b'\n');
            }
        }
        buf.extend_from_slice(line);
        if buf.last() != Some(&b'\n') {
            buf.push(b'\n');
        }
        if let Err(e) = (&file).write_all(&buf) {
            let _ = file.set_len(len);
            return Err(e).at("append to", path);
        }
        if len + buf.len() as u64 >= rotate_at {
            fs::rename(path, rotated).at("rotate", path)?;
        }
        return Ok(());
    }
    Err(std::io::Error::other("the log kept being rotated away")).at("append to", path)
}
