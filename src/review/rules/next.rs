//! Who is next and what to paste to them ([`Reviews::next`]), and the prompts coord writes
//! itself when the previous actor left none (a new review's first step, a hand-edited tracker).
//!
//! A stored prompt is given as the previous actor wrote it, with a note on how to record the
//! step appended unless it already mentions one; the output file suggested follows the seed's
//! naming conventions ([`crate::review::paths`]).

use serde::Serialize;

use super::Reviews;
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::review::Action;
use crate::review::markdown::HANDOFF_HEADING;
use crate::review::paths::{self, Kind, NameParts};
use crate::workspace::AgentId;

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

/// What a prompt is about: `actor` as the tracker writes it, `actor_id` for the `coord -a ID`
/// the prompt shows, `other_id` the usual next actor.
pub(super) struct PromptParts<'a> {
    pub(super) topic: &'a str,
    pub(super) tracker: &'a str,
    pub(super) target: &'a str,
    pub(super) actor: &'a str,
    pub(super) actor_id: &'a str,
    pub(super) role: Option<&'a str>,
    pub(super) other_id: &'a str,
    pub(super) step: u32,
    pub(super) action: Action,
    pub(super) now: &'a Timestamp,
}

impl Reviews {
    /// Who is next, what to do, and the prompt to paste to them.
    ///
    /// # Errors
    ///
    /// As [`Reviews::show`].
    pub fn next(&self, topic: &str) -> Result<Next> {
        let (t, _) = self.load(topic)?;
        let (v, tracker) = (t.view(), self.rel(t.path()));
        let mut out = Next {
            topic: topic.to_string(),
            tracker: tracker.clone(),
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
            .map_or_else(|_| paths::snake_case(&open.actor), |a| a.id().to_string());
        let other_id = v
            .meta
            .other_than(&open.actor)
            .unwrap_or_else(|| "other".into());
        let p = PromptParts {
            topic,
            tracker: &tracker,
            target: v.meta.target.as_deref().unwrap_or("the target"),
            actor: &open.actor,
            actor_id: &actor_id,
            role: v.meta.role_of(&open.actor),
            other_id: &other_id,
            step: open.number,
            action,
            now: &now,
        };
        let stored = v
            .prompt_for(&open.actor, open.number)
            .filter(|p| !p.text.trim().is_empty());
        out.prompt = Some(match stored {
            Some(s) if s.text.contains("review step") => s.text.clone(),
            Some(s) => format!("{}\n\n{}", s.text, self.recording_note(&p)),
            None => self.generated_prompt(&p),
        });
        out.prompt_from_tracker = stored.is_some();
        (out.step, out.action, out.next_actor) =
            (Some(open.number), Some(action), open.actor.clone());
        out.role = p.role.map(str::to_string);
        out.suggested_output = self.suggested_output(&p);
        Ok(out)
    }

    /// Where the step's output should go, by the seed's naming conventions.
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
        let path = paths::conventional(&self.meta, &parts, p.now).ok()?;
        Some(self.rel(&path))
    }

    /// How to end the output file and record the step.
    fn recording_note(&self, p: &PromptParts<'_>) -> String {
        let out = self
            .suggested_output(p)
            .unwrap_or_else(|| "OUTPUT.md".into());
        format!(
            "When you are done, end your output file with a `## {HANDOFF_HEADING}` section holding a complete prompt for the next actor, then record your step:\n\n    coord -a {} review step {} --action {} --output {out} --summary \"...\" --next {}",
            p.actor_id,
            p.topic,
            p.action.as_str(),
            p.other_id
        )
    }

    /// The prompt coord writes for a step nobody wrote one for.
    pub(super) fn generated_prompt(&self, p: &PromptParts<'_>) -> String {
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
