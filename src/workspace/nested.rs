//! Workspaces inside this one. A folder below the root that holds its own `.coord/` is a
//! workspace of its own (outside git, or made on purpose with `coord init` there): its agents,
//! presences and messages live apart from this one's, though a lock file beside a file is seen
//! from both.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use crate::fsutil;
use crate::layout;
use crate::worktree::shared_root;

/// Whether `dir` holds a `.coord/` folder (a workspace's own state).
fn is_workspace(dir: &Path) -> bool {
    // Its own `.coord/`: a linked git worktree shares the main tree's and is not nested.
    fsutil::real_entry(&dir.join(layout::STATE_DIR)).is_some_and(|m| m.is_dir())
}

/// Note `root` in the register of the workspace around it, if any (once); `None` when there
/// is nothing (more) to note.
pub fn register(root: &Path) -> Option<()> {
    // A linked git worktree (even one inside the main checkout) shares the main tree's
    // workspace: it is not a workspace nested in it.
    if shared_root(root) != root {
        return None;
    }
    let outer = root.parent()?.ancestors().find(|d| is_workspace(d))?;
    // Below a folder above `root`: never empty.
    let rel = root.strip_prefix(outer).ok()?.to_str()?;
    let shared = shared_root(outer);
    let entry = layout::nested_entry(&shared, rel);
    if std::fs::symlink_metadata(&entry).is_ok() {
        return None;
    }
    fsutil::ensure_dir(&layout::nested_register(&shared)).ok()?;
    fsutil::replace(&entry, format!("{rel}\n").as_bytes()).ok()
}

/// A path relative to the root that stays below it (no `..`, not absolute, not empty).
fn plain_relative(rel: &str) -> bool {
    let mut parts = Path::new(rel).components();
    !rel.is_empty() && parts.all(|c| matches!(c, Component::Normal(_)))
}

/// The roots of the workspaces inside `root` (registered, or holding one of `files`), sorted.
pub fn roots(root: &Path, files: &[&str]) -> BTreeSet<String> {
    let registered = fsutil::read_dir(layout::nested_register(&shared_root(root)))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fsutil::read_capped(&e.path(), 4096).ok())
        .filter_map(|b| String::from_utf8(b).ok())
        .map(|t| t.trim().to_string());
    let nested = |rel: &String| plain_relative(rel) && is_workspace(&root.join(rel));
    let mut roots: BTreeSet<String> = registered.filter(nested).collect();
    // Each folder is looked at once, however many files lie in it.
    let mut seen = BTreeSet::new();
    for file in files {
        for d in Path::new(file).ancestors().skip(1) {
            let Some(key) = d.to_str().filter(|k| !k.is_empty()) else {
                break;
            };
            if !seen.insert(key.to_string()) {
                break;
            }
            if plain_relative(key) && is_workspace(&root.join(d)) {
                roots.insert(key.to_string());
            }
        }
    }
    roots
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn register_entries_must_stay_below_the_root() {
        for ok in ["sub", "a/b"] {
            assert!(plain_relative(ok), "{ok}");
        }
        for bad in ["", "..", "../x", "/etc", "a/../../b", "./"] {
            assert!(!plain_relative(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_workspace_made_inside_another_is_registered_there() {
        let top = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(top.join(".coord")).unwrap();
        let sub = top.join("a/sub");
        std::fs::create_dir_all(sub.join(".coord")).unwrap();
        register(&sub);
        assert_eq!(roots(&top, &[]), BTreeSet::from(["a/sub".to_string()]));
        // Gone: no longer listed.
        std::fs::remove_dir(sub.join(".coord")).unwrap();
        assert!(roots(&top, &[]).is_empty());
    }
}
