//! One try, under the workspace mutex: judge every target's locks, check the wait queue, take
//! stale locks over (re-verified), publish our records, look once more for a lock made by hand,
//! check the arbitration is still ours, and write the presence once. Anything that fails after
//! publishing withdraws what this try published.

use std::collections::HashSet;
use std::path::PathBuf;

use super::super::scan::{Listing, lookup_roster};
use super::super::{
    LockEntry, LockState, classify, index, list_locks_each, own_locks_listed, take_over,
};
use super::blocker::blocker_of;
use super::{Acquired, Attempt, Blocker, LockRequest, Mine, TakeOver};
use crate::arbiter::Guard;
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::host;
use crate::layout;
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
    };
    let mut plans = Vec::with_capacity(targets.len());
    // Every folder is listed once, however many of the targets it holds.
    let listed = list_locks_each(targets, listing)?;
    for (target, mut entries) in targets.iter().zip(listed) {
        classify(root, &mut entries, &mut cache, &now);
        let (mine, foreign): (Vec<_>, Vec<_>) =
            entries.into_iter().partition(|e| e.agent == req.agent.id());
        if let Some(live) = foreign.iter().find(|e| e.state != LockState::Stale) {
            return Ok(Attempt::Busy(blocker_of(root, live, &now)));
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
                .filter(|t| !queue::waits_for_any(ws, t.seq, held))
                .collect();
            if let Some(first) = ahead.first() {
                return Ok(Attempt::Busy(Blocker {
                    file: target.rel.clone(),
                    holder: first.agent.clone(),
                    since: String::new(),
                    working_on: None,
                    queued_ahead: ahead.len(),
                    record: None,
                    holder_state: None,
                    follows: None,
                    takeable_at: None,
                }));
            }
        }
        plans.push((target, mine.into_iter().next(), foreign));
    }

    // Everything is free or stale: take stale locks over (re-verified), then publish ours.
    let mut took: Vec<Vec<TakeOver>> = Vec::with_capacity(plans.len());
    for (_, _, stale) in &plans {
        let mut list = Vec::new();
        for e in stale {
            if !take_over(root, e)? {
                return Ok(Attempt::Busy(blocker_of(root, e, &now)));
            }
            list.push(TakeOver {
                from: e.holder().to_string(),
                why: e.stale_why.clone().unwrap_or_default(),
            });
        }
        took.push(list);
    }
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

type Plan<'a> = (&'a Target, Option<LockEntry>, Vec<LockEntry>);

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
    for ((target, mine, _), took_over) in plans.iter().zip(took) {
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
        });
    }

    // A lock made by hand while we looked (the seed's "look, then create" does not take the
    // mutex): withdraw in its favour. Every foreign lock seen before was stale and is gone, so
    // any live foreign lock now is a newcomer. Only the listing can show one: coord makes locks
    // under the mutex (a maker that lost it withdraws on its own fencing check), and a lock made
    // by hand belongs to no agent on the roster, so no exact lookups; our own locks are not
    // read back either.
    let newcomers = Listing {
        except: Some(req.agent.id()),
        ..Listing::default()
    };
    let published: Vec<Target> = plans.iter().map(|(t, _, _)| (*t).clone()).collect();
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
            current_file: Some(targets[0].rel.clone()),
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
