//! Closing a review: `coord review close`.
//!
//! Rules: a review closes only when every issue is resolved or wontfix, the last finished step
//! is a verify step that is done, and no step is in progress ([`Reviews::missing_for_close`]
//! says what is missing); and only when no earlier review of the topic was closed. Then an open
//! step becomes `no_action` (`Review closed`), Meta status `closed`, next actor `none`, and the
//! tracker moves to `reviews/closed/` with its archive. With `--commit`, the work is committed
//! afterwards with the seed's message; a failed commit leaves the review closed and says so.

use serde::Serialize;

use super::Reviews;
use crate::clock::{self, Timestamp};
use crate::error::Refusal;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout;
use crate::review::commit::{commit_message, git_check, git_commit};
use crate::review::model::View;
use crate::review::tracker::Tracker;
use crate::review::{Action, StepStatus};

/// Options of `close --commit`.
#[derive(Debug, Clone, Default)]
pub struct CommitRequest {
    /// The summary after `{topic} review: ` (a default is derived from the issues).
    pub summary: Option<String>,
}

/// What `close` did.
#[derive(Debug, Clone, Serialize)]
pub struct Closed {
    /// The closed tracker, relative to the root.
    pub tracker: String,
    /// The archive moved along, if any.
    pub archive: Option<String>,
    /// The commit made with `--commit`.
    pub commit: Option<CommitInfo>,
}

/// A commit made by `close --commit`.
#[derive(Debug, Clone, Serialize)]
pub struct CommitInfo {
    /// The commit id.
    pub id: String,
    /// The message.
    pub message: String,
}

impl Reviews {
    /// What keeps TOPIC's review from closing (empty when nothing does).
    pub fn missing_for_close(view: &View) -> Vec<String> {
        let mut missing = Vec::new();
        for i in &view.issues {
            if !i.status.is_settled() {
                missing.push(format!("{} is {}", i.id, i.status.as_str()));
            }
        }
        let last = view
            .steps
            .iter()
            .rev()
            .find(|s| !s.status.is_open() && s.status != StepStatus::NoAction);
        match last {
            None => missing.push("no step is finished yet (a verify step must be done)".into()),
            Some(s) if s.action != Some(Action::Verify) => missing.push(format!(
                "the last finished step {:02} is {}, not a verify step",
                s.number,
                s.action.map_or("without an action", Action::as_str)
            )),
            Some(s) if s.status != StepStatus::Done => missing.push(format!(
                "the last verify step {:02} is {}, not done",
                s.number,
                s.status.as_str()
            )),
            Some(_) => {}
        }
        if let Some(s) = view
            .steps
            .last()
            .filter(|s| s.status == StepStatus::InProgress)
        {
            missing.push(format!("step {:02} is in progress ({})", s.number, s.actor));
        }
        missing
    }

    /// Close a review: check the completion criteria, set status closed and next actor none,
    /// move the tracker (and its archive) to `reviews/closed/`, and with `commit` make the commit.
    ///
    /// # Errors
    ///
    /// [`Error::ReviewUnfinished`] naming what is missing; [`Error::Refused`] when a closed
    /// tracker for TOPIC exists already; [`Error::BadInput`] with `commit` outside a git work
    /// tree. Nothing is written in these cases.
    pub fn close(&self, topic: &str, commit: Option<&CommitRequest>) -> Result<Closed> {
        if commit.is_some() {
            git_check(self.ws.root())?;
        }
        let (guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        let missing = Reviews::missing_for_close(t.view());
        if !missing.is_empty() {
            return Err(Error::ReviewUnfinished {
                topic: topic.to_string(),
                missing,
            });
        }
        let closed_path = self.closed_path(topic);
        if fsutil::mtime(&closed_path).is_some() {
            return Err(Error::refused(
                Refusal::ReviewExists,
                format!(
                    "`{}` exists already: an earlier review `{topic}` was closed",
                    self.meta_rel_path(&closed_path)
                ),
                Some("move that file aside, then close again".into()),
            ));
        }
        let archive = self.move_to_closed(topic, &mut t, &now)?;
        drop(guard);
        let commit = match commit {
            None => None,
            Some(req) => Some(self.commit_closed(topic, t.view(), req)?),
        };
        Ok(Closed {
            tracker: self.meta_rel_path(&closed_path),
            archive,
            commit,
        })
    }

    /// Mark the tracker closed and move it (and its archive, whose new place is returned) to
    /// `reviews/closed/`; the mutex is held.
    fn move_to_closed(
        &self,
        topic: &str,
        t: &mut Tracker,
        now: &Timestamp,
    ) -> Result<Option<String>> {
        let active_path = t.path().to_path_buf();
        if let Some(open) = t.view().open_step().cloned() {
            t.set_step(
                open.number,
                &[
                    ("Status", StepStatus::NoAction.as_str()),
                    ("Summary", "Review closed"),
                ],
            )?;
        }
        t.set_meta(&[("Status", "closed")])?;
        t.set_current(&[
            ("Next actor", "none"),
            ("Next action", "none (review closed)"),
        ])?;
        fsutil::ensure_dir(&self.closed_dir())?;
        t.set_path(self.closed_path(topic));
        self.finish(t, now)?;
        let archive = layout::review_archive(&self.active_dir(), topic);
        let mut moved_archive = None;
        if fsutil::mtime(&archive).is_some() {
            let dest = layout::review_archive(&self.closed_dir(), topic);
            fsutil::rename(&archive, &dest)?;
            moved_archive = Some(self.meta_rel_path(&dest));
        }
        fsutil::remove(&active_path)?;
        fsutil::sync_dir(&self.active_dir())?;
        Ok(moved_archive)
    }

    /// Commit the closed review: the metadata folder, the target and every step's input and
    /// output that exist, with the seed's message.
    fn commit_closed(&self, topic: &str, view: &View, req: &CommitRequest) -> Result<CommitInfo> {
        let message = commit_message(topic, view, req.summary.as_deref());
        let mut paths = vec![self.meta_rel.clone()];
        if let Some(target) = &view.meta.target {
            paths.push(target.trim_end_matches('/').to_string());
        }
        for s in &view.steps {
            paths.extend(s.input.iter().chain(s.output.iter()).cloned());
        }
        paths.retain(|p| !p.is_empty() && self.ws.root().join(p).exists());
        paths.sort();
        paths.dedup();
        let id = git_commit(self.ws.root(), &paths, &message).map_err(|e| Error::Failed {
            message: format!(
                "review `{topic}` is closed, but the commit failed: {e}; commit by hand with the message:\n{message}"
            ),
        })?;
        Ok(CommitInfo { id, message })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::IssueStatus;
    use crate::review::fixtures::{issue, view_with};

    #[test]
    fn close_criteria() {
        let done = StepStatus::Done;
        let v = view_with(
            vec![issue("ISSUE-01", IssueStatus::Open, None)],
            vec![
                (Action::Review, done),
                (Action::Implement, done),
                (Action::Verify, StepStatus::Planned),
            ],
        );
        let m = Reviews::missing_for_close(&v);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].contains("ISSUE-01 is open"));
        assert!(m[1].contains("step 02 is implement"));
        let v = view_with(
            vec![issue("ISSUE-01", IssueStatus::Wontfix, None)],
            vec![
                (Action::Verify, StepStatus::Blocked),
                (Action::Fix, StepStatus::Planned),
            ],
        );
        assert!(Reviews::missing_for_close(&v)[0].contains("blocked"));
        let v = view_with(
            vec![issue("ISSUE-01", IssueStatus::Resolved, None)],
            vec![(Action::Verify, done), (Action::Fix, StepStatus::Planned)],
        );
        assert!(Reviews::missing_for_close(&v).is_empty());
        let v = view_with(vec![], vec![(Action::Review, StepStatus::Planned)]);
        assert!(Reviews::missing_for_close(&v)[0].contains("no step is finished"));
    }

    #[test]
    fn a_step_in_progress_keeps_a_review_open() {
        let v = view_with(
            vec![],
            vec![
                (Action::Verify, StepStatus::Done),
                (Action::Fix, StepStatus::InProgress),
            ],
        );
        assert_eq!(
            Reviews::missing_for_close(&v),
            ["step 02 is in progress (Claude)"]
        );
        let v = view_with(
            vec![],
            vec![
                (Action::Verify, StepStatus::Done),
                (Action::Fix, StepStatus::NoAction),
            ],
        );
        assert!(Reviews::missing_for_close(&v).is_empty());
    }
}
