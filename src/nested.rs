//! Workspaces inside this one. A folder below the root that holds its own `.coord/` is a
//! workspace of its own (outside git, or made on purpose with `coord init` there): its agents,
//! presences and messages live apart from this one's, though a lock file beside a file is seen
//! from both. This module finds such workspaces so that `status` can say it holds them and a
//! message to an agent living in one is refused rather than left where it never looks.
//!
//! It never walks the tree. A nested workspace is known from two places:
//! - the register `.coord/nested/` of the workspace around it, one file per nested workspace
//!   holding its path, written when the nested workspace's `.coord/` is made or one of its agents
//!   says it is here ([`register`]);
//! - the lock files a caller already found below the root, whose folder lies inside one (a few
//!   `stat`s per lock, each folder looked at once).
//!
//! An entry whose folder no longer holds a `.coord/` is ignored; a register entry that is not a
//! plain relative path below the root is ignored too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path};

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::fsutil;
use crate::layout;
use crate::v3::presence;
use crate::workspace::Workspace;

/// A workspace inside this one.
#[derive(Debug, Clone, Serialize)]
pub struct Nested {
    /// Its root, relative to this root, with `/` separators.
    pub root: String,
    /// The agents with a presence there.
    pub agents: Vec<NestedAgent>,
}

/// An agent of a nested workspace, as its presence says.
#[derive(Debug, Clone, Serialize)]
pub struct NestedAgent {
    /// The agent's id.
    pub agent: String,
    /// Its display name.
    pub name: String,
    /// `ACTIVE`, `INACTIVE` or `FINISHED`.
    pub status: String,
    /// What it works on.
    pub working_on: Option<String>,
}

/// Whether `dir` holds a `.coord/` folder (a workspace's own state).
fn is_workspace(dir: &Path) -> bool {
    // Its own `.coord/`: a linked git worktree shares the main tree's and is not nested.
    crate::fsutil::real_entry(&dir.join(layout::STATE_DIR)).is_some_and(|m| m.is_dir())
}

/// If a workspace lies around `root`, note `root` in that workspace's register (once) so that
/// its `status` can say it holds this one. Called when `root`'s `.coord/` is made and when an
/// agent says it is here (`presence`, `startup`): a nested workspace is often the older one, made
/// before the workspace around it. A few `stat`s, one per folder above. Best effort: a register
/// that cannot be written leaves the nested workspace to be found by its locks.
pub fn register(root: &Path) {
    // A linked git worktree (even one inside the main checkout) shares the main tree's
    // workspace: it is not a workspace nested in it.
    if crate::worktree::shared_root(root) != root {
        return;
    }
    let Some(outer) = root
        .parent()
        .and_then(|p| p.ancestors().find(|d| is_workspace(d)))
    else {
        return;
    };
    let Some(rel) = root
        .strip_prefix(outer)
        .ok()
        .and_then(|r| r.to_str())
        .map(|r| r.replace(std::path::MAIN_SEPARATOR, "/"))
        .filter(|r| !r.is_empty())
    else {
        return;
    };
    let entry = layout::nested_entry(&crate::worktree::shared_root(outer), &rel);
    if fs::symlink_metadata(&entry).is_ok() {
        return;
    }
    if fsutil::ensure_dir(&layout::nested_register(&crate::worktree::shared_root(
        outer,
    )))
    .is_ok()
    {
        let _ = fsutil::replace(&entry, format!("{rel}\n").as_bytes());
    }
}

/// The paths the register of `root` names, as written (unchecked).
fn registered(root: &Path) -> Vec<String> {
    let Ok(entries) =
        crate::fsutil::read_dir(layout::nested_register(&crate::worktree::shared_root(root)))
    else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| fsutil::read_capped(&e.path(), 4096).ok())
        .filter_map(|b| String::from_utf8(b).ok())
        .map(|t| t.trim().to_string())
        .collect()
}

/// A path relative to the root that stays below it (no `..`, not absolute, not empty).
fn plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// The workspaces inside `ws`: those its register names and those holding one of `files`
/// (paths relative to the root, such as the locked files a status found), sorted by path.
pub fn find(ws: &Workspace, files: &[&str]) -> Vec<Nested> {
    let root = ws.root();
    let mut roots = BTreeSet::new();
    for rel in registered(root) {
        if plain_relative(&rel) && is_workspace(&root.join(&rel)) {
            roots.insert(rel);
        }
    }
    // Each folder is looked at once, however many locks lie in it.
    let mut seen: BTreeMap<String, bool> = BTreeMap::new();
    for file in files {
        let mut dir = Path::new(file).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            let Some(key) = d
                .to_str()
                .map(|k| k.replace(std::path::MAIN_SEPARATOR, "/"))
            else {
                break;
            };
            if seen.contains_key(&key) {
                break;
            }
            let nested = plain_relative(&key) && is_workspace(&root.join(d));
            if nested {
                roots.insert(key.clone());
            }
            seen.insert(key, nested);
            dir = d.parent();
        }
    }
    let now = clock::now();
    roots
        .into_iter()
        .map(|rel| Nested {
            agents: agents_of(&root.join(&rel), &now),
            root: rel,
        })
        .collect()
}

fn agents_of(root: &Path, now: &Timestamp) -> Vec<NestedAgent> {
    let (presences, _) = presence::scan(root);
    presences
        .iter()
        .map(|p| NestedAgent {
            agent: p.id.clone(),
            name: p.name().to_string(),
            status: p.state(now).as_str().to_string(),
            working_on: p
                .field("working_on")
                .filter(|w| *w != "-")
                .map(str::to_string),
        })
        .collect()
}

/// The nested workspace where `agent` has a presence, when it has none in `ws` itself: a message
/// sent to it here would wait in an inbox it never reads. Looks for the locks under the root
/// only then (a folder walk, on this rare path alone).
pub fn home_of(ws: &Workspace, agent: &str) -> Option<Nested> {
    if fs::symlink_metadata(layout::presence(
        &crate::worktree::shared_root(ws.root()),
        agent,
    ))
    .is_ok()
    {
        return None;
    }
    let locks = crate::v3::lock::scan_tree(ws);
    let files: Vec<&str> = locks.iter().map(|l| l.file.as_str()).collect();
    find(ws, &files)
        .into_iter()
        .find(|n| n.agents.iter().any(|a| a.agent == agent))
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
        let top = fs::canonicalize(top.path()).unwrap();
        fs::create_dir_all(top.join(".coord")).unwrap();
        let sub = top.join("a/sub");
        fs::create_dir_all(sub.join(".coord")).unwrap();
        register(&sub);
        let ws = Workspace::at(top.clone());
        let found = find(&ws, &[]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].root, "a/sub");
        // Gone: no longer listed.
        fs::remove_dir(sub.join(".coord")).unwrap();
        assert!(find(&ws, &[]).is_empty());
    }
}
