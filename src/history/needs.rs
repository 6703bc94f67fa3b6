//! Who needs a human: an agent whose client waits for its user (a permission prompt, a
//! question, the end of its turn), since when and what it asks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Event, Kind, record};
use crate::fsutil;
use crate::layout;
use crate::workspace::is_valid_agent_id;

/// An agent waiting for its user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeedsUser {
    /// Since when (RFC 3339).
    pub since: String,
    /// What it asks, as its client says it (may be empty).
    pub what: String,
}

/// What `agent` waits for its user for, if it does (an unreadable file is no waiting).
fn needs_user(root: &Path, agent: &str) -> Option<NeedsUser> {
    let bytes = fsutil::read_capped(&file(root, agent), 16 * 1024).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Every agent waiting for its user, from one listing of the folder (no folder: nobody).
pub fn waiting(root: &Path) -> HashMap<String, NeedsUser> {
    let dir = layout::needs_user_dir(&crate::worktree::shared_root(root));
    let names = fsutil::list_names(&dir).unwrap_or_default().into_iter();
    // Only an agent's id names its file (not a writer's temporary file).
    let agents = names.filter_map(|n| n.into_string().ok().filter(|n| is_valid_agent_id(n)));
    agents
        .filter_map(|agent| Some((agent.clone(), needs_user(root, &agent)?)))
        .collect()
}

fn file(root: &Path, agent: &str) -> PathBuf {
    layout::needs_user(&crate::worktree::shared_root(root), agent)
}

/// `agent`'s client waits for its user for `what` (`None`: no longer, its user answered); a
/// wait already open keeps its `since` (a second prompt is the same wait, with the newer
/// question). Best effort.
pub fn set_needs_user(root: &Path, agent: &str, what: Option<&str>) {
    let Some(what) = what else {
        if forget(root, agent) {
            record(root, Event::new(Kind::UserAnswered, agent));
        }
        return;
    };
    let old = needs_user(root, agent);
    let what: String = what.chars().take(500).collect();
    if old.as_ref().is_some_and(|o| o.what == what) {
        return;
    }
    let state = NeedsUser {
        since: old.map(|o| o.since).unwrap_or_else(super::now_ms),
        what: what.clone(),
    };
    let Ok(bytes) = serde_json::to_vec(&state) else {
        return;
    };
    let write = || {
        fsutil::ensure_dir(&layout::needs_user_dir(&crate::worktree::shared_root(root)))?;
        fsutil::replace(&file(root, agent), &bytes)
    };
    if write().is_ok() {
        record(root, Event::new(Kind::NeedsUser, agent).with("what", what));
    }
}

/// `agent` acted, so it no longer waits (no event of its own); whether it waited.
pub(super) fn forget(root: &Path, agent: &str) -> bool {
    fsutil::remove(&file(root, agent)).unwrap_or(false)
}
