//! What a lock request asks for (who, which files and claims, how long to wait, the process
//! the lock follows) and what it got: the types every step of taking a lock shares.

use std::time::Duration;

use serde::Serialize;

use super::blocker::Blocker;
use crate::clock::Wait;
use crate::workspace::{AgentId, Target};

/// A lock tied to a process: stale the moment that process is gone.
#[derive(Debug, Clone)]
pub struct Owner {
    /// The process whose life the lock follows.
    pub pid: u32,
    /// The session id, when inside `coord session`.
    pub session: Option<String>,
    /// The agent client's session the lock is taken in: LIVE while `pid` lives, whatever its age.
    pub client: Option<ClientSession>,
}

/// An agent client's session, as a lock records it (`client`, `client_session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSession {
    /// The client (`claude`, `codex`, ...).
    pub client: String,
    /// The client's session id.
    pub session: String,
}

/// The client session this process runs in, as [`set_runs_in`] said (none until then).
static RUNS_IN: std::sync::OnceLock<Option<ClientSession>> = std::sync::OnceLock::new();

/// Say which agent client session this process runs in (once per process; later calls are
/// ignored): a lock taken in it is this process's own to give back or to edit under, whichever
/// of the session's processes took it. The binary says it at start, from the client's session
/// variable; the library does not read the clients' variables itself.
pub fn set_runs_in(session: Option<ClientSession>) {
    let _ = RUNS_IN.set(session);
}

/// The client session this process runs in ([`set_runs_in`]).
pub(crate) fn runs_in() -> Option<&'static ClientSession> {
    RUNS_IN.get().and_then(Option::as_ref)
}

impl Owner {
    /// A lock that follows process `pid` (and `coord session` `session`, if any).
    pub fn process(pid: u32, session: Option<String>) -> Owner {
        Owner {
            pid,
            session,
            client: None,
        }
    }
}

/// What `coord lock` asks for.
#[derive(Debug, Clone)]
pub struct LockRequest {
    /// Who.
    pub agent: AgentId,
    /// The files, all or nothing.
    pub targets: Vec<Target>,
    /// How long to wait for a lock held by another.
    pub wait: Wait,
    /// The TTL recorded in the lock.
    pub ttl: Duration,
    /// Whether to write `FILE.bak`.
    pub backup: bool,
    /// Why, recorded in the lock.
    pub reason: Option<String>,
    /// The process the lock follows, if any.
    pub owner: Option<Owner>,
    /// Claims on folders and patterns, all or nothing with `targets` (see `claim`).
    pub claims: Vec<crate::pattern::Pattern>,
}

/// Something worth telling the user while acquiring.
#[derive(Debug, Clone)]
pub enum LockEvent {
    /// coord starts waiting (sent once).
    Waiting(Blocker),
    /// While waiting, what stands in the way changed (see `Blocker::situation`).
    Changed(Blocker),
}

/// One lock taken.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Acquired {
    /// The file, relative to the root.
    pub file: String,
    /// The lock file, relative to the root.
    pub lock_file: String,
    /// The time written as `locked_at`.
    pub locked_at: String,
    /// The lock's token.
    pub token: String,
    /// Whether this refreshed a lock already held.
    pub refreshed: bool,
    /// The other origin (shell or session of the same agent name) a refreshed lock was taken from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_from: Option<String>,
    /// Holders of stale locks taken over, with why they were stale.
    pub took_over: Vec<TakeOver>,
    /// The backup written, relative to the root; on a refresh or a takeover, the backup kept.
    pub backup: Option<String>,
    /// Whether `backup` is the stale holder's, kept (`coord restore FILE` puts it back).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub backup_kept: bool,
    /// Whether this is a claim (`file` is then its pattern).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub claim: bool,
    /// Published on the remote claims are shared through (contract §13): its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// Published there: when its lease ends unless renewed (renewed while its holder is live).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<String>,
}

/// A stale lock or claim taken over.
#[derive(Debug, Clone, Serialize)]
pub struct TakeOver {
    /// Its holder.
    pub from: String,
    /// Why it was stale.
    pub why: String,
    /// A stale claim taken over: its pattern (its record is gone from `.coord/claims`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// A stale lock taken over by a claim: the file it locked (the claim's pattern matches it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// A record of another clone taken over on the remote (its lease lapsed): the remote's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

impl TakeOver {
    /// The stale lock `e` (on the file acquired, or on `file` when a claim takes it over).
    pub(crate) fn lock(e: &super::LockEntry, file: Option<&str>) -> TakeOver {
        TakeOver {
            from: e.holder().to_string(),
            why: e.stale_why.clone().unwrap_or_default(),
            claim: None,
            file: file.map(str::to_string),
            remote: None,
        }
    }

    /// The stale claim `e`.
    pub(crate) fn claim(e: &super::LockEntry) -> TakeOver {
        TakeOver {
            claim: Some(e.file.clone()),
            ..TakeOver::lock(e, None)
        }
    }
}

/// The result of a successful acquire.
#[derive(Debug, Clone, Serialize)]
pub struct Acquisition {
    /// The locks, in path order.
    pub acquired: Vec<Acquired>,
    /// How long coord waited, in milliseconds.
    pub waited_ms: u64,
}
