//! Cleaning up after finished agents (`coord prune`, contract §11).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::clock;
use crate::error::Result;
use crate::fsutil;
use crate::history;
use crate::layout;
use crate::lock;
use crate::presence::{self, AgentState};
use crate::stamp::{self, RowStatus};
use crate::workspace::Workspace;
use crate::worktree::shared_root;

/// A presence silent this long counts as finished (its session crashed).
pub const GONE_AFTER: Duration = Duration::from_secs(86_400);

/// What a prune removed (or would remove).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pruned {
    /// Whether nothing was removed (`--dry-run`).
    pub dry_run: bool,
    /// The agents whose traces were removed.
    pub agents: Vec<String>,
    /// The files and folders removed, relative to the root.
    pub removed: Vec<String>,
    /// The agents kept (live, or holding locks or tickets).
    pub kept: Vec<String>,
    /// History events dropped for their age.
    pub history_events: usize,
}

/// Remove what finished agents left.
pub fn prune(ws: &Workspace, dry_run: bool) -> Result<Pruned> {
    let root = ws.root();
    let mut out = Pruned {
        dry_run,
        ..Default::default()
    };
    let shared = shared_root(root);
    if !layout::state_dir(&shared).is_dir() {
        return Ok(out);
    }
    let _mutex = ws.lock_mutex()?;
    let now = clock::now();
    let (presences, _) = presence::scan(root);
    let (rows, _) = stamp::scan(root);
    // Whoever holds a lock file or stands in a queue is kept, whatever its presence says.
    let queues = read_dir(&layout::queue_root(&shared));
    let waiter = |t: PathBuf| Some(layout::parse_ticket(t.file_name()?.to_str()?)?.1.to_owned());
    let mut busy: BTreeSet<String> = lock::scan_tree(ws).into_iter().map(|e| e.agent).collect();
    busy.extend(queues.iter().flat_map(|q| read_dir(q)).filter_map(waiter));
    let online = |r: &&stamp::Row| r.status == RowStatus::Online && r.crash_reason(&now).is_none();
    busy.extend(rows.iter().filter(online).map(|r| r.partner_name.clone()));
    let mut agents: BTreeSet<String> = presences.iter().map(|p| p.id.clone()).collect();
    agents.extend(rows.iter().map(|r| r.partner_name.clone()));
    for agent in agents {
        // No presence (rows only): a partner whose presence is already gone.
        let presence = presences.iter().find(|p| p.id == agent);
        let finished = presence.is_none_or(|p| match p.state(&now) {
            AgentState::Finished => true,
            AgentState::Active => false,
            AgentState::Inactive => {
                (p.heartbeat()).is_none_or(|h| clock::age(&now, &h) > GONE_AFTER)
            }
        });
        if !finished || busy.contains(&agent) {
            out.kept.push(agent);
            continue;
        }
        let mut gone = vec![layout::presence(&shared, &agent)];
        for r in rows.iter().filter(|r| r.partner_name == agent) {
            gone.extend([
                layout::partner_row(&shared, r.id),
                layout::partner_open(&shared, r.id),
            ]);
        }
        gone.extend([
            layout::needs_user(&shared, &agent),
            layout::shell_start(&shared, &agent),
        ]);
        gone.retain(|p| std::fs::symlink_metadata(p).is_ok());
        if !dry_run {
            for p in &gone {
                fsutil::remove(p)?;
            }
        }
        let marks = layout::read_marks_dir(&shared, &agent);
        if marks.is_dir() {
            // A folder of plain files, never following a link.
            if !dry_run {
                for p in read_dir(&marks) {
                    fsutil::remove(&p)?;
                }
                fsutil::raw::remove_empty_dir(&marks);
            }
            gone.push(marks);
        }
        if !gone.is_empty() {
            out.agents.push(agent);
            out.removed.extend(gone.iter().filter_map(|p| ws.rel(p)));
        }
    }
    if !crate::lock::queue::keeps_folders(root) {
        for dir in &queues {
            let queue = dir.file_name().and_then(|n| n.to_str());
            if queue.is_some_and(|n| n.starts_with("q-"))
                && std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
                && read_dir(dir).is_empty()
            {
                if !dry_run {
                    fsutil::raw::remove_empty_dir(dir);
                }
                out.removed.extend(ws.rel(dir));
            }
        }
    }
    // Entries of coord's index of locks whose lock file is gone (removed by hand, or with its
    // work tree): nothing holds them, and a view would only look them up again.
    let entries = lock::forget_gone(root, dry_run);
    out.removed.extend(entries.iter().filter_map(|p| ws.rel(p)));
    drop(_mutex);
    out.history_events = history::trim(root, dry_run)?;
    Ok(out)
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    crate::fsutil::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}
