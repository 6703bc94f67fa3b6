//! Taking locks: all or nothing, waiting in arrival order, stale locks taken over.
//!
//! One try ([`attempt`]) runs under the workspace mutex: judge every target's locks, check the
//! wait queue, take stale locks over (re-verified), publish our records, look once more for a
//! lock made by hand, update the presence. Anything that fails after publishing withdraws what
//! this try published. Between tries a waiter sleeps on folder events (see [`crate::watch`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::release::release_tokens;
use super::{
    LockEntry, LockState, classify, list_locks, own_locks_listed, take_over, try_locks_of,
};
use crate::arbiter::Guard;
use crate::clock::{self, Timestamp, Wait};
use crate::error::Refusal;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::host;
use crate::layout;
use crate::record::Record;
use crate::v3::backup;
use crate::v3::presence::{self, LockStatus, StateCache};
use crate::v3::queue::{self, Tickets};
use crate::v3::waits::{self, WaitEdge};
use crate::watch::{Deadline, FolderWatch};
use crate::workspace::{AgentId, Target, Workspace};

/// A lock tied to a process: stale the moment that process is gone.
#[derive(Debug, Clone)]
pub struct Owner {
    /// The process whose life the lock follows.
    pub pid: u32,
    /// The session id, when inside `coord session`.
    pub session: Option<String>,
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
}

/// Something worth telling the user while acquiring.
#[derive(Debug, Clone)]
pub enum LockEvent {
    /// coord starts waiting (sent once).
    Waiting(Blocker),
}

/// Who or what stands in the way of a lock.
#[derive(Debug, Clone)]
pub struct Blocker {
    /// The file.
    pub file: String,
    /// The holder's display name, or the first earlier waiter.
    pub holder: String,
    /// When the holder locked it (`HH:MM`), empty for a queue.
    pub since: String,
    /// What the holder works on (its task, then `; reason: ` and the lock's reason; see
    /// [`working_text`]).
    pub working_on: Option<String>,
    /// How many earlier waiters stand in line (only when the lock itself is free).
    pub queued_ahead: usize,
    /// The blocking lock file and its bytes as read: where events do not cross machines, a
    /// waiter re-reads just this file until it changes before trying again in full.
    pub record: Option<(PathBuf, Vec<u8>)>,
}

/// Where a waiter only re-reads the blocking lock, how often it tries in full anyway (a lock
/// also turns stale by age).
const FULL_TRY_EVERY: Duration = Duration::from_secs(1);

/// What a woken waiter re-reads, without the mutex, before trying in full.
struct Probe {
    /// The blocking lock and its bytes as read.
    record: Option<(PathBuf, Vec<u8>)>,
    /// Our queue folders and ticket number, when we hold no lock ourselves (a waiter that holds
    /// locks lets earlier waiters that wait for them pass; only a full try can judge that).
    queue: Option<(Vec<PathBuf>, u64)>,
}

impl Probe {
    /// Whether a full try would surely still find us blocked: a ticket numbered before ours
    /// stands in one of our queues, or the blocking lock is unchanged and its process (if it
    /// records one of this host) still runs.
    fn still_blocked(&self) -> bool {
        if let Some((dirs, seq)) = &self.queue
            && dirs.iter().any(|d| queue::ticket_before(d, *seq))
        {
            return true;
        }
        match &self.record {
            Some((path, raw)) => unchanged(path, raw),
            None => false,
        }
    }
}

/// Whether the lock file at `path` still holds exactly `raw` and does not name a process of
/// this host that is gone. One open and read: no mutex, no listing.
fn unchanged(path: &Path, raw: &[u8]) -> bool {
    let Ok(now) = fsutil::read_capped(path, crate::fsutil::RECORD_CAP) else {
        return false;
    };
    if now != raw {
        return false;
    }
    let rec = Record::parse(&String::from_utf8_lossy(&now));
    match (
        rec.get_nonempty("pid").and_then(|p| p.parse::<u32>().ok()),
        rec.get_nonempty("host"),
    ) {
        (Some(pid), Some(h)) => !host::recorded_process_gone(pid, h),
        _ => true,
    }
}

/// One lock taken.
#[derive(Debug, Clone, Serialize)]
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
    /// When a refreshed lock had been taken from another origin (another shell or session
    /// using the same agent name): that origin. One name in two shells excludes nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_from: Option<String>,
    /// Holders of stale locks taken over, with why they were stale.
    pub took_over: Vec<TakeOver>,
    /// The backup written, relative to the root.
    pub backup: Option<String>,
}

/// A stale lock taken over.
#[derive(Debug, Clone, Serialize)]
pub struct TakeOver {
    /// Its holder.
    pub from: String,
    /// Why it was stale.
    pub why: String,
}

/// The result of a successful acquire.
#[derive(Debug, Clone, Serialize)]
pub struct Acquisition {
    /// The locks, in path order.
    pub acquired: Vec<Acquired>,
    /// How long coord waited, in milliseconds.
    pub waited_ms: u64,
}

/// What a try read of our own: our presence and the locks it lists that we still hold.
#[derive(Default)]
struct Mine {
    presence: Option<presence::Presence>,
    held: Vec<String>,
}

enum Attempt {
    Got(Vec<Acquired>),
    Busy(Blocker),
    /// The arbitration was lost while deciding (a stalled holder of a lease): everything this
    /// try did was undone; try again at once.
    Fenced,
}

/// Acquire all of `req.targets` or none, waiting as `req.wait` allows; then write backups.
///
/// # Errors
///
/// [`Error::BadPath`] when a target exists but is not a regular file (nothing is written);
/// [`Error::LockHeld`] when not waiting and a target is held; [`Error::Deadlock`] when waiting
/// would close a cycle of agents waiting for each other; [`Error::WaitTimedOut`] when the
/// wait ended first; [`Error::Refused`] when the lock is free but earlier waiters stand in line;
/// [`Error::Io`] on I/O failure (no lock is left behind then).
pub fn acquire(
    ws: &Workspace,
    req: &LockRequest,
    on_event: &mut dyn FnMut(&LockEvent),
) -> Result<Acquisition> {
    let mut targets = req.targets.clone();
    targets.sort();
    targets.dedup_by(|a, b| a.rel == b.rel);
    if targets.is_empty() {
        return Err(Error::bad_input("no file to lock"));
    }
    // A folder, FIFO or device is refused before anything is written, as `write` refuses it.
    for t in &targets {
        t.regular_or_absent()?;
    }
    // `.coord/` is made (and checked for symlinks) by the first `lock_mutex` below.
    let policy = ws.policy()?;
    let started = Instant::now();
    let deadline = Deadline::after(req.wait.as_duration());
    let may_wait = req.wait != Wait::For(Duration::ZERO);
    let mut waiting = Waiting {
        ws,
        agent: &req.agent,
        tickets: None,
    };
    let mut watch: Option<FolderWatch> = None;
    let mut told = false;
    let mut last_touch = Instant::now();
    let mut mine = Mine::default();
    let got = loop {
        let attempt = {
            let mutex = ws.lock_mutex()?;
            let attempt = attempt(
                ws,
                &mutex,
                req,
                &targets,
                waiting.tickets.as_ref(),
                &mut mine,
            )?;
            match &attempt {
                Attempt::Got(_) => {
                    if let Some(t) = waiting.tickets.take() {
                        queue::leave(&t);
                    }
                }
                Attempt::Busy(_) if may_wait && !deadline.passed() => {
                    // Every time we would wait (the first time and after every wake-up, so the
                    // last one to close a cycle sees it even when it formed while we waited).
                    if let Some(err) = deadlock(ws, req, &targets, waiting.tickets.as_ref()) {
                        if let Some(t) = waiting.tickets.take() {
                            settle(ws, &req.agent, &t);
                        }
                        return Err(err);
                    }
                    if waiting.tickets.is_none() {
                        let tickets = queue::register(ws.root(), &req.agent, &targets)?;
                        // Fencing: a number drawn under a lost lease may repeat one drawn since.
                        if !mutex.still_held() {
                            queue::leave(&tickets);
                            continue;
                        }
                        waiting.tickets = Some(tickets);
                        presence::write_over(
                            ws.root(),
                            &req.agent,
                            mine.presence.as_ref(),
                            &presence::Update {
                                lock_status: Some(LockStatus::Waiting),
                                ..Default::default()
                            },
                        )?;
                    }
                }
                Attempt::Busy(_) | Attempt::Fenced => {}
            }
            attempt
        };
        let mut blocker = match attempt {
            Attempt::Got(list) => break list,
            Attempt::Busy(b) => b,
            Attempt::Fenced => continue,
        };
        let probe = Probe {
            record: blocker.record.take(),
            queue: waiting
                .tickets
                .as_ref()
                .filter(|_| mine.held.is_empty())
                .map(|t| (queue::dirs(ws.root(), &targets), t.seq)),
        };
        if !may_wait || deadline.passed() {
            return Err(blocked_error(blocker, may_wait, started.elapsed()));
        }
        if !told {
            on_event(&LockEvent::Waiting(blocker));
            told = true;
        }
        match &watch {
            None => {
                watch = Some(watch_for(ws.root(), &targets));
                continue;
            }
            Some(w) => {
                // A wake-up first looks, without the mutex, at what blocked the last try: an
                // earlier ticket still in one of our queues, or the blocking lock unchanged,
                // means a full try would only find the same. So a release wakes every waiter
                // but only the first in line takes the mutex, and where events do not cross
                // machines waiters re-read one file instead of keeping the mutex busy. A full
                // try still comes at every re-check interval (where events do not cross
                // machines: every second): a lock also turns stale by age, and a ticket ahead
                // may belong to a process that is gone.
                let full_every = if policy.exact_lookups {
                    FULL_TRY_EVERY
                } else {
                    policy.recheck
                };
                let since = Instant::now();
                loop {
                    w.wait(deadline.next_sleep(policy.recheck));
                    if since.elapsed() >= full_every
                        || deadline.passed()
                        || crate::watch::stop_requested().is_some()
                        || !probe.still_blocked()
                    {
                        break;
                    }
                }
            }
        }
        // Asked to stop: `waiting` leaves the queue and resets the presence on the way out.
        if let Some(signal) = crate::watch::stop_requested() {
            return Err(Error::Interrupted {
                signal,
                file: targets[0].rel.clone(),
            });
        }
        if last_touch.elapsed() >= queue::TOUCH_EVERY {
            last_touch = Instant::now();
            if let Some(t) = &waiting.tickets
                && queue::touch(t).is_err()
            {
                // Our ticket was judged dead (we were stopped too long): leave what is left of
                // it and queue up again (the next attempt registers anew; the new queue folders
                // get a fresh watch).
                let _mutex = ws.lock_mutex()?;
                queue::leave(t);
                waiting.tickets = None;
                watch = None;
            }
        }
    };
    waiting.done();
    let mut acquired = got;
    if req.backup {
        for (a, target) in acquired.iter_mut().zip(&targets) {
            match backup::write(target) {
                Ok(b) => a.backup = b,
                Err(e) => {
                    let tokens: Vec<(Target, String)> = targets
                        .iter()
                        .cloned()
                        .zip(acquired.iter().map(|a| a.token.clone()))
                        .collect();
                    let _ = release_tokens(ws, &req.agent, &tokens);
                    return Err(e);
                }
            }
        }
    }
    Ok(Acquisition {
        acquired,
        waited_ms: started.elapsed().as_millis() as u64,
    })
}

/// What a waiter for `targets` watches: in each target's folder only the names of its lock files
/// (`FILE.lock.*`: the locked file being written, presences and temporary files change nothing
/// a waiter waits for), and its queue folders whole (an earlier waiter leaving).
fn watch_for(root: &Path, targets: &[Target]) -> FolderWatch {
    let mut w = FolderWatch::new(&queue::dirs(root, targets));
    for t in targets {
        if let (Some(dir), Some(base)) = (t.abs.parent(), t.abs.file_name()) {
            let prefix = layout::lock_file(Path::new(base), "")
                .to_string_lossy()
                .into_owned();
            w.add_names(dir, vec![prefix]);
        }
    }
    w
}

/// Leaves the queue and resets `WAITING` if an acquire ends without the lock.
struct Waiting<'a> {
    ws: &'a Workspace,
    agent: &'a AgentId,
    tickets: Option<Tickets>,
}

impl Waiting<'_> {
    fn done(mut self) {
        self.tickets = None;
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(tickets) = self.tickets.take() else {
            return;
        };
        if let Ok(_mutex) = self.ws.lock_mutex() {
            settle(self.ws, self.agent, &tickets);
        }
    }
}

/// Leave the queue and say in the presence whether we still hold anything. Caller holds the mutex.
fn settle(ws: &Workspace, agent: &AgentId, tickets: &Tickets) {
    queue::leave(tickets);
    let old = presence::read(ws.root(), agent.id()).ok().flatten();
    let held = own_locks_listed(ws, agent, old.as_ref());
    let _ = presence::write_over(
        ws.root(),
        agent,
        old.as_ref(),
        &presence::Update {
            lock_status: Some(if held.is_empty() {
                LockStatus::Free
            } else {
                LockStatus::Locked
            }),
            ..Default::default()
        },
    );
}

/// The deadlock waiting for `targets` would close, if any: we would wait for the holders of
/// `targets`, and following who waits for whom (the queue's other tickets) leads back to us.
/// Caller holds the mutex, so the graph is one consistent picture.
fn deadlock(
    ws: &Workspace,
    req: &LockRequest,
    targets: &[Target],
    tickets: Option<&Tickets>,
) -> Option<Error> {
    let me = req.agent.id();
    let now = clock::now();
    let mut cache = StateCache::default();
    let mut edges = Vec::new();
    for t in targets {
        for (id, name) in waits::holders(ws, &t.rel, &mut cache, &now) {
            if id != me {
                edges.push(WaitEdge {
                    agent: me.to_string(),
                    name: req.agent.name().to_string(),
                    file: t.rel.clone(),
                    holder: id,
                    holder_name: name,
                });
            }
        }
    }
    if edges.is_empty() {
        return None;
    }
    let my_seq = tickets.map(|t| t.seq);
    let others: Vec<_> = queue::waiters(ws.root())
        .into_iter()
        .filter(|w| Some(w.seq) != my_seq)
        .collect();
    edges.extend(waits::edges(ws, &others, &mut cache, &now));
    let cycle = waits::cycle_through(me, &edges)?;
    Some(Error::Deadlock {
        file: cycle[0].file.clone(),
        cycle: cycle.iter().map(WaitEdge::step).collect(),
    })
}

fn blocked_error(b: Blocker, waited: bool, elapsed: Duration) -> Error {
    if b.queued_ahead > 0 {
        let message = format!(
            "`{}` is free, but {} earlier waiter{} stand{} in line ({} first)",
            b.file,
            b.queued_ahead,
            if b.queued_ahead == 1 { "" } else { "s" },
            if b.queued_ahead == 1 { "s" } else { "" },
            b.holder
        );
        return Error::refused(
            Refusal::QueuedAhead,
            if waited {
                format!(
                    "gave up waiting after {}: {message}",
                    clock::format_duration(round_wait(elapsed))
                )
            } else {
                message
            },
            Some(format!(
                "wait your turn with `coord lock {} --wait 5m`",
                b.file
            )),
        );
    }
    if waited {
        Error::WaitTimedOut {
            file: b.file,
            waited: clock::format_duration(round_wait(elapsed)),
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

/// A wait as a person reads it: whole seconds from one second on, milliseconds below.
fn round_wait(d: Duration) -> Duration {
    if d >= Duration::from_secs(1) {
        Duration::from_secs(d.as_secs_f64().round() as u64)
    } else {
        Duration::from_millis(d.as_millis() as u64)
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

fn blocker_of(root: &Path, e: &LockEntry, now: &Timestamp) -> Blocker {
    let task = presence::read(root, &e.agent)
        .ok()
        .flatten()
        .and_then(|p| p.field("working_on").map(str::to_string));
    let working_on = working_text(task.as_deref(), e.reason());
    Blocker {
        file: e.file.clone(),
        holder: e.holder().to_string(),
        since: format_since(e.since.as_ref(), now),
        working_on,
        queued_ahead: 0,
        record: e.raw.clone().map(|raw| (e.lock_path.clone(), raw)),
    }
}

/// What a holder works on, as shown after "held by X since T": its presence's task, and the
/// lock's `--reason` after `; reason: ` (the reason alone when there is no task).
pub fn working_text(task: Option<&str>, reason: Option<&str>) -> Option<String> {
    let task = task.filter(|t| !t.trim().is_empty());
    let reason = reason.filter(|r| !r.trim().is_empty());
    match (task, reason) {
        (Some(t), Some(r)) => Some(format!("{t}; reason: {r}")),
        (Some(t), None) => Some(t.to_string()),
        (None, Some(r)) => Some(r.to_string()),
        (None, None) => None,
    }
}

/// One try, under the mutex: take every target or none.
fn attempt(
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
    let mut plans = Vec::with_capacity(targets.len());
    for target in targets {
        let mut entries = list_locks(target, true)?;
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
            let ahead: Vec<_> = queue::live_tickets(root, target)
                .into_iter()
                .take_while(|t| Some(t.seq) != my_seq)
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
            if !take_over(e)? {
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
    );
    if !matches!(outcome, Ok(Attempt::Got(_))) {
        for path in &created {
            let _ = fsutil::remove(path);
        }
    }
    outcome
}

/// Whether our own lock `m` follows a live process other than this one and its ancestors.
fn held_by_other_process(m: &LockEntry, req: &LockRequest) -> bool {
    let Some((pid, h)) = m.process() else {
        return false;
    };
    if req.owner.as_ref().is_some_and(|o| o.pid == pid) || pid == host::pid() {
        return false;
    }
    h != host::hostname() || !host::is_ancestor(pid)
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
    created: &mut Vec<PathBuf>,
    mine: &Mine,
) -> Result<Attempt> {
    let root = ws.root();
    // Where folder listings may lag other machines, a lock is also looked up by its exact name
    // for every agent on the roster: be on it before the lock exists.
    if ws.policy()?.exact_lookups {
        super::join_roster(root, req.agent.id())?;
    }
    let locked_at = clock::format_timestamp(now);
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
            (theirs != host::origin() || !same_host).then(|| theirs.to_string())
        });
        let refreshed = if mine.is_some() {
            fsutil::replace(&path, text.as_bytes())?;
            true
        } else if fsutil::create_new(&path, text.as_bytes())? {
            created.push(path.clone());
            false
        } else {
            fsutil::replace(&path, text.as_bytes())?;
            true
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
        });
    }

    // A lock made by hand while we looked (the seed's "look, then create" does not take the
    // mutex): withdraw in its favour. Every foreign lock seen before was stale and is gone, so
    // any live foreign lock now is a newcomer.
    for (target, _, _) in plans {
        let mut entries = try_locks_of(target)?;
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
    for a in &acquired {
        if !listed.contains(&a.file) {
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
        if let Some(s) = &owner.session {
            rec.set("session", s);
        }
    }
    if let Some(reason) = &req.reason {
        rec.set("reason", reason);
    }
    rec.render()
}
