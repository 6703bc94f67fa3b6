//! The history events of locks and claims, each built here for [`history::record`].

use std::path::Path;
use std::time::Instant;

use super::{Acquired, LockRequest, Release, ReleaseOutcome, TakeOver};
use crate::history::{self, Event, Kind};
use crate::workspace::AgentId;

/// Locks just taken (`lock_taken`, `claim_taken`, `lock_taken_over`); a refresh is no transition.
pub(super) fn taken(root: &Path, req: &LockRequest, acquired: &[Acquired], started: Instant) {
    let waited_ms = started.elapsed().as_millis() as u64;
    let waited_ms = (waited_ms > 0).then_some(waited_ms);
    for a in acquired.iter().filter(|a| !a.refreshed) {
        let times =
            |e: Event| (e.with("locked_at", a.locked_at.as_str())).with("waited_ms", waited_ms);
        // The fields of `with_taken_over` come after the times for a claim, before for a lock.
        let event = if a.claim {
            let event = times(Event::new(Kind::ClaimTaken, req.agent.id()).pattern(&a.file));
            with_taken_over(event, &a.took_over)
        } else if a.took_over.is_empty() {
            times(Event::new(Kind::LockTaken, req.agent.id()).file(&a.file))
        } else {
            let event = Event::new(Kind::LockTakenOver, req.agent.id());
            times(with_taken_over(event, &a.took_over).file(&a.file))
        };
        // `reason` is always there (null without one), as `coord watch` has always said it.
        history::record(root, event.with_null("reason", req.reason.clone()));
    }
}

/// What an acquisition took over (none: no field): `from`, `why`, and `claims`, `files` if any.
fn with_taken_over(event: Event, took: &[TakeOver]) -> Event {
    let join = |part: fn(&TakeOver) -> Option<&str>, sep: &str| {
        let parts: Vec<&str> = took.iter().filter_map(part).collect();
        (!parts.is_empty()).then(|| parts.join(sep))
    };
    event
        .with("from", join(|t| Some(&t.from), ", "))
        .with("why", join(|t| Some(&t.why), "; "))
        .with("claims", join(|t| t.claim.as_deref(), ", "))
        .with("files", join(|t| t.file.as_deref(), ", "))
        .with("remote", took.iter().find_map(|t| t.remote.as_deref()))
}

/// An acquire starts waiting for `file`, held by `holder` (or a waiter ahead).
pub(super) fn waiting(root: &Path, req: &LockRequest, file: &str, holder: &str) {
    let event = Event::new(Kind::LockWaiting, req.agent.id()).file(file);
    history::record(root, event.with("holder", holder));
}

/// A lock refused (held, a wait timed out, a deadlock): recorded, and `err` handed back.
pub(super) fn refused(root: &Path, req: &LockRequest, err: crate::Error) -> crate::Error {
    let (file, holder) = match &err {
        crate::Error::LockHeld { file, holder, .. }
        | crate::Error::WaitTimedOut { file, holder, .. } => (Some(file), Some(holder.as_str())),
        _ => (None, None),
    };
    let mut event = (Event::new(Kind::LockRefused, req.agent.id()).with("holder", holder))
        .with("why", err.to_string());
    if let Some(f) = file.or_else(|| req.targets.first().map(|t| &t.rel)) {
        event = event.file(f);
    }
    history::record(root, event);
    err
}

/// Locks and claims given back: one event for each removed (a forced STALE one names its holder).
pub(super) fn released(root: &Path, agent: &AgentId, out: &[Release]) {
    let kinds = (Kind::LockReleased, Kind::ClaimReleased);
    for r in out {
        let event = about(kinds, r.claim, agent.id(), &r.file);
        let event = match &r.outcome {
            ReleaseOutcome::Released => event,
            ReleaseOutcome::ForcedStale { from } => {
                event.with("from", from.as_str()).with("forced", true)
            }
            _ => continue,
        };
        history::record(root, event);
    }
}

/// Our claim (`claim`) or lock on `text` was taken over on `remote` (by `by`): given back here.
pub(super) fn remote_lost(
    root: &Path,
    agent: &str,
    claim: bool,
    text: &str,
    by: &str,
    remote: &str,
) {
    let event = about((Kind::LockLost, Kind::ClaimLost), claim, agent, text)
        .with("remote", remote)
        .with("by", by);
    history::record(root, event);
}

/// An event of `agent` about the claim on pattern `text` (`kinds.1`) if `claim`, else the file.
fn about(kinds: (Kind, Kind), claim: bool, agent: &str, text: &str) -> Event {
    if claim {
        Event::new(kinds.1, agent).pattern(text)
    } else {
        Event::new(kinds.0, agent).file(text)
    }
}
