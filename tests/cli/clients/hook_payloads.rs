//! `coord hook CLIENT` with each client's real payloads (fixtures): what locks, what is denied
//! and in which format, what releases.

use serde_json::Value;

use crate::clients::hooks::{
    CLAUDE, denied, fixture, fixture_json, hook, session_locks, start_context,
};
use crate::support::Env;

/// A payload with another session id (a second session of the same client).
fn other_session(payload: &str, from: &str, to: &str) -> String {
    assert!(payload.contains(from), "{from} not in {payload}");
    payload.replace(from, to)
}

#[test]
fn claude_fixtures_lock_on_write_and_release_on_stop() {
    let env = Env::new();
    let ctx = start_context(
        &env,
        "claude",
        &format!("{CLAUDE}/write_allow.SessionStart.json"),
    );
    assert!(ctx.contains("claude-7684f1ed"), "{ctx}");
    assert!(
        env.read(".claude-7684f1ed_presence")
            .contains("status: ACTIVE")
    );

    let pre = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json")),
        &[],
    );
    assert_eq!(denied("claude", &pre), None);
    assert!(env.exists("out.txt.lock.claude-7684f1ed"));

    // Re-entrant: the same session asks again (the next edit of the same file).
    let again = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json")),
        &[],
    );
    assert_eq!(denied("claude", &again), None);

    env.write("out.txt", "written by session X\n");
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PostToolUse.json")),
        &[],
    );
    assert!(env.exists("out.txt.lock.claude-7684f1ed"));

    let stop = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.Stop.json")),
        &[],
    );
    assert_eq!(stop.stdout.trim(), "");
    assert!(!env.exists("out.txt.lock.claude-7684f1ed"));

    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.SessionEnd.json")),
        &[],
    );
    assert!(
        env.read(".claude-7684f1ed_presence")
            .contains("status: FINISHED")
    );
}

#[test]
fn edit_fixture_and_notebook_and_multiedit_lock_their_files() {
    let env = Env::new();
    env.write("existing.txt", "hello world\n");
    let pre = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/edit_allow.PreToolUse.json")),
        &[],
    );
    assert_eq!(denied("claude", &pre), None);
    assert!(env.exists("existing.txt.lock.claude-cedd012c"));
    assert_eq!(env.read("existing.txt.bak"), "hello world\n");

    let root = env.root().display();
    for (tool, key, file) in [
        ("NotebookEdit", "notebook_path", "nb.ipynb"),
        ("MultiEdit", "file_path", "m.rs"),
    ] {
        let payload = format!(
            r#"{{"session_id":"aaaa1111-x","cwd":"{root}","hook_event_name":"PreToolUse","tool_name":"{tool}","tool_input":{{"{key}":"{file}"}}}}"#
        );
        assert_eq!(denied("claude", &hook(&env, "claude", &payload, &[])), None);
        assert!(
            env.exists(&format!("{file}.lock.claude-aaaa1111")),
            "{tool}"
        );
    }
}

#[test]
fn codex_apply_patch_locks_every_path_all_or_nothing() {
    let env = Env::new();
    env.write("src/old.txt", "old\n");
    env.write("junk.txt", "junk\n");
    std::fs::create_dir_all(env.path("docs")).unwrap();
    // Another agent holds the move target: nothing at all is locked, and the deny names it.
    env.agent("gemini").args(["lock", "src/renamed.txt"]).ok();
    let pre = fixture(&env, "codex/PreToolUse.apply_patch.json");
    let out = hook(&env, "codex", &pre, &["--wait", "100ms"]);
    let reason = denied("codex", &out).unwrap();
    assert!(
        reason.contains("src/renamed.txt") && reason.contains("gemini"),
        "{reason}"
    );
    assert!(env.files_ending(".lock.codex-6b8f1a37").is_empty());
    env.agent("gemini").args(["unlock"]).ok();

    assert_eq!(denied("codex", &hook(&env, "codex", &pre, &[])), None);
    let mut locks = env.files_ending(".lock.codex-6b8f1a37");
    locks.sort();
    assert_eq!(
        locks,
        [
            "docs/new.md.lock.codex-6b8f1a37",
            "junk.txt.lock.codex-6b8f1a37",
            "src/old.txt.lock.codex-6b8f1a37",
            "src/renamed.txt.lock.codex-6b8f1a37",
        ]
    );
    hook(
        &env,
        "codex",
        &fixture(&env, "codex/PostToolUse.apply_patch.json"),
        &[],
    );
    hook(&env, "codex", &fixture(&env, "codex/Stop.json"), &[]);
    assert!(env.files_ending(".lock.codex-6b8f1a37").is_empty());
}

#[test]
fn gemini_fixtures_deny_in_gemini_format_and_after_agent_releases() {
    let env = Env::new();
    // Gemini CLI 0.61's own SessionStart: the session's agent is named in the context.
    let ctx = start_context(&env, "gemini", "gemini-0.61.0/allow.SessionStart.json");
    assert!(ctx.contains("gemini-2b4d13f8"), "{ctx}");
    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini/SessionStart.json"),
        &[],
    );
    let pre = fixture(&env, "gemini/BeforeTool.write_file.json");
    assert_eq!(denied("gemini", &hook(&env, "gemini", &pre, &[])), None);
    assert!(env.exists("out.txt.lock.gemini-8f14e45f"));
    assert_eq!(
        denied(
            "gemini",
            &hook(
                &env,
                "gemini",
                &fixture(&env, "gemini/BeforeTool.replace.json"),
                &[]
            )
        ),
        None
    );
    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini/BeforeTool.read_file.json"),
        &[],
    );
    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini/AfterTool.write_file.json"),
        &[],
    );

    let rival = other_session(&pre, "8f14e45f-ceea", "77777777-ceea");
    let reason = denied(
        "gemini",
        &hook(&env, "gemini", &rival, &["--wait", "100ms"]),
    )
    .unwrap();
    assert!(reason.contains("gemini-8f14e45f"), "{reason}");

    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini/AfterAgent.json"),
        &[],
    );
    assert!(!env.exists("out.txt.lock.gemini-8f14e45f"));
    hook(
        &env,
        "gemini",
        &fixture(&env, "gemini/SessionEnd.json"),
        &[],
    );
    assert!(
        env.read(".gemini-8f14e45f_presence")
            .contains("status: FINISHED")
    );
}

#[test]
fn copilot_fixtures_with_event_flag_and_agent_from_env() {
    let env = Env::new();
    let run = |name: &str, event: &str, agent: &str| {
        env.cmd()
            .env_remove("COORD_DIR")
            .env("COORD_AGENT", agent)
            .args(["hook", "copilot", "--event", event, "--wait", "100ms"])
            .stdin(fixture(&env, &format!("copilot/{name}.json")))
            .ok()
    };
    run("sessionStart", "sessionStart", "copilot-one");
    assert!(env.read(".copilot-one_presence").contains("status: ACTIVE"));
    assert_eq!(
        denied(
            "copilot",
            &run("preToolUse.edit", "preToolUse", "copilot-one")
        ),
        None
    );
    assert!(env.exists("out.txt.lock.copilot-one"));
    assert_eq!(
        denied(
            "copilot",
            &run("preToolUse.create", "preToolUse", "copilot-one")
        ),
        None
    );
    assert!(env.exists("new.txt.lock.copilot-one"));
    assert_eq!(
        denied(
            "copilot",
            &run("preToolUse.bash", "preToolUse", "copilot-two")
        ),
        None
    );
    let reason = denied(
        "copilot",
        &run("preToolUse.edit", "preToolUse", "copilot-two"),
    )
    .unwrap();
    assert!(reason.contains("copilot-one"), "{reason}");
    run("postToolUse.edit", "postToolUse", "copilot-one");
    run("sessionEnd", "sessionEnd", "copilot-one");
    assert!(!env.exists("out.txt.lock.copilot-one"));
    assert!(
        env.read(".copilot-one_presence")
            .contains("status: FINISHED")
    );
}

/// Issue 25: Codex fires `SessionEnd`; it clocks the session out and frees its files.
#[test]
fn codex_session_end_fixture_finishes_the_session() {
    let env = Env::new();
    let end = fixture(&env, "codex-0.169.0/manual_hook.SessionEnd.json");
    let start = end.replace(
        "\"hook_event_name\":\"SessionEnd\",\"reason\":\"other\"",
        "\"hook_event_name\":\"SessionStart\",\"source\":\"startup\"",
    );
    assert_ne!(start, end);
    hook(&env, "codex", &start, &[]);
    let mut pre = fixture_json(&env, "codex-0.169.0/deny.PreToolUse.json");
    pre["session_id"] = serde_json::from_str::<Value>(&end).unwrap()["session_id"].clone();
    assert_eq!(
        denied("codex", &hook(&env, "codex", &pre.to_string(), &[])),
        None
    );
    assert_eq!(session_locks(&env, "codex", "target.txt").len(), 1);
    let presence = env.files_ending("_presence");
    assert_eq!(presence.len(), 1, "{presence:?}");
    assert!(env.read(&presence[0]).contains("status: ACTIVE"));

    assert_eq!(hook(&env, "codex", &end, &[]).stdout.trim(), "");
    assert!(session_locks(&env, "codex", "target.txt").is_empty());
    assert!(env.read(&presence[0]).contains("status: FINISHED"));
}
