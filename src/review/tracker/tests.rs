//! Tests of the tracker format: round trips, edits in place, corrupt files.

use std::path::Path;

use proptest::prelude::*;

use super::Tracker;
use crate::error::Error;
use crate::review::model::{Issue, Step};
use crate::review::template::{NewTracker, TEMPLATE, new_tracker_text};
use crate::review::{Action, IssueStatus, Severity, StepStatus};

/// A tracker as a person following the seed would write it: the seed's snippets, prose,
/// an extra section, odd spacing, the other field style, and a filled table.
pub(crate) const HAND: &str = "# Review: regional federalism

Some words before the first section.

## Meta
- **Topic:** regional-federalism-design
- **Target:** docs/design/
- **Created:** 2026-01-20
- **Last updated:** 2026-01-27
- **Status:** in_progress
- **Participants:** Claude (reviewer), Codex (implementer)
- **Extra:** kept as is

## Current State
- **Next actor:** Codex
- **Next action:**   implement the agreed changes
- **Prompt for next actor:** See Handoff Prompts section below

## Steps
### 01
- **Actor:** Claude
- **Status:** done
- **Action:** review
- **Input:** docs/design/
- **Output:** .metadata/reviews/llms/claude/regional-federalism-design_review_2026_01_20.md
- **Summary:** Found 4 issues; see `ISSUE-01`..`ISSUE-04` | with a pipe
- **Next:** Codex
A free note under the step.

### 02 - response
* **Actor**: Codex
* **Status**: done
* **Action**: response
* **Input**: .metadata/reviews/llms/claude/regional-federalism-design_review_2026_01_20.md
* **Output**: .metadata/review-responses/llms/codex/regional-federalism-design-review/02_response_to_claude_agree_2026_01_21.md
* **Summary**: Agreed with all but ISSUE-03
* **Next**: Claude

### 03
- **Actor:** Codex
- **Status:** planned
- **Action:** implement
- **Input:**
- **Output:**
- **Summary:**
- **Next:**

## Issues
Table tracking all identified problems.

| ID | Severity | Title | Status | Resolution |
|----|----------|-------|--------|------------|
| ISSUE-01 | critical | Elections \\| NPV | resolved | Updated elections design for NPV |
| ISSUE-02 | High | Armed forces `two-key` | open |  |
| ISSUE-03 | medium | Judicial timelines | escalate | |
| ISSUE-04 | low | C:\\path stays | wontfix | not needed |

## Agreements Log
Key positions agreed between LLMs:
- Keep the NPV compact - Claude's position adopted
- [DISPUTED] Judicial timelines - escalated to user, resolved as X

## Notes of our own
Anything at all.

## Handoff Prompts

### For Codex (step 03)
```text
You are Codex. Read the tracker at .metadata/reviews/active/regional-federalism-design-tracker.md.
## Not a heading: inside the fence
```
";

fn hand() -> Tracker {
    Tracker::parse(Path::new("t.md"), HAND).unwrap()
}

#[test]
fn a_hand_written_tracker_round_trips_byte_for_byte() {
    let t = hand();
    assert_eq!(t.render(), HAND);
    let v = t.view();
    assert_eq!(v.meta.topic.as_deref(), Some("regional-federalism-design"));
    assert_eq!(v.meta.participants[1].name, "Codex");
    assert_eq!(v.meta.role_of("codex"), Some("implementer"));
    assert_eq!(v.current.next_actor, "Codex");
    assert_eq!(
        v.current.next_action.as_deref(),
        Some("implement the agreed changes")
    );
    assert_eq!(v.steps.len(), 3);
    assert_eq!(v.steps[1].actor, "Codex");
    assert_eq!(v.steps[1].status, StepStatus::Done);
    assert_eq!(
        v.steps[0].summary.as_deref(),
        Some("Found 4 issues; see `ISSUE-01`..`ISSUE-04` | with a pipe")
    );
    assert_eq!(v.open_step().unwrap().number, 3);
    assert_eq!(v.issues.len(), 4);
    assert_eq!(v.issues[0].title, "Elections | NPV");
    assert_eq!(v.issues[1].severity, Severity::High);
    assert_eq!(v.issues[1].resolution, None);
    assert_eq!(v.issues[3].title, "C:\\path stays");
    assert_eq!(v.agreements.len(), 2);
    assert!(v.agreements[1].disputed);
    assert_eq!(
        v.agreements[0].adopted.as_deref(),
        Some("Claude's position adopted")
    );
    assert_eq!(v.handoff_prompts.len(), 1);
    assert_eq!(v.handoff_prompts[0].step, Some(3));
    assert!(
        v.handoff_prompts[0]
            .text
            .ends_with("## Not a heading: inside the fence")
    );
}

#[test]
fn an_edit_changes_only_its_lines() {
    let mut t = hand();
    t.set_issue("ISSUE-02", IssueStatus::Resolved, Some("two-key | done"))
        .unwrap();
    t.set_meta(&[("Last updated", "2026-01-28")]).unwrap();
    let out = t.render();
    let diff: Vec<(&str, &str)> = HAND
        .lines()
        .zip(out.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        diff,
        vec![
            (
                "- **Last updated:** 2026-01-27",
                "- **Last updated:** 2026-01-28"
            ),
            (
                "| ISSUE-02 | High | Armed forces `two-key` | open |  |",
                "| ISSUE-02 | High | Armed forces `two-key` | resolved | two-key \\| done |"
            ),
        ]
    );
    assert_eq!(HAND.lines().count(), out.lines().count());
    let again = Tracker::parse(Path::new("t.md"), &out).unwrap();
    assert_eq!(
        again.view().issues[1].resolution.as_deref(),
        Some("two-key | done")
    );
}

#[test]
fn the_other_field_style_is_edited_in_place() {
    let mut t = hand();
    t.set_step(2, &[("Summary", "changed")]).unwrap();
    assert!(t.render().contains("* **Summary**: changed\n"));
}

#[test]
fn crlf_files_stay_crlf() {
    let crlf = HAND.replace('\n', "\r\n");
    let mut t = Tracker::parse(Path::new("t.md"), &crlf).unwrap();
    assert_eq!(t.render(), crlf);
    t.add_agreement("New point - both", false).unwrap();
    t.set_meta(&[("Status", "closed")]).unwrap();
    let out = t.render();
    assert!(out.contains("- New point - both\r\n"));
    assert!(out.contains("- **Status:** closed\r\n"));
    assert!(!out.replace("\r\n", "").contains('\n'));
}

#[test]
fn corrupt_trackers_name_the_line() {
    let cases = [
        (HAND.replace("### 02 - response", "### two"), 30),
        (HAND.replace("### 03", "### 04"), 39),
        (
            HAND.replace("- **Status:** planned", "- **Status:** maybe"),
            41,
        ),
        (
            HAND.replace("| ISSUE-03 | medium |", "| ISSUE-01 | medium |"),
            55,
        ),
        (
            HAND.replace("| ISSUE-04 | low |", "| ISSUE-04 | low | x |"),
            56,
        ),
        (
            HAND.replace("| ISSUE-04 | low |", "| ISSUE-04 | tiny |"),
            56,
        ),
        (HAND.replace("## Agreements Log", "## Meta"), 58),
    ];
    for (text, line) in cases {
        match Tracker::parse(Path::new("t.md"), &text) {
            Err(Error::Corrupt { line: l, .. }) => assert_eq!(l, Some(line), "{text}"),
            other => panic!("expected Corrupt at {line}, got {other:?}"),
        }
    }
    assert!(matches!(
        Tracker::parse(Path::new("t.md"), "# nothing\n"),
        Err(Error::Corrupt { .. })
    ));
    assert!(Tracker::parse(Path::new("t.md"), "\u{0}\u{1}binary").is_err());
}

#[test]
fn the_template_is_not_a_tracker() {
    assert!(Tracker::parse(Path::new("t.md"), TEMPLATE).is_err());
}

fn fresh() -> Tracker {
    let text = new_tracker_text(&NewTracker {
        topic: "t",
        target: "src/",
        date: "2026-01-28",
        reviewer: "Claude",
        implementer: "Gemini",
        prompt: "Review src/.",
    });
    Tracker::parse(Path::new("t.md"), &text).unwrap()
}

#[test]
fn a_new_tracker_reads_back() {
    let t = fresh();
    let v = t.view();
    assert_eq!(v.current.next_actor, "Claude");
    assert_eq!(v.steps.len(), 1);
    assert_eq!(v.steps[0].status, StepStatus::Planned);
    assert_eq!(v.steps[0].action, Some(Action::Review));
    assert!(v.issues.is_empty());
    assert_eq!(v.prompt_for("claude", 1).unwrap().text, "Review src/.");
    assert_eq!(v.meta.with_role("implementer").unwrap().name, "Gemini");
}

fn text_strategy() -> impl Strategy<Value = String> {
    // Markdown, pipes, backslashes, backticks, unicode, and stray newlines.
    proptest::string::string_regex("[a-zA-Z0-9 |\\\\`*_#\\[\\]()<>:.\\-éß\n]{1,40}").unwrap()
}

proptest! {
    #[test]
    fn written_values_read_back(
        titles in proptest::collection::vec(text_strategy(), 1..5),
        summaries in proptest::collection::vec(text_strategy(), 1..4),
        agreements in proptest::collection::vec((text_strategy(), any::<bool>()), 0..3),
        prompt in text_strategy(),
    ) {
        let mut t = fresh();
        let mut expect_titles = Vec::new();
        for (i, title) in titles.iter().enumerate() {
            let title = crate::review::one_line(title);
            prop_assume!(!title.is_empty());
            t.add_issue(&Issue {
                id: format!("ISSUE-{:02}", i + 1),
                severity: Severity::Low,
                title: title.clone(),
                status: IssueStatus::Open,
                resolution: None,
            }).unwrap();
            expect_titles.push(title);
        }
        t.set_issue("ISSUE-01", IssueStatus::Resolved, Some(&crate::review::one_line(&titles[0]))).unwrap();
        for (i, s) in summaries.iter().enumerate() {
            let s = crate::review::one_line(s);
            let n = u32::try_from(i + 1).unwrap();
            t.set_step(n, &[("Status", "done"), ("Summary", &s)]).unwrap();
            t.push_step(&Step {
                number: n + 1, actor: "Gemini".into(), status: StepStatus::Planned,
                action: Some(Action::Response), input: None, output: None, summary: None, next: None,
            }).unwrap();
            prop_assert_eq!(t.view().steps[i].summary.clone(), Some(s).filter(|s| !s.is_empty()));
        }
        for (a, d) in &agreements {
            let a = crate::review::one_line(a);
            prop_assume!(!a.is_empty() && !a.starts_with("[DISPUTED]"));
            t.add_agreement(&a, *d).unwrap();
        }
        t.set_prompt("Gemini", 2, &prompt).unwrap();
        let view = t.view().clone();
        let titles_read: Vec<String> = view.issues.iter().map(|i| i.title.clone()).collect();
        prop_assert_eq!(&titles_read, &expect_titles);
        prop_assert_eq!(view.issues[0].resolution.clone(), Some(expect_titles[0].clone()));
        let texts: Vec<(String, bool)> = view.agreements.iter().map(|a| (a.text.clone(), a.disputed)).collect();
        let expect: Vec<(String, bool)> = agreements.iter().map(|(a, d)| (crate::review::one_line(a), *d)).collect();
        prop_assert_eq!(texts, expect);
        let trimmed: Vec<&str> = prompt.lines().map(str::trim_end).collect();
        let stored = view.prompt_for("gemini", 2).unwrap().text.clone();
        let got = stored.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
        let want = trimmed.join("\n");
        prop_assert_eq!(got.trim(), want.trim());
        // parse(render(x)) == x, and render(parse(text)) == text.
        let text = t.render();
        let again = Tracker::parse(Path::new("t.md"), &text).unwrap();
        prop_assert_eq!(again.view(), &view);
        prop_assert_eq!(again.render(), text);
    }

    #[test]
    fn extra_lines_anywhere_survive(at in 0usize..80, extra in "[a-zA-Z0-9 .,:!?-]{0,30}") {
        let mut lines: Vec<&str> = HAND.lines().collect();
        let at = at.min(lines.len());
        lines.insert(at, &extra);
        let text = lines.join("\n") + "\n";
        if let Ok(t) = Tracker::parse(Path::new("t.md"), &text) {
            prop_assert_eq!(t.render(), text);
        }
    }
}
