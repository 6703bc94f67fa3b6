//! One try, under the workspace mutex: read, judge each file and claim, take stale locks over
//! (re-verified), publish, look once more for a lock made by hand, check the arbitration is
//! still ours, write the presence once. A failure after publishing withdraws what it published.

// A step's `Err` is what stands in the way: the try's outcome, made once per try.
#![allow(clippy::result_large_err)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::super::blocker::{blocker_of, claim_blocker};
use super::super::scan::{Listing, lookup_roster, scan_folder};
use super::super::{
    LockEntry, LockState, claim, classify, follows_other_process, index, join_roster,
    list_locks_each, own_locks_listed, remote_claim, take_over,
};
use super::{Acquired, Attempt, Blocker, LockRequest, Mine, TakeOver, Tries};
use crate::arbiter::Guard;
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::host;
use crate::layout;
use crate::lock::queue::{self, Waiter};
use crate::pattern::Pattern;
use crate::presence::{self, LockStatus, StateCache};
use crate::record::Record;
use crate::wait::handoff;
use crate::workspace::{Target, Workspace};

/// One try, under the mutex: take every target and claim asked for, or none.
pub(super) fn attempt(tries: &mut Tries, mutex: &Guard) -> Result<Attempt> {
    let (ws, req, targets) = (tries.ws, tries.req, tries.targets);
    let mut t = Try::read(tries)?;
    let listing = Listing {
        sweep: true,
        roster: &t.roster,
        ..Listing::default()
    };
    // Every folder is listed once, however many of the targets it holds.
    let listed = list_locks_each(targets, listing)?;
    // Every file, then every claim asked for, judged in order: the first in the way ends the try.
    let plans = (targets.iter().zip(listed)).map(|(target, entries)| t.plan_lock(target, entries));
    let planned = plans.collect::<Result<Vec<_>, _>>().and_then(|plans| {
        let claims = req.claims.iter().map(|want| t.plan_claim(want));
        Ok((plans, claims.collect::<Result<Vec<_>, _>>()?))
    });
    let (plans, claim_plans) = match planned {
        Ok(both) => both,
        Err(b) => return Ok(Attempt::Busy(b)),
    };
    // Everything is free or stale: take stale locks over (re-verified), then publish ours.
    let stale = plans.iter().flat_map(|p| &p.stale_locks);
    for e in stale.chain(claim_plans.iter().flat_map(|p| &p.stale_locks)) {
        if !take_over(ws.root(), e)? {
            return Ok(Attempt::Busy(blocker_of(ws.root(), e, &t.now)));
        }
    }
    // All or nothing: whatever goes wrong from here on, the locks this try created go.
    let outcome = t.publish(mutex, &plans, &claim_plans);
    if !matches!(outcome, Ok(Attempt::Got(_))) {
        for (rel, path) in &t.created {
            let _ = fsutil::remove(path);
            index::forget(ws.root(), rel, req.agent.id());
            handoff::let_go(path);
        }
    }
    outcome
}

/// What one try decides on, read once under the mutex.
struct Try<'a> {
    ws: &'a Workspace,
    req: &'a LockRequest,
    targets: &'a [Target],
    mine: &'a Mine,
    now: Timestamp,
    cache: StateCache,
    /// The claims that can matter to this request, judged where they do.
    claims: Vec<claim::Judged>,
    /// The other records of `.coord/claims`, as read (written back as they are).
    unrelated: Vec<String>,
    /// Our claims (not stale), parsed.
    my_claims: Vec<Pattern>,
    /// The live tickets of the queues that can stand before this request.
    waiters: Vec<Waiter>,
    my_seq: Option<u64>,
    /// coord's index of locks, read when a claim first needs it.
    indexed: Option<Vec<(String, String)>>,
    /// The agents whose locks are also looked up by name, where listings lag ([`lookup_roster`]).
    roster: Vec<String>,
    /// The lock files this try made (file, lock file): removed unless it takes everything.
    created: Vec<(String, PathBuf)>,
}

impl<'a> Try<'a> {
    /// Our presence (only we write it while we hold the mutex), its locks, the claims, the queue.
    fn read(tries: &'a mut Tries) -> Result<Try<'a>> {
        let (ws, req, targets) = (tries.ws, tries.req, tries.targets);
        let (mine, tickets) = (&mut tries.mine, tries.tickets.as_ref());
        let (root, me) = (ws.root(), req.agent.id());
        let roster = lookup_roster(root)?;
        let now = clock::now();
        let mut cache = StateCache::default();
        mine.presence = presence::read(root, me).ok().flatten();
        mine.held = own_locks_listed(ws, &req.agent, mine.presence.as_ref());
        // Only the claims that can matter are judged: ours, those matching a target or a claim.
        let (mut claims, unrelated) = claim::read_for(root)?;
        for c in &mut claims {
            if c.entry.agent == me
                || targets.iter().any(|t| c.pattern.matches(&t.rel))
                || req.claims.iter().any(|p| p.overlaps(&c.pattern))
            {
                classify(root, std::slice::from_mut(&mut c.entry), &mut cache, &now);
            }
        }
        mine.claims = (claims.iter())
            .filter(|c| c.entry.agent == me && c.entry.state != LockState::Stale)
            .map(|c| c.entry.file.clone())
            .collect();
        // Claim waiters stand in line for the files they match, a claim behind what it overlaps.
        let waiters = if req.claims.is_empty() && mine.claims.is_empty() {
            queue::claim_waiters(root)
        } else {
            queue::waiters(root)
        };
        Ok(Try {
            ws,
            req,
            targets,
            my_claims: (mine.claims.iter())
                .filter_map(|c| Pattern::parse(c).ok())
                .collect(),
            mine,
            now,
            cache,
            claims,
            unrelated,
            waiters,
            my_seq: tickets.map(|t| t.seq),
            indexed: None,
            roster,
            created: Vec::new(),
        })
    }

    fn me(&self) -> &str {
        self.req.agent.id()
    }

    /// The judged claims of other agents, stale or not (`stale`), whose pattern `on` accepts.
    fn foreign_claims(
        &self,
        stale: bool,
        on: impl Fn(&Pattern) -> bool,
    ) -> impl Iterator<Item = &claim::Judged> {
        let me = self.me();
        (self.claims.iter()).filter(move |c| {
            c.entry.agent != me && (c.entry.state == LockState::Stale) == stale && on(&c.pattern)
        })
    }

    /// Whether waiter `seq` waits for something we hold: letting it block us would deadlock both.
    fn waits_for_me(&self, seq: u64) -> bool {
        let held = &self.mine.held;
        queue::waits_for_any(self.ws.root(), seq, held, &self.mine.claims)
            || (self.waiters.iter().filter(|x| x.seq == seq)).any(|x| match x.claim {
                true => Pattern::parse(&x.file).is_ok_and(|p| {
                    held.iter().any(|h| p.matches(h))
                        || self.my_claims.iter().any(|m| m.overlaps(&p))
                }),
                false => self.my_claims.iter().any(|m| m.matches(&x.file)),
            })
    }

    /// The waiters ahead of us in line for what `waits_for` accepts, first first.
    fn ahead(&self, waits_for: impl Fn(&Waiter) -> bool) -> Vec<&Waiter> {
        (self.waiters.iter())
            .filter(|w| self.my_seq.is_none_or(|s| w.seq < s) && waits_for(w))
            .filter(|w| !self.waits_for_me(w.seq))
            .collect()
    }

    /// Judge one file's locks (`entries`): what taking it means, or what stands in the way.
    fn plan_lock(
        &mut self,
        target: &'a Target,
        mut entries: Vec<LockEntry>,
    ) -> Result<Plan<&'a Target>, Blocker> {
        let (root, rel) = (self.ws.root(), target.rel.as_str());
        classify(root, &mut entries, &mut self.cache, &self.now);
        let (mine, foreign): (Vec<_>, Vec<_>) =
            entries.into_iter().partition(|e| e.agent == self.me());
        if let Some(live) = foreign.iter().find(|e| e.state != LockState::Stale) {
            return Err(blocker_of(root, live, &self.now));
        }
        if let Some(c) = self.foreign_claims(false, |p| p.matches(rel)).next() {
            return Err(claim_blocker(root, c, rel, &self.now));
        }
        // Our own name is not enough on a lock of another live process of ours (`coord run`,
        // `coord session`): two processes of one agent exclude each other too.
        let live_mine = mine.iter().filter(|m| m.state != LockState::Stale);
        let owner = self.req.owner.as_ref().map(|o| o.pid);
        if let Some(other) = live_mine.clone().find(|m| follows_other_process(m, owner)) {
            let mut b = blocker_of(root, other, &self.now);
            if let Some((pid, _)) = other.process() {
                b.holder = format!("{} (process {pid})", b.holder);
            }
            return Err(b);
        }
        // Refreshing a lock we hold does not queue.
        if live_mine.count() == 0 {
            self.first_in_line(target)?;
        }
        // A stale claim on the file goes with it: left, it would hold the file again the moment
        // its holder's presence came back.
        let stale_claims = (self.foreign_claims(true, |p| p.matches(rel)))
            .map(|c| c.entry.clone())
            .collect();
        Ok(Plan {
            key: target,
            mine: mine.into_iter().next(),
            stale_locks: foreign,
            stale_claims,
        })
    }

    /// Whether we may take `target` now: no live waiter for it, or a claim matching it, is ahead.
    fn first_in_line(&self, target: &Target) -> Result<(), Blocker> {
        let (root, rel) = (self.ws.root(), target.rel.as_str());
        let ahead: Vec<_> = (queue::live_tickets(root, target, self.my_seq).into_iter())
            .filter(|t| !self.waits_for_me(t.seq))
            .collect();
        if let Some(first) = ahead.first() {
            return Err(queued(rel, &first.agent, ahead.len(), None));
        }
        let claims =
            self.ahead(|w| w.claim && Pattern::parse(&w.file).is_ok_and(|p| p.matches(rel)));
        match claims.first() {
            Some(first) => Err(queued(rel, &first.name, claims.len(), Some(&first.file))),
            None => Ok(()),
        }
    }

    /// Judge one claim asked for: free of other agents' claims and locks, first in line.
    fn plan_claim(&mut self, want: &'a Pattern) -> Result<Plan<&'a Pattern>, Blocker> {
        let (root, text) = (self.ws.root(), want.as_str());
        if let Some(c) = self.foreign_claims(false, |p| p.overlaps(want)).next() {
            return Err(claim_blocker(root, c, text, &self.now));
        }
        let stale_locks = self.locks_under(want)?;
        if !self.mine.claims.iter().any(|c| c == text) {
            let ahead = self.ahead(|w| match w.claim {
                true => Pattern::parse(&w.file).is_ok_and(|p| p.overlaps(want)),
                false => want.matches(&w.file),
            });
            if let Some(first) = ahead.first() {
                return Err(queued(text, &first.name, ahead.len(), Some(text)));
            }
        }
        let me = self.me();
        Ok(Plan {
            key: want,
            mine: (self.claims.iter())
                .find(|c| c.entry.agent == me && c.entry.file == text)
                .map(|c| c.entry.clone()),
            stale_claims: (self.foreign_claims(true, |p| p.overlaps(want)))
                .map(|c| c.entry.clone())
                .collect(),
            stale_locks,
        })
    }

    /// Others' locks on the paths `want` matches (indexed, or found by a walk), each once, stale.
    fn locks_under(&mut self, want: &Pattern) -> Result<Vec<LockEntry>, Blocker> {
        let (ws, me) = (self.ws, self.req.agent.id());
        let indexed = (self.indexed).get_or_insert_with(|| index::entries(ws.root()));
        let mut found: Vec<LockEntry> = (indexed.iter())
            .filter(|(rel, agent)| agent != me && want.matches(rel))
            .filter_map(|(rel, _)| ws.target_from_rel(rel).ok())
            .flat_map(|t| super::super::locks_of(&t))
            .collect();
        let walked = scan_folder(&crate::worktree::tops(ws.root()), &want.literal_prefix());
        found.extend(walked.into_iter().filter(|e| want.matches(&e.file)));
        let mut seen = HashSet::new();
        found.retain(|e| e.agent != me && seen.insert(e.lock_path.clone()));
        classify(ws.root(), &mut found, &mut self.cache, &self.now);
        match found.iter().find(|e| e.state != LockState::Stale) {
            Some(live) => {
                let mut b = blocker_of(ws.root(), live, &self.now);
                b.pattern = Some(want.as_str().to_string());
                b.record = None;
                Err(b)
            }
            None => Ok(found),
        }
    }

    /// Publish our records: the locks, then, once no lock made by hand meanwhile stands beside
    /// them and the arbitration is still ours, the presence and `.coord/claims`.
    fn publish(
        &mut self,
        mutex: &Guard,
        plans: &[Plan<&Target>],
        claim_plans: &[Plan<&Pattern>],
    ) -> Result<Attempt> {
        let policy = self.ws.policy()?;
        // Where listings lag, locks are also looked up by name for the roster's agents: join it.
        if policy.exact_lookups {
            join_roster(self.ws.root(), &self.roster, self.me())?;
        }
        // A process releasing before it exits keeps new locks locked: the next one sleeps on that.
        let hold = handoff::holds_locks() && policy.fs.served_locally();
        let mut got =
            (plans.iter().map(|plan| self.publish_lock(plan, hold))).collect::<Result<Vec<_>>>()?;
        if let Some(b) = self.newcomer(plans)? {
            return Ok(Attempt::Busy(b));
        }
        // Fencing: this try counts only if the arbitration is still ours (a stalled holder's not).
        if !mutex.still_held() {
            return Ok(Attempt::Fenced);
        }
        self.write_presence(&got)?;
        // Stale claims taken over go in the rewrite of `.coord/claims`, under this same hold of
        // the mutex they were judged under (only a holder of it writes that file).
        let over: Vec<&LockEntry> = (plans.iter().flat_map(|p| &p.stale_claims))
            .chain(claim_plans.iter().flat_map(|p| &p.stale_claims))
            .collect();
        if !claim_plans.is_empty() || !over.is_empty() {
            if !mutex.still_held() {
                return Ok(Attempt::Fenced);
            }
            got.extend(self.publish_claims(claim_plans, &over)?);
        }
        Ok(Attempt::Got(got))
    }

    /// Publish our lock on one file: a new record, or ours rewritten (its token kept).
    fn publish_lock(&mut self, plan: &Plan<&Target>, hold: bool) -> Result<Acquired> {
        let (target, mine) = (plan.key, plan.mine.as_ref());
        let token = token_of(mine);
        let text = self.record(&token, &target.rel, None);
        let text = remote_claim::keep_mark(text, mine);
        let path = layout::lock_file(&target.abs, self.me());
        // The index names the lock before it exists (the views find it without a walk).
        index::note(self.ws.root(), &target.rel, self.me())?;
        let made = mine.is_none()
            && (fsutil::create_new_held(&path, text.as_bytes(), hold)?)
                .map(|file| hold.then(|| handoff::keep(&path, file)))
                .is_some();
        if made {
            self.created.push((target.rel.clone(), path.clone()));
        } else {
            fsutil::replace(&path, text.as_bytes())?;
        }
        // A lock of ours made by hand under another spelling is replaced by the canonical one.
        if let Some(m) = mine
            && m.lock_path != path
        {
            fsutil::remove(&m.lock_path)?;
        }
        let took_over = (plan.stale_locks.iter().map(|e| TakeOver::lock(e, None)))
            .chain(plan.stale_claims.iter().map(TakeOver::claim))
            .collect();
        Ok(Acquired {
            file: target.rel.clone(),
            lock_file: self.ws.rel(&path).unwrap_or_default(),
            locked_at: clock::format_timestamp(&self.now),
            token,
            refreshed: !made,
            held_from: mine.filter(|_| !made).and_then(other_origin),
            took_over,
            ..Acquired::default()
        })
    }

    /// A lock made by hand while we looked (the seed's "look, then create" takes no mutex), to
    /// withdraw in favour of.
    fn newcomer(&mut self, plans: &[Plan<&Target>]) -> Result<Option<Blocker>> {
        let (root, me) = (self.ws.root(), self.req.agent.id());
        let newcomers = Listing {
            except: Some(me),
            ..Listing::default()
        };
        let published: Vec<Target> = plans.iter().map(|p| p.key.clone()).collect();
        for mut entries in list_locks_each(&published, newcomers)? {
            classify(root, &mut entries, &mut self.cache, &self.now);
            if let Some(e) = entries.iter().find(|e| e.state != LockState::Stale) {
                return Ok(Some(blocker_of(root, e, &self.now)));
            }
        }
        Ok(None)
    }

    /// Say `LOCKED` and every lock in our presence (a holder that cannot say so withdraws them).
    fn write_presence(&self, got: &[Acquired]) -> Result<()> {
        let mut listed = self.mine.held.clone();
        let new: Vec<_> = (got.iter()).filter(|a| !listed.contains(&a.file)).collect();
        listed.extend(new.into_iter().map(|a| a.file.clone()));
        let update = presence::Update {
            current_file: super::first_key(self.targets, self.req),
            lock_status: Some(LockStatus::Locked),
            locks: Some(listed),
            ..Default::default()
        };
        let old = self.mine.presence.as_ref();
        presence::write_over(self.ws.root(), &self.req.agent, old, &update).map(drop)
    }

    /// Rewrite `.coord/claims`: stale claims taken over out, ours in (a refresh keeps its token).
    fn publish_claims(
        &self,
        plans: &[Plan<&Pattern>],
        over: &[&LockEntry],
    ) -> Result<Vec<Acquired>> {
        let root = self.ws.root();
        let same = |a: &LockEntry, b: &LockEntry| a.raw == b.raw && a.agent == b.agent;
        let gone = |e: &LockEntry| {
            over.iter().any(|s| same(s, e))
                || (plans.iter()).any(|p| p.mine.as_ref().is_some_and(|o| same(o, e)))
        };
        let kept = self.claims.iter().filter(|c| !gone(&c.entry));
        let mut records = self.unrelated.clone();
        records.extend(kept.map(|c| claim::raw_text(&c.entry)));
        let branch = (crate::worktree::trees(root).into_iter().next()).and_then(|t| t.branch());
        let file = layout::claims_file(&crate::worktree::shared_root(root));
        let lock_file = (self.ws.rel(&file)).unwrap_or_else(|| file.display().to_string());
        let mut out = Vec::with_capacity(plans.len());
        for p in plans {
            let token = token_of(p.mine.as_ref());
            let text = self.record(&token, p.key.as_str(), Some((root, branch.as_deref())));
            records.push(remote_claim::keep_mark(text, p.mine.as_ref()));
            let locks = (p.stale_locks.iter()).map(|e| TakeOver::lock(e, Some(&e.file)));
            let took_over = (p.stale_claims.iter().map(TakeOver::claim)).chain(locks);
            out.push(Acquired {
                file: p.key.as_str().to_string(),
                lock_file: lock_file.clone(),
                locked_at: clock::format_timestamp(&self.now),
                token,
                refreshed: p.mine.is_some(),
                took_over: took_over.collect(),
                claim: true,
                ..Acquired::default()
            });
        }
        claim::write_all(root, &records)?;
        Ok(out)
    }

    /// The text of our record of `key`: a lock's file, or with `claim` (its work tree and branch) a
    /// claim's pattern. The seed's keys first, then coord's own, `reason` last.
    fn record(&self, token: &str, key: &str, claim: Option<(&Path, Option<&str>)>) -> String {
        let req = self.req;
        let mut rec = Record::new();
        rec.set("Agent", req.agent.name());
        rec.set_opt("id", claim.map(|_| req.agent.id()));
        rec.set("locked_at", clock::format_timestamp(&self.now));
        rec.set(if claim.is_some() { "pattern" } else { "file" }, key);
        rec.set("token", token);
        rec.set("ttl", clock::format_duration(req.ttl));
        rec.set("host", host::hostname());
        rec.set("origin", host::origin());
        if let Some(owner) = &req.owner {
            rec.set("pid", owner.pid.to_string());
            rec.set_opt("pid_start", host::start_time(owner.pid));
            rec.set_opt("session", owner.session.as_ref());
            if let Some(c) = &owner.client {
                rec.set("client", &c.client);
                rec.set("client_session", &c.session);
            }
        }
        if let Some((tree, branch)) = claim {
            rec.set("worktree", tree.display().to_string());
            rec.set_opt("branch", branch);
        }
        rec.set_opt("reason", req.reason.as_ref());
        rec.render()
    }
}

/// The token of our record `mine` (a refresh keeps it), else a new random one.
fn token_of(mine: Option<&LockEntry>) -> String {
    (mine.and_then(LockEntry::token))
        .map_or_else(|| format!("{:016x}", host::random_u64()), str::to_string)
}

/// Where our refreshed lock `m` was taken, when another origin (a shell or session of one name):
/// a warning, not exclusion, since one name in two shells excludes nothing.
fn other_origin(m: &LockEntry) -> Option<String> {
    let theirs = m.field("origin")?;
    let same_host = m.field("host").is_none_or(|h| h == host::hostname());
    // Below the same live process as us (a client's hook, MCP server and shells): one origin.
    let same_tree = m.process().is_some_and(|(pid, h)| {
        h == host::hostname() && (pid == host::pid() || host::is_ancestor(pid))
    });
    (!same_tree && (theirs != host::origin() || !same_host)).then(|| theirs.to_string())
}

/// A blocker that is the queue: `holder` first of `count` earlier waiters for `key`.
fn queued(key: &str, holder: &str, count: usize, pattern: Option<&str>) -> Blocker {
    Blocker {
        file: key.to_string(),
        holder: holder.to_string(),
        queued_ahead: count,
        pattern: pattern.map(str::to_string),
        ..Blocker::default()
    }
}

/// One file (or claim) a try takes: our record of it (a refresh), and the stale ones taken over.
struct Plan<K> {
    key: K,
    mine: Option<LockEntry>,
    stale_locks: Vec<LockEntry>,
    stale_claims: Vec<LockEntry>,
}
