//! The review tracker (seed 003): a markdown file per review topic, with Meta, Current State,
//! Steps, Issues, Agreements Log and Handoff Prompts, that two agents take turns updating.

mod markdown;
pub mod paths;
pub mod rules;
pub(crate) mod tracker;

use serde::Serialize;

use self::markdown::Field;
use crate::error::{Error, Result};

crate::record::names! {
    /// What a step does (the seed's action types).
    Action {
        Review = "review": "Initial analysis of the target documents.",
        Response = "response": "Reply to a review or a counter-response.",
        Implement = "implement": "Make agreed changes to source files.",
        Verify = "verify": "Check an implementation for correctness.",
        Fix = "fix": "Address issues found in verification.",
    }
}

crate::record::names! {
    /// Where a step stands.
    StepStatus {
        Planned = "planned": "Assigned, not started.",
        InProgress = "in_progress": "Being worked on.",
        Done = "done": "Finished by its actor.",
        Blocked = "blocked": "Cannot go on without help.",
        NoAction = "no_action": "Nothing was needed.",
    }
}

crate::record::names! {
    /// Where an issue stands.
    IssueStatus {
        Open = "open": "Not dealt with yet.",
        Resolved = "resolved": "Fixed.",
        Wontfix = "wontfix": "Deliberately left as is.",
        Escalate = "escalate": "Disputed: the user decides.",
    }
}

crate::record::names! {
    /// How bad an issue is (the seed writes both `Critical` and `critical`).
    Severity {
        Critical = "critical": "Blocks functionality or creates contradictions.",
        High = "high": "Significant ambiguity or operational gap.",
        Medium = "medium": "Missing detail that could cause problems.",
        Low = "low": "Enhancement or clarification.",
    }
}

impl StepStatus {
    /// Whether the step still waits for its actor.
    pub fn is_open(self) -> bool {
        matches!(self, StepStatus::Planned | StepStatus::InProgress)
    }
}

impl IssueStatus {
    /// Whether the issue no longer stands in the way of closing.
    pub fn is_settled(self) -> bool {
        matches!(self, IssueStatus::Resolved | IssueStatus::Wontfix)
    }
}

/// Check a review topic, which becomes part of file names (`regional-federalism-design`).
pub fn check_topic(topic: &str) -> Result<()> {
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = topic.as_bytes();
    if b.len() <= 64
        && b.first().is_some_and(|&c| ok(c))
        && b.iter().all(|&c| ok(c) || c == b'-' || c == b'_')
    {
        return Ok(());
    }
    Err(Error::bad_input(format!(
        "invalid review topic `{topic}`: use 1-64 characters of a-z, 0-9, `-` and `_`, starting with a letter or digit"
    )))
}

/// Text for one tracker line: controls as spaces, trimmed (a newline could forge a field).
pub(crate) fn one_line(text: &str) -> String {
    text.replace(char::is_control, " ").trim().to_string()
}

/// A participant and its role, from Meta's `Participants` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Participant {
    /// The name as written (`Claude`).
    pub name: String,
    /// `reviewer`, `implementer`, or whatever the tracker says.
    pub role: Option<String>,
}

/// The Meta section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Meta {
    pub(crate) topic: Option<String>,
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
    /// The role of the participant named `name` (compared case-insensitively).
    pub fn role_of(&self, name: &str) -> Option<&str> {
        let same = |p: &&Participant| p.name.eq_ignore_ascii_case(name);
        self.participants.iter().find(same)?.role.as_deref()
    }

    /// The first participant not named `name`, lower-cased: the usual other party of a file.
    pub fn other_than(&self, name: &str) -> Option<String> {
        let other = |p: &&Participant| !p.name.eq_ignore_ascii_case(name);
        let found = self.participants.iter().find(other)?;
        Some(found.name.to_ascii_lowercase())
    }
}

/// The Current State section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Current {
    /// Exactly one actor, or `none` once closed.
    pub next_actor: String,
    /// What they are to do.
    pub next_action: Option<String>,
    pub(crate) prompt: Option<String>,
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
    pub(crate) input: Option<String>,
    pub(crate) output: Option<String>,
    /// What it did, briefly.
    pub summary: Option<String>,
    pub(crate) next: Option<String>,
    /// Its heading's line, and its fields.
    #[serde(skip)]
    pub(crate) at: usize,
    #[serde(skip)]
    pub(crate) fields: Vec<Field>,
}

/// One row of the Issues table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// `ISSUE-NN`.
    pub id: String,
    /// How bad it is.
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
    pub(crate) decision: String,
    /// Whose position was adopted: `text` after its last ` - `, when there is one.
    pub(crate) adopted: Option<String>,
    /// Marked `[DISPUTED]`.
    pub disputed: bool,
    #[serde(skip)]
    pub(crate) line: usize,
}

/// One `###` entry of the Handoff Prompts section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    pub(crate) heading: String,
    /// For whom (`### For gemini (step 02)`).
    pub(crate) actor: Option<String>,
    pub(crate) step: Option<u32>,
    pub(crate) text: String,
    /// Its heading's line and the line after it.
    #[serde(skip)]
    pub(crate) lines: (usize, usize),
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
    pub(crate) handoff_prompts: Vec<Prompt>,
}

impl View {
    /// The open (planned or in-progress) step, when the last step is one.
    pub fn open_step(&self) -> Option<&Step> {
        self.steps.last().filter(|s| s.status.is_open())
    }

    /// The stored prompt for `actor` and step `number`, if any.
    pub fn prompt_for(&self, actor: &str, number: u32) -> Option<&Prompt> {
        let mine = |p: &&Prompt| p.step == Some(number) && p.is_for(actor);
        self.handoff_prompts.iter().rev().find(mine)
    }
}

impl Prompt {
    pub(crate) fn is_for(&self, actor: &str) -> bool {
        let mine = |a: &str| a.eq_ignore_ascii_case(actor);
        self.actor.as_deref().is_some_and(mine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_topics() {
        let want = "`x`, expected one of open, resolved, wontfix, escalate";
        assert_eq!(IssueStatus::expected("x").unwrap_err(), want);
        assert_eq!(Severity::parse(" Critical"), Some(Severity::Critical));
        assert!(check_topic("regional-federalism-design").is_ok() && check_topic("api_v2").is_ok());
        for bad in ["", "../x", "A", "a b", "-x", "a/b", &"a".repeat(65)] {
            assert!(check_topic(bad).is_err(), "{bad:?}");
        }
    }
}
