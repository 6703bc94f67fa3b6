//! Finishing a step: `coord review step`.
//!
//! Rules, in the order they are checked:
//! 1. A finished step is `done`, `blocked` or `no_action`, with a summary.
//! 2. Its output file exists and ends with a `## Handoff Prompt for Next Actor` section, whose
//!    body becomes the next actor's prompt.
//! 3. The review has an open (planned or in-progress) step, and the caller is its actor.
//!
//! Then, in one edit under the mutex: the step is filled in, the next step is planned for
//! exactly one next actor (its action the [`usual_next`] unless given), the archive policy
//! applies, the Current State names the next actor and their prompt is stored. Nothing is
//! written when a check fails.

use std::path::Path;

use serde::Serialize;

use super::Reviews;
use super::store::read_utf8;
use crate::clock;
use crate::error::Refusal;
use crate::error::{Error, Result};
use crate::review::model::{Step, View};
use crate::review::parse::handoff_section;
use crate::review::syntax::PROMPT_POINTER;
use crate::review::tracker::Tracker;
use crate::review::{Action, StepStatus, one_line};
use crate::workspace::{AgentId, Target};

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

impl Reviews {
    /// Finish the open step and plan the next one.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for a missing output file or one without the handoff section;
    /// [`Error::Refused`] when no step is open or it belongs to another actor. Nothing is
    /// written in any of these cases.
    pub fn step(&self, req: &StepRequest<'_>) -> Result<StepOutcome> {
        let (summary, prompt) = checked_output(req)?;
        let (_guard, mut t) = self.begin(req.topic, Some(req.actor))?;
        let now = clock::now();
        let view = t.view().clone();
        let finished = owned_open_step(&view, req)?.number;
        let next_name = participant_name(&view, req.next);
        let next_action = req
            .next_action
            .unwrap_or_else(|| usual_next(req.action, view.meta.role_of(req.next.id())));
        record_finished(&mut t, req, finished, &summary, &next_name, next_action)?;
        let archived_to = self.apply_archive_policy(req.topic, &mut t)?;
        let next_step = u32::try_from(t.view().steps.len()).unwrap_or(u32::MAX);
        t.set_current(&[
            ("Next actor", &next_name),
            (
                "Next action",
                &format!("{} (step {next_step:02})", next_action.as_str()),
            ),
            ("Prompt for next actor", PROMPT_POINTER),
        ])?;
        t.set_prompt(&next_name, next_step, &prompt)?;
        self.finish(&mut t, &now)?;
        crate::history::review_step(self.ws.root(), req, finished, &next_name);
        Ok(StepOutcome {
            tracker: self.meta_rel_path(t.path()),
            finished,
            status: req.status,
            next_step,
            next_actor: next_name,
            next_action,
            archived_to,
            warning: not_a_participant(&view, req),
        })
    }
}

/// Rules 1 and 2, before the tracker is touched: the step's summary and the prompt from its
/// output file.
fn checked_output(req: &StepRequest<'_>) -> Result<(String, String)> {
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
    let prompt = handoff_section(Path::new(&req.output.rel), &text)?;
    Ok((summary, prompt))
}

/// Rule 3: the open step, which must be the caller's.
fn owned_open_step<'v>(view: &'v View, req: &StepRequest<'_>) -> Result<&'v Step> {
    let Some(open) = view.open_step() else {
        return Err(Error::refused(
            Refusal::NoOpenStep,
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
            Refusal::NotStepActor,
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
    Ok(open)
}

/// Fill in the finished step and plan the next one after it, reading the finished output.
fn record_finished(
    t: &mut Tracker,
    req: &StepRequest<'_>,
    finished: u32,
    summary: &str,
    next_name: &str,
    next_action: Action,
) -> Result<()> {
    let mut values: Vec<(&str, &str)> = vec![
        ("Status", req.status.as_str()),
        ("Action", req.action.as_str()),
    ];
    if let Some(input) = req.input {
        values.push(("Input", &input.rel));
    }
    values.push(("Output", &req.output.rel));
    values.push(("Summary", summary));
    values.push(("Next", next_name));
    t.set_step(finished, &values)?;
    t.push_step(&Step {
        number: finished + 1,
        actor: next_name.to_string(),
        status: StepStatus::Planned,
        action: Some(next_action),
        input: Some(req.output.rel.clone()),
        output: None,
        summary: None,
        next: None,
    })
}

/// The warning when the next actor is not among the review's participants.
fn not_a_participant(view: &View, req: &StepRequest<'_>) -> Option<String> {
    (view.meta.role_of(req.next.id()).is_none() && !view.meta.participants.is_empty()).then(|| {
        format!(
            "{} is not a participant of review `{}`",
            req.next.name(),
            req.topic
        )
    })
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

/// Whether the actor written in the tracker is `agent` (by id or display name, any case).
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

#[cfg(test)]
mod tests {
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
}
