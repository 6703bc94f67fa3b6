//! Judging lock files: live, stale or conflict, and the one-line description of a problem.

use std::path::Path;

use super::LockState::{Conflict, Live, Stale};
use super::{BAD_NAME, LockEntry};
use crate::arbiter;
use crate::clock::{self, Timestamp};
use crate::host;
use crate::presence::{AgentState, StateCache};

/// Judge `entries` as of `now`: stale or live, then conflicts among the non-stale of each file.
pub fn classify(root: &Path, entries: &mut [LockEntry], cache: &mut StateCache, now: &Timestamp) {
    for e in entries.iter_mut() {
        e.stale_why = stale_reason(root, e, cache, now);
        e.state = if e.stale_why.is_some() { Stale } else { Live };
    }
    for group in entries.chunk_by_mut(|a, b| a.file == b.file) {
        let live = || group.iter().filter(|e| e.state != Stale).count();
        if live() >= 2 {
            for e in group.iter_mut().filter(|e| e.state != Stale) {
                e.state = Conflict;
            }
        }
    }
}

fn stale_reason(
    root: &Path,
    e: &LockEntry,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Option<String> {
    // Taken in a work tree now gone (recorded on this host): what was held there went with it.
    // A tree moved (`git worktree move`) is not gone: its branch is still checked out.
    if let Some(tree) = e.field("worktree")
        && e.field("host") == Some(host::hostname())
        && crate::worktree::is_gone(Path::new(tree))
        && !branch_checked_out(root, e.field("branch"))
    {
        return Some(format!(
            "its work tree `{tree}` is gone (removed while it was held)"
        ));
    }
    if let Some((pid, h)) = e.process() {
        if host::recorded_process_gone(pid, h, e.process_start()) {
            return Some(format!("its process {pid} on {h} is gone"));
        }
        // Taken in a client session on this host: the lock follows the client process, not its
        // age (one tool call may run for longer than any TTL).
        if let Some((client, _)) = e.client_session()
            && h == host::hostname()
            && e.process_start().is_some()
        {
            return match cache.state(root, &e.agent, now) {
                Some(AgentState::Finished) => {
                    Some(format!("the {client} session of {} has ended", e.agent))
                }
                _ => None,
            };
        }
    }
    let since = e.since.as_ref()?;
    let ttl = e.ttl();
    let mut age = clock::age(now, since);
    let mut now = *now;
    if age > ttl
        && let Some(ahead_of_folder) = arbiter::clock_ahead(&crate::worktree::shared_root(root))
    {
        // This machine's clock runs ahead of the folder's, aging every lock: judge by the folder's.
        now -= chrono::Duration::from_std(ahead_of_folder).unwrap_or_default();
        age = clock::age(&now, since);
    }
    let now = &now;
    // Dated further ahead than its TTL (forged, or a clock far off), it would never age: it
    // counts as expired, and the holder's presence still decides.
    let ahead = clock::age(since, now);
    if age <= ttl && ahead <= ttl {
        return None;
    }
    let holder = match cache.state(root, &e.agent, now) {
        Some(AgentState::Active) => return None,
        Some(state) => format!("{} is {}", e.agent, state.as_str()),
        None => format!("{} has no presence", e.agent),
    };
    let (dated, ttl_text) = (clock::format_age(ahead), clock::format_duration(ttl));
    if ahead > ttl {
        let why =
            format!("dated {dated} in the future, beyond its TTL of {ttl_text}, and {holder}");
        return Some(why);
    }
    Some(format!("older than its TTL of {ttl_text} and {holder}"))
}

/// Whether `branch` is checked out in a work tree of the repository at `root` that is there.
fn branch_checked_out(root: &Path, branch: Option<&str>) -> bool {
    branch.is_some_and(|b| {
        (crate::worktree::trees(root).iter())
            .any(|t| t.branch().as_deref() == Some(b) && !crate::worktree::is_gone(&t.top))
    })
}

/// Problems a strict check reports: stale and conflicting locks, and names that are not UTF-8.
pub fn problems(entries: &[LockEntry]) -> Vec<&LockEntry> {
    (entries.iter())
        .filter(|e| e.state != Live || e.bad_name())
        .collect()
}

/// Describe a lock problem in one line.
pub fn describe_problem(e: &LockEntry) -> String {
    let (file, holder) = (&e.file, e.holder());
    let text = match e.state {
        Stale => {
            let why = e.stale_why.as_deref().unwrap_or("stale");
            format!("`{file}` has a STALE lock of {holder} ({why})")
        }
        Conflict => format!("`{file}` is in CONFLICT: {holder} holds one of several live locks"),
        Live => format!("`{file}` is locked by {holder}"),
    };
    if e.bad_name() {
        format!("{text}; {BAD_NAME}")
    } else {
        text
    }
}
