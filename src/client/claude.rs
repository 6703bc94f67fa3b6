//! Claude Code: `PreToolUse`, `PostToolUse`, `SessionStart`, `Stop`, `SessionEnd`; the edit tools
//! `Edit`, `Write`, `MultiEdit` (older installs) and `NotebookEdit`. Hooks live in
//! `.claude/settings.json`, the MCP server in `.mcp.json`, instructions in `CLAUDE.md`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{
    Adapter, Config, HooksRun, Trust, args_object, dir_from_env, read_config, self_and_ancestors,
    str_field,
};
use crate::error::Result;
use crate::hook::{Kind, Reply};
use crate::init::{HookSet, Wiring, merge_hooks, merge_mcp};
use crate::plugin::{self, Bundle, File, Spec};

/// Claude Code.
pub struct Claude;

/// Claude Code's global config: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
fn global_config() -> Option<PathBuf> {
    dir_from_env("CLAUDE_CONFIG_DIR", "").map(|d| d.join(".claude.json"))
}

/// The tools that write files, for the hook matcher.
pub const EDIT_MATCHER: &str = "Edit|Write|MultiEdit|NotebookEdit";

/// The event an event name stands for (Codex names its events the same way).
pub fn kind(event: &str) -> Kind {
    match event {
        "PreToolUse" => Kind::BeforeTool,
        // A tool call that failed (Claude Code, Qwen Code): it may still have changed files.
        "PostToolUse" | "PostToolUseFailure" => Kind::AfterTool,
        "SessionStart" => Kind::SessionStart,
        "Stop" => Kind::Stop,
        "SessionEnd" => Kind::SessionEnd,
        _ => Kind::Other,
    }
}

/// The files a Claude edit tool writes; `None` for a tool that edits nothing.
pub fn edited(tool: &str, input: &Value) -> Option<Vec<String>> {
    let key = match tool {
        "Edit" | "Write" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        _ => return None,
    };
    Some(str_field(&args_object(input), &[key]).into_iter().collect())
}

/// The JSON Claude Code (and Codex, which reads the same shapes) understands.
pub fn render(reply: &Reply) -> Option<Value> {
    match reply {
        Reply::Allow => None,
        Reply::Deny(reason) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })),
        Reply::Block(reason) => Some(json!({"decision": "block", "reason": reason})),
        Reply::Context(text) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": text,
            }
        })),
        // The agent reads `additionalContext`; the user sees `systemMessage`.
        Reply::Notice(event, text) => Some(json!({
            "systemMessage": text,
            "hookSpecificOutput": {
                "hookEventName": event,
                "additionalContext": text,
            }
        })),
    }
}

impl Adapter for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn product(&self) -> &'static str {
        "Claude Code"
    }

    fn kind(&self, event: &str) -> Kind {
        kind(event)
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        edited(tool, input)
    }

    fn render(&self, reply: &Reply) -> Option<Value> {
        render(reply)
    }

    /// `claude -p` (`--print`): one prompt, the answer printed, and it exits.
    fn headless(&self, args: &[String], _stdin_terminal: Option<bool>) -> bool {
        super::has_option(args, "-p", "--print")
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, "Bash", input, None)
    }

    fn hook_file(&self) -> &'static str {
        ".claude/settings.json"
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "run `claude` in {} once and accept the trust dialog (or set `projects[\"{}\"].hasTrustDialogAccepted: true` in {})",
            root.display(),
            root.display(),
            global_config().map_or("~/.claude.json".into(), |p| p.display().to_string())
        )
    }

    /// Claude Code drops a project's hooks until the folder (or one above it) is trusted:
    /// `projects[PATH].hasTrustDialogAccepted` in its global config.
    fn trust(&self, root: &Path) -> Trust {
        let Some(path) = global_config() else {
            return Trust::new(
                HooksRun::Unknown,
                "no home folder (HOME) to find ~/.claude.json",
            );
        };
        let config = match read_config(&path, false) {
            Config::Value(v) => v,
            Config::Missing => {
                return Trust::new(
                    HooksRun::No,
                    format!(
                        "{} does not exist: no folder is trusted yet",
                        path.display()
                    ),
                );
            }
            Config::Bad(why) => return Trust::new(HooksRun::Unknown, why),
        };
        for dir in self_and_ancestors(root) {
            if config["projects"][&dir]["hasTrustDialogAccepted"] == Value::Bool(true) {
                return Trust::new(HooksRun::Yes, format!("{} trusts {dir}", path.display()));
            }
        }
        Trust::new(
            HooksRun::No,
            format!("{} does not trust this folder", path.display()),
        )
    }

    fn instruction_file(&self) -> Option<&'static str> {
        Some("CLAUDE.md")
    }

    fn hooks(&self) -> HookSet {
        let cmd = crate::init::command(self.name(), None);
        vec![
            ("SessionStart", None, cmd.clone()),
            // The shell too: a `git commit` through it is checked like the pre-commit guard.
            (
                "PreToolUse",
                Some("Edit|Write|MultiEdit|NotebookEdit|Bash"),
                cmd.clone(),
            ),
            // The shell too: files others hold that a command changed are reported after it.
            (
                "PostToolUse",
                Some("Edit|Write|MultiEdit|NotebookEdit|Bash"),
                cmd.clone(),
            ),
            // Waiting for the user (a permission prompt, an idle prompt) and answered.
            ("Notification", None, cmd.clone()),
            ("UserPromptSubmit", None, cmd.clone()),
            ("Stop", None, cmd.clone()),
            ("SessionEnd", None, cmd),
        ]
    }

    /// A marketplace folder (`.claude-plugin/marketplace.json`) holding the plugin `coord/`:
    /// `.claude-plugin/plugin.json`, `hooks/hooks.json`, `.mcp.json` and a skill.
    fn plugin(&self, spec: &Spec) -> Option<Bundle> {
        Some(self.bundle(spec))
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        w.json(self.hook_file(), false, |v, f| {
            merge_hooks(v, f, &hooks, false)
        })?;
        w.json(".mcp.json", false, |v, f| merge_mcp(v, f, "mcpServers"))
    }
}

/// `plugin.json` as Claude Code (and Copilot CLI, which reads it) wants it.
pub fn plugin_manifest() -> Value {
    json!({
        "name": plugin::NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "description": plugin::DESCRIPTION,
        "author": {"name": plugin::NAME},
        "license": env!("CARGO_PKG_LICENSE"),
    })
}

impl Claude {
    fn bundle(&self, spec: &Spec) -> Bundle {
        let files = vec![
            File::json(".claude-plugin/marketplace.json", &plugin::marketplace()),
            File::json("coord/.claude-plugin/plugin.json", &plugin_manifest()),
            File::json(
                "coord/hooks/hooks.json",
                &spec.claude_hooks(&self.hooks(), false),
            ),
            File::json(
                "coord/.mcp.json",
                &json!({"mcpServers": spec.mcp_servers()}),
            ),
            File::text("coord/skills/coord/SKILL.md", &plugin::skill()),
        ];
        Bundle {
            files,
            install: vec![
                "claude plugin marketplace add {dir}".into(),
                "claude plugin install coord@coord".into(),
            ],
            uninstall: vec![
                "claude plugin uninstall coord@coord".into(),
                "claude plugin marketplace remove coord".into(),
            ],
        }
    }
}
