//! Appends: one `write(2)` of a whole line, under the file's kernel lock.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Access, open_nofollow, open_regular_nofollow, parent_of, sync_dir};
use crate::error::{IoResultExt, Result};

/// Append `bytes` to the existing regular file at `path` with one `write`, then fsync it.
pub fn append_durable(path: &Path, bytes: &[u8]) -> Result<()> {
    let (file, meta) = open_nofollow(path, Access::Append).at("append to", path)?;
    append_whole(&file, path, bytes, meta.len())?;
    file.sync_all().at("sync", path)
}

/// Append `line` to `path` (created when missing, never through a symlink), as one line.
pub fn append_line(path: &Path, line: &[u8]) -> Result<()> {
    append_inner(path, line, false).map(drop)
}

/// [`append_line`], then fsync (of the folder too when the file was created); returns the
/// 1-based number of the line, counted under the append's kernel lock.
pub fn append_line_durable_numbered(path: &Path, line: &[u8]) -> Result<usize> {
    let (file, created, number) = append_inner(path, line, true)?;
    file.sync_data().at("sync", path)?;
    if created {
        sync_dir(parent_of(path))?;
    }
    Ok(number)
}

/// fsync the regular file at `path` (data written through another descriptor included).
pub fn sync_file(path: &Path) -> Result<()> {
    let file = open_regular_nofollow(path).at("sync", path)?;
    file.sync_data().at("sync", path)
}

/// Append under the file's kernel lock; with `count`, also the number of the new line.
fn append_inner(path: &Path, line: &[u8], count: bool) -> Result<(File, bool, usize)> {
    use std::os::unix::fs::FileExt;
    let existed = fs::symlink_metadata(path).is_ok();
    let (file, _) = open_nofollow(path, Access::AppendOrCreate).at("append to", path)?;
    file.lock().at("lock", path)?;
    // Under the lock the length is final.
    let len = file.metadata().at("inspect", path)?.len();
    // One more than the newlines there.
    let mut number = usize::from(count);
    if count {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut at = 0u64;
        while at < len {
            let n = file.read_at(&mut chunk, at).at("read", path)?;
            if n == 0 {
                break;
            }
            number += memchr::memchr_iter(b'\n', &chunk[..n]).count();
            at += n as u64;
        }
    }
    let (buf, led) = framed(&file, path, len, line)?;
    number += usize::from(count && led);
    append_whole(&file, path, &buf, len)?;
    // Callers sync after the flock is gone: the data is in its final place already.
    Ok((file, !existed, number))
}

/// Append one whole `line` to the log at `path` and, once it has reached `rotate_at` bytes,
/// rename it to `rotated`, all under the log's kernel lock.
pub fn append_line_rotating(
    path: &Path,
    line: &[u8],
    rotate_at: u64,
    rotated: &Path,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
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
        let (buf, led) = framed(&file, path, len, line)?;
        // A plain write: this log's readers skip a line a kill tore, and it is written on every
        // transition, so it does not pay for a finisher.
        if let Err(e) = (&file).write_all(&buf) {
            let _ = file.set_len(len);
            return Err(e).at("append to", path);
        }
        let end = len + buf.len() as u64;
        if end >= rotate_at {
            if len >= rotate_at {
                // Where this line starts: after the newline written in front of it, if any.
                cut_to_newest(&file, path, end, len + u64::from(led), rotate_at)?;
            }
            fs::rename(path, rotated).at("rotate", path)?;
        }
        return Ok(());
    }
    Err(std::io::Error::other("the log kept being rotated away")).at("append to", path)
}

/// [`write_whole`], cut back to `len` when it fails (a full disk): no torn line stays behind.
fn append_whole(file: &File, path: &Path, buf: &[u8], len: u64) -> Result<()> {
    write_whole(file, buf, len)
        .inspect_err(|_| {
            let _ = file.set_len(len);
        })
        .at("append to", path)
}

/// `line` as appended to `file` (`len` bytes long, under its kernel lock): a newline first when
/// the last line there lacks one (then `true`), and a newline at its end.
fn framed(file: &File, path: &Path, len: u64, line: &[u8]) -> Result<(Vec<u8>, bool)> {
    use std::os::unix::fs::FileExt;
    let mut buf = Vec::with_capacity(line.len() + 2);
    let mut last = [b'\n'];
    if len > 0 {
        file.read_exact_at(&mut last, len - 1).at("read", path)?;
    }
    let led = last[0] != b'\n';
    if led {
        buf.push(b'\n');
    }
    buf.extend_from_slice(line);
    if buf.last() != Some(&b'\n') {
        buf.push(b'\n');
    }
    Ok((buf, led))
}

/// Replace the log at `path` (`file`, locked, `end` bytes long) by its newest whole lines
/// within `keep` bytes, the line starting at `line_at` always included.
fn cut_to_newest(file: &File, path: &Path, end: u64, line_at: u64, keep: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let from = end.saturating_sub(keep).min(line_at);
    // From the byte before `from`, to start at the first line that begins at or after it.
    let start = from.saturating_sub(1);
    let mut bytes = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut bytes, start).at("read", path)?;
    let upto = (line_at - start) as usize;
    let skip = match from {
        0 => 0,
        _ => memchr::memchr(b'\n', &bytes[..upto]).map_or(upto, |at| at + 1),
    };
    let newest = &bytes[skip..];
    let dir = parent_of(path);
    // Left by a writer killed here before: nobody else sweeps this folder.
    super::sweep_temps(dir);
    let mut tmp = super::temp_in(dir).at("create a temporary file in", dir)?;
    tmp.as_file_mut().write_all(newest).at("write", path)?;
    // A plain rename, not `persist`'s exchange: no name but `path` ever holds the old log.
    let persisted = tmp.persist(path).map_err(|e| e.error);
    persisted.map(drop).at("replace", path)
}

/// The size of the chunks the kernel copies a write into the page cache by.
const CHUNK: u64 = 4096;

/// Whether appends that span chunks are finished by a helper process ([`finish_appends`]).
static FINISHER: AtomicBool = AtomicBool::new(false);

/// The argument that makes the coord binary run [`finish_append`] instead of a command.
pub const FINISH_APPEND_ARG: &str = "__finish-append";

/// Have appends that span page-cache chunks written by a child (`<exe> __finish-append`) that
/// writes only once it has the whole line: a SIGKILL to this process cannot leave half a line.
pub fn finish_appends() {
    FINISHER.store(true, Ordering::Relaxed);
}

/// Write `buf` at the end of `file` (`len` bytes, locked) as one whole: one `write` when it fits
/// in one chunk, else through the finisher when there is one.
fn write_whole(file: &File, buf: &[u8], len: u64) -> io::Result<()> {
    let spans = len % CHUNK + buf.len() as u64 > CHUNK;
    let finisher = spans && cfg!(target_os = "linux") && FINISHER.load(Ordering::Relaxed);
    match finisher.then(|| spawn_finisher(file)).flatten() {
        Some(child) => feed_finisher(child, buf),
        // Within one chunk, a plain write is whole; across chunks with no helper to be had (the
        // executable is gone), it still is unless this very process is killed during it.
        None => (&*file).write_all(buf),
    }
}

/// Start the finisher with `file` as its standard output (the same open file, so the kernel
/// lock stays held until it exits too) and a pipe as its standard input.
fn spawn_finisher(file: &File) -> Option<Child> {
    let exe = std::env::current_exe().ok()?;
    Command::new(exe)
        .arg(FINISH_APPEND_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(file.try_clone().ok()?))
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

/// Send `buf` after its length (so a feed cut short is told from a whole one) and wait for the
/// finisher's exit status: 0, or the `errno` of its failed write.
fn feed_finisher(mut child: Child, buf: &[u8]) -> io::Result<()> {
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let len = (buf.len() as u64).to_le_bytes();
    let fed = stdin.write_all(&len).and_then(|()| stdin.write_all(buf));
    drop(stdin);
    let status = child.wait()?;
    fed?;
    match status.code() {
        Some(0) => Ok(()),
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Err(io::Error::other("the process writing the line was killed")),
    }
}

/// The finisher's side: a length and that many bytes from stdin, written to stdout in one go;
/// returns 0 or the `errno` of the failure (`EPIPE`: cut short).
pub fn finish_append() -> u8 {
    const SHORT: u8 = rustix::io::Errno::PIPE.raw_os_error() as u8;
    let mut stdin = io::stdin().lock();
    let mut size = [0u8; 8];
    if stdin.read_exact(&mut size).is_err() {
        return SHORT;
    }
    let Ok(size) = usize::try_from(u64::from_le_bytes(size)) else {
        return SHORT;
    };
    let mut buf = Vec::new();
    let read = (&mut stdin).take(size as u64).read_to_end(&mut buf);
    if read.is_err() || buf.len() != size {
        return SHORT;
    }
    // Straight to the descriptor: std's stdout would buffer by line.
    let out = io::stdout().as_fd().try_clone_to_owned().map(File::from);
    match out.and_then(|mut out| out.write_all(&buf)) {
        Ok(()) => 0,
        // A write that took nothing (`WriteZero`, no errno): the disk is full.
        Err(e) => {
            let errno = e.raw_os_error();
            u8::try_from(errno.unwrap_or(rustix::io::Errno::NOSPC.raw_os_error())).unwrap_or(SHORT)
        }
    }
}
