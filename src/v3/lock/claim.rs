//! Claims: a lock on a folder or a pattern (`src/auth/`, `src/**/*.sql`), kept in one small
//! file, `.coord/claims` (in the main work tree, shared by every worktree of the repository).
//!
//! ```text
//! Agent: Claude
//! id: claude
//! locked_at: 2026-01-28T01:00:00+01:00
//! pattern: src/auth/**
//! token: 9f3c0a4e5d6b7c8a
//! ttl: 5m
//! host: build-box
//! worktree: /repo
//! branch: main
//! reason: auth refactor
//! ```
//!
//! One record per claim, records separated by an empty line; the keys after `pattern` are those
//! of a lock record (`pid`, `pid_start`, `session`, `client`, `client_session` when the claim
//! follows a process), plus the work tree the claim was taken in and its branch. A claim is
//! judged exactly like a lock (LIVE, STALE, by TTL, holder presence and process), and is STALE
//! at once when the work tree it was taken in is gone, as a lock file goes with its tree. A
//! STALE claim is taken over by the next lock or claim that passes over it. The file is
//! only ever rewritten whole (durable replace) under the workspace mutex, and read once per try
//! or view: claims are few, and nothing walks the repository to find them.

use std::path::Path;

use super::{LockEntry, LockState, Release, ReleaseOutcome, classify};
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::layout;
use crate::pattern::Pattern;
use crate::record::Record;
use crate::v3::presence::StateCache;
use crate::workspace::Workspace;

/// The most `.coord/claims` is read of (far above what a few hundred claims take).
const CLAIMS_CAP: u64 = 4 * 1024 * 1024;

/// Every claim as written, unjudged (a record without a pattern is skipped).
pub fn read_all(root: &Path) -> Vec<LockEntry> {
    let path = layout::claims_file(&crate::worktree::shared_root(root));
    let Ok(bytes) = fsutil::read_capped(&path, CLAIMS_CAP) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut out: Vec<LockEntry> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .filter_map(|b| parse_block(&path, b))
        .collect();
    out.sort_by(|a, b| a.file.cmp(&b.file).then_with(|| a.agent.cmp(&b.agent)));
    out
}

/// Every claim, judged like locks (LIVE, STALE, CONFLICT) as of `now`.
pub fn judged(root: &Path, cache: &mut StateCache, now: &Timestamp) -> Vec<LockEntry> {
    let mut all = read_all(root);
    if !all.is_empty() {
        for e in &mut all {
            read_since(e);
        }
        classify(root, &mut all, cache, now);
    }
    all
}

fn read_since(e: &mut LockEntry) {
    e.since = e
        .record
        .as_ref()
        .and_then(|r| r.get_nonempty("locked_at"))
        .and_then(clock::parse_timestamp);
}

/// Judge one claim read by [`read_for`] as of `now` (LIVE or STALE).
pub fn judge(root: &Path, c: &mut Judged, cache: &mut StateCache, now: &Timestamp) {
    read_since(&mut c.entry);
    classify(root, std::slice::from_mut(&mut c.entry), cache, now);
}

/// A claim as judged, with its pattern parsed (a record whose pattern does not parse holds
/// everything: it cannot be told apart from what it meant to hold).
pub struct Judged {
    /// The record.
    pub entry: LockEntry,
    /// The pattern.
    pub pattern: Pattern,
}

/// [`judged`], with each pattern parsed.
pub fn judged_patterns(root: &Path, cache: &mut StateCache, now: &Timestamp) -> Vec<Judged> {
    judged(root, cache, now)
        .into_iter()
        .map(|entry| {
            let pattern = Pattern::parse(&entry.file)
                .unwrap_or_else(|_| Pattern::parse("**").expect("`**` parses"));
            Judged { entry, pattern }
        })
        .collect()
}

/// Rewrite `.coord/claims` to hold exactly `records`, in their order. Caller holds
/// the mutex.
///
/// # Errors
///
/// [`Error::Io`](crate::error::Error::Io) when it cannot be written.
pub(super) fn write_all(root: &Path, records: &[String]) -> Result<()> {
    let path = layout::claims_file(&crate::worktree::shared_root(root));
    if records.is_empty() {
        return fsutil::remove(&path).map(drop);
    }
    let text: Vec<String> = records
        .iter()
        .map(|r| format!("{}\n", r.trim_end_matches('\n')))
        .collect();
    fsutil::replace(&path, text.join("\n").as_bytes())
}

/// A claim's record as it was read (rewritten as is).
pub(super) fn raw_text(e: &LockEntry) -> String {
    String::from_utf8_lossy(e.raw.as_deref().unwrap_or_default()).into_owned()
}

/// The first segment of `text` when it has no wildcard (`None`: it has one, or is empty).
fn literal_head(text: &str) -> Option<&str> {
    let head = text.split('/').find(|s| !s.is_empty())?;
    (!head.contains(['*', '?', '[', '\\'])).then_some(head)
}

/// The claims that can matter to a request by `me` for `keys` (its files, and the patterns it
/// claims), with their patterns parsed, unjudged; and the records of the others, as read. A
/// claim whose first segment has no wildcard and differs from the first segment of every key
/// cannot match or overlap any of them: it is neither parsed nor judged.
pub fn read_for(root: &Path, me: &str, keys: &[&str]) -> (Vec<Judged>, Vec<String>) {
    let path = layout::claims_file(&crate::worktree::shared_root(root));
    let Ok(bytes) = fsutil::read_capped(&path, CLAIMS_CAP) else {
        return (Vec::new(), Vec::new());
    };
    let text = String::from_utf8_lossy(&bytes);
    let heads: Vec<Option<&str>> = keys.iter().map(|k| literal_head(k)).collect();
    let (mut relevant, mut others) = (Vec::new(), Vec::new());
    for block in text.split("\n\n") {
        if block.trim().is_empty() {
            continue;
        }
        let mut pattern = None;
        let mut id = None;
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("pattern:") {
                pattern = Some(v.trim());
            } else if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim());
            }
        }
        let mine = id.is_some_and(|i| i.eq_ignore_ascii_case(me));
        let apart = match pattern.and_then(literal_head) {
            Some(h) => heads.iter().all(|k| k.is_some_and(|k| k != h)),
            None => false,
        };
        if apart && !mine {
            others.push(block.to_string());
            continue;
        }
        let entry = parse_block(&path, block);
        match entry {
            Some(entry) => {
                let pattern = Pattern::parse(&entry.file)
                    .unwrap_or_else(|_| Pattern::parse("**").expect("`**` parses"));
                relevant.push(Judged { entry, pattern });
            }
            None => others.push(block.to_string()),
        }
    }
    (relevant, others)
}

/// One record of `.coord/claims`, unjudged (`None` without a pattern).
fn parse_block(path: &Path, block: &str) -> Option<LockEntry> {
    let record = Record::parse(block);
    let pattern = record.get_nonempty("pattern")?.to_string();
    let agent = record
        .get_nonempty("id")
        .or_else(|| record.get_nonempty("Agent"))
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    Some(LockEntry {
        lock_path: path.to_path_buf(),
        file: pattern,
        agent,
        raw: Some(block.as_bytes().to_vec()),
        record: Some(record),
        mtime: None,
        problem: None,
        since: None,
        state: LockState::Live,
        stale_why: None,
    })
}

/// The holder of claim `e` as a refusal names it: `Claude (claim `src/auth/**`)`, with the
/// work tree and branch it was taken in when that is another work tree than `root`.
pub fn holder_text(root: &Path, e: &LockEntry) -> String {
    let tree = e.field("worktree").filter(|w| Path::new(w) != root);
    match tree {
        Some(w) => format!(
            "{} (claim `{}`, worktree {w}, branch {})",
            e.holder(),
            e.file,
            e.field("branch").unwrap_or("(detached)")
        ),
        None => format!("{} (claim `{}`)", e.holder(), e.file),
    }
}

/// Release `agent`'s claims on `patterns` (all of its claims when `None`); with `force`, a
/// STALE claim of another agent on one of `patterns` goes too. Each pattern's outcome is
/// reported as a [`Release`] whose `file` is the pattern.
///
/// # Errors
///
/// [`Error::Io`](crate::error::Error::Io) when `.coord/claims` cannot be rewritten.
pub fn release(
    ws: &Workspace,
    agent: &crate::workspace::AgentId,
    patterns: Option<&[Pattern]>,
    force: bool,
) -> Result<Vec<Release>> {
    let root = ws.root();
    if patterns.is_none() && !layout::claims_file(&crate::worktree::shared_root(root)).exists() {
        return Ok(Vec::new());
    }
    let _mutex = ws.lock_mutex()?;
    let now = clock::now();
    let mut cache = StateCache::default();
    let all = judged(root, &mut cache, &now);
    let me = agent.id();
    let mut out = Vec::new();
    let mut gone = vec![false; all.len()];
    match patterns {
        None => {
            for (i, e) in all.iter().enumerate() {
                if e.agent == me {
                    gone[i] = true;
                    out.push(Release {
                        claim: true,
                        file: e.file.clone(),
                        outcome: ReleaseOutcome::Released,
                    });
                }
            }
        }
        Some(list) => {
            for p in list {
                let same: Vec<usize> = (0..all.len())
                    .filter(|&i| all[i].file == p.as_str())
                    .collect();
                let outcome = if let Some(&i) = same.iter().find(|&&i| all[i].agent == me) {
                    gone[i] = true;
                    ReleaseOutcome::Released
                } else if same.is_empty() {
                    ReleaseOutcome::NotLocked
                } else if let Some(&i) = same
                    .iter()
                    .find(|&&i| !force || all[i].state != LockState::Stale)
                {
                    ReleaseOutcome::HeldByOther {
                        holder: all[i].holder().to_string(),
                        state: all[i].state,
                    }
                } else {
                    let from: Vec<String> =
                        same.iter().map(|&i| all[i].holder().to_string()).collect();
                    for &i in &same {
                        gone[i] = true;
                    }
                    ReleaseOutcome::ForcedStale {
                        from: from.join(", "),
                    }
                };
                out.push(Release {
                    claim: true,
                    file: p.as_str().to_string(),
                    outcome,
                });
            }
        }
    }
    write_without(root, &all, &gone)?;
    crate::history::claims_released(root, agent, &out);
    Ok(out)
}

/// Release `agent`'s claims taken with these tokens, each `(pattern, token)` (what `coord run`
/// took, at its end): compare-and-delete, as for a lock. A claim whose record no longer
/// carries its token (taken over while STALE, released) is [`ReleaseOutcome::Lost`]; nothing
/// else is touched.
///
/// # Errors
///
/// [`Error::Io`](crate::error::Error::Io) when `.coord/claims` cannot be rewritten.
pub fn release_tokens(
    ws: &Workspace,
    agent: &crate::workspace::AgentId,
    held: &[(String, String)],
) -> Result<Vec<Release>> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let root = ws.root();
    let _mutex = ws.lock_mutex()?;
    let all = read_all(root);
    let mut gone = vec![false; all.len()];
    let out: Vec<Release> = held
        .iter()
        .map(|(pattern, token)| {
            let ours = (0..all.len()).find(|&i| {
                !gone[i]
                    && all[i].agent == agent.id()
                    && all[i].file == *pattern
                    && all[i].token() == Some(token.as_str())
            });
            if let Some(i) = ours {
                gone[i] = true;
            }
            Release {
                claim: true,
                file: pattern.clone(),
                outcome: match ours {
                    Some(_) => ReleaseOutcome::Released,
                    None => ReleaseOutcome::Lost,
                },
            }
        })
        .collect();
    write_without(root, &all, &gone)?;
    crate::history::claims_released(root, agent, &out);
    Ok(out)
}

/// Rewrite `.coord/claims` without the records marked `gone` (nothing is written when none
/// is). Caller holds the mutex.
fn write_without(root: &Path, all: &[LockEntry], gone: &[bool]) -> Result<()> {
    if !gone.iter().any(|g| *g) {
        return Ok(());
    }
    let keep: Vec<String> = all
        .iter()
        .zip(gone)
        .filter(|(_, g)| !**g)
        .map(|(e, _)| raw_text(e))
        .collect();
    write_all(root, &keep)
}
