//! Views for unit tests of the rules: a fresh tracker's view with the issues and steps a test
//! needs.

use std::path::Path;

use super::model::{Issue, Step, View};
use super::template::{NewTracker, new_tracker_text};
use super::tracker::Tracker;
use super::{Action, IssueStatus, Severity, StepStatus};

/// A new tracker's view (Claude reviews, Codex implements), with these issues and steps, every
/// step Claude's.
pub(crate) fn view_with(issues: Vec<Issue>, steps: Vec<(Action, StepStatus)>) -> View {
    let text = new_tracker_text(&NewTracker {
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

/// A high-severity issue titled `title of ID`.
pub(crate) fn issue(id: &str, status: IssueStatus, res: Option<&str>) -> Issue {
    Issue {
        id: id.into(),
        severity: Severity::High,
        title: format!("title of {id}"),
        status,
        resolution: res.map(str::to_string),
    }
}
