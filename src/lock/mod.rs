//! Locks: `FILE.lock.<agent>` beside FILE, in the seed's format, that two holders never share.
//!
//! Every transition (acquire, stale takeover, release) happens under the workspace mutex
//! ([`crate::arbiter`]); a record is published whole (temporary file, then link without
//! replacing); a stale record is renamed aside, re-read and compared before it is dropped (put
//! back and honoured if it changed); after publishing, coord looks once more for a lock made
//! by hand and withdraws in its favour.

mod acquire;
pub mod backup;
mod blocker;
pub mod claim;
pub mod deadlock;
mod events;
mod index;
mod judge;
pub mod queue;
mod release;
mod remote_claim;
mod request;
mod scan;

pub use acquire::{acquire, seen_holder};
pub use blocker::{Blocker, Follows, format_since, since_text, working_text};
pub use index::{entries as indexed, forget_gone};
pub use judge::{classify, describe_problem, problems};
pub use release::{
    Fence, Release, ReleaseOutcome, RemoteRelease, holds_fence, own_fence, own_token, session_locks,
};
pub use remote_claim::renewal;
pub use remote_claim::{
    REREAD, Reach, leave_releases_to_renewer, releases_left, take_warnings as remote_warnings,
    working_on,
};
pub use request::{
    Acquired, Acquisition, ClientSession, LockEvent, LockRequest, Owner, TakeOver, set_runs_in,
};
#[cfg(test)]
pub(crate) use scan::folder_listings;
pub(crate) use scan::join_roster;
pub use scan::{
    HandMade, locks_of, locks_of_each, scan_judged, scan_tree, try_locks_each, unreadable,
};
use scan::{list_locks_each, own_locks_listed};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::record::Record;
use crate::workspace::{AgentId, Target, Workspace};

/// Release `agent`'s locks on `targets` (with `None`: every lock it holds, hand-made ones found
/// by a walk, and its claims), then, on the remote, the records of those published there.
pub fn release(
    ws: &Workspace,
    agent: &AgentId,
    targets: Option<&[Target]>,
    force: bool,
) -> Result<Vec<Release>> {
    let here = release::release(ws, agent, targets, force)?;
    with_claims_then_remote(ws, agent, here, targets.is_none())
}

/// Release every lock and claim `agent` took through coord, from the index and presence (no
/// walk), then, on the remote, the records of those published there.
pub fn release_all(ws: &Workspace, agent: &AgentId) -> Result<Vec<Release>> {
    let here = release::release_all(ws, agent)?;
    with_claims_then_remote(ws, agent, here, true)
}

/// Release locks this process took, by compare-and-delete of their tokens; with `record`, in
/// the history and on the remote too.
pub fn release_tokens(
    ws: &Workspace,
    agent: &AgentId,
    held: &[(Target, String)],
    record: bool,
) -> Result<Vec<Release>> {
    let here = release::release_tokens(ws, agent, held, record)?;
    with_claims_then_remote(ws, agent, here, false)
}

/// Release `agent`'s claims `which` names; with `record`, in the history and on the remote too.
pub fn release_claims(
    ws: &Workspace,
    agent: &AgentId,
    which: claim::Which<'_>,
    record: bool,
) -> Result<Vec<Release>> {
    let here = claim::release_here(ws, agent, which, record)?;
    with_claims_then_remote(ws, agent, here, false)
}

/// The steps of a release after the locks here: `agent`'s claims (`claims`), then the remote
/// step, which gives back there the records published of all that was released here.
fn with_claims_then_remote(
    ws: &Workspace,
    agent: &AgentId,
    (mut out, mut marked): release::Here,
    claims: bool,
) -> Result<Vec<Release>> {
    if claims {
        let (more, marks) = claim::release_here(ws, agent, claim::Which::All, true)?;
        out.extend(more);
        marked.extend(marks);
    }
    remote_claim::release(ws, agent, &marked, &mut out);
    Ok(out)
}

/// The key that marks a record published on the remote (its value: the remote's name).
const MARK: &str = "remote";

/// The key beside [`MARK`]: the lease it was published with (what the renewer renews it by).
const LEASE: &str = "remote_lease";

/// The TTL of a lock when none is given.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// The state of one lock record.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LockState {
    /// Held (and what an entry is until judged).
    #[default]
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
#[derive(Debug, Clone, Default)]
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
    /// The file's mtime as read (compared again before a stale takeover: touching refreshes).
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
    /// Read one lock file; `None` when it is gone.
    fn read(lock_path: PathBuf, file: String, agent: String) -> Option<LockEntry> {
        let (bytes, mtime, problem) = match fsutil::read_capped_with_mtime(&lock_path, RECORD_CAP) {
            Ok((bytes, mtime)) => (Some(bytes), mtime, None),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(err) => (None, fsutil::mtime(&lock_path), Some(err.to_string())),
        };
        let mut e = LockEntry::new(lock_path, file, agent, bytes);
        e.since = e.since.or(mtime.map(clock::from_system_time));
        (e.mtime, e.problem) = (mtime, problem);
        Some(e)
    }

    /// A lock record of `bytes` (`None`: not read), unjudged: `since` is its `locked_at`.
    fn new(lock_path: PathBuf, file: String, agent: String, bytes: Option<Vec<u8>>) -> LockEntry {
        let record = (bytes.as_ref()).map(|b| Record::parse(&String::from_utf8_lossy(b)));
        let since =
            (record.as_ref().and_then(|r| r.get("locked_at"))).and_then(clock::parse_timestamp);
        LockEntry {
            lock_path,
            file,
            agent,
            record,
            raw: bytes,
            since,
            ..LockEntry::default()
        }
    }

    /// [`LockEntry::read`] of a listed lock: on a network filesystem, the server is asked too.
    fn read_listed(lock_path: PathBuf, file: String, agent: String) -> Option<LockEntry> {
        let read = || LockEntry::read(lock_path.clone(), file.clone(), agent.clone());
        read().or_else(|| match fsutil::raw::create_exclusive(&lock_path, b"") {
            Ok(false) => read().or_else(|| {
                const WHY: &str = "listed, and there on the server, but this machine's lookup cache still says it is not (read again once the cache expires)";
                let mut e = LockEntry::new(lock_path.clone(), file.clone(), agent.clone(), None);
                e.problem = Some(WHY.into());
                Some(e)
            }),
            // Made here, so it was not there: it goes again.
            Ok(true) => fsutil::raw::remove_file(&lock_path).ok().and(None),
            Err(_) => None,
        })
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

    /// The start time of the recorded process (`pid_start`).
    pub fn process_start(&self) -> Option<u64> {
        self.field("pid_start")?.parse().ok()
    }

    /// The agent client's session the lock was taken in (`client`, `client_session`).
    pub fn client_session(&self) -> Option<(&str, &str)> {
        Some((self.field("client")?, self.field("client_session")?))
    }

    /// When the lock goes if nobody takes it over, in words after "released", by kind of holder.
    pub fn released_when(&self) -> &'static str {
        if self.client_session().is_some() {
            "when its holder's turn ends"
        } else if self.process().is_some() {
            "when its holder unlocks it or its process ends"
        } else {
            "when its holder unlocks it"
        }
    }

    /// Whether the lock keeps `me` out: not STALE, and held by another agent (anyone's when `me`
    /// is `None`).
    pub fn excludes(&self, me: Option<&crate::workspace::AgentId>) -> bool {
        self.state != LockState::Stale && me.is_none_or(|m| m.id() != self.agent)
    }

    /// Whether the lock file's name is not valid UTF-8 (its `file` is then shown lossily).
    pub fn bad_name(&self) -> bool {
        (self.lock_path.file_name()).is_some_and(|n| n.to_str().is_none())
    }
}

/// Whether `m`, a lock or claim of our own name that is not STALE, follows a live process other
/// than this one (or `owner`, the process we lock for) and its ancestors, outside the client
/// session this process runs in ([`set_runs_in`]): a `coord run`, a `coord session`, another
/// client session. Two processes of one agent exclude each other, so it is neither refreshed
/// nor given back by this one.
pub(crate) fn follows_other_process(m: &LockEntry, owner: Option<u32>) -> bool {
    let Some((pid, h)) = m.process() else {
        return false;
    };
    if h != crate::host::hostname() {
        return true;
    }
    if owner == Some(pid) || pid == crate::host::pid() {
        return false;
    }
    // Taken in the client session we run in (Codex's sandbox hides our ancestors).
    if let Some((client, session)) = m.client_session()
        && request::runs_in().is_some_and(|c| c.client == client && c.session == session)
    {
        return false;
    }
    !crate::host::is_ancestor(pid)
}

/// Why a lock file whose name is not UTF-8 is flagged.
const BAD_NAME: &str = "its name is not valid UTF-8 (shown with \u{FFFD} for the bad bytes)";

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests;

/// Take a stale lock over: it is renamed aside, re-read and compared with what was judged stale;
/// only an unchanged record is dropped (then its index entry), a refreshed one is put back.
fn take_over(root: &Path, e: &LockEntry) -> Result<bool> {
    let gone = || {
        index::forget_removed(root, &e.file, &e.agent, &e.lock_path);
        Ok(true)
    };
    let dir = e.lock_path.parent().unwrap_or(Path::new("."));
    let Ok(meta) = std::fs::symlink_metadata(&e.lock_path) else {
        return gone();
    };
    if meta.is_dir() {
        let path = e.lock_path.display();
        let message = format!("the stale lock `{path}` is a folder, not a file: remove it by hand");
        return Err(Error::failed(message));
    }
    let aside = (fsutil::temp_in(dir).at("create a temporary file in", dir)?).into_temp_path();
    match fsutil::raw::rename(&e.lock_path, &aside) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return gone(),
        moved => moved.at("move aside", &e.lock_path)?,
    }
    let now_bytes = fsutil::read_capped(&aside, RECORD_CAP).ok();
    let touched = e.mtime.is_some() && fsutil::mtime(&aside) != e.mtime;
    if (now_bytes.is_some() && now_bytes != e.raw) || touched {
        // Refreshed by its holder in the meantime (rewritten, or touched as a hand-made lock is
        // refreshed): put it back and honour it (a copy where hard links do not exist). A new
        // record the holder made at the path meanwhile stands; the moved copy is dropped.
        let bytes = now_bytes.as_deref().unwrap_or_default();
        fsutil::raw::put_back(&aside, &e.lock_path, bytes);
        return Ok(false);
    }
    drop(aside); // removes the renamed record
    gone()
}
