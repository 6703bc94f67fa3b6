//! The review tracker (seed 003): a markdown file per review topic, with Meta, Current State,
//! Steps, Issues, Agreements Log and Handoff Prompts, that two agents take turns updating.
//!
//! This module holds the seed's names (actions, statuses, severities), the topic rule, and what
//! a tracker says as plain data ([`View`]: its serde names are the `--json` schema of
//! `docs/protocol.md`). Below it, from the bottom up:
//! - `markdown`: the lines a tracker is written in, read into a `View` and the index of which
//!   line holds what;
//! - `tracker`: the file held as its lines, edited line by line, so every line a command did
//!   not mean to change stays byte for byte as it was;
//! - [`paths`]: the seed's names of review, response and changelog files;
//! - [`rules`]: the protocol (who may finish which step, what comes next, the archive policy,
//!   the completion criteria, the closing commit) and the read-modify-write of a tracker.
//!
//! Invariants: a tracker is only ever replaced whole (`fsutil::replace_durable`) while the
//! workspace mutex is held, after it was read under that same mutex, so two commands running at
//! once never lose an update; a tracker that cannot be parsed is reported with its line number
//! and never written.

mod markdown;
pub mod paths;
pub mod rules;
mod tracker;

use serde::Serialize;

use crate::error::{Error, Result};

/// An enum of the seed's names: `NAMES` in order, `parse` (case and blanks ignored), `as_str`.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $var:ident = $s:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vdoc])* $var,)+ }

        impl $name {
            /// Every name, in the seed's order.
            pub const NAMES: &'static [&'static str] = &[$($s),+];

            /// Read a name (case is ignored).
            pub fn parse(text: &str) -> Option<$name> {
                let text = text.trim();
                [$($name::$var),+].into_iter().find(|v| v.as_str().eq_ignore_ascii_case(text))
            }

            /// The name written in files.
            pub fn as_str(self) -> &'static str {
                $name::NAMES[self as usize]
            }
        }
    };
}
pub(crate) use names;

names! {
    /// What a step does (the seed's action types).
    Action {
        /// Initial analysis of the target documents.
        Review = "review",
        /// Reply to a review or a counter-response.
        Response = "response",
        /// Make agreed changes to source files.
        Implement = "implement",
        /// Check an implementation for correctness.
        Verify = "verify",
        /// Address issues found in verification.
        Fix = "fix",
    }
}

names! {
    /// Where a step stands.
    StepStatus {
        /// Assigned, not started.
        Planned = "planned",
        /// Being worked on.
        InProgress = "in_progress",
        /// Finished by its actor.
        Done = "done",
        /// Cannot go on without help.
        Blocked = "blocked",
        /// Nothing was needed.
        NoAction = "no_action",
    }
}

names! {
    /// Where an issue stands.
    IssueStatus {
        /// Not dealt with yet.
        Open = "open",
        /// Fixed.
        Resolved = "resolved",
        /// Deliberately left as is.
        Wontfix = "wontfix",
        /// Disputed: the user decides.
        Escalate = "escalate",
    }
}

names! {
    /// How bad an issue is (the seed writes both `Critical` and `critical`).
    Severity {
        /// Blocks functionality or creates contradictions.
        Critical = "critical",
        /// Significant ambiguity or operational gap.
        High = "high",
        /// Missing detail that could cause problems.
        Medium = "medium",
        /// Enhancement or clarification.
        Low = "low",
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

/// Check a review topic: it becomes part of file names, so 1-64 characters of `a-z`, `0-9`,
/// `-` and `_`, starting with a letter or digit (`regional-federalism-design`).
///
/// # Errors
///
/// [`Error::BadInput`] naming the topic.
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

/// Text for one line of the tracker: control characters become spaces, surrounding blanks are
/// trimmed (the tracker is line-based: a newline could forge a field).
pub(crate) fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    flat.trim().to_string()
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
    /// The role of the participant named `name` (compared case-insensitively).
    pub fn role_of(&self, name: &str) -> Option<&str> {
        self.participants
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .and_then(|p| p.role.as_deref())
    }

    /// The first participant not named `name`, lower-cased: the usual other party of a file.
    pub fn other_than(&self, name: &str) -> Option<String> {
        self.participants
            .iter()
            .find(|p| !p.name.eq_ignore_ascii_case(name))
            .map(|p| p.name.to_ascii_lowercase())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_topics() {
        for n in Action::NAMES {
            assert_eq!(Action::parse(n).unwrap().as_str(), *n);
        }
        for n in StepStatus::NAMES {
            assert_eq!(StepStatus::parse(n).unwrap().as_str(), *n);
        }
        for n in IssueStatus::NAMES {
            assert_eq!(IssueStatus::parse(n).unwrap().as_str(), *n);
        }
        for n in Severity::NAMES {
            assert_eq!(Severity::parse(n).unwrap().as_str(), *n);
        }
        assert_eq!(Severity::parse("Critical"), Some(Severity::Critical));
        assert!(Action::parse("{action_type}").is_none());
        assert!(check_topic("regional-federalism-design").is_ok());
        assert!(check_topic("api_v2").is_ok());
        for bad in ["", "../x", "A", "a b", "-x", "a/b", &"a".repeat(65)] {
            assert!(check_topic(bad).is_err(), "{bad:?}");
        }
    }
}
