//! Cursor and Windsurf (editors; neither runs here): `coord hook cursor|windsurf` fed payloads
//! built from the examples of their published hook docs (Cursor: cursor.com/docs/hooks —
//! `conversation_id`, `generation_id`, `hook_event_name`, `workspace_roots`, `preToolUse`'s
//! `tool_name`/`tool_input`, `beforeShellExecution`'s `command`/`cwd`, `stop`'s `status` and
//! `loop_count`; Windsurf: docs.windsurf.com/windsurf/cascade/hooks — `agent_action_name`,
//! `trajectory_id`, `execution_id`, `timestamp`, `tool_info`), a rival session denied for
//! every edit door in the client's own way, the turn's end releasing, and what `coord init`
//! writes and `init --remove` takes back.

use serde_json::{Value, json};

use crate::support::{Env, Output};

/// A Cursor conversation id (a UUID, as in Cursor's payloads).
const CONVERSATION: &str = "668320d2-2fd8-4888-b33c-2a466fec86e7";
/// A Cascade trajectory id.
const TRAJECTORY: &str = "c1a7e3b2-9d04-4f6e-8a11-5b2c7d9e0f13";

/// Cursor's common fields (from its docs' example) and `extra`.
fn cursor(env: &Env, event: &str, extra: Value) -> Value {
    let mut p = json!({
        "conversation_id": CONVERSATION,
        "generation_id": "2c0fd1a4-6a61-4b41-9c3e-0d4f1f2b7a90",
        "model": "claude-sonnet-4",
        "hook_event_name": event,
        "cursor_version": "2.0.77",
        "workspace_roots": [env.root().display().to_string()],
        "user_email": "user@example.com",
    });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

/// A Cascade payload (its docs' envelope) of `action` with `tool_info`.
fn windsurf(action: &str, tool_info: Value) -> Value {
    json!({
        "agent_action_name": action,
        "trajectory_id": TRAJECTORY,
        "execution_id": "0b9e2f7c-1d3a-4e5b-8c6d-7f8091a2b3c4",
        "timestamp": "2026-11-24T20:25:00.000Z",
        "tool_info": tool_info,
    })
}

/// `coord hook CLIENT` started in `dir` (the client's own folder, or one outside every
/// workspace when the payload names it), finding its workspace as the client's would.
fn hook_cmd(env: &Env, client: &str, dir: &std::path::Path) -> crate::support::Cmd {
    env.cmd()
        .env_remove("COORD_DIR")
        .cwd(dir)
        .args(["hook", client])
}

/// `coord hook CLIENT` fed `payload` from `dir`.
fn hook(env: &Env, client: &str, payload: &Value, dir: &std::path::Path, extra: &[&str]) -> Output {
    hook_cmd(env, client, dir)
        .args(extra)
        .stdin(payload.to_string())
        .run()
}

/// Cursor's deny reason (`permission: deny`, the same text to the user and the agent); `None`
/// when allowed (`{}`).
fn cursor_denied(out: &Output) -> Option<String> {
    assert_eq!(out.code, Some(0), "{out:?}");
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("Cursor reads JSON from every hook ({e}): {out:?}"));
    if v == json!({}) {
        return None;
    }
    assert_eq!(v["permission"], "deny", "{v}");
    assert_eq!(v["user_message"], v["agent_message"], "{v}");
    Some(v["agent_message"].as_str().unwrap().to_string())
}

/// Cascade's deny: exit status 2, the reason on stderr; `None` when allowed (0, nothing printed).
fn windsurf_denied(out: &Output) -> Option<String> {
    match out.code {
        Some(0) => {
            assert!(out.stdout.trim().is_empty(), "{out:?}");
            None
        }
        Some(2) => Some(out.stderr.clone()),
        _ => panic!("exit 0 or 2: {out:?}"),
    }
}

/// The locks of `client`'s sessions on `file`.
fn session_locks(env: &Env, client: &str, file: &str) -> Vec<String> {
    env.files_ending("")
        .into_iter()
        .filter(|f| f.starts_with(&format!("{file}.lock.{client}-")))
        .collect()
}

/// While another agent holds `file`, `payload` is denied naming the holder and nothing is
/// locked; once it is free the call is allowed and the session's agent `owner` holds it.
#[track_caller]
fn rival_is_denied(
    env: &Env,
    client: &str,
    payload: &Value,
    file: &str,
    owner: &str,
    denied: fn(&Output) -> Option<String>,
    what: &str,
) {
    env.agent("holder")
        .args(["lock", file, "--reason", "rewriting it"])
        .ok();
    let out = hook(
        env,
        client,
        payload,
        crate::support::outside(),
        &["--wait", "100ms"],
    );
    let reason = denied(&out)
        .unwrap_or_else(|| panic!("{what}: an edit of `{file}` held by another agent: {out:?}"));
    assert!(
        reason.contains("holder") && reason.contains(&format!("`{file}`")),
        "{what}: {reason}"
    );
    assert!(session_locks(env, client, file).is_empty(), "{what}");
    env.agent("holder").args(["unlock", file]).ok();
    let out = hook(env, client, payload, crate::support::outside(), &[]);
    assert_eq!(denied(&out), None, "{what}: a free file is allowed");
    assert_eq!(
        session_locks(env, client, file),
        vec![format!("{file}.lock.{owner}")],
        "{what}: one session, one agent"
    );
}

#[test]
fn cursor_every_edit_tool_is_denied_to_a_rival_session() {
    for tool in [
        "Write",
        "Edit",
        "StrReplace",
        "MultiEdit",
        "Delete",
        "EditNotebook",
    ] {
        let env = Env::new();
        env.write("held.txt", "old\n");
        let path = env.path("held.txt").display().to_string();
        let input = match tool {
            "Write" => json!({"file_path": path, "contents": "new\n"}),
            "Delete" => json!({"path": path}),
            "EditNotebook" => json!({"target_notebook": path, "cell_idx": 0}),
            _ => json!({"file_path": path, "old_string": "old", "new_string": "new"}),
        };
        let pre = cursor(
            &env,
            "preToolUse",
            json!({"tool_name": tool, "tool_input": input, "tool_use_id": "call_1"}),
        );
        rival_is_denied(
            &env,
            "cursor",
            &pre,
            "held.txt",
            "cursor-668320d2",
            cursor_denied,
            tool,
        );
    }
}

#[test]
fn cursor_stop_releases_and_two_conversations_are_two_agents() {
    let env = Env::new();
    let root = env.root().to_path_buf();
    let write = |conversation: &str| {
        let mut p = cursor(
            &env,
            "preToolUse",
            json!({"tool_name": "Write", "tool_input": {"file_path": env.path("a.txt").display().to_string(), "contents": "x"}}),
        );
        p["conversation_id"] = json!(conversation);
        p
    };
    assert_eq!(
        cursor_denied(&hook(&env, "cursor", &write(CONVERSATION), &root, &[])),
        None
    );
    assert!(env.exists("a.txt.lock.cursor-668320d2"));
    // Another conversation is another agent: denied while the first holds the file.
    let other = write("91b07c55-0e4d-4c2b-a7f3-3e2d1c0b9a88");
    let reason = cursor_denied(&hook(&env, "cursor", &other, &root, &["--wait", "100ms"]))
        .expect("a second conversation is a rival");
    assert!(reason.contains("cursor-668320d2"), "{reason}");
    // The agent loop ends: the turn's locks go.
    let stop = cursor(
        &env,
        "stop",
        json!({"status": "completed", "loop_count": 0}),
    );
    assert_eq!(
        cursor_denied(&hook(&env, "cursor", &stop, &root, &[])),
        None
    );
    assert!(!env.exists("a.txt.lock.cursor-668320d2"));
    assert_eq!(
        cursor_denied(&hook(&env, "cursor", &other, &root, &[])),
        None
    );
    assert!(env.exists("a.txt.lock.cursor-91b07c55"));
}

/// A Cursor conversation's whole life, each event as Cursor's docs shape it: `sessionStart`
/// gives the agent its name; `afterFileEdit` renews the lock the edit took; a shell command
/// that changed a held file is told in `afterShellExecution`; `stop` holds the turn back once
/// for an unread message (`loop_count` 0) and not again (`loop_count` 1); `sessionEnd` clocks
/// the agent out.
#[test]
fn cursor_session_start_edits_shell_stop_and_end() {
    let env = Env::new();
    let root = env.root().to_path_buf();
    let run = |payload: Value, now: &str| {
        let out = hook_cmd(&env, "cursor", &root)
            .env("COORD_NOW", now)
            .stdin(payload.to_string())
            .ok();
        serde_json::from_str::<Value>(out.stdout.trim())
            .unwrap_or_else(|e| panic!("Cursor reads JSON from every hook ({e}): {out:?}"))
    };
    // Times of a few minutes ago: the end's status shows a finished agent for a day only.
    let at = |minutes: i64| {
        let t = chrono::Utc::now() - chrono::Duration::minutes(10 - minutes);
        (
            t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string(),
            t.format("%H:%M:%S").to_string(),
        )
    };
    let (t0, t0_clock) = at(0);
    let (t_edit, t_edit_clock) = at(1);
    let (t1, _) = at(2);
    let (t0, t1) = (t0.as_str(), t1.as_str());
    let start = run(
        cursor(&env, "sessionStart", json!({"session_id": CONVERSATION})),
        t0,
    );
    assert!(
        start["additional_context"]
            .as_str()
            .is_some_and(|c| c.contains("cursor-668320d2")),
        "{start}"
    );

    // An edit, then Cursor's afterFileEdit a minute later: the lock is renewed.
    let file = env.path("a.txt").display().to_string();
    let pre = cursor(
        &env,
        "preToolUse",
        json!({"tool_name": "Write", "tool_input": {"file_path": file, "contents": "x"}}),
    );
    assert_eq!(run(pre, t0), json!({}));
    let lock = "a.txt.lock.cursor-668320d2";
    assert!(env.read(lock).contains(&t0_clock), "{}", env.read(lock));
    let edited = cursor(
        &env,
        "afterFileEdit",
        json!({"file_path": file, "edits": [{"old_string": "", "new_string": "x"}]}),
    );
    run(edited, &t_edit);
    assert!(env.read(lock).contains(&t_edit_clock), "{}", env.read(lock));

    // A shell command that changed a file another agent holds is told after it ran.
    env.write("held.txt", "theirs\n");
    env.agent("holder")
        .env("COORD_NOW", t1)
        .args(["lock", "held.txt"])
        .ok();
    let shell = |event: &str| {
        cursor(
            &env,
            event,
            json!({"command": "sed -i s/t/T/ held.txt", "cwd": root.display().to_string()}),
        )
    };
    assert_eq!(run(shell("beforeShellExecution"), t1), json!({}));
    env.write("held.txt", "Theirs\n");
    let after = run(shell("afterShellExecution"), t1);
    assert!(
        after["additional_context"]
            .as_str()
            .is_some_and(|c| c.contains("`held.txt`") && c.contains("holder")),
        "{after}"
    );

    // A message waits: the first stop holds the turn back, the continued one does not.
    env.agent("holder")
        .env("COORD_NOW", t1)
        .args(["msg", "send", "cursor-668320d2", "please leave held.txt"])
        .ok();
    let stop = |loops: u64| {
        cursor(
            &env,
            "stop",
            json!({"status": "completed", "loop_count": loops}),
        )
    };
    let held_back = run(stop(0), t1);
    assert!(
        held_back["followup_message"].as_str().is_some(),
        "{held_back}"
    );
    assert_eq!(run(stop(1), t1), json!({}));

    run(
        cursor(&env, "sessionEnd", json!({"reason": "user_close"})),
        t1,
    );
    assert_eq!(env.status_of("cursor-668320d2")["status"], "FINISHED");
}

#[test]
fn cursor_a_commit_through_before_shell_execution_of_a_held_file_is_denied() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let out = crate::rigs::git(env.root()).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    if !crate::rigs::git_or_skip() {
        return;
    }
    git(&["init", "-q"]);
    env.write("a.txt", "one\n");
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "first"]);
    env.write("a.txt", "two\n");
    let root = env.root().display().to_string();
    let commit = cursor(
        &env,
        "beforeShellExecution",
        json!({"command": "git commit -am x", "cwd": root}),
    );
    env.agent("holder")
        .args(["lock", "a.txt", "--reason", "rewriting a"])
        .ok();
    let slash = crate::support::outside();
    let reason = cursor_denied(&hook(&env, "cursor", &commit, slash, &[]))
        .expect("a commit of a held file through the shell is denied");
    assert!(
        reason.contains("holder") && reason.contains("`a.txt`"),
        "{reason}"
    );
    let status = cursor(
        &env,
        "beforeShellExecution",
        json!({"command": "git status", "cwd": root}),
    );
    assert_eq!(
        cursor_denied(&hook(&env, "cursor", &status, slash, &[])),
        None
    );
}

#[test]
fn windsurf_pre_write_code_is_denied_to_a_rival_with_exit_status_2() {
    let env = Env::new();
    env.write("held.txt", "old\n");
    let pre = windsurf(
        "pre_write_code",
        json!({
            "file_path": env.path("held.txt").display().to_string(),
            "edits": [{"old_string": "old", "new_string": "new"}],
        }),
    );
    rival_is_denied(
        &env,
        "windsurf",
        &pre,
        "held.txt",
        "windsurf-c1a7e3b2",
        windsurf_denied,
        "pre_write_code",
    );
}

#[test]
fn windsurf_cascade_response_releases_the_turn() {
    let env = Env::new();
    let root = env.root().to_path_buf();
    let pre = windsurf(
        "pre_write_code",
        json!({"file_path": env.path("a.txt").display().to_string(), "edits": []}),
    );
    assert_eq!(
        windsurf_denied(&hook(&env, "windsurf", &pre, &root, &[])),
        None
    );
    assert!(env.exists("a.txt.lock.windsurf-c1a7e3b2"));
    let post = windsurf(
        "post_write_code",
        json!({"file_path": env.path("a.txt").display().to_string(), "edits": []}),
    );
    assert_eq!(
        windsurf_denied(&hook(&env, "windsurf", &post, &root, &[])),
        None
    );
    assert!(
        env.exists("a.txt.lock.windsurf-c1a7e3b2"),
        "held until the turn ends"
    );
    let done = windsurf("post_cascade_response", json!({"response": "Done."}));
    assert_eq!(
        windsurf_denied(&hook(&env, "windsurf", &done, &root, &[])),
        None
    );
    assert!(!env.exists("a.txt.lock.windsurf-c1a7e3b2"));
}

/// Cascade's post-hooks: `post_write_code` renews the lock the write took, and a
/// `post_run_command` after a command that changed a file another agent holds records the shell
/// edit in the history (Cascade reads nothing a hook prints).
#[test]
fn windsurf_post_hooks_renew_the_lock_and_record_a_shell_edit() {
    let env = Env::new();
    let root = env.root().to_path_buf();
    let run = |payload: Value, now: &str| {
        let out = hook_cmd(&env, "windsurf", &root)
            .env("COORD_NOW", now)
            .stdin(payload.to_string())
            .run();
        assert_eq!(windsurf_denied(&out), None);
    };
    let file = env.path("a.txt").display().to_string();
    let write = |action: &str| windsurf(action, json!({"file_path": file, "edits": []}));
    run(write("pre_write_code"), "2026-11-25T10:00:00+00:00");
    let lock = "a.txt.lock.windsurf-c1a7e3b2";
    assert!(env.read(lock).contains("10:00:00"), "{}", env.read(lock));
    run(write("post_write_code"), "2026-11-25T10:01:00+00:00");
    assert!(env.read(lock).contains("10:01:00"), "{}", env.read(lock));

    let t = "2026-11-25T10:02:00+00:00";
    env.write("held.txt", "theirs\n");
    env.agent("holder")
        .env("COORD_NOW", t)
        .args(["lock", "held.txt"])
        .ok();
    let command = |action: &str| {
        windsurf(
            action,
            json!({"command_line": "sed -i s/t/T/ held.txt", "cwd": root.display().to_string()}),
        )
    };
    run(command("pre_run_command"), t);
    env.write("held.txt", "Theirs\n");
    run(command("post_run_command"), t);
    let logged = crate::clients::shelledit::shell_edits(&env);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["file"], "held.txt");
    assert_eq!(logged[0]["agent"], "windsurf-c1a7e3b2");
}

/// A fresh `.cursor/hooks.json` gets Cursor's `version: 1`; an event where the user already
/// runs coord's hook their own way (another path to coord, more flags) gets no second entry.
#[test]
fn init_gives_a_fresh_cursor_file_its_version_and_keeps_a_users_own_coord_hook() {
    let env = Env::new();
    env.cmd().args(["init", "--client", "cursor", "-q"]).ok();
    let c: Value = serde_json::from_str(&env.read(".cursor/hooks.json")).unwrap();
    assert_eq!(c["version"], 1, "{c}");

    let env = Env::new();
    let own = json!({"command": "/opt/tools/coord hook cursor --wait 5s"});
    env.write(
        ".cursor/hooks.json",
        json!({"version": 1, "hooks": {"preToolUse": [own]}}).to_string(),
    );
    env.cmd().args(["init", "--client", "cursor", "-q"]).ok();
    let c: Value = serde_json::from_str(&env.read(".cursor/hooks.json")).unwrap();
    assert_eq!(c["hooks"]["preToolUse"], json!([own]), "{c}");
    assert_eq!(
        c["hooks"]["stop"],
        json!([{"command": "coord hook cursor"}]),
        "{c}"
    );
}

#[test]
fn init_wires_cursor_and_windsurf_and_remove_restores_their_files() {
    let env = Env::new();
    let cursor_before = "{\n  \"version\": 1,\n  \"hooks\": {\n    \"afterFileEdit\": [{ \"command\": \"./hooks/format.sh\" }]\n  }\n}\n";
    let windsurf_before = "{\n  \"hooks\": {\n    \"post_write_code\": [\n      { \"command\": \"python3 lint.py\", \"show_output\": true }\n    ]\n  }\n}\n";
    env.write(".cursor/hooks.json", cursor_before);
    env.write(".windsurf/hooks.json", windsurf_before);
    env.cmd()
        .args(["init", "--client", "cursor,windsurf", "-q"])
        .ok();
    let c: Value = serde_json::from_str(&env.read(".cursor/hooks.json")).unwrap();
    assert_eq!(c["version"], 1);
    for event in [
        "sessionStart",
        "preToolUse",
        "beforeShellExecution",
        "postToolUse",
        "stop",
        "sessionEnd",
    ] {
        assert!(
            c["hooks"][event]
                .as_array()
                .unwrap()
                .contains(&json!({"command": "coord hook cursor"})),
            "{event}: {c}"
        );
    }
    assert_eq!(
        c["hooks"]["afterFileEdit"][0]["command"],
        "./hooks/format.sh"
    );
    let mcp: Value = serde_json::from_str(&env.read(".cursor/mcp.json")).unwrap();
    assert_eq!(mcp["mcpServers"]["coord"]["command"], "coord");
    let w: Value = serde_json::from_str(&env.read(".windsurf/hooks.json")).unwrap();
    for event in [
        "pre_write_code",
        "pre_run_command",
        "post_write_code",
        "post_run_command",
        "post_cascade_response",
    ] {
        assert!(
            w["hooks"][event]
                .as_array()
                .unwrap()
                .contains(&json!({"command": "coord hook windsurf"})),
            "{event}: {w}"
        );
    }
    assert_eq!(
        w["hooks"]["post_write_code"][0]["command"],
        "python3 lint.py"
    );
    env.cmd()
        .args(["init", "--client", "cursor,windsurf"])
        .ok()
        .stdout_has("Nothing to change");
    env.cmd()
        .args(["doctor"])
        .run()
        .stdout_has("Cursor")
        .stdout_has("Windsurf");
    env.cmd()
        .args(["init", "--remove", "--client", "cursor,windsurf"])
        .ok();
    assert_eq!(env.read(".cursor/hooks.json"), cursor_before);
    assert_eq!(env.read(".windsurf/hooks.json"), windsurf_before);
    assert!(!env.exists(".cursor/mcp.json"));
}

#[test]
fn plugin_write_refuses_cursor_and_windsurf() {
    for (client, product) in [("cursor", "Cursor"), ("windsurf", "Windsurf")] {
        let env = Env::new();
        env.cmd()
            .args(["plugin", "write", "--client", client, "out"])
            .code(2)
            .stderr_has(&format!("coord writes no plugin for {product}"))
            .stderr_has(&format!("coord init --client {client}"));
        assert!(!env.exists("out"));
    }
}
