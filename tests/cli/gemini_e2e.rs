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

use crate::e2e::{self, Client, FakeModel, Repo, Run, calls_script, until};

/// The agent the tests below have hold a file against the session.
const OTHER: &str = "claude-x";

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
            "shell" => shell_call(arg.as_str().unwrap()),
            "mcp" => json!([format!("mcp:{}", arg[0].as_str().unwrap()), arg[1]]),
            _ => panic!("no Gemini call for {kind}"),
        })
    }

    /// The `functionResponse` parts of each streamed request of a session's turn: `response`
    /// (`output` or `error`) as JSON text, and whether it is an error.
    fn conversations(&self, model: &FakeModel) -> Vec<Vec<(String, bool)>> {
        model
            .requests()
            .iter()
            .filter(|r| {
                r["path"]
                    .as_str()
                    .is_some_and(|p| p.contains("streamGenerateContent"))
                    && r["body"]["contents"].to_string().contains("coord-e2e:")
            })
            .map(|r| {
                function_responses(r)
                    .iter()
                    .map(|f| {
                        (
                            f["response"].to_string(),
                            f["response"].get("error").is_some(),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    fn kill9(&self, run: &mut Run) {
        run.kill9_chain();
    }
}

/// The `functionResponse` parts of one request.
fn function_responses(request: &Value) -> Vec<Value> {
    request["body"]["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

/// A repository with a committed `target.txt` ("old line\n") beside the wiring, the scripted
/// model, and the client configured.
fn bench() -> (Gemini, Repo, FakeModel) {
    let c = gemini();
    let (repo, model) = e2e::setup(&c);
    repo.env.write("target.txt", "old line\n");
    repo.commit_all("start");
    (c, repo, model)
}

/// A session of `calls`, the K-th "done" held until `holds[K]` exists; and its prompt.
fn start(
    c: &Gemini,
    repo: &Repo,
    model: &FakeModel,
    name: &str,
    calls: Value,
    holds: &[&Path],
) -> (Run, String) {
    let prompt = calls_script(calls, holds);
    let run = Run::spawn(c.session(repo, model, &prompt), name, &repo.scratch());
    (run, prompt)
}

/// The `functionResponse` parts of the longest conversation whose prompt is `prompt`: what the
/// client told the model each tool call did.
fn tool_results(model: &FakeModel, prompt: &str) -> Vec<Value> {
    model
        .requests_with(prompt)
        .iter()
        .map(function_responses)
        .max_by_key(|v| v.len())
        .unwrap_or_default()
}

/// The `gemini-*` agent holding `target.txt`, if one does.
fn gemini_holder(repo: &Repo) -> Option<String> {
    repo.holders("target.txt")
        .into_iter()
        .find(|a| a.starts_with("gemini-"))
}

fn write_call(path: &str, content: &str) -> Value {
    json!(["write_file", {"file_path": path, "content": content}])
}

fn shell_call(command: &str) -> Value {
    json!(["run_shell_command", {"command": command, "description": "run it"}])
}

fn write_target(repo: &Repo, content: &str) -> Value {
    write_call(&repo.abs("target.txt"), content)
}

e2e::scenario_tests! {
    client: gemini(), ignore: "needs the real client: set COORD_TEST_GEMINI (see .ci/run)";
    two_gemini_sessions_are_two_agents_that_exclude_each_other =>
        two_sessions_exclude_each_other();
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
fn gemini_edit_denied_while_another_agent_holds_the_file_then_allowed_and_released_at_turn_end() {
    let (c, repo, model) = bench();
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Both edit tools are denied, naming the holder; the file stays as it was.
    let replace = json!(["replace", {
        "file_path": repo.abs("target.txt"),
        "old_string": "old line",
        "new_string": "new line",
        "instruction": "replace the line",
    }]);
    let (run, prompt) = start(
        &c,
        &repo,
        &model,
        "denied",
        json!([write_target(&repo, "from gemini\n"), replace]),
        &[],
    );
    run.ok();
    assert_eq!(repo.env.read("target.txt"), "old line\n");
    assert_eq!(repo.holders("target.txt"), [OTHER]);
    let results = tool_results(&model, &prompt);
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
    repo.env.agent(OTHER).args(["unlock", "target.txt"]).ok();
    let flag = repo.flag("turn-over");
    let (mut run, prompt) = start(
        &c,
        &repo,
        &model,
        "allowed",
        json!([write_target(&repo, "from gemini\n")]),
        &[&flag],
    );
    until(&mut run, "the write inside the turn", || {
        repo.env.read("target.txt") == "from gemini\n" && gemini_holder(&repo).is_some()
    });
    let holder = gemini_holder(&repo).unwrap();
    repo.env
        .agent(OTHER)
        .args(["lock", "target.txt", "--no-wait"])
        .code(3)
        .stderr_has(&holder);
    e2e::release(&flag);
    run.ok();
    assert!(
        repo.holders("target.txt").is_empty(),
        "released at the turn's end: {:?}",
        repo.holders("target.txt")
    );
    let results = tool_results(&model, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0]["response"].get("output").is_some(),
        "{results:#?}"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_doctor_says_whether_the_real_client_runs_the_hooks() {
    let (c, repo, model) = bench();
    let trusted = repo.home.join(".gemini/trustedFolders.json");
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Not trusted: doctor says the hooks do not run. Headless, the client refuses to start (exit
    // 55); told to skip the trust check, it runs without the project's hooks: the write goes
    // through unlocked.
    std::fs::remove_file(&trusted).unwrap();
    let (says, why) = repo.doctor_says("gemini");
    assert_eq!(says, "no", "{why}");
    let prompt = calls_script(json!([write_target(&repo, "unlocked\n")]), &[]);
    let refused = Run::spawn(
        c.session(&repo, &model, &prompt),
        "untrusted",
        &repo.scratch(),
    )
    .wait();
    assert_eq!(refused.code, Some(55), "{refused:#?}");
    let mut skip = c.session(&repo, &model, &prompt);
    skip.arg("--skip-trust");
    Run::spawn(skip, "skip-trust", &repo.scratch()).ok();
    assert_eq!(repo.env.read("target.txt"), "unlocked\n", "no hook ran");
    assert!(repo.agents_of("gemini-").is_empty(), "no hook ran");

    // Trusted: doctor says they run, and the write is denied.
    let folders = json!({ repo.root().display().to_string(): "TRUST_FOLDER" });
    std::fs::write(&trusted, folders.to_string()).unwrap();
    let (says, why) = repo.doctor_says("gemini");
    assert_eq!(says, "yes", "{why}");
    let (run, prompt) = start(
        &c,
        &repo,
        &model,
        "trusted",
        json!([write_target(&repo, "locked\n")]),
        &[],
    );
    run.ok();
    assert_eq!(
        repo.env.read("target.txt"),
        "unlocked\n",
        "the write was denied"
    );
    assert!(tool_results(&model, &prompt)[0].to_string().contains(OTHER));
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_after_agent_releases_the_turns_locks_while_the_session_lives() {
    let (c, repo, model) = bench();
    let (first, second) = (repo.flag("first-answer"), repo.flag("second-answer"));
    let (mut run, _) = start(
        &c,
        &repo,
        &model,
        "turns",
        json!([write_target(&repo, "from gemini\n")]),
        &[&first, &second],
    );
    until(&mut run, "the write inside the turn", || {
        gemini_holder(&repo).is_some()
    });
    let me = gemini_holder(&repo).unwrap();

    // A message waits for it: AfterAgent releases the turn's locks and continues the session once,
    // telling the model about the message.
    repo.env
        .agent(OTHER)
        .args(["msg", "send", &me, "target.txt is mine next"])
        .ok();
    e2e::release(&first);
    until(&mut run, "the continued turn reaches the model", || {
        model.requests().iter().any(|r| {
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
        repo.holders("target.txt").is_empty(),
        "released at the end of the turn, the session still running: {:?}",
        repo.holders("target.txt")
    );
    assert_eq!(repo.agents_of(&me), [(me.clone(), "ACTIVE".to_string())]);
    repo.env
        .agent(OTHER)
        .args(["lock", "target.txt", "--no-wait"])
        .ok();

    e2e::release(&second);
    run.ok();
    assert_eq!(repo.agents_of(&me), [(me.clone(), "FINISHED".to_string())]);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_GEMINI (see .ci/run)"]
fn gemini_session_start_context_reaches_the_model() {
    let (c, repo, model) = bench();
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let (run, prompt) = start(&c, &repo, &model, "context", json!([]), &[]);
    run.ok();
    let asked = model.requests_with(&prompt);
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
    let agents = repo.agents_of("gemini-");
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
