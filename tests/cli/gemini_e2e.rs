//! End to end with the real Gemini CLI (npm `@google/gemini-cli`, `COORD_TEST_GEMINI`), driven by a
//! scripted stand-in for the Gemini API on 127.0.0.1 (`tests/e2e/fake_gemini.py`, the v1beta
//! `streamGenerateContent` wire format), in a git repository wired by `coord init --client gemini`
//! only.
//!
//! The client runs as `gemini -p PROMPT --yolo` with a scratch HOME whose user settings select the
//! `gemini-api-key` auth type (`GEMINI_API_KEY`, `GOOGLE_GEMINI_BASE_URL`), turn telemetry and
//! update checks off, and trust the repository (`~/.gemini/trustedFolders.json`): an untrusted
//! folder runs no project hooks.
//!
//! What Gemini CLI 0.61.0 does here (seen with these tests):
//! - An untrusted folder: `gemini -p` exits 55 ("not running in a trusted directory"); with
//!   `--skip-trust` it runs, but without the project's settings: no hooks, no MCP server, edits go
//!   through unlocked with nothing said. `GEMINI_CLI_TRUST_WORKSPACE=true` trusts too.
//! - `GOOGLE_GEMINI_BASE_URL` without a selected auth type picks the `gateway` auth type.
//! - Each prompt first goes to a classifier (`gemini-3.5-flash-lite:generateContent`, JSON), then
//!   to the routed model (`gemini-3.8-flash:streamGenerateContent?alt=sse`); the SessionStart
//!   context arrives as `<hook_context>…</hook_context>` before the prompt in the user text.
//! - A denied tool call reaches the model as `functionResponse.response.error` =
//!   `"Tool execution blocked: <the hook's reason>"`; an allowed one as `response.output`.
//! - `run_shell_command` runs `bash -c` in its own process group with git hardened through the
//!   environment (`GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_COUNT=8` with
//!   `core.hooksPath` empty: git runs no hook, and the user's git identity is gone), with
//!   `GEMINI_CLI=1`, `GEMINI_CLI_NO_RELAUNCH=true` and `GEMINI_API_KEY` but no session id; its
//!   output reaches the model wrapped in `<untrusted_context>`.
//!
//! Ignored by plain `cargo test`; run with `--ignored`, fails, saying why, when `COORD_TEST_GEMINI`
//! is unset or does not run, or python3 or git is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::scripted::{self, Lab, LabClient, OTHER, Run, script, script_holds, until};

fn lab() -> (PathBuf, Lab) {
    let bin = crate::e2e::require("gemini");
    let lab = Lab::new("gemini", "fake_gemini.py");
    let dot = lab.home.join(".gemini");
    std::fs::create_dir_all(&dot).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    });
    std::fs::write(dot.join("settings.json"), settings.to_string()).unwrap();
    let trusted = json!({ lab.root().display().to_string(): "TRUST_FOLDER" });
    std::fs::write(dot.join("trustedFolders.json"), trusted.to_string()).unwrap();
    (bin, lab)
}

/// `gemini -p PROMPT --yolo` in the repository, against the scripted model.
fn gemini(lab: &Lab, bin: &Path, prompt: &str) -> Command {
    let mut c = lab.command(bin);
    c.args(["-p", prompt, "--yolo"])
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", lab.port),
        )
        .env("GEMINI_API_KEY", "coord-e2e-key");
    c
}

fn start(lab: &Lab, bin: &Path, name: &str, calls: Value, hold: Option<&Path>) -> (Run, String) {
    let prompt = script(calls, hold);
    (lab.spawn(gemini(lab, bin, &prompt), name), prompt)
}

fn path_of(lab: &Lab, rel: &str) -> String {
    lab.root().join(rel).display().to_string()
}

/// The `functionResponse` parts of the longest conversation whose prompt is `prompt`: what the
/// client told the model each tool call did.
fn tool_results(lab: &Lab, prompt: &str) -> Vec<Value> {
    let needle = serde_json::to_string(prompt).unwrap();
    let needle = &needle[1..needle.len() - 1];
    lab.requests_with(needle)
        .into_iter()
        .map(|r| {
            r["body"]["contents"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .filter_map(|p| p.get("functionResponse").cloned())
                .collect::<Vec<Value>>()
        })
        .max_by_key(|v| v.len())
        .unwrap_or_default()
}

/// The `gemini-*` agent holding `target.txt`, if one does.
fn gemini_holder(lab: &Lab) -> Option<String> {
    lab.locks_of("target.txt")
        .into_iter()
        .find_map(|l| l.strip_prefix("target.txt.lock.").map(str::to_string))
        .filter(|a| a.starts_with("gemini-"))
}

fn write_call(lab: &Lab, content: &str) -> Value {
    json!(["write_file", {"file_path": path_of(lab, "target.txt"), "content": content}])
}

/// Gemini CLI on the bench, for the scenarios of `scripted.rs`.
struct Gemini(PathBuf);

impl LabClient for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn session(&self, lab: &Lab, prompt: &str) -> Command {
        gemini(lab, &self.0, prompt)
    }

    fn edit(&self, lab: &Lab, text: &str) -> Value {
        write_call(lab, &format!("{text}\n"))
    }

    fn write(&self, lab: &Lab, text: &str) -> Value {
        write_call(lab, &format!("{text}\n"))
    }

    /// Each `functionResponse`'s `response` (`output` or `error`), as JSON text.
    fn results(&self, lab: &Lab, prompt: &str) -> Vec<String> {
        tool_results(lab, prompt)
            .iter()
            .map(|r| r["response"].to_string())
            .collect()
    }
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_edit_denied_while_another_agent_holds_the_file_then_allowed_and_released_at_turn_end() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Both edit tools are denied, naming the holder; the file stays as it was.
    let replace = json!(["replace", {
        "file_path": path_of(&lab, "target.txt"),
        "old_string": "old line",
        "new_string": "new line",
        "instruction": "replace the line",
    }]);
    let (run, prompt) = start(
        &lab,
        &bin,
        "denied",
        json!([write_call(&lab, "from gemini\n"), replace]),
        None,
    );
    run.ok();
    assert_eq!(lab.env.read("target.txt"), "old line\n");
    assert_eq!(lab.locks_of("target.txt"), ["target.txt.lock.claude-x"]);
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 2, "{results:#?}");
    for r in &results {
        let text = r["response"].to_string();
        assert!(text.contains(OTHER) && text.contains("target.txt"), "{r}");
        let error = r["response"]["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("Tool execution blocked: coord:"),
            "the hook's deny, as an error result: {r}"
        );
    }

    // Released: the edit goes through, its lock held for the rest of the turn, released at its end.
    lab.env.agent(OTHER).args(["unlock", "target.txt"]).ok();
    let flag = lab.flag("turn-over");
    let (run, prompt) = start(
        &lab,
        &bin,
        "allowed",
        json!([write_call(&lab, "from gemini\n")]),
        Some(&flag),
    );
    until("the write inside the turn", || {
        lab.env.read("target.txt") == "from gemini\n" && gemini_holder(&lab).is_some()
    });
    let holder = gemini_holder(&lab).unwrap();
    lab.env
        .agent(OTHER)
        .args(["lock", "target.txt", "--no-wait"])
        .code(3)
        .stderr_has(&holder);
    std::fs::write(&flag, "").unwrap();
    run.ok();
    assert!(
        lab.locks_of("target.txt").is_empty(),
        "released at the turn's end: {:?}",
        lab.locks_of("target.txt")
    );
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0]["response"].get("output").is_some(),
        "{results:#?}"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_doctor_says_whether_the_real_client_runs_the_hooks() {
    let (bin, lab) = lab();
    let trusted = lab.home.join(".gemini/trustedFolders.json");
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Not trusted: doctor says the hooks do not run. Headless, the client refuses to start (exit
    // 55); told to skip the trust check, it runs without the project's hooks: the write goes
    // through unlocked.
    std::fs::remove_file(&trusted).unwrap();
    let (says, why) = lab.doctor_says("gemini");
    assert_eq!(says, "no", "{why}");
    let prompt = script(json!([write_call(&lab, "unlocked\n")]), None);
    let refused = lab.spawn(gemini(&lab, &bin, &prompt), "untrusted").finish();
    assert_eq!(refused.status.code(), Some(55), "{refused:#?}");
    let mut skip = gemini(&lab, &bin, &prompt);
    skip.arg("--skip-trust");
    lab.spawn(skip, "skip-trust").ok();
    assert_eq!(lab.env.read("target.txt"), "unlocked\n", "no hook ran");
    assert!(lab.agents("gemini-").is_empty(), "no hook ran");

    // Trusted: doctor says they run, and the write is denied.
    let folders = json!({ lab.root().display().to_string(): "TRUST_FOLDER" });
    std::fs::write(&trusted, folders.to_string()).unwrap();
    let (says, why) = lab.doctor_says("gemini");
    assert_eq!(says, "yes", "{why}");
    let (run, prompt) = start(
        &lab,
        &bin,
        "trusted",
        json!([write_call(&lab, "locked\n")]),
        None,
    );
    run.ok();
    assert_eq!(
        lab.env.read("target.txt"),
        "unlocked\n",
        "the write was denied"
    );
    assert!(tool_results(&lab, &prompt)[0].to_string().contains(OTHER));
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_after_agent_releases_the_turns_locks_while_the_session_lives() {
    let (bin, lab) = lab();
    let (first, second) = (lab.flag("first-answer"), lab.flag("second-answer"));
    let prompt = script_holds(
        json!([write_call(&lab, "from gemini\n")]),
        vec![&first, &second],
    );
    let run = lab.spawn(gemini(&lab, &bin, &prompt), "turns");
    until("the write inside the turn", || {
        gemini_holder(&lab).is_some()
    });
    let me = gemini_holder(&lab).unwrap();

    // A message waits for it: AfterAgent releases the turn's locks and continues the session once,
    // telling the model about the message.
    lab.env
        .agent(OTHER)
        .args(["msg", "send", &me, "target.txt is mine next"])
        .ok();
    std::fs::write(&first, "").unwrap();
    until("the continued turn reaches the model", || {
        lab.requests().iter().any(|r| {
            r["path"]
                .as_str()
                .unwrap_or("")
                .contains("streamGenerateContent")
                && r["body"]["contents"]
                    .to_string()
                    .contains("unread message before you stop")
        })
    });
    assert!(
        lab.locks_of("target.txt").is_empty(),
        "released at the end of the turn, the session still running: {:?}",
        lab.locks_of("target.txt")
    );
    assert_eq!(lab.agents(&me), [(me.clone(), "ACTIVE".to_string())]);
    lab.env
        .agent(OTHER)
        .args(["lock", "target.txt", "--no-wait"])
        .ok();

    std::fs::write(&second, "").unwrap();
    run.ok();
    assert_eq!(lab.agents(&me), [(me.clone(), "FINISHED".to_string())]);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn two_gemini_sessions_are_two_agents_that_exclude_each_other() {
    let (bin, lab) = lab();
    scripted::two_sessions_exclude_each_other(&Gemini(bin), &lab);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_session_start_context_reaches_the_model() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let (run, prompt) = start(&lab, &bin, "context", json!([]), None);
    run.ok();
    let needle = serde_json::to_string(&prompt).unwrap();
    let asked = lab.requests_with(&needle[1..needle.len() - 1]);
    let main = asked
        .iter()
        .find(|r| {
            r["path"]
                .as_str()
                .unwrap_or("")
                .contains("streamGenerateContent")
        })
        .unwrap_or_else(|| panic!("no streamed request: {asked:#?}"));
    let text = main["body"]["contents"].to_string();
    let agents = lab.agents("gemini-");
    assert_eq!(agents.len(), 1, "{agents:?}");
    let me = &agents[0].0;
    assert!(
        text.contains(&format!("you are agent `{me}`")),
        "the model is told its coord name: {text}"
    );
    assert!(
        text.contains("target.txt (held by claude-x"),
        "the model is told who holds what: {text}"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_session_end_finishes_the_presence() {
    let (bin, lab) = lab();
    scripted::session_end_finishes_the_presence(&Gemini(bin), &lab);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_git_commit_through_its_shell_is_refused_while_another_agent_holds_a_staged_file() {
    let (bin, lab) = lab();
    lab.env.cmd().args(["guard", "install"]).ok();
    lab.env.write("target.txt", "staged change\n");
    lab.git(&["add", "target.txt"]);
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let head = lab.git(&["rev-parse", "HEAD"]);
    let commit = json!(["run_shell_command", {
        "command": "git commit -am 'from gemini'",
        "description": "commit the change",
    }]);

    let (run, prompt) = start(&lab, &bin, "held", json!([commit.clone()]), None);
    run.ok();
    assert_eq!(lab.git(&["rev-parse", "HEAD"]), head, "no commit was made");
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    let text = results[0]["response"].to_string();
    assert!(
        text.contains(OTHER) && text.contains("target.txt"),
        "the reason names the holder and the file: {text}"
    );

    lab.env.agent(OTHER).args(["unlock", "target.txt"]).ok();
    let (run, _) = start(&lab, &bin, "free", json!([commit]), None);
    run.ok();
    assert_ne!(
        lab.git(&["rev-parse", "HEAD"]),
        head,
        "the commit went through"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_git_commit_through_its_shell_of_a_file_it_holds_goes_through() {
    let (bin, lab) = lab();
    lab.env.cmd().args(["guard", "install"]).ok();
    let head = lab.git(&["rev-parse", "HEAD"]);
    let flag = lab.flag("done");
    let (run, prompt) = start(
        &lab,
        &bin,
        "own",
        json!([
            write_call(&lab, "from gemini\n"),
            ["run_shell_command", {"command": "git commit -qam 'from gemini'", "description": "commit"}],
        ]),
        Some(&flag),
    );
    until("both tool calls answered", || {
        tool_results(&lab, &prompt).len() == 2
    });
    assert!(
        gemini_holder(&lab).is_some(),
        "the session holds the file it wrote"
    );
    let results = tool_results(&lab, &prompt);
    assert_ne!(
        lab.git(&["rev-parse", "HEAD"]),
        head,
        "a session's own lock does not stop its commit: {results:#?}"
    );
    assert_eq!(lab.git(&["show", "HEAD:target.txt"]), "from gemini\n");
    std::fs::write(&flag, "").unwrap();
    run.ok();
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_mcp_lock_and_own_edit_do_not_block_each_other() {
    let (bin, lab) = lab();
    let flag = lab.flag("done");
    let (run, prompt) = start(
        &lab,
        &bin,
        "mcp",
        json!([
            ["mcp:lock", {"files": ["target.txt"]}],
            write_call(&lab, "from gemini\n"),
        ]),
        Some(&flag),
    );
    until("both tool calls answered", || {
        tool_results(&lab, &prompt).len() == 2
    });
    let results = tool_results(&lab, &prompt);
    for r in &results {
        assert!(r["response"].get("error").is_none(), "{results:#?}");
    }
    assert_eq!(lab.env.read("target.txt"), "from gemini\n");
    let locks = lab.locks_of("target.txt");
    assert_eq!(locks.len(), 1, "one agent holds it: {locks:?}");
    assert!(locks[0].starts_with("target.txt.lock.gemini-"), "{locks:?}");
    std::fs::write(&flag, "").unwrap();
    run.ok();
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_coord_lock_from_its_shell_acts_as_the_session() {
    let (bin, lab) = lab();
    let flag = lab.flag("done");
    let (run, prompt) = start(
        &lab,
        &bin,
        "shell",
        json!([
            ["run_shell_command", {"command": "coord lock target.txt", "description": "lock"}],
            write_call(&lab, "from gemini\n"),
        ]),
        Some(&flag),
    );
    until("the session's write", || {
        lab.env.read("target.txt") == "from gemini\n"
    });
    let locks = lab.locks_of("target.txt");
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert!(locks[0].starts_with("target.txt.lock.gemini-"), "{locks:?}");
    std::fs::write(&flag, "").unwrap();
    run.ok();
    let results = tool_results(&lab, &prompt);
    assert!(
        results[0]["response"].to_string().contains("Lock acquired"),
        "{results:#?}"
    );
    assert!(
        lab.locks_of("target.txt").is_empty(),
        "released at turn end"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_killed_with_sigkill_frees_its_files_within_seconds() {
    let (bin, lab) = lab();
    scripted::killed_client_frees_its_files(&Gemini(bin), &lab);
}

/// A shell command that changes a file another agent holds: coord's AfterTool hook appends its
/// notice to the command's result, so the model reads it with the output.
#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_shell_edit_of_a_held_file_is_told_to_the_model() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let edit = json!(["run_shell_command", {
        "command": "echo more >> target.txt",
        "description": "append a line",
    }]);
    let (run, prompt) = start(&lab, &bin, "shell", json!([edit]), None);
    run.ok();
    assert!(
        lab.env.read("target.txt").contains("more"),
        "the command ran"
    );
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    let text = results[0]["response"].to_string();
    assert!(
        text.contains("your shell command changed")
            && text.contains("target.txt")
            && text.contains(OTHER),
        "the notice reaches the model with the command's result: {text}"
    );
}
