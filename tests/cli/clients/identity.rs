//! One client session is one agent (issue 25, contract §8 "One session, one agent"): the
//! hooks, the `coord mcp` server and the shell commands of one agent client session act as one
//! agent, whichever door took a lock; two sessions are two agents; a session's locks follow its
//! client process. A Python process stands in for the client: like the real ones, it runs hooks
//! through `sh -c`, shell-tool commands in a new session, and an MCP server, all as children.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{CLIENT_SESSION_VARS, Env, coord_bin};

const STAND_IN: &str = include_str!("identity_client.py");

/// Two Codex sessions started 12 s apart (UUID v7: the same first 8 digits).
const CODEX_A: &str = "01a20dbd-91c4-78d0-ada6-8244799b2282";
const CODEX_B: &str = "01a20dbd-c053-7b63-9944-21d2369b8293";
const CLAUDE_SID: &str = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";

/// A stand-in agent client, driven one step at a time.
struct StandIn {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    _script: tempfile::NamedTempFile,
}

impl StandIn {
    /// `None` (the test skips) when there is no `python3`.
    fn start(env: &Env, client: &str, session: &str, vars: &[(&str, &str)]) -> Option<StandIn> {
        if Command::new("python3").arg("--version").output().is_err() {
            eprintln!("SKIPPED: no python3 to stand in for an agent client");
            return None;
        }
        let mut script = tempfile::NamedTempFile::new().unwrap();
        script.write_all(STAND_IN.as_bytes()).unwrap();
        let mut command = Command::new("python3");
        command
            .arg(script.path())
            .args([client, session])
            .current_dir(env.root())
            .env("COORD_BIN", coord_bin())
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("COORD_") {
                command.env_remove(k);
            }
        }
        for var in CLIENT_SESSION_VARS {
            command.env_remove(var);
        }
        for (k, v) in vars {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        Some(StandIn {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            _script: script,
        })
    }

    #[track_caller]
    fn step(&mut self, step: Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{step}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?} for {step}"))
    }

    /// A hook call; the payload gets the session id, cwd and event.
    #[track_caller]
    fn hook(&mut self, event: &str, payload: Value) -> Value {
        let r = self.step(json!({"hook": event, "payload": payload}));
        assert_eq!(r["code"], 0, "{r}");
        r
    }

    /// A shell-tool command (`$COORD_BIN` is coord).
    #[track_caller]
    fn sh(&mut self, cmd: &str) -> Value {
        self.step(json!({"sh": cmd}))
    }

    #[track_caller]
    fn whoami(&mut self) -> Value {
        let r = self.sh(r#""$COORD_BIN" whoami --json"#);
        assert_eq!(r["code"], 0, "{r}");
        serde_json::from_str(r["stdout"].as_str().unwrap()).unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`: no chance to clean up.
    fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn denied(out: &Value) -> bool {
    out["stdout"].as_str().unwrap_or("").contains("\"deny\"")
}

fn edit(file: &str, env: &Env) -> Value {
    json!({"tool_name": "Edit", "tool_input": {"file_path": env.path(file)}})
}

fn codex_patch(file: &str) -> Value {
    json!({"tool_name": "apply_patch", "tool_input": {"command": format!("*** Begin Patch\n*** Add File: {file}\n+x\n*** End Patch\n")}})
}

fn lock_state(env: &Env, file: &str) -> String {
    let st: Value = env.cmd().args(["status", "--json"]).ok().json();
    st["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["file"] == file)
        .map(|l| l["state"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "none".into())
}

fn git(env: &Env, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(env.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Hooks, a shell command, the MCP server and `git commit` through the guard are one agent; the
/// session's MCP lock does not deny its own edit, nor its own lock its own commit.
#[test]
fn hook_shell_mcp_and_git_commit_act_as_the_sessions_agent() {
    let env = Env::new();
    git(&env, &["init", "-q", "."]);
    git(&env, &["config", "user.email", "t@example.com"]);
    git(&env, &["config", "user.name", "t"]);
    env.cmd().args(["guard", "install"]).ok();
    env.write("a.md", "a\n");
    env.write("b.md", "b\n");
    // Gemini-like: no session variable in the shell or the MCP server; the tree says it all.
    let Some(mut c) = StandIn::start(&env, "claude", CLAUDE_SID, &[]) else {
        return;
    };
    let me = "claude-7684f1ed";
    c.hook("SessionStart", json!({"source": "startup"}));
    let who = c.whoami();
    assert_eq!(who["agent"], me, "{who}");
    assert_eq!(who["source"], "session");
    assert_eq!(who["client"], "claude");
    assert_eq!(who["session_id"], CLAUDE_SID);
    assert_eq!(who["via"], "process tree");
    assert_eq!(who["client_process"]["pid"], c.pid());

    // The shell tool's `coord lock`: no agent given, the session's agent; it follows the client.
    let r = c.sh(r#""$COORD_BIN" lock a.md"#);
    assert_eq!(r["code"], 0, "{r}");
    let record = env.read(&format!("a.md.lock.{me}"));
    assert!(record.contains(&format!("pid: {}\n", c.pid())), "{record}");
    assert!(record.contains("client: claude\n"), "{record}");

    // The MCP server the client started is the same agent; its lock does not deny the edit.
    let init = c.step(json!({"mcp": "start"}));
    assert!(
        init["instructions"].as_str().unwrap().contains(me),
        "{init}"
    );
    let locked = c.step(json!({"mcp": "call", "tool": "lock", "args": {"files": ["b.md"]}}));
    assert_eq!(locked["result"]["isError"], false, "{locked}");
    assert!(env.exists(&format!("b.md.lock.{me}")));
    let pre = c.hook("PreToolUse", edit("b.md", &env));
    assert!(!denied(&pre), "its own MCP lock denied the edit: {pre}");

    // The shell's write of a file its hook locked: its own lock, from its own session (no
    // "held from another session" warning: the doors run in different POSIX sessions).
    let r = c.sh(r#"echo new | "$COORD_BIN" write b.md && "$COORD_BIN" run b.md -- true"#);
    assert_eq!(r["code"], 0, "{r}");
    assert!(!r["stderr"].as_str().unwrap().contains("warning"), "{r}");
    assert_eq!(env.read("b.md"), "new\n");

    // Its own locks do not block its commit (the guard runs below the client too).
    let r = c.sh("git add a.md b.md && git commit -q -m one");
    assert_eq!(r["code"], 0, "{r}");
    // Another agent's lock still does, and the hint does not teach to bypass the guard.
    env.write("c.md", "c\n");
    env.agent("gemini").args(["lock", "c.md"]).ok();
    let r = c.sh("git add c.md && git commit -q -m two");
    assert_ne!(r["code"], 0, "{r}");
    let said = r["stderr"].as_str().unwrap();
    assert!(said.contains("gemini"), "{said}");
    assert!(!said.contains("COORD_GUARD=warn"), "{said}");

    // Only one agent was ever here besides gemini.
    let st: Value = env.cmd().args(["status", "--json"]).ok().json();
    let mut agents: Vec<String> = st["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap().to_string())
        .collect();
    agents.sort();
    assert_eq!(agents, ["claude-7684f1ed", "gemini"], "{st}");
    let stop = c.step(json!({"mcp": "stop"}));
    assert_eq!(stop["code"], 0, "{stop}");
}

/// Two concurrent Codex sessions started in the same minute are two agents, and exclude each
/// other; each one's hook and shell agree.
#[test]
fn two_sessions_of_one_minute_are_two_agents_that_exclude_each_other() {
    let env = Env::new();
    let Some(mut a) = StandIn::start(&env, "codex", CODEX_A, &[("CODEX_SESSION_ID", CODEX_A)])
    else {
        return;
    };
    let Some(mut b) = StandIn::start(&env, "codex", CODEX_B, &[("CODEX_SESSION_ID", CODEX_B)])
    else {
        return;
    };
    a.hook("SessionStart", json!({"source": "startup"}));
    b.hook("SessionStart", json!({"source": "startup"}));
    let (wa, wb) = (a.whoami(), b.whoami());
    assert_eq!(wa["agent"], "codex-799b2282", "{wa}");
    assert_eq!(wb["agent"], "codex-369b8293", "{wb}");

    let got = a.hook("PreToolUse", codex_patch("target.txt"));
    assert!(!denied(&got), "{got}");
    let refused = b.hook("PreToolUse", codex_patch("target.txt"));
    assert!(denied(&refused), "{refused}");
    assert!(
        refused["stdout"]
            .as_str()
            .unwrap()
            .contains("codex-799b2282"),
        "{refused}"
    );
    let r = b.sh(r#""$COORD_BIN" lock target.txt --no-wait"#);
    assert_eq!(r["code"], 3, "{r}");
    // b's Stop does not release a's lock.
    b.hook("Stop", json!({"stop_hook_active": false}));
    assert!(env.exists("target.txt.lock.codex-799b2282"));
}

/// `kill -9` of the client: its locks are STALE at once, and a waiter gets them.
#[test]
fn a_killed_clients_locks_are_stale_at_once_and_a_waiter_gets_them() {
    let env = Env::new();
    env.write("a.md", "a\n");
    let Some(mut c) = StandIn::start(&env, "claude", CLAUDE_SID, &[]) else {
        return;
    };
    c.hook("SessionStart", json!({"source": "startup"}));
    assert!(!denied(&c.hook("PreToolUse", edit("a.md", &env))));
    assert_eq!(lock_state(&env, "a.md"), "LIVE");
    let waiter = env
        .agent("gemini")
        .args(["lock", "a.md", "--wait", "2m"])
        .spawn();
    let until = Instant::now() + Duration::from_secs(30);
    while !(env.exists(".gemini_presence")
        && env
            .read(".gemini_presence")
            .contains("lock_status: WAITING"))
    {
        assert!(Instant::now() < until, "the waiter never waited");
        std::thread::sleep(Duration::from_millis(20));
    }
    c.kill9();
    // STALE at once (or already taken over by the waiter: then it is gone).
    let st: Value = env.cmd().args(["status", "--json"]).ok().json();
    let claudes: Vec<&Value> = st["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["agent"] == "claude-7684f1ed")
        .collect();
    assert!(claudes.iter().all(|l| l["state"] == "STALE"), "{st}");
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("took over the stale lock"), "{said}");
    assert!(env.exists("a.md.lock.gemini"));
}

/// A tool call longer than the TTL (the lock and the heartbeat aged past it): the lock stays
/// LIVE while the client lives.
#[test]
fn a_sessions_lock_stays_live_past_its_ttl_while_the_client_lives() {
    let env = Env::new();
    env.write("a.md", "a\n");
    let Some(mut c) = StandIn::start(&env, "claude", CLAUDE_SID, &[]) else {
        return;
    };
    c.hook("SessionStart", json!({"source": "startup"}));
    assert!(!denied(&c.hook("PreToolUse", edit("a.md", &env))));
    let old = (chrono::Local::now() - chrono::Duration::minutes(20))
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string();
    let age = |rel: &str, key: &str| {
        let text = env.read(rel);
        let aged: String = text
            .lines()
            .map(|l| match l.split_once(": ") {
                Some((k, _)) if k == key => format!("{k}: {old}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        env.write(rel, aged);
    };
    age("a.md.lock.claude-7684f1ed", "locked_at");
    age(".claude-7684f1ed_presence", "heartbeat");
    let st: Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st["agents"][0]["status"], "INACTIVE", "{st}");
    assert_eq!(lock_state(&env, "a.md"), "LIVE");
    env.agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .code(3)
        .stderr_has("claude-7684f1ed");
    // The session ends: its lock is released, and its presence says so.
    c.hook("SessionEnd", json!({"reason": "other"}));
    assert!(!env.exists("a.md.lock.claude-7684f1ed"));
    env.agent("gemini").args(["lock", "a.md", "--no-wait"]).ok();
}

/// A hook wired under a wrapper that runs it as a child (`timeout 30 coord hook claude`): its
/// lock follows the client, not the wrapper, which ends with the hook (the lock was STALE the
/// moment it did, and another agent took it over while the client edited).
#[test]
fn a_hook_run_under_a_wrapper_locks_for_the_client_not_the_wrapper() {
    if Command::new("timeout").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no timeout(1) to wrap the hook in");
        return;
    }
    let env = Env::new();
    env.write("a.md", "a\n");
    let Some(mut c) = StandIn::start(&env, "claude", CLAUDE_SID, &[]) else {
        return;
    };
    let mut payload = json!({"hook": "PreToolUse", "payload": edit("a.md", &env)});
    payload["wrap"] = json!(["timeout", "30"]);
    let r = c.step(payload);
    assert_eq!(r["code"], 0, "{r}");
    assert!(!denied(&r), "{r}");
    assert_eq!(lock_state(&env, "a.md"), "LIVE");
    env.agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .code(3)
        .stderr_has("claude-7684f1ed");
    let lock = env.read("a.md.lock.claude-7684f1ed");
    assert!(lock.contains(&format!("pid: {}\n", c.pid())), "{lock}");
}

/// `coord whoami` in each mode: flag, env, a session from the process tree, a session from the
/// client's variable alone, none.
#[test]
fn whoami_says_who_and_how_it_knows() {
    let env = Env::new();
    let who = |cmd: crate::support::Cmd| -> Value { cmd.args(["whoami", "--json"]).ok().json() };
    let w = who(env.cmd().args(["-a", "Bob"]));
    assert_eq!(
        (w["agent"].clone(), w["source"].clone()),
        (json!("bob"), json!("flag"))
    );
    let w = who(env.agent("bob"));
    assert_eq!(
        (w["agent"].clone(), w["source"].clone()),
        (json!("bob"), json!("env"))
    );
    let w = who(env.cmd());
    assert_eq!(
        (w["agent"].clone(), w["source"].clone()),
        (Value::Null, json!("none"))
    );
    env.cmd().args(["whoami"]).ok().stdout_has("no agent");
    env.cmd().args(["lock", "a.md"]).code(2);
    // Copilot's shell: the variable, no hook has registered the client.
    let w = who(env.cmd().env(
        "COPILOT_AGENT_SESSION_ID",
        "42bf1b09-11aa-41ef-9002-df066a44ede3",
    ));
    assert_eq!(w["agent"], "copilot-42bf1b09", "{w}");
    assert_eq!(w["source"], "session");
    assert_eq!(w["client"], "copilot");
    assert_eq!(w["via"], "env COPILOT_AGENT_SESSION_ID");
    // -a wins over a session.
    let w = who(env
        .cmd()
        .args(["-a", "bob"])
        .env("CLAUDE_CODE_SESSION_ID", CLAUDE_SID));
    assert_eq!(w["agent"], "bob");
    // The tree wins over an inherited variable of another client (a client started in
    // another's shell).
    let Some(mut c) = StandIn::start(
        &env,
        "gemini",
        "2b4d13f8-7a79-41b2-a8fa-44ac6a0e893f",
        &[("CLAUDE_CODE_SESSION_ID", CLAUDE_SID)],
    ) else {
        return;
    };
    c.hook("SessionStart", json!({"source": "startup"}));
    let w = c.whoami();
    assert_eq!(w["agent"], "gemini-2b4d13f8", "{w}");
    assert_eq!(w["via"], "process tree");
}

/// A client's health check starts `coord mcp`, lists its tools and stops it: no agent,
/// presence or stamp-card row is left behind.
#[test]
fn an_mcp_health_check_leaves_no_agent_behind() {
    let env = Env::new();
    let Some(mut c) = StandIn::start(
        &env,
        "claude",
        CLAUDE_SID,
        &[("CLAUDE_CODE_SESSION_ID", CLAUDE_SID)],
    ) else {
        return;
    };
    let init = c.step(json!({"mcp": "start"}));
    assert!(
        init["instructions"]
            .as_str()
            .unwrap()
            .contains("claude-7684f1ed"),
        "{init}"
    );
    let listed = c.step(json!({"mcp": "list"}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let stop = c.step(json!({"mcp": "stop"}));
    assert_eq!(stop["code"], 0, "{stop}");
    assert_eq!(env.files_ending("_presence"), Vec::<String>::new());
    let rows: Value = env.cmd().args(["partners", "--json"]).ok().json();
    assert_eq!(rows["partners"], json!([]), "{rows}");
}

/// A hook run by hand from a shell (`echo … | coord hook claude`) does not make the shell a
/// client session: later commands there still need an agent.
#[test]
fn a_hook_run_by_hand_from_a_shell_registers_no_session() {
    let env = Env::new();
    let payload = format!(
        r#"{{"session_id":"{CLAUDE_SID}","cwd":"{}","hook_event_name":"SessionStart"}}"#,
        env.root().display()
    );
    let script = format!(
        r#"printf '%s' '{payload}' | "$COORD_BIN" hook claude >/dev/null; "$COORD_BIN" whoami --json"#
    );
    // A shell reading its commands (as at a terminal), not a client's `sh -c`.
    let mut shell = Command::new("bash")
        .arg("-s")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .current_dir(env.root())
        .env("COORD_BIN", coord_bin())
        .env("COORD_DIR", env.root())
        .env_remove("COORD_AGENT")
        .envs(CLIENT_SESSION_VARS.map(|v| (v, "")))
        .spawn()
        .unwrap();
    writeln!(shell.stdin.take().unwrap(), "{script}").unwrap();
    let out = shell.wait_with_output().unwrap();
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["source"], "none", "{w}");
    assert!(
        env.exists(".claude-7684f1ed_presence"),
        "the hook itself ran"
    );
}

/// A payload without a session id: the client process stands for the session, past the `sh -c`
/// each hook call runs in (one agent for every call, not one per shell).
#[test]
fn without_a_session_id_the_client_process_is_the_session() {
    let env = Env::new();
    let Some(mut c) = StandIn::start(&env, "copilot", "unused", &[]) else {
        return;
    };
    for _ in 0..2 {
        c.hook(
            "postToolUse",
            json!({"session_id": null, "toolName": "view", "toolArgs": {}}),
        );
    }
    assert_eq!(
        env.files_ending("_presence"),
        [format!(".copilot-p{}_presence", c.pid())]
    );
}

/// The same through the npm launcher (`npm/coord-cli/launcher.js`) where it stays between the
/// client and coord (an install without scripts, on a Node that cannot become coord): the client
/// process is still the session, not the launcher of each call. Before, every hook call was an
/// agent of its own (`copilot-p<launcher>`), denied the file its previous call locked. Skips
/// without node.
#[test]
fn through_the_npm_launcher_the_client_process_is_still_the_session() {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no node to run the npm launcher");
        return;
    }
    let env = Env::new();
    let launcher =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("npm/coord-cli/launcher.js");
    let dir = tempfile::tempdir().unwrap();
    let coord = dir.path().join("coord");
    std::fs::write(
        &coord,
        format!("#!/bin/sh\nexec node '{}' \"$@\"\n", launcher.display()),
    )
    .unwrap();
    std::fs::set_permissions(&coord, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let coord = coord.to_string_lossy().into_owned();
    let vars = [("COORD_BIN", coord.as_str()), ("COORD_BINARY", coord_bin())];
    let Some(mut c) = StandIn::start(&env, "copilot", "unused", &vars) else {
        return;
    };
    for _ in 0..2 {
        let r = c.hook(
            "preToolUse",
            json!({
                "session_id": null,
                "toolName": "edit",
                "toolArgs": json!({"path": env.path("a.md")}).to_string(),
            }),
        );
        assert!(!r["stdout"].as_str().unwrap().contains("deny"), "{r}");
    }
    let agent = format!("copilot-p{}", c.pid());
    assert_eq!(
        env.files_ending("_presence"),
        [format!(".{agent}_presence")]
    );
    assert_eq!(
        env.files_ending(&format!(".lock.{agent}")),
        [format!("a.md.lock.{agent}")]
    );
}
