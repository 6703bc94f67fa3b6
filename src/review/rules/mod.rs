//! The review protocol: who may do what to a tracker, and when.
//!
//! - Ownership: only the actor of the open (planned) step may finish it; anyone else is refused
//!   (`step`).
//! - Single actor handoff: every finished step names exactly one next actor, who gets the next
//!   planned step, the Current State, and the prompt copied from the output file (`step`).
//! - Output files must exist and end with a `## Handoff Prompt for Next Actor` section.
//! - `Last updated` is set on every edit (`store`).
//! - Archive policy: once there are more than 20 steps, steps 01–10 move to
//!   `TOPIC-tracker-archive.md` beside the tracker, the rest are renumbered from 01, and the
//!   Steps section opens with `Note: Steps 01-10 archived to TOPIC-tracker-archive.md` (after a
//!   second archiving, `01-20`, and so on: the note names every step the archive holds)
//!   (`archive`).
//! - Completion: a review closes only when every issue is resolved or wontfix and the last
//!   finished step is a verify step that is done; then Meta status `closed`, next actor `none`,
//!   and the tracker (with its archive) moves to `reviews/closed/` (`close`).
//!
//! This module holds [`Reviews`], the handle on one metadata folder, and the paths inside it.
//! Each command is an `impl Reviews` block of its own: `create` starts a review, `step`
//! finishes a step, `issues` edits the Issues table and the Agreements Log, `close` closes,
//! `prompts` says who is next and what to paste to them. `store` is the read-modify-write
//! they all go through: every edit happens under the workspace mutex, the tracker is read,
//! checked, edited and replaced durably before the mutex is released, so concurrent commands
//! serialize and none loses another's update. A tracker that someone holds a live `coord lock`
//! on (an agent editing it by hand under Protocol V3) is not written either.

mod archive;
mod close;
mod create;
mod issues;
mod prompts;
mod step;
mod store;

use std::path::{Path, PathBuf};

pub use archive::{ARCHIVED_AT_ONCE, MAX_STEPS};
pub use close::{Closed, CommitInfo, CommitRequest};
pub use create::NewReview;
pub use prompts::Next;
pub use step::{StepOutcome, StepRequest, usual_next};
pub use store::{FILE_CAP, ReviewSummary, Shown, open_reviews};

use crate::clock::Timestamp;
use crate::layout;
use crate::workspace::{AgentId, Workspace};

/// The review metadata folder of a workspace.
#[derive(Debug, Clone)]
pub struct Reviews {
    ws: Workspace,
    meta: PathBuf,
    meta_rel: String,
    actor: Option<AgentId>,
}

impl Reviews {
    /// The metadata folder `meta` (absolute, inside the workspace) of `ws`.
    pub fn new(ws: &Workspace, meta: PathBuf) -> Reviews {
        let meta_rel = ws
            .rel(&meta)
            .unwrap_or_else(|| layout::REVIEW_METADATA_DIR.to_string());
        Reviews {
            ws: ws.clone(),
            meta,
            meta_rel,
            actor: None,
        }
    }

    /// The agent running the commands, when known: its own `coord lock` on a tracker does not
    /// keep it from editing.
    pub fn acting_as(mut self, actor: Option<AgentId>) -> Reviews {
        self.actor = actor;
        self
    }

    /// The default metadata folder, `<root>/.metadata`.
    pub fn default_for(ws: &Workspace) -> Reviews {
        Reviews::new(ws, ws.root().join(layout::REVIEW_METADATA_DIR))
    }

    /// The metadata folder.
    pub fn meta(&self) -> &Path {
        &self.meta
    }

    fn active_dir(&self) -> PathBuf {
        layout::review_active_dir(&self.meta)
    }

    fn closed_dir(&self) -> PathBuf {
        layout::review_closed_dir(&self.meta)
    }

    /// `reviews/active/TOPIC-tracker.md`.
    pub fn active_path(&self, topic: &str) -> PathBuf {
        layout::review_tracker(&self.active_dir(), topic)
    }

    /// `reviews/closed/TOPIC-tracker.md`.
    pub fn closed_path(&self, topic: &str) -> PathBuf {
        layout::review_tracker(&self.closed_dir(), topic)
    }

    /// A path relative to the root, for messages and output.
    pub fn rel(&self, path: &Path) -> String {
        self.ws
            .rel(path)
            .unwrap_or_else(|| path.display().to_string())
    }

    /// A path relative to the root, in the metadata folder's own spelling.
    fn meta_rel_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.meta) {
            Ok(rest) => format!("{}/{}", self.meta_rel, rest.display()),
            Err(_) => self.rel(path),
        }
    }
}

/// `YYYY-MM-DD`, as Meta writes dates.
pub fn meta_date(now: &Timestamp) -> String {
    now.format("%Y-%m-%d").to_string()
}
