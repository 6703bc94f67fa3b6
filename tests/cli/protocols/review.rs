//! `coord review …` (seed 003) through the real binary.

use serde::Deserialize;

use crate::fixture::{Review, handoff_output as output};
use crate::support::Env;

pub(crate) const TRACKER: &str = ".metadata/reviews/active/api-tracker.md";

pub(crate) const CLOSED: &str = ".metadata/reviews/closed/api-tracker.md";

#[derive(Debug, Deserialize)]
pub(crate) struct Shown {
    pub(crate) meta: Meta,
    pub(crate) current: Current,
    pub(crate) steps: Vec<Step>,
    pub(crate) issues: Vec<Issue>,
    pub(crate) agreements: Vec<Agreement>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Meta {
    pub(crate) status: String,
    pub(crate) last_updated: Option<String>,
    pub(crate) participants: Vec<Participant>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Participant {
    pub(crate) name: String,
    pub(crate) role: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Current {
    pub(crate) next_actor: String,
    pub(crate) next_action: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Step {
    pub(crate) number: u32,
    pub(crate) actor: String,
    pub(crate) status: String,
    pub(crate) action: Option<String>,
    pub(crate) output: Option<String>,
    pub(crate) summary: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Issue {
    pub(crate) id: String,
    pub(crate) severity: String,
    pub(crate) title: String,
    pub(crate) status: String,
    pub(crate) resolution: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Agreement {
    pub(crate) text: String,
    pub(crate) disputed: bool,
}

pub(crate) fn show(env: &Env, topic: &str) -> Shown {
    Review::new(env, topic).show()
}

/// The review `api` of `docs/api.md`, Claude reviewing and Codex implementing, started at `day`.
pub(crate) fn new_review<'e>(env: &'e Env, day: &'e str) -> Review<'e> {
    env.write("docs/api.md", "# API\n");
    let api = Review::new(env, "api").at(day);
    api.start("docs/api.md", "Claude", "Codex")
        .ok()
        .stdout_has(TRACKER);
    api
}

#[test]
fn a_full_review_cycle() {
    let env = Env::new();
    new_review(&env, "2026-01-20T10:00:00+01:00");
    let api = Review::new(&env, "api");
    assert!(env.exists(".metadata/templates/review-tracker-template.md"));
    let s = show(&env, "api");
    assert_eq!(s.meta.status, "in_progress");
    assert_eq!(s.meta.participants[0].name, "Claude");
    assert_eq!(s.meta.participants[1].role.as_deref(), Some("implementer"));
    assert_eq!(s.current.next_actor, "Claude");
    assert_eq!(s.steps.len(), 1);
    assert_eq!(
        (s.steps[0].actor.as_str(), s.steps[0].status.as_str()),
        ("Claude", "planned")
    );
    assert!(s.issues.is_empty());
    api.cmd("next", &[])
        .ok()
        .stdout_has("Next actor:  Claude (reviewer)")
        .stdout_has("coord -a claude review step api --action review");
    // A second `new` is refused.
    api.start("docs/api.md", "a", "b")
        .code(3)
        .stderr_has("already exists");

    // Step 01: review. Refusals first, and they change nothing.
    let day = "2026-01-21T09:00:00+01:00";
    let at = api.at(day);
    let review = at.path("review", "claude", &[]);
    assert_eq!(
        review,
        ".metadata/reviews/llms/claude/api_review_2026_01_21.md"
    );
    env.write(&review, "# Review\n\nNo handoff here.\n");
    let before = env.snapshot();
    at.step("claude", "review", &review, "x", "codex")
        .code(2)
        .stderr_has("Handoff Prompt for Next Actor");
    output(
        &env,
        &review,
        "Findings.",
        "Codex: answer the review (step 02).",
    );
    let before_tracker = env.read(TRACKER);
    at.step("codex", "review", &review, "x", "codex")
        .code(3)
        .stderr_has("belongs to Claude");
    at.cmd(
        "step",
        &[
            "--action",
            "review",
            "--output",
            &review,
            "--summary",
            "x",
            "--next",
            "codex",
        ],
    )
    .agent("codex")
    .code(3);
    at.step("claude", "review", &review, "x", "codex, claude")
        .code(2);
    at.step("claude", "review", "missing.md", "x", "codex")
        .code(2);
    assert_eq!(env.read(TRACKER), before_tracker, "refusals write nothing");
    let _ = before;

    at.add_issue("high", "Pagination | cursor vs **offset**")
        .ok()
        .stdout_has("ISSUE-01");
    at.add_issue("low", "Typo").ok().stdout_has("ISSUE-02");
    at.step(
        "claude",
        "review",
        &review,
        "Found 2 issues | see `ISSUE-01`",
        "codex",
    )
    .ok()
    .stdout_has("step 02 planned for Codex (response)");
    let s = show(&env, "api");
    assert_eq!(s.meta.last_updated.as_deref(), Some("2026-01-21"));
    assert_eq!(s.current.next_actor, "Codex");
    assert_eq!(s.current.next_action.as_deref(), Some("response (step 02)"));
    assert_eq!(s.steps[0].status, "done");
    assert_eq!(s.steps[0].output.as_deref(), Some(review.as_str()));
    assert_eq!(
        s.steps[0].summary.as_deref(),
        Some("Found 2 issues | see `ISSUE-01`")
    );
    assert_eq!(s.steps[1].actor, "Codex");
    assert_eq!(s.steps[1].action.as_deref(), Some("response"));
    assert_eq!(s.issues[0].title, "Pagination | cursor vs **offset**");
    assert_eq!(s.issues[0].severity, "high");
    let text = env.read(TRACKER);
    assert!(text.contains("| ISSUE-01 | high | Pagination \\| cursor vs **offset** | open |  |"));
    assert!(
        text.contains("### For Codex (step 02)\n```text\nCodex: answer the review (step 02).\n```")
    );
    api.cmd("next", &["--prompt"])
        .ok()
        .stdout_has("Codex: answer the review (step 02).");

    // Step 02: response; an agreement and a dispute.
    let day = "2026-01-22T09:00:00+01:00";
    let at = api.at(day);
    let resp = at.path("response", "codex", &["--description", "Agree on most"]);
    assert_eq!(
        resp,
        ".metadata/review-responses/llms/codex/api-review/02_response_to_claude_agree_on_most_2026_01_22.md"
    );
    output(&env, &resp, "Agree.", "Claude: confirm (step 03).");
    at.agree("Use cursors").args(["--adopted", "Claude"]).ok();
    at.agree("Typo policy").arg("--disputed").ok();
    at.set_issue("ISSUE-02", "escalate").ok();
    at.step("codex", "response", &resp, "agreed on ISSUE-01", "claude")
        .ok()
        .stdout_has("(response)");
    let s = show(&env, "api");
    assert_eq!(s.agreements.len(), 2);
    assert_eq!(s.agreements[0].text, "Use cursors - Claude");
    assert!(s.agreements[1].disputed);
    assert!(env.read(TRACKER).contains("- [DISPUTED] Typo policy\n"));
    assert_eq!(s.issues[1].status, "escalate");

    // Step 03: the reviewer answers and hands over for implementation.
    at.step("claude", "response", &resp, "fine", "codex")
        .ok()
        .stdout_has("(implement)");
    // Step 04: implement.
    let changelog = ".metadata/changelog/codex_claude_api_cursors_2026_01_22.md";
    output(
        &env,
        changelog,
        "Changed docs/api.md.",
        "Claude: verify (step 05).",
    );
    at.step("codex", "implement", changelog, "cursors in", "claude")
        .ok()
        .stdout_has("(verify)");
    // Closing now: exit 4, naming what is missing, nothing moved.
    api.cmd("close", &[])
        .code(4)
        .stderr_has("ISSUE-01 is open")
        .stderr_has("ISSUE-02 is escalate")
        .stderr_has("not a verify step");
    assert!(env.exists(TRACKER) && !env.exists(CLOSED));

    // Step 05: verify; issues settled.
    let day = "2026-01-23T09:00:00+01:00";
    let at = api.at(day);
    let verify =
        ".metadata/review-responses/llms/claude/api-review/05_verify_to_codex_ok_2026_01_23.md";
    output(&env, verify, "All good.", "Codex: nothing left; close it.");
    at.step("claude", "verify", verify, "verified", "codex")
        .ok()
        .stdout_has("(fix)");
    api.cmd("close", &[]).code(4).stderr_has("ISSUE-01 is open");
    at.set_issue("ISSUE-01", "resolved")
        .args(["--resolution", "Cursors | documented"])
        .ok()
        .stdout_has("ISSUE-01: resolved");
    at.set_issue("ISSUE-02", "wontfix")
        .args(["--resolution", "user decided"])
        .ok();
    api.set_issue("ISSUE-09", "open").code(2);
    api.at("2026-01-24T09:00:00+01:00")
        .cmd("close", &[])
        .ok()
        .stdout_has(CLOSED);
    assert!(!env.exists(TRACKER));
    let s = show(&env, "api");
    assert_eq!(s.meta.status, "closed");
    assert_eq!(s.meta.last_updated.as_deref(), Some("2026-01-24"));
    assert_eq!(s.current.next_actor, "none");
    assert_eq!(s.steps.last().unwrap().status, "no_action");
    assert_eq!(
        s.issues[0].resolution.as_deref(),
        Some("Cursors | documented")
    );
    // A closed review takes no more edits.
    api.add_issue("low", "x").code(3).stderr_has("closed");
    api.cmd("next", &[]).ok().stdout_has("is closed");
}

#[test]
fn past_twenty_steps_the_first_ten_are_archived() {
    let env = Env::new();
    let api = new_review(&env, "2026-01-20T10:00:00+01:00").at("2026-01-21T10:00:00+01:00");
    let actors = ["claude", "codex"];
    for k in 0..20 {
        let me = actors[k % 2];
        let other = actors[(k + 1) % 2];
        let action = if k == 0 { "review" } else { "response" };
        let out = format!("out/{:02}.md", k + 1);
        output(&env, &out, "x", &format!("prompt after step {:02}", k + 1));
        let o = api
            .step(me, action, &out, &format!("summary {}", k + 1), other)
            .run();
        assert_eq!(o.code, Some(0), "step {}: {}", k + 1, o.stderr);
        if k < 19 {
            assert!(!env.exists(".metadata/reviews/active/api-tracker-archive.md"));
        }
    }
    let archive = env.read(".metadata/reviews/active/api-tracker-archive.md");
    let text = env.read(TRACKER);
    assert!(
        text.contains(
            "## Steps\n\nNote: Steps 01-10 archived to api-tracker-archive.md\n\n### 01\n"
        )
    );
    let s = show(&env, "api");
    assert_eq!(s.steps.len(), 11);
    assert_eq!(
        s.steps.iter().map(|x| x.number).collect::<Vec<_>>(),
        (1..=11).collect::<Vec<_>>()
    );
    assert_eq!(s.steps[0].summary.as_deref(), Some("summary 11"));
    assert_eq!(s.steps[10].status, "planned");
    assert_eq!(s.current.next_action.as_deref(), Some("response (step 11)"));
    for n in 1..=10 {
        assert!(archive.contains(&format!("### {n:02}\n")), "{archive}");
        assert!(archive.contains(&format!("- **Summary:** summary {n}\n")));
    }
    assert!(!archive.contains("summary 11"));
    // The prompt for the renumbered step is found.
    Review::new(&env, "api")
        .cmd("next", &["--prompt"])
        .ok()
        .stdout_has("prompt after step 20");
    assert!(text.contains("### For Claude (step 11)"));
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let env = Env::new();
    env.write("docs/api.md", "x");
    let t = Review::new(&env, "t");
    for cmd in [
        Review::new(&env, "../x").start("docs/api.md", "a", "b"),
        t.start("../outside", "a", "b"),
        t.start("nope.md", "a", "b"),
        t.start("docs/api.md", "a/b", "b"),
        t.start("docs/api.md", "a", "A"),
        env.cmd().args([
            "review",
            "--metadata",
            "../meta",
            "new",
            "t",
            "--target",
            "docs/api.md",
            "--reviewer",
            "a",
            "--implementer",
            "b",
        ]),
        Review::new(&env, "missing").cmd("show", &[]),
        Review::new(&env, "missing").add_issue("huge", "x"),
    ] {
        cmd.code(2);
    }
    assert!(!env.exists(".metadata/reviews"));
}

#[test]
fn another_metadata_folder_and_status() {
    let env = Env::new();
    env.write("docs/api.md", "x");
    let api = Review::new(&env, "api");
    api.cmd("new", &["--metadata", "meta"])
        .args([
            "--target",
            "docs/api.md",
            "--reviewer",
            "claude",
            "--implementer",
            "gemini",
        ])
        .ok()
        .stdout_has("meta/reviews/active/api-tracker.md");
    assert!(env.exists("meta/templates/review-tracker-template.md"));
    api.cmd("show", &["--metadata", "meta"])
        .ok()
        .stdout_has("claude");
    new_review(&env, "2026-01-20T10:00:00+01:00");
    api.add_issue("low", "x").ok();
    #[derive(Deserialize)]
    struct St {
        reviews: Vec<R>,
    }
    #[derive(Deserialize)]
    struct R {
        topic: String,
        next_actor: String,
        next_action: Option<String>,
        open_issues: usize,
    }
    let st: St = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st.reviews.len(), 1);
    let r = &st.reviews[0];
    assert_eq!(
        (
            r.topic.as_str(),
            r.next_actor.as_str(),
            r.next_action.as_deref(),
            r.open_issues
        ),
        ("api", "Claude", Some("review (step 01)"), 1)
    );
    env.cmd()
        .args(["status"])
        .ok()
        .stdout_has("Open reviews")
        .stdout_has("review (step 01)");
}
