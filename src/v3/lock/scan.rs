//! Finding lock files: those of one target (one listing of its folder, plus exact-name lookups
//! for every agent on the roster where listings lag), every lock under the root, and the locks
//! an agent's presence lists that it still holds. Nothing here judges or removes a lock.

use std::fs;
use std::path::{Path, PathBuf};

use super::{BAD_NAME, LockEntry, classify};
use crate::arbiter;
use crate::clock::Timestamp;
use crate::error::{IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::layout;
use crate::v3::presence::{self, StateCache, Unreadable};
use crate::workspace::{AgentId, Target, Workspace};

/// The lock files of one target, unjudged, sorted by agent.
pub fn locks_of(target: &Target) -> Vec<LockEntry> {
    try_locks_of(target).unwrap_or_default()
}

/// The lock files of one target, unjudged, sorted by agent; an error when the folder cannot be
/// listed (a folder coord cannot read is not a folder without locks).
///
/// # Errors
///
/// [`Error::Io`](crate::error::Error::Io) naming the folder.
pub fn try_locks_of(target: &Target) -> Result<Vec<LockEntry>> {
    let roster = root_of(target).map(|root| lookup_roster(&root));
    list_locks(
        target,
        Listing {
            roster: roster.as_deref().unwrap_or_default(),
            ..Listing::default()
        },
    )
}

/// How [`list_locks`] lists one target's locks.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Listing<'a> {
    /// Also remove coord's temporary files left in the folder by killed processes, in the same
    /// pass (a large folder is listed once, not twice).
    pub(super) sweep: bool,
    /// Agents whose locks are also looked up by their exact names ([`lookup_roster`]).
    pub(super) roster: &'a [String],
    /// An agent whose locks are left unread: the caller knows what it wrote itself.
    pub(super) except: Option<&'a str>,
}

/// List the lock files of `target` as `how` says.
pub(super) fn list_locks(target: &Target, how: Listing<'_>) -> Result<Vec<LockEntry>> {
    let (Some(dir), Some(base)) = (
        target.abs.parent(),
        target.abs.file_name().and_then(|n| n.to_str()),
    ) else {
        return Ok(Vec::new());
    };
    let entries = fs::read_dir(dir).at("list", dir)?;
    // Where lookups may be answered by a cache, a listed lock that will not open is asked of
    // the server (`LockEntry::read_listed`).
    let network =
        root_of(target).is_some_and(|root| arbiter::policy(&root).is_ok_and(|p| p.exact_lookups));
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.at("list", dir)?;
        let name = entry.file_name();
        match name.to_str().and_then(layout::parse_lock_name) {
            Some((b, agent)) if b == base && how.except != Some(agent.as_str()) => {
                let read = if network {
                    LockEntry::read_listed
                } else {
                    LockEntry::read
                };
                found.extend(read(entry.path(), target.rel.clone(), agent));
            }
            Some(_) => {}
            None if how.sweep => {
                fsutil::sweep_entry(&entry);
            }
            None => {}
        }
    }
    // A listing may come from a cache that has not seen another machine's new lock yet: where
    // that can happen, every agent on the roster is also looked up by its exact lock name.
    for id in how.roster {
        let path = layout::lock_file(&target.abs, id);
        if how.except == Some(id.as_str()) || found.iter().any(|e| e.lock_path == path) {
            continue;
        }
        found.extend(LockEntry::read(path, target.rel.clone(), id.clone()));
    }
    found.sort_by(|a, b| a.agent.cmp(&b.agent));
    Ok(found)
}

/// The workspace root of a target (its absolute path less its relative one).
fn root_of(target: &Target) -> Option<PathBuf> {
    let depth = target.rel.split('/').filter(|c| !c.is_empty()).count();
    target.abs.ancestors().nth(depth).map(Path::to_path_buf)
}

/// The agents whose locks a listing under `root` must also look up by exact name: the roster
/// where folder listings may lag other machines (a network filesystem), none elsewhere. Read it
/// once per hold of the mutex: only a holder of the mutex adds to it.
pub(super) fn lookup_roster(root: &Path) -> Vec<String> {
    if arbiter::policy(root).is_ok_and(|p| p.exact_lookups) {
        roster(root)
    } else {
        Vec::new()
    }
}

/// The agents on the roster (`.coord/agents`), read fresh.
fn roster(root: &Path) -> Vec<String> {
    let Ok(bytes) = fsutil::read_capped(&layout::roster(root), RECORD_CAP) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::trim)
        .filter(|id| crate::workspace::is_valid_agent_id(id))
        .map(str::to_string)
        .collect()
}

/// Put `id` on the roster `ids` (as read under the mutex the caller holds), if it is not there
/// yet.
///
/// # Errors
///
/// [`Error::Io`](crate::error::Error::Io) when the roster cannot be written.
pub(crate) fn join_roster(root: &Path, ids: &[String], id: &str) -> Result<()> {
    if ids.iter().any(|i| i == id) {
        return Ok(());
    }
    let mut ids = ids.to_vec();
    ids.push(id.to_string());
    let mut text = ids.join("\n");
    text.push('\n');
    fsutil::replace(&layout::roster(root), text.as_bytes())
}

/// Every lock file under the root (`.git` and `.coord` excepted), sorted by file then agent,
/// unjudged. Nothing is written.
pub fn scan_tree(ws: &Workspace) -> Vec<LockEntry> {
    let mut found = Vec::new();
    let mut stack = vec![ws.root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let raw_name = entry.file_name();
            // A name that is not UTF-8 is still a lock when it reads as one: it is shown with
            // the bad bytes replaced, flagged, and counted as a problem, never skipped.
            let name = raw_name.to_string_lossy();
            let Ok(ft) = entry.file_type() else { continue };
            if let Some((base, agent)) = layout::parse_lock_name(&name) {
                let Some(file) = ws.rel(&dir.join(base)) else {
                    continue;
                };
                if let Some(mut e) = LockEntry::read(entry.path(), file, agent) {
                    if raw_name.to_str().is_none() {
                        e.problem = Some(match e.problem.take() {
                            Some(p) => format!("{BAD_NAME}; {p}"),
                            None => BAD_NAME.to_string(),
                        });
                    }
                    found.push(e);
                }
            } else if ft.is_dir() && !layout::skip_in_walk(&name) {
                stack.push(entry.path());
            }
        }
    }
    found.sort_by(|a, b| a.file.cmp(&b.file).then(a.agent.cmp(&b.agent)));
    found
}

/// Every lock in the workspace, judged as of `now`.
pub fn scan_judged(ws: &Workspace, cache: &mut StateCache, now: &Timestamp) -> Vec<LockEntry> {
    let mut entries = scan_tree(ws);
    classify(ws.root(), &mut entries, cache, now);
    entries
}

/// Files the scan could not read as lock records, for `status`.
pub fn unreadable(entries: &[LockEntry], ws: &Workspace) -> Vec<Unreadable> {
    entries
        .iter()
        .filter_map(|e| {
            Some(Unreadable {
                // A name that is not UTF-8 is shown with its bad bytes replaced.
                path: ws.rel(&e.lock_path).or_else(|| {
                    let rel = e.lock_path.strip_prefix(ws.root()).ok()?;
                    Some(rel.to_string_lossy().into_owned())
                })?,
                why: e.problem.clone()?,
            })
        })
        .collect()
}

/// The files `agent` lists as locked in its presence `p` (as just read) that it still holds.
pub(super) fn own_locks_listed(
    ws: &Workspace,
    agent: &AgentId,
    p: Option<&presence::Presence>,
) -> Vec<String> {
    let Some(p) = p else {
        return Vec::new();
    };
    p.locks()
        .into_iter()
        .filter(|rel| {
            ws.target_from_rel(rel)
                .is_ok_and(|t| fs::symlink_metadata(layout::lock_file(&t.abs, agent.id())).is_ok())
        })
        .collect()
}
