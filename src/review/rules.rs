//! The review protocol's rules, and the read-modify-write of trackers.
//!
//! - Ownership: only the actor of the open (planned) step may finish it; anyone else is refused.
//! - Single actor handoff: every finished step names exactly one next actor, who gets the next
//!   planned step, the Current State, and the prompt copied from the output file.
//! - Output files must exist and end with a `## Handoff Prompt for Next Actor` section.
//! - `Last updated` is set on every edit.
//! - Archive policy: once there are more than 20 steps, steps 01–10 move to
//!   `TOPIC-tracker-archive.md` beside the tracker, the rest are renumbered from 01, and the
//!   Steps section opens with `Note: Steps 01-10 archived to TOPIC-tracker-archive.md` (after a
//!   second archiving, `01-20`, and so on: the note names every step the archive holds).
//! - Completion: a review closes only when every issue is resolved or wontfix and the last
//!   finished step is a verify step that is done; then Meta status `closed`, next actor `none`,
//!   and the tracker (with its archive) moves to `reviews/closed/`.
//!
//! Every edit happens under the workspace mutex: the tracker is read, checked, edited and
//! replaced durably before the mutex is released, so concurrent commands serialize and none
//! loses another's update. A tracker that someone holds a live `coord lock` on (an agent editing
//! it by hand under Protocol V3) is not written either.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::commit::{commit_message, git_check, git_commit};
use super::paths::{self, Kind, NameParts};
use super::tracker::{self, Issue, NewTracker, Step, Tracker, View};
use super::{Action, IssueStatus, Severity, StepStatus, check_topic, one_line};
use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::v3::lock::{self, LockState};
use crate::v3::presence::{StateCache, Unreadable};
use crate::workspace::{AgentId, Target, Workspace};

/// Largest tracker or output file read.
pub const FILE_CAP: u64 = 8 * 1024 * 1024;

/// Steps kept in a tracker before the archive policy applies.
pub const MAX_STEPS: usize = 20;

/// Steps moved to the archive at once.
pub const ARCHIVED_AT_ONCE: usize = 10;

/// The review metadata folder of a workspace.
#[derive(Debug, Clone)]
pub struct Reviews {
    ws: Workspace,
    meta: PathBuf,
    meta_rel: String,
    actor: Option<AgentId>,
}

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

/// A finished step.
#[derive(Debug, Clone)]
pub struct StepRequest<'a> {
    /// The topic.
    pub topic: &'a str,
    /// Who finishes it.
    pub actor: &'a AgentId,
    /// What was done.
    pub action: Action,
    /// The output file (must end with the handoff section).
    pub output: &'a Target,
    /// The input file, when given.
    pub input: Option<&'a Target>,
    /// What was done, briefly.
    pub summary: &'a str,
    /// Exactly one next actor.
    pub next: &'a AgentId,
    /// done, blocked or no_action.
    pub status: StepStatus,
    /// The next step's action, when not the usual one.
    pub next_action: Option<Action>,
}

/// What `step` did.
#[derive(Debug, Clone, Serialize)]
pub struct StepOutcome {
    /// The tracker, relative to the root.
    pub tracker: String,
    /// The step finished (its number before any archiving).
    pub finished: u32,
    /// The status it was given.
    pub status: StepStatus,
    /// The new planned step (after archiving).
    pub next_step: u32,
    /// Its actor.
    pub next_actor: String,
    /// Its action.
    pub next_action: Action,
    /// The archive file, when steps were archived by this step.
    pub archived_to: Option<String>,
    /// Set when the next actor is not a participant of the review.
    pub warning: Option<String>,
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

/// Who is next and what to paste to them.
#[derive(Debug, Clone, Serialize)]
pub struct Next {
    /// The topic.
    pub topic: String,
    /// The tracker, relative to the root.
    pub tracker: String,
    /// `in_progress` or `closed`.
    pub status: String,
    /// The next actor (`none` once closed).
    pub next_actor: String,
    /// Their role, when the tracker says.
    pub role: Option<String>,
    /// The next action as the tracker says it.
    pub next_action: Option<String>,
    /// The open step's number.
    pub step: Option<u32>,
    /// The open step's action.
    pub action: Option<Action>,
    /// Where the output should go, by the seed's naming conventions.
    pub suggested_output: Option<String>,
    /// The prompt to paste to the next actor, as is.
    pub prompt: Option<String>,
    /// Whether the prompt was written by the previous actor (else coord made it).
    pub prompt_from_tracker: bool,
}

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

    fn no_review(&self, topic: &str) -> Error {
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
        fsutil::create_new(&template, tracker::TEMPLATE.as_bytes())?;
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
        let text = tracker::new_tracker_text(&NewTracker {
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

    /// Take the mutex and read TOPIC's active tracker for an edit by `actor`.
    fn begin(&self, topic: &str, actor: Option<&AgentId>) -> Result<(fsutil::MutexGuard, Tracker)> {
        check_topic(topic)?;
        let guard = self.ws.lock_mutex()?;
        // Every tracker update starts here: sweep the temporary files that killed updates
        // left in the folder of active trackers (and archives); nothing else would.
        fsutil::sweep_temps(&self.active_dir());
        let path = self.active_path(topic);
        let Some(t) = self.read_tracker(&path)? else {
            if fsutil::mtime(&self.closed_path(topic)).is_some() {
                return Err(Error::refused(
                    format!("review `{topic}` is closed"),
                    Some(format!("see it with `coord review show {topic}`")),
                ));
            }
            return Err(self.no_review(topic));
        };
        if t.view().meta.status == "closed" {
            return Err(Error::refused(
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
    fn finish(&self, t: &mut Tracker, now: &Timestamp) -> Result<()> {
        t.set_meta(&[("Last updated", &meta_date(now))])?;
        fsutil::replace_durable(t.path(), t.render().as_bytes())
    }

    /// Finish the open step and plan the next one.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for a missing output file or one without the handoff section;
    /// [`Error::Refused`] when no step is open or it belongs to another actor. Nothing is
    /// written in any of these cases.
    pub fn step(&self, req: &StepRequest<'_>) -> Result<StepOutcome> {
        if !matches!(
            req.status,
            StepStatus::Done | StepStatus::Blocked | StepStatus::NoAction
        ) {
            return Err(Error::bad_input(
                "a finished step's status is done, blocked or no_action",
            ));
        }
        let summary = one_line(req.summary);
        if summary.is_empty() {
            return Err(Error::bad_input("the step summary is empty"));
        }
        let text = read_utf8(&req.output.abs)?.ok_or_else(|| {
            Error::bad_input(format!(
                "the output file `{}` does not exist",
                req.output.rel
            ))
        })?;
        let prompt = tracker::handoff_section(Path::new(&req.output.rel), &text)?;

        let (_guard, mut t) = self.begin(req.topic, Some(req.actor))?;
        let now = clock::now();
        let view = t.view().clone();
        let Some(open) = view.open_step() else {
            return Err(Error::refused(
                format!(
                    "review `{}` has no planned step: step {:02} is {}",
                    req.topic,
                    view.steps.len(),
                    view.steps.last().map_or("missing", |s| s.status.as_str())
                ),
                Some(format!(
                    "see `coord review show {}`; the tracker may have been edited by hand",
                    req.topic
                )),
            ));
        };
        if !same_agent(&open.actor, req.actor) {
            return Err(Error::refused(
                format!(
                    "step {:02} of review `{}` belongs to {}, not {}: only a step's actor may finish it",
                    open.number,
                    req.topic,
                    open.actor,
                    req.actor.name()
                ),
                Some(format!(
                    "`coord review next {}` shows who is next and what to paste to them",
                    req.topic
                )),
            ));
        }
        let finished = open.number;
        let next_name = participant_name(&view, req.next);
        let next_action = req
            .next_action
            .unwrap_or_else(|| usual_next(req.action, view.meta.role_of(req.next.id())));
        let mut values: Vec<(&str, &str)> = vec![
            ("Status", req.status.as_str()),
            ("Action", req.action.as_str()),
        ];
        if let Some(input) = req.input {
            values.push(("Input", &input.rel));
        }
        values.push(("Output", &req.output.rel));
        values.push(("Summary", &summary));
        values.push(("Next", &next_name));
        t.set_step(finished, &values)?;
        t.push_step(&Step {
            number: finished + 1,
            actor: next_name.clone(),
            status: StepStatus::Planned,
            action: Some(next_action),
            input: Some(req.output.rel.clone()),
            output: None,
            summary: None,
            next: None,
        })?;
        let archived_to = self.apply_archive_policy(req.topic, &mut t)?;
        let next_step = u32::try_from(t.view().steps.len()).unwrap_or(u32::MAX);
        t.set_current(&[
            ("Next actor", &next_name),
            (
                "Next action",
                &format!("{} (step {next_step:02})", next_action.as_str()),
            ),
            ("Prompt for next actor", tracker::PROMPT_POINTER),
        ])?;
        t.set_prompt(&next_name, next_step, &prompt)?;
        self.finish(&mut t, &now)?;
        let warning = (view.meta.role_of(req.next.id()).is_none()
            && !view.meta.participants.is_empty())
        .then(|| {
            format!(
                "{} is not a participant of review `{}`",
                req.next.name(),
                req.topic
            )
        });
        Ok(StepOutcome {
            tracker: self.meta_rel_path(t.path()),
            finished,
            status: req.status,
            next_step,
            next_actor: next_name,
            next_action,
            archived_to,
            warning,
        })
    }

    /// Move steps 01–10 to the archive when there are more than 20.
    fn apply_archive_policy(&self, topic: &str, t: &mut Tracker) -> Result<Option<String>> {
        if t.view().steps.len() <= MAX_STEPS {
            return Ok(None);
        }
        let archive = layout::review_archive(&self.active_dir(), topic);
        let existing = read_utf8(&archive)?;
        let before = existing.as_deref().map_or(0, tracker::count_archived_steps);
        let mut taken = t.take_first_steps(ARCHIVED_AT_ONCE)?;
        while taken.last().is_some_and(|l| l.trim().is_empty()) {
            taken.pop();
        }
        let name = layout::review_archive_name(topic);
        // A step killed between the archive write and the tracker write left these very steps
        // at the archive's end while the tracker still holds them (its note counting one
        // batch fewer): finish that move instead of archiving them a second time.
        let noted = t
            .view()
            .steps_note
            .as_deref()
            .and_then(|n| n.strip_prefix("Note: Steps 01-"))
            .and_then(|n| n.split(' ').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        if let Some(e) = &existing
            && before == noted + ARCHIVED_AT_ONCE
        {
            let first = u32::try_from(noted + 1).unwrap_or(u32::MAX);
            let again = tracker::renumber_steps(&taken, first).join("\n");
            if e.trim_end().ends_with(again.trim_end()) {
                t.set_steps_note(&format!("Note: Steps 01-{before:02} archived to {name}"))?;
                return Ok(Some(self.meta_rel_path(&archive)));
            }
        }
        let first = u32::try_from(before + 1).unwrap_or(u32::MAX);
        let steps = tracker::renumber_steps(&taken, first).join("\n");
        let text = match existing {
            None => format!(
                "# Review Tracker Archive: {topic}\n\nSteps archived from `{topic}-tracker.md` (archive policy: more than {MAX_STEPS} steps).\n\n## Steps\n\n{steps}\n"
            ),
            Some(mut e) => {
                if !e.ends_with('\n') {
                    e.push('\n');
                }
                format!("{e}\n{steps}\n")
            }
        };
        // The archive first: a crash in between leaves steps in both files, never in neither,
        // and the next step finishes the move (above).
        fsutil::replace_durable(&archive, text.as_bytes())?;
        t.set_steps_note(&format!(
            "Note: Steps 01-{:02} archived to {name}",
            before + ARCHIVED_AT_ONCE
        ))?;
        Ok(Some(self.meta_rel_path(&archive)))
    }

    /// Add an issue; returns its id (`ISSUE-NN`, one above the highest).
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for an empty title; as [`Reviews::load`] otherwise.
    pub fn add_issue(&self, topic: &str, severity: Severity, title: &str) -> Result<Issue> {
        let title = one_line(title);
        if title.is_empty() {
            return Err(Error::bad_input("the issue title is empty"));
        }
        let (_guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        let next = t
            .view()
            .issues
            .iter()
            .filter_map(|i| {
                i.id.get(..6)
                    .filter(|p| p.eq_ignore_ascii_case("ISSUE-"))
                    .and(i.id[6..].parse::<u32>().ok())
            })
            .max()
            .unwrap_or(0)
            + 1;
        let issue = Issue {
            id: format!("ISSUE-{next:02}"),
            severity,
            title,
            status: IssueStatus::Open,
            resolution: None,
        };
        t.add_issue(&issue)?;
        self.finish(&mut t, &now)?;
        Ok(issue)
    }

    /// Update an issue's status and resolution.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for an unknown id; as [`Reviews::load`] otherwise.
    pub fn set_issue(
        &self,
        topic: &str,
        id: &str,
        status: IssueStatus,
        resolution: Option<&str>,
    ) -> Result<Issue> {
        let resolution = resolution.map(one_line);
        let (_guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        t.set_issue(id, status, resolution.as_deref())?;
        let issue = t
            .view()
            .issues
            .iter()
            .find(|i| i.id.eq_ignore_ascii_case(id))
            .cloned()
            .ok_or_else(|| Error::bad_input(format!("no issue `{id}`")))?;
        self.finish(&mut t, &now)?;
        Ok(issue)
    }

    /// Add a line to the Agreements Log: `- TEXT - ADOPTED`, `[DISPUTED] ` first when disputed.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for empty text; as [`Reviews::load`] otherwise.
    pub fn agree(
        &self,
        topic: &str,
        text: &str,
        adopted: Option<&str>,
        disputed: bool,
    ) -> Result<tracker::Agreement> {
        let mut text = one_line(text);
        let mut disputed = disputed;
        if let Some(rest) = text.strip_prefix("[DISPUTED]") {
            disputed = true;
            text = rest.trim().to_string();
        }
        if text.is_empty() {
            return Err(Error::bad_input("the agreement text is empty"));
        }
        if let Some(a) = adopted.map(one_line).filter(|a| !a.is_empty()) {
            text = format!("{text} - {a}");
        }
        let (_guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        t.add_agreement(&text, disputed)?;
        let added = t
            .view()
            .agreements
            .last()
            .cloned()
            .ok_or_else(|| Error::Failed {
                message: "the agreement was not added".into(),
            })?;
        self.finish(&mut t, &now)?;
        Ok(added)
    }

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
                format!(
                    "`{}` exists already: an earlier review `{topic}` was closed",
                    self.meta_rel_path(&closed_path)
                ),
                Some("move that file aside, then close again".into()),
            ));
        }
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
        t.set_path(closed_path.clone());
        self.finish(&mut t, &now)?;
        let archive = layout::review_archive(&self.active_dir(), topic);
        let mut moved_archive = None;
        if fsutil::mtime(&archive).is_some() {
            let dest = layout::review_archive(&self.closed_dir(), topic);
            fsutil::rename(&archive, &dest)?;
            moved_archive = Some(self.meta_rel_path(&dest));
        }
        fsutil::remove(&active_path)?;
        fsutil::sync_dir(&self.active_dir())?;
        drop(guard);
        let view = t.view().clone();
        let commit = match commit {
            None => None,
            Some(req) => {
                let message = commit_message(topic, &view, req.summary.as_deref());
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
                let id = git_commit(self.ws.root(), &paths, &message).map_err(|e| {
                    Error::Failed {
                        message: format!(
                            "review `{topic}` is closed, but the commit failed: {e}; commit by hand with the message:\n{message}"
                        ),
                    }
                })?;
                Some(CommitInfo { id, message })
            }
        };
        Ok(Closed {
            tracker: self.meta_rel_path(&closed_path),
            archive: moved_archive,
            commit,
        })
    }

    /// Who is next, what to do, and the prompt to paste to them.
    ///
    /// # Errors
    ///
    /// As [`Reviews::load`].
    pub fn next(&self, topic: &str) -> Result<Next> {
        let (t, _closed) = self.load(topic)?;
        let v = t.view();
        let tracker_rel = self.meta_rel_path(t.path());
        let mut out = Next {
            topic: topic.to_string(),
            tracker: tracker_rel.clone(),
            status: v.meta.status.clone(),
            next_actor: v.current.next_actor.clone(),
            role: v.meta.role_of(&v.current.next_actor).map(str::to_string),
            next_action: v.current.next_action.clone(),
            step: None,
            action: None,
            suggested_output: None,
            prompt: None,
            prompt_from_tracker: false,
        };
        let Some(open) = v.open_step().filter(|_| v.meta.status != "closed") else {
            return Ok(out);
        };
        let now = clock::now();
        let action = open.action.unwrap_or(Action::Review);
        let actor_id = AgentId::parse(&open.actor)
            .map(|a| a.id().to_string())
            .unwrap_or_else(|_| paths::snake_case(&open.actor));
        let other_id = v
            .meta
            .participants
            .iter()
            .find(|p| !p.name.eq_ignore_ascii_case(&open.actor))
            .map(|p| p.name.to_ascii_lowercase())
            .unwrap_or_else(|| "other".into());
        let parts = PromptParts {
            topic,
            tracker: &tracker_rel,
            target: v.meta.target.as_deref().unwrap_or("the target"),
            actor: &open.actor,
            actor_id: &actor_id,
            role: v.meta.role_of(&open.actor),
            other_id: &other_id,
            step: open.number,
            action,
            now: &now,
        };
        out.step = Some(open.number);
        out.action = Some(action);
        out.next_actor = open.actor.clone();
        out.role = parts.role.map(str::to_string);
        out.suggested_output = self.suggested_output(&parts);
        out.prompt = Some(match v.prompt_for(&open.actor, open.number) {
            Some(p) if !p.text.trim().is_empty() => {
                out.prompt_from_tracker = true;
                if p.text.contains("review step") {
                    p.text.clone()
                } else {
                    format!("{}\n\n{}", p.text, self.recording_note(&parts))
                }
            }
            _ => self.generated_prompt(&parts),
        });
        Ok(out)
    }

    fn suggested_output(&self, p: &PromptParts<'_>) -> Option<String> {
        let (kind, description) = match p.action {
            Action::Review => (Kind::Review, None),
            Action::Response => (Kind::Response, Some("reply")),
            Action::Verify => (Kind::Response, Some("verification")),
            Action::Implement => (Kind::Changelog, Some("implementation")),
            Action::Fix => (Kind::Changelog, Some("fixes")),
        };
        let parts = NameParts {
            kind,
            topic: p.topic,
            llm: p.actor_id,
            to: Some(p.other_id),
            step: Some(p.step),
            action: Some(p.action.as_str()),
            description,
        };
        paths::conventional(&self.meta, &parts, p.now)
            .ok()
            .map(|path| self.meta_rel_path(&path))
    }

    fn recording_note(&self, p: &PromptParts<'_>) -> String {
        let out = self
            .suggested_output(p)
            .unwrap_or_else(|| "OUTPUT.md".into());
        format!(
            "When you are done, end your output file with a `## {}` section holding a complete prompt for the next actor, then record your step:\n\n    coord -a {} review step {} --action {} --output {out} --summary \"...\" --next {}",
            tracker::HANDOFF_HEADING,
            p.actor_id,
            p.topic,
            p.action.as_str(),
            p.other_id
        )
    }

    fn generated_prompt(&self, p: &PromptParts<'_>) -> String {
        let role = p.role.map(|r| format!(", the {r},")).unwrap_or_default();
        let what = match p.action {
            Action::Review => "analyse the target documents: findings, open questions, suggestions; record each problem with `coord review issue TOPIC add --severity S --title T`",
            Action::Response => "reply to the previous step: agreements, disagreements, proposals (log key decisions with `coord review agree TOPIC TEXT`)",
            Action::Implement => "make the agreed changes to the source files and write a changelog entry",
            Action::Verify => "check the implementation for correctness, citing file paths and sections; acknowledge, or list the issues found",
            Action::Fix => "address the issues found in verification and update the changelog, citing file paths and sections",
        }
        .replace("TOPIC", p.topic);
        format!(
            "You are {actor}{role} in the review `{topic}` of `{target}`.\n\
Read the tracker `{tracker}` first: it is the single source of truth. Do not edit other participants' output files.\n\
Your task is step {step:02} ({action}): {what}.\n\n{note}",
            actor = p.actor,
            topic = p.topic,
            target = p.target,
            tracker = p.tracker,
            step = p.step,
            action = p.action.as_str(),
            note = self.recording_note(p),
        )
    }
}

struct PromptParts<'a> {
    topic: &'a str,
    tracker: &'a str,
    target: &'a str,
    actor: &'a str,
    actor_id: &'a str,
    role: Option<&'a str>,
    other_id: &'a str,
    step: u32,
    action: Action,
    now: &'a Timestamp,
}

/// Options of `close --commit`.
#[derive(Debug, Clone, Default)]
pub struct CommitRequest {
    /// The summary after `{topic} review: ` (a default is derived from the issues).
    pub summary: Option<String>,
}

/// The action that usually follows `done` given the next actor's role.
pub fn usual_next(done: Action, next_role: Option<&str>) -> Action {
    let implementer = next_role.is_some_and(|r| r.eq_ignore_ascii_case("implementer"));
    match done {
        Action::Review => Action::Response,
        Action::Response if implementer => Action::Implement,
        Action::Response => Action::Response,
        Action::Implement | Action::Fix => Action::Verify,
        Action::Verify if implementer => Action::Fix,
        Action::Verify => Action::Verify,
    }
}

fn same_agent(written: &str, agent: &AgentId) -> bool {
    written.eq_ignore_ascii_case(agent.id()) || written.eq_ignore_ascii_case(agent.name())
}

/// The next actor's name as the tracker writes it (its Participants spelling when listed).
fn participant_name(view: &View, agent: &AgentId) -> String {
    view.meta
        .participants
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(agent.id()))
        .map_or_else(|| agent.name().to_string(), |p| p.name.clone())
}

/// `YYYY-MM-DD`, as Meta writes dates.
pub fn meta_date(now: &Timestamp) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// Read a whole file as UTF-8 (capped, no symlink followed). `Ok(None)` when it does not exist.
fn read_utf8(path: &Path) -> Result<Option<String>> {
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
    let Ok(entries) = std::fs::read_dir(reviews.active_dir()) else {
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn the_usual_next_action() {
        let imp = Some("implementer");
        let rev = Some("reviewer");
        assert_eq!(usual_next(Action::Review, imp), Action::Response);
        assert_eq!(usual_next(Action::Response, rev), Action::Response);
        assert_eq!(usual_next(Action::Response, imp), Action::Implement);
        assert_eq!(usual_next(Action::Implement, rev), Action::Verify);
        assert_eq!(usual_next(Action::Verify, imp), Action::Fix);
        assert_eq!(usual_next(Action::Fix, rev), Action::Verify);
    }

    pub(crate) fn view_with(issues: Vec<Issue>, steps: Vec<(Action, StepStatus)>) -> View {
        let text = tracker::new_tracker_text(&NewTracker {
            topic: "t",
            target: "a.md",
            date: "2026-01-28",
            reviewer: "Claude",
            implementer: "Codex",
            prompt: "p",
        });
        let mut v = Tracker::parse(Path::new("t"), &text)
            .unwrap()
            .view()
            .clone();
        v.issues = issues;
        v.steps = steps
            .into_iter()
            .enumerate()
            .map(|(i, (a, s))| Step {
                number: u32::try_from(i + 1).unwrap(),
                actor: "Claude".into(),
                status: s,
                action: Some(a),
                input: None,
                output: None,
                summary: None,
                next: None,
            })
            .collect();
        v
    }

    pub(crate) fn issue(id: &str, status: IssueStatus, res: Option<&str>) -> Issue {
        Issue {
            id: id.into(),
            severity: Severity::High,
            title: format!("title of {id}"),
            status,
            resolution: res.map(str::to_string),
        }
    }

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
}
