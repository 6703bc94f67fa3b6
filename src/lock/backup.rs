//! Backups: `FILE.bak` beside FILE, written before any change coord makes or allows.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::workspace::Target;

/// Copy `target` to `target.bak` if a regular file; the backup's path relative to the root.
pub fn write(root: &Path, target: &Target) -> Result<Option<String>> {
    if !regular(&target.abs) {
        return Ok(None);
    }
    let dst = layout::backup(&target.abs);
    // A backup holding this content (and mode) is left: relocking costs no write, inode or rename.
    if !fsutil::same_regular_files(&target.abs, &dst) {
        keep_generation(root, target);
        fsutil::copy_replace(&target.abs, &dst)?;
    }
    Ok(Some(rel(target)))
}

fn rel(target: &Target) -> String {
    format!("{}{}", target.rel, layout::BACKUP_SUFFIX)
}

/// The backup of `target` as it stands (a regular `FILE.bak`), relative to the root.
pub fn existing(target: &Target) -> Option<String> {
    regular(&layout::backup(&target.abs)).then(|| rel(target))
}

fn regular(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// A backup copied aside and fsynced, not yet published ([`Staged::commit`] renames it).
#[derive(Debug)]
pub struct Staged {
    root: PathBuf,
    target: Target,
    tmp: tempfile::NamedTempFile,
}

/// Copy `target` aside for a backup when it is a regular file (`None`: nothing to back up).
pub fn stage(root: &Path, target: &Target) -> Result<Option<Staged>> {
    if !regular(&target.abs) {
        return Ok(None);
    }
    let dst = layout::backup(&target.abs);
    let dir = dst.parent().unwrap_or(Path::new("."));
    let (tmp, _) = fsutil::copy_to_temp(&target.abs, dir)?;
    let (root, target) = (root.to_path_buf(), target.clone());
    Ok(Some(Staged { root, target, tmp }))
}

impl Staged {
    /// Publish the copy at `FILE.bak` (never through a link); its path relative to the root.
    pub fn commit(self) -> Result<String> {
        let dst = layout::backup(&self.target.abs);
        if !fsutil::same_regular_files(self.tmp.path(), &dst) {
            keep_generation(&self.root, &self.target);
        }
        fsutil::persist(self.tmp, &dst)?;
        Ok(rel(&self.target))
    }
}

/// How many older generations are kept under `.coord/backups/` beside `FILE.bak`.
pub const GENERATIONS_KEPT: usize = 8;

/// One backup generation of a file.
#[derive(Debug, Clone, Serialize)]
pub struct Generation {
    /// 1 for `FILE.bak`, 2 for the backup it replaced, and so on.
    pub n: usize,
    /// Where it is, relative to the root.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was made (its modification time).
    pub saved_at: String,
    /// Its absolute path.
    #[serde(skip)]
    pub abs: PathBuf,
}

/// Keep `FILE.bak` as the newest older generation, dropping those beyond [`GENERATIONS_KEPT`].
pub fn keep_generation(root: &Path, target: &Target) {
    let _ = keep_generation_unpruned(root, target);
    prune_generations(root, target);
}

/// A generation just kept, not yet counted against [`GENERATIONS_KEPT`].
#[derive(Debug)]
pub struct Kept {
    /// Where it is.
    pub path: PathBuf,
    /// The folders made for it, innermost first.
    pub made: Vec<PathBuf>,
}

/// Keep `FILE.bak` as the newest older generation, dropping none (a restore drops them once
/// the content it restores is in place: [`prune_generations`]).
pub fn keep_generation_unpruned(root: &Path, target: &Target) -> Option<Kept> {
    let bak = layout::backup(&target.abs);
    if !regular(&bak) {
        return None;
    }
    let dir = generations_dir(root, target);
    let made: Vec<PathBuf> = (dir.ancestors())
        .take_while(|d| fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    fsutil::ensure_dir(&dir).ok()?;
    fsutil::sweep_temps(&dir);
    let seqs = stored(&dir);
    let mut next = seqs.last().map_or(1, |(s, _)| s.saturating_add(1));
    for _ in 0..16 {
        let path = dir.join(layout::generation_name(next));
        match keep_as(&bak, &path, &dir) {
            Ok(()) => return Some(Kept { path, made }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => next = next.saturating_add(1),
            Err(_) => return None,
        }
    }
    None
}

/// Drop the oldest generations of `target` beyond [`GENERATIONS_KEPT`].
pub fn prune_generations(root: &Path, target: &Target) {
    let seqs = stored(&generations_dir(root, target));
    let excess = seqs.len().saturating_sub(GENERATIONS_KEPT);
    for (_, old) in seqs.into_iter().take(excess) {
        let _ = fsutil::remove(&old);
    }
}

fn generations_dir(root: &Path, target: &Target) -> PathBuf {
    layout::backup_generations(&crate::worktree::shared_root(root), &target.abs)
}

/// `bak` kept at `path`: a hard link (backups are replaced by rename, never written in place, so
/// the kept generation never changes), else a new copy.
fn keep_as(bak: &Path, path: &Path, dir: &Path) -> io::Result<()> {
    match fsutil::raw::hard_link(bak, path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) => {}
    }
    let (tmp, _) = fsutil::copy_to_temp(bak, dir).map_err(io::Error::other)?;
    if fsutil::persist_new(tmp, path)? {
        Ok(())
    } else {
        Err(io::ErrorKind::AlreadyExists.into())
    }
}

/// The generations stored in `dir`, oldest first.
fn stored(dir: &Path) -> Vec<(u64, PathBuf)> {
    let entries = crate::fsutil::read_dir(dir).into_iter().flatten().flatten();
    let mut seqs: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            // Eight digits at least: past 99999999 the names grow (`generation_name`).
            let digits = name.len() >= 8 && name.bytes().all(|b| b.is_ascii_digit());
            Some((name.parse().ok().filter(|_| digits)?, e.path()))
        })
        .collect();
    seqs.sort();
    seqs
}

/// Every backup generation of `target`, newest first: `FILE.bak`, then `.coord/backups/`.
pub fn generations(root: &Path, target: &Target) -> Result<Vec<Generation>> {
    let dir = layout::backup_generations(&crate::worktree::shared_root(root), &target.abs);
    let mut older = Vec::new();
    if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        crate::fsutil::read_dir(&dir).at("read", &dir)?;
        older = stored(&dir).into_iter().rev().map(|(_, p)| p).collect();
    }
    let mut all = Vec::new();
    for path in std::iter::once(layout::backup(&target.abs)).chain(older) {
        let Some(meta) = fs::symlink_metadata(&path).ok().filter(|m| m.is_file()) else {
            continue;
        };
        let saved_at = meta.modified().map(crate::clock::from_system_time);
        all.push(Generation {
            n: all.len() + 1,
            path: (path.strip_prefix(root))
                .map_or_else(|_| path.display().to_string(), |r| r.display().to_string()),
            bytes: meta.len(),
            saved_at: (saved_at.as_ref().map(crate::clock::format_timestamp)).unwrap_or_default(),
            abs: path,
        });
    }
    Ok(all)
}
