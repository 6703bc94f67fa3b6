//! `coord review close --commit`: the seed's commit, and nothing changed outside git.

use crate::fixture::{Review, git, handoff_output as output};
use crate::protocols::review::{CLOSED, TRACKER, new_review};
use crate::support::Env;

#[test]
fn close_commit_makes_the_seed_commit() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let git = |args: &[&str]| git(&env, args);
    new_review(&env, "2026-01-20T10:00:00+01:00");
    let api = Review::new(&env, "api");
    let at = api.at("2026-01-21T10:00:00+01:00");
    git(&["init", "-q"]);
    git(&["config", "user.name", "Test User"]);
    git(&["config", "user.email", "test@example.com"]);
    git(&["config", "commit.gpgsign", "false"]);
    output(&env, "r.md", "x", "next");
    at.step("claude", "review", "r.md", "one issue", "codex")
        .ok();
    api.add_issue("high", "T").ok();
    api.set_issue("ISSUE-01", "resolved")
        .args(["--resolution", "Updated the API doc"])
        .ok();
    env.write("docs/api.md", "# API v2\n");
    output(&env, "c.md", "x", "verify");
    at.step("codex", "implement", "c.md", "done", "claude").ok();
    output(&env, "v.md", "x", "done");
    at.step("claude", "verify", "v.md", "ok", "codex").ok();
    api.cmd("close", &["--commit", "--summary", "align the API doc"])
        .ok()
        .stdout_has("Committed");
    let msg = git(&["log", "-1", "--format=%B"]);
    assert_eq!(
        msg.trim_end(),
        "api review: align the API doc\n\n- ISSUE-01: Updated the API doc\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nCo-Authored-By: Codex <noreply@openai.com>"
    );
    let files = git(&["show", "--name-only", "--format=", "HEAD"]);
    for f in [CLOSED, "docs/api.md", "r.md", "c.md", "v.md"] {
        assert!(files.lines().any(|l| l == f), "{f} not in commit:\n{files}");
    }
}

#[test]
fn close_commit_outside_git_changes_nothing() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    new_review(&env, "2026-01-20T10:00:00+01:00");
    let before = env.read(TRACKER);
    let out = Review::new(&env, "api")
        .cmd("close", &["--commit"])
        .env("GIT_CEILING_DIRECTORIES", env.root().parent().unwrap())
        .run();
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("git work tree"));
    assert_eq!(env.read(TRACKER), before);
}
