//! Changing `refs/coord/claims` by compare-and-swap: a request is decided against the whole
//! set of claims of one commit (pattern against pattern, so `src/**` and `src/a.rs` are judged
//! against each other), the change is written as a child of that commit, and pushed with a lease
//! on that commit's full id (create-only when there was none). The server applies it under the
//! ref's lock: of two clones deciding against the same commit, exactly one push lands; the other
//! gets `(stale info)`, reads again, decides again (now against the winner's claim), and tries
//! again after a random pause, a bounded number of times.
//!
//! A release or a renewal first tries from the commit last read here (no fetch): it changes only
//! this clone's own records, and the lease on that commit makes it safe; a lost race costs one
//! push, then goes the long way. A claim always reads the remote first (one fetch, one push).

use std::time::{Duration, Instant};

use super::record::{self, ClaimRecord, Holder, Kind};
use super::state::{self, SeenClaim};
use super::steady::{self, Steady};
use super::sync::{self, Claim, Claims};
use super::{Remote, backoff, time_text};
use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::layout;
use crate::pattern::Pattern;
use crate::workspace::Workspace;

/// How many times a change is decided and pushed before giving up on a remote that keeps
/// changing under it.
const MAX_TRIES: u32 = 24;

/// After this many commits the next change starts the history anew (a commit without a
/// parent, naming the one it replaces), so that a new clone fetches the claims, not years of
/// renewals.
pub(crate) const SQUASH_AT: u64 = 1000;

/// What a change to the claims does, decided against one commit's claims.
pub(crate) enum Plan<T> {
    /// Nothing to write: the answer.
    Done(T),
    /// Write these records (new versions) and remove these entries, then answer.
    Write {
        /// The records to write, each under its entry name.
        put: Vec<(String, ClaimRecord)>,
        /// The entries to remove.
        remove: Vec<String>,
        /// The commit message's first line.
        summary: String,
        /// The answer once it landed.
        answer: T,
    },
}

/// Decide with `plan` and push, until a push lands (or the plan needs none). `optimistic`:
/// first decide against the claims last read here, without a fetch.
pub(crate) fn change<T>(
    ws: &Workspace,
    r: &Remote,
    optimistic: bool,
    mut plan: impl FnMut(&Claims, &Timestamp) -> Result<Plan<T>>,
) -> Result<T> {
    let mut squash = true;
    for attempt in 0..MAX_TRIES {
        if Instant::now() >= r.deadline {
            break;
        }
        let last = (attempt == 0 && optimistic)
            .then(|| r.last_read())
            .flatten()
            .filter(|c| c.commit.is_some());
        let fresh = last.is_none();
        let claims = match last {
            Some(c) => c,
            None => r.read_remote(ws)?,
        };
        let now = clock::now();
        let (put, remove, summary, answer) = match plan(&claims, &now)? {
            Plan::Done(t) if fresh => return Ok(t),
            // Nothing to change in what was read here may only mean it is old: read the remote.
            Plan::Done(_) => continue,
            Plan::Write {
                put,
                remove,
                summary,
                answer,
            } => (put, remove, summary, answer),
        };
        let squash_now = squash && claims.generation + 1 >= SQUASH_AT;
        let written = match write(r, &claims, &put, &remove, &summary, squash_now) {
            Ok(w) => w,
            // The commit read here is gone from this clone (an optimistic try after a gc):
            // go the long way.
            Err(_) if !fresh => continue,
            Err(why) => {
                return Err(Error::Failed {
                    message: format!("cannot write the claims for `{}`: {why}", r.name),
                });
            }
        };
        let expect = match &claims.commit {
            Some(c) => super::git::Expect::Oid(c.clone()),
            None => super::git::Expect::Absent,
        };
        let pushed_at = clock::now();
        let status = super::git::push(
            r.dir(),
            &r.name,
            &[super::git::Update {
                oid: Some(written.commit.clone()),
                dst: layout::REMOTE_CLAIMS_REF.to_string(),
                expect,
            }],
            r.deadline,
        )
        .map_err(|f| r.fault(&f))?;
        match status.first() {
            Some(super::git::RefStatus::Done) => {
                landed(ws, r, &claims, &written, &remove, &pushed_at)?;
                return Ok(answer);
            }
            Some(super::git::RefStatus::Stale) | None => backoff(attempt + 1),
            Some(super::git::RefStatus::Rejected(why)) => {
                // A server that refuses a forced update keeps the whole history instead.
                if squash_now && why.contains("fast-forward") {
                    squash = false;
                    continue;
                }
                return Err(Error::Remote {
                    remote: r.name.clone(),
                    message: format!(
                        "remote `{}` refused the update of `{}`: {why}; nothing was changed",
                        r.name,
                        layout::REMOTE_CLAIMS_REF
                    ),
                    credentials: why.contains("denied") || why.contains("permission"),
                });
            }
        }
    }
    Err(Error::Remote {
        remote: r.name.clone(),
        message: format!(
            "the claims on `{}` changed under every try ({MAX_TRIES}) or time ran out; nothing was changed",
            r.name
        ),
        credentials: false,
    })
}

/// A commit written for a change, with the blobs of the records it put.
struct Written {
    commit: String,
    /// (entry name, blob id, record) of each record put.
    put: Vec<(String, String, ClaimRecord)>,
    generation: u64,
}

/// Write the commit that changes `claims` (one `git fast-import`): a child of its commit, or
/// with `squash` a new root naming it.
fn write(
    r: &Remote,
    claims: &Claims,
    put: &[(String, ClaimRecord)],
    remove: &[String],
    summary: &str,
    squash: bool,
) -> std::result::Result<Written, String> {
    let generation = if squash { 0 } else { claims.generation + 1 };
    let mut s: Vec<u8> = Vec::new();
    let mut blobs = Vec::new();
    for (i, (_, rec)) in put.iter().enumerate() {
        let bytes = serde_json::to_vec(rec).map_err(|e| e.to_string())?;
        s.extend_from_slice(format!("blob\nmark :{}\ndata {}\n", i + 2, bytes.len()).as_bytes());
        s.extend_from_slice(&bytes);
        s.push(b'\n');
        blobs.push(i + 2);
    }
    let mut message = format!("{summary}\n\ncoord-generation: {generation}\n");
    message.push_str(&format!(
        "coord-nonce: {:016x}\n",
        crate::host::random_u64()
    ));
    if squash && let Some(c) = &claims.commit {
        message.push_str(&format!("coord-squashed-from: {c}\n"));
    }
    let scratch = r.scratch_ref();
    let secs = clock::now().timestamp();
    s.extend_from_slice(
        format!(
            "commit {scratch}\nmark :1\ncommitter coord <coord@localhost> {secs} +0000\ndata {}\n{message}\n",
            message.len()
        )
        .as_bytes(),
    );
    match (&claims.commit, squash) {
        (Some(parent), false) => s.extend_from_slice(format!("from {parent}\n").as_bytes()),
        (Some(_), true) => {
            // A new root holding the claims read, less and plus the changes.
            s.extend_from_slice(b"deleteall\n");
            for c in &claims.claims {
                if !remove.contains(&c.seen.name) {
                    s.extend_from_slice(
                        format!("M 100644 {} {}\n", c.seen.blob, c.seen.name).as_bytes(),
                    );
                }
            }
        }
        (None, _) => {}
    }
    for name in remove {
        s.extend_from_slice(format!("D {name}\n").as_bytes());
    }
    for ((name, _), mark) in put.iter().zip(&blobs) {
        s.extend_from_slice(format!("M 100644 :{mark} {name}\n").as_bytes());
    }
    s.push(b'\n');
    s.extend_from_slice(b"get-mark :1\n");
    for mark in &blobs {
        s.extend_from_slice(format!("get-mark :{mark}\n").as_bytes());
    }
    s.extend_from_slice(format!("reset {scratch}\nfrom {}\n\ndone\n", r.null_oid()).as_bytes());
    let out = super::git::fast_import(r.dir(), s, r.deadline)?;
    let mut ids = out.lines().map(str::trim);
    let commit = ids.next().filter(|c| !c.is_empty()).ok_or("no commit id")?;
    let mut written = Written {
        commit: commit.to_string(),
        put: Vec::new(),
        generation,
    };
    for (name, rec) in put {
        let blob = ids.next().ok_or("no blob id")?;
        written
            .put
            .push((name.clone(), blob.to_string(), rec.clone()));
    }
    Ok(written)
}

/// A push landed: the state holds the claims as they are now on the remote (those of the
/// commit it replaced, less `remove`, plus what it put, first seen now).
fn landed(
    ws: &Workspace,
    r: &Remote,
    before: &Claims,
    written: &Written,
    remove: &[String],
    pushed_at: &Timestamp,
) -> Result<()> {
    let seen = time_text(pushed_at);
    let steady = steady::now();
    let mut claims: Vec<Claim> = before
        .claims
        .iter()
        .filter(|c| !remove.contains(&c.seen.name))
        .filter(|c| !written.put.iter().any(|(n, _, _)| *n == c.seen.name))
        .cloned()
        .collect();
    for (name, blob, rec) in &written.put {
        let seen = SeenClaim {
            name: name.clone(),
            blob: blob.clone(),
            seen: seen.clone(),
            steady: steady.clone(),
            record: rec.clone(),
        };
        if let Some(c) = sync::revive(&seen) {
            claims.push(c);
        }
    }
    let after = Claims {
        commit: Some(written.commit.clone()),
        generation: written.generation,
        claims,
    };
    state::update(ws, &r.name, |s| {
        if s.claims_commit == before.commit || s.synced_by(pushed_at) {
            sync::set_claims(s, &after);
        }
    })
}

/// A claim that a request runs into: who holds it, and until when on this clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The pattern (or path) asked for.
    pub asked: String,
    /// Whether what stands in the way is a claim or a shared lock.
    pub kind: Kind,
    /// The pattern (or path) it holds.
    pub pattern: String,
    /// Who holds it.
    pub holder: Holder,
    /// Since when (the holder's word, never later than this clone first saw the claim).
    pub since: Timestamp,
    /// What the holder works on.
    pub reason: Option<String>,
    /// When its lease ends unless renewed, on this clock.
    pub lease_until: Timestamp,
}

/// A stale claim taken over by a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenOver {
    /// A claim, or a shared lock.
    pub kind: Kind,
    /// Its pattern (or path).
    pub pattern: String,
    /// Who held it.
    pub holder: Holder,
    /// Since when.
    pub since: Timestamp,
    /// When its lease ended, on this clock.
    pub lease_ended: Timestamp,
}

/// Claims published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The patterns (or paths), as published.
    pub patterns: Vec<String>,
    /// When their lease ends unless renewed, on this clock.
    pub lease_until: Timestamp,
    /// The stale claims of others they took over.
    pub taken_over: Vec<TakenOver>,
}

/// The outcome of a claim request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// Published: this clone's agent holds them on the remote.
    Published(Published),
    /// Another clone's live claim overlaps one of them: nothing was published.
    Held(Held),
}

/// One item of a request: a pattern (a claim) or a path (a shared lock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Claim or lock.
    pub kind: Kind,
    /// The pattern; for a lock, [`Pattern::literal`] of the path.
    pub pattern: Pattern,
}

impl Item {
    /// A claim on `pattern`.
    pub fn claim(pattern: Pattern) -> Item {
        Item {
            kind: Kind::Claim,
            pattern,
        }
    }

    /// A lock on `path` (relative to the top level), shared with other clones.
    pub fn lock(path: &str) -> Item {
        Item {
            kind: Kind::Lock,
            pattern: Pattern::literal(path),
        }
    }

    fn record_fields(&self) -> (Option<String>, Option<String>) {
        match self.kind {
            Kind::Claim => (Some(self.pattern.as_str().to_string()), None),
            Kind::Lock => (None, Some(self.pattern.as_str().to_string())),
        }
    }
}

/// Whether claim `c` is held by someone other than `me` and still live at `now`.
/// Whether `c` is another's and its lease has not lapsed, as this clone judges it: by the wall
/// clock and by the clock that does not jump (`steady`, now; [`SeenClaim::lapsed`]).
fn live_other(c: &Claim, me: &Holder, now: &Timestamp, steady: Option<&Steady>) -> bool {
    c.holder() != me && !c.seen.lapsed(now, steady)
}

/// When `c` says it was taken, never later than this clone first saw its version.
fn since_of(c: &Claim) -> Timestamp {
    let seen = clock::parse_timestamp(&c.seen.seen).unwrap_or_else(clock::now);
    match clock::parse_timestamp(&c.seen.record.since) {
        Some(s) if s <= seen => s,
        _ => seen,
    }
}

/// The [`Held`] answer for claim `c`, met by a request for `asked`.
fn held_by(c: &Claim, asked: &str) -> Held {
    Held {
        asked: asked.to_string(),
        kind: c.seen.record.kind,
        pattern: c.seen.record.text().to_string(),
        holder: c.holder().clone(),
        since: since_of(c),
        reason: c.seen.record.reason.clone(),
        lease_until: c.lease_until(),
    }
}

/// Decide a request by `me` for `items` against `claims` at `now`: all or nothing.
pub(crate) fn decide_claim(
    claims: &Claims,
    me: &Holder,
    items: &[Item],
    reason: Option<&str>,
    lease: Duration,
    now: &Timestamp,
    steady: Option<&Steady>,
) -> Plan<Claimed> {
    // A live claim of another that overlaps any item refuses the whole request.
    for item in items {
        if let Some(c) = claims
            .claims
            .iter()
            .filter(|c| live_other(c, me, now, steady) && c.pattern.overlaps(&item.pattern))
            .min_by_key(|c| since_of(c))
        {
            return Plan::Done(Claimed::Held(held_by(c, item.pattern.as_str())));
        }
    }
    let lease_s = lease.as_secs().clamp(1, record::MAX_LEASE_S);
    let mut put = Vec::new();
    let mut remove = Vec::new();
    let mut taken_over: Vec<TakenOver> = Vec::new();
    for item in items {
        let stale: Vec<&Claim> = claims
            .claims
            .iter()
            .filter(|c| c.holder() != me && c.pattern.overlaps(&item.pattern))
            .collect();
        for c in &stale {
            if !remove.contains(&c.seen.name) {
                remove.push(c.seen.name.clone());
                taken_over.push(TakenOver {
                    kind: c.seen.record.kind,
                    pattern: c.seen.record.text().to_string(),
                    holder: c.holder().clone(),
                    since: since_of(c),
                    lease_ended: c.lease_until(),
                });
            }
        }
        let (pattern, path) = item.record_fields();
        let name = record::entry_name(me, item.kind, item.pattern.as_str());
        let mine = claims.claims.iter().find(|c| c.seen.name == name);
        let rec = ClaimRecord {
            v: record::VERSION,
            kind: item.kind,
            pattern,
            path,
            holder: me.clone(),
            since: mine
                .map(|c| c.seen.record.since.clone())
                .unwrap_or_else(|| clock::format_timestamp(now)),
            reason: reason.map(record::clean),
            lease_s,
            renewal: mine.map_or(0, |c| c.seen.record.renewal.wrapping_add(1)),
            token: mine
                .map(|c| c.seen.record.token.clone())
                .unwrap_or_else(|| format!("{:016x}", crate::host::random_u64())),
            taken_from: stale
                .first()
                .map(|c| c.holder().clone())
                .or_else(|| mine.and_then(|c| c.seen.record.taken_from.clone())),
        };
        if !put.iter().any(|(n, _): &(String, ClaimRecord)| *n == name) {
            put.push((name, rec));
        }
    }
    let patterns: Vec<String> = items
        .iter()
        .map(|i| i.pattern.as_str().to_string())
        .collect();
    let mut summary = format!("claim {} for {}", quoted_list(&patterns), me.describe());
    for t in &taken_over {
        summary.push_str(&format!(
            ", taking over `{}` from {} (its lease lapsed)",
            t.pattern,
            t.holder.describe()
        ));
    }
    let lease_until = now
        .checked_add_signed(chrono::Duration::seconds(lease_s as i64))
        .unwrap_or(*now);
    Plan::Write {
        put,
        remove,
        summary,
        answer: Claimed::Published(Published {
            patterns,
            lease_until,
            taken_over,
        }),
    }
}

/// `` `a`, `b` ``.
fn quoted_list(items: &[String]) -> String {
    items
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What became of one of this clone's claims asked to be released or renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Released, or renewed (its lease now ends then, on this clock).
    Done {
        /// The pattern (or path).
        pattern: String,
        /// For a renewal: when the lease ends now.
        lease_until: Option<Timestamp>,
    },
    /// It is not on the remote (never published, released already, or taken over): `by`
    /// names who holds an overlapping claim now, or took it over, when someone does.
    Gone {
        /// The pattern (or path).
        pattern: String,
        /// Who holds it now.
        by: Option<Holder>,
    },
}

/// Which of `me`'s records a release or renewal is about: those of `agents` (all of this clone
/// when empty) on `patterns` (all of theirs when `None`).
fn own<'a>(
    claims: &'a Claims,
    clone: &str,
    agents: &[String],
    patterns: Option<&[Pattern]>,
) -> Vec<&'a Claim> {
    claims
        .claims
        .iter()
        .filter(|c| c.holder().clone == clone)
        .filter(|c| agents.is_empty() || agents.contains(&c.holder().agent))
        .filter(|c| patterns.is_none_or(|ps| ps.iter().any(|p| p.as_str() == c.seen.record.text())))
        .collect()
}

/// Who holds (or took over) what `holder` asked about under `pattern`, now that its record is
/// gone: a record that says it took it from `holder`, else one that is not lapsed (a lapsed
/// one that does not say so took nothing: the record may not have landed yet, its `coord lock`
/// still publishing, and the renewal's answer must not give it back here).
fn gone(
    claims: &Claims,
    holder: &Holder,
    pattern: &Pattern,
    now: &Timestamp,
    steady: Option<&Steady>,
) -> Option<Holder> {
    let took = |c: &Claim| c.seen.record.taken_from.as_ref() == Some(holder);
    claims
        .claims
        .iter()
        .filter(|c| c.holder() != holder && c.pattern.overlaps(pattern))
        .filter(|c| took(c) || !c.seen.lapsed(now, steady))
        .max_by_key(|c| took(c))
        .map(|c| c.holder().clone())
}

/// Decide a release (`renew == None`) or a renewal (`Some(lease)`: the new lease, or each
/// record's own when `None` inside) of `me`'s records.
pub(crate) fn decide_own(
    claims: &Claims,
    me: &Holder,
    agents: &[String],
    patterns: Option<&[Pattern]>,
    renew: Option<Option<Duration>>,
    now: &Timestamp,
    steady: Option<&Steady>,
) -> Plan<Vec<Outcome>> {
    let mine = own(claims, &me.clone, agents, patterns);
    let mut outcomes = Vec::new();
    let mut put = Vec::new();
    let mut remove = Vec::new();
    for c in &mine {
        let pattern = c.seen.record.text().to_string();
        match renew {
            None => {
                remove.push(c.seen.name.clone());
                outcomes.push(Outcome::Done {
                    pattern,
                    lease_until: None,
                });
            }
            Some(lease) => {
                let mut rec = c.seen.record.clone();
                // A new version, told apart from the last: past u64::MAX it starts again at 0.
                rec.renewal = rec.renewal.wrapping_add(1);
                if let Some(l) = lease {
                    rec.lease_s = l.as_secs().clamp(1, record::MAX_LEASE_S);
                }
                let until = now
                    .checked_add_signed(chrono::Duration::seconds(rec.lease_s as i64))
                    .unwrap_or(*now);
                put.push((c.seen.name.clone(), rec));
                outcomes.push(Outcome::Done {
                    pattern,
                    lease_until: Some(until),
                });
            }
        }
    }
    if let Some(ps) = patterns {
        for p in ps {
            if mine.iter().any(|c| c.seen.record.text() == p.as_str()) {
                continue;
            }
            let holder = Holder {
                agent: agents.first().cloned().unwrap_or_default(),
                ..me.clone()
            };
            outcomes.push(Outcome::Gone {
                pattern: p.as_str().to_string(),
                by: gone(claims, &holder, p, now, steady),
            });
        }
    }
    if put.is_empty() && remove.is_empty() {
        return Plan::Done(outcomes);
    }
    let done: Vec<String> = mine
        .iter()
        .map(|c| c.seen.record.text().to_string())
        .collect();
    let who = if agents.is_empty() {
        format!("this clone on {}", me.host)
    } else {
        Holder {
            agent: agents.join(", "),
            ..me.clone()
        }
        .describe()
    };
    let verb = if renew.is_some() { "renew" } else { "release" };
    Plan::Write {
        put,
        remove,
        summary: format!("{verb} {} of {who}", quoted_list(&done)),
        answer: outcomes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(agent: &str, clone: &str) -> Holder {
        Holder {
            agent: agent.into(),
            host: format!("host-{clone}"),
            clone: clone.into(),
        }
    }

    fn claim(h: &Holder, pattern: &str, seen: &str, lease_s: u64) -> Claim {
        let rec = ClaimRecord {
            v: 1,
            kind: Kind::Claim,
            pattern: Some(pattern.into()),
            path: None,
            holder: h.clone(),
            since: seen.into(),
            reason: None,
            lease_s,
            renewal: 0,
            token: "t".into(),
            taken_from: None,
        };
        Claim {
            seen: SeenClaim {
                name: record::entry_name(h, Kind::Claim, pattern),
                blob: format!("blob-{pattern}"),
                seen: seen.into(),
                steady: Some(at_boot(0)),
                record: rec,
            },
            pattern: Pattern::parse(pattern).unwrap(),
        }
    }

    fn at(s: &str) -> Timestamp {
        clock::parse_timestamp(s).unwrap()
    }

    /// The clock that does not jump, `ms` into boot `b1`.
    fn at_boot(ms: u64) -> Steady {
        Steady {
            boot: "b1".into(),
            ms,
        }
    }

    const T0: &str = "2026-01-28T10:00:00+00:00";

    /// bob (clone `b`) holds `src/**`, first seen at [`T0`] with a lease of 900 s.
    fn bob_claims_src(generation: u64) -> (Holder, Claims) {
        let bob = holder("bob", "b");
        let claims = Claims {
            commit: Some("c".into()),
            generation,
            claims: vec![claim(&bob, "src/**", T0, 900)],
        };
        (bob, claims)
    }

    #[test]
    fn an_overlapping_live_claim_of_another_clone_refuses_the_whole_request() {
        let (bob, claims) = bob_claims_src(3);
        let me = holder("alice", "a");
        let items = [
            Item::claim(Pattern::parse("docs/").unwrap()),
            Item::claim(Pattern::parse("src/a/*.rs").unwrap()),
        ];
        let plan = decide_claim(
            &claims,
            &me,
            &items,
            None,
            Duration::from_secs(60),
            &at("2026-01-28T10:14:59+00:00"),
            Some(&at_boot(899_000)),
        );
        let Plan::Done(Claimed::Held(h)) = plan else {
            panic!("not held")
        };
        assert_eq!(h.holder, bob);
        assert_eq!(h.asked, "src/a/*.rs");
        assert_eq!(h.lease_until, at("2026-01-28T10:15:00+00:00"));
    }

    #[test]
    fn a_lapsed_lease_is_taken_over_saying_from_whom() {
        let (bob, claims) = bob_claims_src(0);
        let me = holder("alice", "a");
        let items = [Item::claim(Pattern::parse("src/a.rs").unwrap())];
        let plan = decide_claim(
            &claims,
            &me,
            &items,
            Some("x"),
            Duration::from_secs(60),
            &at("2026-01-28T10:15:00+00:00"),
            Some(&at_boot(900_000)),
        );
        let Plan::Write {
            put,
            remove,
            summary,
            answer: Claimed::Published(p),
        } = plan
        else {
            panic!("not published")
        };
        assert_eq!(remove, vec![claims.claims[0].seen.name.clone()]);
        assert_eq!(put[0].1.taken_from.as_ref(), Some(&bob));
        assert_eq!(p.taken_over[0].holder, bob);
        assert!(
            summary.contains("taking over `src/**` from bob on host-b"),
            "{summary}"
        );
    }

    #[test]
    fn a_lease_lapsed_by_a_wall_clock_set_forward_alone_is_not_taken_over() {
        let (_, claims) = bob_claims_src(0);
        let me = holder("alice", "a");
        let items = [Item::claim(Pattern::parse("src/a.rs").unwrap())];
        // An hour later by the wall clock, ten seconds later by the clock that does not jump.
        for steady in [Some(at_boot(10_000)), None] {
            let plan = decide_claim(
                &claims,
                &me,
                &items,
                None,
                Duration::from_secs(60),
                &at("2026-01-28T11:00:00+00:00"),
                steady.as_ref(),
            );
            assert!(
                matches!(plan, Plan::Done(Claimed::Held(_))),
                "taken over with {steady:?}"
            );
        }
    }

    #[test]
    fn the_same_agent_name_on_another_clone_is_another_holder() {
        let there = holder("alice", "b");
        let claims = Claims {
            commit: Some("c".into()),
            generation: 0,
            claims: vec![claim(&there, "src/**", T0, 900)],
        };
        let here = holder("alice", "a");
        let items = [Item::claim(Pattern::parse("src/x").unwrap())];
        assert!(matches!(
            decide_claim(
                &claims,
                &here,
                &items,
                None,
                Duration::from_secs(60),
                &at(T0),
                Some(&at_boot(0)),
            ),
            Plan::Done(Claimed::Held(_))
        ));
        // Its own claim is renewed, not refused.
        assert!(matches!(
            decide_claim(
                &claims,
                &there,
                &items,
                None,
                Duration::from_secs(60),
                &at(T0),
                Some(&at_boot(0)),
            ),
            Plan::Write { .. }
        ));
    }

    #[test]
    fn a_renewal_of_a_record_not_there_is_not_given_back_for_a_lapsed_claim_of_another() {
        let alice = holder("alice", "a");
        let (bob, claims) = bob_claims_src(0);
        let asked = [Pattern::parse("src/").unwrap()];
        let renew = |now: &str, steady: u64| {
            let plan = decide_own(
                &claims,
                &alice,
                &["alice".into()],
                Some(&asked),
                Some(None),
                &at(now),
                Some(&at_boot(steady)),
            );
            let Plan::Done(out) = plan else {
                panic!("wrote")
            };
            out
        };
        // Bob's claim is live: it holds what alice asked about.
        assert_eq!(
            renew(T0, 0),
            vec![Outcome::Gone {
                pattern: "src/**".into(),
                by: Some(bob.clone())
            }]
        );
        // Lapsed, and it does not say it took alice's: nobody took it (publish it again).
        assert_eq!(
            renew("2026-01-28T10:15:00+00:00", 900_000),
            vec![Outcome::Gone {
                pattern: "src/**".into(),
                by: None
            }]
        );
    }

    #[test]
    fn a_renewal_counter_at_the_max_starts_again_at_zero() {
        let alice = holder("alice", "a");
        let mut mine = claim(&alice, "src/**", T0, 900);
        mine.seen.record.renewal = u64::MAX;
        let claims = Claims {
            commit: Some("c".into()),
            generation: 0,
            claims: vec![mine],
        };
        let plan = decide_own(
            &claims,
            &alice,
            &["alice".into()],
            None,
            Some(None),
            &at(T0),
            Some(&at_boot(0)),
        );
        let Plan::Write { put, .. } = plan else {
            panic!("not written")
        };
        assert_eq!(put.len(), 1);
        assert_eq!(put[0].1.renewal, 0);
    }

    #[test]
    fn a_renewal_of_a_record_that_is_gone_says_who_took_it() {
        let alice = holder("alice", "a");
        let bob = holder("bob", "b");
        let mut taker = claim(&bob, "src/**", T0, 900);
        taker.seen.record.taken_from = Some(alice.clone());
        let claims = Claims {
            commit: Some("c".into()),
            generation: 0,
            claims: vec![taker],
        };
        let asked = [Pattern::parse("src/").unwrap()];
        let plan = decide_own(
            &claims,
            &alice,
            &["alice".into()],
            Some(&asked),
            Some(None),
            &at(T0),
            Some(&at_boot(0)),
        );
        let Plan::Done(out) = plan else {
            panic!("wrote")
        };
        assert_eq!(
            out,
            vec![Outcome::Gone {
                pattern: "src/**".into(),
                by: Some(bob)
            }]
        );
    }
}
