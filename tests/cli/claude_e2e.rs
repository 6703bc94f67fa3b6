//! End to end with the real Claude Code client (npm `@anthropic-ai/claude-code`, named by
//! `COORD_TEST_CLAUDE`), driven offline by a scripted Anthropic Messages API on 127.0.0.1
//! (`tests/e2e/fake_anthropic.py`), in repositories wired by `coord init --client claude`.
//! The scenarios are in `e2e.rs`; each skips, saying why, without the client or python3.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::e2e::{self, Client, FakeModel, Repo};

struct Claude(PathBuf);

fn claude() -> Option<Claude> {
    e2e::client("COORD_TEST_CLAUDE", "Claude Code").map(Claude)
}

impl Client for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn model(&self) -> &'static str {
        "fake_anthropic.py"
    }

    /// `claude -p PROMPT` with the edit, shell and coord MCP tools allowed; the user's settings
    /// approve the project's `.mcp.json` servers (a user answers that prompt once).
    fn session(&self, repo: &Repo, model: &FakeModel, prompt: &str) -> Command {
        let settings = repo.home.join(".claude/settings.json");
        if !settings.exists() {
            write(&settings, r#"{"enableAllProjectMcpServers": true}"#);
        }
        let mut c = repo.client_cmd(&self.0);
        c.args(["-p", prompt, "--allowedTools"])
            .args(["Read", "Write", "Edit", "Bash", "mcp__coord"])
            .env("ANTHROPIC_BASE_URL", model.url())
            .env("ANTHROPIC_API_KEY", "sk-ant-coord-e2e")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        c
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn claude_edit_denied_while_another_agent_holds_then_allowed_and_released_at_turn_end() {
    let Some(c) = claude() else { return };
    e2e::denied_then_allowed(&c);
}

#[test]
fn claude_two_concurrent_sessions_are_two_agents_that_exclude_each_other() {
    let Some(c) = claude() else { return };
    let _ = e2e::two_sessions_exclude_each_other(&c);
}

#[test]
fn claude_session_start_context_reaches_the_model() {
    let Some(c) = claude() else { return };
    e2e::session_start_context_reaches_the_model(&c);
}

#[test]
fn claude_session_end_finishes_the_presence() {
    let Some(c) = claude() else { return };
    e2e::session_end_finishes_the_presence(&c);
}

#[test]
fn claude_mcp_lock_and_own_edit_do_not_block_each_other() {
    let Some(c) = claude() else { return };
    e2e::mcp_lock_and_own_edit(&c);
}

#[test]
fn claude_shell_coord_lock_and_git_commit_act_as_the_session() {
    let Some(c) = claude() else { return };
    e2e::shell_commands_act_as_the_session(&c, true);
}

#[test]
fn claude_killed_client_frees_its_files_within_seconds() {
    let Some(c) = claude() else { return };
    e2e::killed_client_frees_its_files(&c, false);
}

#[test]
fn claude_shell_edit_of_a_held_file_is_told_to_the_model() {
    let Some(c) = claude() else { return };
    e2e::shell_edit_is_told_to_the_model(&c);
}
