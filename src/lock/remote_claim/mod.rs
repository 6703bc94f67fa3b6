//! The remote step of a lock (contract §13): in a clone that shares its claims through its
//! remote, a claim, and a file lock taken with `--share`, is published there before `coord lock`
//! answers, and released there when it is released here.

pub mod renewal;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::blocker::Blocker;
use super::release::{Marked, RemoteRelease, kind};
use super::request::{Acquired, LockRequest, TakeOver};
use super::{LEASE, LockEntry, LockState, MARK, Release, ReleaseOutcome, claim, classify};
use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout;
use crate::pattern::Pattern;
use crate::presence::{self, LockStatus, StateCache};
use crate::record::Record;
use crate::remote::{self, Claimed, Held, Item, Kind, Published};
use crate::wait::Deadline;
use crate::workspace::{AgentId, Target, Workspace};

/// How often a request held by another clone reads the remote again while it waits.
pub const REREAD: Duration = Duration::from_secs(2);

/// How far a lock request reaches beyond this clone, as its caller asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    /// Publish the request's claims, where the clone shares its claims (`coord lock` without
    /// `--local`).
    pub claims: bool,
    /// Publish its file locks too (`--share`); refused where the clone does not share.
    pub files: bool,
    /// The lease there (default [`remote::DEFAULT_LEASE`]).
    pub lease: Option<Duration>,
}

impl Reach {
    /// Nothing leaves this clone: what an edit through a hook, `run` and `note` take.
    pub const HERE: Reach = Reach {
        claims: false,
        files: false,
        lease: None,
    };

    /// `coord lock`'s default: claims are shared where the clone shares them.
    pub const CLAIMS: Reach = Reach {
        claims: true,
        files: false,
        lease: None,
    };
}

/// What one request publishes, and through which remote.
#[derive(Debug, Clone)]
pub(super) struct Sharing {
    /// The remote's name.
    pub remote: String,
    items: Vec<Item>,
    lease: Duration,
}

/// The remote claims go through from the workspace `ws`: an enabled clone, seen from the top
/// level of one of its work trees sharing the main tree's state (a folder inside it, or a
/// worktree, holding a `.coord/` of its own keeps its claims to itself: its paths are not the
/// repository's, or its records are not the clone's).
fn shared_here(ws: &Workspace) -> Option<remote::Config> {
    // Its state lives in the repository's main work tree (a linked worktree without a
    // `.coord/` of its own shares it): one set of claims per clone, which its renewer keeps.
    let shared = crate::worktree::shared_root(ws.root());
    let main =
        crate::worktree::common_dir(&shared).is_some() && !crate::worktree::is_linked(&shared);
    remote::config(ws).filter(|_| main)
}

impl Sharing {
    /// What `req` (on `targets`) publishes with `reach`: `None` when nothing leaves this clone.
    pub(super) fn of(
        ws: &Workspace,
        req: &LockRequest,
        targets: &[Target],
        reach: &Reach,
    ) -> Result<Option<Sharing>> {
        // A plain lock of files reads nothing more than before.
        let claims = reach.claims && !req.claims.is_empty();
        if !claims && !reach.files {
            return Ok(None);
        }
        let Some(cfg) = shared_here(ws) else {
            if reach.files {
                return Err(Error::bad_input(
                    "`--share` publishes the lock to the repository's remote, and this workspace does not share its claims: run `coord remote enable` at the top of the clone first, or lock without `--share`",
                ));
            }
            return Ok(None);
        };
        let mut items = Vec::new();
        if reach.claims {
            items.extend(req.claims.iter().cloned().map(Item::claim));
        }
        if reach.files {
            items.extend(targets.iter().map(|t| Item::lock(&t.rel)));
        }
        if items.is_empty() {
            return Ok(None);
        }
        Ok(Some(Sharing {
            remote: cfg.remote,
            items,
            lease: reach.lease.unwrap_or(remote::DEFAULT_LEASE),
        }))
    }

    /// Whether `a` (a lock or claim the try took) is one of the items published.
    fn covers(&self, a: &Acquired) -> bool {
        (self.items.iter()).any(|i| i.kind == kind(a.claim) && i.pattern.as_str() == a.file)
    }
}

/// Publish `s` for `req`, whose try took `got` here (one fetch, one compare-and-swap push; the
/// mutex is not held).
///
/// Our records of what is published are marked so here before the push ([`intend`]): a push
/// that lands is then never left without a holder here who knows it, even when this process is
/// killed before it answers. Whoever looks next (the holder's next hook or command starts the
/// clone's renewer when none runs) finds a marked record: the renewer renews it when the push
/// landed, publishes it again when it did not, and gives it up here when another clone holds
/// it. Marking after the push would leave a window in which a landed claim has no renewer here
/// while its holder here goes on editing, and another clone takes it over once its lease
/// lapses: two holders. When the remote answers that another clone holds it, nothing of ours
/// landed: the marks added to records held before are taken back (the records the try made are
/// withdrawn by the caller). An error leaves them (the push may have landed).
pub(super) fn publish(
    ws: &Workspace,
    req: &LockRequest,
    s: &Sharing,
    got: &[Acquired],
) -> Result<Claimed> {
    // Held from before the marks until they are taken back: the renewer acts on no mark of a
    // publication under way.
    let _under_way = publishing(ws, true);
    let added = intend(ws, &req.agent, got, s)?;
    let out = publish_now(ws, req, s);
    if matches!(out, Ok(Claimed::Held(_))) && !added.is_empty() {
        let _ = set_marks(ws, &req.agent, &added, s, false);
    }
    out
}

/// `.coord/remote/publishing` locked, shared (waiting out the renewer's moment alone) or alone
/// (`!shared`: without waiting), `None` when it cannot be: the kernel lock each publication of
/// this clone holds shared from before it marks its records until it has its answer here (and
/// has taken its marks back when nothing landed); the renewer takes it alone ([`unpublished`]).
/// A publication killed lets go of it with its process.
fn publishing(ws: &Workspace, shared: bool) -> Option<std::fs::File> {
    use std::os::unix::fs::MetadataExt as _;
    let dir = crate::worktree::shared_root(ws.root());
    fsutil::ensure_dir(&layout::remote_dir(&dir)).ok()?;
    let path = layout::remote_publishing(&dir);
    let (file, meta) = fsutil::open_nofollow(&path, fsutil::Access::ReadWriteOrCreate).ok()?;
    if shared {
        // The renewer holds it alone for a few file writes; never waited for without end.
        let deadline = std::time::Instant::now() + crate::arbiter::MUTEX_PATIENCE;
        while file.try_lock_shared().is_err() {
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    } else {
        file.try_lock().ok()?;
    }
    // The file at the path, not one removed meanwhile: every process locks the same object.
    let now = std::fs::symlink_metadata(&path).ok()?;
    ((now.dev(), now.ino()) == (meta.dev(), meta.ino())).then_some(file)
}

/// Whether the renewer may give back here (or publish again) `agent`'s record `text` of `kind`
/// (its token `token`) that its read of the remote did not find there: `Some`, the kernel lock
/// of publications held alone until dropped, when no publication of this clone is under way,
/// the record still carries its mark and token, and the remote as last read does not show it.
/// A mark seen while a `coord lock` publishes may be one it takes back when the remote refuses
/// (a record held before the call, kept here, never published): giving that record back would
/// take from its agent what it held. A mark still there once no publication runs is a
/// publication's that landed (the last read shows it) or was killed (the renewer's to settle).
pub(super) fn unpublished(
    ws: &Workspace,
    agent: &AgentId,
    kind: Kind,
    text: &str,
    token: &str,
) -> Option<std::fs::File> {
    let alone = publishing(ws, false)?;
    let mut cache = StateCache::default();
    let e = held_here(ws, agent.id(), kind, text, &mut cache, &clock::now()).ok()??;
    if e.field(MARK).is_none() || e.token() != Some(token) {
        return None;
    }
    (!shown_there(ws, agent, kind, text)).then_some(alone)
}

/// Whether the remote, as last read here, shows `agent`'s record `text` of `kind` (this clone's).
fn shown_there(ws: &Workspace, agent: &AgentId, kind: Kind, text: &str) -> bool {
    remote::view(ws).is_some_and(|v| {
        (v.claims.iter()).any(|c| {
            c.mine && c.holder.agent == agent.id() && c.kind == kind && c.pattern.as_str() == text
        })
    })
}

/// Mark our records of what `s` publishes (those of `got` it covers) as published, before the
/// push: the ones held before this try that carried no mark yet are returned, to unmark should
/// nothing land.
fn intend(ws: &Workspace, agent: &AgentId, got: &[Acquired], s: &Sharing) -> Result<Vec<Acquired>> {
    let covered: Vec<Acquired> = got.iter().filter(|a| s.covers(a)).cloned().collect();
    let mut cache = StateCache::default();
    let now = clock::now();
    let added = (covered.iter())
        .filter(|a| a.refreshed)
        .filter(|a| {
            held_here(ws, agent.id(), kind(a.claim), &a.file, &mut cache, &now)
                .is_ok_and(|e| e.is_none_or(|e| e.field(MARK).is_none()))
        })
        .cloned()
        .collect();
    set_marks(ws, agent, &covered, s, true)?;
    Ok(added)
}

/// Add (`on`) or take back the marks of `s` on our records `got` that still carry their
/// token, under the mutex; the patterns of those not ours any more.
fn set_marks(
    ws: &Workspace,
    agent: &AgentId,
    got: &[Acquired],
    s: &Sharing,
    on: bool,
) -> Result<Vec<Pattern>> {
    let lease = clock::format_duration(s.lease);
    // An empty value is no mark: every reader takes a key without a value as absent.
    let keys = if on {
        [(MARK, s.remote.as_str()), (LEASE, lease.as_str())]
    } else {
        [(MARK, ""), (LEASE, "")]
    };
    let _mutex = ws.lock_mutex()?;
    // A mark taken back (nothing of this call landed) stays on a record the remote as last
    // read shows as ours: another call of the agent published the same record meanwhile (and
    // marked it, or is about to): under the mutex, so never between its landing and its mark.
    let got: Vec<Acquired> = (got.iter())
        .filter(|a| on || !shown_there(ws, agent, kind(a.claim), &a.file))
        .cloned()
        .collect();
    let claims: Vec<(String, String)> = (got.iter())
        .filter(|a| a.claim && s.covers(a))
        .map(|a| (a.file.clone(), a.token.clone()))
        .collect();
    let mut gone = claim::mark(ws, agent, &claims, &keys)?;
    for a in got.iter().filter(|a| !a.claim && s.covers(a)) {
        if !mark_lock(ws, agent, a, &keys)? {
            gone.push(pattern_of(Kind::Lock, &a.file));
        }
    }
    Ok(gone)
}

/// Publish `s` for `req` (one fetch, one compare-and-swap push; more when a record of this
/// clone whose holder here is gone stands in the way).
fn publish_now(ws: &Workspace, req: &LockRequest, s: &Sharing) -> Result<Claimed> {
    let reason = req.reason.as_deref();
    let first = remote::publish_claims(ws, &req.agent, &s.items, reason, s.lease)?;
    let Claimed::Held(h) = &first else {
        return Ok(first);
    };
    let mine = remote::config(ws).and_then(|c| c.clone_id);
    if mine.as_deref() != Some(h.holder.clone.as_str()) {
        return Ok(first);
    }
    let Ok(agent) = AgentId::parse(&h.holder.agent) else {
        return Ok(first);
    };
    let mut cache = StateCache::default();
    if live_here(ws, &agent, h.kind, &h.pattern, &mut cache, &clock::now()) {
        return Ok(first);
    }
    remote::release(ws, &[agent], Some(&[pattern_of(h.kind, &h.pattern)]))?;
    remote::publish_claims(ws, &req.agent, &s.items, reason, s.lease)
}

/// The pattern a record of `kind` holds (a lock's path is taken literally).
pub(super) fn pattern_of(kind: Kind, text: &str) -> Pattern {
    match kind {
        Kind::Claim => Pattern::parse(text).unwrap_or_else(|_| Pattern::literal(text)),
        Kind::Lock => Pattern::literal(text),
    }
}

/// `agent`'s record here of the claim (or lock) `text`, judged, when it has one; an error when
/// `.coord/claims` cannot be read (its claims still hold, unseen).
pub(super) fn held_here(
    ws: &Workspace,
    agent: &str,
    kind: Kind,
    text: &str,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Result<Option<LockEntry>> {
    let root = ws.root();
    let mut found: Vec<LockEntry> = match kind {
        Kind::Claim => claim::try_judged(root, cache, now)?,
        Kind::Lock => {
            let mut e = ws
                .target_from_rel(text)
                .map(|t| super::locks_of(&t))
                .unwrap_or_default();
            classify(root, &mut e, cache, now);
            e
        }
    };
    found.retain(|e| e.agent == agent && e.file == text);
    Ok(found.into_iter().next())
}

/// Whether `agent` holds `text` here, not STALE (or may: `.coord/claims` cannot be read).
fn live_here(
    ws: &Workspace,
    agent: &AgentId,
    kind: Kind,
    text: &str,
    cache: &mut StateCache,
    now: &Timestamp,
) -> bool {
    held_here(ws, agent.id(), kind, text, cache, now)
        .map_or(true, |h| h.is_some_and(|e| e.state != LockState::Stale))
}

/// The text of our record `text`, refreshing `old`: a record published on the remote stays
/// marked so (its renewal goes on; a refresh does not take it back from there).
pub(super) fn keep_mark(text: String, old: Option<&LockEntry>) -> String {
    let Some(old) = old.filter(|o| o.field(MARK).is_some()) else {
        return text;
    };
    let mut rec = Record::parse(&text);
    for key in [MARK, LEASE] {
        if let Some(v) = old.field(key) {
            rec.set(key, v);
        }
    }
    rec.render()
}

/// Give back what a try took for a request the remote did not take: the locks and claims it
/// made (those it only refreshed were held before, and stay), without a trace in the history.
pub(super) fn withdraw(ws: &Workspace, agent: &AgentId, got: &[Acquired]) {
    let made = || got.iter().filter(|a| !a.refreshed);
    let locks: Vec<(Target, String)> = made()
        .filter(|a| !a.claim)
        .filter_map(|a| Some((ws.target_from_rel(&a.file).ok()?, a.token.clone())))
        .collect();
    let claims: Vec<(String, String)> = made()
        .filter(|a| a.claim)
        .map(|a| (a.file.clone(), a.token.clone()))
        .collect();
    if !locks.is_empty() {
        let _ = super::release::release_tokens(ws, agent, &locks, false);
    }
    if !claims.is_empty() {
        let _ = claim::release_here(ws, agent, claim::Which::Tokens(&claims), false);
    }
}

/// Take back from the remote what `s` published (best effort: a record left there lapses with
/// its lease), after the request failed here.
pub(super) fn unpublish(ws: &Workspace, agent: &AgentId, s: &Sharing) {
    let patterns: Vec<Pattern> = s.items.iter().map(|i| i.pattern.clone()).collect();
    let _ = remote::release(ws, std::slice::from_ref(agent), Some(&patterns));
}

/// The publication of `p` landed: mark our records of it here (again: [`publish`] marked them
/// before the push; by token, under the mutex), and say in `got` what went where, with the
/// stale records of other clones it took over.
pub(super) fn mark(
    ws: &Workspace,
    agent: &AgentId,
    got: &mut [Acquired],
    s: &Sharing,
    p: &Published,
) -> Result<()> {
    let gone = set_marks(ws, agent, got, s, true)?;
    if !gone.is_empty() {
        let _ = remote::release(ws, std::slice::from_ref(agent), Some(&gone));
    }
    let until = clock::format_timestamp(&p.lease_until);
    for a in got.iter_mut().filter(|a| s.covers(a)) {
        a.remote = Some(s.remote.clone());
        a.lease_until = Some(until.clone());
    }
    for t in &p.taken_over {
        let taken = pattern_of(t.kind, &t.pattern);
        let Some(a) = (got.iter_mut())
            .filter(|a| s.covers(a))
            .find(|a| pattern_of(kind(a.claim), &a.file).overlaps(&taken))
        else {
            continue;
        };
        let text = t.pattern.clone();
        let (claim, file) = match t.kind {
            Kind::Claim => (Some(text), None),
            Kind::Lock => (None, Some(text)),
        };
        a.took_over.push(TakeOver {
            from: t.holder.describe(),
            why: format!(
                "its lease on remote `{}` ended at {}",
                s.remote,
                short_time(&t.lease_ended)
            ),
            claim,
            file,
            remote: Some(s.remote.clone()),
        });
    }
    Ok(())
}

/// Add `keys` to `agent`'s lock record on `a.file` when it still carries `a.token`. Caller
/// holds the mutex. `false`: the lock is not ours any more.
fn mark_lock(ws: &Workspace, agent: &AgentId, a: &Acquired, keys: &[(&str, &str)]) -> Result<bool> {
    let Ok(target) = ws.target_from_rel(&a.file) else {
        return Ok(false);
    };
    let path = layout::lock_file(&target.abs, agent.id());
    let Some(e) = LockEntry::read(path.clone(), a.file.clone(), agent.id().to_string()) else {
        return Ok(false);
    };
    if e.token() != Some(a.token.as_str()) {
        return Ok(false);
    }
    let mut rec = e.record.clone().unwrap_or_else(Record::new);
    for (k, v) in keys {
        if v.is_empty() {
            rec.remove(k);
        } else {
            rec.set(k, v);
        }
    }
    fsutil::replace(&path, rec.render().as_bytes())?;
    Ok(true)
}

/// `HH:MM:SS` today, else the date too, in local time.
fn short_time(t: &Timestamp) -> String {
    let t = t.with_timezone(&chrono::Local);
    let today = clock::now().with_timezone(&chrono::Local).date_naive();
    if t.date_naive() == today {
        t.format("%H:%M:%S").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// What a waiter is told stands in the way: the holder on the remote (as its refusal names it).
pub(super) fn blocker(h: &Held, remote: &str) -> Blocker {
    let mut b = Blocker {
        file: h.asked.clone(),
        pattern: Some(h.pattern.clone()),
        // Its lease (named with the holder) moves with every renewal of its clone.
        ..Blocker::default()
    };
    if let Error::LockHeld {
        holder,
        since,
        working_on,
        ..
    } = h.refusal(remote)
    {
        (b.holder, b.since, b.working_on) = (holder, since, working_on);
    }
    b
}

/// Whether this clone's renewer should run and none does: `agent` holds here a claim or lock
/// marked as published through the clone's remote, and nobody holds the renewer's kernel lock
/// (the renewer was killed, never started, or the `coord lock` that published was killed
/// before it started it). Read without the network.
pub(super) fn renewer_missing(ws: &Workspace, agent: &AgentId) -> bool {
    let Some(cfg) = remote::config(ws) else {
        return false;
    };
    let root = ws.root();
    let ours = |e: &LockEntry| e.agent == agent.id() && e.field(MARK) == Some(cfg.remote.as_str());
    let claimed = claim::read_for(root).is_ok_and(|(all, _)| all.iter().any(|c| ours(&c.entry)));
    let locked = || {
        (super::index::entries(root).into_iter())
            .filter(|(_, holder)| holder == agent.id())
            .any(|(rel, _)| {
                (ws.target_from_rel(&rel)).is_ok_and(|t| super::locks_of(&t).iter().any(ours))
            })
    };
    if !claimed && !locked() {
        return false;
    }
    let shared = crate::worktree::shared_root(root);
    crate::arbiter::lock_mutex_within(&layout::remote_renewer(&shared), Duration::ZERO).is_ok()
}

/// Start the clone's renewer when `agent` holds records here marked as published and none
/// runs: every command of the agent that takes a lock (a lock, a write, a run, a note, a hook's
/// edit) keeps what it holds there renewed, not only a client's hook. Its heartbeat keeps its
/// records here LIVE, so a claim that nobody renews there would lapse for the other clones
/// while the agent goes on working under it: two holders.
fn adopt(ws: &Workspace, agent: &AgentId) {
    if renewer_missing(ws, agent)
        && let Ok(mut child) = remote::spawn_detached(ws, &["renewer"])
    {
        // Reaped here by a long-lived process (`coord mcp`); a command that ends first leaves
        // it to init.
        std::thread::spawn(move || child.wait());
    }
}

/// What another clone holds, as last synced from the remote (contract §13), of `targets` (those
/// `agent` does not hold here already) or of what `claims` would claim: its live claim or shared
/// lock, as the blocker a claim of another worktree would be.
pub(super) fn held_elsewhere(
    ws: &Workspace,
    agent: &AgentId,
    targets: &[Target],
    claims: &[Pattern],
    reread: Option<Duration>,
) -> Option<Blocker> {
    // Nothing asked for: neither the repository nor its config is read.
    if targets.is_empty() && claims.is_empty() {
        return None;
    }
    let (top, _) = crate::worktree::enclosing_repository(ws.root())?;
    let clone = Workspace::at(top.clone());
    let cfg = remote::config(&clone)?;
    adopt(ws, agent);
    let sub = ws.root().strip_prefix(&top).ok()?.to_string_lossy();
    let at_top = |rel: &str| match sub.as_ref() {
        "" => rel.to_string(),
        sub => format!("{sub}/{rel}"),
    };
    let paths: Vec<(String, &str)> = (targets.iter())
        .filter(|t| super::own_token(t, agent).is_none())
        .map(|t| (at_top(&t.rel), t.rel.as_str()))
        .collect();
    let claims: Vec<(Pattern, &str)> = (claims.iter())
        .filter_map(|p| Some((Pattern::parse(&at_top(p.as_str())).ok()?, p.as_str())))
        .collect();
    if paths.is_empty() && claims.is_empty() {
        return None;
    }
    match reread {
        None => {
            if let Some(w) = remote::refresh(&clone, remote::max_age(&clone)) {
                warn(w);
            }
        }
        Some(Duration::MAX) => {}
        Some(older) => drop(remote::refresh(&clone, older)),
    }
    let found = if claims.is_empty() {
        let at: Vec<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
        remote::claims_on(&clone, &at)
    } else {
        remote::claims_here(&clone)
    };
    for c in found {
        let asked = (paths
            .iter()
            .find(|(p, _)| c.pattern.matches(p))
            .map(|(_, a)| *a))
        .or_else(|| (claims.iter().find(|(p, _)| p.overlaps(&c.pattern))).map(|(_, a)| *a));
        let Some(asked) = asked else { continue };
        let held = Held {
            asked: asked.to_string(),
            kind: c.kind,
            pattern: c.pattern.as_str().to_string(),
            holder: c.holder,
            since: c.since,
            reason: c.reason,
            lease_until: c.lease_until,
        };
        if !c.stale {
            return Some(blocker(&held, &cfg.remote));
        }
        warn(format!(
            "`{}` is in the claim `{}` of {} through remote `{}`, STALE since its lease ended at {}: taken as free",
            held.asked,
            held.pattern,
            held.holder.describe(),
            cfg.remote,
            short_time(&held.lease_until)
        ));
    }
    None
}

/// Say in `agent`'s presence that it waits (`WAITING`), or, once it does not any more, whether
/// it holds anything (`LOCKED` or `FREE`). Best effort.
pub(super) fn say_waiting(ws: &Workspace, agent: &AgentId, waiting: bool) {
    let Ok(_mutex) = ws.lock_mutex() else {
        return;
    };
    let old = presence::read(ws.root(), agent.id()).ok().flatten();
    let holds_claims = || {
        let mut cache = StateCache::default();
        (claim::try_judged(ws.root(), &mut cache, &clock::now())).map_or(true, |all| {
            (all.iter()).any(|c| c.agent == agent.id() && c.state != LockState::Stale)
        })
    };
    let status = if waiting {
        LockStatus::Waiting
    } else if super::own_locks_listed(ws, agent, old.as_ref()).is_empty() && !holds_claims() {
        LockStatus::Free
    } else {
        LockStatus::Locked
    };
    let update = presence::Update {
        lock_status: Some(status),
        ..Default::default()
    };
    let _ = presence::write_over(ws.root(), agent, old.as_ref(), &update);
}

/// Sleep until the remote, read again at most every [`REREAD`], shows none of `s`'s items held
/// by another (released, or its lease lapsed), the deadline passes, or a stop is asked for.
pub(super) fn wait_free(ws: &Workspace, agent: &AgentId, s: &Sharing, deadline: Deadline) {
    loop {
        crate::wait::pause(deadline.next_sleep(REREAD));
        if crate::wait::stop_requested().is_some() || deadline.passed() {
            return;
        }
        let Ok(view) = remote::sync(ws, &working_on(ws)) else {
            return;
        };
        let now = clock::now();
        let mut cache = StateCache::default();
        let in_the_way = view.claims.iter().any(|c| {
            let ours = c.mine && c.holder.agent == agent.id();
            // Another agent of this clone whose holder here is gone: the next try releases it.
            let mut left = || {
                c.mine
                    && AgentId::parse(&c.holder.agent).is_ok_and(|a| {
                        !live_here(ws, &a, c.kind, c.pattern.as_str(), &mut cache, &now)
                    })
            };
            let overlaps = s.items.iter().any(|i| i.pattern.overlaps(&c.pattern));
            !(c.stale || ours) && overlaps && !left()
        });
        if !in_the_way {
            return;
        }
    }
}

/// The warnings of releases that could not reach the remote, for the command to say.
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The most warnings kept for a long-lived process that never says them.
const MAX_WARNINGS: usize = 32;

/// The warnings to print (each once): releases whose record stays on the remote.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|e| e.into_inner()))
}

fn warn(text: String) {
    let mut w = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if w.len() < MAX_WARNINGS && !w.contains(&text) {
        w.push(text);
    }
}

/// Whether this process leaves its releases on the remote to the clone's renewer (a client's
/// hook: it never waits on the network), and whether it left one.
static TO_RENEWER: AtomicBool = AtomicBool::new(false);
static LEFT: AtomicBool = AtomicBool::new(false);

/// From now on this process makes no push to release a record on the remote: the clone's
/// renewer releases there a record with no holder here within two of its looks (seconds).
pub fn leave_releases_to_renewer() {
    TO_RENEWER.store(true, Ordering::Relaxed);
}

/// Whether a release was left to the renewer since [`leave_releases_to_renewer`].
pub fn releases_left() -> bool {
    LEFT.load(Ordering::Relaxed)
}

/// The remote step of a release: `agent`'s records given back here that were published
/// (`marked`) are released on the remote, in one push; each of them in `out` says what became
/// of it there.
pub(super) fn release(ws: &Workspace, agent: &AgentId, marked: &[Marked], out: &mut [Release]) {
    if marked.is_empty() {
        return;
    }
    // Not shared any more: `coord remote disable` released this clone's records there.
    let Some(cfg) = remote::config(ws) else {
        return;
    };
    if TO_RENEWER.load(Ordering::Relaxed) {
        LEFT.store(true, Ordering::Relaxed);
        return;
    }
    let patterns: Vec<Pattern> = (marked.iter())
        .map(|m| pattern_of(m.kind, &m.text))
        .collect();
    let done = remote::release_as_read(ws, agent, &patterns);
    let warning = done.err().map(|e| {
        let until = lease_ends(ws, agent, marked);
        let why = e.to_string();
        let why = why.trim_end_matches("; nothing was changed");
        let list: Vec<String> = marked.iter().map(|m| format!("`{}`", m.text)).collect();
        let warning = format!(
            "released here, but {why}: the record of {} on remote `{}` stays until its lease lapses{until}",
            list.join(", "),
            cfg.remote
        );
        warn(warning.clone());
        warning
    });
    let outcome = RemoteRelease {
        remote: cfg.remote.clone(),
        released: warning.is_none(),
        warning,
    };
    for r in out.iter_mut() {
        if r.outcome == ReleaseOutcome::Released
            && marked
                .iter()
                .any(|m| m.kind == kind(r.claim) && m.text == r.file)
        {
            r.remote = Some(outcome.clone());
        }
    }
}

/// ` (at 12:15:03)`: when the last of `marked`'s leases ends, as last read here.
fn lease_ends(ws: &Workspace, agent: &AgentId, marked: &[Marked]) -> String {
    let Some(view) = remote::view(ws) else {
        return String::new();
    };
    (view.claims.iter())
        .filter(|c| c.mine && c.holder.agent == agent.id())
        .filter(|c| marked.iter().any(|m| m.text == c.pattern.as_str()))
        .map(|c| c.lease_until)
        .max()
        .map(|t| format!(" (at {})", short_time(&t)))
        .unwrap_or_default()
}

/// What this clone's agents edit now (`working_on` on the remote): their indexed locks, sorted.
pub fn working_on(ws: &Workspace) -> Vec<crate::remote::AgentWork> {
    let gone = super::index::gone(ws.root());
    let mut by_agent: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, agent) in super::index::entries(ws.root()) {
        if !gone.contains(&(rel.clone(), agent.clone())) && !rel.chars().any(char::is_control) {
            by_agent.entry(agent).or_default().insert(rel);
        }
    }
    (by_agent.into_iter())
        .map(|(agent, files)| {
            let working_on = files.into_iter().take(crate::remote::record::MAX_PATHS);
            crate::remote::AgentWork {
                agent,
                working_on: working_on.collect(),
            }
        })
        .collect()
}
