//! Giving locks back: own locks by name, locks of a process by token (compare-and-delete), and
//! STALE locks of others with `--force`. Nothing held by another live agent is ever removed.

use std::fs;

use serde::Serialize;

use super::{LockEntry, LockState, classify, list_locks, own_locks_listed, scan_tree, take_over};
use crate::clock;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout;
use crate::v3::presence::{self, LockStatus, StateCache};
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
    /// The file, relative to the root.
    pub file: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: ReleaseOutcome,
}

/// Release `agent`'s locks on `targets` (all its locks when `None`). With `force`, a STALE
/// lock of another agent is removed too. Each file's outcome is reported; nothing held by
/// another live agent is ever removed.
///
/// # Errors
///
/// [`Error::Io`] when a lock file cannot be removed.
pub fn release(
    ws: &Workspace,
    agent: &AgentId,
    targets: Option<&[Target]>,
    force: bool,
) -> Result<Vec<Release>> {
    let targets: Vec<Target> = match targets {
        Some(t) => t.to_vec(),
        None => scan_tree(ws)
            .into_iter()
            .filter(|e| e.agent == agent.id())
            .filter_map(|e| ws.target_from_rel(&e.file).ok())
            .collect(),
    };
    let _mutex = ws.lock_mutex()?;
    let now = clock::now();
    let mut cache = StateCache::default();
    let mut out = Vec::with_capacity(targets.len());
    for target in &targets {
        // Temporary files of killed processes are swept in the same pass, as `acquire` does.
        let mut entries = list_locks(target, true)?;
        classify(ws.root(), &mut entries, &mut cache, &now);
        let outcome = if let Some(mine) = entries.iter().find(|e| e.agent == agent.id()) {
            fsutil::remove(&mine.lock_path)?;
            ReleaseOutcome::Released
        } else if entries.is_empty() {
            ReleaseOutcome::NotLocked
        } else if let Some(held) = entries
            .iter()
            .find(|e| !force || e.state != LockState::Stale)
        {
            ReleaseOutcome::HeldByOther {
                holder: held.holder().to_string(),
                state: held.state,
            }
        } else {
            let from = entries
                .iter()
                .map(|e| e.holder().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            for e in &entries {
                if !take_over(e)? {
                    return Err(Error::refused(
                        format!(
                            "the lock of {} on `{}` changed while being removed",
                            e.holder(),
                            e.file
                        ),
                        None,
                    ));
                }
            }
            ReleaseOutcome::ForcedStale { from }
        };
        out.push(Release {
            file: target.rel.clone(),
            outcome,
        });
    }
    after_release(ws, agent)?;
    Ok(out)
}

/// Release locks this process took, each only if its token is unchanged (compare-and-delete).
/// Used by commands that hold locks for the life of a process (`run`, `session`).
///
/// # Errors
///
/// [`Error::Io`] when a lock file cannot be removed.
pub fn release_tokens(
    ws: &Workspace,
    agent: &AgentId,
    held: &[(Target, String)],
) -> Result<Vec<Release>> {
    let _mutex = ws.lock_mutex()?;
    let mut out = Vec::with_capacity(held.len());
    for (target, token) in held {
        let path = layout::lock_file(&target.abs, agent.id());
        let current = LockEntry::read(path.clone(), target.rel.clone(), agent.id().to_string());
        let outcome = if current.as_ref().and_then(LockEntry::token) == Some(token.as_str()) {
            fsutil::remove(&path)?;
            ReleaseOutcome::Released
        } else {
            ReleaseOutcome::Lost
        };
        out.push(Release {
            file: target.rel.clone(),
            outcome,
        });
    }
    after_release(ws, agent)?;
    Ok(out)
}

/// The token of `agent`'s lock on `target`, when it holds one.
pub fn own_token(target: &Target, agent: &AgentId) -> Option<String> {
    let path = layout::lock_file(&target.abs, agent.id());
    LockEntry::read(path, target.rel.clone(), agent.id().to_string())?
        .token()
        .map(str::to_string)
}

/// Whether `agent` still holds `target` with `token`. Caller holds the mutex.
pub fn holds(target: &Target, agent: &AgentId, token: &str) -> bool {
    let path = layout::lock_file(&target.abs, agent.id());
    LockEntry::read(path, target.rel.clone(), agent.id().to_string())
        .is_some_and(|e| e.token() == Some(token))
}

/// Bring the agent's presence up to date after locks went away. Caller holds the mutex.
fn after_release(ws: &Workspace, agent: &AgentId) -> Result<()> {
    // Only a regular presence file is brought up to date: the locks are already gone, and a
    // release must not fail (or follow a link) because something else stands there.
    if !fs::symlink_metadata(layout::presence(ws.root(), agent.id())).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let held = own_locks_listed(ws, agent);
    presence::write(
        ws.root(),
        agent,
        &presence::Update {
            lock_status: Some(if held.is_empty() {
                LockStatus::Free
            } else {
                LockStatus::Locked
            }),
            current_file: held.first().cloned(),
            locks: Some(held),
            ..Default::default()
        },
    )?;
    Ok(())
}
