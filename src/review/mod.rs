//! The review tracker (seed 003): a markdown file per review topic, with Meta, Current State,
//! Steps, Issues, Agreements Log and Handoff Prompts, that two agents take turns updating.
//!
//! From the bottom up (each module uses only those above it in this list):
//! - this module: the seed's names (actions, statuses, severities) and topic rules;
//! - `syntax`: the markdown lines a tracker is written in (headings, fences, fields, table
//!   cells), read and written in one place;
//! - [`model`]: what a tracker says, as plain data ([`model::View`]);
//! - `parse` reads a tracker's lines, section by section, into a `View` and the index of
//!   which line holds what;
//! - [`template`] holds the text of a new tracker and the seed's template;
//! - [`tracker`] owns the file: [`tracker::Tracker`] edits it line by line, so every line a
//!   command did not mean to change stays byte for byte as it was;
//! - [`paths`] owns the seed's naming conventions for review, response and changelog files;
//! - [`commit`] owns `close --commit`: the seed's message format and running `git`;
//! - [`rules`] owns the protocol: who may finish which step, what comes next, the archive
//!   policy, the completion criteria, and the read-modify-write of a tracker under the
//!   workspace mutex.
//!
//! Invariants: a tracker is only ever replaced whole (`fsutil::replace_durable`) while the
//! workspace mutex is held, after it was read under that same mutex, so two commands running at
//! once never lose an update; a tracker that cannot be parsed is reported with its line number
//! and never written.

pub mod commit;
#[cfg(test)]
mod fixtures;
pub mod model;
mod parse;
pub mod paths;
pub mod rules;
mod syntax;
pub mod template;
pub mod tracker;

use serde::Serialize;

use crate::error::{Error, Result};

/// What a step does (the seed's action types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Initial analysis of the target documents.
    Review,
    /// Reply to a review or a counter-response.
    Response,
    /// Make agreed changes to source files.
    Implement,
    /// Check an implementation for correctness.
    Verify,
    /// Address issues found in verification.
    Fix,
}

impl Action {
    /// Every action's name, in the seed's order.
    pub const NAMES: [&'static str; 5] = ["review", "response", "implement", "verify", "fix"];

    /// Read an action name (case is ignored).
    pub fn parse(text: &str) -> Option<Action> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "review" => Action::Review,
            "response" => Action::Response,
            "implement" => Action::Implement,
            "verify" => Action::Verify,
            "fix" => Action::Fix,
            _ => return None,
        })
    }

    /// The name written in files.
    pub fn as_str(self) -> &'static str {
        Action::NAMES[self as usize]
    }
}

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Assigned, not started.
    Planned,
    /// Being worked on.
    InProgress,
    /// Finished by its actor.
    Done,
    /// Cannot go on without help.
    Blocked,
    /// Nothing was needed.
    NoAction,
}

impl StepStatus {
    /// Every status name.
    pub const NAMES: [&'static str; 5] = ["planned", "in_progress", "done", "blocked", "no_action"];

    /// Read a status name (case is ignored).
    pub fn parse(text: &str) -> Option<StepStatus> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "planned" => StepStatus::Planned,
            "in_progress" => StepStatus::InProgress,
            "done" => StepStatus::Done,
            "blocked" => StepStatus::Blocked,
            "no_action" => StepStatus::NoAction,
            _ => return None,
        })
    }

    /// The name written in files.
    pub fn as_str(self) -> &'static str {
        StepStatus::NAMES[self as usize]
    }

    /// Whether the step still waits for its actor.
    pub fn is_open(self) -> bool {
        matches!(self, StepStatus::Planned | StepStatus::InProgress)
    }
}

/// Where an issue stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueStatus {
    /// Not dealt with yet.
    Open,
    /// Fixed.
    Resolved,
    /// Deliberately left as is.
    Wontfix,
    /// Disputed: the user decides.
    Escalate,
}

impl IssueStatus {
    /// Every status name.
    pub const NAMES: [&'static str; 4] = ["open", "resolved", "wontfix", "escalate"];

    /// Read a status name (case is ignored).
    pub fn parse(text: &str) -> Option<IssueStatus> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "open" => IssueStatus::Open,
            "resolved" => IssueStatus::Resolved,
            "wontfix" => IssueStatus::Wontfix,
            "escalate" => IssueStatus::Escalate,
            _ => return None,
        })
    }

    /// The name written in files.
    pub fn as_str(self) -> &'static str {
        IssueStatus::NAMES[self as usize]
    }

    /// Whether the issue no longer stands in the way of closing.
    pub fn is_settled(self) -> bool {
        matches!(self, IssueStatus::Resolved | IssueStatus::Wontfix)
    }
}

/// How bad an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Blocks functionality or creates contradictions.
    Critical,
    /// Significant ambiguity or operational gap.
    High,
    /// Missing detail that could cause problems.
    Medium,
    /// Enhancement or clarification.
    Low,
}

impl Severity {
    /// Every severity name.
    pub const NAMES: [&'static str; 4] = ["critical", "high", "medium", "low"];

    /// Read a severity (case is ignored: the seed writes both `Critical` and `critical`).
    pub fn parse(text: &str) -> Option<Severity> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "critical" => Severity::Critical,
            "high" => Severity::High,
            "medium" => Severity::Medium,
            "low" => Severity::Low,
            _ => return None,
        })
    }

    /// The name written in files.
    pub fn as_str(self) -> &'static str {
        Severity::NAMES[self as usize]
    }
}

/// Check a review topic: it becomes part of file names, so 1-64 characters of `a-z`, `0-9`,
/// `-` and `_`, starting with a letter or digit (`regional-federalism-design`).
///
/// # Errors
///
/// [`Error::BadInput`] naming the topic.
pub fn check_topic(topic: &str) -> Result<()> {
    let b = topic.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::bad_input(format!(
            "invalid review topic `{topic}`: use 1-64 characters of a-z, 0-9, `-` and `_`, starting with a letter or digit"
        )))
    }
}

/// Text for one line of the tracker: newlines and other control characters become spaces,
/// surrounding blanks are trimmed (the tracker is line-based; a newline could forge a field).
pub fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    flat.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for n in Action::NAMES {
            assert_eq!(Action::parse(n).unwrap().as_str(), n);
        }
        for n in StepStatus::NAMES {
            assert_eq!(StepStatus::parse(n).unwrap().as_str(), n);
        }
        for n in IssueStatus::NAMES {
            assert_eq!(IssueStatus::parse(n).unwrap().as_str(), n);
        }
        for n in Severity::NAMES {
            assert_eq!(Severity::parse(n).unwrap().as_str(), n);
        }
        assert_eq!(Severity::parse("Critical"), Some(Severity::Critical));
        assert!(Action::parse("{action_type}").is_none());
    }

    #[test]
    fn topics() {
        assert!(check_topic("regional-federalism-design").is_ok());
        assert!(check_topic("api_v2").is_ok());
        for bad in ["", "../x", "A", "a b", "-x", "a/b", &"a".repeat(65)] {
            assert!(check_topic(bad).is_err(), "{bad:?}");
        }
    }
}
