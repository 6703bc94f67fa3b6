//! End to end with the real GitHub Copilot CLI (npm `@github/copilot`, `COORD_TEST_COPILOT`),
//! driven by a scripted stand-in for the OpenAI Chat Completions API on 127.0.0.1
//! (`tests/e2e/fake_openai_chat.py`, streamed), in a git repository wired by
//! `coord init --client copilot` only.
//!
//! The client runs as `copilot -p PROMPT --allow-all-tools` with `COPILOT_OFFLINE=true` and a
//! bring-your-own provider (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_API_KEY`,
//! `COPILOT_MODEL`), a scratch HOME whose `~/.copilot/config.json` trusts the repository, and the
//! package cache the installed client already unpacked (`COPILOT_PKG_CACHE_HOME`; the npm package
//! is a loader and a native binary that unpacks ~235 MB of JavaScript into the cache on first use).
//! A GPT-5-family model (`gpt-5.4`) is offered a freeform `apply_patch` tool instead of
//! `edit`/`create`; another (`gpt-4.1`) gets `edit`/`create`.
//!
//! What Copilot CLI 1.0.102 does here (seen with these tests):
//! - A folder missing from `trustedFolders` in `~/.copilot/config.json`: `copilot -p` runs all the
//!   same, without the repository's hooks: edits go through unlocked with nothing said. The client
//!   rewrites that file as JSON with `//` comment lines at its top.
//! - `gpt-5.4` is offered `apply_patch` as a custom (freeform, lark grammar) tool, called with
//!   `{"type": "custom", "custom": {"name", "input"}}`, and `rg` instead of `grep`; `gpt-4.1` gets
//!   `create`/`edit` function tools.
//! - A denied tool call reaches the model as the `tool` message
//!   `"Denied by preToolUse hook: <the hook's reason>"`.
//! - The `bash` tool's command sees `COPILOT_AGENT_SESSION_ID`, `COPILOT_CLI=1`, and git settings
//!   through `GIT_CONFIG_COUNT=3` (`safe.bareRepository`, `credential.interactive`,
//!   `core.fsmonitor`) and `GIT_OPTIONAL_LOCKS=0`: git hooks still run, so the pre-commit guard
//!   refuses a commit there; its output ends with `<shellId: N completed with exit code C>`.
//! - `copilot` is a node loader that runs the native binary (whose main thread is `MainThread`)
//!   with spawnSync: the client process is the loader's child.
//!
//! Ignored by plain `cargo test`; run with `--ignored`, fails, saying why, when `COORD_TEST_COPILOT`
//! is unset or does not run, or python3 or git is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::e2e::{self, Client, FakeModel, Repo, Run, calls_script, until};

/// The agent the tests below have hold a file against the session.
const OTHER: &str = "claude-x";

const EDIT_MODEL: &str = "gpt-4.1";

const PATCH_MODEL: &str = "gpt-5.4";

/// Copilot CLI with `model` (a GPT-5-family one is offered `apply_patch` instead of
/// `edit`/`create`).
pub(crate) struct Copilot {
    pub(crate) bin: PathBuf,
    pub(crate) model: &'static str,
}

fn copilot() -> Copilot {
    Copilot {
        bin: e2e::require("copilot"),
        model: EDIT_MODEL,
    }
}

/// Where the installed client unpacked (or will unpack) its package: the user's own cache, as
/// when they run it, so each test's scratch HOME does not unpack it again.
pub(crate) fn package_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("COPILOT_PKG_CACHE_HOME") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("copilot")
}

impl Client for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn model(&self) -> &'static str {
        "fake_openai_chat.py"
    }

    /// The repository trusted in `~/.copilot/config.json`.
    fn configure(&self, repo: &Repo, _model: &FakeModel) {
        let dot = repo.home.join(".copilot");
        std::fs::create_dir_all(&dot).unwrap();
        let config = json!({ "trustedFolders": [repo.root().display().to_string()] });
        std::fs::write(dot.join("config.json"), config.to_string()).unwrap();
    }

    /// `copilot -p PROMPT --allow-all-tools` in the repository, offline, with a
    /// bring-your-own provider: the scripted model.
    fn session(&self, repo: &Repo, model: &FakeModel, prompt: &str) -> Command {
        let mut c = repo.client_cmd(&self.bin);
        c.args(["-p", prompt, "--allow-all-tools"])
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_AUTO_UPDATE", "false")
            .env("COPILOT_PKG_CACHE_HOME", package_cache())
            .env("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", model.url()))
            .env("COPILOT_PROVIDER_API_KEY", "coord-e2e-key")
            .env("COPILOT_MODEL", self.model);
        c
    }

    /// A write is `create` of a new file, `edit` of the whole text of one that exists.
    fn script(&self, steps: Value) -> String {
        e2e::steps_as_calls(&steps, |kind, arg| match kind {
            "write" => {
                let (path, content) = (arg[0].as_str().unwrap(), arg[1].as_str().unwrap());
                match std::fs::read_to_string(path) {
                    Ok(old) => json!(["edit", {"path": path, "old_str": old, "new_str": content}]),
                    Err(_) => json!(["create", {"path": path, "file_text": content}]),
                }
            }
            "shell" => json!(["bash", {"command": arg, "description": "run it"}]),
            "mcp" => json!([format!("mcp:{}", arg[0].as_str().unwrap()), arg[1]]),
            _ => panic!("no Copilot call for {kind}"),
        })
    }

    /// The `tool` messages of each request of a session's turn; a hook's deny is an error.
    fn conversations(&self, model: &FakeModel) -> Vec<Vec<(String, bool)>> {
        model
            .requests()
            .iter()
            .filter(|r| {
                r["body"]["messages"].to_string().contains("coord-e2e:")
                    && r["body"]["tools"].as_array().is_some_and(|t| !t.is_empty())
            })
            .map(|r| {
                tool_messages(r)
                    .into_iter()
                    .map(|t| {
                        let denied = t.starts_with("Denied by preToolUse hook");
                        (t, denied)
                    })
                    .collect()
            })
            .collect()
    }

    /// The loader and its native binary (the loader's child).
    fn kill9(&self, run: &mut Run) {
        run.kill9_chain();
    }
}

/// The `tool` messages of one request, as text.
fn tool_messages(request: &Value) -> Vec<String> {
    request["body"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// A repository with a committed `target.txt` ("old line\n") beside the wiring, the scripted
/// model, and the client configured.
fn bench() -> (Copilot, Repo, FakeModel) {
    let c = copilot();
    let (repo, model) = e2e::setup(&c);
    repo.env.write("target.txt", "old line\n");
    repo.commit_all("start");
    (c, repo, model)
}

/// A session of `calls`, the K-th "done" held until `holds[K]` exists; and its prompt.
fn start(
    c: &Copilot,
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

/// The `tool` messages of the longest conversation whose prompt is `prompt`: what the client
/// told the model each tool call did.
fn tool_results(model: &FakeModel, prompt: &str) -> Vec<String> {
    model
        .requests_with(prompt)
        .iter()
        .map(tool_messages)
        .max_by_key(|v| v.len())
        .unwrap_or_default()
}

/// The `copilot-*` agent holding `target.txt`, if one does.
fn copilot_holder(repo: &Repo) -> Option<String> {
    repo.holders("target.txt")
        .into_iter()
        .find(|a| a.starts_with("copilot-"))
}

fn edit_call(repo: &Repo, new: &str) -> Value {
    json!(["edit", {"path": repo.abs("target.txt"), "old_str": "old line", "new_str": new}])
}

fn patch_call(repo: &Repo, new: &str) -> Value {
    json!([
        "apply_patch",
        format!(
            "*** Begin Patch\n*** Update File: {}\n@@\n-old line\n+{new}\n*** End Patch\n",
            repo.abs("target.txt")
        )
    ])
}

e2e::scenario_tests! {
    client: copilot(), ignore: "needs the real client: set COORD_TEST_COPILOT (see .ci/run)";
    two_copilot_sessions_are_two_agents_that_exclude_each_other =>
        two_sessions_exclude_each_other();
    copilot_session_end_finishes_the_presence => session_end_finishes_the_presence();
    copilot_mcp_lock_and_own_edit_do_not_block_each_other => mcp_lock_and_own_edit();
    copilot_coord_lock_from_its_shell_acts_as_the_session =>
        shell_commands_act_as_the_session(true);
    copilot_killed_with_sigkill_frees_its_files_within_seconds =>
        killed_client_frees_its_files(false);
    /// coord's postToolUse hook gives the model its notice (`additionalContext`).
    copilot_shell_edit_of_a_held_file_is_told_to_the_model => shell_edit_is_told_to_the_model();
    copilot_git_commit_through_its_shell_is_refused_while_another_agent_holds_a_staged_file =>
        commit_of_a_held_staged_file_is_refused();
    copilot_git_commit_through_its_shell_of_a_file_it_holds_goes_through =>
        commit_of_its_own_file_goes_through();
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_edit_denied_while_another_agent_holds_the_file_then_allowed_and_released_at_turn_end() {
    let (c, repo, model) = bench();
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Both edit tools are denied, naming the holder; the file stays as it was.
    let create = json!(["create", {"path": repo.abs("target.txt"), "file_text": "from copilot\n"}]);
    let (run, prompt) = start(
        &c,
        &repo,
        &model,
        "denied",
        json!([edit_call(&repo, "new line"), create]),
        &[],
    );
    run.ok();
    assert_eq!(repo.env.read("target.txt"), "old line\n");
    assert_eq!(repo.holders("target.txt"), [OTHER]);
    let results = tool_results(&model, &prompt);
    assert_eq!(results.len(), 2, "{results:#?}");
    for r in &results {
        assert!(r.contains(OTHER) && r.contains("target.txt"), "{r}");
        assert!(
            r.starts_with("Denied by preToolUse hook: coord:"),
            "the hook's deny: {r}"
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
        json!([edit_call(&repo, "new line")]),
        &[&flag],
    );
    until(&mut run, "the edit inside the turn", || {
        repo.env.read("target.txt") == "new line\n" && copilot_holder(&repo).is_some()
    });
    let holder = copilot_holder(&repo).unwrap();
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
    assert!(!results[0].contains(OTHER), "{results:#?}");
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_agent_stop_releases_the_turns_locks_while_the_session_lives() {
    let (c, repo, model) = bench();
    let (first, second) = (repo.flag("first-answer"), repo.flag("second-answer"));
    let (mut run, _) = start(
        &c,
        &repo,
        &model,
        "turns",
        json!([edit_call(&repo, "from copilot")]),
        &[&first, &second],
    );
    until(&mut run, "the edit inside the turn", || {
        copilot_holder(&repo).is_some()
    });
    let me = copilot_holder(&repo).unwrap();

    // A message waits for it: agentStop releases the turn's locks and continues the session once
    // (`{"decision": "block", "reason"}`, Copilot's AgentStopHookOutput), telling the model.
    repo.env
        .agent(OTHER)
        .args(["msg", "send", &me, "target.txt is mine next"])
        .ok();
    e2e::release(&first);
    until(&mut run, "the continued turn reaches the model", || {
        model.requests().iter().any(|r| {
            r["body"]["messages"]
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

    e2e::release(&second);
    run.ok();
    assert_eq!(repo.agents_of(&me), [(me.clone(), "FINISHED".to_string())]);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_doctor_says_whether_the_real_client_runs_the_hooks() {
    let (c, repo, model) = bench();
    let config = repo.home.join(".copilot/config.json");
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Not trusted: doctor says the hooks do not run, and indeed the edit goes through unlocked.
    std::fs::write(&config, "{}").unwrap();
    let (says, why) = repo.doctor_says("copilot");
    assert_eq!(says, "no", "{why}");
    let (run, _) = start(
        &c,
        &repo,
        &model,
        "untrusted",
        json!([edit_call(&repo, "unlocked")]),
        &[],
    );
    run.ok();
    assert_eq!(repo.env.read("target.txt"), "unlocked\n", "no hook ran");
    assert!(repo.agents_of("copilot-").is_empty(), "no hook ran");

    // Trusted: doctor says they run, and the edit is denied. Copilot rewrites its config with
    // comment lines; doctor still reads it.
    c.configure(&repo, &model);
    let (says, why) = repo.doctor_says("copilot");
    assert_eq!(says, "yes", "{why}");
    let (run, prompt) = start(
        &c,
        &repo,
        &model,
        "trusted",
        json!([edit_call(&repo, "locked")]),
        &[],
    );
    run.ok();
    assert_eq!(
        repo.env.read("target.txt"),
        "unlocked\n",
        "the edit was denied"
    );
    assert!(tool_results(&model, &prompt)[0].contains(OTHER));
    assert!(
        std::fs::read_to_string(&config).unwrap().starts_with("//"),
        "the client rewrote its config with comments"
    );
    let (says, why) = repo.doctor_says("copilot");
    assert_eq!(says, "yes", "{why}");
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_apply_patch_of_a_gpt5_model_denied_while_another_agent_holds_the_file() {
    let (c, repo, model) = bench();
    let c = Copilot {
        model: PATCH_MODEL,
        ..c
    };
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let (run, prompt) = start(
        &c,
        &repo,
        &model,
        "patch",
        json!([patch_call(&repo, "from gpt-5")]),
        &[],
    );
    run.ok();
    let asked = model.requests_with("apply_patch");
    assert!(
        asked.iter().any(|r| r["body"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["type"] == "custom" && t["custom"]["name"] == "apply_patch")),
        "the model was offered the freeform apply_patch"
    );
    assert_eq!(
        repo.env.read("target.txt"),
        "old line\n",
        "the patch was denied"
    );
    let results = tool_results(&model, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains(OTHER) && results[0].contains("target.txt"),
        "{results:#?}"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_session_start_context_reaches_the_model() {
    let (c, repo, model) = bench();
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let (run, prompt) = start(&c, &repo, &model, "context", json!([]), &[]);
    run.ok();
    let asked = model.requests_with(&prompt);
    assert!(!asked.is_empty());
    let text = asked[0]["body"]["messages"].to_string();
    let agents = repo.agents_of("copilot-");
    assert_eq!(agents.len(), 1, "{agents:?}");
    let me = &agents[0].0;
    assert!(
        text.contains(me),
        "the model is told its coord name: {text}"
    );
    assert!(
        text.contains("held by claude-x"),
        "the model is told who holds what: {text}"
    );
}
