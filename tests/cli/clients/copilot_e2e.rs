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

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::e2e::{self, Client, FakeModel, Repo, Run};

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

    fn is_turn(&self, request: &Value) -> bool {
        request["body"]["messages"]
            .to_string()
            .contains("coord-e2e:")
            && request["body"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
    }

    /// The `tool` messages; a hook's deny is an error.
    fn tool_results(&self, request: &Value) -> Vec<(String, bool)> {
        request["body"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                let text = match &m["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let denied = text.starts_with("Denied by preToolUse hook");
                (text, denied)
            })
            .collect()
    }

    /// The loader and its native binary (the loader's child).
    fn kill9(&self, run: &mut Run) {
        run.kill9_chain();
    }
}

/// Both edit tools on `target.txt`.
fn edit_and_create(repo: &Repo) -> Value {
    let create = json!(["create", {"path": repo.abs("target.txt"), "file_text": "from copilot\n"}]);
    json!([edit_call(repo, "new line"), create])
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
    copilot_edit_denied_while_another_agent_holds_the_file_then_allowed_and_released_at_turn_end =>
        edits_denied_then_allowed(
            edit_and_create,
            |repo| edit_call(repo, "new line"),
            "new line\n",
            "Denied by preToolUse hook: coord:"
        );
    /// agentStop continues the session with `{"decision": "block", "reason"}`, Copilot's
    /// AgentStopHookOutput.
    copilot_agent_stop_releases_the_turns_locks_while_the_session_lives =>
        turn_end_releases_the_locks_while_the_session_lives(|repo| edit_call(repo, "from copilot"));
    copilot_session_start_context_reaches_the_model => session_start_context_reaches_the_model();
    two_copilot_sessions_are_two_agents_that_exclude_each_other =>
        two_sessions_exclude_each_other();
    copilot_session_end_finishes_the_presence => session_end_finishes_the_presence();
    /// userPromptSubmitted, as Copilot CLI sends it, labels the session.
    copilot_first_prompt_labels_the_session => first_prompt_labels_the_session();
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
fn copilot_doctor_says_whether_the_real_client_runs_the_hooks() {
    let c = copilot();
    let (repo, model) = e2e::setup_committed(&c);
    let config = repo.home.join(".copilot/config.json");
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Not trusted: doctor says the hooks do not run, and indeed the edit goes through unlocked.
    std::fs::write(&config, "{}").unwrap();
    let (says, why) = repo.doctor_says("copilot");
    assert_eq!(says, "no", "{why}");
    let unlocked = json!([edit_call(&repo, "unlocked")]);
    let (run, _) = e2e::start_calls(&c, &repo, &model, "untrusted", unlocked, &[]);
    run.ok();
    assert_eq!(repo.env.read("target.txt"), "unlocked\n", "no hook ran");
    assert!(repo.agents_of("copilot-").is_empty(), "no hook ran");

    // Trusted: doctor says they run, and the edit is denied. Copilot rewrites its config with
    // comment lines; doctor still reads it.
    c.configure(&repo, &model);
    let (says, why) = repo.doctor_says("copilot");
    assert_eq!(says, "yes", "{why}");
    let locked = json!([edit_call(&repo, "locked")]);
    let (run, prompt) = e2e::start_calls(&c, &repo, &model, "trusted", locked, &[]);
    run.ok();
    assert_eq!(
        repo.env.read("target.txt"),
        "unlocked\n",
        "the edit was denied"
    );
    let results = e2e::conversation_of(&c, &model, &prompt);
    assert!(results[0].0.contains(OTHER), "{results:#?}");
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
    let c = Copilot {
        model: PATCH_MODEL,
        ..copilot()
    };
    let (repo, model) = e2e::setup_committed(&c);
    repo.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let patch = json!([patch_call(&repo, "from gpt-5")]);
    let (run, prompt) = e2e::start_calls(&c, &repo, &model, "patch", patch, &[]);
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
    let results = e2e::conversation_of(&c, &model, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].0.contains(OTHER) && results[0].0.contains("target.txt"),
        "{results:#?}"
    );
}
