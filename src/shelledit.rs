//! Edits the edit tools did not make (contract §8): a shell command (`sed -i`, `git checkout`)
//! changes files without a client's edit hook, so no lock is asked for. When a shell tool call
//! starts, [`start`] records the time and the stat data of every file another agent holds; when
//! it has run, [`changed`] looks at them again, and the agent is told which its command changed.
//!
//! A file counts as changed when its inode, size, mtime or ctime differ from the start; one
//! locked while the command ran, when its ctime is not older than the start (the record's own
//! mtime: one clock, the filesystem's). A change is put down to the holder when its lock record
//! was rewritten after the change (its post-edit hook renews the lock).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fsutil::{self, Stat};
use crate::guard::{self, Held};
use crate::layout;
use crate::lock;
use crate::workspace::{AgentId, Workspace};

const RECORD_CAP: u64 = 4 * 1024 * 1024;

/// What [`start`] records: each file others held (`None`: it did not exist).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Start {
    files: BTreeMap<String, Option<Stat>>,
}

/// The files another agent holds `LIVE` now: of the paths `.coord/held/` names for others, those
/// [`guard::held_in`] finds held.
fn held_by_others(ws: &Workspace, me: &AgentId) -> Result<Vec<Held>> {
    let mut paths: Vec<String> = lock::indexed(ws.root())
        .into_iter()
        .filter(|(_, agent)| agent != me.id())
        .map(|(rel, _)| rel)
        .collect();
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    paths.sort();
    paths.dedup();
    let targets: Vec<_> = (paths.iter())
        .filter_map(|p| ws.target_from_rel(p).ok())
        .collect();
    let mut held = guard::held_in(ws, &targets, Some(me))?;
    held.sort_by(|a, b| a.file.cmp(&b.file));
    held.dedup_by(|a, b| a.file == b.file);
    Ok(held)
}

/// A shell tool call of `agent` starts: record the held files as they are. The record is written
/// even when none is held: its mtime is the start.
pub fn start(ws: &Workspace, agent: &AgentId) -> Result<()> {
    let path = layout::shell_start(&crate::worktree::shared_root(ws.root()), agent.id());
    let held = held_by_others(ws, agent)?;
    let record = Start {
        files: held
            .iter()
            .map(|h| (h.file.clone(), Stat::read(&ws.root().join(&h.file))))
            .collect(),
    };
    let bytes = serde_json::to_vec(&record).unwrap_or_default();
    if fsutil::touch_if_same(&path, &bytes) {
        return Ok(());
    }
    fsutil::ensure_dir(fsutil::parent_of(&path))?;
    fsutil::replace(&path, &bytes)
}

/// A shell tool call of `agent` has run: the held files it changed, each with how (`modified`,
/// `created` or `deleted`). The start record is used up (mtime set to the epoch); without one,
/// or with claims that cannot be read (the start warned of them), nothing is known to have changed.
pub fn changed(ws: &Workspace, agent: &AgentId) -> Vec<(&'static str, Held)> {
    let path = layout::shell_start(&crate::worktree::shared_root(ws.root()), agent.id());
    let (bytes, started) = match fsutil::read_capped_with_mtime(&path, RECORD_CAP) {
        Ok((bytes, Some(at))) if at != std::time::UNIX_EPOCH => (bytes, at),
        _ => return Vec::new(),
    };
    if fsutil::set_mtime_epoch(&path).is_err() {
        let _ = fsutil::remove(&path);
    }
    let started_ns = fsutil::ns_since_epoch(started);
    let record: Start = serde_json::from_slice(&bytes).unwrap_or_default();
    let mut out = Vec::new();
    for held in held_by_others(ws, agent).unwrap_or_default() {
        let now = Stat::read(&ws.root().join(&held.file));
        let how = match (record.files.get(&held.file), now) {
            (Some(Some(before)), Some(now)) if *before != now => "modified",
            (Some(Some(_)), None) => "deleted",
            (Some(None), Some(_)) => "created",
            // Locked while the command ran: changed since the start?
            (None, Some(now)) if now.ctime_ns >= started_ns => "modified",
            _ => continue,
        };
        if now.is_some_and(|n| holder_touched_after(ws, &held, &n)) {
            continue;
        }
        out.push((how, held));
    }
    out
}

/// Whether the holder's lock record on `held.file` (in any work tree) was rewritten after the
/// file changed: the holder's own post-edit hook renewing it.
fn holder_touched_after(ws: &Workspace, held: &Held, file: &Stat) -> bool {
    let Ok(holder) = AgentId::parse(&held.holder) else {
        return false;
    };
    crate::worktree::trees(ws.root()).iter().any(|tree| {
        Stat::read(&layout::lock_file(&tree.top.join(&held.file), holder.id()))
            .is_some_and(|lock| lock.ctime_ns > file.ctime_ns)
    })
}

/// The notice an agent gets after its shell command changed files others hold.
pub fn notice(changed: &[(&str, Held)], me: &AgentId) -> String {
    let now = crate::clock::now();
    let list: Vec<String> = changed
        .iter()
        .map(|(how, c)| {
            let since = lock::since_text(c.since.as_deref(), &now);
            format!("`{}` ({how}; held by {} since {since})", c.file, c.holder)
        })
        .collect();
    let first = &changed[0].1;
    let holder = AgentId::parse(&first.holder)
        .map(|a| a.id().to_string())
        .unwrap_or_else(|_| first.holder.clone());
    let (files, them) = if changed.len() == 1 {
        ("a file", "it")
    } else {
        ("files", "them")
    };
    let args: Vec<String> = changed
        .iter()
        .map(|c| crate::shell::arg(&c.1.file))
        .collect();
    format!(
        "coord: your shell command changed {files} that another agent holds: {}. That agent is editing {them}: \
         unless that change was theirs, put {them} back as it was (`git restore {}` for a tracked file, or from its `.bak`), \
         and ask before touching it again: `coord -a {} msg send {holder} \"...\"`.",
        list.join(", "),
        args.join(" "),
        me.id(),
    )
}
