//! Who is next and what to paste to them ([`Reviews::next`]), and the prompt coord writes itself
//! when the previous actor left none (a new review's first step, a hand-edited tracker).

use serde::Serialize;

use super::Reviews;
use crate::clock;
use crate::error::Result;
use crate::review::markdown::HANDOFF_HEADING;
use crate::review::paths::{self, Kind, NameParts};
use crate::review::{Action, Step, View};
use crate::workspace::AgentId;

/// The task each action gives, in `Action` order.
const TASKS: [&str; 5] = [
    "analyse the target documents: findings, open questions, suggestions; record each problem with `coord review issue TOPIC add --severity S --title T`",
    "reply to the previous step: agreements, disagreements, proposals (log key decisions with `coord review agree TOPIC TEXT`)",
    "make the agreed changes to the source files and write a changelog entry",
    "check the implementation for correctness, citing file paths and sections; acknowledge, or list the issues found",
    "address the issues found in verification and update the changelog, citing file paths and sections",
];

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
    pub(crate) prompt_from_tracker: bool,
}

impl Reviews {
    /// Who is next, what to do, and the prompt to paste to them.
    pub fn next(&self, topic: &str) -> Result<Next> {
        let (t, _) = self.load(topic)?;
        let (v, tracker) = (&t.view, self.rel(&t.path));
        let open = v.open_step().filter(|_| v.meta.status != "closed");
        let stored = open.and_then(|s| v.prompt_for(&s.actor, s.number));
        let stored = stored.map(|p| &*p.text).filter(|t| !t.trim().is_empty());
        let guided = open.map(|s| self.guide(topic, &tracker, v, s, stored));
        let (output, prompt) = guided.map_or((None, None), |(out, text)| (out, Some(text)));
        let actor = open.map_or(&v.current.next_actor, |s| &s.actor);
        Ok(Next {
            topic: topic.to_string(),
            tracker,
            status: v.meta.status.clone(),
            next_actor: actor.clone(),
            role: v.meta.role_of(actor).map(str::to_string),
            next_action: v.current.next_action.clone(),
            step: open.map(|s| s.number),
            action: open.map(|s| s.action.unwrap_or(Action::Review)),
            suggested_output: output,
            prompt,
            prompt_from_tracker: stored.is_some(),
        })
    }

    /// Step `open`'s output file and prompt: the `stored` one plus how to record the step, or ours.
    pub(super) fn guide(
        &self,
        topic: &str,
        tracker: &str,
        v: &View,
        open: &Step,
        stored: Option<&str>,
    ) -> (Option<String>, String) {
        let (actor, action) = (&open.actor, open.action.unwrap_or(Action::Review));
        let actor_id =
            AgentId::parse(actor).map_or_else(|_| paths::snake_case(actor), |a| a.id().to_string());
        let other_id = v.meta.other_than(actor).unwrap_or_else(|| "other".into());
        let (kind, description) = match action {
            Action::Review => (Kind::Review, None),
            Action::Response => (Kind::Response, Some("reply")),
            Action::Implement => (Kind::Changelog, Some("implementation")),
            Action::Verify => (Kind::Response, Some("verification")),
            Action::Fix => (Kind::Changelog, Some("fixes")),
        };
        let name = NameParts {
            kind,
            topic,
            llm: &actor_id,
            to: Some(&other_id),
            step: Some(open.number),
            action: Some(action.as_str()),
            description,
        };
        let output = paths::conventional(&self.meta, &name, &clock::now()).ok();
        let output = output.map(|path| self.rel(&path));
        let (act, out) = (action.as_str(), output.as_deref().unwrap_or("OUTPUT.md"));
        let note = format!(
            "When you are done, end your output file with a `## {HANDOFF_HEADING}` section holding a complete prompt for the next actor, then record your step:\n\n    coord -a {actor_id} review step {topic} --action {act} --output {out} --summary \"...\" --next {other_id}"
        );
        let role = v.meta.role_of(actor).map(|r| format!(", the {r},"));
        let prompt = match stored {
            Some(text) if text.contains("review step") => text.to_string(),
            Some(text) => format!("{text}\n\n{note}"),
            None => format!(
                "You are {actor}{} in the review `{topic}` of `{}`.\n\
Read the tracker `{tracker}` first: it is the single source of truth. Do not edit other participants' output files.\n\
Your task is step {:02} ({act}): {}.\n\n{note}",
                role.unwrap_or_default(),
                v.meta.target.as_deref().unwrap_or("the target"),
                open.number,
                TASKS[action as usize].replace("TOPIC", topic),
            ),
        };
        (output, prompt)
    }
}
