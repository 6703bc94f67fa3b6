//! Finishing a step (`coord review step`), and the archive policy.

use std::path::Path;

use serde::Serialize;

use super::{Reviews, read_text};
use crate::error::{Error, Refusal, Result};
use crate::fsutil;
use crate::history::{self, Event, Kind};
use crate::layout;
use crate::review::markdown::{
    PROMPT_POINTER, fenced, handoff_section, is_step_heading, lines, renumber_heading,
};
use crate::review::tracker::{Block, Tracker};
use crate::review::{Action, Participant, StepStatus, View, one_line};
use crate::workspace::{AgentId, Target};

const MAX_STEPS: usize = 20;

const ARCHIVED_AT_ONCE: usize = 10;

const NOTE: &str = "Note: Steps 01-";

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
    pub(crate) tracker: String,
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
    pub fn step(&self, req: &StepRequest<'_>) -> Result<StepOutcome> {
        let summary = one_line(req.summary);
        if summary.is_empty() {
            return Err(Error::bad_input("the step summary is empty"));
        }
        let Some(text) = read_text(&req.output.abs)? else {
            let why = format!("the output file `{}` does not exist", req.output.rel);
            return Err(Error::bad_input(why));
        };
        let prompt = handoff_section(Path::new(&req.output.rel), &text)?;
        let done = self.edit(req.topic, Some(req.actor), |t| {
            let view = t.view.clone();
            let finished = owned_open_step(&view, req)?;
            // The next actor as the tracker spells it (its Participants spelling when listed).
            let same = |p: &&Participant| p.name.eq_ignore_ascii_case(req.next.id());
            let next = view.meta.participants.iter().find(same);
            let next = next.map_or(req.next.name(), |p| &p.name).to_string();
            let role = view.meta.role_of(req.next.id());
            let next_action = (req.next_action).unwrap_or_else(|| usual_next(req.action, role));
            let mut values = vec![
                ("Status", req.status.as_str()),
                ("Action", req.action.as_str()),
            ];
            values.extend(req.input.map(|i| ("Input", i.rel.as_str())));
            values.extend([
                ("Output", req.output.rel.as_str()),
                ("Summary", &summary),
                ("Next", &next),
            ]);
            t.set(Block::Step(finished), &values)?;
            t.push_step(&next, next_action, &req.output.rel)?;
            let archived_to = self.archive(req.topic, t)?;
            let next_step = t.view.steps.len() as u32;
            let next_action_text = format!("{} (step {next_step:02})", next_action.as_str());
            let current = [
                ("Next actor", next.as_str()),
                ("Next action", &next_action_text),
                ("Prompt for next actor", PROMPT_POINTER),
            ];
            t.set(Block::Current, &current)?;
            t.set_prompt(&next, next_step, &prompt)?;
            let stranger = role.is_none() && !view.meta.participants.is_empty();
            Ok(StepOutcome {
                tracker: self.rel(&t.path),
                finished,
                status: req.status,
                next_step,
                next_actor: next,
                next_action,
                archived_to,
                warning: stranger.then(|| {
                    let (name, topic) = (req.next.name(), req.topic);
                    format!("{name} is not a participant of review `{topic}`")
                }),
            })
        })?;
        let event = Event::new(Kind::ReviewStep, req.actor.id())
            .with("topic", req.topic)
            .with("step", done.finished)
            .with("action", req.action.as_str())
            .with("next", done.next_actor.as_str());
        history::record(self.ws.root(), event);
        Ok(done)
    }

    /// Past [`MAX_STEPS`], move the first steps to `TOPIC-tracker-archive.md` (returned).
    fn archive(&self, topic: &str, t: &mut Tracker) -> Result<Option<String>> {
        if t.view.steps.len() <= MAX_STEPS {
            return Ok(None);
        }
        let archive = layout::review_archive(&self.dir(false), topic);
        let existing = read_text(&archive)?;
        let before = (existing.as_deref()).map_or(0, |e| step_heads(&lines(e)).count());
        let mut taken = t.take_first_steps(ARCHIVED_AT_ONCE)?;
        while taken.last().is_some_and(|l| l.trim().is_empty()) {
            taken.pop();
        }
        let name = layout::review_archive_name(topic);
        let note = |archived: usize| format!("{NOTE}{archived:02} archived to {name}");
        let noted = noted(t.view.steps_note.as_deref());
        if (existing.as_deref()).is_some_and(|e| already_archived(e, &taken, noted, before)) {
            t.set_steps_note(&note(before))?;
            return Ok(Some(self.rel(&archive)));
        }
        let steps = renumber_steps(&taken, before + 1).join("\n");
        let text = match existing {
            None => format!(
                "# Review Tracker Archive: {topic}\n\nSteps archived from `{topic}-tracker.md` (archive policy: more than {MAX_STEPS} steps).\n\n## Steps\n\n{steps}\n"
            ),
            Some(e) if e.ends_with('\n') => format!("{e}\n{steps}\n"),
            Some(e) => format!("{e}\n\n{steps}\n"),
        };
        // The archive is written before the tracker: a crash in between leaves the steps in
        // both, and the next step finds them at the archive's end (`already_archived`).
        fsutil::replace_durable(&archive, text.as_bytes())?;
        t.set_steps_note(&note(before + ARCHIVED_AT_ONCE))?;
        Ok(Some(self.rel(&archive)))
    }
}

/// The number of the open step, which must be the caller's.
fn owned_open_step(view: &View, req: &StepRequest<'_>) -> Result<u32> {
    let topic = req.topic;
    let Some(open) = view.open_step() else {
        let last = view.steps.last().map_or("missing", |s| s.status.as_str());
        let n = view.steps.len();
        let why = format!("review `{topic}` has no planned step: step {n:02} is {last}");
        let hint =
            format!("see `coord review show {topic}`; the tracker may have been edited by hand");
        return Err(Error::refused(Refusal::NoOpenStep, why, Some(hint)));
    };
    let (id, name) = (req.actor.id(), req.actor.name());
    if !open.actor.eq_ignore_ascii_case(id) && !open.actor.eq_ignore_ascii_case(name) {
        let why = format!(
            "step {:02} of review `{topic}` belongs to {}, not {name}: only a step's actor may finish it",
            open.number, open.actor
        );
        let hint =
            format!("`coord review next {topic}` shows who is next and what to paste to them");
        return Err(Error::refused(Refusal::NotStepActor, why, Some(hint)));
    }
    Ok(open.number)
}

fn usual_next(done: Action, next_role: Option<&str>) -> Action {
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

fn noted(note: Option<&str>) -> usize {
    note.and_then(|n| n.strip_prefix(NOTE)?.split(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// The `### NN` step headings among `lines` (outside code fences).
fn step_heads(lines: &[String]) -> impl Iterator<Item = usize> + '_ {
    let fence = fenced(lines);
    (0..lines.len()).filter(move |&i| !fence[i] && is_step_heading(&lines[i]))
}

fn renumber_steps(lines: &[String], first: usize) -> Vec<String> {
    let mut out = lines.to_vec();
    for (n, i) in (first..).zip(step_heads(lines)) {
        out[i] = renumber_heading(&lines[i], n as u32);
    }
    out
}

/// Whether a step killed between the archive and the tracker write left `taken` at the
/// archive's end while the tracker still holds them (its note one batch behind).
fn already_archived(archive: &str, taken: &[String], noted: usize, before: usize) -> bool {
    let again = renumber_steps(taken, noted + 1).join("\n");
    before == noted + ARCHIVED_AT_ONCE && archive.trim_end().ends_with(again.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_next_action() {
        use Action::{Fix, Implement, Response, Review, Verify};
        let (imp, rev) = (Some("implementer"), Some("reviewer"));
        for (done, role, next) in [
            (Review, imp, Response),
            (Response, rev, Response),
            (Response, imp, Implement),
            (Implement, rev, Verify),
            (Verify, imp, Fix),
            (Fix, rev, Verify),
        ] {
            assert_eq!(usual_next(done, role), next, "{done:?} to the {role:?}");
        }
    }

    #[test]
    fn the_note_counts_the_archived_steps() {
        let notes = [
            "Note: Steps 01-130 archived to a.md",
            "Note: see below",
            "Note: Steps 01-x y",
        ];
        assert_eq!(notes.map(|n| noted(Some(n))), [130, 0, 0]);
        assert_eq!(noted(None), 0);
    }

    #[test]
    fn archived_steps_are_counted_and_renumbered_outside_fences() {
        let text =
            "## Steps\n### 01\n```\n### 07 in a fence\n```\n### 02 - response\n### For A (step 03)";
        assert_eq!(step_heads(&lines(text)).count(), 2);
        let got = renumber_steps(&lines(text), 11).join("|");
        let want =
            "## Steps|### 11|```|### 07 in a fence|```|### 12 - response|### For A (step 03)";
        assert_eq!(got, want);
    }

    #[test]
    fn an_interrupted_move_is_recognised() {
        let taken = lines("### 01\n- **Actor:** A\n\n### 02\n- **Actor:** B");
        let archive = "## Steps\n\n### 01\n\n### 11\n- **Actor:** A\n\n### 12\n- **Actor:** B\n";
        // The archive holds the ten noted steps and these again: the move was interrupted.
        assert!(already_archived(archive, &taken, 10, 20));
        // Not a batch ahead of the note, or other steps at its end: archive them.
        assert!(!already_archived(archive, &taken, 10, 10));
        let other = lines("### 01\n- **Actor:** C");
        assert!(!already_archived(archive, &other, 10, 20));
    }
}
