//! Giving locks back: own locks by name, locks of a process by token (compare-and-delete), and
//! STALE locks of others with `--force`. Nothing held by another live agent is ever removed.

use std::collections::HashSet;
use std::fs;
use std::path::PathBuf;

use serde::Serialize;

use super::scan::{Listing, lookup_roster};
use super::{
    LockEntry, LockState, MARK, classify, follows_other_process, index, list_locks_each,
    own_locks_listed, scan_tree, take_over,
};
use crate::clock;
use crate::error::Refusal;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::host;
use crate::layout;
use crate::presence::{self, LockStatus, StateCache};
use crate::remote::Kind;
use crate::wait::handoff;
use crate::workspace::{AgentId, Target, Workspace};

/// What happened to one file on release.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum ReleaseOutcome {
    /// Our lock was removed.
    Released,
    /// There was no lock.
    NotLocked,
    /// A stale lock of another agent was removed (`--force`).
    ForcedStale {
        /// Whose.
        from: String,
    },
    /// Another agent holds it: nothing was removed.
    HeldByOther {
        /// Who.
        holder: String,
        /// Its state.
        state: LockState,
    },
    /// Our lock was taken over since (its token changed or it is gone).
    Lost,
}

/// The release of one file.
#[derive(Debug, Clone, Serialize)]
pub struct Release {
    /// The file, relative to the root (a claim: its pattern).
    pub file: String,
    /// Whether this is a claim's release.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub claim: bool,
    /// What happened.
    #[serde(flatten)]
    pub outcome: ReleaseOutcome,
    /// A claim (or lock) published on the remote: what became of its record there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteRelease>,
}

impl Release {
    /// The release of the lock on `file` (of the claim on pattern `file` when `claim`).
    pub(crate) fn new(file: &str, claim: bool, outcome: ReleaseOutcome) -> Release {
        Release {
            file: file.to_string(),
            claim,
            outcome,
            remote: None,
        }
    }
}

/// What became of the record of a released claim (or shared lock) on the remote.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RemoteRelease {
    /// The remote.
    pub remote: String,
    /// Whether its record there is gone (`false`: it stays until its lease lapses).
    pub released: bool,
    /// Why it could not be released there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A record given back here that was published on the remote (it carried [`MARK`]): the
/// remote step of the release ([`super::remote_claim`]) gives it back there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Marked {
    pub(super) kind: Kind,
    pub(super) text: String,
}

impl Marked {
    /// The mark of `e` (a claim when `claim`), when it carries one.
    pub(super) fn of(e: &LockEntry, claim: bool) -> Option<Marked> {
        e.field(MARK)?;
        Some(Marked {
            kind: kind(claim),
            text: e.file.clone(),
        })
    }
}

/// The kind of record a claim (`claim`) or a file lock is on the remote.
pub(super) fn kind(claim: bool) -> Kind {
    if claim { Kind::Claim } else { Kind::Lock }
}

/// A release done here: what became of each file, and the records of those published on the
/// remote (none when the release is not recorded), for the remote step.
pub(super) type Here = (Vec<Release>, Vec<Marked>);

/// Release `agent`'s locks on `targets` (all its locks when `None`, hand-made ones by a walk).
pub(super) fn release(
    ws: &Workspace,
    agent: &AgentId,
    targets: Option<&[Target]>,
    force: bool,
) -> Result<Here> {
    // Refused before the walk below.
    ws.require_arbitration()?;
    match targets {
        Some(t) => release_files(ws, agent, t.to_vec(), force, false),
        None => {
            let walked = scan_tree(ws).into_iter().filter(|e| e.agent == agent.id());
            let targets = held_targets(ws, agent, walked.map(|e| e.file));
            release_files(ws, agent, targets, force, true)
        }
    }
}

/// Release every lock `agent` took through coord, from the index and presence (no walk).
pub(super) fn release_all(ws: &Workspace, agent: &AgentId) -> Result<Here> {
    let targets = held_targets(ws, agent, std::iter::empty());
    release_files(ws, agent, targets, false, true)
}

/// `walked`, then the files coord's index and `agent`'s presence say it holds, as targets, once.
fn held_targets(
    ws: &Workspace,
    agent: &AgentId,
    walked: impl Iterator<Item = String>,
) -> Vec<Target> {
    let me = presence::read(ws.root(), agent.id()).ok().flatten();
    let indexed = (index::entries(ws.root()).into_iter()).filter(|(_, a)| a == agent.id());
    let listed = own_locks_listed(ws, agent, me.as_ref());
    let mut seen = HashSet::new();
    (walked.chain(indexed.map(|(rel, _)| rel)).chain(listed))
        .filter(|f| seen.insert(f.clone()))
        .filter_map(|f| ws.target_from_rel(&f).ok())
        .collect()
}

/// The locks `agent` took in session `session_id`, each with its token, found through the index.
pub fn session_locks(ws: &Workspace, agent: &AgentId, session_id: &str) -> Vec<(Target, String)> {
    (index::entries(ws.root()).into_iter())
        .filter(|(_, a)| a == agent.id())
        .filter_map(|(rel, a)| {
            let target = ws.target_from_rel(&rel).ok()?;
            let entry = LockEntry::read(layout::lock_file(&target.abs, &a), rel, a)?;
            let token = entry.token()?.to_string();
            (entry.session() == Some(session_id)).then_some((target, token))
        })
        .collect()
}

/// [`release`] of `targets` (`all`: every lock of `agent`'s; index entries left by killed
/// processes swept too).
fn release_files(
    ws: &Workspace,
    agent: &AgentId,
    targets: Vec<Target>,
    force: bool,
    all: bool,
) -> Result<Here> {
    let _mutex = ws.lock_mutex()?;
    if all {
        // Entries left by processes killed between an entry and its lock file.
        index::prune(ws.root());
    }
    let now = clock::now();
    let mut cache = StateCache::default();
    let mut out = Vec::with_capacity(targets.len());
    let mut g = Gathered::default();
    // Each folder listed once, in every work tree (killed processes' temporary files swept too).
    let roster = lookup_roster(ws.root())?;
    let listing = Listing {
        sweep: true,
        roster: &roster,
        ..Listing::default()
    };
    for (target, mut entries) in targets.iter().zip(list_locks_each(&targets, listing)?) {
        entries.retain(|e| !g.done.contains(&e.lock_path));
        classify(ws.root(), &mut entries, &mut cache, &now);
        let outcome = match verdict(&entries, |e| e, agent.id(), force) {
            // Another live process of ours holds it: not ours to give back (left out of "all").
            Ok(i) => match held_elsewhere(&entries[i]) {
                Some(_) if all => continue,
                Some(held) => held,
                None => g.ours(&target.rel, &entries[i]),
            },
            // No lock file in any work tree: an entry of ours left for it goes.
            Err(ReleaseOutcome::NotLocked) => {
                index::forget(ws.root(), &target.rel, agent.id());
                ReleaseOutcome::NotLocked
            }
            // Removed only if unchanged since judged STALE.
            Err(forced @ ReleaseOutcome::ForcedStale { .. }) => {
                for e in &entries {
                    if !take_over(ws.root(), e)? {
                        let (holder, file) = (e.holder(), &e.file);
                        let message =
                            format!("the lock of {holder} on `{file}` changed while being removed");
                        return Err(Error::refused(Refusal::LockChanged, message, None));
                    }
                    g.done.insert(e.lock_path.clone());
                }
                forced
            }
            Err(other) => other,
        };
        out.push(Release::new(&target.rel, false, outcome));
    }
    remove_ours(ws, agent, &g.ours)?;
    super::events::released(ws.root(), agent, &out);
    Ok((out, g.marked))
}

/// What a release gathers: our lock files to remove, those published, and all those done.
#[derive(Default)]
struct Gathered {
    ours: Vec<(String, PathBuf)>,
    marked: Vec<Marked>,
    done: HashSet<PathBuf>,
}

impl Gathered {
    /// Our lock `e` on `rel` is released.
    fn ours(&mut self, rel: &str, e: &LockEntry) -> ReleaseOutcome {
        self.done.insert(e.lock_path.clone());
        self.ours.push((rel.to_string(), e.lock_path.clone()));
        self.marked.extend(Marked::of(e, false));
        ReleaseOutcome::Released
    }
}

/// What releasing `entries` of one file by `me` is: ours (`Ok`), none, another's, forced STALE.
pub(super) fn verdict<'e, T>(
    entries: &'e [T],
    entry: impl Fn(&'e T) -> &'e LockEntry,
    me: &str,
    force: bool,
) -> Result<usize, ReleaseOutcome> {
    if let Some(i) = entries.iter().position(|e| entry(e).agent == me) {
        return Ok(i);
    }
    let mut all = entries.iter().map(&entry);
    Err(if entries.is_empty() {
        ReleaseOutcome::NotLocked
    } else if let Some(held) = all.find(|e| !force || e.state != LockState::Stale) {
        let (holder, state) = (held.holder().to_string(), held.state);
        ReleaseOutcome::HeldByOther { holder, state }
    } else {
        let from: Vec<&str> = entries.iter().map(|e| entry(e).holder()).collect();
        let from = from.join(", ");
        ReleaseOutcome::ForcedStale { from }
    })
}

/// Our lock or claim `e`, when it follows another live process of our name (a `coord run`, a
/// `coord session`, another client session): who holds it, as a release refused reports it.
pub(super) fn held_elsewhere(e: &LockEntry) -> Option<ReleaseOutcome> {
    if e.state == LockState::Stale || !follows_other_process(e, None) {
        return None;
    }
    let (pid, _) = e.process()?;
    Some(ReleaseOutcome::HeldByOther {
        holder: format!("{} (process {pid})", e.holder()),
        state: e.state,
    })
}

/// Release locks this process took, by compare-and-delete of their tokens; `record`: in history.
pub(super) fn release_tokens(
    ws: &Workspace,
    agent: &AgentId,
    held: &[(Target, String)],
    record: bool,
) -> Result<Here> {
    let mutex = ws.lock_mutex()?;
    let mut out = Vec::with_capacity(held.len());
    let mut g = Gathered::default();
    for (target, token) in held {
        let path = layout::lock_file(&target.abs, agent.id());
        let current = LockEntry::read(path.clone(), target.rel.clone(), agent.id().to_string())
            .filter(|c| !g.done.contains(&path) && c.token() == Some(token.as_str()));
        let outcome = current.map_or(ReleaseOutcome::Lost, |c| g.ours(&target.rel, &c));
        out.push(Release::new(&target.rel, false, outcome));
    }
    let removed = remove_ours(ws, agent, &g.ours);
    if removed.is_ok() && record {
        super::events::released(ws.root(), agent, &out);
    }
    // Whoever sleeps on a lock file this process kept locked wakes once the mutex is free.
    drop(mutex);
    for (target, _) in held {
        handoff::let_go(&layout::lock_file(&target.abs, agent.id()));
    }
    removed?;
    Ok((out, if record { g.marked } else { Vec::new() }))
}

/// The token of `agent`'s lock on `target`, when it holds one.
pub fn own_token(target: &Target, agent: &AgentId) -> Option<String> {
    let path = layout::lock_file(&target.abs, agent.id());
    let e = LockEntry::read(path, target.rel.clone(), agent.id().to_string())?;
    e.token().map(str::to_string)
}

/// What proves a lock is still the one held when an operation began (`write`, `note`, `restore`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fence {
    /// A lock coord wrote: its random token.
    Token(String),
    /// A hand-made lock (no token): the same file (device and inode) with the same bytes.
    File {
        /// The lock file, in whatever spelling the agent wrote it (`FILE.lock.Claude`).
        path: PathBuf,
        /// Its device and inode, and its content.
        seen: ((u64, u64), Vec<u8>),
    },
}

/// The fence of `agent`'s lock on `target`: coord's by its token, a hand-made one by its file.
/// A lock of `agent` that follows another of its processes still running is that process's, not
/// this one's to edit under.
pub fn own_fence(target: &Target, agent: &AgentId) -> Option<Fence> {
    // "Still running": not seen gone (one on another host cannot be checked: it is taken to run).
    let ours = |e: &LockEntry| {
        let gone = |(pid, h)| host::recorded_process_gone(pid, h, e.process_start());
        !follows_other_process(e, None) || e.process().is_some_and(gone)
    };
    let canonical = layout::lock_file(&target.abs, agent.id());
    if let Some(e) = LockEntry::read(canonical.clone(), target.rel.clone(), agent.id().into())
        && let Some(token) = e.token()
    {
        return ours(&e).then(|| Fence::Token(token.to_string()));
    }
    let mut mine: Vec<LockEntry> = (super::locks_of(target).into_iter())
        .filter(|e| e.agent == agent.id() && ours(e))
        .collect();
    // The canonical spelling first, then the others in name order.
    mine.sort_by_key(|e| (e.lock_path != canonical, e.lock_path.clone()));
    mine.into_iter().find_map(|e| {
        if let Some(token) = e.token() {
            return Some(Fence::Token(token.to_string()));
        }
        let seen = file_identity(&e.lock_path)?;
        let path = e.lock_path;
        Some(Fence::File { path, seen })
    })
}

/// Whether `agent` still holds `target` under `fence`. Caller holds the mutex.
pub fn holds_fence(target: &Target, agent: &AgentId, fence: &Fence) -> bool {
    match fence {
        Fence::Token(token) => own_token(target, agent).as_ref() == Some(token),
        Fence::File { path, seen } => file_identity(path).as_ref() == Some(seen),
    }
}

/// A regular file's (device, inode) and bytes, read through one descriptor (never a link).
fn file_identity(path: &std::path::Path) -> Option<((u64, u64), Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let (bytes, meta) = fsutil::read_capped_with_meta(path, fsutil::RECORD_CAP).ok()?;
    Some(((meta.dev(), meta.ino()), bytes))
}

/// Remove our lock files `ours` (file, lock file), the presence written first (once): a waiter
/// woken by their removal then finds the mutex free a moment later, not still held by us.
fn remove_ours(ws: &Workspace, agent: &AgentId, ours: &[(String, PathBuf)]) -> Result<()> {
    let released: HashSet<&str> = ours.iter().map(|(rel, _)| rel.as_str()).collect();
    let written = after_release(ws, agent, &released);
    for (rel, path) in ours {
        // The presence says released; the lock stands: say so again from what is on disk.
        fsutil::remove(path).inspect_err(|_| _ = after_release(ws, agent, &HashSet::new()))?;
        // Its entry in the index goes once the lock file is gone, from whichever work tree.
        index::forget_removed(ws.root(), rel, agent.id(), path);
    }
    match written {
        // Releasing needs no space: with the lock files gone, the presence is tried once more.
        Err(e) if e.is_no_space() => after_release(ws, agent, &HashSet::new()),
        other => other,
    }
}

/// Bring the agent's presence up to date for locks gone (or about to be: `gone`). Mutex held.
fn after_release(ws: &Workspace, agent: &AgentId, gone: &HashSet<&str>) -> Result<()> {
    // Only a regular presence file is updated: a release must not fail or follow a link for it.
    let path = || layout::presence(&crate::worktree::shared_root(ws.root()), agent.id());
    let old = match presence::read(ws.root(), agent.id()) {
        Ok(Some(p)) => Some(p),
        Err(_) if fs::symlink_metadata(path()).is_ok_and(|m| m.is_file()) => None,
        Ok(None) | Err(_) => return Ok(()),
    };
    let held: Vec<String> = (own_locks_listed(ws, agent, old.as_ref()).into_iter())
        .filter(|rel| !gone.contains(&rel.as_str()))
        .collect();
    // Nothing released, and the presence already says what is held: nothing to bring up to date.
    let status = holding(&held);
    if gone.is_empty()
        && old.as_ref().is_some_and(|p| {
            p.locks() == held
                && p.field("lock_status") == Some(status.as_str())
                && (!held.is_empty() || p.field("current_file").is_none())
        })
    {
        return Ok(());
    }
    let update = presence::Update {
        releasing: true,
        lock_status: Some(status),
        current_file: held.first().cloned(),
        locks: Some(held),
        ..Default::default()
    };
    presence::write_over(ws.root(), agent, old.as_ref(), &update).map(drop)
}

/// `LOCKED` while `held` lists a lock, else `FREE`.
pub(super) fn holding(held: &[String]) -> LockStatus {
    use LockStatus::{Free, Locked};
    if held.is_empty() { Free } else { Locked }
}
