//! One try, under the workspace mutex: judge every target's locks, check the wait queue, take
//! stale locks over (re-verified), publish our records, look once more for a lock made by hand,
//! check the arbitration is still ours, and write the presence once. Anything that fails after
//! publishing withdraws what this try published.

use std::collections::HashSet;
use std::path::PathBuf;

use super::super::scan::{Listing, lookup_roster, scan_folder};
use super::super::{
    LockEntry, LockState, claim, classify, index, list_locks_each, own_locks_listed, take_over,
};
use super::blocker::{blocker_of, claim_blocker};
use super::{Acquired, Attempt, Blocker, LockRequest, Mine, TakeOver};
use crate::arbiter::Guard;
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::host;
use crate::layout;
use crate::pattern::Pattern;
use crate::record::Record;
use crate::v3::presence::{self, LockStatus, StateCache};
use crate::v3::queue::{self, Tickets};
use crate::wait::handoff;
use crate::workspace::{Target, Workspace};

/// One try, under the mutex: take every target or none.
pub(super) fn attempt(
    ws: &Workspace,
    mutex: &Guard,
    req: &LockRequest,
    targets: &[Target],
    tickets: Option<&Tickets>,
    mine: &mut Mine,
) -> Result<Attempt> {
    let root = ws.root();
    let now = clock::now();
    let mut cache = StateCache::default();
    // Our presence, read once per try: the locks it lists, and the base the try's one presence
    // write starts from (we hold the mutex: nobody else writes it meanwhile).
    mine.presence = presence::read(root, req.agent.id()).ok().flatten();
    mine.held = own_locks_listed(ws, &req.agent, mine.presence.as_ref());
    let held = &mine.held;
    // Read once per try: only a holder of the mutex adds to it.
    let roster = lookup_roster(root);
    let listing = Listing {
        sweep: true,
        roster: &roster,
        except: None,
        this_tree_only: false,
    };
    // Claims on folders and patterns: one small file, read once per try.
    let me = req.agent.id();
    // Only the claims that can matter to this request are judged (ours, and those that match
    // a target or overlap a claim asked for): claims are few, but a hook runs on every edit.
    let keys: Vec<&str> = targets
        .iter()
        .map(|t| t.rel.as_str())
        .chain(req.claims.iter().map(Pattern::as_str))
        .collect();
    let (mut claims, unrelated) = claim::read_for(root, me, &keys);
    for c in &mut claims {
        if c.entry.agent == me
            || targets.iter().any(|t| c.pattern.matches(&t.rel))
            || req.claims.iter().any(|p| p.overlaps(&c.pattern))
        {
            claim::judge(root, c, &mut cache, &now);
        }
    }
    let foreign_claims: Vec<&claim::Judged> = claims
        .iter()
        .filter(|c| c.entry.agent != me && c.entry.state != LockState::Stale)
        .collect();
    mine.claims = claims
        .iter()
        .filter(|c| c.entry.agent == me && c.entry.state != LockState::Stale)
        .map(|c| c.entry.file.clone())
        .collect();
    let my_seq = tickets.map(|t| t.seq);
    // Claim waiters stand in line for every file their pattern matches; a claim stands in line
    // behind every waiter for what it overlaps.
    let waiters = if req.claims.is_empty() && mine.claims.is_empty() {
        queue::claim_waiters(root)
    } else {
        queue::waiters(root)
    };
    let my_claims: Vec<Pattern> = mine
        .claims
        .iter()
        .filter_map(|c| Pattern::parse(c).ok())
        .collect();
    // A waiter that waits for something we hold (a file, or a path our claims hold) is not
    // ahead of us: it waits for us, and letting it block us would deadlock both.
    let waits_for_me = |seq: u64| {
        queue::waits_for_any(ws, seq, held)
            || queue::waits_for_any_claim(root, seq, &mine.claims)
            || waiters.iter().filter(|x| x.seq == seq).any(|x| {
                if x.claim {
                    Pattern::parse(&x.file).is_ok_and(|p| {
                        held.iter().any(|h| p.matches(h))
                            || my_claims.iter().any(|m| m.overlaps(&p))
                    })
                } else {
                    my_claims.iter().any(|m| m.matches(&x.file))
                }
            })
    };
    let ahead_of_me = |w: &&queue::Waiter| my_seq.is_none_or(|s| w.seq < s) && !waits_for_me(w.seq);
    let mut plans = Vec::with_capacity(targets.len());
    // The stale claims of others this try takes over (for a file it locks or a claim it takes).
    let mut claims_over: Vec<LockEntry> = Vec::new();
    // Every folder is listed once, however many of the targets it holds.
    let listed = list_locks_each(targets, listing)?;
    for (target, mut entries) in targets.iter().zip(listed) {
        classify(root, &mut entries, &mut cache, &now);
        let (mine, foreign): (Vec<_>, Vec<_>) =
            entries.into_iter().partition(|e| e.agent == req.agent.id());
        if let Some(live) = foreign.iter().find(|e| e.state != LockState::Stale) {
            return Ok(Attempt::Busy(blocker_of(root, live, &now)));
        }
        if let Some(c) = foreign_claims
            .iter()
            .find(|c| c.pattern.matches(&target.rel))
        {
            return Ok(Attempt::Busy(claim_blocker(root, c, &target.rel, &now)));
        }
        // Our own name on the lock is not enough when the lock follows another live process of
        // ours (`coord run`, `coord session`) that is not this one or one of its ancestors: two
        // processes of one agent exclude each other too.
        if let Some(other) = mine
            .iter()
            .find(|m| m.state != LockState::Stale && held_by_other_process(m, req))
        {
            let mut b = blocker_of(root, other, &now);
            if let Some((pid, _)) = other.process() {
                b.holder = format!("{} (process {pid})", b.holder);
            }
            return Ok(Attempt::Busy(b));
        }
        // Refreshing a lock we hold does not queue. Otherwise only the first live waiter may
        // take the file; waiters that themselves wait for a file we hold are not ahead of us
        // (they wait for us: letting them block us would deadlock both).
        let refresh = mine.iter().any(|m| m.state != LockState::Stale);
        if !refresh {
            let my_seq = tickets.map(|t| t.seq);
            let ahead: Vec<_> = queue::live_tickets_before(root, target, my_seq)
                .into_iter()
                .filter(|t| !waits_for_me(t.seq))
                .collect();
            if let Some(first) = ahead.first() {
                return Ok(Attempt::Busy(queued_blocker(
                    &target.rel,
                    first.agent.clone(),
                    ahead.len(),
                    None,
                )));
            }
            let claims_ahead: Vec<&queue::Waiter> = waiters
                .iter()
                .filter(|w| w.claim)
                .filter(ahead_of_me)
                .filter(|w| Pattern::parse(&w.file).is_ok_and(|p| p.matches(&target.rel)))
                .collect();
            if let Some(first) = claims_ahead.first() {
                return Ok(Attempt::Busy(queued_blocker(
                    &target.rel,
                    first.name.clone(),
                    claims_ahead.len(),
                    Some(first.file.clone()),
                )));
            }
        }
        // A stale claim matching the file is taken over with it, exactly as a stale lock on
        // it is: left in place, it would hold the file again the moment its holder's presence
        // came back, beside our live lock.
        let over: Vec<&claim::Judged> = claims
            .iter()
            .filter(|c| c.entry.agent != me && c.entry.state == LockState::Stale)
            .filter(|c| c.pattern.matches(&target.rel))
            .collect();
        claims_over.extend(over.iter().map(|c| c.entry.clone()));
        plans.push(Plan {
            target,
            mine: mine.into_iter().next(),
            stale: foreign,
            claims_over: over.iter().map(|c| TakeOver::claim(&c.entry)).collect(),
        });
    }

    // The claims asked for: free of other agents' claims and locks, first in line.
    let mut claim_plans: Vec<ClaimPlan> = Vec::with_capacity(req.claims.len());
    let mut indexed: Option<Vec<(String, String)>> = None;
    for want in &req.claims {
        let text = want.as_str();
        if let Some(c) = foreign_claims.iter().find(|c| c.pattern.overlaps(want)) {
            return Ok(Attempt::Busy(claim_blocker(root, c, text, &now)));
        }
        // Locks coord made are all in the index: those the pattern matches are read and judged.
        let entries = indexed.get_or_insert_with(|| index::entries(root));
        let mut stale_locks: Vec<LockEntry> = Vec::new();
        for (rel, agent) in entries.iter() {
            if agent == me || !want.matches(rel) {
                continue;
            }
            let Ok(t) = ws.target_from_rel(rel) else {
                continue;
            };
            let mut found = super::super::locks_of(&t);
            classify(root, &mut found, &mut cache, &now);
            if let Some(live) = found
                .iter()
                .find(|e| e.agent != me && e.state != LockState::Stale)
            {
                let mut b = blocker_of(root, live, &now);
                b.pattern = Some(text.to_string());
                b.record = None;
                return Ok(Attempt::Busy(b));
            }
            stale_locks.extend(found.into_iter().filter(|e| e.agent != me));
        }
        // Locks made by hand are in no index: the folder every match lies in is walked, in each
        // work tree (folders git ignores left out), for lock files the pattern matches.
        let mut hand_made: Vec<LockEntry> = scan_folder(ws, &want.literal_prefix())
            .into_iter()
            .filter(|e| e.agent != me && want.matches(&e.file))
            .collect();
        classify(root, &mut hand_made, &mut cache, &now);
        if let Some(live) = hand_made.iter().find(|e| e.state != LockState::Stale) {
            let mut b = blocker_of(root, live, &now);
            b.pattern = Some(text.to_string());
            b.record = None;
            return Ok(Attempt::Busy(b));
        }
        // Every lock the claim passes over is stale by now: each is taken over (a lock coord
        // made is found both ways), as a lock taking the file would take it over.
        stale_locks.extend(hand_made);
        let mut seen = HashSet::new();
        stale_locks.retain(|e| seen.insert(e.lock_path.clone()));
        let refresh = mine.claims.iter().any(|c| c == text);
        if !refresh {
            let ahead: Vec<&queue::Waiter> = waiters
                .iter()
                .filter(ahead_of_me)
                .filter(|w| {
                    if w.claim {
                        Pattern::parse(&w.file).is_ok_and(|p| p.overlaps(want))
                    } else {
                        want.matches(&w.file)
                    }
                })
                .collect();
            if let Some(first) = ahead.first() {
                return Ok(Attempt::Busy(queued_blocker(
                    text,
                    first.name.clone(),
                    ahead.len(),
                    Some(text.to_string()),
                )));
            }
        }
        let stale: Vec<&claim::Judged> = claims
            .iter()
            .filter(|c| {
                c.entry.agent != me && c.entry.state == LockState::Stale && c.pattern.overlaps(want)
            })
            .collect();
        claims_over.extend(stale.iter().map(|c| c.entry.clone()));
        claim_plans.push(ClaimPlan {
            pattern: want,
            own: claims
                .iter()
                .find(|c| c.entry.agent == me && c.entry.file == text)
                .map(|c| c.entry.clone()),
            took_over: stale
                .iter()
                .map(|c| TakeOver::claim(&c.entry))
                .chain(
                    stale_locks
                        .iter()
                        .map(|e| TakeOver::lock(e, Some(e.file.as_str()))),
                )
                .collect(),
            stale_locks,
        });
    }

    // Everything is free or stale: take stale locks over (re-verified), then publish ours.
    // Stale claims go when `.coord/claims` is rewritten below, under this same hold of the
    // mutex they were read and judged under (only a holder of it writes that file).
    let stale_locks = plans
        .iter()
        .flat_map(|p| &p.stale)
        .chain(claim_plans.iter().flat_map(|p| &p.stale_locks));
    for e in stale_locks {
        if !take_over(root, e)? {
            return Ok(Attempt::Busy(blocker_of(root, e, &now)));
        }
    }
    let took: Vec<Vec<TakeOver>> = plans
        .iter()
        .map(|p| {
            p.stale
                .iter()
                .map(|e| TakeOver::lock(e, None))
                .chain(p.claims_over.iter().cloned())
                .collect()
        })
        .collect();
    // All or nothing: whatever goes wrong from here on, the locks this attempt created are
    // withdrawn before returning.
    let mut created = Vec::new();
    let outcome = publish(
        ws,
        mutex,
        req,
        targets,
        &plans,
        took,
        &now,
        &mut cache,
        &mut created,
        mine,
        &roster,
    );
    let outcome = match outcome {
        Ok(Attempt::Got(mut got)) if !claim_plans.is_empty() || !claims_over.is_empty() => {
            if mutex.still_held() {
                let rewrite = Rewrite {
                    all: &claims,
                    unrelated: &unrelated,
                    over: &claims_over,
                };
                publish_claims(ws, req, rewrite, &claim_plans, &now).map(|list| {
                    got.extend(list);
                    Attempt::Got(got)
                })
            } else {
                Ok(Attempt::Fenced)
            }
        }
        other => other,
    };
    if !matches!(outcome, Ok(Attempt::Got(_))) {
        for (rel, path) in &created {
            let _ = fsutil::remove(path);
            index::forget(root, rel, req.agent.id());
            handoff::let_go(path);
        }
    }
    outcome
}

/// Whether our own lock `m` follows a live process other than this one and its ancestors.
/// A process of another machine is neither, whatever its number (small numbers repeat across
/// containers): only a number recorded on this host is compared with ours.
fn held_by_other_process(m: &LockEntry, req: &LockRequest) -> bool {
    let Some((pid, h)) = m.process() else {
        return false;
    };
    if h != host::hostname() {
        return true;
    }
    if req.owner.as_ref().is_some_and(|o| o.pid == pid) || pid == host::pid() {
        return false;
    }
    // Taken in the client session this process runs in (a shell of a client whose process is
    // not among our ancestors: Codex's sandbox runs it in a pid namespace of its own).
    if let Some((client, session)) = m.client_session()
        && crate::identity::env_session()
            .is_some_and(|(_, c, id)| c.as_str() == client && id == session)
    {
        return false;
    }
    !host::is_ancestor(pid)
}

/// One file a try takes: our record of it (a refresh), the stale locks of others on it, and
/// the stale claims of others matching it, taken over with them.
struct Plan<'a> {
    target: &'a Target,
    mine: Option<LockEntry>,
    stale: Vec<LockEntry>,
    claims_over: Vec<TakeOver>,
}

#[allow(clippy::too_many_arguments)]
fn publish(
    ws: &Workspace,
    mutex: &Guard,
    req: &LockRequest,
    targets: &[Target],
    plans: &[Plan<'_>],
    took: Vec<Vec<TakeOver>>,
    now: &Timestamp,
    cache: &mut StateCache,
    created: &mut Vec<(String, PathBuf)>,
    mine: &Mine,
    roster: &[String],
) -> Result<Attempt> {
    let root = ws.root();
    // Where folder listings may lag other machines, a lock is also looked up by its exact name
    // for every agent on the roster: be on it before the lock exists.
    if ws.policy()?.exact_lookups {
        super::super::join_roster(root, roster, req.agent.id())?;
    }
    let locked_at = clock::format_timestamp(now);
    // A process that releases before it exits keeps its new locks locked until then: the first
    // waiter in line sleeps on that (`handoff`).
    let hold = handoff::holds_locks() && ws.policy()?.fs.served_locally();
    let mut acquired = Vec::with_capacity(plans.len());
    for (plan, took_over) in plans.iter().zip(took) {
        let (target, mine) = (plan.target, &plan.mine);
        let token = mine
            .as_ref()
            .and_then(|m| m.token().map(str::to_string))
            .unwrap_or_else(|| format!("{:016x}", host::random_u64()));
        let text = render_record(req, &target.rel, &locked_at, &token);
        let path = layout::lock_file(&target.abs, req.agent.id());
        let held_from = mine.as_ref().and_then(|m| {
            let theirs = m.field("origin")?;
            let same_host = m.field("host").is_none_or(|h| h == host::hostname());
            // Taken below the same live process as this one (an agent client's session: its
            // hook, MCP server and shell commands run in different POSIX sessions): one origin.
            let same_tree = m.process().is_some_and(|(pid, h)| {
                h == host::hostname() && (pid == host::pid() || host::is_ancestor(pid))
            });
            (!same_tree && (theirs != host::origin() || !same_host)).then(|| theirs.to_string())
        });
        // The index names the lock before it exists (the views find it without a walk).
        index::note(root, &target.rel, req.agent.id())?;
        let refreshed = if mine.is_some() {
            fsutil::replace(&path, text.as_bytes())?;
            true
        } else {
            let made = if hold {
                fsutil::create_new_held(&path, text.as_bytes())?
                    .map(|file| handoff::keep(&path, file))
                    .is_some()
            } else {
                fsutil::create_new(&path, text.as_bytes())?
            };
            if made {
                created.push((target.rel.clone(), path.clone()));
            } else {
                fsutil::replace(&path, text.as_bytes())?;
            }
            !made
        };
        // A lock of ours made by hand under another spelling (`FILE.lock.Claude`) is replaced
        // by the canonical name, not kept beside it.
        if let Some(m) = mine
            && m.lock_path != path
        {
            fsutil::remove(&m.lock_path)?;
        }
        acquired.push(Acquired {
            file: target.rel.clone(),
            lock_file: ws.rel(&path).unwrap_or_default(),
            locked_at: locked_at.clone(),
            token,
            refreshed,
            held_from: held_from.filter(|_| refreshed),
            took_over,
            backup: None,
            backup_kept: false,
            claim: false,
        });
    }

    // A lock made by hand while we looked (the seed's "look, then create" does not take the
    // mutex): withdraw in its favour. Every foreign lock seen before was stale and is gone, so
    // any live foreign lock now is a newcomer. Only the listing can show one: coord makes locks
    // under the mutex (a maker that lost it withdraws on its own fencing check), and a lock made
    // by hand belongs to no agent on the roster, so no exact lookups; our own locks are not
    // read back either. Only this work tree's folder: an agent locking by hand in another work
    // tree of the repository looks in its own tree's folder, where our lock is not, so it
    // could take the file a moment later just the same; looking there again now would exclude
    // nobody (coord honours the locks it finds there before publishing, above).
    let newcomers = Listing {
        except: Some(req.agent.id()),
        this_tree_only: true,
        ..Listing::default()
    };
    let published: Vec<Target> = plans.iter().map(|p| p.target.clone()).collect();
    for mut entries in list_locks_each(&published, newcomers)? {
        classify(root, &mut entries, cache, now);
        if let Some(newcomer) = entries
            .iter()
            .find(|e| e.agent != req.agent.id() && e.state != LockState::Stale)
        {
            return Ok(Attempt::Busy(blocker_of(root, newcomer, now)));
        }
    }

    // Fencing: whatever this try saw and published counts only if the arbitration is still ours
    // now (a holder stopped past its lease may have been overtaken; the caller withdraws).
    if !mutex.still_held() {
        return Ok(Attempt::Fenced);
    }

    let mut listed = mine.held.clone();
    let mut seen: HashSet<&str> = mine.held.iter().map(String::as_str).collect();
    for a in &acquired {
        if seen.insert(a.file.as_str()) {
            listed.push(a.file.clone());
        }
    }
    // A lock whose holder cannot say so in its presence (a folder or something else unwritable
    // stands there) is withdrawn rather than left behind (the caller removes `created`).
    presence::write_over(
        root,
        &req.agent,
        mine.presence.as_ref(),
        &presence::Update {
            current_file: targets
                .first()
                .map(|t| t.rel.clone())
                .or_else(|| req.claims.first().map(|c| c.as_str().to_string())),
            lock_status: Some(LockStatus::Locked),
            locks: Some(listed),
            ..Default::default()
        },
    )?;
    Ok(Attempt::Got(acquired))
}

fn render_record(req: &LockRequest, rel: &str, locked_at: &str, token: &str) -> String {
    let mut rec = Record::new();
    rec.set("Agent", req.agent.name());
    rec.set("locked_at", locked_at);
    rec.set("file", rel);
    rec.set("token", token);
    rec.set("ttl", clock::format_duration(req.ttl));
    rec.set("host", host::hostname());
    rec.set("origin", host::origin());
    if let Some(owner) = &req.owner {
        rec.set("pid", owner.pid.to_string());
        if let Some(start) = host::start_time(owner.pid) {
            rec.set("pid_start", start.to_string());
        }
        if let Some(s) = &owner.session {
            rec.set("session", s);
        }
        if let Some(c) = &owner.client {
            rec.set("client", &c.client);
            rec.set("client_session", &c.session);
        }
    }
    if let Some(reason) = &req.reason {
        rec.set("reason", reason);
    }
    rec.render()
}

/// A blocker that is the queue: `holder` first of `count` earlier waiters for `key`.
fn queued_blocker(key: &str, holder: String, count: usize, pattern: Option<String>) -> Blocker {
    Blocker {
        file: key.to_string(),
        holder,
        since: String::new(),
        working_on: None,
        queued_ahead: count,
        record: None,
        holder_state: None,
        follows: None,
        takeable_at: None,
        pattern,
    }
}

/// One claim a try takes: its pattern, our record of it (a refresh), the stale locks of others
/// it matches (taken over), and what it takes over (those locks, and the stale claims of others
/// it overlaps).
struct ClaimPlan<'a> {
    pattern: &'a Pattern,
    own: Option<LockEntry>,
    stale_locks: Vec<LockEntry>,
    took_over: Vec<TakeOver>,
}

/// `.coord/claims` as this try read it: the claims judged, the records left unread, and the
/// stale claims taken over (dropped).
struct Rewrite<'a> {
    all: &'a [claim::Judged],
    unrelated: &'a [String],
    over: &'a [LockEntry],
}

/// Rewrite `.coord/claims` with our claims in: stale claims taken over are dropped, a claim we
/// hold is refreshed (its token kept). Caller holds the mutex.
fn publish_claims(
    ws: &Workspace,
    req: &LockRequest,
    read: Rewrite<'_>,
    plans: &[ClaimPlan<'_>],
    now: &Timestamp,
) -> Result<Vec<Acquired>> {
    let root = ws.root();
    let locked_at = clock::format_timestamp(now);
    let same = |a: &LockEntry, b: &LockEntry| a.raw == b.raw && a.agent == b.agent;
    let gone = |e: &LockEntry| {
        read.over.iter().any(|s| same(s, e))
            || plans
                .iter()
                .any(|p| p.own.as_ref().is_some_and(|o| same(o, e)))
    };
    let mut records: Vec<String> = read.unrelated.to_vec();
    records.extend(
        read.all
            .iter()
            .filter(|c| !gone(&c.entry))
            .map(|c| claim::raw_text(&c.entry)),
    );
    let mut out = Vec::with_capacity(plans.len());
    let tree = crate::worktree::trees(root).into_iter().next();
    for p in plans {
        let token = p
            .own
            .as_ref()
            .and_then(|o| o.token().map(str::to_string))
            .unwrap_or_else(|| format!("{:016x}", host::random_u64()));
        let mut rec = Record::parse(&render_record(req, "", &locked_at, &token));
        rec.remove("file");
        let mut claim_rec = Record::new();
        for (k, v) in rec.entries() {
            claim_rec.set(k, v);
            if k == "Agent" {
                claim_rec.set("id", req.agent.id());
            }
            if k == "locked_at" {
                claim_rec.set("pattern", p.pattern.as_str());
            }
        }
        claim_rec.set("worktree", root.display().to_string());
        if let Some(branch) = tree.as_ref().and_then(crate::worktree::Tree::branch) {
            claim_rec.set("branch", branch);
        }
        // `reason` last, as in a lock record.
        if let Some(reason) = &req.reason {
            claim_rec.remove("reason");
            claim_rec.set("reason", reason);
        }
        records.push(claim_rec.render());
        out.push(Acquired {
            file: p.pattern.as_str().to_string(),
            lock_file: ws
                .rel(&layout::claims_file(&crate::worktree::shared_root(root)))
                .unwrap_or_else(|| {
                    layout::claims_file(&crate::worktree::shared_root(root))
                        .display()
                        .to_string()
                }),
            locked_at: locked_at.clone(),
            token,
            refreshed: p.own.is_some(),
            held_from: None,
            took_over: p.took_over.clone(),
            backup: None,
            backup_kept: false,
            claim: true,
        });
    }
    claim::write_all(root, &records)?;
    Ok(out)
}
