//! Renewing this clone's records on the remote (contract §13): a claim published there holds
//! while its holder renews it, and here the holder is whoever holds the record it was
//! published from, as the lock judgement says (LIVE, STALE).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::{held_here, pattern_of, unpublished};
use crate::arbiter::MutexGuard;
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::host;
use crate::layout;
use crate::lock::{LEASE, LockEntry, LockState, MARK, claim, classify, index};
use crate::pattern::Pattern;
use crate::presence::StateCache;
use crate::remote::{self, Claimed, Item, Kind, Outcome, RemoteClaim};
use crate::workspace::{AgentId, Target, Workspace};

/// How often the renewer looks, at most.
pub const POLL: Duration = Duration::from_secs(1);

/// How long after a failed network call the renewer tries again.
pub const RETRY: Duration = Duration::from_secs(5);

/// The shortest pause between two looks.
const MIN_POLL: Duration = Duration::from_millis(100);

/// How a renewer run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Another renewer runs for this clone.
    AlreadyRunning,
    /// This clone holds nothing on the remote any more (or does not share its claims).
    NothingHeld,
    /// Asked to stop.
    Stopped,
}

/// Run the renewer of the clone `ws` is in until it holds nothing on the remote.
pub fn run(ws: &Workspace) -> Result<Ended> {
    let shared = crate::worktree::shared_root(ws.root());
    fsutil::ensure_dir(&layout::remote_dir(&shared))?;
    let Some(mut guard) = hold(&shared) else {
        return Ok(Ended::AlreadyRunning);
    };
    let mut retry_at: Option<Instant> = None;
    // The records seen without a holder here at the last look: released only when seen so
    // twice, so that a `coord unlock` between its release here and its push there is not raced.
    let mut orphans: BTreeSet<Orphan> = BTreeSet::new();
    loop {
        if crate::wait::stop_requested().is_some() {
            let _ = fsutil::remove(&layout::remote_renewer_pid(&shared));
            return Ok(Ended::Stopped);
        }
        let round = Round::read(ws);
        if round.as_ref().is_none_or(Round::is_empty) {
            // Let go, then look once more (see the module's doc).
            let _ = fsutil::remove(&layout::remote_renewer_pid(&shared));
            drop(guard);
            if Round::read(ws).is_none_or(|r| r.is_empty()) {
                return Ok(Ended::NothingHeld);
            }
            match hold(&shared) {
                Some(g) => guard = g,
                None => return Ok(Ended::AlreadyRunning),
            }
            continue;
        }
        let mut round = round.unwrap_or_default();
        let seen = round.orphans();
        round.release_only(&orphans);
        orphans = seen;
        if retry_at.is_none_or(|t| Instant::now() >= t) {
            retry_at = round.act(ws).err().map(|_| Instant::now() + RETRY);
        }
        crate::wait::pause(round.poll());
    }
}

/// Whether this clone's renewer should run and none does: `agent` holds here a claim or lock
/// marked as published through the clone's remote, and nobody holds the renewer's kernel lock
/// (the renewer was killed, or never started). Read without the network; what a client's hook
/// asks before it answers, so that an agent that goes on working keeps its claims renewed.
pub fn missing(ws: &Workspace, agent: &AgentId) -> bool {
    super::renewer_missing(ws, agent)
}

/// The renewer's kernel lock, when no other renewer holds it; its pid file written.
fn hold(shared: &std::path::Path) -> Option<MutexGuard> {
    let guard =
        crate::arbiter::lock_mutex_within(&layout::remote_renewer(shared), Duration::ZERO).ok()?;
    let pid = format!("{}\n", host::pid());
    let _ = fsutil::replace(&layout::remote_renewer_pid(shared), pid.as_bytes());
    Some(guard)
}

/// One of this clone's records published on the remote, as held here.
#[derive(Debug, Clone)]
struct Held {
    kind: Kind,
    text: String,
    token: String,
    lease: Duration,
    reason: Option<String>,
}

/// What one look found to do, per agent.
#[derive(Debug, Default)]
struct Round {
    /// The remote's name.
    remote: String,
    /// Marked records whose holder here is LIVE.
    live: BTreeMap<String, Vec<Held>>,
    /// Of those, the ones due for renewal.
    due: BTreeMap<String, Vec<Held>>,
    /// Records of this clone there whose holder here is gone or STALE, still within their lease,
    /// each with its version (blob) as last read.
    release: BTreeMap<String, Vec<(Pattern, String)>>,
}

/// A record released by the renewer: (agent, pattern, version).
type Orphan = (String, String, String);

impl Round {
    /// Look (no network): `None` when the clone does not share its claims any more, or the
    /// workspace is gone.
    fn read(ws: &Workspace) -> Option<Round> {
        let cfg = remote::config(ws)?;
        if !ws.root().is_dir() {
            return None;
        }
        let view = remote::view(ws)?;
        let now = clock::now();
        let mut cache = StateCache::default();
        let mut round = Round {
            remote: cfg.remote.clone(),
            ..Round::default()
        };
        let there: Vec<&RemoteClaim> = view.claims.iter().filter(|c| c.mine).collect();
        let versions = own_versions(ws, &cfg, &now);
        let ahead = |agent: &str, text: &str| {
            (versions.get(&(agent.to_string(), text.to_string()))).is_some_and(|v| v.1)
        };
        let Ok(marked) = marked_here(ws, &cfg.remote, &mut cache, &now) else {
            round.keep_unseen(&there, &ahead, &now);
            return Some(round);
        };
        for (e, kind) in marked {
            let Some(token) = e.token().filter(|_| e.state != LockState::Stale) else {
                continue;
            };
            let lease = (e.field(LEASE).and_then(|l| clock::parse_duration(l).ok()))
                .filter(|l| !l.is_zero())
                .unwrap_or(remote::DEFAULT_LEASE);
            let agent = &e.agent;
            let record =
                (there.iter()).find(|c| c.holder.agent == *agent && c.pattern.as_str() == e.file);
            let due =
                record.is_none_or(|c| due(&c.lease_until, lease, &now) || ahead(agent, &e.file));
            let held = Held {
                kind,
                text: e.file.clone(),
                token: token.to_string(),
                lease,
                reason: e.reason().map(str::to_string),
            };
            round.hold(agent, held, due);
        }
        for c in there.iter().filter(|c| c.lease_until > now) {
            let agent = &c.holder.agent;
            let here = held_here(ws, agent, c.kind, c.pattern.as_str(), &mut cache, &now);
            let version = versions.get(&(agent.clone(), c.pattern.as_str().to_string()));
            if let Some((blob, _)) = version
                && here.is_ok_and(|h| h.is_none_or(|e| e.state == LockState::Stale))
            {
                let release = round.release.entry(agent.clone()).or_default();
                release.push((pattern_of(c.kind, c.pattern.as_str()), blob.clone()));
            }
        }
        Some(round)
    }

    /// `.coord/claims` cannot be read, so who holds what here is unknown: every record of this
    /// clone there is kept, renewed when due, and none released (its holder may hold it still).
    fn keep_unseen(
        &mut self,
        there: &[&RemoteClaim],
        ahead: &dyn Fn(&str, &str) -> bool,
        now: &Timestamp,
    ) {
        for c in there {
            let held = Held {
                kind: c.kind,
                text: c.pattern.as_str().to_string(),
                token: String::new(),
                lease: remote::DEFAULT_LEASE,
                reason: c.reason.clone(),
            };
            let agent = &c.holder.agent;
            let due = due(&c.lease_until, held.lease, now) || ahead(agent, &held.text);
            self.hold(agent, held, due);
        }
    }

    /// `agent`'s record `held` is held here (`due`: and due for renewal).
    fn hold(&mut self, agent: &str, held: Held, due: bool) {
        if due {
            let due = self.due.entry(agent.to_string()).or_default();
            due.push(held.clone());
        }
        self.live.entry(agent.to_string()).or_default().push(held);
    }

    /// The records to release there, as (agent, pattern, version).
    fn orphans(&self) -> BTreeSet<Orphan> {
        (self.release.iter())
            .flat_map(|(a, ps)| {
                (ps.iter()).map(move |(p, v)| (a.clone(), p.as_str().to_string(), v.clone()))
            })
            .collect()
    }

    /// Keep to release only the records among `seen`, at the same version.
    fn release_only(&mut self, seen: &BTreeSet<Orphan>) {
        for (agent, patterns) in &mut self.release {
            patterns.retain(|(p, v)| {
                seen.contains(&(agent.clone(), p.as_str().to_string(), v.clone()))
            });
        }
        self.release.retain(|_, ps| !ps.is_empty());
    }

    fn is_empty(&self) -> bool {
        self.live.is_empty() && self.release.is_empty()
    }

    /// How long until the next look: [`POLL`], or a third of the shortest lease held.
    fn poll(&self) -> Duration {
        (self.live.values().flatten())
            .map(|h| h.lease / 3)
            .fold(POLL, Duration::min)
            .max(MIN_POLL)
    }

    /// Release what is held by nobody here, each only at the version seen so (a lock taken
    /// here since publishes a new one, which stays), renew what is due (one push per agent
    /// each).
    fn act(&self, ws: &Workspace) -> Result<()> {
        for (agent, versions) in &self.release {
            if let Ok(id) = AgentId::parse(agent) {
                remote::release_versions(ws, &id, versions)?;
            }
        }
        for (agent, held) in &self.due {
            let Ok(id) = AgentId::parse(agent) else {
                continue;
            };
            let patterns: Vec<Pattern> = held.iter().map(|h| pattern_of(h.kind, &h.text)).collect();
            for o in remote::renew(ws, std::slice::from_ref(&id), Some(&patterns), None)? {
                let Outcome::Gone { pattern, by } = o else {
                    continue;
                };
                let h = held.iter().find(|h| h.text == pattern);
                match (h, by) {
                    (Some(h), Some(by)) => lost(ws, &id, h, &by.describe(), &self.remote),
                    (Some(h), None) => republish(ws, &id, h, &self.remote)?,
                    (None, _) => {}
                }
            }
        }
        Ok(())
    }
}

/// Whether a record whose lease (of `lease`) ends at `until` is due for renewal at `now`: a
/// third of its lease has passed since it was last renewed.
fn due(until: &Timestamp, lease: Duration, now: &Timestamp) -> bool {
    let left = (*until - *now).to_std().unwrap_or_default();
    left <= lease.saturating_sub(lease / 3)
}

/// This clone's records on the remote as last read, by (agent, pattern): each version (blob),
/// and whether this clock first saw it later than `now`. Such a record was stamped before the
/// clock was set back: its lease would end here later than on the other clones, which count it
/// from when they saw it (it would lapse there before it came due here), so it is renewed at
/// once.
fn own_versions(
    ws: &Workspace,
    cfg: &remote::Config,
    now: &Timestamp,
) -> BTreeMap<(String, String), (String, bool)> {
    let state = remote::state::read(ws.root(), &cfg.remote);
    let (Some(me), Some(state)) = (cfg.clone_id.as_deref(), state) else {
        return BTreeMap::new();
    };
    (state.claims.iter())
        .filter(|c| c.record.holder.clone == me)
        .map(|c| {
            let pattern = pattern_of(c.record.kind, c.record.text());
            let ahead = clock::parse_timestamp(&c.seen).is_some_and(|seen| seen > *now);
            let version = (c.blob.clone(), ahead);
            let key = (c.record.holder.agent.clone(), pattern.as_str().to_string());
            (key, version)
        })
        .collect()
}

/// This clone's claims and locks marked as published through `remote`, judged, each with its
/// kind; an error when `.coord/claims` cannot be read.
fn marked_here(
    ws: &Workspace,
    remote: &str,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Result<Vec<(LockEntry, Kind)>> {
    let root = ws.root();
    let ours = |e: &LockEntry| e.field(MARK) == Some(remote);
    let mut out: Vec<(LockEntry, Kind)> = (claim::try_judged(root, cache, now)?.into_iter())
        .filter(|e| ours(e))
        .map(|e| (e, Kind::Claim))
        .collect();
    for (rel, agent) in index::entries(root) {
        let Ok(target) = ws.target_from_rel(&rel) else {
            continue;
        };
        let mut found: Vec<LockEntry> = (crate::lock::locks_of(&target).into_iter())
            .filter(|e| e.agent == agent && ours(e))
            .collect();
        classify(root, &mut found, cache, now);
        out.extend(found.into_iter().map(|e| (e, Kind::Lock)));
    }
    Ok(out)
}

/// The record of `h` is gone from the remote and nobody holds its paths there (the remote's
/// claims were rewritten, or released by `coord remote disable` before sharing was enabled
/// again): while its holder here still holds it, it is published again; held meanwhile by
/// another clone, it is lost.
fn republish(ws: &Workspace, agent: &AgentId, h: &Held, remote: &str) -> Result<()> {
    let mut cache = StateCache::default();
    let here = held_here(ws, agent.id(), h.kind, &h.text, &mut cache, &clock::now())?;
    let still = here.is_some_and(|e| e.state != LockState::Stale && e.token() == Some(&h.token));
    if !still || unpublished(ws, agent, h.kind, &h.text, &h.token).is_none() {
        return Ok(());
    }
    let item = match h.kind {
        Kind::Claim => Item::claim(pattern_of(h.kind, &h.text)),
        Kind::Lock => Item::lock(&h.text),
    };
    match remote::publish_claims(ws, agent, &[item], h.reason.as_deref(), h.lease)? {
        Claimed::Published(_) => {}
        Claimed::Held(other) => lost(ws, agent, h, &other.holder.describe(), remote),
    }
    Ok(())
}

/// The remote refused the renewal of `h`: its record there is gone (taken over by `by`, once
/// its lease lapsed).
fn lost(ws: &Workspace, agent: &AgentId, h: &Held, by: &str, remote: &str) {
    let Some(_alone) = unpublished(ws, agent, h.kind, &h.text, &h.token) else {
        return;
    };
    let given = match h.kind {
        Kind::Claim => {
            let held = [(h.text.clone(), h.token.clone())];
            claim::release_here(ws, agent, claim::Which::Tokens(&held), false)
        }
        Kind::Lock => {
            let Ok(target): Result<Target> = ws.target_from_rel(&h.text) else {
                return;
            };
            crate::lock::release::release_tokens(ws, agent, &[(target, h.token.clone())], false)
        }
    };
    let released = given.is_ok_and(|(out, _)| {
        out.iter()
            .any(|r| r.outcome == crate::lock::ReleaseOutcome::Released)
    });
    let claim = h.kind == Kind::Claim;
    if released {
        crate::lock::events::remote_lost(ws.root(), agent.id(), claim, &h.text, by, remote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        clock::parse_timestamp(s).unwrap()
    }

    #[test]
    fn a_record_is_due_once_a_third_of_its_lease_has_passed() {
        let lease = Duration::from_secs(900);
        let now = at("2026-01-28T10:00:00+00:00");
        assert!(!due(&at("2026-01-28T10:15:00+00:00"), lease, &now));
        assert!(!due(&at("2026-01-28T10:10:01+00:00"), lease, &now));
        assert!(due(&at("2026-01-28T10:10:00+00:00"), lease, &now));
        // Lapsed already.
        assert!(due(&at("2026-01-28T09:59:00+00:00"), lease, &now));
    }

    #[test]
    fn a_record_without_a_holder_is_released_when_two_looks_saw_it() {
        let record = |p: &str, v: &str| (Pattern::parse(p).unwrap(), v.to_string());
        let round = || {
            let mut r = Round::default();
            let records = vec![record("src/**", "v1"), record("x/", "v2")];
            r.release.insert("a".into(), records);
            r
        };
        let mut first = round();
        let seen = first.orphans();
        first.release_only(&BTreeSet::new());
        assert!(first.release.is_empty());
        let mut second = round();
        second.release_only(&seen);
        assert_eq!(second.release["a"].len(), 2);
        // A new version of a record (published again here since) is not released.
        for (version, released) in [("v2", Some(vec![record("x/", "v2")])), ("v0", None)] {
            let mut r = round();
            r.release_only(&[("a".to_string(), "x/**".to_string(), version.to_string())].into());
            assert_eq!(r.release.get("a"), released.as_ref(), "{version}");
        }
    }

    #[test]
    fn the_look_is_every_second_or_a_third_of_the_shortest_lease() {
        let mut r = Round::default();
        assert_eq!(r.poll(), POLL);
        let held = |lease| Held {
            kind: Kind::Claim,
            text: "src/**".into(),
            token: "t".into(),
            lease,
            reason: None,
        };
        let secs = Duration::from_secs;
        r.live
            .insert("a".into(), vec![held(secs(900)), held(secs(2))]);
        assert_eq!(r.poll(), Duration::from_secs(2) / 3);
        r.live
            .insert("b".into(), vec![held(Duration::from_millis(30))]);
        assert_eq!(r.poll(), MIN_POLL);
    }
}
