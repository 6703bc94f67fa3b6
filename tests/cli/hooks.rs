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
    assert!(
        reason.contains("released when its holder's turn ends"),
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

/// A lock taken with a plain `coord lock` lasts until its holder unlocks it, not until a turn
/// ends: the deny says so.
#[test]
fn a_deny_for_a_plain_coord_lock_says_it_lasts_until_unlocked() {
    let env = Env::new();
    env.agent("alice").args(["lock", "out.txt"]).ok();
    let second = fixture(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    let out = hook(&env, "claude", &second, &["--wait", "0"]);
    let reason = denied("claude", &out).expect("denied while alice holds it");
    assert!(reason.contains("alice"), "{reason}");
    assert!(reason.contains("when its holder unlocks it"), "{reason}");
    assert!(!reason.contains("turn ends"), "{reason}");
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

/// The agents of `client` holding a lock on `file` (`file.lock.<client>-…`).
fn session_locks(env: &Env, client: &str, file: &str) -> Vec<String> {
    env.files_ending("")
        .into_iter()
        .filter(|f| f.starts_with(&format!("{file}.lock.{client}-")))
        .collect()
}

/// `payload` (a pre-tool call of `client`'s session) edits `files`. While another agent holds
/// any one of them, the call is denied in the client's format naming the holder and the file,
/// and nothing is locked (all or nothing); once they are free it is allowed and every file is
/// locked by the session. "Allowed" alone proves nothing about a tool: the deny does.
#[track_caller]
fn rival_is_denied(env: &Env, client: &str, payload: &str, files: &[&str], what: &str) {
    let event: &[&str] = if client == "copilot" {
        &["--event", "preToolUse"]
    } else {
        &[]
    };
    for held in files {
        env.agent("holder")
            .args(["lock", held, "--reason", "rewriting it"])
            .ok();
        let out = hook(
            env,
            client,
            payload,
            &[event, &["--wait", "100ms"]].concat(),
        );
        let reason = denied(client, &out).unwrap_or_else(|| {
            panic!("{what}: an edit of `{held}`, held by another agent, must be denied: {out:?}")
        });
        assert!(
            reason.contains("holder") && reason.contains(&format!("`{held}`")),
            "{what}: {reason}"
        );
        for f in files {
            assert!(
                session_locks(env, client, f).is_empty(),
                "{what}: nothing locked while `{held}` is held"
            );
        }
        env.agent("holder").args(["unlock", held]).ok();
    }
    let out = hook(env, client, payload, event);
    assert_eq!(denied(client, &out), None, "{what}: free files are allowed");
    for f in files {
        assert_eq!(
            session_locks(env, client, f).len(),
            1,
            "{what}: `{f}` locked by the session"
        );
    }
}

/// A fixture as JSON, with its paths moved into `env`.
fn fixture_json(env: &Env, rel: &str) -> Value {
    serde_json::from_str(&fixture(env, rel)).unwrap()
}

/// Issue 33: every Claude Code edit tool, from the real client's payload shape.
#[test]
fn claude_every_edit_tool_is_denied_to_a_rival_session() {
    let root_of = |env: &Env| env.root().display().to_string();
    let env = Env::new();
    let write = fixture(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    rival_is_denied(&env, "claude", &write, &["out.txt"], "Write");

    let env = Env::new();
    env.write("existing.txt", "hello world\n");
    let edit = fixture(&env, &format!("{CLAUDE}/edit_allow.PreToolUse.json"));
    rival_is_denied(&env, "claude", &edit, &["existing.txt"], "Edit");

    let env = Env::new();
    let mut multi = fixture_json(&env, &format!("{CLAUDE}/edit_allow.PreToolUse.json"));
    multi["tool_name"] = "MultiEdit".into();
    multi["tool_input"] = serde_json::json!({
        "file_path": format!("{}/multi.rs", root_of(&env)),
        "edits": [{"old_string": "a", "new_string": "b"}],
    });
    rival_is_denied(
        &env,
        "claude",
        &multi.to_string(),
        &["multi.rs"],
        "MultiEdit",
    );

    let env = Env::new();
    let mut nb = fixture_json(&env, &format!("{CLAUDE}/edit_allow.PreToolUse.json"));
    nb["tool_name"] = "NotebookEdit".into();
    nb["tool_input"] = serde_json::json!({
        "notebook_path": format!("{}/nb.ipynb", root_of(&env)),
        "cell_id": "c1",
        "new_source": "print(1)",
        "edit_mode": "replace",
    });
    rival_is_denied(
        &env,
        "claude",
        &nb.to_string(),
        &["nb.ipynb"],
        "NotebookEdit",
    );
}

/// Issue 33: Codex's `apply_patch`, every kind of path its patch names, from the real payload.
#[test]
fn codex_apply_patch_every_path_kind_is_denied_to_a_rival_session() {
    let patched = |env: &Env, patch: &str| {
        let mut v = fixture_json(env, "codex-0.169.0/deny.PreToolUse.json");
        assert_eq!(v["tool_name"], "apply_patch");
        v["tool_input"]["command"] = patch.into();
        v.to_string()
    };
    let env = Env::new();
    let add = fixture(&env, "codex-0.169.0/deny.PreToolUse.json");
    rival_is_denied(&env, "codex", &add, &["target.txt"], "apply_patch Add File");

    for (what, patch, files) in [
        (
            "apply_patch Update File",
            "*** Begin Patch\n*** Update File: target.txt\n@@\n-a\n+b\n*** End Patch\n",
            &["target.txt"][..],
        ),
        (
            "apply_patch Delete File",
            "*** Begin Patch\n*** Delete File: target.txt\n*** End Patch\n",
            &["target.txt"][..],
        ),
        (
            "apply_patch Move to",
            "*** Begin Patch\n*** Update File: old.txt\n*** Move to: new.txt\n@@\n-a\n+b\n*** End Patch\n",
            &["old.txt", "new.txt"][..],
        ),
    ] {
        let env = Env::new();
        env.write("target.txt", "a\n");
        env.write("old.txt", "a\n");
        rival_is_denied(&env, "codex", &patched(&env, patch), files, what);
    }
}

/// Issue 33: Gemini CLI 0.61's file-editing tools (`write_file`, `replace`: its whole
/// `EDIT_TOOL_NAMES`), from the real payloads.
#[test]
fn gemini_every_edit_tool_is_denied_to_a_rival_session() {
    let env = Env::new();
    let write = fixture(&env, "gemini-0.61.0/deny.BeforeTool.json");
    rival_is_denied(&env, "gemini", &write, &["target.txt"], "write_file");

    let env = Env::new();
    env.write("target.txt", "old line\n");
    let replace = fixture(&env, "gemini-0.61.0/replace.BeforeTool.json");
    rival_is_denied(&env, "gemini", &replace, &["target.txt"], "replace");
}

/// Issue 33 (and 25: GPT-5-family models get only `apply_patch`, whose `toolArgs` is the raw
/// patch string): every Copilot CLI edit tool, from the real payloads.
#[test]
fn copilot_every_edit_tool_is_denied_to_a_rival_session() {
    let env = Env::new();
    let create = fixture(&env, "copilot-1.0.102/deny.preToolUse.json");
    rival_is_denied(&env, "copilot", &create, &["target.txt"], "create");

    let env = Env::new();
    env.write("target.txt", "old line\n");
    let edit = fixture(&env, "copilot-1.0.102/edit_deny.preToolUse.json");
    rival_is_denied(&env, "copilot", &edit, &["target.txt"], "edit");

    let env = Env::new();
    let patch = fixture(&env, "copilot-1.0.102/gpt54_apply_patch.preToolUse.json");
    assert!(patch.contains(r#""toolArgs":"*** Begin Patch"#), "{patch}");
    rival_is_denied(&env, "copilot", &patch, &["target.txt"], "apply_patch");

    let env = Env::new();
    env.write("old.txt", "a\n");
    let root = env.root().display().to_string();
    let mut moved = fixture_json(&env, "copilot-1.0.102/gpt54_apply_patch.preToolUse.json");
    moved["toolArgs"] = format!(
        "*** Begin Patch\n*** Update File: {root}/old.txt\n*** Move to: {root}/new.txt\n@@\n-a\n+b\n*** End Patch\n"
    )
    .into();
    rival_is_denied(
        &env,
        "copilot",
        &moved.to_string(),
        &["old.txt", "new.txt"],
        "apply_patch Move to",
    );

    let env = Env::new();
    env.write("target.txt", "old line\n");
    let mut editor = fixture_json(&env, "copilot-1.0.102/edit_deny.preToolUse.json");
    editor["toolName"] = "str_replace_editor".into();
    editor["toolArgs"]["command"] = "str_replace".into();
    rival_is_denied(
        &env,
        "copilot",
        &editor.to_string(),
        &["target.txt"],
        "str_replace_editor",
    );
    // Its `view` command reads: allowed while held, nothing locked.
    env.agent("holder").args(["lock", "other.txt"]).ok();
    editor["toolArgs"] =
        serde_json::json!({"command": "view", "path": format!("{root}/other.txt")});
    let out = hook(
        &env,
        "copilot",
        &editor.to_string(),
        &["--event", "preToolUse"],
    );
    assert_eq!(denied("copilot", &out), None);
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

/// Issue 25: Copilot's `agentStop` ends the turn (locks released, the stop held once for
/// unread messages in Copilot's `{decision, reason}`), and `sessionStart` tells the model its
/// coord name, the others and their locks as `{"additionalContext": …}`.
#[test]
fn copilot_agent_stop_releases_and_session_start_gives_context() {
    let env = Env::new();
    env.agent("gemini").args(["presence", "translating"]).ok();
    env.agent("gemini").args(["lock", "notes.md"]).ok();
    let run = |name: &str, event: &str| {
        hook(
            &env,
            "copilot",
            &fixture(&env, &format!("copilot-1.0.102/{name}.json")),
            &["--event", event],
        )
    };
    let start = json(&run("allow.sessionStart", "sessionStart"));
    let text = start["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{start}"));
    assert!(text.contains("`copilot-42bf1b09`"), "{text}");
    assert!(text.contains("gemini (working on translating)"), "{text}");
    assert!(text.contains("notes.md (held by gemini"), "{text}");

    // The stopping session (its own id in the fixture) holds a file and has a message.
    let stop = fixture(&env, "copilot-1.0.102/manual_hook.agentStop.json");
    let mut pre = fixture_json(&env, "copilot-1.0.102/allow.preToolUse.json");
    pre["sessionId"] = serde_json::from_str::<Value>(&stop).unwrap()["sessionId"].clone();
    hook(
        &env,
        "copilot",
        &pre.to_string(),
        &["--event", "preToolUse"],
    );
    assert!(env.exists("target.txt.lock.copilot-d6e04213"));
    env.agent("gemini")
        .args(["msg", "send", "copilot-d6e04213", "leave target.txt to me"])
        .ok();
    let out = json(&hook(&env, "copilot", &stop, &["--event", "agentStop"]));
    assert_eq!(out["decision"], "block", "{out}");
    assert!(
        out["reason"]
            .as_str()
            .unwrap()
            .contains("leave target.txt to me")
    );
    assert!(!env.exists("target.txt.lock.copilot-d6e04213"));
    let again = stop.replace("\"stop_hook_active\":false", "\"stop_hook_active\":true");
    assert_ne!(again, stop);
    assert_eq!(
        hook(&env, "copilot", &again, &["--event", "agentStop"])
            .stdout
            .trim(),
        ""
    );
}

/// `git` in `env`'s root.
fn git(env: &Env, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(env.root())
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Issue 35: a commit made through a client's shell tool is checked before it runs, as the
/// pre-commit guard would (a client may run git with its hooks off: Gemini CLI empties
/// `core.hooksPath`). Denied in the client's format naming the holder and the file; a
/// session's own lock does not block its own commit; other commands are allowed.
#[test]
fn a_commit_through_each_clients_shell_tool_is_checked_like_the_guard() {
    let env = Env::new();
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: git is not installed");
        return;
    }
    let root = env.root().display().to_string();
    git(&env, &["init", "-q"]);
    env.write("a.txt", "one\n");
    env.write("sub/b.txt", "one\n");
    git(&env, &["add", "a.txt", "sub/b.txt"]);
    git(&env, &["commit", "-q", "-m", "first"]);
    env.write("a.txt", "two\n");

    let claude = |cmd: &str| {
        let mut v = fixture_json(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
        v["tool_name"] = "Bash".into();
        v["tool_input"] = serde_json::json!({"command": cmd, "description": "commit"});
        v.to_string()
    };
    let codex = |cmd: &str| {
        let mut v = fixture_json(&env, "codex/PreToolUse.shell.json");
        v["tool_input"]["command"] = cmd.into();
        v.to_string()
    };
    let gemini = |cmd: &str| {
        let mut v = fixture_json(&env, "gemini-0.61.0/deny.BeforeTool.json");
        v["tool_name"] = "run_shell_command".into();
        v["tool_input"] = serde_json::json!({"command": cmd, "description": "commit"});
        v.to_string()
    };
    let copilot = |cmd: &str| {
        let mut v = fixture_json(&env, "copilot-1.0.102/deny.preToolUse.json");
        v["toolName"] = "bash".into();
        v["toolArgs"] = serde_json::json!({"command": cmd, "description": "commit"});
        v.to_string()
    };
    let cases: [(&str, String); 4] = [
        ("claude", claude("git add a.txt && git commit -m wip")),
        ("codex", codex("git commit -am wip")),
        (
            "gemini",
            gemini(&format!("cd {root} && git -C . commit -a -m wip")),
        ),
        ("copilot", copilot("git add -A; git commit -m 'wip'")),
    ];
    env.agent("holder")
        .args(["lock", "a.txt", "--reason", "rewriting a"])
        .ok();
    for (client, payload) in &cases {
        let event: &[&str] = if *client == "copilot" {
            &["--event", "preToolUse"]
        } else {
            &[]
        };
        let out = hook(&env, client, payload, event);
        let reason = denied(client, &out)
            .unwrap_or_else(|| panic!("{client}: a commit of a held file must be denied: {out:?}"));
        assert!(
            reason.contains("holder") && reason.contains("`a.txt`") && reason.contains("git guard"),
            "{client}: {reason}"
        );
        // A command that neither commits nor pushes is the shell's business.
        let status = payload.replace("commit", "status");
        assert_eq!(
            denied(client, &hook(&env, client, &status, event)),
            None,
            "{client}"
        );
    }
    // COORD_GUARD=warn lets it through, as it does the git hook.
    let out = env
        .cmd()
        .env_remove("COORD_DIR")
        .env("COORD_GUARD", "warn")
        .args(["hook", "claude"])
        .stdin(cases[0].1.clone())
        .ok();
    assert_eq!(denied("claude", &out), None);
    // The session's own lock does not block its own commit.
    env.agent("holder").args(["unlock", "a.txt"]).ok();
    env.agent("claude-10bf7680").args(["lock", "a.txt"]).ok();
    assert_eq!(
        denied("claude", &hook(&env, "claude", &cases[0].1, &[])),
        None
    );
    // Another session of the same client is refused.
    let rival = claude("git commit -am wip").replace("10bf7680", "77777777");
    let reason = denied("claude", &hook(&env, "claude", &rival, &[])).unwrap();
    assert!(reason.contains("claude-10bf7680"), "{reason}");
    // Unheld files commit freely.
    env.agent("claude-10bf7680").args(["unlock", "a.txt"]).ok();
    assert_eq!(denied("claude", &hook(&env, "claude", &rival, &[])), None);
}

/// Issue 35: a `git push` through the shell tool is checked like the pre-push guard: the
/// commits not yet on the remote touch a held file, so it is denied.
#[test]
fn a_push_through_the_shell_tool_of_unpushed_commits_touching_a_held_file_is_denied() {
    let env = Env::new();
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: git is not installed");
        return;
    }
    let remote = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(remote.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    git(&env, &["init", "-q", "-b", "main"]);
    env.write("a.txt", "one\n");
    env.write("b.txt", "one\n");
    git(&env, &["add", "."]);
    git(&env, &["commit", "-q", "-m", "first"]);
    git(
        &env,
        &[
            "remote",
            "add",
            "origin",
            &remote.path().display().to_string(),
        ],
    );
    git(&env, &["push", "-q", "-u", "origin", "main"]);
    env.write("a.txt", "two\n");
    git(&env, &["commit", "-q", "-am", "second"]);
    env.agent("holder").args(["lock", "a.txt"]).ok();
    env.agent("other").args(["lock", "b.txt"]).ok();

    let mut v = fixture_json(&env, "gemini-0.61.0/deny.BeforeTool.json");
    v["tool_name"] = "run_shell_command".into();
    v["tool_input"] = serde_json::json!({"command": "git push origin main", "dir_path": "."});
    let reason = denied("gemini", &hook(&env, "gemini", &v.to_string(), &[]))
        .expect("a push of a commit touching a held file is denied");
    assert!(
        reason.contains("pushes `a.txt`") && reason.contains("holder"),
        "{reason}"
    );
    // b.txt is held too, but no unpushed commit touches it.
    assert!(!reason.contains("b.txt"), "{reason}");
    env.agent("holder").args(["unlock", "a.txt"]).ok();
    assert_eq!(
        denied("gemini", &hook(&env, "gemini", &v.to_string(), &[])),
        None
    );
}

/// Issue 26 item 17: an event whose `cwd` is not a folder is answered with a warning and
/// allowed; no `.coord/` is made in the folder the hook process happens to run in.
#[test]
fn an_event_whose_cwd_is_gone_makes_no_workspace_where_the_hook_runs() {
    let env = Env::new();
    for cwd in ["/nonexistent/proj", "gone/below"] {
        let payload = format!(
            r#"{{"session_id":"5e55a0e1","cwd":"{cwd}","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"/nonexistent/proj/a.txt","content":"x"}}}}"#
        );
        let out = env
            .cmd()
            .env_remove("COORD_DIR")
            .args(["hook", "claude"])
            .stdin(payload)
            .ok();
        assert!(
            out.stderr.contains("warning:") && out.stderr.contains(cwd),
            "{}",
            out.stderr
        );
        assert!(out.stdout.trim().is_empty(), "allowed: {}", out.stdout);
        assert!(!env.path(".coord").exists(), "{cwd}: no .coord/ here");
    }
}

/// The inode of a file (a rewrite through a temporary file and a rename makes a new one).
fn inode(env: &Env, rel: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(env.path(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .ino()
}

/// The one stamp-card row of the workspace.
fn the_row(env: &Env) -> String {
    let rows = std::fs::read_dir(env.path(".coord/partners"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".session"))
        .collect::<Vec<_>>();
    assert_eq!(rows.len(), 1, "{rows:?}");
    format!(".coord/partners/{}", rows[0])
}

/// A client's hooks come seconds apart (the PostToolUse right after its PreToolUse, a run of
/// shell commands): within 5 s of the last write, the heartbeat (presence and stamp-card row)
/// and the lock's renewal are left as they are (each rewrite is a file made, renamed over and
/// removed); past that, both are written again, and a finished agent is always written.
#[test]
fn hooks_seconds_apart_leave_a_fresh_heartbeat_and_lock_as_they_are() {
    let env = Env::new();
    let at = |time: &str, payload: &str| {
        env.cmd()
            .env_remove("COORD_DIR")
            .env("COORD_NOW", time)
            .cwd("/")
            .args(["hook", "claude"])
            .stdin(payload)
            .ok()
    };
    let event = |name: &str| fixture(&env, &format!("{CLAUDE}/write_allow.{name}.json"));
    let bash = event("PreToolUse")
        .replace("\"tool_name\":\"Write\"", "\"tool_name\":\"Bash\"")
        .replace("\"file_path\"", "\"command\":\"ls\",\"x\"");
    let (presence, lock) = (".claude-7684f1ed_presence", "out.txt.lock.claude-7684f1ed");

    at("2026-01-01T10:00:00Z", &event("SessionStart"));
    at("2026-01-01T10:00:00Z", &event("PreToolUse"));
    let row = the_row(&env);
    let before = [inode(&env, presence), inode(&env, lock), inode(&env, &row)];
    let texts = [env.read(presence), env.read(lock), env.read(&row)];

    // 3 s later: the tool ran, then a shell command, then another edit of the same file.
    at("2026-01-01T10:00:03Z", &event("PostToolUse"));
    at("2026-01-01T10:00:04Z", &bash);
    let again = at("2026-01-01T10:00:04Z", &event("PreToolUse"));
    assert_eq!(denied("claude", &again), None);
    assert_eq!(
        [inode(&env, presence), inode(&env, lock), inode(&env, &row)],
        before,
        "rewritten within 5 s"
    );
    assert_eq!([env.read(presence), env.read(lock), env.read(&row)], texts);

    // 10 s after the last write: heartbeat and renewal again.
    at("2026-01-01T10:00:10Z", &event("PostToolUse"));
    assert!(
        env.read(presence)
            .contains("heartbeat: 2026-01-01T10:00:10"),
        "{}",
        env.read(presence)
    );
    assert!(
        env.read(lock).contains("locked_at: 2026-01-01T10:00:10"),
        "{}",
        env.read(lock)
    );
    assert!(
        env.read(&row)
            .contains("last_heartbeat: 2026-01-01T10:00:10"),
        "{}",
        env.read(&row)
    );

    // A finished agent (clocked out) is not fresh, however recent its last write: its next
    // call writes the heartbeat.
    at("2026-01-01T10:00:11Z", &event("SessionEnd"));
    assert!(env.read(presence).contains("status: FINISHED"));
    at("2026-01-01T10:00:12Z", &bash);
    assert!(
        env.read(presence)
            .contains("heartbeat: 2026-01-01T10:00:12"),
        "{}",
        env.read(presence)
    );
}

/// The edit of a file this session locked a second ago is let through without a rewrite only
/// while the file's folder shows no other lock: a lock made by hand beside it (the seed's way,
/// by another agent) still denies, as the full lock transition does.
#[test]
fn a_fresh_own_lock_with_a_hand_made_lock_beside_it_still_denies() {
    let env = Env::new();
    let pre = fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json"));
    let at = |time: &str| {
        env.cmd()
            .env_remove("COORD_DIR")
            .env("COORD_NOW", time)
            .cwd("/")
            .args(["hook", "claude", "--wait", "0"])
            .stdin(&pre)
            .ok()
    };
    assert_eq!(denied("claude", &at("2026-01-01T10:00:00Z")), None);
    env.write(
        "out.txt.lock.bob",
        "Agent: bob\nlocked_at: 2026-01-01T10:00:01+00:00\n",
    );
    let reason = denied("claude", &at("2026-01-01T10:00:01Z")).expect("denied");
    assert!(reason.contains("locked by bob"), "{reason}");
}
