//! `coord hook CLIENT`: real payloads of each client against a real folder, real processes
//! racing for one file, the CLI and hooks denying each other.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;

use crate::support::{Env, Output};

pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A fixture with its project and home paths moved into `env`'s root.
pub(crate) fn fixture(env: &Env, rel: &str) -> String {
    let text = std::fs::read_to_string(fixtures().join(rel)).unwrap();
    let root = env.root().to_str().unwrap();
    text.replace("/home/dev/proj", root)
        .replace("/home/dev", "/nonexistent-home")
}

/// `coord hook CLIENT` fed `payload`, with the workspace taken from the payload's `cwd`.
pub(crate) fn hook(env: &Env, client: &str, payload: &str, extra: &[&str]) -> Output {
    env.cmd()
        .env_remove("COORD_DIR")
        .cwd(crate::support::outside())
        .args(["hook", client])
        .args(extra)
        .stdin(payload)
        .ok()
}

pub(crate) fn json(out: &Output) -> Value {
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}\n{}", out.stdout, out.stderr))
}

/// The deny reason, whatever the client's format; `None` when the call was allowed.
pub(crate) fn denied(client: &str, out: &Output) -> Option<String> {
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

pub(crate) const CLAUDE: &str = "claude-code-2.1.328";

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
    assert!(reason.contains("when its holder unlocks it;"), "{reason}");
    assert!(!reason.contains("turn ends"), "{reason}");
}

/// A lock that follows a process (`coord run`) goes when its holder unlocks it or the process
/// ends, and the deny says so (#9: it said only "when its holder unlocks it").
#[test]
fn a_deny_for_a_lock_that_follows_a_process_says_it_goes_with_the_process() {
    let env = Env::new();
    let run = env
        .agent("alice")
        .args(["run", "out.txt", "--", "sh", "-c"])
        .arg("while [ ! -e stop ]; do sleep 0.05; done")
        .spawn();
    crate::support::eventually("alice holds out.txt", || env.exists("out.txt.lock.alice"));
    let second = fixture(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    let out = hook(&env, "claude", &second, &["--wait", "0"]);
    env.write("stop", "");
    assert_eq!(crate::support::finish(run).code, Some(0));
    let reason = denied("claude", &out).expect("denied while alice's run holds it");
    assert!(
        reason.contains("it is released when its holder unlocks it or its process ends"),
        "{reason}"
    );
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
    let text = session_start_context(&env);
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

/// An agent following seed 001 by hand (its presence file written by hand, its lock files
/// made by hand) is seen at a session's start without a walk of the tree: its lock in the
/// folder's top, and the one its presence's `current_file` names in a subfolder.
#[test]
fn session_start_names_the_locks_an_agent_made_by_hand() {
    let env = Env::new();
    let now = crate::rigs::local_stamp();
    env.write(
        ".carol_presence",
        format!(
            "Agent: carol\nstatus: ACTIVE\nstarted: {now}\nheartbeat: {now}\n\
             working_on: the spec\ncurrent_file: docs/spec/api.md\nlock_status: LOCKED\n"
        ),
    );
    env.write("docs/spec/api.md", "api\n");
    env.write(
        "docs/spec/api.md.lock.carol",
        crate::rigs::seed_lock("docs/spec/api.md", "carol", &now),
    );
    env.write("PROTOKOL.md", "log\n");
    env.write(
        "PROTOKOL.md.lock.carol",
        crate::rigs::seed_lock("PROTOKOL.md", "carol", &now),
    );
    // A presence pointing out of the tree, through `..` or a link, is not followed there.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.md.lock.dave"), "Agent: dave\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("docs/out")).unwrap();
    let depth = env.root().components().count() - 1;
    let up = format!("{}{}/x.md", "../".repeat(depth), outside.path().display());
    for (name, file) in [("dave", "docs/out/x.md"), ("erin", up.as_str())] {
        env.write(
            &format!(".{name}_presence"),
            format!("Agent: {name}\nstatus: ACTIVE\nheartbeat: {now}\ncurrent_file: {file}\n"),
        );
    }
    let text = session_start_context(&env);
    assert!(text.contains("carol (working on the spec)"), "{text}");
    assert!(text.contains("PROTOKOL.md (held by carol"), "{text}");
    assert!(text.contains("docs/spec/api.md (held by carol"), "{text}");
    assert!(!text.contains("x.md"), "{text}");
}

/// The context Claude Code's SessionStart hook (the recorded payload) gives the model.
fn session_start_context(env: &Env) -> String {
    start_context(
        env,
        "claude",
        &format!("{CLAUDE}/write_allow.SessionStart.json"),
    )
}

/// The context `client`'s hook gives for the SessionStart payload of `fixture` (in the
/// `hookSpecificOutput` of Claude Code and Gemini CLI).
pub(crate) fn start_context(env: &Env, client: &str, fixture_rel: &str) -> String {
    let out = hook(env, client, &fixture(env, fixture_rel), &[]);
    let ctx = json(&out);
    assert_eq!(ctx["hookSpecificOutput"]["hookEventName"], "SessionStart");
    ctx["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{ctx}"))
        .to_string()
}

/// The start context names the others: not the session itself, not its own locks, and not a
/// stale lock nobody holds any more.
#[test]
fn session_start_leaves_out_the_session_itself_and_stale_locks() {
    let env = Env::new();
    let me = "claude-7684f1ed";
    env.agent("gemini").args(["lock", "notes.md"]).ok();
    env.agent(me).args(["presence", "my own work"]).ok();
    env.agent(me).args(["lock", "mine.txt", "mine/"]).ok();
    env.agent("gemini").args(["lock", "docs/"]).ok();
    env.write(
        "old.txt.lock.carol",
        crate::rigs::seed_lock("old.txt", "carol", "2020-01-01T00:00:00"),
    );
    let text = session_start_context(&env);
    let active = text
        .lines()
        .flat_map(|l| l.split(". "))
        .find(|s| s.contains("Other agents active"))
        .unwrap_or_else(|| panic!("no line of other agents: {text}"));
    assert!(active.contains("gemini"), "{text}");
    assert!(
        !active.contains(me),
        "the session itself is not another agent: {text}"
    );
    assert!(text.contains("notes.md (held by gemini"), "{text}");
    assert!(
        !text.contains("mine.txt"),
        "its own lock is not another's: {text}"
    );
    assert!(text.contains("`docs/**` (claimed by gemini"), "{text}");
    assert!(
        !text.contains("mine/"),
        "its own claim is not another's: {text}"
    );
    assert!(
        !text.contains("old.txt"),
        "a stale lock holds nothing: {text}"
    );
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

/// One session, one row on the stamp card: a client that starts a session again while it runs
/// (Claude Code's `resume` and `compact`) rejoins its row instead of clocking in twice.
#[test]
fn a_session_started_again_by_its_live_client_keeps_one_row() {
    let env = Env::new();
    let start = fixture_json(&env, &format!("{CLAUDE}/write_allow.SessionStart.json"));
    let rows = |env: &Env| -> Vec<Value> {
        let status: Value = env.cmd().args(["status", "--json"]).ok().json();
        (status["partners"].as_array().unwrap().iter())
            .filter(|p| p["partner_name"] == "claude-7684f1ed")
            .cloned()
            .collect()
    };
    hook(&env, "claude", &start.to_string(), &[]);
    let first = rows(&env);
    assert_eq!(first.len(), 1, "{first:?}");
    for source in ["compact", "resume"] {
        let mut again = start.clone();
        again["source"] = source.into();
        let ctx = json(&hook(&env, "claude", &again.to_string(), &[]));
        assert!(ctx["hookSpecificOutput"]["additionalContext"].is_string());
        let now = rows(&env);
        assert_eq!(now.len(), 1, "after {source}: {now:?}");
        assert_eq!(now[0]["session_id"], first[0]["session_id"]);
    }
    hook(
        &env,
        "claude",
        &fixture(&env, &format!("{CLAUDE}/write_allow.SessionEnd.json")),
        &[],
    );
    assert!(rows(&env).is_empty());
    // A new session of the same client process after the end is a new row.
    hook(&env, "claude", &start.to_string(), &[]);
    let next = rows(&env);
    assert_eq!(next.len(), 1, "{next:?}");
    assert_ne!(next[0]["session_id"], first[0]["session_id"]);
}

/// The agents of `client` holding a lock on `file` (`file.lock.<client>-…`).
pub(crate) fn session_locks(env: &Env, client: &str, file: &str) -> Vec<String> {
    env.files_ending("")
        .into_iter()
        .filter(|f| f.starts_with(&format!("{file}.lock.{client}-")))
        .collect()
}

/// A fixture as JSON, with its paths moved into `env`.
pub(crate) fn fixture_json(env: &Env, rel: &str) -> Value {
    serde_json::from_str(&fixture(env, rel)).unwrap()
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

/// A client working in the filesystem's root (a service, a container's default folder): no
/// workspace is made at `/`, which every folder below would then join. An edit is judged in the
/// workspace of the file it edits (denied there when another agent holds it); an event that edits
/// nothing is allowed with a warning, nothing written.
#[test]
fn a_client_working_in_the_filesystem_root_makes_no_workspace_there() {
    if std::path::Path::new("/.coord").exists() {
        eprintln!("skipped: a /.coord/ is already there");
        return;
    }
    let names_in = |dir: &str| -> Vec<String> {
        (std::fs::read_dir(dir).unwrap().flatten())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let before = names_in("/");
    let env = Env::new();
    env.write("F", "f\n");
    env.agent("b").args(["lock", "F"]).ok();
    let event = |name: &str, tool: serde_json::Value| {
        let mut v =
            serde_json::json!({"session_id": "5e55a0e1", "cwd": "/", "hook_event_name": name});
        if let serde_json::Value::Object(t) = tool {
            v.as_object_mut().unwrap().extend(t);
        }
        v.to_string()
    };
    let start = hook(
        &env,
        "claude",
        &event("SessionStart", serde_json::json!({})),
        &[],
    );
    let write = event(
        "PreToolUse",
        serde_json::json!({"tool_name": "Write", "tool_input": {"file_path": env.path("F"), "content": "x"}}),
    );
    let out = hook(&env, "claude", &write, &["--wait", "0"]);
    // What the hooks left in `/` (removed again: this machine's root is not the test's).
    let made: Vec<String> = names_in("/")
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    for name in &made {
        let path = std::path::Path::new("/").join(name);
        let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
    }
    assert!(made.is_empty(), "made at /: {made:?}");
    assert!(start.stderr.contains("warning:"), "{}", start.stderr);
    let reason = denied("claude", &out).expect("the edit of b's file must be denied");
    assert!(reason.contains("locked by b"), "{reason}");
    assert_eq!(env.read("F"), "f\n");
}

/// An event whose `cwd` was removed (the client ran in a folder since deleted) inside a
/// workspace: an edit of a file another agent holds, named by its absolute path, is still
/// denied, the workspace found from the nearest folder above the one that is gone.
#[test]
fn an_event_whose_cwd_is_gone_inside_a_workspace_still_denies_a_held_file() {
    let env = Env::new();
    env.write("F", "f\n");
    env.agent("b").args(["lock", "F"]).ok();
    let payload = serde_json::json!({
        "session_id": "5e55a0e1",
        "cwd": env.path("gone/below"),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": env.path("F"), "content": "x"},
    })
    .to_string();
    let reason = denied("claude", &hook(&env, "claude", &payload, &["--wait", "0"]))
        .expect("the edit of b's file must be denied");
    assert!(reason.contains("locked by b"), "{reason}");
    assert_eq!(env.read("F"), "f\n");
    assert!(!env.exists("gone"));
}

/// The same from a hook process whose own current folder is that removed one (the client
/// runs its hooks where it runs, and `getcwd` fails there): still denied.
#[test]
fn a_hook_run_in_a_removed_folder_still_denies_a_held_file() {
    let env = Env::new();
    env.write("F", "f\n");
    env.agent("b").args(["lock", "F"]).ok();
    std::fs::create_dir(env.path("gone")).unwrap();
    let payload = serde_json::json!({
        "session_id": "5e55a0e1",
        "cwd": env.path("gone"),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": env.path("F"), "content": "x"},
    })
    .to_string();
    // `sh` goes into the folder, removes it and becomes the hook, stdin the payload.
    let mut sh = std::process::Command::new("sh");
    sh.args([
        "-c",
        r#"cd "$1" && rmdir "$1" && exec "$2" hook claude --wait 0"#,
        "sh",
    ])
    .arg(env.path("gone"))
    .arg(crate::support::coord_bin())
    .current_dir(env.root())
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("COORD_") {
            sh.env_remove(k);
        }
    }
    for var in crate::support::CLIENT_SESSION_VARS {
        sh.env_remove(var);
    }
    let mut child = sh.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.as_bytes()).unwrap();
    let done = child.wait_with_output().unwrap();
    let out = crate::support::Output {
        shown: "sh -c 'cd gone; rmdir gone; coord hook claude'".into(),
        code: done.status.code(),
        stdout: String::from_utf8_lossy(&done.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
    };
    let reason = denied("claude", &out).unwrap_or_else(|| panic!("allowed: {}", out.stderr));
    assert!(reason.contains("locked by b"), "{reason}");
    assert_eq!(env.read("F"), "f\n");
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
            .cwd(crate::support::outside())
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
            .cwd(crate::support::outside())
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

/// A message never changes once sent: an agent's session start reads a message for another
/// agent once, notes its id in `.coord/messages/read/AGENT/others.ids`, and does not read it again
/// (a busy workspace's old messages cost its turns nothing), while a new message for it, or for
/// all, is told at its next start. `msg list` and `status` use the note and write nothing.
#[test]
fn a_session_start_reads_a_message_for_another_agent_once() {
    let env = Env::new();
    let send = |from: &str, to: &str, text: &str| {
        let out = env.agent(from).args(["msg", "send", to, text]).ok();
        out.stdout.trim().to_string()
    };
    let theirs = send("gemini", "codex", "not for claude");
    let start = fixture(&env, &format!("{CLAUDE}/write_allow.SessionStart.json"));
    let context = |out: &Output| json(out)["hookSpecificOutput"]["additionalContext"].to_string();
    let first = context(&hook(&env, "claude", &start, &[]));
    assert!(!first.contains("not for claude"), "{first}");
    let noted = ".coord/messages/read/claude-7684f1ed/others.ids";
    assert_eq!(env.read(noted), format!("{theirs}\n"));

    // Spoiled after it was noted: never read again by claude, so never reported to it.
    env.write(&format!(".coord/messages/{theirs}.msg"), "not a message");
    let mine = send("gemini", "claude-7684f1ed", "for claude");
    let all = send("codex", "all", "for everyone");
    let before = env.snapshot();
    let list = env.agent("claude-7684f1ed").args(["msg", "list"]).ok();
    list.stdout_has(&mine)
        .stdout_has(&all)
        .stdout_lacks(&theirs);
    assert!(!list.stderr.contains("skipped"), "{}", list.stderr);
    env.cmd().args(["status", "--json"]).ok();
    assert_eq!(env.snapshot(), before, "a read wrote");

    let second = context(&hook(&env, "claude", &start, &[]));
    assert!(
        second.contains("for claude") && second.contains("for everyone"),
        "{second}"
    );
    assert_eq!(env.read(noted), format!("{theirs}\n"));
    // Another agent that never noted it still reads it, and is told it is spoiled.
    let codex = env.agent("codex").args(["msg", "list"]).ok();
    assert!(codex.stderr.contains("skipped"), "{}", codex.stderr);
}

/// A note of others' messages in each hostile form (a symlink to a file outside, a FIFO, a
/// folder, a huge or binary file, …) never stops or hangs a session's start, is never followed,
/// and leaves the agent's messages told.
#[test]
fn a_hostile_note_of_others_messages_is_never_followed() {
    use crate::planted::{ALL, Bed, plant};
    for kind in ALL {
        let bed = Bed::new();
        bed.run(Some("gemini"), &["msg", "send", "codex", "theirs"]);
        bed.run(Some("gemini"), &["msg", "send", "claude-7684f1ed", "mine"]);
        let note = bed.at(".coord/messages/read/claude-7684f1ed/others.ids");
        plant(&note, kind, &bed.victim());
        let outside = bed.outside();
        let payload = serde_json::json!({
            "session_id": "7684f1ed-55e2-4a19-be34-6aa5a64f4b50",
            "cwd": bed.ws(),
            "hook_event_name": "SessionStart",
            "source": "startup",
        });
        let out = (bed.env.cmd().env_remove("COORD_DIR"))
            .cwd(crate::support::outside())
            .args(["hook", "claude"])
            .stdin(payload.to_string())
            .ok();
        let context = json(&out)["hookSpecificOutput"]["additionalContext"].to_string();
        assert!(
            context.contains("mine") && !context.contains("theirs"),
            "{kind:?}: {context}"
        );
        bed.assert_victim_untouched();
        assert_eq!(bed.outside(), outside, "{kind:?}: wrote outside");
    }
}
