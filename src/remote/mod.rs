//! Claims shared by clones on other machines through the repository's own remote (contract
//! §13): no server of coord's, the remote's ref updates are the compare-and-swap that decides
//! who wins.
//!
//! # What lives where
//!
//! On the remote, only refs under `refs/coord/` (docs/protocol.md, "Remote claims"):
//!
//! - `refs/coord/claims`: one commit whose tree holds one JSON blob per claim (or lock shared
//!   with `--share`), named by a hash of holder and pattern ([`record::entry_name`]). Every
//!   change is a child commit pushed with `--force-with-lease=refs/coord/claims:<full id of the
//!   commit it was decided against>` (create-only when there was none): exactly one of two
//!   racing clones lands; the other reads again and decides again (`claims`).
//! - `refs/coord/clones/<hash of the clone id>`: one per clone, its advisory `working_on`,
//!   written only by that clone (a forced push, never contended; `clones`).
//!
//! In the clone: `coord.remote` and `coord.cloneId` in the repository's git config, the
//! remote's refs as last fetched under `refs/coord-sync/`, and `.coord/remote/state.json`
//! ([`state`]): the records as last read, with when this clone first saw each version.
//!
//! # Leases, and the clocks of other machines
//!
//! A claim holds for `lease_s` seconds after a reader first saw its current version (on the
//! reader's clock, and on its clock that does not jump, [`steady`]: a wall clock set forward
//! ends no lease alone); its holder renews it (a new version, `renewal` + 1) well within that.
//! Dates written by other machines (`since`, commit dates) are shown, never judged: a clock ten
//! minutes off moves nothing. Nothing expires on the server: a claim whose lease lapsed (its
//! holder stopped renewing: crashed, killed, offline) is taken over by the next clone that
//! needs it, by compare-and-swap, and the new record says from whom (`taken_from`, and the
//! commit message). The old holder's late renewal then finds its record gone and is refused.
//!
//! # The API (what `coord lock`, the hooks and the guard build on)
//!
//! Reading, without the network (for a hook's edit check, the lock judgement, the guard):
//!
//! - [`config`]`(ws) -> Option<Config>`: whether this clone shares claims, through which remote
//!   (read from git's config file, no process).
//! - [`claims_on`]`(ws, paths) -> Vec<RemoteClaim>`: the other clones' claims as last synced
//!   that match one of `paths`, each with its holder (agent, host), pattern, reason,
//!   `lease_until` and `stale`: a hook's edit check. Read from `.coord/remote/claims` (a few
//!   tab-separated lines; only the patterns that can match are parsed). [`claims_here`]`(ws)`:
//!   all of them (judge a path with `c.pattern.matches(rel)` exactly as a local claim).
//! - [`synced_age`]`(ws)`: how long ago the remote was read, from the same file.
//! - [`view`]`(ws) -> Option<View>`: all of it (claims, other clones' agents and `working_on`,
//!   `synced_at` and `age`); [`max_age`]`(ws)`: how old the view may be before a re-read
//!   (`remote_max_age`, default 15 s).
//!
//! Talking to the remote (each call bounded in time, [`NETWORK_BUDGET`]):
//!
//! - [`sync`]`(ws) -> Result<View>`: one fetch of `refs/coord/*`, the state re-read.
//! - [`publish_claims`]`(ws, agent, items, reason, ttl) -> Result<Claimed>`: one fetch, one
//!   compare-and-swap push (more only when racing). `Claimed::Published { lease_until,
//!   taken_over }` or `Claimed::Held(Held { holder, pattern, since, reason, lease_until })`;
//!   all of `items` or none. `Err(Error::Remote)`: unreachable or refused, nothing taken.
//! - [`release`]`(ws, agents, patterns)` and [`renew`]`(ws, agents, patterns, ttl)`: this
//!   clone's records, one push when nothing raced (decided against the commit last read); each
//!   pattern `Outcome::Done` or `Outcome::Gone { by }` (a renewal of a record taken over is
//!   refused that way).
//! - [`publish_working_on`]`(ws, agents)`: this clone's `working_on`, one push, skipped when
//!   unchanged. [`sync`] publishes what it is given (the files this clone's agents hold locks
//!   on, which the lock room's index knows) that way before it reads.
//!
//! Whoever judges a path (a lock, an edit through a hook) calls [`refresh`] first: when the
//! state is older than [`max_age`] it starts `coord remote sync` detached and waits for it at
//! most [`REFRESH_WAIT`], then judges with whatever state is there. Nothing waits on the network
//! longer than that.
//!
//! A hook never waits on the network for the `working_on` either: it calls [`editing_warning`]
//! (the other clones' agents editing its files, from `.coord/remote/working_on`), and when
//! [`working_on_changed`] says this clone's locks changed since they were published, the
//! command starts `coord remote sync` in the background; that one runs [`sync_in_background`],
//! one at a time per clone.

mod claims;
mod clones;
pub(crate) mod git;
pub mod record;
pub mod state;
pub mod steady;
mod sync;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::gitconfig;
use crate::layout;
use crate::pattern::Pattern;
use crate::record::Record;
use crate::workspace::{AgentId, Workspace};
use crate::worktree;

pub use claims::{Claimed, Held, Item, Outcome, Published, TakenOver};
pub use record::{AgentWork, Holder, Kind};

/// The longest any one call talks to the remote (fetches, pushes and their retries).
pub const NETWORK_BUDGET: Duration = Duration::from_secs(30);

/// The default lease of a claim published to the remote (contract §13: 15 minutes).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15 * 60);

/// How old the synced state may be before it is read again, unless `remote_max_age` says.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(15);

/// This clone's setting: the remote claims go through, and the clone's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The remote's name (`coord.remote`).
    pub remote: String,
    /// This clone's id (`coord.cloneId`; `None` until first needed).
    pub clone_id: Option<String>,
}

/// The repository config file of the workspace `ws` (`None`: not in a git repository).
fn config_file(ws: &Workspace) -> Option<PathBuf> {
    worktree::enclosing_common_dir(ws.root()).map(|c| c.join("config"))
}

/// Whether this clone shares its claims through a remote, and which (read from the
/// repository's git config file, without running git).
pub fn config(ws: &Workspace) -> Option<Config> {
    let bytes = fsutil::read_capped(&config_file(ws)?, gitconfig::MAX_CONFIG).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let get = |key: &str| {
        gitconfig::last_value(&text, "coord", key)
            .flatten()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Some(Config {
        remote: get("remote")?,
        clone_id: get("cloneId"),
    })
}

/// How old the synced state may be before a reader reads the remote again: `COORD_REMOTE_MAX_AGE`,
/// else `remote_max_age` in `.coord/config`, else 15 s.
pub fn max_age(ws: &Workspace) -> Duration {
    let set = std::env::var("COORD_REMOTE_MAX_AGE")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            let (text, _) = fsutil::read_text_capped(
                &layout::config(&crate::worktree::shared_root(ws.root())),
                64 * 1024,
            )
            .ok()?;
            Record::parse(&text)
                .get_nonempty("remote_max_age")
                .map(str::to_string)
        });
    set.and_then(|v| clock::parse_duration(&v).ok())
        .unwrap_or(DEFAULT_MAX_AGE)
}

/// A time as the state keeps it: RFC 3339 with milliseconds.
pub(crate) fn time_text(t: &Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

/// A random pause before try number `attempt` after a lost race (up to 20 ms doubled each
/// try, at most half a second).
pub(crate) fn backoff(attempt: u32) {
    let cap_ms = (20u64 << attempt.min(5)).min(500);
    let ms = crate::host::random_u64() % (cap_ms + 1);
    std::thread::sleep(Duration::from_millis(ms));
}

/// One conversation with the remote: who this clone is, where git runs, until when.
pub(crate) struct Remote {
    /// The remote's name.
    pub name: String,
    dir: PathBuf,
    /// This clone as a holder (`agent` empty; set per request).
    pub me: Holder,
    /// When every call gives up.
    pub deadline: Instant,
    sha256: bool,
}

impl Remote {
    /// Open the remote this clone shares claims through, giving it a clone id when it has none.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] when claims are not shared here; [`Error::Failed`] when the clone
    /// id cannot be stored.
    fn open(ws: &Workspace, budget: Duration) -> Result<Remote> {
        let cfg = config(ws).ok_or_else(|| {
            Error::bad_input(
                "claims are not shared through a remote here: run `coord remote enable [REMOTE]` first",
            )
        })?;
        let deadline = Instant::now() + budget;
        let dir = ws.root().to_path_buf();
        let clone = match cfg.clone_id {
            Some(id) => id,
            None => new_clone_id(&dir, deadline)?,
        };
        let sha256 = config_file(ws)
            .and_then(|f| gitconfig::file_value(&f, "extensions", "objectFormat").flatten())
            .is_some_and(|v| v.eq_ignore_ascii_case("sha256"));
        Ok(Remote {
            name: cfg.remote,
            dir,
            me: Holder {
                agent: String::new(),
                host: crate::host::hostname().to_string(),
                clone,
            },
            deadline,
            sha256,
        })
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    /// This clone's `agent` as a holder.
    fn holder(&self, agent: &str) -> Holder {
        Holder {
            agent: agent.to_string(),
            ..self.me.clone()
        }
    }

    /// The error for a fault talking to the remote: nothing was changed.
    fn fault(&self, f: &git::NetFault) -> Error {
        let url = remote_url(&self.dir, &self.name)
            .map(|u| format!(" ({u})"))
            .unwrap_or_default();
        match f {
            git::NetFault::Credentials(why) => Error::Remote {
                remote: self.name.clone(),
                message: format!(
                    "remote `{}`{url} refused the credentials: {why}; nothing was changed",
                    self.name
                ),
                credentials: true,
            },
            git::NetFault::Unreachable(why) => Error::Remote {
                remote: self.name.clone(),
                message: format!(
                    "cannot reach remote `{}`{url}: {why}; nothing was changed",
                    self.name
                ),
                credentials: false,
            },
        }
    }

    /// A ref name for `git fast-import` to build a commit on; it is deleted in the same run
    /// (never written).
    fn scratch_ref(&self) -> String {
        format!(
            "{}{}-{:08x}",
            layout::SCRATCH_PREFIX,
            crate::host::pid(),
            crate::host::random_u64() as u32
        )
    }

    /// The null object id of this repository's hash.
    fn null_oid(&self) -> String {
        "0".repeat(if self.sha256 { 64 } else { 40 })
    }

    /// Fetch, read and keep in the state what the remote holds; the claims read.
    fn read_remote(&self, ws: &Workspace) -> Result<sync::Claims> {
        let at = clock::now();
        sync::fetch(self, self.deadline)?;
        let snap = state::update(ws, &self.name, |s| {
            let snap = sync::read(self, s, &at)?;
            sync::absorb(s, &snap, &self.me.clone);
            Ok::<_, Error>(snap)
        })??;
        Ok(snap.claims)
    }

    /// The claims as last read here (`None`: never read).
    fn last_read(&self) -> Option<sync::Claims> {
        let s = state::read(&self.dir, &self.name)?;
        Some(sync::Claims {
            commit: s.claims_commit.clone(),
            generation: s.generation,
            claims: s.claims.iter().filter_map(sync::revive).collect(),
        })
    }
}

/// Make and store a clone id (`git config coord.cloneId`).
fn new_clone_id(dir: &Path, deadline: Instant) -> Result<String> {
    let id = format!("{:016x}", crate::host::random_u64());
    let ran = git::run(dir, &["config", "coord.cloneId", &id], None, deadline);
    match ran {
        Ok(r) if r.ok() => Ok(id),
        Ok(r) => Err(Error::Failed {
            message: format!("cannot store this clone's id: {}", r.stderr.trim()),
        }),
        Err(f) => Err(Error::Failed {
            message: format!("cannot store this clone's id: {}", f.describe()),
        }),
    }
}

/// The URL git uses for `remote` (`git remote get-url`), when it has one.
pub fn remote_url(dir: &Path, remote: &str) -> Option<String> {
    let ran = git::run(
        dir,
        &["remote", "get-url", "--", remote],
        None,
        Instant::now() + Duration::from_secs(5),
    )
    .ok()?;
    ran.ok().then(|| ran.text()).filter(|u| !u.is_empty())
}

/// Share this clone's claims through `remote` (`coord.remote`), giving the clone an id when it
/// has none. Nothing is read from the remote yet (see [`sync`]).
///
/// # Errors
///
/// [`Error::BadInput`] when the workspace is not in a git repository or the repository has no
/// remote `remote`; [`Error::Failed`] when git's config cannot be written.
pub fn enable(ws: &Workspace, remote: &str) -> Result<Config> {
    let dir = ws.root();
    if config_file(ws).is_none() {
        return Err(Error::bad_input(format!(
            "`{}` is not in a git repository: claims are shared through a git remote",
            dir.display()
        )));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let failed = |why: String| Error::Failed {
        message: format!("cannot read or write the repository's git config: {why}"),
    };
    let listed = git::run(dir, &["remote"], None, deadline).map_err(|f| failed(f.describe()))?;
    if !listed.ok() {
        return Err(failed(listed.stderr.trim().to_string()));
    }
    let remotes: Vec<String> = listed.text().lines().map(str::to_string).collect();
    if !remotes.iter().any(|r| r == remote) {
        let known = if remotes.is_empty() {
            "it has none (add one with `git remote add origin URL`)".to_string()
        } else {
            format!(
                "its remotes: {}",
                remotes
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(Error::bad_input(format!(
            "the repository has no remote `{}`; {known}",
            record::short(remote)
        )));
    }
    let set = git::run(dir, &["config", "coord.remote", remote], None, deadline)
        .map_err(|f| failed(f.describe()))?;
    if !set.ok() {
        return Err(failed(set.stderr.trim().to_string()));
    }
    let clone_id = match config(ws).and_then(|c| c.clone_id) {
        Some(id) => id,
        None => new_clone_id(dir, deadline)?,
    };
    Ok(Config {
        remote: remote.to_string(),
        clone_id: Some(clone_id),
    })
}

/// What [`disable`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Disabled {
    /// The remote claims went through (`None`: they were not shared).
    pub remote: Option<String>,
    /// How many of this clone's claims were released there.
    pub released: usize,
    /// Why they could not be released (they stay until their lease lapses).
    pub warning: Option<String>,
}

/// Stop sharing claims through the remote: this clone's claims there are released and its
/// `working_on` removed (when the remote can be reached), `coord.remote` unset, the synced
/// state and `refs/coord-sync/` removed. The clone keeps its id.
///
/// # Errors
///
/// [`Error::Failed`] when git's config cannot be written; [`Error::Io`] when the state cannot
/// be removed.
pub fn disable(ws: &Workspace) -> Result<Disabled> {
    let Some(cfg) = config(ws) else {
        return Ok(Disabled::default());
    };
    let mut out = Disabled {
        remote: Some(cfg.remote.clone()),
        ..Disabled::default()
    };
    let released = Remote::open(ws, Duration::from_secs(15)).and_then(|r| {
        let outcomes = claims::change(ws, &r, true, |c, now| {
            Ok(claims::decide_own(c, &r.me, &[], None, None, now, None))
        })?;
        clones::publish(ws, &r, &[], DEFAULT_LEASE)?;
        Ok(outcomes.len())
    });
    match released {
        Ok(n) => out.released = n,
        Err(e) => out.warning = Some(e.to_string()),
    }
    let dir = ws.root();
    let deadline = Instant::now() + Duration::from_secs(10);
    let unset = git::run(
        dir,
        &["config", "--unset-all", "coord.remote"],
        None,
        deadline,
    );
    if let Ok(r) = &unset
        && !r.ok()
        && config(ws).is_some()
    {
        return Err(Error::Failed {
            message: format!("cannot unset `coord.remote`: {}", r.stderr.trim()),
        });
    }
    if let Ok(listed) = git::run(
        dir,
        &[
            "for-each-ref",
            "--format=delete %(refname)",
            layout::SYNC_PREFIX,
        ],
        None,
        deadline,
    ) && listed.ok()
        && !listed.stdout.is_empty()
    {
        let _ = git::run(
            dir,
            &["update-ref", "--stdin"],
            Some(listed.stdout),
            deadline,
        );
    }
    state::remove(dir)?;
    Ok(out)
}

/// Stop sharing for good (`coord init --remove --all`): [`disable`], and this clone's id
/// (`coord.cloneId`) forgotten too.
pub fn forget(ws: &Workspace) -> Result<Disabled> {
    let out = disable(ws)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let _ = git::run(
        ws.root(),
        &["config", "--unset-all", "coord.cloneId"],
        None,
        deadline,
    );
    Ok(out)
}

/// Publish this clone's `working_on` (`working`: what its agents edit now) when it changed or
/// its lease needs renewing, then read the remote (one fetch): the view, as kept in
/// `.coord/remote/state.json`.
///
/// # Errors
///
/// [`Error::BadInput`] when claims are not shared here; [`Error::Remote`] when the remote
/// cannot be reached or refused the credentials (the state kept is left as it was).
pub fn sync(ws: &Workspace, working: &[AgentWork]) -> Result<View> {
    sync_within(ws, working, NETWORK_BUDGET)
}

/// [`sync`], giving up after `budget` (the guard's pre-push check waits less than a command).
pub fn sync_within(ws: &Workspace, working: &[AgentWork], budget: Duration) -> Result<View> {
    let _one = crate::arbiter::lock_mutex_within(&sync_lock(ws)?, budget)?;
    sync_held(ws, working, budget)
}

/// `.coord/remote/sync`, made when missing: held by a sync of this clone, so that two never
/// publish its `working_on` at once (its ref refuses the second push).
fn sync_lock(ws: &Workspace) -> Result<PathBuf> {
    let shared = worktree::shared_root(ws.root());
    fsutil::ensure_dir(&layout::remote_dir(&shared))?;
    Ok(layout::remote_sync(&shared))
}

/// [`sync`], its lock held.
fn sync_held(ws: &Workspace, working: &[AgentWork], budget: Duration) -> Result<View> {
    let r = Remote::open(ws, budget)?;
    // A record that cannot be written (a path git would not take) is not the read's concern.
    if let Err(e @ Error::Remote { .. }) = clones::publish(ws, &r, working, DEFAULT_LEASE) {
        return Err(e);
    }
    r.read_remote(ws)?;
    view(ws).ok_or_else(|| Error::Failed {
        message: "the state read from the remote was not kept".into(),
    })
}

/// Publish claims (or shared locks) of `agent` on `items`, all or nothing: one fetch, then one
/// compare-and-swap push (another fetch and push per lost race, bounded).
///
/// # Errors
///
/// [`Error::BadInput`] when claims are not shared here or `items` is empty;
/// [`Error::Remote`] when the remote cannot be reached, refused the credentials or the update,
/// or changed under every try: nothing was published.
pub fn publish_claims(
    ws: &Workspace,
    agent: &AgentId,
    items: &[Item],
    reason: Option<&str>,
    ttl: Duration,
) -> Result<Claimed> {
    if items.is_empty() {
        return Err(Error::bad_input("nothing to claim"));
    }
    let r = Remote::open(ws, NETWORK_BUDGET)?;
    let me = r.holder(agent.id());
    claims::change(ws, &r, false, |c, now| {
        let steady = steady::now();
        Ok(claims::decide_claim(
            c,
            &me,
            items,
            reason,
            ttl,
            now,
            steady.as_ref(),
        ))
    })
}

/// Release this clone's claims of `agents` (all of this clone's when empty) on `patterns` (all
/// of theirs when `None`).
pub fn release(
    ws: &Workspace,
    agents: &[AgentId],
    patterns: Option<&[Pattern]>,
) -> Result<Vec<Outcome>> {
    let r = Remote::open(ws, NETWORK_BUDGET)?;
    let ids: Vec<String> = agents.iter().map(|a| a.id().to_string()).collect();
    claims::change(ws, &r, true, |c, now| {
        Ok(claims::decide_own(
            c, &r.me, &ids, patterns, None, now, None,
        ))
    })
}

/// Release this clone's records of `agent` on the patterns of `versions`, each only at the
/// version (blob) given: a record published again since (a new version: a lock of it taken
/// here meanwhile) stays. Decided again against each read of the remote, so a push that lost a
/// race never releases what changed meanwhile.
pub fn release_versions(
    ws: &Workspace,
    agent: &AgentId,
    versions: &[(Pattern, String)],
) -> Result<Vec<Outcome>> {
    let r = Remote::open(ws, NETWORK_BUDGET)?;
    let known: Vec<(Pattern, Option<String>)> = (versions.iter())
        .map(|(p, blob)| (p.clone(), Some(blob.clone())))
        .collect();
    release_known(ws, &r, agent, &known)
}

/// Release `agent`'s records on `patterns` as [`release`] does, each only at its version as
/// last read here (any version when none was read): what `coord unlock` gives back here was
/// published in that version, and a lock of it taken again meanwhile (by another process of
/// the agent) publishes a new one, which stays.
pub fn release_as_read(
    ws: &Workspace,
    agent: &AgentId,
    patterns: &[Pattern],
) -> Result<Vec<Outcome>> {
    let r = Remote::open(ws, NETWORK_BUDGET)?;
    let me = r.holder(agent.id());
    let read = r.last_read();
    let known: Vec<(Pattern, Option<String>)> = (patterns.iter())
        .map(|p| (p.clone(), read.as_ref().and_then(|c| version_of(c, &me, p))))
        .collect();
    release_known(ws, &r, agent, &known)
}

/// The version (blob) of `holder`'s record on `pattern` in `claims`.
fn version_of(claims: &sync::Claims, holder: &Holder, pattern: &Pattern) -> Option<String> {
    (claims.claims.iter())
        .find(|c| c.holder() == holder && c.seen.record.text() == pattern.as_str())
        .map(|c| c.seen.blob.clone())
}

/// Release `agent`'s records on the patterns of `known`, each only at the version given with
/// it (`None`: any), decided against each read.
fn release_known(
    ws: &Workspace,
    r: &Remote,
    agent: &AgentId,
    known: &[(Pattern, Option<String>)],
) -> Result<Vec<Outcome>> {
    let me = r.holder(agent.id());
    let ids = [agent.id().to_string()];
    claims::change(ws, r, true, |c, now| {
        let which: Vec<Pattern> = (known.iter())
            .filter(|(p, blob)| {
                let now = version_of(c, &me, p);
                blob.is_none() || now.is_none() || now == *blob
            })
            .map(|(p, _)| p.clone())
            .collect();
        if which.is_empty() {
            return Ok(claims::Plan::Done(Vec::new()));
        }
        Ok(claims::decide_own(
            c,
            &r.me,
            &ids,
            Some(&which),
            None,
            now,
            None,
        ))
    })
}

/// Renew this clone's claims of `agents` (all of this clone's when empty) on `patterns` (all
/// of theirs when `None`), with a new lease `ttl` (each keeps its own when `None`). A claim
/// that is gone (taken over after its lease lapsed, or removed) is not renewed:
/// `Outcome::Gone`, naming who holds it now.
pub fn renew(
    ws: &Workspace,
    agents: &[AgentId],
    patterns: Option<&[Pattern]>,
    ttl: Option<Duration>,
) -> Result<Vec<Outcome>> {
    let r = Remote::open(ws, NETWORK_BUDGET)?;
    let ids: Vec<String> = agents.iter().map(|a| a.id().to_string()).collect();
    claims::change(ws, &r, true, |c, now| {
        let steady = steady::now();
        Ok(claims::decide_own(
            c,
            &r.me,
            &ids,
            patterns,
            Some(ttl),
            now,
            steady.as_ref(),
        ))
    })
}

/// Publish what this clone's agents are editing (advisory), with the default lease; nothing is
/// pushed when it is unchanged and was published recently (`Ok(false)`).
pub fn publish_working_on(ws: &Workspace, agents: &[AgentWork]) -> Result<bool> {
    let r = Remote::open(ws, NETWORK_BUDGET)?;
    clones::publish(ws, &r, agents, DEFAULT_LEASE)
}

/// Whether this clone's `working_on` (`working`: what its agents edit now, the lock room's
/// `working_on`) differs from its record as last read from the remote
/// (`.coord/remote/working_on`): a lock taken or released since it was published, or the
/// record read more than half its lease ago. `false` when claims are not shared here. Without
/// the network or git.
pub fn working_on_changed(ws: &Workspace, working: &[AgentWork]) -> bool {
    let Some(cfg) = config(ws) else {
        return false;
    };
    let me = cfg.clone_id.unwrap_or_default();
    let fresh_until = clock::now().timestamp() + (DEFAULT_LEASE / 2).as_secs() as i64;
    let mut published: Vec<(String, String)> = state::read_work(ws.root(), &cfg.remote)
        .unwrap_or_default()
        .into_iter()
        .filter(|w| w.holder.clone == me && w.lease_until > fresh_until)
        .map(|w| (w.holder.agent, w.path))
        .collect();
    published.sort();
    let now: Vec<(String, String)> = (working.iter())
        .flat_map(|a| {
            a.working_on
                .iter()
                .map(move |p| (a.agent.clone(), p.clone()))
        })
        .collect();
    now != published
}

/// The warning for an edit of `paths` (relative to the repository's top level) that agents of
/// other clones are editing, as last synced and within their record's lease, naming each
/// agent and its host (`None`: nobody). Reads `.coord/remote/working_on` only.
pub fn editing_warning(ws: &Workspace, paths: &[&str]) -> Option<String> {
    let cfg = config(ws)?;
    let me = cfg.clone_id.unwrap_or_default();
    let now = clock::now().timestamp();
    let found: Vec<String> = state::read_work(ws.root(), &cfg.remote)?
        .into_iter()
        .filter(|w| w.holder.clone != me && w.lease_until > now)
        .filter(|w| paths.contains(&w.path.as_str()))
        .map(|w| format!("`{}` is being edited by {}", w.path, w.holder.describe()))
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "{} in another clone (as last read from remote `{}`): the edit is allowed, but coordinate with them before changing it",
            found.join("; "),
            cfg.remote
        )
    })
}

/// Run as this clone's one background `coord remote sync`: [`sync`], then again while this
/// clone's `working_on` changed meanwhile (at most three reads). `Ok(false)`: another one
/// runs (it holds `.coord/remote/sync`, as any sync does), which looks again before it exits.
/// `working` says what this clone's agents edit now (asked again before each read).
pub fn sync_in_background(ws: &Workspace, working: impl Fn() -> Vec<AgentWork>) -> Result<bool> {
    let lock = sync_lock(ws)?;
    let mut ran = false;
    for _ in 0..3 {
        let Ok(one) = crate::arbiter::lock_mutex_within(&lock, Duration::ZERO) else {
            return Ok(ran);
        };
        sync_held(ws, &working(), NETWORK_BUDGET)?;
        ran = true;
        // Let go, then look once more: a lock taken meanwhile by a command that found this
        // one still running is published too.
        drop(one);
        if !working_on_changed(ws, &working()) {
            break;
        }
    }
    Ok(ran)
}

/// Whether a sync of this clone runs (it holds `.coord/remote/sync`).
pub fn sync_running(ws: &Workspace) -> bool {
    let lock = layout::remote_sync(&worktree::shared_root(ws.root()));
    lock.exists() && crate::arbiter::lock_mutex_within(&lock, Duration::ZERO).is_err()
}

/// A claim of the remote as last synced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteClaim {
    /// A claim, or a lock shared with `--share`.
    pub kind: Kind,
    /// Its pattern (a lock's path, literally).
    pub pattern: Pattern,
    /// Who holds it.
    pub holder: Holder,
    /// Since when (the holder's word, never later than this clone first saw it).
    pub since: Timestamp,
    /// What the holder works on.
    pub reason: Option<String>,
    /// When its lease ends unless renewed, on this clock.
    pub lease_until: Timestamp,
    /// Its lease has lapsed, by this clone's wall clock and by its clock that does not jump
    /// ([`state::lapsed`]): the next request that needs it takes it over.
    pub stale: bool,
    /// This clone holds it.
    pub mine: bool,
}

/// An agent of another clone (or of this one), and what it edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAgent {
    /// The agent id.
    pub agent: String,
    /// Its clone's host.
    pub host: String,
    /// Its clone's id.
    pub clone: String,
    /// The paths it holds locks on.
    pub working_on: Vec<String>,
    /// When this clone first saw that record (this clock).
    pub seen_at: Timestamp,
    /// It is an agent of this clone.
    pub mine: bool,
}

/// The remote's coord state as last synced here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The remote's name.
    pub remote: String,
    /// When it was last read (`None`: never).
    pub synced_at: Option<Timestamp>,
    /// How long ago that was.
    pub age: Option<Duration>,
    /// Every claim there (this clone's too), by pattern.
    pub claims: Vec<RemoteClaim>,
    /// Every agent whose clone published what it edits, within that record's lease.
    pub agents: Vec<RemoteAgent>,
    /// Records ignored there and why, and what the last read found had happened there.
    pub warnings: Vec<String>,
}

impl View {
    /// The document `coord remote status --json` prints (contract §13), and `coord status
    /// --json` under `remote`: `url` is the remote's URL when known.
    pub fn to_json(&self, url: Option<&str>) -> serde_json::Value {
        let ts = clock::format_timestamp;
        let claims = self.claims.iter().map(|c| {
            serde_json::json!({
                "pattern": c.pattern.as_str(),
                "agent": c.holder.agent,
                "host": c.holder.host,
                "since": ts(&c.since),
                "reason": c.reason,
                "lease_until": ts(&c.lease_until),
            })
        });
        let agents = self.agents.iter().map(|a| {
            serde_json::json!({
                "agent": a.agent,
                "host": a.host,
                "working_on": a.working_on,
                "seen_at": ts(&a.seen_at),
            })
        });
        serde_json::json!({
            "remote": self.remote,
            "url": url,
            "synced_at": self.synced_at.as_ref().map(ts),
            "age_s": self.age.map(|a| a.as_secs()),
            "claims": claims.collect::<Vec<_>>(),
            "agents": agents.collect::<Vec<_>>(),
        })
    }
}

/// The remote's coord state as last synced, without the network (`None`: claims are not
/// shared here).
pub fn view(ws: &Workspace) -> Option<View> {
    let cfg = config(ws)?;
    let me = cfg.clone_id.unwrap_or_default();
    let s = state::read(ws.root(), &cfg.remote).unwrap_or_else(|| state::State::new(&cfg.remote));
    let now = clock::now();
    let steady = steady::now();
    let mut claims: Vec<RemoteClaim> = s
        .claims
        .iter()
        .filter_map(sync::revive)
        .map(|c| {
            let lease_until = c.lease_until();
            let seen = clock::parse_timestamp(&c.seen.seen).unwrap_or(now);
            let since = clock::parse_timestamp(&c.seen.record.since)
                .filter(|t| *t <= seen)
                .unwrap_or(seen);
            RemoteClaim {
                kind: c.seen.record.kind,
                mine: c.holder().clone == me,
                holder: c.holder().clone(),
                since,
                reason: c.seen.record.reason.clone(),
                stale: c.seen.lapsed(&now, steady.as_ref()),
                lease_until,
                pattern: c.pattern,
            }
        })
        .collect();
    claims.sort_by(|a, b| {
        (a.pattern.as_str(), &a.holder.agent).cmp(&(b.pattern.as_str(), &b.holder.agent))
    });
    let mut agents = Vec::new();
    for c in &s.clones {
        let Some(until) = state::lease_until(&c.seen, c.record.lease_s) else {
            continue;
        };
        if until <= now {
            continue;
        }
        let seen_at = clock::parse_timestamp(&c.seen).unwrap_or(now);
        for a in &c.record.agents {
            agents.push(RemoteAgent {
                agent: a.agent.clone(),
                host: c.record.host.clone(),
                clone: c.record.clone.clone(),
                working_on: a.working_on.clone(),
                seen_at,
                mine: c.record.clone == me,
            });
        }
    }
    agents.sort_by(|a, b| (&a.agent, &a.host).cmp(&(&b.agent, &b.host)));
    Some(View {
        warnings: s.warnings(),
        age: s.age(&now),
        synced_at: s.synced_at.as_deref().and_then(clock::parse_timestamp),
        remote: s.remote,
        claims,
        agents,
    })
}

/// The other clones' claims as last synced, without the network or git (empty when claims are
/// not shared here): what a lock, an edit or a push here must honour. Read from
/// `.coord/remote/claims`, a few lines, not the JSON state.
pub fn claims_here(ws: &Workspace) -> Vec<RemoteClaim> {
    others(ws, None)
}

/// The other clones' claims that match one of `paths` (relative to the repository's top
/// level), as [`claims_here`] reads them: only the patterns that can match are parsed (those
/// whose first segment is a wildcard or one of the paths' first segments).
pub fn claims_on(ws: &Workspace, paths: &[&str]) -> Vec<RemoteClaim> {
    others(ws, Some(paths))
}

/// How long ago the remote was last read, from `.coord/remote/claims` (`None`: never, or not
/// shared here): with [`max_age`], whether a hook should have it read again.
pub fn synced_age(ws: &Workspace) -> Option<Duration> {
    synced_time(ws, &config(ws)?).map(|at| clock::age(&clock::now(), &at))
}

/// When the remote `cfg` names was last read, from `.coord/remote/claims` (`None`: never).
fn synced_time(ws: &Workspace, cfg: &Config) -> Option<Timestamp> {
    let (synced, _) = state::read_index(ws.root(), &cfg.remote, |_| false)?;
    (synced > 0).then(|| epoch(synced))
}

/// The longest a reader waits for the remote to be read again ([`refresh`]) before it judges
/// by the state it has.
pub const REFRESH_WAIT: Duration = Duration::from_secs(1);

/// Have the remote read again when the state last synced is older than `older` (or was never
/// read, or was read at a time this clock has not reached yet): `coord remote sync --background` started detached, waited for at most
/// [`REFRESH_WAIT`]; one already under way (its kernel lock, `.coord/remote/sync`) is waited for
/// instead. Nothing is done where claims are not shared. `Some(warning)`: the remote could not
/// be read in time, saying how old the state judged by is.
pub fn refresh(ws: &Workspace, older: Duration) -> Option<String> {
    let cfg = config(ws)?;
    // A read stamped later than this clock reads now (it was set back since) is read again:
    // its age says nothing.
    let now = clock::now();
    if synced_time(ws, &cfg).is_some_and(|at| at <= now && clock::age(&now, &at) <= older) {
        return None;
    }
    let read = sync_lock(ws).is_ok_and(|lock| {
        match crate::arbiter::lock_mutex_within(&lock, Duration::ZERO) {
            Ok(free) => {
                drop(free);
                start_sync(ws)
            }
            Err(_) => crate::arbiter::lock_mutex_within(&lock, REFRESH_WAIT).is_ok(),
        }
    });
    if read {
        return None;
    }
    let judged = synced_age(ws).map_or(
        "never read: no claim of another clone is known here".into(),
        |a| format!("as read {} ago", clock::format_age(a)),
    );
    Some(format!(
        "remote `{}` could not be read within {} (`coord remote sync` says why): the other clones' claims are judged {judged}",
        cfg.remote,
        clock::format_duration(REFRESH_WAIT)
    ))
}

/// How a child is made independent of this process before it starts: the binary installs one
/// ([`set_detacher`]) that gives it a session of its own and none of the descriptors this
/// process inherited (a detached child must never hold a client's pipe open); without one (the
/// library's own tests) it gets a process group of its own.
static DETACHER: std::sync::OnceLock<fn(&mut std::process::Command)> = std::sync::OnceLock::new();

/// Install how [`spawn_detached`] detaches its children (once per process; later calls are
/// ignored).
pub fn set_detacher(detach: fn(&mut std::process::Command)) {
    let _ = DETACHER.set(detach);
}

/// Start `coord -C ROOT remote ARGS` detached: stdio on `/dev/null`, no agent of this process,
/// made independent as [`set_detacher`] says. The one way coord starts its background syncs
/// and its renewer.
pub fn spawn_detached(ws: &Workspace, args: &[&str]) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt as _;
    use std::process::{Command, Stdio};
    let mut command = Command::new(std::env::current_exe()?);
    command
        .arg("-C")
        .arg(ws.root())
        .arg("remote")
        .args(args)
        .env_remove("COORD_AGENT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match DETACHER.get() {
        Some(detach) => detach(&mut command),
        None => {
            command.process_group(0);
        }
    }
    command.spawn()
}

/// Start `coord remote sync --background` detached and wait for it at most [`REFRESH_WAIT`]:
/// whether it read the remote by then. Reaped by a thread (a long-lived process, `coord mcp`,
/// leaves no zombie); a command that ends first leaves it to init.
fn start_sync(ws: &Workspace) -> bool {
    let Ok(mut child) = spawn_detached(ws, &["sync", "--background"]) else {
        return false;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait().is_ok_and(|s| s.success()));
    });
    rx.recv_timeout(REFRESH_WAIT).unwrap_or(false)
}

/// A time given in seconds since the epoch.
fn epoch(secs: i64) -> Timestamp {
    let t = std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    clock::from_system_time(t)
}

/// The first segment of `text` when it has no wildcard.
fn literal_head(text: &str) -> Option<&str> {
    let head = text.split('/').find(|s| !s.is_empty())?;
    (!head.contains(['*', '?', '[', '\\'])).then_some(head)
}

fn others(ws: &Workspace, paths: Option<&[&str]>) -> Vec<RemoteClaim> {
    let Some(cfg) = config(ws) else {
        return Vec::new();
    };
    let me = cfg.clone_id.unwrap_or_default();
    let heads: Option<Vec<&str>> = paths.map(|ps| {
        ps.iter()
            .filter_map(|p| p.split('/').find(|s| !s.is_empty()))
            .collect()
    });
    let keep = |text: &str| match (&heads, literal_head(text)) {
        (Some(hs), Some(h)) => hs.contains(&h),
        _ => true,
    };
    let Some((_, list)) = state::read_index(ws.root(), &cfg.remote, keep) else {
        // No index, or one that does not parse whole: the state it is made from says.
        let Some(v) = view(ws) else {
            return Vec::new();
        };
        return (v.claims.into_iter())
            .filter(|c| !c.mine)
            .filter(|c| paths.is_none_or(|ps| ps.iter().any(|p| c.pattern.matches(p))))
            .collect();
    };
    let now = clock::now();
    let steady = steady::now();
    list.into_iter()
        .filter(|c| c.holder.clone != me)
        .filter_map(|c| {
            let pattern = match c.kind {
                Kind::Claim => Pattern::parse(&c.text).ok()?,
                Kind::Lock => Pattern::literal(&c.text),
            };
            if let Some(ps) = paths
                && !ps.iter().any(|p| pattern.matches(p))
            {
                return None;
            }
            let lease_until = epoch(c.lease_until);
            Some(RemoteClaim {
                kind: c.kind,
                pattern,
                holder: c.holder,
                since: epoch(c.since),
                reason: (!c.reason.is_empty()).then_some(c.reason),
                stale: state::lapsed(&lease_until, c.steady_until.as_ref(), &now, steady.as_ref()),
                lease_until,
                mine: false,
            })
        })
        .collect()
}

impl Held {
    /// The refusal `coord lock` gives for it: exit 3, naming the holder, its host, since when,
    /// the reason and when its lease ends.
    pub fn refusal(&self, remote: &str) -> Error {
        let local = |t: &Timestamp| t.with_timezone(&chrono::Local);
        let now = local(&clock::now());
        let when = |t: &Timestamp| {
            let t = local(t);
            if t.date_naive() == now.date_naive() {
                t.format("%H:%M:%S").to_string()
            } else {
                t.format("%Y-%m-%d %H:%M").to_string()
            }
        };
        Error::LockHeld {
            file: self.asked.clone(),
            holder: format!(
                "{} ({} `{}` through remote `{remote}`, lease until {})",
                self.holder.describe(),
                self.kind.word(),
                self.pattern,
                when(&self.lease_until)
            ),
            since: when(&self.since),
            working_on: self.reason.clone(),
        }
    }
}
