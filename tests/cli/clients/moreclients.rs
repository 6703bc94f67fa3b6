//! Qwen Code, OpenCode and Cline CLI: `coord hook CLIENT` fed the payloads the real clients sent
//! (captured under tests/fixtures/<client>-<version>/; OpenCode's and Cline's come through the
//! plugin `coord init` writes), a rival session denied for every edit tool, one session one
//! agent, and what `coord init` writes for each.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{Env, Output};

const QWEN: &str = "qwen-code-0.15.10";
const OPENCODE: &str = "opencode-1.18.33";
const CLINE: &str = "cline-3.0.65";

/// A fixture with its project and home paths moved into `env`'s root.
fn fixture(env: &Env, rel: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let text = std::fs::read_to_string(path).unwrap();
    let root = env.root().to_str().unwrap();
    serde_json::from_str(
        &text
            .replace("/home/dev/proj", root)
            .replace("/home/dev", "/nonexistent-home"),
    )
    .unwrap()
}

/// `coord hook CLIENT` fed `payload`, the workspace taken from the payload's `cwd`.
fn hook(env: &Env, client: &str, payload: &Value, extra: &[&str]) -> Output {
    env.cmd()
        .env_remove("COORD_DIR")
        .cwd(crate::support::outside())
        .args(["hook", client])
        .args(extra)
        .stdin(payload.to_string())
        .ok()
}

/// The deny reason in the client's format; `None` when the call was allowed.
fn denied(client: &str, out: &Output) -> Option<String> {
    if out.stdout.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", out.stdout));
    let reason = match client {
        "qwen" => {
            let h = &v["hookSpecificOutput"];
            assert_eq!(h["hookEventName"], "PreToolUse", "{v}");
            assert_eq!(h["permissionDecision"], "deny", "{v}");
            &h["permissionDecisionReason"]
        }
        _ => {
            assert_eq!(v["decision"], "deny", "{v}");
            &v["reason"]
        }
    };
    Some(reason.as_str().unwrap().to_string())
}

/// The agents of `client` holding a lock on `file`.
fn session_locks(env: &Env, client: &str, file: &str) -> Vec<String> {
    env.files_ending("")
        .into_iter()
        .filter(|f| f.starts_with(&format!("{file}.lock.{client}-")))
        .collect()
}

/// While another agent holds any of `files`, `payload` is denied naming the holder and nothing
/// is locked; once they are free it is allowed and the session locks every one.
#[track_caller]
fn rival_is_denied(env: &Env, client: &str, payload: &Value, files: &[&str], what: &str) {
    for held in files {
        env.agent("holder")
            .args(["lock", held, "--reason", "rewriting it"])
            .ok();
        let out = hook(env, client, payload, &["--wait", "100ms"]);
        let reason = denied(client, &out).unwrap_or_else(|| {
            panic!("{what}: an edit of `{held}` held by another agent must be denied: {out:?}")
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
    let out = hook(env, client, payload, &[]);
    assert_eq!(denied(client, &out), None, "{what}: free files are allowed");
    for f in files {
        assert_eq!(
            session_locks(env, client, f).len(),
            1,
            "{what}: `{f}` locked by the session"
        );
    }
}

#[test]
fn qwen_every_edit_tool_is_denied_to_a_rival_session() {
    let env = Env::new();
    let write = fixture(&env, &format!("{QWEN}/deny.PreToolUse.json"));
    assert_eq!(write["tool_name"], "write_file");
    rival_is_denied(&env, "qwen", &write, &["held.txt"], "write_file");

    let env = Env::new();
    env.write("held.txt", "old\n");
    let mut edit = fixture(&env, &format!("{QWEN}/deny.PreToolUse.json"));
    edit["tool_name"] = "edit".into();
    edit["tool_input"] = json!({
        "file_path": env.path("held.txt").display().to_string(),
        "old_string": "old",
        "new_string": "new",
    });
    rival_is_denied(&env, "qwen", &edit, &["held.txt"], "edit");
}

#[test]
fn qwen_session_locks_on_write_and_releases_at_stop() {
    let env = Env::new();
    let pre = fixture(&env, &format!("{QWEN}/allow.PreToolUse.json"));
    assert_eq!(denied("qwen", &hook(&env, "qwen", &pre, &[])), None);
    assert!(
        env.exists("free.txt.lock.qwen-6498a910"),
        "one session, one agent: qwen-6498a910"
    );
    hook(
        &env,
        "qwen",
        &fixture(&env, &format!("{QWEN}/allow.PostToolUse.json")),
        &[],
    );
    // Qwen Code sends `stop_hook_active: true` on its first Stop: the locks go all the same.
    let stop = fixture(&env, &format!("{QWEN}/allow.Stop.json"));
    assert_eq!(stop["stop_hook_active"], true);
    hook(&env, "qwen", &stop, &[]);
    assert!(!env.exists("free.txt.lock.qwen-6498a910"));
}

#[test]
fn opencode_every_edit_tool_is_denied_to_a_rival_session() {
    let env = Env::new();
    let write = fixture(&env, &format!("{OPENCODE}/deny.tool.execute.before.json"));
    assert_eq!(write["tool_name"], "write");
    rival_is_denied(&env, "opencode", &write, &["held.txt"], "write");

    let env = Env::new();
    env.write("held.txt", "old\n");
    let mut edit = write.clone();
    edit["tool_name"] = "edit".into();
    edit["cwd"] = env.root().display().to_string().into();
    edit["tool_input"] = json!({
        "filePath": env.path("held.txt").display().to_string(),
        "oldString": "old",
        "newString": "new",
    });
    rival_is_denied(&env, "opencode", &edit, &["held.txt"], "edit");

    // apply_patch: every path of the patch, relative to the folder.
    let env = Env::new();
    env.write("old.txt", "a\n");
    let mut patch = fixture(&env, &format!("{OPENCODE}/deny.tool.execute.before.json"));
    patch["tool_name"] = "apply_patch".into();
    patch["tool_input"] = json!({
        "patchText": "*** Begin Patch\n*** Add File: added.txt\n+x\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-a\n+b\n*** End Patch",
    });
    rival_is_denied(
        &env,
        "opencode",
        &patch,
        &["added.txt", "old.txt", "moved.txt"],
        "apply_patch",
    );
}

#[test]
fn opencode_session_start_tells_who_is_here_and_idle_releases() {
    let env = Env::new();
    env.agent("holder").args(["lock", "held.txt"]).ok();
    let start = fixture(&env, &format!("{OPENCODE}/allow.session.start.json"));
    let out = hook(&env, "opencode", &start, &[]);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let text = v["context"].as_str().unwrap();
    assert!(
        text.contains("held.txt") && text.contains("holder"),
        "{text}"
    );
    // `ses_` ids begin with a clock: the agent takes their random tail.
    assert!(text.contains("`opencode-hkhlr13y`"), "{text}");
    let pre = fixture(&env, &format!("{OPENCODE}/allow.tool.execute.before.json"));
    assert_eq!(denied("opencode", &hook(&env, "opencode", &pre, &[])), None);
    assert!(env.exists("free.txt.lock.opencode-hkhlr13y"));
    hook(
        &env,
        "opencode",
        &fixture(&env, &format!("{OPENCODE}/allow.tool.execute.after.json")),
        &[],
    );
    hook(
        &env,
        "opencode",
        &fixture(&env, &format!("{OPENCODE}/allow.session.idle.json")),
        &[],
    );
    assert!(!env.exists("free.txt.lock.opencode-hkhlr13y"));
    // The session deleted: the agent clocks out.
    let mut deleted = start.clone();
    deleted["hook_event_name"] = "session.deleted".into();
    hook(&env, "opencode", &deleted, &[]);
    assert_eq!(env.status_of("opencode-hkhlr13y")["status"], "FINISHED");
}

#[test]
fn cline_every_edit_tool_is_denied_to_a_rival_session() {
    let env = Env::new();
    let editor = fixture(&env, &format!("{CLINE}/deny.beforeTool.json"));
    assert_eq!(editor["tool_name"], "editor");
    rival_is_denied(&env, "cline", &editor, &["held.txt"], "editor");

    // apply_patch: the patch as a string, or under `input`.
    for (what, input) in [
        (
            "apply_patch (string)",
            json!(
                "*** Begin Patch\n*** Update File: held.txt\n@@\n-a\n+b\n*** Add File: new.txt\n+x\n*** End Patch"
            ),
        ),
        (
            "apply_patch (input)",
            json!({"input": "*** Begin Patch\n*** Update File: held.txt\n@@\n-a\n+b\n*** Add File: new.txt\n+x\n*** End Patch"}),
        ),
    ] {
        let env = Env::new();
        env.write("held.txt", "a\n");
        let mut patch = fixture(&env, &format!("{CLINE}/deny.beforeTool.json"));
        patch["tool_name"] = "apply_patch".into();
        patch["tool_input"] = input;
        rival_is_denied(&env, "cline", &patch, &["held.txt", "new.txt"], what);
    }
}

#[test]
fn two_cline_runs_are_two_agents_and_after_run_releases() {
    let env = Env::new();
    let start = fixture(&env, &format!("{CLINE}/allow.beforeRun.json"));
    let out = hook(&env, "cline", &start, &[]);
    assert!(out.stdout.contains("`cline-6b6s1d4j`"), "{}", out.stdout);
    let pre = fixture(&env, &format!("{CLINE}/allow.beforeTool.json"));
    assert_eq!(denied("cline", &hook(&env, "cline", &pre, &[])), None);
    assert!(env.exists("free.txt.lock.cline-6b6s1d4j"));
    // Another conversation started the same millisecond is another agent, and is denied.
    let mut other = pre.clone();
    other["session_id"] = "conv_1795538424106_zz9yy8x".into();
    let reason = denied("cline", &hook(&env, "cline", &other, &["--wait", "100ms"])).unwrap();
    assert!(reason.contains("cline-6b6s1d4j"), "{reason}");
    hook(
        &env,
        "cline",
        &fixture(&env, &format!("{CLINE}/allow.afterRun.json")),
        &[],
    );
    assert!(!env.exists("free.txt.lock.cline-6b6s1d4j"));
    assert_eq!(denied("cline", &hook(&env, "cline", &other, &[])), None);
    // The session's shutdown clocks it out.
    let mut shutdown = start.clone();
    shutdown["hook_event_name"] = "sessionShutdown".into();
    hook(&env, "cline", &shutdown, &[]);
    assert_eq!(env.status_of("cline-6b6s1d4j")["status"], "FINISHED");
}

/// Issue 35's check for Cline: a `git commit` among the `run_commands` of a real payload that
/// touches a file another agent holds is skipped naming holder and file; a command list that
/// neither commits nor pushes is allowed, and so is the commit once the file is free.
#[test]
fn a_cline_commit_through_run_commands_of_a_held_file_is_denied() {
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
    let commit = fixture(&env, &format!("{CLINE}/shell.beforeTool.json"));
    assert_eq!(commit["tool_name"], "run_commands");
    assert_eq!(commit["tool_input"]["commands"][1], "git commit -am x");
    env.agent("holder")
        .args(["lock", "a.txt", "--reason", "rewriting a"])
        .ok();
    let reason = denied("cline", &hook(&env, "cline", &commit, &[]))
        .expect("a commit of a held file through run_commands is denied");
    assert!(
        reason.contains("holder") && reason.contains("`a.txt`") && reason.contains("git guard"),
        "{reason}"
    );
    // The commands as one string, a line each, are read the same way.
    let mut script = commit.clone();
    script["tool_input"]["commands"] = json!("git status\ngit commit -am x");
    assert!(denied("cline", &hook(&env, "cline", &script, &[])).is_some());
    let mut status = commit.clone();
    status["tool_input"]["commands"] = json!(["git status", "git log -1"]);
    assert_eq!(denied("cline", &hook(&env, "cline", &status, &[])), None);
    env.agent("holder").args(["unlock", "a.txt"]).ok();
    assert_eq!(denied("cline", &hook(&env, "cline", &commit, &[])), None);
}

#[test]
fn init_writes_each_client_its_door_and_twice_changes_nothing() {
    let env = Env::new();
    env.cmd()
        .args(["init", "--client", "qwen,opencode,cline", "-q"])
        .ok();
    let qwen: Value = serde_json::from_str(&env.read(".qwen/settings.json")).unwrap();
    assert_eq!(
        qwen["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "coord hook qwen"
    );
    assert_eq!(qwen["mcpServers"]["coord"]["command"], "coord");
    for (file, client) in [
        (".opencode/plugin/coord.js", "opencode"),
        (".cline/plugins/coord.js", "cline"),
    ] {
        let js = env.read(file);
        assert!(js.contains(&format!("[\"hook\", \"{client}\"]")), "{js}");
    }
    let oc: Value = serde_json::from_str(&env.read("opencode.json")).unwrap();
    assert_eq!(oc["mcp"]["coord"]["command"], json!(["coord", "mcp"]));
    assert!(env.exists("QWEN.md"));
    let again = env
        .cmd()
        .args(["init", "--client", "qwen,opencode,cline"])
        .ok();
    again.stdout_has("Nothing to change");
    // A plugin file of that name that is not coord's is never overwritten.
    let env = Env::new();
    env.write(".cline/plugins/coord.js", "export default {}\n");
    env.cmd()
        .args(["init", "--client", "cline"])
        .code(2)
        .stderr_has("not written by coord");
    assert_eq!(env.read(".cline/plugins/coord.js"), "export default {}\n");
}
