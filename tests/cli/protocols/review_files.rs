//! The review tracker's files: written by hand, locked by another agent, added to concurrently,
//! planted in hostile shapes.

use std::collections::BTreeSet;

use crate::fixture::Review;
use crate::planted::{
    Case, Kind, NEW_WEB, always, dir_ok, never, one, one_review, read, sweep, write, zero,
};
use crate::protocols::review::{TRACKER, new_review, show};
use crate::support::Env;

fn four(_: Kind) -> i32 {
    4
}

const STEP: &[&str] = &[
    "review",
    "step",
    "api",
    "--as",
    "Claude",
    "--action",
    "review",
    "--output",
    "out.md",
    "--summary",
    "s",
    "--next",
    "Codex",
];

const ISSUE: &[&str] = &[
    "review",
    "issue",
    "api",
    "add",
    "--severity",
    "low",
    "--title",
    "x",
];

#[test]
fn hostile_review_trackers() {
    sweep(&Case {
        target: ".metadata/reviews/active/api-tracker.md",
        setup: one_review,
        age: 0,
        // Even a small one has no `## Meta`: listed.
        listed: always,
        steps: &[
            read(None, &["review", "show", "api"], one),
            read(None, &["review", "show", "api", "--json"], one),
            read(None, &["review", "next", "api"], one),
            read(None, &["status"], zero),
            read(None, STEP, one),
            read(None, ISSUE, one),
            read(None, &["review", "close", "api"], one),
            write(None, NEW_WEB, zero),
        ],
    });
}

#[test]
fn hostile_review_archive_and_template() {
    // Neither is read before step 21; nothing about them may stop the review.
    for target in [
        ".metadata/reviews/active/api-tracker-archive.md",
        ".metadata/templates/review-tracker-template.md",
    ] {
        sweep(&Case {
            target,
            setup: one_review,
            age: 0,
            listed: never,
            steps: &[
                read(None, &["review", "show", "api"], zero),
                read(None, &["review", "next", "api"], zero),
                write(None, STEP, zero),
                write(None, ISSUE, zero),
                read(None, &["review", "close", "api"], four),
                write(None, NEW_WEB, zero),
            ],
        });
    }
}

#[test]
fn a_hostile_active_reviews_folder() {
    fn missing(k: Kind) -> i32 {
        if k == Kind::Dir { 2 } else { 1 }
    }
    sweep(&Case {
        target: ".metadata/reviews/active",
        setup: one_review,
        age: 0,
        listed: never,
        steps: &[
            read(None, &["review", "show", "api"], missing),
            read(None, &["review", "next", "api"], missing),
            read(None, &["status"], zero),
            read(None, STEP, missing),
            read(None, &["review", "close", "api"], missing),
            write(None, NEW_WEB, dir_ok),
        ],
    });
}

/// The seed's snippets, filled in by hand, with prose, an extra section and odd spacing.
const HAND: &str = "# Review Tracker: api

## Meta
- **Topic:** api
- **Target:** docs/api.md
- **Created:** 2026-01-20
- **Last updated:** 2026-01-21
- **Status:** in_progress
- **Participants:** Claude (reviewer), Codex (implementer)

## Current State
- **Next actor:** Codex
- **Next action:** respond to the review
- **Prompt for next actor:** See Handoff Prompts section below

## Steps

### 01
- **Actor:** Claude
- **Status:** done
- **Action:** review
- **Input:** docs/api.md
- **Output:** .metadata/reviews/llms/claude/api_review_2026_01_20.md
- **Summary:** Two issues
- **Next:** Codex

### 02
- **Actor:** Codex
- **Status:** planned
- **Action:** response
- **Input:** .metadata/reviews/llms/claude/api_review_2026_01_20.md
- **Output:**
- **Summary:**
- **Next:**

## Issues
| ID | Severity | Title | Status | Resolution |
|----|----------|-------|--------|------------|
| ISSUE-01 | critical | Example issue | resolved | How it was fixed |
| ISSUE-07 | Medium | Rate limits \\| quotas | open |  |

## Agreements Log
Key positions agreed between LLMs:
- Keep v1 paths - Codex
- [DISPUTED] Decision 2 - escalated to user, resolved as X

## Our own notes
Kept  as   is.

## Handoff Prompts

Codex: read the tracker and respond.
";

#[test]
fn a_hand_written_tracker_is_read_and_edited_in_place() {
    let env = Env::new();
    env.write(TRACKER, HAND);
    let s = show(&env, "api");
    assert_eq!(s.steps.len(), 2);
    assert_eq!(s.issues[1].id, "ISSUE-07");
    assert_eq!(s.issues[1].severity, "medium");
    assert_eq!(s.issues[1].title, "Rate limits | quotas");
    assert_eq!(s.agreements.len(), 2);
    assert_eq!(env.read(TRACKER), HAND, "reading writes nothing");

    let api = Review::new(&env, "api");
    api.at("2026-01-22T10:00:00+01:00")
        .add_issue("low", "a|b")
        .ok()
        .stdout_has("ISSUE-08");
    let after = env.read(TRACKER);
    let expected = HAND
        .replace("- **Last updated:** 2026-01-21", "- **Last updated:** 2026-01-22")
        .replace(
            "| ISSUE-07 | Medium | Rate limits \\| quotas | open |  |\n",
            "| ISSUE-07 | Medium | Rate limits \\| quotas | open |  |\n| ISSUE-08 | low | a\\|b | open |  |\n",
        );
    assert_eq!(after, expected);

    // A corrupt tracker: the line is named, nothing is written.
    let broken = HAND.replace("- **Status:** planned", "- **Status:** someday");
    env.write(TRACKER, &broken);
    api.add_issue("low", "x")
        .code(1)
        .stderr_has("at line 29")
        .stderr_has("someday");
    api.cmd("show", &[]).code(1);
    assert_eq!(env.read(TRACKER), broken);
    env.cmd()
        .args(["status", "--json"])
        .ok()
        .stdout_has("api-tracker.md");
}

#[test]
fn concurrent_issue_adds_lose_nothing() {
    let env = Env::new();
    new_review(&env, "2026-01-20T10:00:00+01:00");
    let procs = 8;
    let each = 5;
    let children: Vec<_> = (0..procs)
        .map(|p| {
            let script = (0..each)
                .map(|i| {
                    format!(
                        "\"{}\" review issue api add --severity low --title 'p{p} i{i}' || exit 1",
                        crate::support::coord_bin()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let mut c = std::process::Command::new("sh");
            c.arg("-c")
                .arg(script)
                .current_dir(env.root())
                .env("COORD_DIR", env.root())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let mut printed = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        printed.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string),
        );
    }
    let s = show(&env, "api");
    assert_eq!(s.issues.len(), procs * each);
    let ids: BTreeSet<&str> = s.issues.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids.len(), procs * each, "ids are unique");
    let titles: BTreeSet<&str> = s.issues.iter().map(|i| i.title.as_str()).collect();
    assert_eq!(titles.len(), procs * each, "no update lost");
    let printed: BTreeSet<String> = printed.into_iter().collect();
    let expect: BTreeSet<String> = (1..=procs * each)
        .map(|n| format!("ISSUE-{n:02}"))
        .collect();
    assert_eq!(printed, expect);
}

#[test]
fn a_tracker_locked_by_another_agent_is_not_written() {
    let env = Env::new();
    new_review(&env, "2026-01-20T10:00:00+01:00");
    let api = Review::new(&env, "api");
    env.agent("gemini").args(["presence", ".", "editing"]).ok();
    env.agent("gemini").args(["lock", TRACKER]).ok();
    let before = env.read(TRACKER);
    api.add_issue("low", "x")
        .agent("claude")
        .code(3)
        .stderr_has("gemini");
    assert_eq!(env.read(TRACKER), before);
    // The holder itself may edit.
    api.add_issue("low", "x")
        .agent("gemini")
        .ok()
        .stdout_has("ISSUE-01");
}
