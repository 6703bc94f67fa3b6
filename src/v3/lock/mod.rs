//! Locks: `FILE.lock.<agent>` beside FILE, in the seed's format, that two holders never share.
//!
//! This module reads and judges lock files (live, stale, conflict); [`acquire`] takes locks
//! (waiting in the queue, taking stale ones over) and [`release`] gives them back.
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
//! **Filesystems.** The workspace mutex is what [`crate::arbiter`] chooses for the folder: on a
//! local filesystem `flock(2)`; where kernel locks do not cross machines (NFS, SMB, FUSE) a lease
//! published with `link(2)`, with fencing. There, records are read by open + `fstat` (never
//! through cached attributes), a lock whose open fails with "not found" is gone, and lock files
//! are also looked up by exact name for every agent on the roster, because listings lag.

mod acquire;
mod release;

pub use acquire::{
    Acquired, Acquisition, Blocker, LockEvent, LockRequest, Owner, TakeOver, acquire, format_since,
    working_text,
};
pub use release::{
    Fence, Release, ReleaseOutcome, holds, holds_fence, own_fence, own_token, release,
    release_tokens,
};

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::arbiter;
use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::host;
use crate::layout;
use crate::record::Record;
use crate::v3::presence::{self, AgentState, StateCache, Unreadable};
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
    /// Read one lock file; `None` when it is gone.
    ///
    /// A lock file whose open fails with "not found" is gone, whatever a folder listing or a
    /// cached `stat` still says (a network filesystem's attribute cache can show a released
    /// lock for many seconds). The mtime comes from the open file (`fstat`), which a network
    /// filesystem revalidates on open, not from the path.
    fn read(lock_path: PathBuf, file: String, agent: String) -> Option<LockEntry> {
        let (record, raw, raw_mtime, problem) =
            match fsutil::read_capped_with_mtime(&lock_path, RECORD_CAP) {
                Ok((bytes, mtime)) => (
                    Some(Record::parse(&String::from_utf8_lossy(&bytes))),
                    Some(bytes),
                    mtime,
                    None,
                ),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(e) => (None, None, fsutil::mtime(&lock_path), Some(e.to_string())),
            };
        let mtime = raw_mtime.map(clock::from_system_time);
        let since = record
            .as_ref()
            .and_then(|r| r.get("locked_at"))
            .and_then(clock::parse_timestamp)
            .or(mtime);
        Some(LockEntry {
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
    let ttl = e.ttl();
    let mut age = clock::age(now, since);
    let mut now = *now;
    if age > ttl
        && let Some(ahead_of_folder) = arbiter::clock_ahead(root)
    {
        // This machine's clock runs ahead of the folder's: seen from here every lock looks
        // older than it is. Judge by the folder's clock instead.
        now -= chrono::Duration::from_std(ahead_of_folder).unwrap_or_default();
        age = clock::age(&now, since);
    }
    let now = &now;
    // A lock dated further in the future than its TTL (a forged date, or a clock far off) would
    // otherwise never age: it counts as expired, and the holder's presence still decides.
    let ahead = clock::age(since, now);
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
    let entries = fs::read_dir(dir).at("list", dir)?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.at("list", dir)?;
        let name = entry.file_name();
        match name.to_str().and_then(layout::parse_lock_name) {
            Some((b, agent)) if b == base => {
                found.extend(LockEntry::read(entry.path(), target.rel.clone(), agent));
            }
            Some(_) => {}
            None if sweep => {
                fsutil::sweep_entry(&entry);
            }
            None => {}
        }
    }
    // A listing may come from a cache that has not seen another machine's new lock yet: where
    // that can happen, every agent on the roster is also looked up by its exact lock name.
    if let Some(root) = root_of(target)
        && arbiter::policy(&root).is_ok_and(|p| p.exact_lookups)
    {
        for id in roster(&root) {
            let path = layout::lock_file(&target.abs, &id);
            if found.iter().any(|e| e.lock_path == path) {
                continue;
            }
            found.extend(LockEntry::read(path, target.rel.clone(), id));
        }
    }
    found.sort_by(|a, b| a.agent.cmp(&b.agent));
    Ok(found)
}

/// The workspace root of a target (its absolute path less its relative one).
fn root_of(target: &Target) -> Option<PathBuf> {
    let depth = target.rel.split('/').filter(|c| !c.is_empty()).count();
    target.abs.ancestors().nth(depth).map(Path::to_path_buf)
}

/// The agents on the roster (`.coord/agents`), read fresh.
fn roster(root: &Path) -> Vec<String> {
    let Ok(bytes) = fsutil::read_capped(&layout::roster(root), RECORD_CAP) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::trim)
        .filter(|id| crate::workspace::is_valid_agent_id(id))
        .map(str::to_string)
        .collect()
}

/// Put `id` on the roster, if it is not there yet. Caller holds the mutex.
///
/// # Errors
///
/// [`Error::Io`] when the roster cannot be written.
pub(crate) fn join_roster(root: &Path, id: &str) -> Result<()> {
    let mut ids = roster(root);
    if ids.iter().any(|i| i == id) {
        return Ok(());
    }
    ids.push(id.to_string());
    let mut text = ids.join("\n");
    text.push('\n');
    fsutil::replace(&layout::roster(root), text.as_bytes())
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
            let raw_name = entry.file_name();
            // A name that is not UTF-8 is still a lock when it reads as one: it is shown with
            // the bad bytes replaced, flagged, and counted as a problem, never skipped.
            let name = raw_name.to_string_lossy();
            let Ok(ft) = entry.file_type() else { continue };
            if let Some((base, agent)) = layout::parse_lock_name(&name) {
                let Some(file) = ws.rel(&dir.join(base)) else {
                    continue;
                };
                if let Some(mut e) = LockEntry::read(entry.path(), file, agent) {
                    if raw_name.to_str().is_none() {
                        e.problem = Some(match e.problem.take() {
                            Some(p) => format!("{BAD_NAME}; {p}"),
                            None => BAD_NAME.to_string(),
                        });
                    }
                    found.push(e);
                }
            } else if ft.is_dir() && !layout::skip_in_walk(&name) {
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

/// Why a lock file whose name is not UTF-8 is flagged.
const BAD_NAME: &str = "its name is not valid UTF-8 (shown with \u{FFFD} for the bad bytes)";

impl LockEntry {
    /// Whether the lock file's name is not valid UTF-8 (its `file` is then shown lossily).
    pub fn bad_name(&self) -> bool {
        self.lock_path
            .file_name()
            .is_some_and(|n| n.to_str().is_none())
    }
}

/// Problems a strict check reports: stale and conflicting locks, and lock files whose name is
/// not valid UTF-8 (no tool can name them reliably).
pub fn problems(entries: &[LockEntry]) -> Vec<&LockEntry> {
    entries
        .iter()
        .filter(|e| e.state != LockState::Live || e.bad_name())
        .collect()
}

/// Describe a lock problem in one line.
pub fn describe_problem(e: &LockEntry) -> String {
    let text = match e.state {
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
    };
    if e.bad_name() {
        format!("{text}; {BAD_NAME}")
    } else {
        text
    }
}

/// Files the scan could not read as lock records, for `status`.
pub fn unreadable(entries: &[LockEntry], ws: &Workspace) -> Vec<Unreadable> {
    entries
        .iter()
        .filter_map(|e| {
            Some(Unreadable {
                // A name that is not UTF-8 is shown with its bad bytes replaced.
                path: ws.rel(&e.lock_path).or_else(|| {
                    let rel = e.lock_path.strip_prefix(ws.root()).ok()?;
                    Some(rel.to_string_lossy().into_owned())
                })?,
                why: e.problem.clone()?,
            })
        })
        .collect()
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
        .at("create a temporary file in", dir)?
        .into_temp_path();
    let aside_path = aside.to_path_buf();
    match fsutil::rename(&e.lock_path, &aside_path) {
        Ok(()) => {}
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(true);
        }
        Err(Error::Io { source, .. }) => return Err(source).at("move aside", &e.lock_path),
        Err(other) => return Err(other),
    }
    let now_bytes = fsutil::read_capped(&aside_path, RECORD_CAP).ok();
    let touched = e.mtime.is_some() && fsutil::mtime(&aside_path) != e.mtime;
    if (now_bytes.is_some() && now_bytes != e.raw) || touched {
        // Refreshed by its holder in the meantime (rewritten, or touched as a hand-made lock is
        // refreshed): put it back and honour it. If the holder has already made a new record at
        // the path, that one stands and the moved copy is dropped.
        let _ = fsutil::raw::hard_link(&aside_path, &e.lock_path);
        return Ok(false);
    }
    drop(aside); // removes the renamed record
    Ok(true)
}

/// The files `agent` lists as locked in its presence `p` (as just read) that it still holds.
fn own_locks_listed(
    ws: &Workspace,
    agent: &AgentId,
    p: Option<&presence::Presence>,
) -> Vec<String> {
    let Some(p) = p else {
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

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
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

    fn real_entry(dir: &Path, text: &str) -> LockEntry {
        let path = dir.join("F.lock.x");
        std::fs::write(&path, text).unwrap();
        LockEntry::read(path, "F".into(), "x".into()).unwrap()
    }

    #[test]
    fn take_over_removes_a_lock_unchanged_since_it_was_judged() {
        let dir = tempfile::tempdir().unwrap();
        let e = real_entry(
            dir.path(),
            "Agent: X\nlocked_at: 2026-01-28T01:00:00+00:00\n",
        );
        assert!(take_over(&e).unwrap());
        assert!(!e.lock_path.exists());
        // Nothing else is left in the folder (the record moved aside is dropped).
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn take_over_keeps_a_lock_renewed_after_it_was_judged() {
        let dir = tempfile::tempdir().unwrap();
        let e = real_entry(
            dir.path(),
            "Agent: X\nlocked_at: 2026-01-28T01:00:00+00:00\n",
        );
        // The holder renews between the judgement and the takeover.
        let renewed = "Agent: X\nlocked_at: 2026-01-28T01:09:59+00:00\n";
        std::fs::write(&e.lock_path, renewed).unwrap();
        assert!(!take_over(&e).unwrap());
        assert_eq!(std::fs::read_to_string(&e.lock_path).unwrap(), renewed);
    }

    #[test]
    fn take_over_keeps_a_hand_made_lock_touched_after_it_was_judged() {
        let dir = tempfile::tempdir().unwrap();
        let e = real_entry(
            dir.path(),
            "Agent: X\nlocked_at: 2026-01-28T01:00:00+00:00\n",
        );
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&e.lock_path)
            .unwrap();
        f.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
            .unwrap();
        assert!(!take_over(&e).unwrap());
        assert!(e.lock_path.exists());
    }

    #[test]
    fn take_over_of_a_lock_already_gone_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let e = real_entry(dir.path(), "Agent: X\n");
        std::fs::remove_file(&e.lock_path).unwrap();
        assert!(take_over(&e).unwrap());
    }

    #[test]
    fn the_ttl_boundary_is_inclusive() {
        let root = Path::new("/nonexistent");
        let now = clock::parse_timestamp("2026-01-28T01:10:00+00:00").unwrap();
        let mut entries = vec![
            entry("a", "x", "locked_at: 2026-01-28T01:05:00+00:00\n"),
            entry("b", "y", "locked_at: 2026-01-28T01:04:59+00:00\n"),
            entry("c", "z", "locked_at: 2026-01-28T01:15:00+00:00\n"),
            entry("d", "w", "locked_at: 2026-01-28T01:15:01+00:00\n"),
        ];
        classify(root, &mut entries, &mut StateCache::default(), &now);
        let states: Vec<_> = entries.iter().map(|e| e.state).collect();
        assert_eq!(
            states,
            [
                LockState::Live,
                LockState::Stale,
                LockState::Live,
                LockState::Stale
            ]
        );
    }

    #[test]
    fn take_over_fails_when_the_lock_cannot_be_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let e = real_entry(
            dir.path(),
            "Agent: X\nlocked_at: 2026-01-28T01:00:00+00:00\n",
        );
        // An immutable file cannot be renamed, even by root (ext4, xfs, btrfs; not tmpfs).
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&e.lock_path)
            .status()
            .is_ok_and(|s| s.success());
        if !immutable {
            eprintln!("skipped: `chattr +i` is not available on this filesystem");
            return;
        }
        let result = take_over(&e);
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&e.lock_path)
            .status();
        assert!(
            result.is_err(),
            "a lock still in place was reported taken over"
        );
        assert!(e.lock_path.exists());
    }
}
