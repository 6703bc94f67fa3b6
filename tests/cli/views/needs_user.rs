//! An agent that waits for its user: each client's waiting events, shown first by `status` and
//! `watch`, and `coord watch --notify` ringing.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::{Env, Output};
use crate::views::history::{events_of, log_json};

/// `coord hook CLIENT` fed `payload`.
fn hook(env: &Env, client: &str, payload: serde_json::Value) -> Output {
    env.cmd()
        .args(["hook", client])
        .stdin(payload.to_string())
        .ok()
}

/// What `status --json` says `agent` waits for its user about (`null`: nothing).
fn needs(env: &Env, agent: &str) -> serde_json::Value {
    env.status_of(agent)["needs_user"].clone()
}

/// The hook payloads of each client that mean "waiting for the user" (Claude Code's
/// `Notification` as its real client sends it, and the other clients' equivalents) show the
/// agent as needing its user, first in `status`, with since when and what it asks, until it
/// acts again.
#[test]
fn needs_user_from_each_clients_waiting_events() {
    let env = Env::new();
    env.agent("aaa").args(["presence", ".", "T"]).ok();
    let cwd = env.root().display().to_string();
    let hook = |client: &str, payload: serde_json::Value| {
        hook(&env, client, payload);
    };
    let status = || -> serde_json::Value {
        serde_json::from_str(&env.cmd().args(["status", "--json"]).ok().stdout).unwrap()
    };
    let needs = |agent: &str| needs(&env, agent);
    let sid = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";
    let claude = "claude-7684f1ed";
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    assert!(needs(claude).is_null());
    // The payload Claude Code 2.1 writes for a permission prompt.
    hook(
        "claude",
        serde_json::json!({
            "session_id": sid,
            "transcript_path": "/home/dev/.claude/projects/p/x.jsonl",
            "cwd": cwd,
            "hook_event_name": "Notification",
            "message": "Claude needs your permission to use Bash",
            "notification_type": "permission_prompt"
        }),
    );
    let n = needs(claude);
    assert_eq!(n["what"], "Claude needs your permission to use Bash");
    assert!(n["since"].as_str().unwrap().starts_with("20"), "{n}");
    let st = status();
    assert_eq!(st["agents"][0]["agent"], claude, "not first: {st:#}");
    let human = env.cmd().arg("status").ok();
    let needs_at = human
        .stdout
        .find("Needs you")
        .expect("no Needs you section");
    assert!(needs_at < human.stdout.find("Agents").unwrap());
    human.stdout_has("Claude needs your permission to use Bash");
    // The user answered: the tool runs.
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    assert!(needs(claude).is_null());
    // The end of its turn.
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false}),
    );
    assert!(needs(claude)["what"].as_str().unwrap().contains("turn"));
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}),
    );
    assert!(needs(claude).is_null());

    // The other clients' sessions start first, as they do.
    for (client, sid) in [
        ("gemini", "ab12cd34ef"),
        ("codex", "019a0000-0000-7000-8000-00000000beef"),
    ] {
        hook(
            client,
            serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart"}),
        );
    }
    env.cmd()
        .args(["-a", "copi", "hook", "copilot", "--event", "sessionStart"])
        .stdin(serde_json::json!({"cwd": cwd}).to_string())
        .ok();
    // Gemini CLI's Notification (a tool permission).
    hook(
        "gemini",
        serde_json::json!({"session_id": "ab12cd34ef", "cwd": cwd, "hook_event_name": "Notification",
            "notification_type": "ToolPermission", "message": "Allow run_shell_command?", "details": {}}),
    );
    assert_eq!(needs("gemini-ab12cd34")["what"], "Allow run_shell_command?");
    // Codex CLI's PermissionRequest.
    hook(
        "codex",
        serde_json::json!({"session_id": "019a0000-0000-7000-8000-00000000beef", "cwd": cwd,
            "hook_event_name": "PermissionRequest", "tool_name": "shell", "tool_input": {}}),
    );
    let codex = status()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"].as_str().unwrap().starts_with("codex-"))
        .unwrap()["needs_user"]
        .clone();
    assert_eq!(codex["what"], "permission to use shell");
    // Copilot CLI's notification.
    env.cmd()
        .args(["-a", "copi", "hook", "copilot", "--event", "notification"])
        .stdin(serde_json::json!({"cwd": cwd, "message": "Approve edit?"}).to_string())
        .ok();
    assert_eq!(needs("copi")["what"], "Approve edit?");
    // And in the history.
    let log = log_json(&env, &[]);
    assert!(events_of(&log, "needs_user").len() >= 4);
    assert!(!events_of(&log, "user_answered").is_empty());
    let first = events_of(&log, "needs_user")[0];
    assert_eq!(first["client"], "claude");
    assert_eq!(first["session"], sid);
}

/// A stop held back because messages wait unread is not the end of the turn: the agent goes on
/// to read them, so it is not shown as waiting for its user; the stop after that is.
#[test]
fn a_stop_held_back_for_unread_messages_is_not_waiting_for_the_user() {
    let env = Env::new();
    let cwd = env.root().display().to_string();
    let sid = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";
    let claude = "claude-7684f1ed";
    let hook = |payload: serde_json::Value| hook(&env, "claude", payload);
    let needs = || needs(&env, claude);
    hook(
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    env.agent("bob")
        .args(["msg", "send", claude, "the schema changed, pull first"])
        .ok();
    let out = hook(
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false}),
    );
    assert!(
        out.stdout.contains("\"block\""),
        "the stop is held back: {}",
        out.stdout
    );
    assert!(
        needs().is_null(),
        "not waiting for the user while it reads its messages"
    );
    hook(
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": true}),
    );
    assert!(needs()["what"].as_str().unwrap().contains("turn"));
}

/// Claude Code's notifications said after the fact: a finished sign-in changes nothing, and an
/// answered question (an MCP elicitation) means the agent no longer waits.
#[test]
fn notifications_after_the_fact_do_not_make_an_agent_wait() {
    let env = Env::new();
    let cwd = env.root().display().to_string();
    let sid = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";
    let claude = "claude-7684f1ed";
    let hook = |payload: serde_json::Value| {
        hook(&env, "claude", payload);
    };
    let needs = || needs(&env, claude);
    let notify = |kind: &str, message: &str| {
        hook(
            serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Notification",
            "notification_type": kind, "message": message}),
        );
    };
    hook(
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    notify("auth_success", "Signed in");
    assert!(needs().is_null(), "a sign-in is no question");
    notify("elicitation_dialog", "The server asks for a token");
    assert_eq!(needs()["what"], "The server asks for a token");
    notify("auth_success", "Signed in");
    assert_eq!(
        needs()["what"],
        "The server asks for a token",
        "still waiting"
    );
    notify("elicitation_complete", "Answered");
    assert!(needs().is_null(), "answered: no longer waiting");
}

/// `coord watch --notify` rings the terminal (bell and OSC 9) when an agent starts waiting
/// for its user.
#[test]
fn watch_notify_rings_when_an_agent_waits_for_its_user() {
    let env = Env::new();
    let mut child = env.cmd().args(["watch", "--json", "--notify"]).spawn();
    let stderr = child.stderr.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("started"), "{first}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 256];
        let mut r = stderr;
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    env.cmd()
        .args(["-a", "who", "hook", "claude"])
        .stdin(
            serde_json::json!({"session_id": "s1", "cwd": env.root(), "hook_event_name": "Notification",
                "message": "Claude is waiting for your input", "notification_type": "idle_prompt"})
            .to_string(),
        )
        .ok();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&got).contains("\x1b]9;") && Instant::now() < deadline {
        if let Ok(b) = rx.recv_timeout(Duration::from_millis(200)) {
            got.extend(b);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains('\x07'), "no bell: {text:?}");
    assert!(
        text.contains("\x1b]9;coord: who needs you: Claude is waiting for your input"),
        "{text:?}"
    );
}

/// #48: a client's session is shown with a label a human can map to a terminal: its work tree
/// and branch (where the repository has several) and its first prompt, one short line; what
/// it is working on is the files it holds, and its lock's note is that prompt, not the tool.
/// Waiting for its user, it is listed with the same label. The views fit 100 columns.
#[test]
fn a_session_is_labelled_with_its_tree_branch_and_first_prompt() {
    use crate::locks::worktrees::{coord, repo};
    let r = repo();
    let b = std::fs::canonicalize(&r.b).unwrap();
    let sid = "5e551011-55e2-4a19-be34-6aa5a64f4b50";
    let agent = "claude-5e551011";
    let hook = |payload: serde_json::Value| {
        r.env
            .cmd()
            .env_remove("COORD_DIR")
            .cwd(&b)
            .args(["hook", "claude"])
            .stdin(payload.to_string())
            .ok();
    };
    let cwd = b.display().to_string();
    let event =
        |name: &str| serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": name});
    hook(event("SessionStart"));
    let mut prompt = event("UserPromptSubmit");
    prompt["prompt"] = "Fix the login bug\nin the session handler, and add a test for it".into();
    hook(prompt);
    let mut later = event("UserPromptSubmit");
    later["prompt"] = "now something else".into();
    hook(later);
    let mut write = event("PreToolUse");
    write["tool_name"] = "Write".into();
    write["tool_input"] = serde_json::json!({"file_path": b.join("src/x.rs").display().to_string(), "content": "y\n"});
    hook(write);
    let status = |columns: Option<&str>| {
        let mut cmd = coord(&r, &r.main, "viewer").env_remove("COORD_AGENT");
        if let Some(c) = columns {
            cmd = cmd.env("COLUMNS", c);
        }
        cmd.arg("status").ok()
    };
    let st: serde_json::Value = coord(&r, &r.main, "viewer")
        .args(["status", "--json"])
        .ok()
        .json();
    let me = st["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == agent)
        .unwrap_or_else(|| panic!("no {agent}: {st:#}"));
    let first = "Fix the login bug in the session handle…";
    assert_eq!(me["prompt"], first, "{me:#}");
    assert_eq!(me["client"], "claude");
    assert_eq!(me["holds"], serde_json::json!(["src/x.rs"]));
    assert_eq!(me["label"], format!("b · feature · \"{first}\""));
    let out = status(None);
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("  {agent} ")))
        .unwrap_or_else(|| panic!("no row:\n{}", out.stdout));
    assert!(
        row.contains(&format!("b · feature · \"{first}\"  src/x.rs")),
        "{row}"
    );
    let lock = out
        .stdout
        .lines()
        .find(|l| l.starts_with("  src/x.rs "))
        .unwrap();
    assert!(lock.ends_with(&format!("\"{first}\"")), "{lock}");
    out.stdout_lacks("Write in Claude Code");

    let mut stop = event("Stop");
    stop["stop_hook_active"] = false.into();
    hook(stop);
    let out = status(Some("100"));
    let needs = out
        .stdout
        .lines()
        .skip_while(|l| *l != "Needs you")
        .nth(2)
        .unwrap_or_else(|| panic!("no Needs you:\n{}", out.stdout));
    assert!(
        needs.starts_with(&format!("  {agent}  b · feature")),
        "{needs}"
    );
    for line in out.stdout.lines() {
        assert!(line.chars().count() <= 100, "wider than 100: {line:?}");
    }
}

/// A stand-in for an agent client's process: `bin/NAME` in a folder of its own, a script that
/// runs `coord hook HOOK_ARGS` as its child, as a client runs its hooks, so that coord finds it
/// as the hook's client process with the command line it was started with.
pub(crate) struct FakeClient {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl FakeClient {
    pub(crate) fn new(name: &str) -> FakeClient {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        // Not `exec`: the script stays the hook's parent, as the client does.
        std::fs::write(
            &path,
            "#!/bin/sh\n\"$COORD_BIN\" hook $HOOK_ARGS\nstatus=$?\nexit $status\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeClient { _dir: dir, path }
    }

    /// The client started with `args` runs `coord hook HOOK_ARGS` on `payload`, in `env`.
    #[track_caller]
    pub(crate) fn hook(&self, env: &Env, args: &[&str], hook_args: &str, payload: &str) {
        let mut cmd = std::process::Command::new(&self.path);
        cmd.args(args)
            .current_dir(env.root())
            .env("COORD_BIN", crate::support::coord_bin())
            .env("COORD_DIR", env.root())
            .env("HOOK_ARGS", hook_args)
            .env_remove("COORD_AGENT")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for var in crate::support::CLIENT_SESSION_VARS {
            cmd.env_remove(var);
        }
        // The script was just written: a process another test forks meanwhile may still hold
        // its open descriptor for a moment (until that child's exec), and exec then fails with
        // ETXTBSY. Try again shortly, as a shell would have to.
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                spawned => break spawned.unwrap(),
            }
        };
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(payload.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("warning"), "{stderr}");
    }
}

/// #48: a client run with nobody at it (`claude -p`/`--print`, `codex exec`, `gemini -p` or
/// with its input not a terminal, `copilot -p`) exits at the end of its turn: nobody is asked,
/// so the agent is never shown as needing its user, and no `needs_user` is written. The same
/// client at a terminal still is.
#[test]
fn a_client_run_with_nobody_at_it_never_needs_its_user_at_the_end_of_its_turn() {
    let env = Env::new();
    let cwd = env.root().display().to_string();
    let payload = |sid: &str, event: &str| {
        serde_json::json!({"session_id": sid, "sessionId": sid, "cwd": cwd, "hook_event_name": event,
            "stop_hook_active": false})
        .to_string()
    };
    let runs: [(&str, &[&str], &str, &str, &str); 6] = [
        (
            "claude",
            &["-p", "write out.txt"],
            "SessionStart",
            "Stop",
            "aaaa0001",
        ),
        (
            "claude",
            &["--print", "--model", "x"],
            "SessionStart",
            "Stop",
            "aaaa0002",
        ),
        (
            "codex",
            &["exec", "--full-auto", "do it"],
            "SessionStart",
            "Stop",
            "aaaa0003",
        ),
        (
            "gemini",
            &["-p", "write target.txt"],
            "SessionStart",
            "AfterAgent",
            "aaaa0004",
        ),
        // Its input is the payload's pipe, not a terminal: Gemini CLI runs one prompt.
        ("gemini", &[], "SessionStart", "AfterAgent", "aaaa0005"),
        (
            "copilot",
            &["-p", "fix it", "--allow-all-tools"],
            "sessionStart",
            "agentStop",
            "aaaa0006",
        ),
    ];
    for (name, args, start, stop, sid) in runs {
        let client = FakeClient::new(name);
        let agent = format!("{name}-{sid}");
        client.hook(&env, args, name, &payload(sid, start));
        client.hook(&env, args, name, &payload(sid, stop));
        assert!(
            needs(&env, &agent).is_null(),
            "{name} {args:?}: {}",
            needs(&env, &agent)
        );
    }
    let log = log_json(&env, &[]);
    assert!(events_of(&log, "needs_user").is_empty(), "{log:#?}");
    assert!(events_of(&log, "user_answered").is_empty(), "{log:#?}");
    // At a terminal (no -p): the end of its turn waits for its user.
    let claude = FakeClient::new("claude");
    claude.hook(
        &env,
        &["--model", "x"],
        "claude",
        &payload("bbbb0001", "SessionStart"),
    );
    claude.hook(
        &env,
        &["--model", "x"],
        "claude",
        &payload("bbbb0001", "Stop"),
    );
    assert!(
        needs(&env, "claude-bbbb0001")["what"]
            .as_str()
            .unwrap()
            .contains("turn")
    );
}

/// #48: an agent that clocked out, or acted again through any door (its own `coord lock` from
/// its shell, not only its client's hooks), is no longer listed as needing you, in `status` and
/// so in `watch` and `coord ui`; the act says so, and no `user_answered` is written beside it.
#[test]
fn an_agent_that_clocked_out_or_acted_again_no_longer_needs_you() {
    let env = Env::new();
    let cwd = env.root().display().to_string();
    let sid = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";
    let agent = "claude-7684f1ed";
    let hook = |event: &str| {
        hook(
            &env,
            "claude",
            serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": event, "stop_hook_active": false}),
        );
    };
    hook("SessionStart");
    hook("Stop");
    assert!(needs(&env, agent).is_object());
    // It acts through the command line (its shell tool), not through a hook.
    env.agent(agent).args(["lock", "f.txt"]).ok();
    assert!(needs(&env, agent).is_null(), "{}", needs(&env, agent));
    env.agent(agent).args(["unlock", "f.txt"]).ok();
    hook("Stop");
    assert!(needs(&env, agent).is_object());
    env.agent(agent).arg("shutdown").ok();
    assert!(needs(&env, agent).is_null());
    assert_eq!(env.status_of(agent)["status"], "FINISHED");
    // A wait left behind by a writer of an older coord: a finished agent waits for no one.
    env.write(
        &format!(".coord/needs-user/{agent}"),
        r#"{"since": "2026-01-28T10:00:00.000+00:00", "what": "its turn is over"}"#,
    );
    assert!(needs(&env, agent).is_null());
    env.cmd().arg("status").ok().stdout_lacks("Needs you");
    let log = log_json(&env, &[]);
    assert_eq!(events_of(&log, "needs_user").len(), 2, "{log:#?}");
    assert!(events_of(&log, "user_answered").is_empty(), "{log:#?}");
}
