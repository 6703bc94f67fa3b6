//! Taking locks: all or nothing, waiting in arrival order, stale locks taken over.

mod attempt;
mod wake;

use std::time::{Duration, Instant};

use self::attempt::attempt;
use self::wake::{Look, Probe, Waits, sleep, watch_for};
use super::blocker::{self, Blocker, blocked_error};
use super::release::release_tokens;
use super::remote_claim::{self, REREAD, Reach, Sharing};
use super::request::{Acquired, Acquisition, LockEvent, LockRequest, TakeOver};
use crate::arbiter::{Guard, Policy};
use crate::clock::Wait;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout;
use crate::lock::backup;
use crate::lock::queue::{self, Tickets, Waiter};
use crate::pattern::Pattern;
use crate::presence::{self, LockStatus};
use crate::remote;
use crate::wait::Deadline;
use crate::wait::handoff;
use crate::workspace::{AgentId, Target, Workspace};

/// What a try read of our own: our presence, the locks it lists we still hold, our live claims.
#[derive(Default)]
struct Mine {
    presence: Option<presence::Presence>,
    held: Vec<String>,
    claims: Vec<String>,
}

enum Attempt {
    Got(Vec<Acquired>),
    Busy(Blocker),
    /// The arbitration was lost while deciding: this try was undone; try again at once.
    Fenced,
}

/// Acquire all of `req.targets` or none, waiting as `req.wait` allows, publishing what `reach`
/// says on the remote claims are shared through (§13; [`Reach::HERE`]: nothing there).
pub fn acquire(
    ws: &Workspace,
    req: &LockRequest,
    reach: &Reach,
    on_event: &mut dyn FnMut(&LockEvent),
) -> Result<Acquisition> {
    let mut targets = req.targets.clone();
    targets.sort();
    targets.dedup_by(|a, b| a.rel == b.rel);
    if targets.is_empty() && req.claims.is_empty() {
        return Err(Error::bad_input("no file to lock"));
    }
    // A folder, FIFO or device is refused before anything is written, as `write` refuses it.
    for t in &targets {
        t.regular_or_absent()?;
    }
    let sharing = Sharing::of(ws, req, &targets, reach)?;
    // `.coord/` is made (and checked for symlinks) by the first `lock_mutex` below.
    let mut tries = Tries {
        ws,
        req,
        targets: &targets,
        policy: ws.policy()?,
        started: Instant::now(),
        deadline: Deadline::after(req.wait.as_duration()),
        may_wait: req.wait != Wait::For(Duration::ZERO),
        waits: Waits::default(),
        tickets: None,
        told: None,
        last_touch: Instant::now(),
        mine: Mine::default(),
        on_event,
    };
    // The remote decides what this request publishes (`share`); the rest is judged as synced.
    let shared = sharing.is_some();
    let files: &[Target] = if shared && reach.files { &[] } else { &targets };
    let claims: &[Pattern] = if shared && reach.claims {
        &[]
    } else {
        &req.claims
    };
    let mut reread = None;
    let mut acquired = loop {
        let held = remote_claim::held_elsewhere(ws, &req.agent, files, claims, reread);
        if let Some(blocker) = held {
            // Paused at most [`REREAD`] before the remote is read again, our place here kept.
            let pause = |deadline: Deadline| crate::wait::pause(deadline.next_sleep(REREAD));
            tries.wait_remote(blocker, false, pause)?;
            tries.keep_tickets_alive()?;
            // The last look, past the deadline, reads nothing more.
            let last = tries.deadline.passed();
            reread = Some(if last { Duration::MAX } else { REREAD });
            continue;
        }
        match tries.once()? {
            Attempt::Got(list) => match &sharing {
                None => break list,
                // `None`: held by another clone, given back and waited for; try again in full.
                Some(s) => {
                    if let Some(list) = tries.share(s, list)? {
                        break list;
                    }
                }
            },
            Attempt::Busy(blocker) => tries.wait_after(blocker)?,
            Attempt::Fenced => {}
        }
    };
    // Recorded while the ticket stands: the history never shows the wait end before the lock.
    super::events::taken(ws.root(), req, &acquired, tries.started);
    tries.tickets = None;
    if tries.policy.exact_lookups {
        // On a network filesystem, cached attributes may predate the last holder's writes.
        for t in &targets {
            fsutil::refresh_attributes(&t.abs);
        }
    }
    if req.backup {
        back_up(&tries, &mut acquired)?;
    }
    Ok(Acquisition {
        acquired,
        waited_ms: tries.started.elapsed().as_millis() as u64,
    })
}

/// Write `FILE.bak` for each lock taken, but a refresh keeps the backup (FILE may hold our edit),
/// a takeover its crashed holder's (FILE may be half-written); a failure releases every lock.
fn back_up(tries: &Tries, acquired: &mut [Acquired]) -> Result<()> {
    let (ws, req, targets) = (tries.ws, tries.req, tries.targets);
    for (i, target) in targets.iter().enumerate() {
        let a = &mut acquired[i];
        let kept = backup::existing(target);
        if a.refreshed {
            a.backup = kept;
        } else if let Some(kept) = kept.filter(|_| a.took_over.iter().any(|t| t.claim.is_none())) {
            a.backup = Some(kept);
            a.backup_kept = true;
        } else if let Err(e) = backup::write(ws.root(), target).map(|b| a.backup = b) {
            let tokens = (targets.iter().cloned()).zip(acquired.iter().map(|a| a.token.clone()));
            let _ = release_tokens(ws, &req.agent, &tokens.collect::<Vec<_>>(), true);
            return Err(e);
        }
    }
    Ok(())
}

/// The first of `targets` (sorted) asked for, else the first claim.
fn first_key(targets: &[Target], req: &LockRequest) -> Option<String> {
    (targets.first().map(|t| t.rel.clone()))
        .or_else(|| req.claims.first().map(|c| c.as_str().to_string()))
}

/// The least an acquire waits for the mutex: time for the holders racing it to pass.
const MUTEX_FLOOR: Duration = Duration::from_millis(500);

/// How often a wait that involves a claim looks again.
const CLAIM_RECHECK: Duration = Duration::from_millis(20);

/// A live lock or claim of another on one of `targets` (here or elsewhere), read without mutex.
pub fn seen_holder(ws: &Workspace, agent: &AgentId, targets: &[Target]) -> Option<Blocker> {
    // No file: nothing to read here nor of the other clones.
    if targets.is_empty() {
        return None;
    }
    let now = crate::clock::now();
    let mut cache = presence::StateCache::default();
    let root = ws.root();
    let me = agent.id();
    let (mut claims, _) = super::claim::read_for(root).unwrap_or_default();
    let here = targets.iter().find_map(|t| {
        let mut entries = super::locks_of(t);
        super::classify(root, &mut entries, &mut cache, &now);
        if let Some(e) = entries.iter().find(|e| e.excludes(Some(agent))) {
            return Some(blocker::blocker_of(root, e, &now));
        }
        (claims.iter_mut())
            .filter(|c| c.entry.agent != me && c.pattern.matches(&t.rel))
            .find_map(|c| {
                super::classify(root, std::slice::from_mut(&mut c.entry), &mut cache, &now);
                (c.entry.state != super::LockState::Stale)
                    .then(|| blocker::claim_blocker(root, c, &t.rel, &now))
            })
    });
    here.or_else(|| remote_claim::held_elsewhere(ws, agent, targets, &[], None))
}

/// The state of one acquire across its tries.
struct Tries<'a> {
    ws: &'a Workspace,
    req: &'a LockRequest,
    /// The targets, sorted, each once.
    targets: &'a [Target],
    policy: Policy,
    started: Instant,
    deadline: Deadline,
    may_wait: bool,
    waits: Waits,
    /// Our tickets in the queue, left if the acquire ends without the lock (see `Drop`).
    tickets: Option<Tickets>,
    /// What the user was last told stands in the way (`None`: not told we wait yet).
    told: Option<Blocker>,
    last_touch: Instant,
    mine: Mine,
    on_event: &'a mut dyn FnMut(&LockEvent),
}

impl Tries<'_> {
    /// One full try under the mutex: got the locks, leave the queue; to wait, line up.
    fn once(&mut self) -> Result<Attempt> {
        let (ws, req, targets) = (self.ws, self.req, self.targets);
        // The mutex is held for microseconds; a holder that keeps it longer is stopped or stuck.
        let patience = (self.deadline.next_sleep(crate::arbiter::MUTEX_PATIENCE)).max(MUTEX_FLOOR);
        let mutex = match ws.lock_mutex_within(patience) {
            Ok(m) => m,
            Err(e @ Error::Interrupted { .. }) => return Err(e),
            Err(e) => return (seen_holder(ws, &req.agent, targets).map(Attempt::Busy)).ok_or(e),
        };
        let attempt = attempt(self, &mutex)?;
        let waits = self.may_wait && !self.deadline.passed();
        match &attempt {
            Attempt::Got(_) => self.leave_line(),
            Attempt::Busy(_) if waits && self.line_up(&mutex)? => return Ok(Attempt::Fenced),
            _ => {}
        }
        Ok(attempt)
    }

    /// Got the locks: leave the queue (the next sleeps until we release, not until we leave;
    /// tickets are in the order of the targets).
    fn leave_line(&mut self) {
        let Some(t) = self.tickets.take() else {
            return;
        };
        if handoff::holds_locks() {
            for (ticket, target) in t.paths.iter().zip(self.targets) {
                handoff::rekey(ticket, &layout::lock_file(&target.abs, self.req.agent.id()));
            }
        }
        queue::leave(&t);
    }

    /// About to wait: refuse a deadlock, else take a ticket (once); `true`: fenced, the lease lost.
    fn line_up(&mut self, mutex: &Guard) -> Result<bool> {
        let (ws, req, targets) = (self.ws, self.req, self.targets);
        // Each time we would wait: the last to close a cycle sees it, even one formed meanwhile.
        if (!self.mine.held.is_empty() || !self.mine.claims.is_empty())
            && let Some(err) = deadlock(self)
        {
            if let Some(t) = self.tickets.take() {
                settle(ws, &req.agent, &t);
            }
            return Err(super::events::refused(ws.root(), req, err));
        }
        if self.tickets.is_some() {
            return Ok(false);
        }
        let tickets = queue::register(ws.root(), &req.agent, targets, &req.claims)?;
        // Fencing: a number drawn under a lost lease may repeat one drawn since.
        if !mutex.still_held() {
            queue::leave(&tickets);
            return Ok(true);
        }
        self.tickets = Some(tickets);
        let waiting = presence::Update {
            lock_status: Some(LockStatus::Waiting),
            ..Default::default()
        };
        presence::write_over(ws.root(), &req.agent, self.mine.presence.as_ref(), &waiting)?;
        Ok(false)
    }

    /// After a try found `blocker` in the way: give up, or tell the user and sleep till worth it.
    fn wait_after(&mut self, mut blocker: Blocker) -> Result<()> {
        let (ws, targets) = (self.ws, self.targets);
        let record = blocker.record.take();
        if !self.may_wait || self.deadline.passed() {
            return Err(self.refusal(blocker));
        }
        let claims_involved = blocker.pattern.is_some() || !self.req.claims.is_empty();
        self.tell(blocker);
        let probe = Probe {
            record: record.into(),
            queue: (self.tickets.as_ref())
                .filter(|_| self.mine.held.is_empty())
                .map(|t| (queue::dirs(ws.root(), targets), t.seq)),
            ahead: Default::default(),
            at: (ws.root(), targets),
            agent: self.req.agent.id(),
            policy: &self.policy,
        };
        if claims_involved {
            // A claim is involved: look again shortly (claims are few; a try reads one small file).
            std::thread::sleep(self.deadline.next_sleep(CLAIM_RECHECK));
        } else {
            if self.waits.watches.is_none() && !self.policy.fs.served_locally() {
                // What blocked us may be gone before the watch was made: look once, retry if it is.
                self.waits.watches = Some(watch_for(ws.root(), targets));
                if probe.look() == Look::Changed {
                    return Ok(());
                }
            }
            sleep(&mut self.waits, &probe, self.deadline);
        }
        // Asked to stop: dropping `self` leaves the queue and resets the presence on the way out.
        self.stopped()?;
        self.keep_tickets_alive()
    }

    /// The try took everything here: publish what `s` shares on the remote, the mutex free.
    fn share(&mut self, s: &Sharing, mut got: Vec<Acquired>) -> Result<Option<Vec<Acquired>>> {
        let (ws, req) = (self.ws, self.req);
        let held = match remote_claim::publish(ws, req, s, &got) {
            Ok(remote::Claimed::Published(p)) => {
                if let Err(e) = remote_claim::mark(ws, &req.agent, &mut got, s, &p) {
                    remote_claim::withdraw(ws, &req.agent, &got);
                    remote_claim::unpublish(ws, &req.agent, s);
                    return Err(e);
                }
                return Ok(Some(got));
            }
            Ok(remote::Claimed::Held(h)) => h,
            Err(e) => {
                remote_claim::withdraw(ws, &req.agent, &got);
                remote_claim::say_waiting(ws, &req.agent, false);
                return Err(e);
            }
        };
        remote_claim::withdraw(ws, &req.agent, &got);
        let blocker = remote_claim::blocker(&held, &s.remote);
        self.wait_remote(blocker, true, |deadline| {
            remote_claim::wait_free(ws, &req.agent, s, deadline)
        })?;
        Ok(None)
    }

    /// Another clone holds what we want: refused, or `WAITING` said (once unless `always`), paused.
    fn wait_remote(
        &mut self,
        blocker: Blocker,
        always: bool,
        pause: impl FnOnce(Deadline),
    ) -> Result<()> {
        let (ws, agent) = (self.ws, &self.req.agent);
        if !self.may_wait || self.deadline.passed() {
            if always || self.told.is_some() {
                remote_claim::say_waiting(ws, agent, false);
            }
            return Err(self.refusal(blocker));
        }
        if always || self.told.is_none() {
            remote_claim::say_waiting(ws, agent, true);
        }
        self.tell(blocker);
        pause(self.deadline);
        self.stopped()
            .inspect_err(|_| remote_claim::say_waiting(ws, agent, false))
    }

    /// Tell the user what stands in the way: once when the wait starts, then when it changes.
    fn tell(&mut self, blocker: Blocker) {
        let situation = blocker.situation();
        match &self.told {
            None => {
                super::events::waiting(self.ws.root(), self.req, &blocker.file, &blocker.holder);
                (self.on_event)(&LockEvent::Waiting(blocker));
            }
            Some(told) if *told != situation => (self.on_event)(&LockEvent::Changed(blocker)),
            Some(_) => {}
        }
        self.told = Some(situation);
    }

    /// The refusal of this request, `blocker` in the way, recorded in the history.
    fn refusal(&self, blocker: Blocker) -> Error {
        let err = blocked_error(blocker, self.may_wait, self.started.elapsed());
        super::events::refused(self.ws.root(), self.req, err)
    }

    /// `Interrupted`, naming the first file (or claim) asked for, when a signal asked us to stop.
    fn stopped(&self) -> Result<()> {
        crate::wait::stopped(|| first_key(self.targets, self.req).unwrap_or_default())
    }

    /// Touch our tickets every [`queue::TOUCH_EVERY`]; queue up again if they were judged dead.
    fn keep_tickets_alive(&mut self) -> Result<()> {
        if self.last_touch.elapsed() >= queue::TOUCH_EVERY {
            self.last_touch = Instant::now();
            if let Some(t) = &self.tickets
                && queue::touch(t).is_err()
            {
                // Our ticket was judged dead (stopped too long): leave it; the next try queues.
                let _mutex = self.ws.lock_mutex()?;
                queue::leave(t);
                self.tickets = None;
                self.waits = Waits::default();
            }
        }
        Ok(())
    }
}

/// Leaves the queue and resets `WAITING` if an acquire ends without the lock.
impl Drop for Tries<'_> {
    fn drop(&mut self) {
        let Some(tickets) = self.tickets.take() else {
            return;
        };
        // How we sleep goes first (its watches and hand-off), then our place in line.
        self.waits = Waits::default();
        // A stop request ended the wait: cleaning up still takes the mutex, waiting a little.
        let mutex = crate::wait::finishing(|| self.ws.lock_mutex_within(CLEANUP_PATIENCE));
        match mutex {
            Ok(_mutex) => settle(self.ws, &self.req.agent, &tickets),
            // The tickets stay, dead once we are gone; their locks go now (`coord mcp` lives on).
            Err(_) => tickets.paths.iter().for_each(|p| handoff::let_go(p)),
        }
    }
}

/// How long leaving the queue waits for the workspace mutex when the wait ended early.
const CLEANUP_PATIENCE: Duration = Duration::from_secs(5);

/// Leave the queue and say in the presence whether we still hold anything. Caller holds the mutex.
fn settle(ws: &Workspace, agent: &AgentId, tickets: &Tickets) {
    queue::leave(tickets);
    let old = presence::read(ws.root(), agent.id()).ok().flatten();
    let held = super::own_locks_listed(ws, agent, old.as_ref());
    let update = presence::Update {
        lock_status: Some(super::release::holding(&held)),
        ..Default::default()
    };
    let _ = presence::write_over(ws.root(), agent, old.as_ref(), &update);
}

/// The deadlock waiting for `targets` would close, if any: who waits for whom leads back to us.
fn deadlock(tries: &Tries) -> Option<Error> {
    let (ws, req, targets, tickets) = (tries.ws, tries.req, tries.targets, tries.tickets.as_ref());
    let me = req.agent.id();
    let now = crate::clock::now();
    let mut cache = presence::StateCache::default();
    let my_seq = tickets.map(|t| t.seq);
    // We wait as a waiter in line would, for every file and claim asked for.
    let keys = (targets.iter().map(|t| (t.rel.clone(), false)))
        .chain(req.claims.iter().map(|c| (c.as_str().to_string(), true)));
    let mine: Vec<Waiter> = (keys.map(|(file, claim)| Waiter {
        seq: my_seq.unwrap_or_default(),
        agent: me.to_string(),
        name: req.agent.name().to_string(),
        file,
        since: None,
        claim,
    }))
    .collect();
    let mut edges = super::deadlock::edges(ws, &mine, &mut cache, &now);
    if edges.is_empty() {
        return None;
    }
    let others: Vec<_> = (queue::waiters(ws.root()).into_iter())
        .filter(|w| Some(w.seq) != my_seq)
        .collect();
    edges.extend(super::deadlock::edges(ws, &others, &mut cache, &now));
    let cycle = super::deadlock::cycle_through(me, &edges)?;
    let file = cycle[0].file.clone();
    let cycle = cycle.iter().map(super::deadlock::WaitEdge::step).collect();
    Some(Error::Deadlock { file, cycle })
}
