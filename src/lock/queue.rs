//! The wait queue: waiters for a busy lock are served in the order they started waiting.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;
use crate::fsutil::{self, RECORD_CAP};
use crate::host;
use crate::layout;
use crate::pattern::Pattern;
use crate::record::Record;
use crate::wait::handoff;
use crate::workspace::{AgentId, Target};

/// A ticket untouched for this long is dead (waiters touch theirs every [`TOUCH_EVERY`]).
const TICKET_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a waiter touches its tickets.
pub(crate) const TOUCH_EVERY: Duration = Duration::from_secs(5);

/// A waiter's tickets, one per file or claim, all with one number.
#[derive(Debug, Clone)]
pub(crate) struct Tickets {
    pub(crate) seq: u64,
    pub(crate) paths: Vec<PathBuf>,
    /// Whether queue folders left empty stay (see [`keeps_folders`]).
    keep_folders: bool,
}

/// Whether empty queue folders are kept (another machine's cache may still list a removed one).
pub fn keeps_folders(root: &Path) -> bool {
    crate::arbiter::policy(root).is_ok_and(|p| p.exact_lookups)
}

/// The queue folder of `key`: a file's, or a claim pattern's.
fn dir_of(root: &Path, key: &str, claim: bool) -> PathBuf {
    let shared = crate::worktree::shared_root(root);
    if claim {
        layout::claim_queue_dir(&shared, key)
    } else {
        layout::queue_dir(&shared, key)
    }
}

/// The tickets (number, path) in the queue folder `dir`, unsorted; `None` if it cannot be listed.
fn tickets_in(dir: &Path) -> Option<Vec<(u64, PathBuf)>> {
    let entries = fsutil::read_dir(dir).ok()?.flatten();
    let n = |e: &fs::DirEntry| Some(layout::parse_ticket(e.file_name().to_str()?)?.0);
    Some(entries.filter_map(|e| Some((n(&e)?, e.path()))).collect())
}

/// The queue folders (files' and claims') under the queue root.
fn queue_folders(root: &Path) -> Vec<fs::DirEntry> {
    let queue_root = layout::queue_root(&crate::worktree::shared_root(root));
    (fsutil::read_dir(queue_root).into_iter().flatten().flatten())
        .filter(|d| d.file_type().is_ok_and(|t| t.is_dir()))
        .collect()
}

/// Register `agent` as waiting for `targets` and `claims`: one ticket each, one number. Mutex held.
pub(crate) fn register(
    root: &Path,
    agent: &AgentId,
    targets: &[Target],
    claims: &[Pattern],
) -> Result<Tickets> {
    let shared = crate::worktree::shared_root(root);
    let (seq_path, queue_root) = (layout::queue_seq(&shared), layout::queue_root(&shared));
    fsutil::ensure_dir(&queue_root)?;
    // `seq` may be damaged or missing: the next number is also above every ticket still queued,
    // so a damaged counter cannot let a new waiter jump the line.
    let highest = (queue_folders(root).iter())
        .flat_map(|d| tickets_in(&d.path()).unwrap_or_default())
        .map(|(n, _)| n)
        .max()
        .unwrap_or(0);
    let last: u64 = (fsutil::read_capped(&seq_path, 64).ok())
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse().ok())
        .unwrap_or(0)
        .max(highest);
    let seq = last.saturating_add(1);
    // Best effort: the tickets themselves keep the order, whatever stands at `seq`.
    let text = format!("{seq}\n");
    if !fsutil::rewrite_in_place(&seq_path, text.as_bytes()).unwrap_or(false) {
        let _ = fsutil::replace(&seq_path, text.as_bytes());
    }
    let hand_over = crate::arbiter::policy(root).is_ok_and(|p| p.fs.served_locally());
    let mut tickets = Tickets {
        seq,
        paths: Vec::with_capacity(targets.len() + claims.len()),
        keep_folders: true,
    };
    let keys = (targets.iter().map(|t| (t.rel.as_str(), false)))
        .chain(claims.iter().map(|c| (c.as_str(), true)));
    for (key, claim) in keys {
        let dir = dir_of(root, key, claim);
        fsutil::ensure_dir(&dir)?;
        let mut rec = Record::new();
        rec.set("agent", agent.name());
        rec.set("file", key);
        rec.set_opt("claim", claim.then_some("yes"));
        rec.set("pid", host::pid().to_string());
        rec.set("host", host::hostname());
        rec.set("since", crate::clock::now_string());
        let path = dir.join(layout::ticket_name(seq, agent.id()));
        // Staged in the queue root: a temporary name going away in the queue would wake its
        // waiters. Kept locked while it stands when handed over: the next sleeps on that.
        let published =
            fsutil::replace_staged(&path, &queue_root, rec.render().as_bytes(), hand_over)
                .map(|held| held.map(|file| handoff::keep(&path, file)));
        // All or nothing: the tickets made for the other files go too.
        published.inspect_err(|_| leave(&tickets))?;
        tickets.paths.push(path);
    }
    tickets.keep_folders = keeps_folders(root);
    Ok(tickets)
}

/// Remove a waiter's tickets (and queue folders left empty). Caller holds the mutex.
pub(crate) fn leave(tickets: &Tickets) {
    for path in &tickets.paths {
        let _ = fsutil::remove(path);
        handoff::let_go(path);
        if let Some(dir) = path.parent()
            && !tickets.keep_folders
        {
            let _ = fsutil::raw::remove_empty_dir(dir);
        }
    }
}

/// Touch a waiter's tickets so they stay live; an error when one vanished.
pub(crate) fn touch(tickets: &Tickets) -> Result<()> {
    tickets.paths.iter().try_for_each(|p| fsutil::touch(p))
}

/// A live ticket ahead in a queue.
#[derive(Debug, Clone)]
pub struct Ahead {
    /// Sequence number.
    pub seq: u64,
    /// The waiter's display name.
    pub agent: String,
}

/// The live tickets of `target`'s queue before `seq` (`None`: all), oldest first, removing dead
/// ones on the way. Caller holds the mutex.
pub fn live_tickets(root: &Path, target: &Target, seq: Option<u64>) -> Vec<Ahead> {
    let dir = dir_of(root, &target.rel, false);
    let Some(mut tickets) = tickets_in(&dir) else {
        return Vec::new();
    };
    let before = |n: u64| seq.is_none_or(|mine| n < mine);
    let behind = tickets.iter().any(|(n, _)| !before(*n));
    tickets.retain(|(n, _)| before(*n));
    tickets.sort();
    let mut live = Vec::new();
    for (seq, path) in tickets {
        match live_record(&path) {
            Some(rec) => live.push(Ahead {
                seq,
                agent: rec.get("agent").unwrap_or("?").to_string(),
            }),
            None => _ = fsutil::remove(&path),
        }
    }
    if live.is_empty() && !behind && !keeps_folders(root) {
        let _ = fsutil::raw::remove_empty_dir(&dir);
    }
    live
}

/// A ticket's record when the ticket is live (its process runs, it was touched lately).
fn live_record(path: &Path) -> Option<Record> {
    let (text, mtime) = fsutil::read_text_capped(path, RECORD_CAP).ok()?;
    let rec = Record::parse(&text);
    // coord writes every ticket with its process: one without must not hold the line.
    let pid = rec.get("pid").and_then(|p| p.parse::<u32>().ok())?;
    let h = rec.get_nonempty("host")?;
    if host::recorded_process_gone(pid, h, None) {
        return None;
    }
    let fresh = (mtime.and_then(|m| m.elapsed().ok())).is_some_and(|age| age <= TICKET_TIMEOUT);
    fresh.then_some(rec)
}

/// One live ticket: an agent waiting for one file.
#[derive(Debug, Clone)]
pub struct Waiter {
    /// The ticket's sequence number (one per waiting process and request).
    pub seq: u64,
    /// The waiter's id (from the ticket's name).
    pub agent: String,
    /// The waiter's display name.
    pub name: String,
    /// The file waited for, relative to the root.
    pub file: String,
    /// When it started waiting, as written (tickets from older versions have none).
    pub since: Option<String>,
    /// Whether it waits for a claim (`file` is then the pattern).
    pub claim: bool,
}

/// The live tickets of claim waiters, by number: one listing when nobody waits for a claim.
pub(crate) fn claim_waiters(root: &Path) -> Vec<Waiter> {
    let any = queue_folders(root).iter().any(|d| {
        (d.file_name().to_str()).is_some_and(|n| n.starts_with(layout::CLAIM_QUEUE_PREFIX))
    });
    let claims = || waiters(root).into_iter().filter(|w| w.claim).collect();
    any.then(claims).unwrap_or_default()
}

/// Whether waiter `seq` also waits for one of `files` or of the claims `patterns`, under mutex.
pub(crate) fn waits_for_any(root: &Path, seq: u64, files: &[String], patterns: &[String]) -> bool {
    let dirs = (files.iter().map(|f| dir_of(root, f, false)))
        .chain(patterns.iter().map(|p| dir_of(root, p, true)));
    dirs.into_iter()
        .any(|dir| tickets_in(&dir).is_some_and(|t| t.iter().any(|(n, _)| *n == seq)))
}

/// Every live ticket of every queue, by number then file; reading only (dead ones are skipped,
/// not removed, so that `status` can call it without writing a byte).
pub fn waiters(root: &Path) -> Vec<Waiter> {
    let mut found = Vec::new();
    for dir in queue_folders(root) {
        let (name, entries) = (dir.file_name(), fsutil::read_dir(dir.path()));
        let entries = entries.into_iter().flatten().flatten();
        found.extend(entries.filter_map(|e| waiter(root, &name, &e)));
    }
    found.sort_by(|a, b| a.seq.cmp(&b.seq).then_with(|| a.file.cmp(&b.file)));
    found
}

/// The waiter of `e`, a live ticket in the queue folder named `dir`.
fn waiter(root: &Path, dir: &std::ffi::OsStr, e: &fs::DirEntry) -> Option<Waiter> {
    let name = e.file_name();
    let (seq, agent) = name.to_str().and_then(layout::parse_ticket)?;
    let rec = live_record(&e.path())?;
    // A ticket must name the file it waits for, hashed to its folder, or a waiter did not write it.
    let file = rec.get_nonempty("file")?;
    let claim = rec.get("claim") == Some("yes");
    if dir_of(root, file, claim).file_name() != Some(dir) {
        return None;
    }
    Some(Waiter {
        seq,
        agent: agent.to_string(),
        name: rec.get_nonempty("agent").unwrap_or(agent).to_string(),
        file: file.to_string(),
        since: rec.get_nonempty("since").map(str::to_string),
        claim,
    })
}

/// The last ticket before `seq` in `dir` that stands (with `open`: opens); reading only, no mutex.
pub(crate) fn ticket_before(dir: &Path, seq: u64, open: bool) -> Option<PathBuf> {
    let mut before = tickets_in(dir)?;
    before.retain(|(s, _)| *s < seq);
    before.sort_unstable_by_key(|t| std::cmp::Reverse(t.0));
    (before.into_iter().map(|(_, path)| path)).find(|path| ticket_stands(path, open))
}

/// Whether the ticket file at `path` is still there.
pub(crate) fn ticket_stands(path: &Path, open: bool) -> bool {
    if open {
        fsutil::open_regular_nofollow(path).is_ok()
    } else {
        fs::symlink_metadata(path).is_ok()
    }
}

/// The folders a waiter for `targets` should watch for queue changes.
pub(crate) fn dirs(root: &Path, targets: &[Target]) -> Vec<PathBuf> {
    (targets.iter())
        .map(|t| dir_of(root, &t.rel, false))
        .collect()
}
