//! Locks: `FILE.lock.<agent>` beside FILE, in the seed's format, that two holders never share.
//!
//! # Semantics
//!
//! Locks are **advisory**: they bind agents that ask for them (through coord, or by following
//! the seed text by hand), not programs that ignore them.
//!
//! ```text
//! Agent: Claude
//! locked_at: 2026-01-28T01:00:00+01:00
//! file: SHARED.txt
//! token: 9f3c0a4e5d6b7c8a
//! ttl: 5m
//! host: build-box
//! ```
//!
//! The seed's three keys come first; coord adds a random `token`, the `ttl`, the `host`, and,
//! for locks tied to a process (`coord session`, `coord run`), its `pid` and `session`, and an
//! optional `reason`.
//!
//! **Stale.** A lock is stale when it is older than its TTL (default 5 minutes) and its holder's
//! presence is not ACTIVE (heartbeat at most 2 minutes old); or at once when it records a process
//! of this host that no longer exists. Age comes from `locked_at`, or from the file's mtime when
//! that cannot be read: an unreadable lock file is still a lock. Two or more non-stale locks on
//! one file are a CONFLICT (someone bypassed the protocol) and are reported, never hidden.
//!
//! **Mutual exclusion.** The seed's "look, then create" lets two agents both win. Here every
//! transition — acquire, stale takeover, release — happens under the workspace mutex (a kernel
//! lock on `.coord/mutex`, held for microseconds), and a record is published whole (temporary
//! file, then link without replacing). A stale record is renamed aside, re-read and compared
//! before it is dropped; if it changed, it is put back and honoured. After publishing, coord
//! looks once more for a lock made by hand meanwhile and withdraws in its favour.
//!
//! **Filesystems.** On a local filesystem the kernel lock is `flock(2)`. On NFSv4 Linux maps it to
//! byte-range locks held by the server, so the guarantee holds across machines sharing the folder;
//! on NFSv3 without a lock manager, or on filesystems without locking, it does not.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock::{self, Timestamp, Wait};
use crate::error::{Error, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::host;
use crate::layout;
use crate::record::Record;
use crate::v3::backup;
use crate::v3::presence::{self, AgentState, LockStatus, StateCache, Unreadable};
use crate::v3::queue::{self, Tickets};
use crate::watch::{Deadline, FolderWatch, RECHECK};
use crate::workspace::{AgentId, Target, Workspace};

/// The TTL of a lock when none is given.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// The state of one lock record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LockState {
    /// Held.
    Live,
    /// May be taken over.
    Stale,
    /// One of two or more non-stale locks on the same file.
    Conflict,
}

impl LockState {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            LockState::Live => "LIVE",
            LockState::Stale => "STALE",
            LockState::Conflict => "CONFLICT",
        }
    }
}

/// One lock file, as read and judged.
#[derive(Debug, Clone)]
pub struct LockEntry {
    /// The lock file.
    pub lock_path: PathBuf,
    /// The locked file, relative to the root.
    pub file: String,
    /// The holder's id (from the file name).
    pub agent: String,
    /// The record, when the file could be read.
    pub record: Option<Record>,
    /// The raw bytes read (compared again before a stale takeover).
    raw: Option<Vec<u8>>,
    /// The file's mtime as read (compared again before a stale takeover: a hand-made lock is
    /// refreshed by touching it).
    mtime: Option<std::time::SystemTime>,
    /// Why the file could not be read.
    pub problem: Option<String>,
    /// When the lock was taken: `locked_at`, or the file's mtime.
    pub since: Option<Timestamp>,
    /// Live, stale or conflict.
    pub state: LockState,
    /// Why it is stale.
    pub stale_why: Option<String>,
}

impl LockEntry {
    fn read(lock_path: PathBuf, file: String, agent: String) -> LockEntry {
        let raw_mtime = fsutil::mtime(&lock_path);
        let mtime = raw_mtime.map(clock::from_system_time);
        let (record, raw, problem) = match fsutil::read_capped(&lock_path, RECORD_CAP) {
            Ok(bytes) => (
                Some(Record::parse(&String::from_utf8_lossy(&bytes))),
                Some(bytes),
                None,
            ),
            Err(e) => (None, None, Some(e.to_string())),
        };
        let since = record
            .as_ref()
            .and_then(|r| r.get("locked_at"))
            .and_then(clock::parse_timestamp)
            .or(mtime);
        LockEntry {
            lock_path,
            file,
            agent,
            record,
            raw,
            mtime: raw_mtime,
            problem,
            since,
            state: LockState::Live,
            stale_why: None,
        }
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.record.as_ref().and_then(|r| r.get_nonempty(key))
    }

    /// The holder's display name (`Agent:`), or the id.
    pub fn holder(&self) -> &str {
        self.field("Agent").unwrap_or(&self.agent)
    }

    /// The raw `locked_at` text.
    pub fn locked_at(&self) -> Option<&str> {
        self.field("locked_at")
    }

    /// The lock's TTL.
    pub fn ttl(&self) -> Duration {
        self.field("ttl")
            .and_then(|t| clock::parse_duration(t).ok())
            .unwrap_or(DEFAULT_TTL)
    }

    /// The token, when coord wrote the lock.
    pub fn token(&self) -> Option<&str> {
        self.field("token")
    }

    /// The reason given with `--reason`.
    pub fn reason(&self) -> Option<&str> {
        self.field("reason")
    }

    /// The recorded process, when the lock is tied to one.
    pub fn process(&self) -> Option<(u32, &str)> {
        Some((self.field("pid")?.parse().ok()?, self.field("host")?))
    }

    /// The session the lock was taken in, if any.
    pub fn session(&self) -> Option<&str> {
        self.field("session")
    }
}

/// Judge `entries` as of `now`: stale or live, then conflicts among the non-stale of each file.
pub fn classify(root: &Path, entries: &mut [LockEntry], cache: &mut StateCache, now: &Timestamp) {
    for e in entries.iter_mut() {
        e.stale_why = stale_reason(root, e, cache, now);
        e.state = if e.stale_why.is_some() {
            LockState::Stale
        } else {
            LockState::Live
        };
    }
    let mut i = 0;
    while i < entries.len() {
        let j = i + entries[i..]
            .iter()
            .take_while(|e| e.file == entries[i].file)
            .count();
        let group = &mut entries[i..j];
        if group.iter().filter(|e| e.state != LockState::Stale).count() >= 2 {
            for e in group.iter_mut().filter(|e| e.state != LockState::Stale) {
                e.state = LockState::Conflict;
            }
        }
        i = j;
    }
}

fn stale_reason(
    root: &Path,
    e: &LockEntry,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Option<String> {
    if let Some((pid, h)) = e.process()
        && host::recorded_process_gone(pid, h)
    {
        return Some(format!("its process {pid} on {h} is gone"));
    }
    let since = e.since.as_ref()?;
    let age = clock::age(now, since);
    // A lock dated further in the future than its TTL (a forged date, or a clock far off) would
    // otherwise never age: it counts as expired, and the holder's presence still decides.
    let ahead = clock::age(since, now);
    let ttl = e.ttl();
    if age <= ttl && ahead <= ttl {
        return None;
    }
    let holder = match cache.state(root, &e.agent, now) {
        Some(AgentState::Active) => return None,
        Some(state) => format!("{} is {}", e.agent, state.as_str()),
        None => format!("{} has no presence", e.agent),
    };
    if ahead > ttl {
        return Some(format!(
            "dated {} in the future, beyond its TTL of {}, and {holder}",
            clock::format_age(ahead),
            clock::format_duration(ttl)
        ));
    }
    Some(format!(
        "older than its TTL of {} and {holder}",
        clock::format_duration(ttl)
    ))
}

/// The lock files of one target, unjudged, sorted by agent.
pub fn locks_of(target: &Target) -> Vec<LockEntry> {
    try_locks_of(target).unwrap_or_default()
}

/// The lock files of one target, unjudged, sorted by agent; an error when the folder cannot be
/// listed (a folder coord cannot read is not a folder without locks).
///
/// # Errors
///
/// [`Error::Io`] naming the folder.
pub fn try_locks_of(target: &Target) -> Result<Vec<LockEntry>> {
    list_locks(target, false)
}

/// List the lock files of `target`; with `sweep`, also remove coord's temporary files left in
/// that folder by killed processes, in the same pass (a large folder is listed once, not twice).
fn list_locks(target: &Target, sweep: bool) -> Result<Vec<LockEntry>> {
    let (Some(dir), Some(base)) = (
        target.abs.parent(),
        target.abs.file_name().and_then(|n| n.to_str()),
    ) else {
        return Ok(Vec::new());
    };
    let entries = fs::read_dir(dir).map_err(|source| Error::Io {
        action: "list",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Io {
            action: "list",
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name();
        match name.to_str().and_then(layout::parse_lock_name) {
            Some((b, agent)) if b == base => {
                found.push(LockEntry::read(entry.path(), target.rel.clone(), agent));
            }
            Some(_) => {}
            None if sweep => {
                fsutil::sweep_entry(&entry);
            }
            None => {}
        }
    }
    found.sort_by(|a, b| a.agent.cmp(&b.agent));
    Ok(found)
}

/// Every lock file under the root (`.git` and `.coord` excepted), sorted by file then agent,
/// unjudged. Nothing is written.
pub fn scan_tree(ws: &Workspace) -> Vec<LockEntry> {
    let mut found = Vec::new();
    let mut stack = vec![ws.root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Ok(ft) = entry.file_type() else { continue };
            if let Some((base, agent)) = layout::parse_lock_name(name) {
                let Some(file) = ws.rel(&dir.join(base)) else {
                    continue;
                };
                found.push(LockEntry::read(entry.path(), file, agent));
            } else if ft.is_dir() && !layout::skip_in_walk(name) {
                stack.push(entry.path());
            }
        }
    }
    found.sort_by(|a, b| a.file.cmp(&b.file).then(a.agent.cmp(&b.agent)));
    found
}

/// Every lock in the workspace, judged as of `now`.
pub fn scan_judged(ws: &Workspace, cache: &mut StateCache, now: &Timestamp) -> Vec<LockEntry> {
    let mut entries = scan_tree(ws);
    classify(ws.root(), &mut entries, cache, now);
    entries
}

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
    /// What the holder works on.
    pub working_on: Option<String>,
    /// How many earlier waiters stand in line (only when the lock itself is free).
    pub queued_ahead: usize,
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

enum Attempt {
    Got(Vec<Acquired>),
    Busy(Blocker),
}

/// Acquire all of `req.targets` or none, waiting as `req.wait` allows; then write backups.
///
/// # Errors
///
/// [`Error::LockHeld`] when not waiting and a target is held; [`Error::WaitTimedOut`] when the
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
    ws.ensure_state_dir()?;
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
    let got = loop {
        let attempt = {
            let _mutex = ws.lock_mutex()?;
            let attempt = attempt(ws, req, &targets, waiting.tickets.as_ref())?;
            match &attempt {
                Attempt::Got(_) => {
                    if let Some(t) = waiting.tickets.take() {
                        queue::leave(&t);
                    }
                }
                Attempt::Busy(_) if may_wait && waiting.tickets.is_none() && !deadline.passed() => {
                    waiting.tickets = Some(queue::register(ws.root(), &req.agent, &targets)?);
                    presence::write(
                        ws.root(),
                        &req.agent,
                        &presence::Update {
                            lock_status: Some(LockStatus::Waiting),
                            ..Default::default()
                        },
                    )?;
                }
                Attempt::Busy(_) => {}
            }
            attempt
        };
        let blocker = match attempt {
            Attempt::Got(list) => break list,
            Attempt::Busy(b) => b,
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
                let mut dirs: Vec<PathBuf> = targets
                    .iter()
                    .filter_map(|t| t.abs.parent().map(Path::to_path_buf))
                    .collect();
                dirs.extend(queue::dirs(ws.root(), &targets));
                watch = Some(FolderWatch::new(&dirs));
                continue;
            }
            Some(w) => {
                w.wait(deadline.next_sleep(RECHECK));
            }
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
            queue::leave(&tickets);
            let held = own_locks_listed(self.ws, self.agent);
            let _ = presence::write(
                self.ws.root(),
                self.agent,
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
    }
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
    let working_on = e.reason().map(str::to_string).or_else(|| {
        presence::read(root, &e.agent)
            .ok()
            .flatten()
            .and_then(|p| p.field("working_on").map(str::to_string))
    });
    Blocker {
        file: e.file.clone(),
        holder: e.holder().to_string(),
        since: format_since(e.since.as_ref(), now),
        working_on,
        queued_ahead: 0,
    }
}

/// One try, under the mutex: take every target or none.
fn attempt(
    ws: &Workspace,
    req: &LockRequest,
    targets: &[Target],
    tickets: Option<&Tickets>,
) -> Result<Attempt> {
    let root = ws.root();
    let now = clock::now();
    let mut cache = StateCache::default();
    let held = own_locks_listed(ws, &req.agent);
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
                .filter(|t| !queue::waits_for_any(ws, t.seq, &held))
                .collect();
            if let Some(first) = ahead.first() {
                return Ok(Attempt::Busy(Blocker {
                    file: target.rel.clone(),
                    holder: first.agent.clone(),
                    since: String::new(),
                    working_on: None,
                    queued_ahead: ahead.len(),
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
        req,
        targets,
        &plans,
        took,
        &now,
        &mut cache,
        &mut created,
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
    req: &LockRequest,
    targets: &[Target],
    plans: &[Plan<'_>],
    took: Vec<Vec<TakeOver>>,
    now: &Timestamp,
    cache: &mut StateCache,
    created: &mut Vec<PathBuf>,
) -> Result<Attempt> {
    let root = ws.root();
    let locked_at = clock::format_timestamp(now);
    let mut acquired = Vec::with_capacity(plans.len());
    for ((target, mine, _), took_over) in plans.iter().zip(took) {
        let token = mine
            .as_ref()
            .and_then(|m| m.token().map(str::to_string))
            .unwrap_or_else(|| format!("{:016x}", host::random_u64()));
        let text = render_record(req, &target.rel, &locked_at, &token);
        let path = layout::lock_file(&target.abs, req.agent.id());
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

    let mut listed = own_locks_listed(ws, &req.agent);
    for a in &acquired {
        if !listed.contains(&a.file) {
            listed.push(a.file.clone());
        }
    }
    // A lock whose holder cannot say so in its presence (a folder or something else unwritable
    // stands there) is withdrawn rather than left behind (the caller removes `created`).
    presence::write(
        root,
        &req.agent,
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

/// Remove a stale lock, but only if it is still exactly what was judged stale.
/// Returns `false` (and leaves the lock in place) when it changed meanwhile.
fn take_over(e: &LockEntry) -> Result<bool> {
    let dir = e.lock_path.parent().unwrap_or(Path::new("."));
    let meta = match fs::symlink_metadata(&e.lock_path) {
        Ok(m) => m,
        Err(_) => return Ok(true), // already gone
    };
    if meta.is_dir() {
        return Err(Error::Failed {
            message: format!(
                "the stale lock `{}` is a folder, not a file: remove it by hand",
                e.lock_path.display()
            ),
        });
    }
    let aside = fsutil::temp_in(dir)
        .map_err(|source| Error::Io {
            action: "create a temporary file in",
            path: dir.to_path_buf(),
            source,
        })?
        .into_temp_path();
    let aside_path = aside.to_path_buf();
    if let Err(e2) = fs::rename(&e.lock_path, &aside_path) {
        if e2.kind() == std::io::ErrorKind::NotFound {
            return Ok(true);
        }
        return Err(Error::Io {
            action: "move aside",
            path: e.lock_path.clone(),
            source: e2,
        });
    }
    let now_bytes = fsutil::read_capped(&aside_path, RECORD_CAP).ok();
    let touched = e.mtime.is_some() && fsutil::mtime(&aside_path) != e.mtime;
    if (now_bytes.is_some() && now_bytes != e.raw) || touched {
        // Refreshed by its holder in the meantime (rewritten, or touched as a hand-made lock is
        // refreshed): put it back and honour it. If the holder has already made a new record at
        // the path, that one stands and the moved copy is dropped.
        let _ = fs::hard_link(&aside_path, &e.lock_path);
        return Ok(false);
    }
    drop(aside); // removes the renamed record
    Ok(true)
}

/// The files `agent` lists as locked in its presence that it still holds.
fn own_locks_listed(ws: &Workspace, agent: &AgentId) -> Vec<String> {
    let Some(p) = presence::read(ws.root(), agent.id()).ok().flatten() else {
        return Vec::new();
    };
    p.locks()
        .into_iter()
        .filter(|rel| {
            ws.target_from_rel(rel)
                .is_ok_and(|t| fs::symlink_metadata(layout::lock_file(&t.abs, agent.id())).is_ok())
        })
        .collect()
}

/// What happened to one file on release.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum ReleaseOutcome {
    /// Our lock was removed.
    Released,
    /// There was no lock.
    NotLocked,
    /// A stale lock of another agent was removed (`--force`).
    ForcedStale {
        /// Whose.
        from: String,
    },
    /// Another agent holds it: nothing was removed.
    HeldByOther {
        /// Who.
        holder: String,
        /// Its state.
        state: LockState,
    },
    /// Our lock was taken over since (its token changed or it is gone).
    Lost,
}

/// The release of one file.
#[derive(Debug, Clone, Serialize)]
pub struct Release {
    /// The file, relative to the root.
    pub file: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: ReleaseOutcome,
}

/// Release `agent`'s locks on `targets` (all its locks when `None`). With `force`, a STALE
/// lock of another agent is removed too. Each file's outcome is reported; nothing held by
/// another live agent is ever removed.
///
/// # Errors
///
/// [`Error::Io`] when a lock file cannot be removed.
pub fn release(
    ws: &Workspace,
    agent: &AgentId,
    targets: Option<&[Target]>,
    force: bool,
) -> Result<Vec<Release>> {
    let targets: Vec<Target> = match targets {
        Some(t) => t.to_vec(),
        None => scan_tree(ws)
            .into_iter()
            .filter(|e| e.agent == agent.id())
            .filter_map(|e| ws.target_from_rel(&e.file).ok())
            .collect(),
    };
    let _mutex = ws.lock_mutex()?;
    let now = clock::now();
    let mut cache = StateCache::default();
    let mut out = Vec::with_capacity(targets.len());
    for target in &targets {
        // Temporary files of killed processes are swept in the same pass, as `acquire` does.
        let mut entries = list_locks(target, true)?;
        classify(ws.root(), &mut entries, &mut cache, &now);
        let outcome = if let Some(mine) = entries.iter().find(|e| e.agent == agent.id()) {
            fsutil::remove(&mine.lock_path)?;
            ReleaseOutcome::Released
        } else if entries.is_empty() {
            ReleaseOutcome::NotLocked
        } else if let Some(held) = entries
            .iter()
            .find(|e| !force || e.state != LockState::Stale)
        {
            ReleaseOutcome::HeldByOther {
                holder: held.holder().to_string(),
                state: held.state,
            }
        } else {
            let from = entries
                .iter()
                .map(|e| e.holder().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            for e in &entries {
                if !take_over(e)? {
                    return Err(Error::refused(
                        format!(
                            "the lock of {} on `{}` changed while being removed",
                            e.holder(),
                            e.file
                        ),
                        None,
                    ));
                }
            }
            ReleaseOutcome::ForcedStale { from }
        };
        out.push(Release {
            file: target.rel.clone(),
            outcome,
        });
    }
    after_release(ws, agent)?;
    Ok(out)
}

/// Release locks this process took, each only if its token is unchanged (compare-and-delete).
/// Used by commands that hold locks for the life of a process (`run`, `session`).
///
/// # Errors
///
/// [`Error::Io`] when a lock file cannot be removed.
pub fn release_tokens(
    ws: &Workspace,
    agent: &AgentId,
    held: &[(Target, String)],
) -> Result<Vec<Release>> {
    let _mutex = ws.lock_mutex()?;
    let mut out = Vec::with_capacity(held.len());
    for (target, token) in held {
        let path = layout::lock_file(&target.abs, agent.id());
        let current = LockEntry::read(path.clone(), target.rel.clone(), agent.id().to_string());
        let outcome = if current.token() == Some(token.as_str()) {
            fsutil::remove(&path)?;
            ReleaseOutcome::Released
        } else {
            ReleaseOutcome::Lost
        };
        out.push(Release {
            file: target.rel.clone(),
            outcome,
        });
    }
    after_release(ws, agent)?;
    Ok(out)
}

/// The token of `agent`'s lock on `target`, when it holds one.
pub fn own_token(target: &Target, agent: &AgentId) -> Option<String> {
    let path = layout::lock_file(&target.abs, agent.id());
    LockEntry::read(path, target.rel.clone(), agent.id().to_string())
        .token()
        .map(str::to_string)
}

/// Whether `agent` still holds `target` with `token`. Caller holds the mutex.
pub fn holds(target: &Target, agent: &AgentId, token: &str) -> bool {
    let path = layout::lock_file(&target.abs, agent.id());
    LockEntry::read(path, target.rel.clone(), agent.id().to_string()).token() == Some(token)
}

/// Bring the agent's presence up to date after locks went away. Caller holds the mutex.
fn after_release(ws: &Workspace, agent: &AgentId) -> Result<()> {
    // Only a regular presence file is brought up to date: the locks are already gone, and a
    // release must not fail (or follow a link) because something else stands there.
    if !fs::symlink_metadata(layout::presence(ws.root(), agent.id())).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let held = own_locks_listed(ws, agent);
    presence::write(
        ws.root(),
        agent,
        &presence::Update {
            lock_status: Some(if held.is_empty() {
                LockStatus::Free
            } else {
                LockStatus::Locked
            }),
            current_file: held.first().cloned(),
            locks: Some(held),
            ..Default::default()
        },
    )?;
    Ok(())
}

/// Problems a strict check reports: stale and conflicting locks, and lock files that cannot be read.
pub fn problems(entries: &[LockEntry]) -> Vec<&LockEntry> {
    entries
        .iter()
        .filter(|e| e.state != LockState::Live)
        .collect()
}

/// Describe a lock problem in one line.
pub fn describe_problem(e: &LockEntry) -> String {
    match e.state {
        LockState::Stale => format!(
            "`{}` has a STALE lock of {} ({})",
            e.file,
            e.holder(),
            e.stale_why.as_deref().unwrap_or("stale")
        ),
        LockState::Conflict => format!(
            "`{}` is in CONFLICT: {} holds one of several live locks",
            e.file,
            e.holder()
        ),
        LockState::Live => format!("`{}` is locked by {}", e.file, e.holder()),
    }
}

/// Files the scan could not read as lock records, for `status`.
pub fn unreadable(entries: &[LockEntry], ws: &Workspace) -> Vec<Unreadable> {
    entries
        .iter()
        .filter_map(|e| {
            Some(Unreadable {
                path: ws.rel(&e.lock_path)?,
                why: e.problem.clone()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(file: &str, agent: &str, text: &str) -> LockEntry {
        let record = Record::parse(text);
        let since = record.get("locked_at").and_then(clock::parse_timestamp);
        LockEntry {
            lock_path: PathBuf::from(format!("/nonexistent/{file}.lock.{agent}")),
            file: file.into(),
            agent: agent.into(),
            record: Some(record),
            raw: Some(text.as_bytes().to_vec()),
            mtime: None,
            problem: None,
            since,
            state: LockState::Live,
            stale_why: None,
        }
    }

    #[test]
    fn ttl_and_presence_decide_staleness() {
        let root = Path::new("/nonexistent");
        let now = clock::parse_timestamp("2026-01-28T01:10:00+00:00").unwrap();
        let mut entries = vec![
            entry(
                "a",
                "claude",
                "Agent: Claude\nlocked_at: 2026-01-28T01:00:00+00:00\n",
            ),
            entry(
                "b",
                "gemini",
                "Agent: Gemini\nlocked_at: 2026-01-28T01:08:00+00:00\n",
            ),
            entry(
                "c",
                "x",
                "Agent: X\nlocked_at: 2026-01-28T01:00:00+00:00\nttl: 1h\n",
            ),
        ];
        classify(root, &mut entries, &mut StateCache::default(), &now);
        assert_eq!(entries[0].state, LockState::Stale);
        assert_eq!(entries[1].state, LockState::Live);
        assert_eq!(entries[2].state, LockState::Live);
    }

    #[test]
    fn a_lock_dated_far_in_the_future_still_goes_stale() {
        let root = Path::new("/nonexistent");
        let now = clock::parse_timestamp("2026-01-28T01:10:00+00:00").unwrap();
        let mut entries = vec![
            entry("a", "x", "locked_at: 2026-01-28T01:11:00+00:00\n"),
            entry("b", "y", "locked_at: 2999-01-01T00:00:00+00:00\n"),
        ];
        classify(root, &mut entries, &mut StateCache::default(), &now);
        assert_eq!(entries[0].state, LockState::Live, "a little skew is fine");
        assert_eq!(entries[1].state, LockState::Stale);
        assert!(entries[1].stale_why.as_deref().unwrap().contains("future"));
    }

    #[test]
    fn two_live_locks_on_one_file_conflict() {
        let root = Path::new("/nonexistent");
        let now = clock::parse_timestamp("2026-01-28T01:10:00+00:00").unwrap();
        let mut entries = vec![
            entry("a", "claude", "locked_at: 2026-01-28T01:09:00+00:00\n"),
            entry("a", "gemini", "locked_at: 2026-01-28T01:09:30+00:00\n"),
            entry("b", "x", "locked_at: 2026-01-28T01:09:30+00:00\n"),
        ];
        classify(root, &mut entries, &mut StateCache::default(), &now);
        assert_eq!(entries[0].state, LockState::Conflict);
        assert_eq!(entries[1].state, LockState::Conflict);
        assert_eq!(entries[2].state, LockState::Live);
    }

    #[test]
    fn a_dead_process_makes_a_lock_stale_at_once() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let root = Path::new("/nonexistent");
        let now = clock::now();
        let text = format!(
            "locked_at: {}\npid: {pid}\nhost: {}\n",
            clock::format_timestamp(&now),
            host::hostname()
        );
        let mut entries = vec![entry("a", "claude", &text)];
        classify(root, &mut entries, &mut StateCache::default(), &now);
        assert_eq!(entries[0].state, LockState::Stale);
    }
}
