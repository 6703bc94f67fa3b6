//! `coord hook CLIENT` between rivals: two sessions of one client racing for a file, every edit
//! tool of each client denied to a rival, a CLI lock and a hook lock refusing each other.

use std::io::Write;
use std::process::Stdio;

use crate::clients::hooks::{CLAUDE, denied, fixture, fixture_json, hook, session_locks};
use crate::support::{Env, Output};

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
                .cwd(crate::support::outside())
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
    // The patch as an argv (`["apply_patch", PATCH]`), as Codex's shell-style call gives it.
    let env = Env::new();
    env.write("target.txt", "a\n");
    let mut v = fixture_json(&env, "codex-0.169.0/deny.PreToolUse.json");
    v["tool_input"]["command"] = serde_json::json!([
        "apply_patch",
        "*** Begin Patch\n*** Update File: target.txt\n@@\n-a\n+b\n*** End Patch\n"
    ]);
    rival_is_denied(
        &env,
        "codex",
        &v.to_string(),
        &["target.txt"],
        "apply_patch as an argv",
    );
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
    env.write("other.txt", "theirs\n");
    env.agent("holder").args(["lock", "other.txt"]).ok();
    let root = env.root().display().to_string();
    editor["toolArgs"] =
        serde_json::json!({"command": "view", "path": format!("{root}/other.txt")});
    let out = hook(
        &env,
        "copilot",
        &editor.to_string(),
        &["--event", "preToolUse"],
    );
    assert_eq!(denied("copilot", &out), None);
    assert!(session_locks(&env, "copilot", "other.txt").is_empty());
    // The same call as an edit command is denied: the view above was judged, not skipped.
    editor["toolArgs"]["command"] = "insert".into();
    let out = hook(
        &env,
        "copilot",
        &editor.to_string(),
        &["--event", "preToolUse", "--wait", "100ms"],
    );
    assert!(denied("copilot", &out).is_some(), "{out:?}");
}

/// A deny says where the session stands in line: another agent already waiting for the file
/// is counted, the session itself is not.
#[test]
fn a_deny_counts_the_other_agents_waiting_in_line() {
    let env = Env::new();
    let first = fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json"));
    let second = fixture(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    assert_eq!(denied("claude", &hook(&env, "claude", &first, &[])), None);
    let reason = denied("claude", &hook(&env, "claude", &second, &["--wait", "0"]))
        .expect("the second session must be denied");
    assert!(
        reason.contains("no one else waits for it: you are next in the queue"),
        "{reason}"
    );
    // bob stands in line for the same file.
    let bob = env
        .agent("bob")
        .args(["lock", "out.txt", "--wait", "60s", "-q"])
        .spawn();
    crate::support::eventually("bob waits", || {
        std::fs::read_to_string(env.path(".bob_presence"))
            .is_ok_and(|p| p.contains("lock_status: WAITING"))
    });
    let reason = denied(
        "claude",
        &hook(&env, "claude", &second, &["--wait", "300ms"]),
    )
    .expect("the second session must be denied");
    assert!(
        reason.contains("1 other agent waits for it: you are 2nd in the queue"),
        "{reason}"
    );
    // The holder's turn ends: bob, first in line, gets the file.
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.Stop.json")),
        &[],
    );
    let out = crate::support::finish(bob);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(env.exists("out.txt.lock.bob"));
}

/// A `Write` carries the whole file: a payload of several MiB (a generated file, a data set) is
/// read in full and judged like any other, so a rival session's large write is still denied.
#[test]
fn a_rival_write_of_several_mebibytes_is_still_denied() {
    let env = Env::new();
    let first = fixture(&env, &format!("{CLAUDE}/write_allow.PreToolUse.json"));
    assert_eq!(denied("claude", &hook(&env, "claude", &first, &[])), None);
    let second = fixture(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    let big = "x".repeat(3 * 1024 * 1024);
    let second = second.replace("written by session X\\n", &big);
    assert!(second.len() > 3 * 1024 * 1024);
    let out = hook(&env, "claude", &second, &["--wait", "0"]);
    let reason = denied("claude", &out).expect("the rival's large write must be denied");
    assert!(reason.contains("claude-7684f1ed"), "{reason}");
    assert!(!env.exists("out.txt.lock.claude-10bf7680"));
}

/// A file with a second name (a hard link): an edit through that name of a file another agent
/// holds under the first writes the held file (a client writes in place), so it is denied
/// naming the holder and the file; a hard link to a free file is edited and locked as any.
#[test]
fn an_edit_through_a_hard_link_of_a_held_file_is_denied() {
    let env = Env::new();
    env.write("F", "f\n");
    env.write("H", "h\n");
    env.agent("b").args(["lock", "F"]).ok();
    std::fs::hard_link(env.path("F"), env.path("G")).unwrap();
    std::fs::hard_link(env.path("H"), env.path("H2")).unwrap();
    let write = |file: &str| {
        serde_json::json!({
            "session_id": "7684f1ed-55e2-4a19-be34-6aa5a64f4b50",
            "cwd": env.root(),
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": env.path(file), "content": "x"},
        })
        .to_string()
    };
    let out = hook(&env, "claude", &write("G"), &["--wait", "0"]);
    let reason = denied("claude", &out).expect("the edit through G is denied");
    assert!(reason.contains("`F` is locked by b"), "{reason}");
    assert!(!env.exists("G.lock.claude-7684f1ed"));
    let out = hook(&env, "claude", &write("H2"), &["--wait", "0"]);
    assert_eq!(denied("claude", &out), None, "{}", out.stdout);
    assert!(env.exists("H2.lock.claude-7684f1ed"));
}
