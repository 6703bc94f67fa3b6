//! The live view behind `coord watch`: look at the workspace, wait for a change, say what changed.

use std::path::PathBuf;

use crate::layout;
use crate::message::{self, Message};
use crate::status::{self, Status};
use crate::workspace::Workspace;

pub mod change;

pub use change::{Change, diff};

/// The workspace at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Everything `coord status` shows.
    pub status: Status,
    /// The messages sent so far (bodies left out).
    pub messages: Vec<Message>,
}

/// Look at the workspace now.
pub fn snapshot(ws: &Workspace) -> Snapshot {
    let (messages, _) = message::scan(ws.root()).unwrap_or_default();
    Snapshot {
        status: status::collect(ws),
        messages: (messages.into_iter())
            .map(|m| Message {
                body: String::new(),
                ..m
            })
            .collect(),
    }
}

/// The folders whose changes `coord watch` wakes on, for the workspace as `snap` saw it (`None`:
/// before a first look): the root, coord's state folders, the wait queues, the dialogue, the
/// open reviews, and the folders of the locks seen (a lock made by hand going away).
pub fn watched_folders(ws: &Workspace, snap: Option<&Snapshot>) -> Vec<PathBuf> {
    let root = ws.root();
    let shared = crate::worktree::shared_root(root);
    let queues = layout::queue_root(&shared);
    let mut dirs = vec![
        root.to_path_buf(),
        layout::state_dir(&shared),
        layout::held_dir(&shared),
        layout::messages_dir(&shared),
        layout::partners_dir(&shared),
        layout::review_active_dir(&root.join(layout::REVIEW_METADATA_DIR)),
    ];
    if let Ok(entries) = crate::fsutil::read_dir(&queues) {
        dirs.extend(entries.flatten().map(|q| q.path()));
    }
    dirs.push(queues);
    let status = snap.map(|s| &s.status);
    if let Some(d) = status.and_then(|s| s.dialogue.as_ref()) {
        dirs.push(root.join(&d.folder));
    }
    for lock in status.iter().flat_map(|s| &s.locks) {
        if let Some(dir) = root.join(&lock.lock_file).parent() {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs
}
