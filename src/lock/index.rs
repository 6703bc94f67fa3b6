//! The index of the locks coord made: `.coord/held/`, one entry per lock file, so that the
//! views find them without walking the tree, in ignored folders (`node_modules/`) too.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::layout;

/// Make the entry of `agent`'s lock on `rel` if missing, under the mutex, before the lock file.
pub(super) fn note(root: &Path, rel: &str, agent: &str) -> Result<()> {
    let (path, hashed) = layout::held_entry(&crate::worktree::shared_root(root), rel, agent);
    if !hashed {
        return fsutil::empty_marker(&path);
    }
    // A path too long for a name is kept in the entry (nothing is written when it exists).
    let create = || fsutil::raw::create_exclusive(&path, rel.as_bytes()).map(drop);
    match create() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fsutil::ensure_dir(&layout::held_dir(&crate::worktree::shared_root(root)))?;
            create().at("create", &path)
        }
        other => other.at("create", &path),
    }
}

/// Remove the entry of `agent`'s lock on `rel` (under the mutex, the lock file gone). Best effort:
/// an entry left behind is only a hint that readers verify.
pub(super) fn forget(root: &Path, rel: &str, agent: &str) {
    let (entry, _) = layout::held_entry(&crate::worktree::shared_root(root), rel, agent);
    let _ = fsutil::raw::remove_file(&entry);
}

/// Forget the entry of `agent`'s lock file `lock_path` on `rel`, just removed, in any work tree.
pub(super) fn forget_removed(root: &Path, rel: &str, agent: &str, lock_path: &Path) {
    if lock_path.file_name() == layout::lock_file(Path::new(rel), agent).file_name() {
        forget(root, rel, agent);
    }
}

/// The locks coord made as its index lists them (file, agent), unverified, unordered, no walk.
pub fn entries(root: &Path) -> Vec<(String, String)> {
    let dir = layout::held_dir(&crate::worktree::shared_root(root));
    (fsutil::list_names(&dir).into_iter().flatten())
        .filter_map(|name| {
            let (rel, agent) = layout::parse_held_entry(name.to_str()?)?;
            let read = || fsutil::read_capped(&dir.join(&name), RECORD_CAP).ok();
            let rel = rel.or_else(|| String::from_utf8(read()?).ok())?;
            plain_relative(&rel).then_some((rel, agent))
        })
        .collect()
}

/// Whether `rel` is a plain relative path below the root (a planted entry must not lead outside).
fn plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.contains('\0')
        && (rel.split('/')).all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Remove every entry whose lock file is [`gone`], and the leftovers of older coords in `.coord/`.
pub(super) fn prune(root: &Path) {
    for leftover in layout::leftovers(&crate::worktree::shared_root(root)) {
        let _ = fsutil::remove_tree(&leftover);
    }
    forget_gone(root, false);
}

/// Forget the index's entries whose lock file is gone (`dry_run`: only say which): their paths.
pub fn forget_gone(root: &Path, dry_run: bool) -> Vec<PathBuf> {
    (gone(root).into_iter())
        .map(|(rel, agent)| {
            if !dry_run {
                forget(root, &rel, &agent);
            }
            layout::held_entry(&crate::worktree::shared_root(root), &rel, &agent).0
        })
        .collect()
}

/// The entries whose lock file no work tree holds (removed by hand, or never published).
pub(super) fn gone(root: &Path) -> Vec<(String, String)> {
    let entries = entries(root);
    if entries.is_empty() {
        return entries;
    }
    let tops = crate::worktree::tops(root);
    (entries.into_iter())
        .filter(|(rel, agent)| {
            tops.iter().all(|top| {
                fs::symlink_metadata(layout::lock_file(&top.join(rel), agent))
                    .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
            })
        })
        .collect()
}
