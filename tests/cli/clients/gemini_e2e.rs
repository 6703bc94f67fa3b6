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

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::e2e::{self, Client, FakeModel, Repo, Run, calls_script};

pub(crate) struct Gemini(pub(crate) PathBuf);

fn gemini() -> Gemini {
    Gemini(e2e::require("gemini"))
}

impl Client for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn model(&self) -> &'static str {
        "fake_gemini.py"
    }

    /// The user's settings (the API-key auth type, no telemetry or update checks) and the
    /// repository trusted.
    fn configure(&self, repo: &Repo, _model: &FakeModel) {
        let dot = repo.home.join(".gemini");
        std::fs::create_dir_all(&dot).unwrap();
        let settings = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
        });
        std::fs::write(dot.join("settings.json"), settings.to_string()).unwrap();
        let trusted = json!({ repo.root().display().to_string(): "TRUST_FOLDER" });
        std::fs::write(dot.join("trustedFolders.json"), trusted.to_string()).unwrap();
    }

    /// `gemini -p PROMPT --yolo` in the repository, against the scripted model.
    fn session(&self, repo: &Repo, model: &FakeModel, prompt: &str) -> Command {
        let mut c = repo.client_cmd(&self.0);
        c.args(["-p", prompt, "--yolo"])
            .env("GOOGLE_GEMINI_BASE_URL", model.url())
            .env("GEMINI_API_KEY", "coord-e2e-key");
        c
    }

    fn script(&self, steps: Value) -> String {
        e2e::steps_as_calls(&steps, |kind, arg| match kind {
            "write" => write_call(arg[0].as_str().unwrap(), arg[1].as_str().unwrap()),
            "shell" => json!(["run_shell_command", {"command": arg, "description": "run it"}]),
            "mcp" => json!([format!("mcp:{}", arg[0].as_str().unwrap()), arg[1]]),
            _ => panic!("no Gemini call for {kind}"),
        })
    }

    /// The routed model's streamed requests (not the classifier's, nor the side requests).
    fn is_turn(&self, request: &Value) -> bool {
        request["path"]
            .as_str()
            .is_some_and(|p| p.contains("streamGenerateContent"))
            && request["body"]["contents"]
                .to_string()
                .contains("coord-e2e:")
    }

    /// The `functionResponse` parts: a denied call's `response.error`, or the whole `response`
    /// (its `output`) as JSON text.
    fn tool_results(&self, request: &Value) -> Vec<(String, bool)> {
        request["body"]["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p.get("functionResponse").cloned())
            .map(|f| match f["response"].get("error") {
                Some(Value::String(error)) => (error.clone(), true),
                Some(error) => (error.to_string(), true),
                None => (f["response"].to_string(), false),
            })
            .collect()
    }

    /// The launcher and the node it relaunches.
    fn kill9(&self, run: &mut Run) {
        run.kill9_chain();
    }
}

fn write_call(path: &str, content: &str) -> Value {
    json!(["write_file", {"file_path": path, "content": content}])
}

/// Both edit tools on `target.txt`.
fn write_and_replace(repo: &Repo) -> Value {
    json!([
        write_call(&repo.abs("target.txt"), "from gemini\n"),
        ["replace", {
            "file_path": repo.abs("target.txt"),
            "old_string": "old line",
            "new_string": "new line",
            "instruction": "replace the line",
        }],
    ])
}

fn write_target(repo: &Repo) -> Value {
    write_call(&repo.abs("target.txt"), "from gemini\n")
}

e2e::scenario_tests! {
    client: gemini(), ignore: "needs the real client: set COORD_TEST_GEMINI (see .ci/run)";
    gemini_edit_denied_while_another_agent_holds_the_file_then_allowed_and_released_at_turn_end =>
        edits_denied_then_allowed(
            write_and_replace,
            write_target,
            "from gemini\n",
            "Tool execution blocked: coord:"
        );
    gemini_after_agent_releases_the_turns_locks_while_the_session_lives =>
        turn_end_releases_the_locks_while_the_session_lives(write_target);
    two_gemini_sessions_are_two_agents_that_exclude_each_other =>
        two_sessions_exclude_each_other();
    /// The context arrives as `<hook_context>…</hook_context>` before the prompt.
    gemini_session_start_context_reaches_the_model => session_start_context_reaches_the_model();
    gemini_session_end_finishes_the_presence => session_end_finishes_the_presence();
    gemini_mcp_lock_and_own_edit_do_not_block_each_other => mcp_lock_and_own_edit();
    gemini_coord_lock_from_its_shell_acts_as_the_session =>
        shell_commands_act_as_the_session(true);
    gemini_killed_with_sigkill_frees_its_files_within_seconds =>
        killed_client_frees_its_files(false);
    /// coord's AfterTool hook appends its notice to the command's result.
    gemini_shell_edit_of_a_held_file_is_told_to_the_model => shell_edit_is_told_to_the_model();
    gemini_git_commit_through_its_shell_is_refused_while_another_agent_holds_a_staged_file =>
        commit_of_a_held_staged_file_is_refused();
    gemini_git_commit_through_its_shell_of_a_file_it_holds_goes_through =>
        commit_of_its_own_file_goes_through();
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_doctor_says_whether_the_real_client_runs_the_hooks() {
    let c = gemini();
    let (repo, model) = e2e::setup_committed(&c);
    let trusted = repo.home.join(".gemini/trustedFolders.json");
    repo.env.agent("claude-x").args(["lock", "target.txt"]).ok();

    // Not trusted: doctor says the hooks do not run. Headless, the client refuses to start (exit
    // 55); told to skip the trust check, it runs without the project's hooks: the write goes
    // through unlocked.
    std::fs::remove_file(&trusted).unwrap();
    let (says, why) = repo.doctor_says("gemini");
    assert_eq!(says, "no", "{why}");
    let unlocked = write_call(&repo.abs("target.txt"), "unlocked\n");
    let prompt = calls_script(json!([unlocked]), &[]);
    let refused = Run::spawn(
        c.session(&repo, &model, &prompt),
        "untrusted",
        &repo.scratch(),
    );
    let refused = refused.wait();
    assert_eq!(refused.code, Some(55), "{refused:#?}");
    let mut skip = c.session(&repo, &model, &prompt);
    skip.arg("--skip-trust");
    Run::spawn(skip, "skip-trust", &repo.scratch()).ok();
    assert_eq!(repo.env.read("target.txt"), "unlocked\n", "no hook ran");
    assert!(repo.agents_of("gemini-").is_empty(), "no hook ran");

    // Trusted: doctor says they run, and the write is denied.
    c.configure(&repo, &model);
    let (says, why) = repo.doctor_says("gemini");
    assert_eq!(says, "yes", "{why}");
    let locked = json!([write_call(&repo.abs("target.txt"), "locked\n")]);
    let (run, prompt) = e2e::start_calls(&c, &repo, &model, "trusted", locked, &[]);
    run.ok();
    assert_eq!(
        repo.env.read("target.txt"),
        "unlocked\n",
        "the write was denied"
    );
    let results = e2e::conversation_of(&c, &model, &prompt);
    assert!(results[0].0.contains("claude-x"), "{results:#?}");
}
