//! `coord init --remove --all`: coord taken out of a repository, every work tree of it, so that
//! `git status` sees each tree as it did before coord (contract §11).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::remove::{Removal, apply_removal, plan_removal, strip_block};
use super::{IGNORE_BEGIN, IGNORE_END, unterminated};
use crate::client::Client;
use crate::clock;
use crate::error::{Error, IoResultExt, Refusal, Result};
use crate::fsutil;
use crate::guard;
use crate::layout;
use crate::lock::{self, LockEntry};
use crate::presence::StateCache;
use crate::record::Record;
use crate::workspace::{AgentId, Workspace};

/// One work tree's wiring, as `init --remove` takes it back there.
#[derive(Debug, Clone, Serialize)]
pub struct TreeWiring {
    /// The tree's top level.
    pub root: String,
    /// What comes out of its files.
    pub removal: Removal,
}

/// One file or folder of coord's that goes.
#[derive(Debug, Clone, Serialize)]
pub struct Gone {
    /// The path (absolute).
    pub path: String,
    /// What it is (`a lock file`, `the state folder`, ...).
    pub what: &'static str,
}

/// A backup or refused write that differs from its file: it may be the only copy of what it saved.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    /// The path (absolute).
    pub path: String,
    /// The file it differs from (absolute; it may be gone).
    pub differs_from: String,
}

/// What `init --remove --all` would do (or did).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Leaving {
    /// The work trees, the one it runs in first.
    pub trees: Vec<TreeWiring>,
    /// coord's files and folders that go (the `.coord/` folders last).
    pub removed: Vec<Gone>,
    /// Backups and refused writes that stay (without `yes`).
    pub kept: Vec<Kept>,
    /// The guard's git hooks: removed, or removed with the hook they chained put back.
    pub hooks: Vec<guard::Uninstalled>,
    /// The repository's exclude file whose coord block goes.
    pub exclude: Option<String>,
    /// The exclude files of its submodules whose coord block goes.
    pub submodule_excludes: Vec<String>,
    /// The remote this clone stops sharing its claims through.
    pub remote: Option<String>,
    /// Each exclude file that changes, without the block (`None`: nothing else was in it).
    #[serde(skip)]
    excludes_left: Vec<(PathBuf, Option<String>)>,
    /// The hooks folders to take coord's hooks out of.
    #[serde(skip)]
    hooks_dirs: Vec<PathBuf>,
}

/// What a `.coord/` folder is called among what goes.
const STATE: &str = "coord's state folder";

/// Compute what `init --remove --all` takes out of the repository of `ws`, every work tree (`me`:
/// whose locks do not stand in the way; `yes`: differing backups go too). Nothing is written.
pub fn plan(ws: &Workspace, me: Option<&AgentId>, yes: bool) -> Result<Leaving> {
    let tops = crate::worktree::repository_tops(ws.root());
    let (mut leaving, mut locks) = (Leaving::default(), Vec::new());
    for top in &tops {
        walk(top, top, &tops, &tracked_set(top), &mut leaving, &mut locks);
    }
    refuse_live_locks(&tops, &locks, me)?;

    if yes {
        let what = "a backup or refused write (--yes)";
        let kept = leaving.kept.drain(..).map(|k| Gone { path: k.path, what });
        leaving.removed.extend(kept);
    }
    leaving.removed.sort_by_key(|g| g.what == STATE);

    for top in &tops {
        let removal = plan_removal(top, Client::ALL)?;
        let root = top.display().to_string();
        leaving.trees.push(TreeWiring { root, removal });
        // The guard's hooks, in each folder git takes them from (one for most repositories).
        if let Ok(dir) = guard::hooks_dir(top)
            && !leaving.hooks_dirs.contains(&dir)
        {
            let mut ours = guard::uninstall_in(&dir, true)?;
            ours.retain(|h| matches!(h.outcome, "removed" | "restored"));
            if !ours.is_empty() {
                leaving.hooks.extend(ours);
                leaving.hooks_dirs.push(dir);
            }
        }
    }

    if let Some(common) = crate::worktree::common_dir(ws.root()) {
        let gits = std::iter::once(common.clone()).chain(crate::adopt::submodules(&common));
        for (i, git) in gits.enumerate() {
            let path = git.join("info").join("exclude");
            if let Some(left) = exclude_without_block(&path)? {
                let shown = path.display().to_string();
                match i {
                    0 => leaving.exclude = Some(shown),
                    _ => leaving.submodule_excludes.push(shown),
                }
                leaving.excludes_left.push((path, left));
            }
        }
    }
    leaving.remote = crate::remote::config(ws).map(|c| c.remote);
    Ok(leaving)
}

/// Do what [`plan`] decided; a warning when this clone's records on its remote stay.
pub fn apply(ws: &Workspace, leaving: &Leaving) -> Result<Option<String>> {
    let warning = match &leaving.remote {
        Some(_) => crate::remote::forget(ws)?.warning,
        None => None,
    };
    for tree in &leaving.trees {
        apply_removal(Path::new(&tree.root), &tree.removal)?;
    }
    for gone in leaving.removed.iter().filter(|g| g.what != STATE) {
        fsutil::remove(Path::new(&gone.path))?;
    }
    for dir in &leaving.hooks_dirs {
        guard::uninstall_in(dir, false)?;
    }
    for (path, left) in &leaving.excludes_left {
        match left {
            Some(left) => fsutil::replace_durable(path, left.as_bytes())?,
            None => _ = fsutil::remove(path)?,
        }
    }
    for gone in leaving.removed.iter().filter(|g| g.what == STATE) {
        fsutil::remove_tree(Path::new(&gone.path))?;
    }
    Ok(warning)
}

/// `path` as one of coord's files or folders that goes.
fn gone(path: &Path, what: &'static str) -> Gone {
    let path = path.display().to_string();
    Gone { path, what }
}

/// Walk `dir` (in the work tree `top`) for coord's files, noted in `found` (locked files, with
/// their tree, in `locks`), never following a link nor entering `.git`, another work tree or
/// repository, or `.coord/` (which goes whole); a submodule is walked as its own tree.
fn walk(
    top: &Path,
    dir: &Path,
    tops: &[PathBuf],
    tracked: &HashSet<String>,
    found: &mut Leaving,
    locks: &mut Vec<(PathBuf, PathBuf)>,
) {
    let Ok(mut names) = fsutil::list_names(dir) else {
        return;
    };
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let Some(name) = name.to_str() else {
            continue;
        };
        if !meta.is_dir() {
            if meta.is_file()
                && !tracked.contains(&super::rel_of(top, &path))
                && let Some(what) = classify_file(top, &path, name, found, locks)
            {
                found.removed.push(gone(&path, what));
            }
        } else if name == layout::STATE_DIR {
            found.removed.push(gone(&path, STATE));
        } else if name != ".git" && !tops.contains(&path) {
            match std::fs::symlink_metadata(path.join(".git")) {
                Ok(git) if git.is_file() => {
                    walk(&path, &path, tops, &tracked_set(&path), found, locks)
                }
                Ok(_) => {}
                Err(_) => walk(top, &path, tops, tracked, found, locks),
            }
        }
    }
}

fn tracked_set(top: &Path) -> HashSet<String> {
    guard::tracked(top)
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// What `path` (named `name`, in the tree `top`) is when it is one of coord's files that go; a
/// lock is noted among `locks`, a copy that differs from its file among those kept.
fn classify_file(
    top: &Path,
    path: &Path,
    name: &str,
    found: &mut Leaving,
    locks: &mut Vec<(PathBuf, PathBuf)>,
) -> Option<&'static str> {
    let reads = |keys: [&str; 2]| {
        fsutil::read_capped(path, fsutil::RECORD_CAP).is_ok_and(|b| {
            let record = Record::parse(&String::from_utf8_lossy(&b));
            keys.iter().any(|k| record.get(k).is_some())
        })
    };
    // A name of coord's whose content is not coord's is the user's file.
    if let Some((base, _)) = layout::parse_lock_name(name) {
        let lock = reads(["locked_at", "token"]);
        if lock {
            locks.push((path.with_file_name(base), top.to_path_buf()));
        }
        return lock.then_some("a lock file");
    }
    let (twin, what) = match layout::own_file_kind(name)? {
        kind @ "a temporary file" => return Some(kind),
        kind @ "a presence file" => return reads(["heartbeat", "status"]).then_some(kind),
        kind @ "a handshake file" => return reads(["from", "protocol"]).then_some(kind),
        "a backup" => (
            name.strip_suffix(layout::BACKUP_SUFFIX)?,
            "a backup equal to its file",
        ),
        _ => (
            &name[..name.rfind(layout::REJECTED_INFIX)?],
            "a refused write equal to its file",
        ),
    };
    let twin = path.with_file_name(twin);
    if !same_bytes(path, &twin) {
        let (path, differs_from) = (path.display().to_string(), twin.display().to_string());
        found.kept.push(Kept { path, differs_from });
        return None;
    }
    Some(what)
}

/// Whether two regular files hold the same bytes (over 512 MiB: different, kept rather than read).
fn same_bytes(a: &Path, b: &Path) -> bool {
    let len = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.len()).ok();
    let read = |p: &Path| fsutil::read_capped(p, 512 * 1024 * 1024).ok();
    len(a) == len(b) && read(a).is_some_and(|bytes| read(b) == Some(bytes))
}

/// Refuse (exit 3, `in_use`) when another agent than `me` holds a live lock among `locks` (locked
/// files with their tree) or a live claim, naming each.
fn refuse_live_locks(
    tops: &[PathBuf],
    locks: &[(PathBuf, PathBuf)],
    me: Option<&AgentId>,
) -> Result<()> {
    let now = clock::now();
    let mut cache = StateCache::default();
    let mut live: Vec<(LockEntry, &Path)> = Vec::new();
    let others = |e: &LockEntry| e.excludes(me);
    // Each lock is judged in the workspace that holds it: a submodule's, its superproject's.
    let mut groups: Vec<(PathBuf, Vec<crate::workspace::Target>)> = Vec::new();
    for (file, tree) in locks {
        let dir = file.parent().unwrap_or(tree);
        let ws = Workspace::discover(None, dir).unwrap_or_else(|_| Workspace::at(tree.clone()));
        let Some(t) = ws.rel(file).and_then(|rel| ws.target_from_rel(&rel).ok()) else {
            continue;
        };
        match groups.iter_mut().find(|(root, _)| root == ws.root()) {
            Some((_, targets)) if targets.iter().any(|x| x.abs == t.abs) => {}
            Some((_, targets)) => targets.push(t),
            None => groups.push((ws.root().to_path_buf(), vec![t])),
        }
    }
    for (root, targets) in &groups {
        for mut group in lock::locks_of_each(targets) {
            let a_lock = |r: &Record| r.get("locked_at").is_some() || r.get("token").is_some();
            group.retain(|e| e.record.as_ref().is_some_and(a_lock));
            lock::classify(root, &mut group, &mut cache, &now);
            let group = group.into_iter().filter(others);
            live.extend(group.map(|e| (e, root.as_path())));
        }
    }
    for top in tops {
        if crate::worktree::shared_root(top) == *top {
            // Claims that cannot be read still hold: refused, as `coord lock` refuses them.
            let claims = lock::claim::judged_patterns(top, &mut cache, &now)?;
            let claims = claims.into_iter().map(|c| c.entry);
            live.extend(claims.filter(others).map(|e| (e, top.as_path())));
        }
    }
    if live.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = live
        .iter()
        .map(|(e, top)| {
            let (file, holder, state, top) = (&e.file, e.holder(), e.state.as_str(), top.display());
            let since = lock::format_since(e.since.as_ref(), &now);
            format!("`{file}` is locked by {holder} since {since} ({state}, in {top})")
        })
        .collect();
    Err(Error::refused(
        Refusal::InUse,
        format!(
            "{}: nothing was removed (coord leaves a repository only when no other agent works in it)",
            named.join("; ")
        ),
        Some(
            "ask them to finish (`coord unlock`, or the end of their turn), or wait until their locks are STALE, then run `coord init --remove --all` again; `coord status` shows every lock".into(),
        ),
    ))
}

/// `Some(left)` when the exclude file at `path` holds coord's block: what stays without it
/// (`None`: nothing else was in it); `None` when it holds no block (or is not there).
fn exclude_without_block(path: &Path) -> Result<Option<Option<String>>> {
    let text = match fsutil::read_capped(path, 16 * 1024 * 1024) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at("read", path),
    };
    let shown = path.display().to_string();
    let left = strip_block(&text, IGNORE_BEGIN, IGNORE_END)
        .map_err(|line| unterminated(&shown, IGNORE_BEGIN, IGNORE_END, line))?;
    Ok((left.as_deref() != Some(text.as_str())).then_some(left))
}
