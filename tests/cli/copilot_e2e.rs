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

use crate::scripted::{self, Lab, LabClient, Run, script, script_holds, until};

pub(crate) use crate::scripted::OTHER;

pub(crate) const EDIT_MODEL: &str = "gpt-4.1";

const PATCH_MODEL: &str = "gpt-5.4";

pub(crate) fn lab() -> (PathBuf, Lab) {
    let bin = crate::e2e::require("copilot");
    let lab = Lab::new("copilot", "fake_openai_chat.py");
    let dot = lab.home.join(".copilot");
    std::fs::create_dir_all(&dot).unwrap();
    let config = json!({ "trustedFolders": [lab.root().display().to_string()] });
    std::fs::write(dot.join("config.json"), config.to_string()).unwrap();
    (bin, lab)
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

/// `copilot -p PROMPT --allow-all-tools` in the repository, with `model`, against the scripted
/// model.
pub(crate) fn copilot(lab: &Lab, bin: &Path, model: &str, prompt: &str) -> Command {
    let mut c = lab.command(bin);
    c.args(["-p", prompt, "--allow-all-tools"])
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_PKG_CACHE_HOME", package_cache())
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{}/v1", lab.port),
        )
        .env("COPILOT_PROVIDER_API_KEY", "coord-e2e-key")
        .env("COPILOT_MODEL", model);
    c
}

pub(crate) fn start(
    lab: &Lab,
    bin: &Path,
    name: &str,
    model: &str,
    calls: Value,
    hold: Option<&Path>,
) -> (Run, String) {
    let prompt = script(calls, hold);
    (lab.spawn(copilot(lab, bin, model, &prompt), name), prompt)
}

pub(crate) fn path_of(lab: &Lab, rel: &str) -> String {
    lab.root().join(rel).display().to_string()
}

/// The `tool` messages of the longest conversation whose prompt is `prompt`: what the client told
/// the model each tool call did.
pub(crate) fn tool_results(lab: &Lab, prompt: &str) -> Vec<String> {
    let needle = serde_json::to_string(prompt).unwrap();
    let needle = &needle[1..needle.len() - 1];
    lab.requests_with(needle)
        .into_iter()
        .map(|r| {
            r["body"]["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["role"] == "tool")
                .map(|m| match &m["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<String>>()
        })
        .max_by_key(|v| v.len())
        .unwrap_or_default()
}

/// The `copilot-*` agent holding `target.txt`, if one does.
pub(crate) fn copilot_holder(lab: &Lab) -> Option<String> {
    lab.locks_of("target.txt")
        .into_iter()
        .find_map(|l| l.strip_prefix("target.txt.lock.").map(str::to_string))
        .filter(|a| a.starts_with("copilot-"))
}

pub(crate) fn edit_call(lab: &Lab, new: &str) -> Value {
    json!(["edit", {"path": path_of(lab, "target.txt"), "old_str": "old line", "new_str": new}])
}

fn patch_call(lab: &Lab, new: &str) -> Value {
    json!([
        "apply_patch",
        format!(
            "*** Begin Patch\n*** Update File: {}\n@@\n-old line\n+{new}\n*** End Patch\n",
            path_of(lab, "target.txt")
        )
    ])
}

/// Copilot CLI (with [`EDIT_MODEL`]) on the bench, for the scenarios of `scripted.rs`.
struct Copilot(PathBuf);

impl LabClient for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn session(&self, lab: &Lab, prompt: &str) -> Command {
        copilot(lab, &self.0, EDIT_MODEL, prompt)
    }

    fn edit(&self, lab: &Lab, text: &str) -> Value {
        edit_call(lab, text)
    }

    fn write(&self, lab: &Lab, text: &str) -> Value {
        json!(["create", {"path": path_of(lab, "target.txt"), "file_text": format!("{text}\n")}])
    }

    fn results(&self, lab: &Lab, prompt: &str) -> Vec<String> {
        tool_results(lab, prompt)
    }
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_edit_denied_while_another_agent_holds_the_file_then_allowed_and_released_at_turn_end() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Both edit tools are denied, naming the holder; the file stays as it was.
    let create =
        json!(["create", {"path": path_of(&lab, "target.txt"), "file_text": "from copilot\n"}]);
    let (run, prompt) = start(
        &lab,
        &bin,
        "denied",
        EDIT_MODEL,
        json!([edit_call(&lab, "new line"), create]),
        None,
    );
    run.ok();
    assert_eq!(lab.env.read("target.txt"), "old line\n");
    assert_eq!(lab.locks_of("target.txt"), ["target.txt.lock.claude-x"]);
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 2, "{results:#?}");
    for r in &results {
        assert!(r.contains(OTHER) && r.contains("target.txt"), "{r}");
        assert!(
            r.starts_with("Denied by preToolUse hook: coord:"),
            "the hook's deny: {r}"
        );
    }

    // Released: the edit goes through, its lock held for the rest of the turn, released at its end.
    lab.env.agent(OTHER).args(["unlock", "target.txt"]).ok();
    let flag = lab.flag("turn-over");
    let (run, prompt) = start(
        &lab,
        &bin,
        "allowed",
        EDIT_MODEL,
        json!([edit_call(&lab, "new line")]),
        Some(&flag),
    );
    until("the edit inside the turn", || {
        lab.env.read("target.txt") == "new line\n" && copilot_holder(&lab).is_some()
    });
    let holder = copilot_holder(&lab).unwrap();
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
    assert!(!results[0].contains(OTHER), "{results:#?}");
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_agent_stop_releases_the_turns_locks_while_the_session_lives() {
    let (bin, lab) = lab();
    let (first, second) = (lab.flag("first-answer"), lab.flag("second-answer"));
    let prompt = script_holds(
        json!([edit_call(&lab, "from copilot")]),
        vec![&first, &second],
    );
    let run = lab.spawn(copilot(&lab, &bin, EDIT_MODEL, &prompt), "turns");
    until("the edit inside the turn", || {
        copilot_holder(&lab).is_some()
    });
    let me = copilot_holder(&lab).unwrap();

    // A message waits for it: agentStop releases the turn's locks and continues the session once
    // (`{"decision": "block", "reason"}`, Copilot's AgentStopHookOutput), telling the model.
    lab.env
        .agent(OTHER)
        .args(["msg", "send", &me, "target.txt is mine next"])
        .ok();
    std::fs::write(&first, "").unwrap();
    until("the continued turn reaches the model", || {
        lab.requests().iter().any(|r| {
            r["body"]["messages"]
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

    std::fs::write(&second, "").unwrap();
    run.ok();
    assert_eq!(lab.agents(&me), [(me.clone(), "FINISHED".to_string())]);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_doctor_says_whether_the_real_client_runs_the_hooks() {
    let (bin, lab) = lab();
    let config = lab.home.join(".copilot/config.json");
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();

    // Not trusted: doctor says the hooks do not run, and indeed the edit goes through unlocked.
    std::fs::write(&config, "{}").unwrap();
    let (says, why) = lab.doctor_says("copilot");
    assert_eq!(says, "no", "{why}");
    let (run, _) = start(
        &lab,
        &bin,
        "untrusted",
        EDIT_MODEL,
        json!([edit_call(&lab, "unlocked")]),
        None,
    );
    run.ok();
    assert_eq!(lab.env.read("target.txt"), "unlocked\n", "no hook ran");
    assert!(lab.agents("copilot-").is_empty(), "no hook ran");

    // Trusted: doctor says they run, and the edit is denied. Copilot rewrites its config with
    // comment lines; doctor still reads it.
    std::fs::write(
        &config,
        json!({ "trustedFolders": [lab.root().display().to_string()] }).to_string(),
    )
    .unwrap();
    let (says, why) = lab.doctor_says("copilot");
    assert_eq!(says, "yes", "{why}");
    let (run, prompt) = start(
        &lab,
        &bin,
        "trusted",
        EDIT_MODEL,
        json!([edit_call(&lab, "locked")]),
        None,
    );
    run.ok();
    assert_eq!(
        lab.env.read("target.txt"),
        "unlocked\n",
        "the edit was denied"
    );
    assert!(tool_results(&lab, &prompt)[0].contains(OTHER));
    assert!(
        std::fs::read_to_string(&config).unwrap().starts_with("//"),
        "the client rewrote its config with comments"
    );
    let (says, why) = lab.doctor_says("copilot");
    assert_eq!(says, "yes", "{why}");
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_apply_patch_of_a_gpt5_model_denied_while_another_agent_holds_the_file() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let (run, prompt) = start(
        &lab,
        &bin,
        "patch",
        PATCH_MODEL,
        json!([patch_call(&lab, "from gpt-5")]),
        None,
    );
    run.ok();
    let asked = lab.requests_with("apply_patch");
    assert!(
        asked.iter().any(|r| r["body"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["type"] == "custom" && t["custom"]["name"] == "apply_patch")),
        "the model was offered the freeform apply_patch"
    );
    assert_eq!(
        lab.env.read("target.txt"),
        "old line\n",
        "the patch was denied"
    );
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains(OTHER) && results[0].contains("target.txt"),
        "{results:#?}"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn two_copilot_sessions_are_two_agents_that_exclude_each_other() {
    let (bin, lab) = lab();
    scripted::two_sessions_exclude_each_other(&Copilot(bin), &lab);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_session_start_context_reaches_the_model() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let (run, prompt) = start(&lab, &bin, "context", EDIT_MODEL, json!([]), None);
    run.ok();
    let needle = serde_json::to_string(&prompt).unwrap();
    let asked = lab.requests_with(&needle[1..needle.len() - 1]);
    assert!(!asked.is_empty());
    let text = asked[0]["body"]["messages"].to_string();
    let agents = lab.agents("copilot-");
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

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_session_end_finishes_the_presence() {
    let (bin, lab) = lab();
    scripted::session_end_finishes_the_presence(&Copilot(bin), &lab);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_mcp_lock_and_own_edit_do_not_block_each_other() {
    let (bin, lab) = lab();
    let flag = lab.flag("done");
    let (run, prompt) = start(
        &lab,
        &bin,
        "mcp",
        EDIT_MODEL,
        json!([
            ["mcp:lock", {"files": ["target.txt"]}],
            edit_call(&lab, "from copilot"),
        ]),
        Some(&flag),
    );
    until("both tool calls answered", || {
        tool_results(&lab, &prompt).len() == 2
    });
    let results = tool_results(&lab, &prompt);
    assert!(
        results[0].contains("Lock acquired") || results[0].contains("target.txt"),
        "the MCP lock tool ran: {results:#?}"
    );
    assert_eq!(lab.env.read("target.txt"), "from copilot\n", "{results:#?}");
    let locks = lab.locks_of("target.txt");
    assert_eq!(locks.len(), 1, "one agent holds it: {locks:?}");
    assert!(
        locks[0].starts_with("target.txt.lock.copilot-"),
        "{locks:?}"
    );
    std::fs::write(&flag, "").unwrap();
    run.ok();
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_killed_with_sigkill_frees_its_files_within_seconds() {
    let (bin, lab) = lab();
    scripted::killed_client_frees_its_files(&Copilot(bin), &lab);
}
