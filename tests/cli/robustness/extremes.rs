//! Values at the edge of their range, given as arguments, in the environment or in state files:
//! a TTL, a window or a date too far for the calendar is read, refused or capped, never a panic.

use crate::support::Env;

/// A TTL that runs past the calendar's end (100,000,000 days) never expires: another agent is
/// refused with the holder named, and the lock stays as it was.
#[test]
fn a_ttl_past_the_calendar_blocks_without_a_panic() {
    let env = Env::new();
    env.write("F", "x\n");
    env.agent("alice")
        .args(["lock", "F", "--ttl", "100000000d"])
        .ok();
    let lock = env.read("F.lock.alice");
    let out = env.agent("bob").args(["lock", "F", "--no-wait"]).code(3);
    out.stderr_has("error: ").stderr_has("held by alice");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(env.read("F.lock.alice"), lock, "the lock may not change");
    assert_eq!(env.read("F"), "x\n");
    assert!(!env.exists("F.lock.bob"));
}

/// `status.json` counting u64::MAX messages while a stale `lock.txt` asks `say` to complete an
/// interrupted write: the count is read as the corruption it is, and the conversation is kept.
#[test]
fn a_dialogue_count_at_the_max_is_corruption_not_a_panic() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    env.cmd()
        .args(["dialogue", "say", "--as", "AGENT-1", "hello"])
        .ok();
    let status = env.read("agent-dialogue/status.json");
    let status = status.replacen(
        "\"message_count\": 1",
        "\"message_count\": 18446744073709551615",
        1,
    );
    assert!(status.contains("18446744073709551615"), "{status}");
    env.write("agent-dialogue/status.json", &status);
    env.write(
        "agent-dialogue/lock.txt",
        "AGENT-1\nsince: 2020-01-01T00:00:00+00:00\n",
    );
    env.write("agent-dialogue/current-turn.txt", "AGENT-2\n");
    let conversation = env.read("agent-dialogue/conversation.md");
    let out = env
        .cmd()
        .args(["dialogue", "say", "--as", "AGENT-2", "hi"])
        .code(1);
    out.stderr_has("error: `agent-dialogue/conversation.md` appears corrupted")
        .stderr_has("counts 18446744073709551615");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(env.read("agent-dialogue/conversation.md"), conversation);
    assert_eq!(env.read("agent-dialogue/status.json"), status);
}

/// `log --since` and `COORD_HISTORY_MAX_AGE` further back than the calendar reaches mean "all
/// of it"; `COORD_HISTORY_MAX_SIZE` at u64::MAX is a bound like any other.
#[test]
fn history_windows_past_the_calendar_read_everything() {
    let env = Env::new();
    env.write("F", "x\n");
    env.agent("alice").args(["lock", "F"]).ok();
    for since in ["100000000d", "9999999999d", "200000000000d"] {
        env.cmd()
            .args(["log", "--since", since])
            .ok()
            .stdout_has("alice locked `F`");
        env.cmd()
            .args(["log", "--timeline", "--since", since])
            .ok()
            .stdout_has("F");
    }
    env.cmd()
        .env("COORD_HISTORY_MAX_AGE", "100000000d")
        .args(["log"])
        .ok()
        .stdout_has("alice locked `F`");
    let before = env.snapshot();
    env.cmd()
        .env("COORD_HISTORY_MAX_SIZE", "18446744073709551615")
        .args(["log"])
        .ok()
        .stdout_has("alice locked `F`");
    assert_eq!(env.snapshot(), before);
    env.agent("alice")
        .env("COORD_HISTORY_MAX_SIZE", "18446744073709551615")
        .args(["unlock", "F"])
        .ok();
}

/// `COLUMNS` far wider than any terminal (u64::MAX, a hundred million) is taken as the widest a
/// terminal reports: the timeline is drawn, neither a crash nor gigabytes of cells.
#[test]
fn a_huge_columns_draws_the_timeline() {
    let env = Env::new();
    env.write("F", "x\n");
    env.agent("alice").args(["lock", "F"]).ok();
    for columns in ["18446744073709551615", "100000000"] {
        let started = std::time::Instant::now();
        let out = env
            .cmd()
            .env("COLUMNS", columns)
            .args(["log", "--timeline"])
            .ok();
        out.stdout_has("A alice");
        assert!(out.stdout.lines().all(|l| l.chars().count() <= 65_535));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{columns}: {:?}",
            started.elapsed()
        );
    }
    env.cmd()
        .env("COLUMNS", "18446744073709551615")
        .args(["status"])
        .ok()
        .stdout_has("alice");
}

/// A tracker whose issues already reach ISSUE-4294967295 has no number left for the next one:
/// `review issue add` says so (exit 1) and leaves the tracker as it was.
#[test]
fn a_review_issue_number_at_the_max_is_refused() {
    let env = Env::new();
    env.write("t.md", "x\n");
    env.agent("claude")
        .args(["review", "new", "api", "--target", "t.md"])
        .args(["--reviewer", "claude", "--implementer", "codex"])
        .ok();
    let path = ".metadata/reviews/active/api-tracker.md";
    let tracker = env.read(path).replacen(
        "|----|----------|-------|--------|------------|\n",
        "|----|----------|-------|--------|------------|\n| ISSUE-4294967295 | high | t | open | - |\n",
        1,
    );
    assert!(tracker.contains("ISSUE-4294967295"), "{tracker}");
    env.write(path, &tracker);
    let out = env
        .agent("claude")
        .args(["review", "issue", "api", "add", "--severity", "high"])
        .args(["--title", "one more"])
        .code(1);
    out.stderr_has("error: ")
        .stderr_has("ISSUE-4294967295: no number is left");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(env.read(path), tracker);
}
