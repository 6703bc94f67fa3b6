//! A hook payload coord cannot read whole is still judged on what it names (#45): a field
//! nested past the JSON parser's limit, a lone surrogate in a string, a payload cut short or
//! past the size coord reads. coord's own trouble reading never lets an edit of a file another
//! agent holds through; garbage is answered with a warning, and nothing is written.

use crate::clients::hooks::{denied, fixture, hook, session_locks};
use crate::support::Env;

/// Each of the four main clients' pre-edit payload, as captured, with the flags its hook line
/// has, and the file it edits.
const CLIENTS: [(&str, &str, &[&str], &str); 4] = [
    (
        "claude",
        "claude-code-2.1.328/write_deny.PreToolUse.json",
        &[],
        "out.txt",
    ),
    (
        "codex",
        "codex-0.169.0/deny.PreToolUse.json",
        &[],
        "target.txt",
    ),
    (
        "gemini",
        "gemini-0.61.0/deny.BeforeTool.json",
        &[],
        "target.txt",
    ),
    (
        "copilot",
        "copilot-1.0.102/deny.preToolUse.json",
        &["--event", "preToolUse"],
        "target.txt",
    ),
];

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `payload` with a field nesting `depth` levels first, which coord never reads.
fn with_deep_field(payload: &str, depth: usize) -> String {
    let at = payload.find('{').unwrap() + 1;
    format!(
        "{}\"x_trace\":{},{}",
        &payload[..at],
        nested(depth),
        &payload[at..]
    )
}

fn call(env: &Env, client: &str, flags: &[&str], payload: &str) -> crate::support::Output {
    let mut args = flags.to_vec();
    args.extend(["--wait", "0"]);
    hook(env, client, payload, &args)
}

/// #45: a field nested 300 levels (past serde_json's 128) in each client's payload: an edit of
/// a file another agent holds is denied naming the holder; once it is free, the edit is
/// allowed and locked, as for any payload.
#[test]
fn a_deep_field_is_passed_over_and_the_edit_judged_for_every_client() {
    for (client, fixture_rel, flags, file) in CLIENTS {
        let env = Env::new();
        let payload = with_deep_field(&fixture(&env, fixture_rel), 300);
        env.agent("alice").args(["lock", file]).ok();
        let out = call(&env, client, flags, &payload);
        let reason = denied(client, &out)
            .unwrap_or_else(|| panic!("{client}: a held file is denied\n{}", out.stderr));
        assert!(reason.contains("alice"), "{client}: {reason}");
        assert!(session_locks(&env, client, file).is_empty(), "{client}");
        env.agent("alice").args(["unlock"]).ok();
        let out = call(&env, client, flags, &payload);
        assert_eq!(denied(client, &out), None, "{client}");
        assert_eq!(session_locks(&env, client, file).len(), 1, "{client}");
    }
}

/// #45: Copilot's arguments as a JSON string, nested deep inside that string.
#[test]
fn a_deep_field_inside_copilots_string_arguments_is_passed_over() {
    let env = Env::new();
    let payload = fixture(&env, "copilot/preToolUse.edit.json");
    let from = r#"{\"path\""#;
    assert!(payload.contains(from), "{payload}");
    let payload = payload.replace(from, &format!(r#"{{\"x\":{},\"path\""#, nested(300)));
    env.agent("alice").args(["lock", "out.txt"]).ok();
    let flags: &[&str] = &["--event", "preToolUse"];
    let reason = denied("copilot", &call(&env, "copilot", flags, &payload)).expect("denied");
    assert!(reason.contains("alice"), "{reason}");
    env.agent("alice").args(["unlock"]).ok();
    assert_eq!(
        denied("copilot", &call(&env, "copilot", flags, &payload)),
        None
    );
    assert_eq!(session_locks(&env, "copilot", "out.txt").len(), 1);
}

/// #45: a lone UTF-16 surrogate in the new content (JavaScript's and Python's JSON writers emit
/// `\ud800`), which serde_json refuses: judged like any edit.
#[test]
fn a_lone_surrogate_in_the_content_does_not_open_the_door() {
    for (client, fixture_rel, flags, file) in CLIENTS {
        let env = Env::new();
        let payload = fixture(&env, fixture_rel);
        assert!(payload.contains("written "), "{client}");
        let payload = payload.replacen("written ", r"written \ud800", 1);
        env.agent("alice").args(["lock", file]).ok();
        let reason = denied(client, &call(&env, client, flags, &payload))
            .unwrap_or_else(|| panic!("{client}: a held file is denied"));
        assert!(reason.contains("alice"), "{client}: {reason}");
        env.agent("alice").args(["unlock"]).ok();
        assert_eq!(denied(client, &call(&env, client, flags, &payload)), None);
        assert_eq!(session_locks(&env, client, file).len(), 1, "{client}");
    }
}

/// #45: a payload cut short after the file it edits (a client killed mid-write, a payload past
/// the size coord reads) is not JSON: nothing is written for it, but an edit of a file another
/// agent holds is denied, saying coord read it only in part; a free file is allowed with a
/// warning, unlocked. Codex's paths lie inside its patch, cut too: allowed with a warning.
#[test]
fn a_payload_cut_short_denies_a_held_file_and_writes_nothing() {
    for (client, fixture_rel, flags, file) in CLIENTS {
        let env = Env::new();
        let payload = fixture(&env, fixture_rel);
        let cut = &payload[..payload.find("written ").unwrap() + 8];
        env.agent("alice").args(["lock", file]).ok();
        let before = env.snapshot();
        let out = call(&env, client, flags, cut);
        assert!(out.stderr.contains("warning:"), "{client}: {}", out.stderr);
        if client == "codex" {
            assert_eq!(denied(client, &out), None);
        } else {
            let reason = denied(client, &out)
                .unwrap_or_else(|| panic!("{client}: a held file is denied\n{}", out.stderr));
            assert!(reason.contains("alice"), "{client}: {reason}");
            assert!(reason.contains("only in part"), "{client}: {reason}");
        }
        assert_eq!(env.snapshot(), before, "{client}: something was written");
        env.agent("alice").args(["unlock"]).ok();
        let before = env.snapshot();
        let out = call(&env, client, flags, cut);
        assert_eq!(denied(client, &out), None, "{client}");
        assert!(
            out.stderr.contains("(the tool call is allowed)"),
            "{client}: {}",
            out.stderr
        );
        assert_eq!(env.snapshot(), before, "{client}: something was written");
    }
}

/// Garbage on stdin: exit 0 with a warning, nothing on stdout, nothing written (contract §8).
#[test]
fn garbage_is_answered_with_a_warning_and_nothing_written() {
    let env = Env::new();
    env.agent("alice").args(["lock", "out.txt"]).ok();
    let before = env.snapshot();
    for (client, _, flags, _) in CLIENTS {
        for garbage in [
            "",
            "garbage",
            "[1, 2",
            "{",
            "{\"tool_name\": \"Write\"",
            "\u{feff}xx",
        ] {
            let out = call(&env, client, flags, garbage);
            assert_eq!(out.stdout.trim(), "", "{client} {garbage:?}");
            assert!(
                out.stderr.contains("warning:"),
                "{client} {garbage:?}: {}",
                out.stderr
            );
        }
    }
    assert_eq!(env.snapshot(), before);
}

/// #45: a `Write` of a large file with a deep field (20 MiB, read past the parser's limit), and
/// one past the size coord reads of a payload (64 MiB, cut there): a rival's edit is denied.
#[test]
fn a_large_payload_deep_or_past_the_cap_still_denies_a_held_file() {
    let env = Env::new();
    let first = fixture(&env, "claude-code-2.1.328/write_allow.PreToolUse.json");
    assert_eq!(denied("claude", &hook(&env, "claude", &first, &[])), None);
    let second = fixture(&env, "claude-code-2.1.328/write_deny.PreToolUse.json");
    for (size, depth) in [(20 << 20, 300), (65 << 20, 0)] {
        let big = second.replace("written by session X\\n", &"x".repeat(size));
        let payload = if depth > 0 {
            // After the content: read only once the 20 MiB are.
            let at = big.rfind('}').unwrap();
            format!("{},\"x_trace\":{}}}", &big[..at], nested(depth))
        } else {
            big
        };
        let out = hook(&env, "claude", &payload, &["--wait", "0"]);
        let reason = denied("claude", &out)
            .unwrap_or_else(|| panic!("{size}: the rival's write is denied\n{}", out.stderr));
        assert!(reason.contains("claude-7684f1ed"), "{reason}");
        assert!(!env.exists("out.txt.lock.claude-10bf7680"));
    }
}

/// A payload whose `session_id` names no session coord can tell (no letter or digit in it), and
/// no agent given: an edit of a file an agent holds is denied all the same (that holder cannot
/// be this session), and an edit of a free file is allowed with a warning, no lock taken.
#[test]
fn a_session_coord_cannot_name_is_denied_a_held_file_and_takes_no_lock() {
    let env = Env::new();
    env.write("F", "f\n");
    env.write("G", "g\n");
    env.agent("b").args(["lock", "F"]).ok();
    let before = env.snapshot();
    for sid in ["..", "\u{c4}\u{d6}", "--"] {
        let payload = |file: &str| {
            format!(
                r#"{{"session_id":"{sid}","cwd":{cwd},"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":{file},"content":"x"}}}}"#,
                cwd = serde_json::json!(env.root()),
                file = serde_json::json!(env.path(file)),
            )
        };
        let out = call(&env, "claude", &[], &payload("F"));
        let reason = denied("claude", &out)
            .unwrap_or_else(|| panic!("{sid}: the edit of b's file is denied\n{}", out.stderr));
        assert!(reason.contains("locked by b"), "{reason}");
        let out = call(&env, "claude", &[], &payload("G"));
        assert_eq!(denied("claude", &out), None, "{sid}: G is free");
        assert!(out.stderr.contains("session_id"), "{}", out.stderr);
        assert_eq!(env.snapshot(), before, "{sid}: nothing is written");
    }
}
