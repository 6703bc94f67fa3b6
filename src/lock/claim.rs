//! Claims: a lock on a folder or a pattern (`src/auth/`, `src/**/*.sql`), kept in one small
//! file, `.coord/claims` (in the main work tree, shared by every worktree of the repository).
//!
//! One record per claim (keys of a lock record, `pattern` for `file`, plus `worktree` and
//! `branch`), records separated by an empty line. A claim is judged like a lock, and is STALE
//! at once when its work tree is gone. The file is only rewritten whole under the mutex.

use std::path::Path;

use super::release::{Here, Marked, held_elsewhere};
use super::{LockEntry, Release, ReleaseOutcome, classify};
use crate::clock::{self, Timestamp};
use crate::error::{IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::pattern::Pattern;
use crate::presence::StateCache;
use crate::record::Record;
use crate::workspace::Workspace;

/// The most `.coord/claims` is read of (far above what a few hundred claims take).
const CLAIMS_CAP: u64 = 4 * 1024 * 1024;

/// A claim with its pattern parsed (a pattern that does not parse holds everything: it cannot
/// be told apart from what it meant to hold).
pub struct Judged {
    /// The record.
    pub entry: LockEntry,
    /// The pattern.
    pub pattern: Pattern,
}

/// Every claim as written, unjudged, in the file's order, and the records without a pattern.
/// No file holds no claim; a file that cannot be read (too large, a symlink, an I/O error) is
/// an error, never read as empty: a lock judged by it could take a claimed path, and a rewrite
/// would drop every claim in it.
fn read_records(root: &Path) -> Result<(Vec<LockEntry>, Vec<String>)> {
    let path = layout::claims_file(&crate::worktree::shared_root(root));
    let bytes = fsutil::if_found(fsutil::read_capped(&path, CLAIMS_CAP)).at("read", &path)?;
    let bytes = bytes.unwrap_or_default();
    let (mut claims, mut others) = (Vec::new(), Vec::new());
    for block in String::from_utf8_lossy(&bytes).split("\n\n") {
        match parse_block(&path, block) {
            Some(entry) => claims.push(entry),
            None if block.trim().is_empty() => {}
            None => others.push(block.to_string()),
        }
    }
    Ok((claims, others))
}

impl From<LockEntry> for Judged {
    fn from(entry: LockEntry) -> Judged {
        let pattern = Pattern::parse(&entry.file);
        let pattern = pattern.unwrap_or_else(|_| Pattern::parse("**").expect("`**` parses"));
        Judged { pattern, entry }
    }
}

/// `read_records` with each pattern parsed.
pub fn read_for(root: &Path) -> Result<(Vec<Judged>, Vec<String>)> {
    let (claims, others) = read_records(root)?;
    Ok((claims.into_iter().map(Judged::from).collect(), others))
}

/// Every claim, unjudged, by pattern then agent, and the records without a pattern.
pub fn read_all(root: &Path) -> Result<(Vec<LockEntry>, Vec<String>)> {
    let (mut all, others) = read_records(root)?;
    all.sort_by(|a, b| a.file.cmp(&b.file).then_with(|| a.agent.cmp(&b.agent)));
    Ok((all, others))
}

/// Every claim, judged like locks (LIVE, STALE, CONFLICT) as of `now`, by pattern then agent;
/// a file that cannot be read is an error (its claims still hold).
pub(super) fn try_judged(
    root: &Path,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Result<Vec<LockEntry>> {
    let mut all = read_all(root)?.0;
    classify(root, &mut all, cache, now);
    Ok(all)
}

/// Every claim, judged as of `now`, with its pattern; a file that cannot be read is an error.
pub fn judged_patterns(
    root: &Path,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Result<Vec<Judged>> {
    let all = try_judged(root, cache, now)?;
    Ok(all.into_iter().map(Judged::from).collect())
}

/// [`judged_patterns`] for a view: none from a file that cannot be read, which is named instead
/// (its claims still hold: taking and releasing refuse, but no view can show them).
pub fn judged_or_unreadable(
    root: &Path,
    cache: &mut StateCache,
    now: &Timestamp,
) -> (Vec<Judged>, Option<crate::presence::Unreadable>) {
    // Named as `read_records` refused it, so that the view and the refusal never disagree.
    match judged_patterns(root, cache, now) {
        Ok(all) => (all, None),
        Err(crate::error::Error::Io { path, source, .. }) => {
            let shared = crate::worktree::shared_root(root);
            let rel = path.strip_prefix(&shared).unwrap_or(&path);
            let path = rel.display().to_string();
            let why = source.to_string();
            (Vec::new(), Some(crate::presence::Unreadable { path, why }))
        }
        Err(_) => (Vec::new(), None),
    }
}

/// Rewrite `.coord/claims` to hold exactly `records`, in their order. Caller holds the mutex.
pub(super) fn write_all(root: &Path, records: &[String]) -> Result<()> {
    let path = layout::claims_file(&crate::worktree::shared_root(root));
    if records.is_empty() {
        return fsutil::remove(&path).map(drop);
    }
    let text: Vec<String> = (records.iter())
        .map(|r| format!("{}\n", r.trim_end_matches('\n')))
        .collect();
    fsutil::replace(&path, text.join("\n").as_bytes())
}

/// A claim's record as it was read (rewritten as is).
pub(super) fn raw_text(e: &LockEntry) -> String {
    String::from_utf8_lossy(e.raw.as_deref().unwrap_or_default()).into_owned()
}

/// One record of `.coord/claims`, unjudged (`None` without a pattern).
fn parse_block(path: &Path, block: &str) -> Option<LockEntry> {
    let record = Record::parse(block);
    let pattern = record.get_nonempty("pattern")?.to_string();
    let id = (record.get_nonempty("id")).or_else(|| record.get_nonempty("Agent"));
    let agent = id.map(str::to_ascii_lowercase).unwrap_or_default();
    let raw = Some(block.as_bytes().to_vec());
    Some(LockEntry::new(path.to_path_buf(), pattern, agent, raw))
}

/// The holder of claim `e` as a refusal names it, with its work tree when not `root`.
pub fn holder_text(root: &Path, e: &LockEntry) -> String {
    let tree = e.field("worktree").filter(|w| Path::new(w) != root);
    let place = tree.map(|w| format!(", {}", crate::worktree::place(w, e.field("branch"))));
    let place = place.unwrap_or_default();
    format!("{} (claim `{}`{place})", e.holder(), e.file)
}

/// Which claims a release gives back.
pub enum Which<'a> {
    /// All ours.
    All,
    /// Ours on these patterns, and with `true` (`--force`) the STALE ones of others.
    Patterns(&'a [Pattern], bool),
    /// Ours by (pattern, token), by compare-and-delete.
    Tokens(&'a [(String, String)]),
}

/// Release here only (`record`: in the history, and with what was published on the remote): one
/// hold of the mutex reads, judges and rewrites `.coord/claims` without the claims gone (the
/// others kept as they were).
pub(super) fn release_here(
    ws: &Workspace,
    agent: &crate::workspace::AgentId,
    which: Which<'_>,
    record: bool,
) -> Result<Here> {
    let root = ws.root();
    let nothing = match which {
        Which::All => !layout::claims_file(&crate::worktree::shared_root(root)).exists(),
        Which::Tokens(held) => held.is_empty(),
        Which::Patterns(..) => false,
    };
    if nothing {
        return Ok((Vec::new(), Vec::new()));
    }
    let _mutex = ws.lock_mutex()?;
    let (mut all, mut records) = read_all(root)?;
    let me = agent.id();
    let mut gone = vec![false; all.len()];
    let (mut out, mut marked) = (Vec::new(), Vec::new());
    if !matches!(which, Which::Tokens(_)) {
        classify(root, &mut all, &mut StateCache::default(), &clock::now());
    }
    match which {
        Which::All => {
            for i in (0..all.len()).filter(|&i| all[i].agent == me) {
                // Another live process of ours holds it: not ours to give back.
                if held_elsewhere(&all[i]).is_some() {
                    continue;
                }
                let outcome = ours(&all, i, &mut gone, &mut marked);
                out.push(Release::new(&all[i].file, true, outcome));
            }
        }
        Which::Patterns(list, force) => {
            for p in list {
                let same: Vec<usize> = (0..all.len())
                    .filter(|&i| all[i].file == p.as_str())
                    .collect();
                let outcome = match super::release::verdict(&same, |&i| &all[i], me, force) {
                    Ok(j) => match held_elsewhere(&all[same[j]]) {
                        Some(held) => held,
                        None => ours(&all, same[j], &mut gone, &mut marked),
                    },
                    Err(forced @ ReleaseOutcome::ForcedStale { .. }) => {
                        same.iter().for_each(|&i| gone[i] = true);
                        forced
                    }
                    Err(other) => other,
                };
                out.push(Release::new(p.as_str(), true, outcome));
            }
        }
        Which::Tokens(held) => {
            for (pattern, token) in held {
                let found =
                    (0..all.len()).find(|&i| !gone[i] && is_ours(&all[i], me, pattern, token));
                let outcome = found.map_or(ReleaseOutcome::Lost, |i| {
                    ours(&all, i, &mut gone, &mut marked)
                });
                out.push(Release::new(pattern, true, outcome));
            }
        }
    }
    if gone.iter().any(|g| *g) {
        let keep = (all.iter().zip(&gone)).filter(|(_, g)| !**g);
        records.extend(keep.map(|(e, _)| raw_text(e)));
        write_all(root, &records)?;
    }
    if record {
        super::events::released(root, agent, &out);
    }
    Ok((out, if record { marked } else { Vec::new() }))
}

fn is_ours(e: &LockEntry, me: &str, pattern: &str, token: &str) -> bool {
    e.agent == me && e.file == pattern && e.token() == Some(token)
}

/// Our claim `all[i]` is released (it goes, and is marked if published on the remote).
fn ours(all: &[LockEntry], i: usize, gone: &mut [bool], marks: &mut Vec<Marked>) -> ReleaseOutcome {
    gone[i] = true;
    marks.extend(Marked::of(&all[i], true));
    ReleaseOutcome::Released
}

/// Add `keys` to our claims `held` (pattern, token), under the mutex; those not found returned.
pub(super) fn mark(
    ws: &Workspace,
    agent: &crate::workspace::AgentId,
    held: &[(String, String)],
    keys: &[(&str, &str)],
) -> Result<Vec<Pattern>> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let root = ws.root();
    let (all, mut records) = read_records(root)?;
    let mut found = vec![false; held.len()];
    for e in &all {
        let ours =
            (held.iter()).position(|(pattern, token)| is_ours(e, agent.id(), pattern, token));
        match ours {
            Some(i) => {
                found[i] = true;
                let mut rec = e.record.clone().unwrap_or_else(Record::new);
                for (k, v) in keys {
                    rec.set(k, v);
                }
                records.push(rec.render());
            }
            None => records.push(raw_text(e)),
        }
    }
    if found.iter().any(|f| *f) {
        write_all(root, &records)?;
    }
    Ok((held.iter().zip(found))
        .filter(|(_, f)| !f)
        .filter_map(|((p, _), _)| Pattern::parse(p).ok())
        .collect())
}
