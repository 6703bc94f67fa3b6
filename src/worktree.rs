//! Git worktrees: the work trees of one repository share one workspace (contract §10).

use std::collections::HashMap;
use std::convert::Infallible;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::fsutil::{self, RECORD_CAP};

/// The presence key naming the work tree an agent last acted in (where there are several).
pub const PRESENCE_KEY: &str = "worktree";

/// A value found once per process for each workspace root.
pub(crate) type PerRoot<T> = OnceLock<Mutex<HashMap<PathBuf, T>>>;

/// The value `cache` holds for `root`, found by `find` the first time (an error is not kept).
pub(crate) fn per_root<T: Clone, E>(
    cache: &PerRoot<T>,
    root: &Path,
    find: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let map = cache.get_or_init(Default::default);
    if let Some(found) = map.lock().ok().and_then(|m| m.get(root).cloned()) {
        return Ok(found);
    }
    let found = find()?;
    if let Ok(mut m) = map.lock() {
        m.insert(root.to_path_buf(), found.clone());
    }
    Ok(found)
}

/// One work tree of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Its top level.
    pub top: PathBuf,
    /// Its git folder, whose `HEAD` names the branch checked out there (read only when asked).
    gitdir: Option<PathBuf>,
    /// The branch, once read (a view asks it for each lock and agent in the tree).
    branch: std::cell::OnceCell<Option<String>>,
}

impl Tree {
    /// The branch checked out there (`None`: a detached HEAD, unreadable, or not a git tree).
    pub fn branch(&self) -> Option<String> {
        let read = || self.gitdir.as_deref().and_then(branch_of);
        self.branch.get_or_init(read).clone()
    }
}

/// Read a small git file, trimmed.
fn read_small(path: &Path) -> Option<String> {
    let bytes = fsutil::read_capped(path, RECORD_CAP).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim().to_string())
}

/// `p` (as written in a git file) resolved against `base`, canonical when it exists.
fn resolve(base: &Path, p: &str) -> PathBuf {
    let joined = base.join(p);
    fs::canonicalize(&joined).unwrap_or(joined)
}

/// The git folder a `.git` *file* at `top` names (a linked worktree's or a submodule's).
fn gitfile_target(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    if !fs::symlink_metadata(&dot_git).ok()?.is_file() {
        return None;
    }
    let text = read_small(&dot_git)?;
    Some(resolve(top, text.strip_prefix("gitdir:")?.trim()))
}

/// The git folder of the work tree at `top`: `top/.git`, or the folder its `.git` file names.
fn git_dir(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    if fs::symlink_metadata(&dot_git).ok()?.is_dir() {
        return fs::canonicalize(&dot_git).ok();
    }
    gitfile_target(top)
}

/// The superproject's work tree when `top` is a submodule (`<super>/.git/modules/NAME`).
pub fn superproject_of(top: &Path) -> Option<PathBuf> {
    let gitdir = gitfile_target(top)?;
    if fs::symlink_metadata(gitdir.join("commondir")).is_ok() {
        return None;
    }
    let has_git = |a: &&Path| fsutil::real_entry(&a.join(".git")).is_some();
    let above = top.parent()?.ancestors().find(has_git)?;
    let modules = git_dir(above)?.join("modules");
    (gitdir.starts_with(&modules) && gitdir != modules).then(|| above.to_path_buf())
}

/// Whether `top` is the top level of a linked worktree (a `.git` file with a `commondir`).
pub fn is_linked(top: &Path) -> bool {
    linked_common_dir(top).is_some()
}

/// The common git folder of the work tree at `top`: its `.git`, or a linked one's `commondir`.
pub fn common_dir(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    if fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_dir()) {
        return Some(dot_git);
    }
    linked_common_dir(top)
}

/// The work tree the folder `dir` is in: the nearest of it and its ancestors holding a `.git`.
fn enclosing_top(dir: &Path) -> Option<&Path> {
    dir.ancestors()
        .find(|a| fs::symlink_metadata(a.join(".git")).is_ok())
}

/// The [`common_dir`] of the work tree the folder `dir` is in.
pub fn enclosing_common_dir(dir: &Path) -> Option<PathBuf> {
    common_dir(enclosing_top(dir)?)
}

/// The git folder holding the repository (`config`, `info/exclude`) of the work tree at `top`.
pub fn repository_dir(top: &Path) -> Option<PathBuf> {
    common_dir(top).or_else(|| gitfile_target(top))
}

/// The work tree the folder `dir` is in and its [`repository_dir`].
pub fn enclosing_repository(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let top = enclosing_top(dir)?;
    Some((top.to_path_buf(), repository_dir(top)?))
}

/// The common git folder a linked worktree at `top` names (its git folder's `commondir`).
fn linked_common_dir(top: &Path) -> Option<PathBuf> {
    let gitdir = gitfile_target(top)?;
    let common = read_small(&gitdir.join("commondir"))?;
    Some(resolve(&gitdir, &common))
}

/// The main work tree of a repository whose common folder is `common` (`None`: a bare one).
fn main_top(common: &Path) -> Option<PathBuf> {
    if common.file_name()? != ".git" {
        return None;
    }
    let top = common.parent()?.to_path_buf();
    (!is_gone(&top)).then_some(top)
}

/// Where the shared state of the workspace at `root` lives: the main work tree's top level
/// when `root` is a linked worktree without its own `.coord/`, else `root` itself.
pub fn shared_root(root: &Path) -> PathBuf {
    static CACHE: PerRoot<PathBuf> = OnceLock::new();
    let Ok(found) = per_root(&CACHE, root, || {
        let main = (!has_own_state(root))
            .then(|| main_top(&linked_common_dir(root)?))
            .flatten();
        Ok::<_, Infallible>(main.unwrap_or_else(|| root.to_path_buf()))
    });
    found
}

/// Whether the work tree at `top` has a `.coord/` folder of its own, which keeps it apart.
fn has_own_state(top: &Path) -> bool {
    fs::symlink_metadata(top.join(crate::layout::STATE_DIR)).is_ok_and(|m| m.is_dir())
}

/// A work tree as a refusal names a holder's place: `worktree /repo-b, branch feature`.
pub fn place(top: impl std::fmt::Display, branch: Option<&str>) -> String {
    match branch {
        Some(b) => format!("worktree {top}, branch {b}"),
        None => format!("worktree {top}, detached HEAD"),
    }
}

/// The branch checked out in the work tree at `top`, from its `HEAD` (no git process).
pub fn branch_at(top: &Path) -> Option<String> {
    branch_of(&git_dir(top)?)
}

/// A work tree's short name, as the views show it: the last part of its top level.
pub fn short_name(top: &str) -> &str {
    let last = top.trim_end_matches('/').rsplit('/').next();
    last.filter(|n| !n.is_empty()).unwrap_or(top)
}

/// The branch a git folder's `HEAD` names.
fn branch_of(gitdir: &Path) -> Option<String> {
    let head = read_small(&gitdir.join("HEAD"))?;
    let r = head.strip_prefix("ref:")?.trim();
    Some(r.strip_prefix("refs/heads/").unwrap_or(r).to_string())
}

/// Every work tree sharing the workspace at `root`, `root`'s own first.
pub fn trees(root: &Path) -> Vec<Tree> {
    let shared = shared_root(root);
    let tree = |top, gitdir| Tree {
        top,
        gitdir,
        branch: Default::default(),
    };
    let mut all = Vec::new();
    if let Some(common) = common_dir(&shared) {
        // A tree removed by hand took its locks with it; a worktree with a `.coord/` of its
        // own is a workspace of its own.
        let linked = read_linked(&common)
            .into_iter()
            .filter(|(top, _)| *top != shared && !is_gone(top) && !has_own_state(top));
        let found = std::iter::once((shared.clone(), common)).chain(linked);
        all.extend(found.map(|(top, gitdir)| tree(top, Some(gitdir))));
    }
    match all.iter().position(|t| t.top == root) {
        Some(own) => all[..=own].rotate_right(1),
        None => all.insert(0, tree(root.to_path_buf(), None)),
    }
    all
}

/// Each linked worktree named in `<common>/worktrees/*/gitdir`: its top level and that folder.
fn read_linked(common: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = fsutil::read_dir(common.join("worktrees")) else {
        return Vec::new();
    };
    let linked = entries.flatten().filter_map(|entry| {
        let gitdir = entry.path();
        let dot_git = PathBuf::from(read_small(&gitdir.join("gitdir"))?);
        // Resolved like every root (git may have written it through a symlink).
        let top = fs::canonicalize(dot_git.parent()?).ok()?;
        Some((top, gitdir))
    });
    linked.collect()
}

/// Whether the work tree whose top level was `top` is gone: its folder is no longer there.
pub fn is_gone(top: &Path) -> bool {
    !fs::symlink_metadata(top).is_ok_and(|m| m.is_dir())
}

/// The other work trees sharing the workspace at `root` (cheap when there are none).
pub fn others(root: &Path) -> Vec<Tree> {
    if shared_root(root) == root
        && !fs::symlink_metadata(root.join(".git/worktrees")).is_ok_and(|m| m.is_dir())
    {
        return Vec::new();
    }
    trees(root).split_off(1)
}

/// The top level of every work tree sharing the workspace at `root`, `root`'s first.
pub fn tops(root: &Path) -> Vec<PathBuf> {
    let others = others(root).into_iter().map(|t| t.top);
    std::iter::once(root.to_path_buf()).chain(others).collect()
}

/// Every work tree of `top`'s repository, whatever workspace each one is, `top` first.
pub fn repository_tops(top: &Path) -> Vec<PathBuf> {
    let mut all = vec![top.to_path_buf()];
    let Some(common) = common_dir(top) else {
        return all;
    };
    let linked = read_linked(&common).into_iter().map(|(top, _)| top);
    for t in main_top(&common).into_iter().chain(linked) {
        if !all.contains(&t) && !is_gone(&t) {
            all.push(t);
        }
    }
    all
}

/// The work tree among `trees` (a workspace's [`trees`]) whose top level `path` lies deepest under.
pub fn tree_of<'a>(trees: &'a [Tree], path: &Path) -> Option<&'a Tree> {
    (trees.iter())
        .filter(|t| path.starts_with(&t.top))
        .max_by_key(|t| t.top.components().count())
}
