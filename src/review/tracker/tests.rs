//! Tests of the tracker format: round trips, edits in place, corrupt files.

use std::path::Path;

use proptest::prelude::*;

use super::{Block, TEMPLATE, Tracker, new_tracker_text};
use crate::error::Error;
use crate::review::{Action, Issue, IssueStatus, Severity, StepStatus, one_line};

/// A tracker as a person following the seed would write it: the seed's snippets, prose, an
/// extra section, odd spacing, the other field style, a filled table and a fenced prompt.
const HAND: &str = include_str!("hand.md");

fn parse(text: &str) -> crate::error::Result<Tracker> {
    Tracker::parse(Path::new("t.md"), text)
}

#[test]
fn a_hand_written_tracker_round_trips_byte_for_byte() {
    let t = parse(HAND).unwrap();
    assert_eq!(t.render(), HAND);
    let v = t.view;
    assert_eq!(v.meta.topic.as_deref(), Some("regional-federalism-design"));
    assert_eq!(v.meta.role_of("codex"), Some("implementer"));
    let next = v.current.next_action.as_deref();
    assert_eq!(next, Some("implement the agreed changes"));
    let step = &v.steps[1];
    let got = (step.number, &*step.actor, step.status);
    assert_eq!(got, (2, "Codex", StepStatus::Done));
    let summary = v.steps[0].summary.as_deref();
    let want = "Found 4 issues; see `ISSUE-01`..`ISSUE-04` | with a pipe";
    assert_eq!(summary, Some(want));
    assert_eq!(v.open_step().unwrap().number, 3);
    let titles: Vec<&str> = v.issues.iter().map(|i| &*i.title).collect();
    let want = [
        "Elections | NPV",
        "Armed forces `two-key`",
        "Judicial timelines",
        "C:\\path stays",
    ];
    assert_eq!(titles, want);
    let issue = &v.issues[1];
    assert_eq!((issue.severity, &issue.resolution), (Severity::High, &None));
    let adopted = (v.agreements[0].adopted.as_deref(), v.agreements[1].disputed);
    assert_eq!(adopted, (Some("Claude's position adopted"), true));
    let prompt = &v.handoff_prompts[0];
    assert_eq!((v.handoff_prompts.len(), prompt.step), (1, Some(3)));
    assert!(prompt.text.ends_with("## Not a heading: inside the fence"));
}

#[test]
fn an_edit_changes_only_its_lines_in_their_own_style() {
    let mut t = parse(HAND).unwrap();
    let (resolution, updated) = (Some("two-key | done"), ("Last updated", "2026-01-28"));
    t.set_issue("ISSUE-02", IssueStatus::Resolved, resolution)
        .unwrap();
    t.set(Block::Meta, &[updated]).unwrap();
    t.set(Block::Step(2), &[("Summary", "changed")]).unwrap();
    let out = t.render();
    let diff = HAND.lines().zip(out.lines()).filter(|(a, b)| a != b);
    let diff: Vec<String> = diff.map(|(a, b)| format!("{a} => {b}")).collect();
    let want = [
        "- **Last updated:** 2026-01-27 => - **Last updated:** 2026-01-28",
        "* **Summary**: Agreed with all but ISSUE-03 => * **Summary**: changed",
        "| ISSUE-02 | High | Armed forces `two-key` | open |  | => \
| ISSUE-02 | High | Armed forces `two-key` | resolved | two-key \\| done |",
    ];
    assert_eq!(diff, want);
    assert_eq!(HAND.lines().count(), out.lines().count());
    let read = parse(&out).unwrap().view.issues[1].resolution.clone();
    assert_eq!(read.as_deref(), resolution);
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
        ("### 02 - response", "### two", Some(30)),
        ("### 03", "### 04", Some(39)),
        ("- **Status:** planned", "- **Status:** maybe", Some(41)),
        ("| ISSUE-03 | medium |", "| ISSUE-01 | medium |", Some(55)),
        ("| ISSUE-04 | low |", "| ISSUE-04 | low | x |", Some(56)),
        ("| ISSUE-04 | low |", "| ISSUE-04 | tiny |", Some(56)),
        ("## Agreements Log", "## Meta", Some(58)),
        // Whole files in place of HAND.
        (HAND, "# nothing\n", None),
        (HAND, "\u{0}\u{1}binary", None),
        (HAND, TEMPLATE, Some(8)),
    ];
    for (from, to, line) in cases {
        let text = HAND.replace(from, to);
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
            t.push_step("Gemini", Action::Response, "").unwrap();
            prop_assert_eq!(t.view.steps[i].summary.clone(), Some(s).filter(|s| !s.is_empty()));
        }
        let agreements: Vec<(String, bool)> = agreements.iter().map(|(a, d)| (one_line(a), *d)).collect();
        for (a, d) in &agreements {
            prop_assume!(!a.is_empty() && !a.starts_with("[DISPUTED]"));
            t.add_agreement(a, *d).unwrap();
        }
        t.set_prompt("Gemini", 2, &prompt).unwrap();
        let view = t.view.clone();
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
        prop_assert_eq!(&again.view, &view);
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
