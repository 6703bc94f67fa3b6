//! What a tracker says, as plain data: [`View`] and the parts it is made of.
//!
//! These types are what `super::parse` reads a tracker into, what `coord review show --json`
//! prints (their serde names are part of the `--json` schema in `docs/protocol.md`), and what the
//! rules judge. They hold no line numbers and know nothing of the file: editing goes through
//! [`super::tracker::Tracker`], which reads a new `View` after every edit.

use serde::Serialize;

use super::{Action, IssueStatus, Severity, StepStatus};

/// A participant and its role, from Meta's `Participants` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Participant {
    /// The name as written (`Claude`).
    pub name: String,
    /// `reviewer`, `implementer`, or whatever the tracker says; `None` when not given.
    pub role: Option<String>,
}

/// The Meta section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Meta {
    /// The topic.
    pub topic: Option<String>,
    /// The reviewed path.
    pub target: Option<String>,
    /// `YYYY-MM-DD`.
    pub created: Option<String>,
    /// `YYYY-MM-DD`.
    pub last_updated: Option<String>,
    /// `in_progress` or `closed`.
    pub status: String,
    /// Who takes part, in the order written.
    pub participants: Vec<Participant>,
}

impl Meta {
    /// The participant with `role` (case is ignored).
    pub fn with_role(&self, role: &str) -> Option<&Participant> {
        self.participants.iter().find(|p| {
            p.role
                .as_deref()
                .is_some_and(|r| r.eq_ignore_ascii_case(role))
        })
    }

    /// The role of the participant named `name` (compared case-insensitively).
    pub fn role_of(&self, name: &str) -> Option<&str> {
        self.participants
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .and_then(|p| p.role.as_deref())
    }
}

/// The Current State section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Current {
    /// Exactly one actor, or `none` once closed.
    pub next_actor: String,
    /// What they are to do.
    pub next_action: Option<String>,
    /// Where their prompt is.
    pub prompt: Option<String>,
}

/// One `### NN` entry of the Steps section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The step number (`01` → 1).
    pub number: u32,
    /// Who owns it.
    pub actor: String,
    /// Where it stands.
    pub status: StepStatus,
    /// What it does.
    pub action: Option<Action>,
    /// What it read.
    pub input: Option<String>,
    /// What it wrote.
    pub output: Option<String>,
    /// What it did, briefly.
    pub summary: Option<String>,
    /// Who comes next.
    pub next: Option<String>,
}

/// One row of the Issues table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// `ISSUE-NN`.
    pub id: String,
    /// critical, high, medium or low.
    pub severity: Severity,
    /// What the problem is.
    pub title: String,
    /// Where it stands.
    pub status: IssueStatus,
    /// How it was settled.
    pub resolution: Option<String>,
}

/// One line of the Agreements Log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agreement {
    /// The entry as written, without the bullet and the `[DISPUTED]` prefix.
    pub text: String,
    /// The decision: `text` before its last ` - `.
    pub decision: String,
    /// Whose position was adopted: `text` after its last ` - `, when there is one.
    pub adopted: Option<String>,
    /// Marked `[DISPUTED]`.
    pub disputed: bool,
}

/// One `###` entry of the Handoff Prompts section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    /// The heading text.
    pub heading: String,
    /// For whom (`### For gemini (step 02)`).
    pub actor: Option<String>,
    /// For which step.
    pub step: Option<u32>,
    /// The prompt (the inside of its fence when fenced).
    pub text: String,
}

/// Everything a tracker says, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct View {
    /// Meta.
    pub meta: Meta,
    /// Current State.
    pub current: Current,
    /// The `Note: Steps 01-10 archived to …` line, when steps were archived.
    pub steps_note: Option<String>,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// Issues in table order.
    pub issues: Vec<Issue>,
    /// Agreements in order.
    pub agreements: Vec<Agreement>,
    /// Handoff prompts in order.
    pub handoff_prompts: Vec<Prompt>,
}

impl View {
    /// The open (planned or in-progress) step, when the last step is one.
    pub fn open_step(&self) -> Option<&Step> {
        self.steps.last().filter(|s| s.status.is_open())
    }

    /// The stored prompt for `actor` and step `number`, if any.
    pub fn prompt_for(&self, actor: &str, number: u32) -> Option<&Prompt> {
        self.handoff_prompts.iter().rev().find(|p| {
            p.step == Some(number)
                && p.actor
                    .as_deref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(actor))
        })
    }
}
