//! The read-modify-write of trackers: find and read one, take the workspace mutex for an edit,
//! refuse what may not be written, stamp and replace it.
//!
//! Invariants: a tracker is read whole (capped at [`FILE_CAP`], as UTF-8, never through a
//! symlink anywhere on its path) and parsed before anything is decided; an edit starts with
//! [`Reviews::begin`], which takes the workspace mutex *before* reading, and ends with
//! [`Reviews::finish`], which replaces the file durably while that mutex is still held. A closed
//! review, and a tracker another agent holds a live `coord lock` on, are never written.

use std::io;
use std::path::Path;

use serde::Serialize;

use super::{Reviews, meta_date};
use crate::clock::{self, Timestamp};
use crate::error::Refusal;
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::review::check_topic;
use crate::review::model::View;
use crate::review::tracker::Tracker;
use crate::v3::lock::{self, LockState};
use crate::v3::presence::{StateCache, Unreadable};
use crate::workspace::{AgentId, Target, Workspace};

/// Largest tracker or output file read.
pub const FILE_CAP: u64 = 8 * 1024 * 1024;

/// One open review, for `coord status`.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewSummary {
    /// The topic.
    pub topic: String,
    /// The tracker, relative to the root.
    pub tracker: String,
    /// The next actor.
    pub next_actor: String,
    /// The next action.
    pub next_action: Option<String>,
    /// Issues not resolved or wontfix.
    pub open_issues: usize,
    /// Steps in the tracker.
    pub steps: usize,
}

/// A tracker read for showing.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    /// The topic.
    pub topic: String,
    /// The tracker, relative to the root.
    pub tracker: String,
    /// `true` when it was found in `reviews/closed/`.
    pub closed: bool,
    /// What it says.
    #[serde(flatten)]
    pub view: View,
}

impl Reviews {
    fn read_tracker(&self, path: &Path) -> Result<Option<Tracker>> {
        match read_utf8(path) {
            Ok(None) => Ok(None),
            Ok(Some(text)) => Tracker::parse(path, &text).map(Some),
            Err(e) => Err(e),
        }
    }

    /// Read TOPIC's tracker: the active one, else the closed one (`true` when closed).
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] when there is no such review; [`Error::Corrupt`] when it cannot be
    /// parsed; [`Error::Io`] when it cannot be read.
    pub fn load(&self, topic: &str) -> Result<(Tracker, bool)> {
        check_topic(topic)?;
        if let Some(t) = self.read_tracker(&self.active_path(topic))? {
            return Ok((t, false));
        }
        if let Some(t) = self.read_tracker(&self.closed_path(topic))? {
            return Ok((t, true));
        }
        Err(self.no_review(topic))
    }

    pub(super) fn no_review(&self, topic: &str) -> Error {
        Error::bad_input(format!(
            "there is no review `{topic}` (no `{}`); start one with `coord review new {topic} --target PATH --reviewer A --implementer B`",
            self.meta_rel_path(&self.active_path(topic))
        ))
    }

    /// The tracker for showing.
    ///
    /// # Errors
    ///
    /// As [`Reviews::load`].
    pub fn show(&self, topic: &str) -> Result<Shown> {
        let (t, closed) = self.load(topic)?;
        Ok(Shown {
            topic: topic.to_string(),
            tracker: self.meta_rel_path(t.path()),
            closed,
            view: t.view().clone(),
        })
    }

    /// Take the mutex and read TOPIC's active tracker for an edit by `actor`.
    pub(super) fn begin(
        &self,
        topic: &str,
        actor: Option<&AgentId>,
    ) -> Result<(crate::arbiter::Guard, Tracker)> {
        check_topic(topic)?;
        let guard = self.ws.lock_mutex()?;
        // Every tracker update starts here: sweep the temporary files that killed updates
        // left in the folder of active trackers (and archives); nothing else would.
        fsutil::sweep_temps(&self.active_dir());
        let path = self.active_path(topic);
        let Some(t) = self.read_tracker(&path)? else {
            if fsutil::mtime(&self.closed_path(topic)).is_some() {
                return Err(Error::refused(
                    Refusal::ReviewClosed,
                    format!("review `{topic}` is closed"),
                    Some(format!("see it with `coord review show {topic}`")),
                ));
            }
            return Err(self.no_review(topic));
        };
        if t.view().meta.status == "closed" {
            return Err(Error::refused(
                Refusal::ReviewClosed,
                format!(
                    "review `{topic}` is closed (`{}` says `Status: closed`)",
                    self.meta_rel_path(&path)
                ),
                None,
            ));
        }
        self.check_not_locked(&path, actor.or(self.actor.as_ref()))?;
        Ok((guard, t))
    }

    /// Refuse to write a tracker that another agent holds a live `coord lock` on.
    fn check_not_locked(&self, path: &Path, actor: Option<&AgentId>) -> Result<()> {
        let Some(rel) = self.ws.rel(path) else {
            return Ok(());
        };
        let target = Target {
            rel,
            abs: path.to_path_buf(),
        };
        let mut entries = lock::locks_of(&target);
        if entries.is_empty() {
            return Ok(());
        }
        let now = clock::now();
        let mut cache = StateCache::default();
        lock::classify(self.ws.root(), &mut entries, &mut cache, &now);
        if let Some(e) = entries
            .iter()
            .find(|e| e.state != LockState::Stale && actor.is_none_or(|a| a.id() != e.agent))
        {
            return Err(Error::LockHeld {
                file: target.rel.clone(),
                holder: e.holder().to_string(),
                since: lock::format_since(e.since.as_ref(), &now),
                working_on: e.reason().map(str::to_string),
            });
        }
        Ok(())
    }

    /// Stamp `Last updated` and replace the tracker durably (the mutex is still held).
    pub(super) fn finish(&self, t: &mut Tracker, now: &Timestamp) -> Result<()> {
        t.set_meta(&[("Last updated", &meta_date(now))])?;
        fsutil::replace_durable(t.path(), t.render().as_bytes())
    }
}

/// Read a whole file as UTF-8 (capped, no symlink followed). `Ok(None)` when it does not exist.
pub(super) fn read_utf8(path: &Path) -> Result<Option<String>> {
    // O_NOFOLLOW guards only the last component: a symlinked `.metadata` or `reviews/active`
    // would still lead the read (and the replace that follows it) outside the workspace.
    if let Some(link) = fsutil::linked_ancestor(path) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "is a symlink (not followed)",
        ))
        .at("read through", &link);
    }
    let bytes = match fsutil::read_capped(path, FILE_CAP) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at("read", path),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(Error::Corrupt {
                path: path.to_path_buf(),
                line: Some(line),
                why: "it is not UTF-8 text".into(),
            })
        }
    }
}

/// Every open review under the default metadata folder, for `coord status`. Trackers that
/// cannot be read are listed apart. Reading only.
pub fn open_reviews(ws: &Workspace) -> (Vec<ReviewSummary>, Vec<Unreadable>) {
    let reviews = Reviews::default_for(ws);
    let mut found = Vec::new();
    let mut bad = Vec::new();
    let Ok(entries) = crate::fsutil::read_dir(reviews.active_dir()) else {
        return (found, bad);
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    for name in names {
        let Some(topic) = layout::review_tracker_topic(&name) else {
            continue;
        };
        let path = reviews.active_path(topic);
        match reviews.read_tracker(&path) {
            Ok(Some(t)) if t.view().meta.status != "closed" => {
                let v = t.view();
                found.push(ReviewSummary {
                    topic: topic.to_string(),
                    tracker: reviews.meta_rel_path(&path),
                    next_actor: v.current.next_actor.clone(),
                    next_action: v.current.next_action.clone(),
                    open_issues: v.issues.iter().filter(|i| !i.status.is_settled()).count(),
                    steps: v.steps.len(),
                });
            }
            Ok(_) => {}
            Err(e) => bad.push(Unreadable {
                path: reviews.meta_rel_path(&path),
                why: e.to_string(),
            }),
        }
    }
    (found, bad)
}
