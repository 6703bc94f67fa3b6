//! Who stands in the way of a lock, and the refusal a caller gets when it does not wait (or
//! waited too long): held by another agent, or free with earlier waiters in line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{LockEntry, claim};
use crate::clock::{self, Timestamp};
use crate::error::{Error, Refusal};
use crate::host;
use crate::presence::{self, AgentState};

/// Who or what stands in the way of a lock.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Blocker {
    /// The file.
    pub file: String,
    /// The holder's display name, or the first earlier waiter.
    pub holder: String,
    /// When the holder locked it (`HH:MM`), empty for a queue.
    pub since: String,
    /// What the holder works on (its task, then `; reason: ` and the lock's reason).
    pub working_on: Option<String>,
    /// How many earlier waiters stand in line (only when the lock itself is free).
    pub queued_ahead: usize,
    /// The blocking lock file and its bytes as read (a waiter re-reads it until it changes).
    pub record: Option<(PathBuf, Vec<u8>)>,
    /// What the holder's presence says now (`None`: it has none, or the blocker is the queue).
    pub holder_state: Option<AgentState>,
    /// The live process of this host the lock follows: held while it runs (a client's: at any age).
    pub follows: Option<Follows>,
    /// When the lock turns STALE unchanged: the later of its TTL's end and 2 min past a heartbeat.
    pub takeable_at: Option<Timestamp>,
    /// The claim in the way (its pattern), when it is a claim or a claim's waiter.
    pub pattern: Option<String>,
}

/// The live process a lock follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follows {
    /// Its pid.
    pub pid: u32,
    /// Whether it is an agent client's process (LIVE while it runs), else a supervising coord.
    pub client: bool,
}

impl Blocker {
    /// What a waiter is told about: who is in the way, in what state, until when (news if changed).
    pub(super) fn situation(&self) -> Blocker {
        Blocker {
            holder: self.holder.clone(),
            queued_ahead: self.queued_ahead,
            holder_state: self.holder_state,
            follows: self.follows,
            // While the holder is ACTIVE, the time moves with each of its heartbeats: not news.
            takeable_at: (self.takeable_at)
                .filter(|_| self.holder_state != Some(AgentState::Active)),
            ..Blocker::default()
        }
    }
}

/// The refusal of a request `b` stands in the way of, after a wait of `elapsed` if `waited`.
pub(super) fn blocked_error(b: Blocker, waited: bool, elapsed: Duration) -> Error {
    // Whole seconds from one second on, milliseconds below.
    let waited_for = clock::format_duration(if elapsed >= Duration::from_secs(1) {
        Duration::from_secs(elapsed.as_secs_f64().round() as u64)
    } else {
        Duration::from_millis(elapsed.as_millis() as u64)
    });
    if b.queued_ahead > 0 {
        let one = b.queued_ahead == 1;
        let (s, verb_s) = if one { ("", "s") } else { ("s", "") };
        let mut message = format!(
            "`{}` is free, but {} earlier waiter{s} stand{verb_s} in line ({} first)",
            b.file, b.queued_ahead, b.holder
        );
        if waited {
            message = format!("gave up waiting after {waited_for}: {message}");
        }
        let hint = format!("wait your turn with `coord lock {} --wait 5m`", b.file);
        return Error::refused(Refusal::QueuedAhead, message, Some(hint));
    }
    if waited {
        Error::WaitTimedOut {
            file: b.file,
            waited: waited_for,
            holder: b.holder,
            since: b.since,
            working_on: b.working_on,
        }
    } else {
        Error::LockHeld {
            file: b.file,
            holder: b.holder,
            since: b.since,
            working_on: b.working_on,
        }
    }
}

/// `HH:MM` for today, `YYYY-MM-DD HH:MM` otherwise.
pub fn format_since(ts: Option<&Timestamp>, now: &Timestamp) -> String {
    match ts {
        Some(ts) if ts.date_naive() == now.date_naive() => ts.format("%H:%M").to_string(),
        Some(ts) => ts.format("%Y-%m-%d %H:%M").to_string(),
        None => "an unknown time".to_string(),
    }
}

/// [`format_since`] of `since` as written (RFC 3339; `an unknown time` when unreadable).
pub fn since_text(since: Option<&str>, now: &Timestamp) -> String {
    format_since(since.and_then(crate::clock::parse_timestamp).as_ref(), now)
}

pub(super) fn blocker_of(root: &Path, e: &LockEntry, now: &Timestamp) -> Blocker {
    let presence = presence::read(root, &e.agent).ok().flatten();
    let task = presence.as_ref().and_then(|p| p.field("working_on"));
    let holder_state = presence.as_ref().map(|p| p.state(now));
    let client = e.client_session().is_some() && e.process_start().is_some();
    let follows = e.process().and_then(|(pid, h)| {
        (h == host::hostname() && !host::recorded_process_gone(pid, h, e.process_start()))
            .then_some(Follows { pid, client })
    });
    let takeable_at = match (follows, &e.since) {
        (Some(Follows { client: true, .. }), _) | (_, None) => None,
        (_, Some(since)) => (|| {
            // A TTL past the calendar's end never runs out: no time to name.
            let after =
                |t: &Timestamp, d| t.checked_add_signed(chrono::Duration::from_std(d).ok()?);
            let expires = after(since, e.ttl())?;
            let inactive = match (holder_state, presence.as_ref().and_then(|p| p.heartbeat())) {
                (Some(AgentState::Active), Some(hb)) => after(&hb, presence::HEARTBEAT_TIMEOUT)?,
                _ => *now,
            };
            Some(expires.max(inactive))
        })(),
    };
    // In another work tree of the repository: `Claude (worktree /repo-b, branch feature)`.
    let trees = crate::worktree::trees(root);
    let holder = match crate::worktree::tree_of(&trees, &e.lock_path) {
        Some(t) if t.top != root => {
            let place = crate::worktree::place(t.top.display(), t.branch().as_deref());
            format!("{} ({place})", e.holder())
        }
        _ => e.holder().to_string(),
    };
    Blocker {
        file: e.file.clone(),
        holder,
        since: format_since(e.since.as_ref(), now),
        working_on: working_text(task, e.reason()),
        record: e.raw.clone().map(|raw| (e.lock_path.clone(), raw)),
        holder_state,
        follows,
        takeable_at,
        ..Blocker::default()
    }
}

/// The blocker of `key` (a file or pattern) by another agent's claim `c`, named as a claim.
pub(super) fn claim_blocker(root: &Path, c: &claim::Judged, key: &str, now: &Timestamp) -> Blocker {
    let mut b = blocker_of(root, &c.entry, now);
    b.file = key.to_string();
    b.record = None;
    b.holder = claim::holder_text(root, &c.entry);
    b.pattern = Some(c.entry.file.clone());
    b
}

/// What a holder works on, after "held by X since T": its task, then `; reason: ` and the reason.
pub fn working_text(task: Option<&str>, reason: Option<&str>) -> Option<String> {
    let task = task.filter(|t| !t.trim().is_empty());
    let reason = reason.filter(|r| !r.trim().is_empty());
    match (task, reason) {
        (Some(t), Some(r)) => Some(format!("{t}; reason: {r}")),
        (t, r) => t.or(r).map(str::to_string),
    }
}
