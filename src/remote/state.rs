//! `.coord/remote/state.json`: what this clone last read of its remote's `refs/coord/`, kept
//! so that a hook (and any command) knows the other clones' claims without running git.
//!
//! Beside each record it keeps `seen`: when this clone first saw that version of the record
//! (a claim's blob, a clone's commit), on this machine's clock. Leases are judged from there,
//! never from a date another machine wrote: a reader's lease ends `lease_s` after it first saw
//! the version, so a holder that renews (a new version) in time is never judged STALE, whatever
//! the two clocks say; a reader that saw a version late judges it late, on the safe side.
//!
//! The file is replaced whole (never half-written), under a kernel lock on `.coord/remote/lock`
//! so that two processes merging what they read do not lose each other's `seen` times; a file
//! that cannot be read counts as never synced.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::record::{ClaimRecord, CloneRecord};
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::layout;
use crate::workspace::Workspace;

/// The most bytes `state.json` is read of.
const STATE_CAP: u64 = 16 * 1024 * 1024;

/// The most records ignored that are named one by one (the rest are counted).
pub const MAX_IGNORED: usize = 20;

/// A record found on the remote and ignored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignored {
    /// What it was read from: `claims` (the claims commit last read), or
    /// `clone:<key>@<commit>` (one clone's record), so that it is not read again unchanged.
    pub source: String,
    /// The warning.
    pub why: String,
}

/// One claim record as last read, with when this clone first saw its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenClaim {
    /// Its entry in the tree of `refs/coord/claims`.
    pub name: String,
    /// Its blob (the version).
    pub blob: String,
    /// When this clone first saw this blob there (this machine's clock).
    pub seen: String,
    /// The record.
    pub record: ClaimRecord,
}

/// One clone record as last read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenClone {
    /// The ref's last part (a hash of the clone id).
    pub key: String,
    /// The commit the ref pointed to (the version).
    pub commit: String,
    /// When this clone first saw that commit.
    pub seen: String,
    /// The record.
    pub record: CloneRecord,
}

/// What this clone last published as its own `working_on`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnWork {
    /// The agents and paths, as published.
    pub agents: Vec<super::record::AgentWork>,
    /// When (this clock).
    pub at: String,
    /// The lease it was published with, in seconds.
    pub lease_s: u64,
}

/// The synced state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The format (1).
    pub v: u32,
    /// The remote it was read from.
    pub remote: String,
    /// When the last complete read of the remote began (this clock); `None`: never.
    pub synced_at: Option<String>,
    /// The commit `refs/coord/claims` was at (`None`: it did not exist).
    pub claims_commit: Option<String>,
    /// That commit's generation (commits since the history was last squashed).
    #[serde(default)]
    pub generation: u64,
    /// The claims in it that could be read.
    pub claims: Vec<SeenClaim>,
    /// The clones' records that could be read.
    pub clones: Vec<SeenClone>,
    /// The records ignored there, and why.
    #[serde(default)]
    pub ignored: Vec<Ignored>,
    /// What the last read found had happened (a rewrite of `refs/coord/claims`, a claim of
    /// this clone gone without a takeover), said until the next read.
    #[serde(default)]
    pub news: Vec<String>,
    /// What this clone last published as its `working_on`.
    #[serde(default)]
    pub own_work: Option<OwnWork>,
}

impl State {
    /// An empty state for `remote`.
    pub fn new(remote: &str) -> State {
        State {
            v: 1,
            remote: remote.to_string(),
            ..State::default()
        }
    }

    /// How long ago the last read began, as of `now`.
    pub fn age(&self, now: &Timestamp) -> Option<Duration> {
        let at = clock::parse_timestamp(self.synced_at.as_deref()?)?;
        Some(clock::age(now, &at))
    }

    /// Every warning of the last read: the records ignored (at most [`MAX_IGNORED`] named),
    /// then the news.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .ignored
            .iter()
            .take(MAX_IGNORED)
            .map(|i| i.why.clone())
            .collect();
        if self.ignored.len() > MAX_IGNORED {
            out.push(format!(
                "and {} more records ignored on `{}`",
                self.ignored.len() - MAX_IGNORED,
                self.remote
            ));
        }
        out.extend(self.news.iter().cloned());
        out
    }

    /// When this clone first saw the claim version `blob` (none: not in this state).
    pub fn seen_claim(&self, blob: &str) -> Option<&str> {
        self.claims
            .iter()
            .find(|c| c.blob == blob)
            .map(|c| c.seen.as_str())
    }
}

/// The state of the workspace `root` as last written, when it is for `remote` and can be read.
pub fn read(root: &Path, remote: &str) -> Option<State> {
    let bytes = fsutil::read_capped(&layout::remote_state(root), STATE_CAP).ok()?;
    let state: State = serde_json::from_slice(&bytes).ok()?;
    (state.remote == remote).then_some(state)
}

/// Read, change with `f` and write back the state of `ws` for `remote`, under the state's
/// lock. `f` gets the state as last written (or a new one) and returns what it gives back.
///
/// # Errors
///
/// [`crate::Error::Io`] when `.coord/remote/` cannot be made, locked or written.
pub fn update<T>(ws: &Workspace, remote: &str, f: impl FnOnce(&mut State) -> T) -> Result<T> {
    let root = ws.root();
    ws.ensure_state_dir()?;
    fsutil::ensure_dir(&layout::remote_dir(root))?;
    let _lock = fsutil::lock_mutex(&layout::remote_lock(root))?;
    let mut state = read(root, remote).unwrap_or_else(|| State::new(remote));
    let before = state.clone();
    let out = f(&mut state);
    if state != before {
        let text = serde_json::to_vec_pretty(&state).unwrap_or_default();
        fsutil::replace(&layout::remote_state(root), &text)?;
    }
    Ok(out)
}

/// Remove the state (the remote was turned off here).
///
/// # Errors
///
/// [`crate::Error::Io`] when it cannot be removed.
pub fn remove(root: &Path) -> Result<()> {
    fsutil::remove(&layout::remote_state(root)).map(drop)
}

/// When a lease of `lease_s` seconds on a version first seen at `seen` ends (`None`: `seen` is
/// not a time).
pub fn lease_until(seen: &str, lease_s: u64) -> Option<Timestamp> {
    let seen = clock::parse_timestamp(seen)?;
    let lease = chrono::Duration::seconds(i64::try_from(lease_s).ok()?);
    seen.checked_add_signed(lease)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_ends_its_length_after_the_version_was_first_seen() {
        let until = lease_until("2026-01-28T01:00:00+01:00", 900).unwrap();
        assert_eq!(clock::format_timestamp(&until), "2026-01-28T01:15:00+01:00");
        assert!(lease_until("never", 900).is_none());
    }

    #[test]
    fn warnings_name_a_bounded_number_of_records_then_the_news() {
        let mut s = State::new("origin");
        for i in 0..30 {
            s.ignored.push(Ignored {
                source: "claims".into(),
                why: format!("w{i}"),
            });
        }
        s.news.push("rewritten".into());
        let w = s.warnings();
        assert_eq!(w.len(), MAX_IGNORED + 2);
        assert_eq!(w[MAX_IGNORED], "and 10 more records ignored on `origin`");
        assert_eq!(w.last().unwrap(), "rewritten");
    }
}
