//! Finding lock files: a target's (its folder listed once, the roster looked up where listings
//! lag), every lock under the root, those a presence lists. Nothing here judges or removes one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{BAD_NAME, LockEntry, classify, index};
use crate::arbiter;
use crate::clock::Timestamp;
use crate::error::{IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::layout;
use crate::presence::{self, StateCache, Unreadable};
use crate::workspace::{AgentId, Target, Workspace};

/// The lock files of one target, unjudged, sorted by agent (none if its folder cannot be listed).
pub fn locks_of(target: &Target) -> Vec<LockEntry> {
    let each = try_locks_each(std::slice::from_ref(target));
    each.unwrap_or_default().pop().unwrap_or_default()
}

/// The lock files of each of `targets`, sorted by agent, each folder listed once (or no locks).
pub fn locks_of_each(targets: &[Target]) -> Vec<Vec<LockEntry>> {
    // One folder could not be listed: the others still count.
    try_locks_each(targets).unwrap_or_else(|_| targets.iter().map(locks_of).collect())
}

/// [`locks_of_each`] (the roster looked up by exact name), with an error when a folder cannot be
/// listed (not a folder without locks).
pub fn try_locks_each(targets: &[Target]) -> Result<Vec<Vec<LockEntry>>> {
    let root = targets.first().and_then(root_of);
    let roster = (root.map(|root| lookup_roster(&root)).transpose()?).unwrap_or_default();
    let how = Listing {
        roster: &roster,
        ..Listing::default()
    };
    list_locks_each(targets, how)
}

/// How [`list_locks_each`] lists the locks of targets.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Listing<'a> {
    /// Also remove coord's temporary files left by killed processes (this work tree only).
    pub(super) sweep: bool,
    /// Agents whose locks are also looked up by their exact names ([`lookup_roster`]).
    pub(super) roster: &'a [String],
    /// An agent whose locks are left unread (the caller knows what it wrote), in this tree only.
    pub(super) except: Option<&'a str>,
}

#[cfg(test)]
thread_local! {
    /// How many folders [`list_locks_each`] listed on this thread.
    static LISTINGS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
pub(crate) fn folder_listings() -> usize {
    LISTINGS.with(std::cell::Cell::get)
}

/// The lock files of each of `targets` (in their order, each sorted by agent), as `how` says.
pub(super) fn list_locks_each(targets: &[Target], how: Listing<'_>) -> Result<Vec<Vec<LockEntry>>> {
    let mut out: Vec<Vec<LockEntry>> = vec![Vec::new(); targets.len()];
    let root = targets.first().and_then(root_of);
    // Where lookups may come from a cache, a listed lock that will not open is asked of the server.
    let network =
        (root.as_ref()).is_some_and(|r| arbiter::policy(r).is_ok_and(|p| p.exact_lookups));
    list_folders(targets, how, network, None, &mut out)?;
    // The same paths in the other work trees of the repository: a lock there holds the file here.
    // Only the newcomer check (`except`) looks at this tree alone: it withdraws in favour of a
    // lock made here while it looked; any other caller must see every tree.
    if let Some(root) = root.filter(|_| how.except.is_none()) {
        for tree in crate::worktree::others(&root) {
            list_folders(targets, how, false, Some(&tree.top), &mut out)?;
        }
    }
    // A listing may lag another machine's new lock: there, the roster is looked up by exact name.
    for (target, found) in targets.iter().zip(out.iter_mut()) {
        for id in how.roster {
            let path = layout::lock_file(&target.abs, id);
            if how.except == Some(id.as_str()) || found.iter().any(|e| e.lock_path == path) {
                continue;
            }
            found.extend(LockEntry::read(path, target.rel.clone(), id.clone()));
        }
        found.sort_by(|a, b| a.agent.cmp(&b.agent));
    }
    Ok(out)
}

/// The lock files in the folders of `targets` (each listed once), or in another work tree `tree`.
fn list_folders(
    targets: &[Target],
    how: Listing<'_>,
    network: bool,
    tree: Option<&Path>,
    out: &mut [Vec<LockEntry>],
) -> Result<()> {
    // Folder → base name → the targets of that name.
    let mut folders: BTreeMap<PathBuf, HashMap<&str, Vec<usize>>> = BTreeMap::new();
    for (i, target) in targets.iter().enumerate() {
        let base = target.abs.file_name().and_then(|n| n.to_str());
        let dir = match tree {
            None => target.abs.parent().map(Path::to_path_buf),
            Some(top) => Path::new(&target.rel).parent().map(|d| top.join(d)),
        };
        if let (Some(dir), Some(base)) = (dir, base) {
            let bases = folders.entry(dir).or_default();
            bases.entry(base).or_default().push(i);
        }
    }
    let read = if network {
        LockEntry::read_listed
    } else {
        LockEntry::read
    };
    for (dir, bases) in &folders {
        #[cfg(test)]
        LISTINGS.with(|n| n.set(n.get() + 1));
        let entries = match crate::fsutil::read_dir(dir) {
            // A folder not made yet holds no lock (here; the other trees are looked at apart).
            Err(e) if tree.is_some() || e.kind() == io::ErrorKind::NotFound => continue,
            listed => listed.at("list", dir)?,
        };
        for entry in entries {
            let entry = match entry {
                Err(_) if tree.is_some() => break,
                entry => entry.at("list", dir)?,
            };
            let name = entry.file_name();
            match name.to_str().and_then(layout::parse_lock_name) {
                Some((b, agent)) if how.except != Some(agent.as_str()) => {
                    for &i in bases.get(b).into_iter().flatten() {
                        out[i].extend(read(entry.path(), targets[i].rel.clone(), agent.clone()));
                    }
                }
                None if how.sweep && tree.is_none() => _ = fsutil::sweep_entry(&entry),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The workspace root of a target (its absolute path less its relative one).
fn root_of(target: &Target) -> Option<PathBuf> {
    let depth = target.rel.split('/').filter(|c| !c.is_empty()).count();
    target.abs.ancestors().nth(depth).map(Path::to_path_buf)
}

/// The agents a listing under `root` also looks up by exact name: the roster on network folders.
/// A roster that cannot be read is an error, not empty: a try would miss the locks of the agents
/// on it, and put itself on a new roster without them.
pub(super) fn lookup_roster(root: &Path) -> Result<Vec<String>> {
    if !arbiter::policy(root).is_ok_and(|p| p.exact_lookups) {
        return Ok(Vec::new());
    }
    let roster = layout::roster(&crate::worktree::shared_root(root));
    let bytes = fsutil::if_found(fsutil::read_capped(&roster, RECORD_CAP)).at("read", &roster)?;
    let bytes = bytes.unwrap_or_default();
    Ok((String::from_utf8_lossy(&bytes).lines().map(str::trim))
        .filter(|id| crate::workspace::is_valid_agent_id(id))
        .map(str::to_string)
        .collect())
}

/// Put `id` on the roster `ids` (as read under the mutex the caller holds), if it is not there.
pub(crate) fn join_roster(root: &Path, ids: &[String], id: &str) -> Result<()> {
    if ids.iter().any(|i| i == id) {
        return Ok(());
    }
    let text = format!("{}\n", [ids, &[id.to_string()]].concat().join("\n"));
    let path = layout::roster(&crate::worktree::shared_root(root));
    fsutil::replace(&path, text.as_bytes())
}

/// Every lock file of the workspace, sorted by file then agent, unjudged. Nothing is written.
pub fn scan_tree(ws: &Workspace) -> Vec<LockEntry> {
    let tops = crate::worktree::tops(ws.root());
    with_indexed(ws, &tops, scan_folder(&tops, ""))
}

/// `found`, with the locks coord's index names in every work tree of `tops` that it lacks.
fn with_indexed(ws: &Workspace, tops: &[PathBuf], mut found: Vec<LockEntry>) -> Vec<LockEntry> {
    let seen: HashSet<PathBuf> = found.iter().map(|e| e.lock_path.clone()).collect();
    let indexed = index::entries(ws.root());
    for top in tops {
        for (rel, agent) in &indexed {
            let path = layout::lock_file(&top.join(rel), agent);
            if !seen.contains(&path) {
                found.extend(LockEntry::read(path, rel.clone(), agent.clone()));
            }
        }
    }
    found.sort_by_key(|e| (e.file.clone(), e.agent.clone(), e.lock_path.clone()));
    found.dedup_by(|a, b| a.lock_path == b.lock_path);
    found
}

/// The lock files under `rel_dir` (empty: all) in each work tree of `tops`, relative to it.
pub(super) fn scan_folder(tops: &[PathBuf], rel_dir: &str) -> Vec<LockEntry> {
    (tops.iter())
        .flat_map(|top| walk_unignored(&Workspace::at(top.clone()), rel_dir))
        .collect()
}

/// The lock files under `rel_dir` (empty: all) that git does not ignore (its excludes file too).
fn walk_unignored(ws: &Workspace, rel_dir: &str) -> Vec<LockEntry> {
    let root = ws.root();
    let start = root.join(rel_dir);
    if !fs::symlink_metadata(&start).is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    let common = crate::worktree::enclosing_common_dir(root);
    let excludes = (common.as_deref())
        .and_then(crate::gitconfig::excludes_file)
        .filter(|f| f.is_file() && !unsafe_ignore_file(f));
    // The walker opens the ignore files it meets as any file (following a link, blocking on a
    // FIFO, reading it whole): where one of them is no small regular file, its rules are not
    // read, and what they would hide is walked (a lock found there is shown, never missed).
    let by_rules = !(start.ancestors()).any(|d| unsafe_ignore_file(&d.join(GITIGNORE)));
    let exclude = !(common.iter().map(|c| c.join(INFO_EXCLUDE)))
        .chain([root.join(".git").join(INFO_EXCLUDE)])
        .any(|f| unsafe_ignore_file(&f))
        && !unsafe_exclude(&start);
    let unruled = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut found = walk_locks(ws, &start, by_rules, exclude, excludes.as_deref(), &unruled);
    // The folders passed over for their ignore file: walked again, without ignore rules.
    let next = || unruled.lock().ok().and_then(|mut dirs| dirs.pop());
    while let Some(dir) = next() {
        found.extend(walk_locks(ws, &dir, false, false, None, &unruled));
    }
    found
}

/// The `.gitignore` of a folder.
const GITIGNORE: &str = ".gitignore";
/// A repository's own excludes file, in its git folder.
const INFO_EXCLUDE: &str = "info/exclude";
/// The most bytes of an ignore file the walker is let read.
const IGNORE_FILE_CAP: u64 = 16 * 1024 * 1024;

/// Whether something stands at `path` that the walker must not open as an ignore file: not a
/// regular file (a FIFO, a folder, a link to either or to nothing) or one past the cap.
fn unsafe_ignore_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
        && !fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= IGNORE_FILE_CAP)
}

/// Whether `dir` is the work tree of a repository (a nested one, a submodule) whose own
/// excludes file the walker must not open.
fn unsafe_exclude(dir: &Path) -> bool {
    crate::worktree::repository_dir(dir)
        .is_some_and(|git| unsafe_ignore_file(&git.join(INFO_EXCLUDE)))
}

/// The lock files under `start`, folders obeying git's ignore rules when `by_rules` (the
/// repository's excludes file too when `exclude`); a folder whose `.gitignore` the walker must
/// not open is left out, and pushed on `unruled`.
fn walk_locks(
    ws: &Workspace,
    start: &Path,
    by_rules: bool,
    exclude: bool,
    excludes: Option<&Path>,
    unruled: &std::sync::Arc<std::sync::Mutex<Vec<PathBuf>>>,
) -> Vec<LockEntry> {
    use ignore::{WalkBuilder, overrides::OverrideBuilder};
    let root = ws.root();
    // Lock files are yielded even when ignored, no other file; folders obey the ignore rules.
    let mut names = OverrideBuilder::new(root);
    let overrides = (names.add(&format!("*{}*", layout::LOCK_INFIX)))
        .and_then(|b| b.build())
        .ok();
    let unruled = std::sync::Arc::clone(unruled);
    let mut walk = WalkBuilder::new(start);
    walk.standard_filters(false)
        .git_ignore(by_rules)
        .git_exclude(by_rules && exclude)
        .git_global(false)
        .current_dir(root)
        .parents(by_rules)
        .require_git(true)
        .follow_links(false)
        .filter_entry(move |e| {
            if !(e.depth() > 0 && e.file_type().is_some_and(|t| t.is_dir())) {
                return true;
            }
            // A folder without a `.git` is neither a linked worktree nor a repository of its
            // own: one lookup decides both for most folders.
            let dir = e.path();
            let git = fs::symlink_metadata(dir.join(".git")).is_ok();
            if layout::skip_in_walk(&e.file_name().to_string_lossy())
                || (git && crate::worktree::is_linked(dir))
            {
                return false;
            }
            if by_rules
                && (unsafe_ignore_file(&dir.join(GITIGNORE)) || (git && unsafe_exclude(dir)))
            {
                if let Ok(mut dirs) = unruled.lock() {
                    dirs.push(dir.to_path_buf());
                }
                return false;
            }
            true
        });
    if let Some(o) = overrides {
        walk.overrides(o);
    }
    if let Some(excludes) = excludes.filter(|_| by_rules) {
        // A file that cannot be read is no rule, as for git.
        let _ = walk.add_ignore(excludes);
    }
    // One thread: the parallel walker's idle workers poll every millisecond, at every hook call.
    walk.build()
        .flatten()
        .filter(|entry| entry.depth() > 0)
        .filter_map(|entry| lock_at(ws, entry.path()))
        .collect()
}

/// The lock the walk's entry at `path` is, when it is one.
fn lock_at(ws: &Workspace, path: &Path) -> Option<LockEntry> {
    let raw_name = path.file_name()?;
    // A name that is not UTF-8 still makes a lock: shown with bad bytes replaced, counted as a
    // problem, never skipped.
    let name = raw_name.to_string_lossy();
    let (base, agent) = layout::parse_lock_name(&name)?;
    let file = ws.rel(&path.parent()?.join(base))?;
    let mut e = LockEntry::read(path.to_path_buf(), file, agent)?;
    if raw_name.to_str().is_none() {
        let also = e.problem.take().map(|p| format!("; {p}"));
        e.problem = Some(format!("{BAD_NAME}{}", also.unwrap_or_default()));
    }
    Some(e)
}

/// Where [`scan_judged`] looks for the locks made by hand (coord's own are in its index).
#[derive(Debug, Clone, Copy)]
pub enum HandMade<'a> {
    /// In every folder git does not ignore (the views).
    Walk,
    /// In each work tree's top folder, and at the `current_file` each of these presences names
    /// (as seed 001's agents keep it): no walk, so the cost grows with agents, not with files.
    AtHand(&'a [presence::Presence]),
}

/// Every lock in the workspace (those made by hand where `hand` says), judged as of `now`.
pub fn scan_judged(
    ws: &Workspace,
    cache: &mut StateCache,
    now: &Timestamp,
    hand: HandMade<'_>,
) -> Vec<LockEntry> {
    let mut entries = match hand {
        HandMade::Walk => scan_tree(ws),
        HandMade::AtHand(presences) => {
            let tops = crate::worktree::tops(ws.root());
            let found = tops.iter().flat_map(|t| at_hand(t, presences)).collect();
            with_indexed(ws, &tops, found)
        }
    };
    classify(ws.root(), &mut entries, cache, now);
    entries
}

/// The lock files in the work tree `top`'s top folder and at each presence's `current_file`.
fn at_hand(top: &Path, presences: &[presence::Presence]) -> Vec<LockEntry> {
    let tree = Workspace::at(top.to_path_buf());
    let listed = (fsutil::list_names(top).unwrap_or_default().into_iter()).map(|n| top.join(n));
    let pointed = presences.iter().filter_map(|p| {
        let file = p.field("current_file").filter(|f| *f != "-")?;
        pointed_at(top, file, &p.id)
    });
    // One named by both is dropped with [`with_indexed`]'s duplicates.
    (listed.chain(pointed))
        .filter_map(|path| lock_at(&tree, &path))
        .collect()
}

/// `agent`'s lock of `file` below `top`, when every folder on the way is a real one (no `..`,
/// no link followed out of the tree).
fn pointed_at(top: &Path, file: &str, agent: &str) -> Option<PathBuf> {
    use std::path::Component::Normal;
    let parts: Vec<_> = Path::new(file).components().collect();
    let (Normal(name), folders) = parts.split_last()? else {
        return None;
    };
    let mut dir = top.to_path_buf();
    for part in folders {
        let Normal(part) = part else { return None };
        dir.push(part);
        if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            return None;
        }
    }
    Some(layout::lock_file(&dir.join(name), agent))
}

/// Files the scan could not read as lock records, for `status`.
pub fn unreadable(entries: &[LockEntry], ws: &Workspace) -> Vec<Unreadable> {
    let unreadable = |e: &LockEntry| {
        let why = e.problem.clone()?;
        // A name that is not UTF-8 is shown with its bad bytes replaced.
        let lossy = e.lock_path.strip_prefix(ws.root()).ok();
        let lossy = lossy.map(|rel| rel.to_string_lossy().into_owned());
        let path = ws.rel(&e.lock_path).or(lossy)?;
        Some(Unreadable { path, why })
    };
    entries.iter().filter_map(unreadable).collect()
}

/// The files `agent` lists as locked in its presence `p` (as just read) that it still holds.
pub(super) fn own_locks_listed(
    ws: &Workspace,
    agent: &AgentId,
    p: Option<&presence::Presence>,
) -> Vec<String> {
    let listed = p.map(presence::Presence::locks).unwrap_or_default();
    (listed.into_iter())
        .filter(|rel| {
            ws.target_from_rel(rel)
                .is_ok_and(|t| fs::symlink_metadata(layout::lock_file(&t.abs, agent.id())).is_ok())
        })
        .collect()
}
