//! Tests of the tracker format: round trips, edits in place, corrupt files.

use std::path::Path;

use proptest::prelude::*;

use super::{Block, TEMPLATE, Tracker, new_tracker_text};
use crate::error::Error;
use crate::review::{Action, Issue, IssueStatus, Severity, StepStatus, one_line};

/// A tracker as a person following the seed would write it: the seed's snippets, prose,
/// an extra section, odd spacing, the other field style, and a filled table.
const HAND: &str = "# Review: regional federalism

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

fn parse(text: &str) -> crate::error::Result<Tracker> {
    Tracker::parse(Path::new("t.md"), text)
}

#[test]
fn a_hand_written_tracker_round_trips_byte_for_byte() {
    let t = parse(HAND).unwrap();
    assert_eq!(t.render(), HAND);
    let v = t.view();
    assert_eq!(v.meta.topic.as_deref(), Some("regional-federalism-design"));
    assert_eq!(v.meta.role_of("codex"), Some("implementer"));
    assert_eq!(
        v.current.next_action.as_deref(),
        Some("implement the agreed changes")
    );
    assert_eq!(
        (v.steps.len(), v.steps[1].actor.as_str(), v.steps[1].status),
        (3, "Codex", StepStatus::Done)
    );
    let summary = "Found 4 issues; see `ISSUE-01`..`ISSUE-04` | with a pipe";
    assert_eq!(v.steps[0].summary.as_deref(), Some(summary));
    assert_eq!(v.open_step().unwrap().number, 3);
    let titles: Vec<&str> = v.issues.iter().map(|i| i.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Elections | NPV",
            "Armed forces `two-key`",
            "Judicial timelines",
            "C:\\path stays"
        ]
    );
    assert_eq!(
        (v.issues[1].severity, &v.issues[1].resolution),
        (Severity::High, &None)
    );
    assert!(v.agreements[1].disputed);
    assert_eq!(
        v.agreements[0].adopted.as_deref(),
        Some("Claude's position adopted")
    );
    assert_eq!(
        (v.handoff_prompts.len(), v.handoff_prompts[0].step),
        (1, Some(3))
    );
    assert!(
        v.handoff_prompts[0]
            .text
            .ends_with("## Not a heading: inside the fence")
    );
}

#[test]
fn an_edit_changes_only_its_lines_in_their_own_style() {
    let mut t = parse(HAND).unwrap();
    t.set_issue("ISSUE-02", IssueStatus::Resolved, Some("two-key | done"))
        .unwrap();
    t.set(Block::Meta, &[("Last updated", "2026-01-28")])
        .unwrap();
    t.set(Block::Step(2), &[("Summary", "changed")]).unwrap();
    let out = t.render();
    let diff: Vec<(&str, &str)> = HAND
        .lines()
        .zip(out.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        diff,
        [
            (
                "- **Last updated:** 2026-01-27",
                "- **Last updated:** 2026-01-28"
            ),
            (
                "* **Summary**: Agreed with all but ISSUE-03",
                "* **Summary**: changed"
            ),
            (
                "| ISSUE-02 | High | Armed forces `two-key` | open |  |",
                "| ISSUE-02 | High | Armed forces `two-key` | resolved | two-key \\| done |"
            ),
        ]
    );
    assert_eq!(HAND.lines().count(), out.lines().count());
    assert_eq!(
        parse(&out).unwrap().view().issues[1].resolution.as_deref(),
        Some("two-key | done")
    );
}

#[test]
fn crlf_files_stay_crlf() {
    let crlf = HAND.replace('\n', "\r\n");
    let mut t = parse(&crlf).unwrap();
    assert_eq!(t.render(), crlf);
    t.add_agreement("New point - both", false).unwrap();
    t.set(Block::Meta, &[("Status", "closed")]).unwrap();
    let out = t.render();
    assert!(out.contains("- New point - both\r\n"));
    assert!(out.contains("- **Status:** closed\r\n"));
    assert!(!out.replace("\r\n", "").contains('\n'));
}

#[test]
fn corrupt_trackers_name_the_line() {
    let cases = [
        (HAND.replace("### 02 - response", "### two"), Some(30)),
        (HAND.replace("### 03", "### 04"), Some(39)),
        (
            HAND.replace("- **Status:** planned", "- **Status:** maybe"),
            Some(41),
        ),
        (
            HAND.replace("| ISSUE-03 | medium |", "| ISSUE-01 | medium |"),
            Some(55),
        ),
        (
            HAND.replace("| ISSUE-04 | low |", "| ISSUE-04 | low | x |"),
            Some(56),
        ),
        (
            HAND.replace("| ISSUE-04 | low |", "| ISSUE-04 | tiny |"),
            Some(56),
        ),
        (HAND.replace("## Agreements Log", "## Meta"), Some(58)),
        ("# nothing\n".to_string(), None),
        ("\u{0}\u{1}binary".to_string(), None),
        // The seed's template, placeholders and all, is not a tracker.
        (TEMPLATE.to_string(), Some(8)),
    ];
    for (text, line) in cases {
        match parse(&text) {
            Err(Error::Corrupt { line: l, .. }) => assert_eq!(l, line, "{text}"),
            other => panic!("expected Corrupt at {line:?}, got {other:?}"),
        }
    }
}

fn fresh() -> Tracker {
    let text = new_tracker_text("t", "src/", "2026-01-28", "Claude", "Gemini");
    let mut t = parse(&text).unwrap();
    t.set_prompt("Claude", 1, "Review src/.").unwrap();
    t
}

#[test]
fn a_new_tracker_reads_back() {
    let t = fresh();
    let v = t.view();
    let first = (
        v.current.next_actor.as_str(),
        v.steps.len(),
        v.steps[0].action,
    );
    assert_eq!(first, ("Claude", 1, Some(Action::Review)));
    assert_eq!(v.prompt_for("claude", 1).unwrap().text, "Review src/.");
    assert_eq!(v.meta.role_of("gemini"), Some("implementer"));
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
        let titles: Vec<String> = titles.iter().map(|t| one_line(t)).collect();
        prop_assume!(titles.iter().all(|t| !t.is_empty()));
        for (i, title) in titles.iter().enumerate() {
            let (id, severity, status) = (format!("ISSUE-{:02}", i + 1), Severity::Low, IssueStatus::Open);
            t.add_issue(&Issue { id, severity, title: title.clone(), status, resolution: None }).unwrap();
        }
        t.set_issue("ISSUE-01", IssueStatus::Resolved, Some(&titles[0])).unwrap();
        for (i, s) in summaries.iter().enumerate() {
            let (s, n) = (one_line(s), i as u32 + 1);
            t.set(Block::Step(n), &[("Status", "done"), ("Summary", &s)]).unwrap();
            t.push_step(n + 1, "Gemini", Action::Response, "").unwrap();
            prop_assert_eq!(t.view().steps[i].summary.clone(), Some(s).filter(|s| !s.is_empty()));
        }
        let agreements: Vec<(String, bool)> = agreements.iter().map(|(a, d)| (one_line(a), *d)).collect();
        for (a, d) in &agreements {
            prop_assume!(!a.is_empty() && !a.starts_with("[DISPUTED]"));
            t.add_agreement(a, *d).unwrap();
        }
        t.set_prompt("Gemini", 2, &prompt).unwrap();
        let view = t.view().clone();
        let titles_read: Vec<String> = view.issues.iter().map(|i| i.title.clone()).collect();
        prop_assert_eq!(&titles_read, &titles);
        prop_assert_eq!(view.issues[0].resolution.clone(), Some(titles[0].clone()));
        let read: Vec<(String, bool)> = view.agreements.iter().map(|a| (a.text.clone(), a.disputed)).collect();
        prop_assert_eq!(read, agreements);
        let lines = |s: &str| s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim().to_string();
        let stored = &view.prompt_for("gemini", 2).unwrap().text;
        prop_assert_eq!(lines(stored), lines(&prompt));
        // parse(render(x)) == x, and render(parse(text)) == text.
        let text = t.render();
        let again = parse(&text).unwrap();
        prop_assert_eq!(again.view(), &view);
        prop_assert_eq!(again.render(), text);
    }

    #[test]
    fn extra_lines_anywhere_survive(at in 0usize..80, extra in "[a-zA-Z0-9 .,:!?-]{0,30}") {
        let mut lines: Vec<&str> = HAND.lines().collect();
        lines.insert(at.min(lines.len()), &extra);
        let text = lines.join("\n") + "\n";
        if let Ok(t) = parse(&text) {
            prop_assert_eq!(t.render(), text);
        }
    }
}
