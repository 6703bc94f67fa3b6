//! Starting a review: `coord review new`.
//!
//! Rules: a topic names one review ever (an active or closed tracker for it refuses a second);
//! reviewer and implementer are two different agents; the target exists. The new tracker plans
//! step 01 (review) for the reviewer with a prompt coord writes, and is parsed before it is
//! written, so coord never writes a tracker it cannot read back. The seed's template is put
//! beside the trackers the first time.

use super::Reviews;
use super::meta_date;
use super::prompts::PromptParts;
use crate::clock;
use crate::error::Refusal;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout;
use crate::review::template::{NewTracker, TEMPLATE, new_tracker_text};
use crate::review::tracker::Tracker;
use crate::review::{Action, check_topic};
use crate::workspace::{AgentId, Target};

/// A new review.
#[derive(Debug, Clone)]
pub struct NewReview<'a> {
    /// The topic (becomes part of file names).
    pub topic: &'a str,
    /// What is reviewed.
    pub target: &'a Target,
    /// Who reviews.
    pub reviewer: &'a AgentId,
    /// Who implements.
    pub implementer: &'a AgentId,
}

impl Reviews {
    /// Start a review: the tracker (and the template when missing).
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for a bad topic, a missing target or one agent in both roles;
    /// [`Error::Refused`] when a tracker for TOPIC exists (active or closed).
    pub fn create(&self, req: &NewReview<'_>) -> Result<String> {
        check_topic(req.topic)?;
        if req.reviewer.id() == req.implementer.id() {
            return Err(Error::bad_input(format!(
                "`{}` cannot be both reviewer and implementer: a review needs two participants",
                req.reviewer.name()
            )));
        }
        let meta = std::fs::symlink_metadata(&req.target.abs).map_err(|_| {
            Error::bad_input(format!(
                "the review target `{}` does not exist",
                req.target.rel
            ))
        })?;
        let target = if meta.is_dir() {
            format!("{}/", req.target.rel)
        } else {
            req.target.rel.clone()
        };
        let _guard = self.ws.lock_mutex()?;
        let path = self.active_path(req.topic);
        for existing in [&path, &self.closed_path(req.topic)] {
            if fsutil::mtime(existing).is_some() {
                return Err(Error::refused(
                    Refusal::ReviewExists,
                    format!(
                        "review `{}` already exists: `{}`",
                        req.topic,
                        self.meta_rel_path(existing)
                    ),
                    Some(format!(
                        "see it with `coord review show {}`, or choose another topic",
                        req.topic
                    )),
                ));
            }
        }
        let template = layout::review_template(&self.meta);
        if let Some(dir) = template.parent() {
            fsutil::ensure_dir(dir)?;
        }
        fsutil::create_new(&template, TEMPLATE.as_bytes())?;
        fsutil::ensure_dir(&self.active_dir())?;
        let now = clock::now();
        let rel = self.meta_rel_path(&path);
        let prompt = self.generated_prompt(&PromptParts {
            topic: req.topic,
            tracker: &rel,
            target: &target,
            actor: req.reviewer.name(),
            actor_id: req.reviewer.id(),
            role: Some("reviewer"),
            other_id: req.implementer.id(),
            step: 1,
            action: Action::Review,
            now: &now,
        });
        let text = new_tracker_text(&NewTracker {
            topic: req.topic,
            target: &target,
            date: &meta_date(&now),
            reviewer: req.reviewer.name(),
            implementer: req.implementer.name(),
            prompt: &prompt,
        });
        // Parse what we are about to write: a tracker coord cannot read back is never written.
        Tracker::parse(&path, &text)?;
        fsutil::replace_durable(&path, text.as_bytes())?;
        Ok(rel)
    }
}
