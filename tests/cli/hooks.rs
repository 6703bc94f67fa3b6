//! `coord hook CLIENT`: real payloads of each client against a real folder, real processes
//! racing for one file, the CLI and hooks denying each other.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;

use crate::support::{Env, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A fixture with its project and home paths moved into `env`'s root.
fn fixture(env: &Env, rel: &str) -> String {
    let text = std::fs::read_to_string(fixtures().join(rel)).unwrap();
    let root = env.root().to_str().unwrap();
    text.replace("/home/dev/proj", root)
        .replace("/home/dev", "/nonexistent-home")
}

/// A payload with another session id (a second session of the same client).
fn other_session(payload: &str, from: &str, to: &str) -> String {
    assert!(payload.contains(from), "{from} not in {payload}");
    payload.replace(from, to)
}

/// `coord hook CLIENT` fed `payload`, with the workspace taken from the payload's `cwd`.
fn hook(env: &Env, client: &str, payload: &str, extra: &[&str]) -> Output {
    env.cmd()
        .env_remove("COORD_DIR")
        .cwd("/")
        .args(["hook", client])
        .args(extra)
        .stdin(payload)
        .ok()
}

fn json(out: &Output) -> Value {
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}\n{}", out.stdout, out.stderr))
}

/// The deny reason, whatever the client's format; `None` when the call was allowed.
fn denied(client: &str, out: &Output) -> Option<String> {
    if out.stdout.trim().is_empty() {
        return None;
    }
    let v = json(out);
    let reason = match client {
        "claude" | "codex" => {
            let h = &v["hookSpecificOutput"];
            assert_eq!(h["hookEventName"], "PreToolUse", "{v}");
            assert_eq!(h["permissionDecision"], "deny", "{v}");
            &h["permissionDecisionReason"]
        }
        "gemini" => {
            assert_eq!(v["decision"], "deny", "{v}");
            &v["reason"]
        }
        "copilot" => {
            assert_eq!(v["permissionDecision"], "deny", "{v}");
            &v["permissionDecisionReason"]
        }
        _ => unreachable!(),
    };
    Some(reason.as_str().unwrap().to_string())
}

const CLAUDE: &str = "claude-code-2.1.328";

#[test]
fn claude_fixtures_lock_on_write_and_release_on_stop() {
    let env = Env::new();
    let start = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.SessionStart.json")),
        &[],
    );
    let ctx = json(&start);
    assert_eq!(ctx["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        ctx["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("claude-7684f1ed")
    );
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
fn a_second_claude_session_is_denied_naming_the_first_then_gets_the_file_after_stop() {
    let env = Env::new();
    let first = fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json"));
    let second = fixture(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    assert_eq!(denied("claude", &hook(&env, "claude", &first, &[])), None);
    // The PostToolUse renewal keeps what the lock says the holder works on.
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PostToolUse.json")),
        &[],
    );
    let out = hook(&env, "claude", &second, &["--wait", "300ms"]);
    let reason = denied("claude", &out).expect("the second session must be denied");
    assert!(reason.contains("claude-7684f1ed"), "{reason}");
    assert!(reason.contains("out.txt"), "{reason}");
    assert!(reason.contains("since"), "{reason}");
    assert!(reason.contains("queue"), "{reason}");
    assert!(
        reason.contains("working on Write in Claude Code"),
        "{reason}"
    );
    assert!(!env.exists("out.txt.lock.claude-10bf7680"));

    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.Stop.json")),
        &[],
    );
    assert_eq!(denied("claude", &hook(&env, "claude", &second, &[])), None);
    assert!(env.exists("out.txt.lock.claude-10bf7680"));
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

/// Two sessions of one client start their pre-edit hooks at the same moment: exactly one is
/// allowed, the other is denied naming it.
fn race(
    client: &str,
    payload_a: String,
    payload_b: String,
    agent_a: &str,
    agent_b: &str,
    extra: &[&str],
) {
    for round in 0..4 {
        let env = Env::new();
        let root = env.root().to_str().unwrap().to_string();
        let spawn = |_payload: &str| {
            let mut c = env
                .cmd()
                .env_remove("COORD_DIR")
                .cwd("/")
                .args(["hook", client])
                .args(extra)
                .args(["--wait", "200ms"])
                .command();
            let mut child = c
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (child.stdin.take().unwrap(), child)
        };
        let pa = payload_a.replace("{ROOT}", &root);
        let pb = payload_b.replace("{ROOT}", &root);
        let (mut ia, ca) = spawn(&pa);
        let (mut ib, cb) = spawn(&pb);
        // Both processes are up and parked on stdin: release them together.
        ia.write_all(pa.as_bytes()).unwrap();
        ib.write_all(pb.as_bytes()).unwrap();
        drop(ia);
        drop(ib);
        let outs: Vec<Output> = [ca, cb]
            .into_iter()
            .map(|c| {
                let o = c.wait_with_output().unwrap();
                Output {
                    shown: format!("coord hook {client}"),
                    code: o.status.code(),
                    stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
                }
            })
            .collect();
        for o in &outs {
            assert_eq!(o.code, Some(0), "{o:?}");
        }
        let verdicts: Vec<Option<String>> = outs.iter().map(|o| denied(client, o)).collect();
        let allowed: Vec<usize> = (0..2).filter(|i| verdicts[*i].is_none()).collect();
        assert_eq!(
            allowed.len(),
            1,
            "round {round}: exactly one allowed: {outs:?}"
        );
        let winner = [agent_a, agent_b][allowed[0]];
        let reason = verdicts[1 - allowed[0]].clone().unwrap();
        assert!(
            reason.contains(winner),
            "round {round}: reason names {winner}: {reason}"
        );
        let locks = env.files_ending(&format!(".lock.{winner}"));
        assert_eq!(locks.len(), 1, "{locks:?}");
        let loser = [agent_a, agent_b][1 - allowed[0]];
        assert!(env.files_ending(&format!(".lock.{loser}")).is_empty());
    }
}

#[test]
fn two_claude_sessions_race_for_one_file() {
    let p = r#"{"session_id":"SID","cwd":"{ROOT}","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"{ROOT}/shared.txt","content":"x"}}"#;
    race(
        "claude",
        p.replace("SID", "aaaa0001-1"),
        p.replace("SID", "bbbb0002-2"),
        "claude-aaaa0001",
        "claude-bbbb0002",
        &[],
    );
}

#[test]
fn two_codex_sessions_race_for_one_file() {
    let p = r#"{"session_id":"SID","turn_id":"1","model":"gpt-5-codex","cwd":"{ROOT}","hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: shared.txt\n@@\n-a\n+b\n*** End Patch\n"}}"#;
    race(
        "codex",
        p.replace("SID", "c0dex001"),
        p.replace("SID", "c0dex002"),
        "codex-c0dex001",
        "codex-c0dex002",
        &[],
    );
}

#[test]
fn two_gemini_sessions_race_for_one_file() {
    let p = r#"{"session_id":"SID","cwd":"{ROOT}","hook_event_name":"BeforeTool","timestamp":"2026-11-23T09:40:05.120Z","tool_name":"write_file","tool_input":{"file_path":"{ROOT}/shared.txt","content":"x"}}"#;
    race(
        "gemini",
        p.replace("SID", "9e9e0001"),
        p.replace("SID", "9e9e0002"),
        "gemini-9e9e0001",
        "gemini-9e9e0002",
        &[],
    );
}

#[test]
fn two_copilot_sessions_race_for_one_file() {
    // Copilot's payload has no session id: each session is given its agent (as its hook
    // configuration would with COORD_AGENT); here through the payload's optional `sessionId`.
    let p = r#"{"sessionId":"SID","timestamp":1795426805000,"cwd":"{ROOT}","toolName":"edit","toolArgs":"{\"path\":\"{ROOT}/shared.txt\",\"old_str\":\"a\",\"new_str\":\"b\"}"}"#;
    race(
        "copilot",
        p.replace("SID", "c0p1l0t1"),
        p.replace("SID", "c0p1l0t2"),
        "copilot-c0p1l0t1",
        "copilot-c0p1l0t2",
        &["--event", "preToolUse"],
    );
}

#[test]
fn a_cli_lock_denies_a_hook_and_a_hook_lock_refuses_the_cli() {
    let env = Env::new();
    env.agent("gemini")
        .args(["lock", "out.txt", "--reason", "rewriting the intro"])
        .ok();
    let out = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json")),
        &["--wait", "100ms"],
    );
    let reason = denied("claude", &out).unwrap();
    assert!(reason.contains("gemini"), "{reason}");
    assert!(reason.contains("rewriting the intro"), "{reason}");
    env.agent("gemini").args(["unlock", "out.txt"]).ok();

    // The lock is free again: the hook takes it, and the CLI is refused naming the session.
    assert_eq!(
        denied(
            "claude",
            &hook(
                &env,
                "claude",
                &fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json")),
                &[]
            )
        ),
        None
    );
    env.agent("gemini")
        .args(["lock", "out.txt", "--no-wait"])
        .code(3)
        .stderr_has("claude-7684f1ed");
}

#[test]
fn a_hook_waits_for_a_lock_released_within_its_wait() {
    let env = Env::new();
    env.agent("gemini").args(["lock", "out.txt"]).ok();
    let payload = fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json"));
    let mut c = env
        .cmd()
        .env_remove("COORD_DIR")
        .args(["hook", "claude", "--wait", "20s"])
        .command();
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    env.agent("gemini").args(["unlock", "out.txt"]).ok();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
    assert!(env.exists("out.txt.lock.claude-7684f1ed"));
}

#[test]
fn stop_holds_once_for_unread_messages() {
    let env = Env::new();
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json")),
        &[],
    );
    env.agent("gemini")
        .args([
            "msg",
            "send",
            "claude-7684f1ed",
            "please leave out.txt alone",
        ])
        .ok();
    let stop = fixture(&env, &format!("{CLAUDE}/write_allow.Stop.json"));
    let out = hook(&env, "claude", &stop, &[]);
    let v = json(&out);
    assert_eq!(v["decision"], "block");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains("please leave out.txt alone"), "{reason}");
    // Locks are released even when the stop is held.
    assert!(!env.exists("out.txt.lock.claude-7684f1ed"));
    // The client continued once because of the hook: now it may stop.
    let again = stop.replace("\"stop_hook_active\":false", "\"stop_hook_active\":true");
    assert_eq!(hook(&env, "claude", &again, &[]).stdout.trim(), "");
}

#[test]
fn session_start_lists_others_their_locks_and_my_messages() {
    let env = Env::new();
    env.agent("gemini")
        .args(["presence", "translating the docs"])
        .ok();
    env.agent("gemini").args(["lock", "notes.md"]).ok();
    env.agent("gemini")
        .args(["msg", "send", "claude-7684f1ed", "hello there"])
        .ok();
    let out = hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.SessionStart.json")),
        &[],
    );
    let text = json(&out)["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("gemini (working on translating the docs)"),
        "{text}"
    );
    assert!(text.contains("notes.md (held by gemini"), "{text}");
    assert!(text.contains("hello there"), "{text}");
    env.cmd()
        .args(["status", "--json"])
        .ok()
        .stdout_has("claude-7684f1ed");
}

#[test]
fn malformed_stdin_warns_allows_and_writes_nothing() {
    let env = Env::new();
    env.write("out.txt", "keep");
    let before = env.snapshot();
    for (client, bad) in [
        ("claude", "not json"),
        ("claude", ""),
        ("codex", "[1,2]"),
        ("gemini", "{\"cwd\": 3"),
        ("copilot", "{\"toolName\":\"edit\"}"),
        ("claude", "{\"session_id\":\"x\",\"tool_name\":\"Write\"}"),
    ] {
        let out = env.cmd().args(["hook", client]).stdin(bad).ok();
        assert!(out.stderr.contains("warning:"), "{client} {bad:?}: {out:?}");
        assert_eq!(out.stdout.trim(), "", "{client} {bad:?}");
        assert_eq!(env.snapshot(), before, "{client} {bad:?} wrote something");
    }
    // Binary garbage too.
    let out = env
        .cmd()
        .args(["hook", "claude"])
        .stdin(vec![0xffu8, 0, 1, 2])
        .ok();
    assert!(out.stderr.contains("warning:"));
    assert_eq!(env.snapshot(), before);
}

#[test]
fn files_outside_the_workspace_and_other_tools_are_allowed() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let root = env.root().display();
    let payload = format!(
        r#"{{"session_id":"abcd1234","cwd":"{root}","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"{}/x.txt"}}}}"#,
        outside.path().display()
    );
    assert_eq!(denied("claude", &hook(&env, "claude", &payload, &[])), None);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let bash = fixture(&env, "codex/PreToolUse.shell.json");
    assert_eq!(denied("codex", &hook(&env, "codex", &bash, &[])), None);
    assert!(env.files_ending(".lock.codex-6b8f1a37").is_empty());
    // A heartbeat only.
    assert!(env.exists(".codex-6b8f1a37_presence"));
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

#[test]
fn session_end_clocks_out_and_releases_everything() {
    let env = Env::new();
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.SessionStart.json")),
        &[],
    );
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json")),
        &[],
    );
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.SessionEnd.json")),
        &[],
    );
    assert!(!env.exists("out.txt.lock.claude-7684f1ed"));
    let status: Value = env.cmd().args(["status", "--json"]).ok().json();
    let me = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "claude-7684f1ed")
        .unwrap();
    assert_eq!(me["status"], "FINISHED");
    assert!(
        status["partners"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["partner_name"] != "claude-7684f1ed")
    );
}
