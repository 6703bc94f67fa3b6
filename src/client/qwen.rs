//! Qwen Code (`@qwen-code/qwen-code`, a Gemini CLI fork for open and local models): Claude-shaped
//! hooks — `PreToolUse`, `PostToolUse`, `SessionStart`, `Stop`, `SessionEnd`, each payload with
//! `hook_event_name`, `session_id` and `cwd` — and the Claude deny JSON; the edit tools
//! `write_file` and `edit` (`file_path`). Hooks and the MCP server live in
//! `.qwen/settings.json`, instructions in `QWEN.md`. Qwen Code exports no session variable to
//! its shell; the process tree names the session.

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

/// Qwen Code.
pub struct Qwen;

/// `~/.qwen` (`QWEN_HOME` replaces it).
fn qwen_dir() -> Option<PathBuf> {
    dir_from_env("QWEN_HOME", ".qwen")
}

/// The trusted-folders file: `QWEN_CODE_TRUSTED_FOLDERS_PATH`, else `~/.qwen/trustedFolders.json`.
fn trusted_folders() -> Option<PathBuf> {
    std::env::var_os("QWEN_CODE_TRUSTED_FOLDERS_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| qwen_dir().map(|d| d.join("trustedFolders.json")))
}

/// The system settings: `QWEN_CODE_SYSTEM_SETTINGS_PATH`, else `/etc/qwen-code/settings.json`.
fn system_settings() -> PathBuf {
    std::env::var_os("QWEN_CODE_SYSTEM_SETTINGS_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/qwen-code/settings.json"))
}

impl Adapter for Qwen {
    fn name(&self) -> &'static str {
        "qwen"
    }

    fn product(&self) -> &'static str {
        "Qwen Code"
    }

    fn kind(&self, event: &str) -> Kind {
        super::claude::kind(event)
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        match tool {
            // `replace` is the old name of `edit`, still accepted by Qwen Code.
            "write_file" | "edit" | "replace" => Some(
                str_field(&args_object(input), &["file_path", "absolute_path", "path"])
                    .into_iter()
                    .collect(),
            ),
            _ => None,
        }
    }

    /// Qwen Code reads Claude's shapes (`hookSpecificOutput.permissionDecision`).
    fn render(&self, reply: &Reply) -> Option<Value> {
        super::claude::render(reply)
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, "run_shell_command", input, Some("directory"))
    }

    fn hook_file(&self) -> &'static str {
        ".qwen/settings.json"
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "folder trust is off by default in Qwen Code; where it is on, run `qwen` in {} and trust the folder (or add `\"{}\": \"TRUST_FOLDER\"` to {})",
            root.display(),
            root.display(),
            trusted_folders().map_or("~/.qwen/trustedFolders.json".into(), |p| p
                .display()
                .to_string())
        )
    }

    /// Qwen Code loads a folder's hooks unless folder trust is on (`security.folderTrust.enabled`
    /// in the user or system settings; off by default) and the folder is not trusted.
    fn trust(&self, root: &Path) -> Trust {
        let mut enabled_in = None;
        for settings in [
            Some(system_settings()),
            qwen_dir().map(|d| d.join("settings.json")),
        ]
        .into_iter()
        .flatten()
        {
            if let Config::Value(v) = read_config(&settings, true)
                && v["security"]["folderTrust"]["enabled"] == Value::Bool(true)
            {
                enabled_in = Some(settings);
            }
        }
        let Some(settings) = enabled_in else {
            return Trust::new(HooksRun::Yes, "folder trust is off (Qwen Code's default)");
        };
        let Some(path) = trusted_folders() else {
            return Trust::new(HooksRun::Unknown, "no home folder (HOME) to find ~/.qwen");
        };
        let rules = match read_config(&path, true) {
            Config::Value(Value::Object(rules)) => rules,
            Config::Value(_) => {
                return Trust::new(
                    HooksRun::Unknown,
                    format!("{} is not a JSON object", path.display()),
                );
            }
            Config::Missing => {
                return Trust::new(
                    HooksRun::No,
                    format!(
                        "{} turns folder trust on and {} does not exist",
                        settings.display(),
                        path.display()
                    ),
                );
            }
            Config::Bad(why) => return Trust::new(HooksRun::Unknown, why),
        };
        // Any trusting rule whose folder holds this one trusts it.
        for (rule, level) in &rules {
            let folder = match level.as_str() {
                Some("TRUST_FOLDER") => Path::new(rule),
                Some("TRUST_PARENT") => Path::new(rule).parent().unwrap_or(Path::new(rule)),
                _ => continue,
            };
            if self_and_ancestors(root).any(|d| Path::new(&d) == folder) {
                return Trust::new(HooksRun::Yes, format!("{} trusts {rule}", path.display()));
            }
        }
        Trust::new(
            HooksRun::No,
            format!(
                "{} turns folder trust on and {} does not trust this folder",
                settings.display(),
                path.display()
            ),
        )
    }

    fn instruction_file(&self) -> Option<&'static str> {
        Some("QWEN.md")
    }

    fn hooks(&self) -> HookSet {
        let cmd = crate::init::command(self.name(), None);
        vec![
            ("SessionStart", None, cmd.clone()),
            // Qwen Code's matchers are unanchored regular expressions.
            (
                "PreToolUse",
                Some("^(write_file|edit|run_shell_command)$"),
                cmd.clone(),
            ),
            (
                "PostToolUse",
                Some("^(write_file|edit|run_shell_command)$"),
                cmd.clone(),
            ),
            ("Stop", None, cmd.clone()),
            ("SessionEnd", None, cmd),
        ]
    }

    /// An extension folder in Qwen Code's own format (Gemini CLI's, renamed):
    /// `qwen-extension.json` (with the MCP server and the context file's name),
    /// `hooks/hooks.json` (the hooks `coord init` registers) and `QWEN.md`.
    fn plugin(&self, spec: &Spec) -> Option<Bundle> {
        let manifest = json!({
            "name": plugin::NAME,
            "version": env!("CARGO_PKG_VERSION"),
            "description": plugin::DESCRIPTION,
            "contextFileName": "QWEN.md",
            "mcpServers": spec.mcp_servers(),
        });
        Some(Bundle {
            files: vec![
                File::json("qwen-extension.json", &manifest),
                File::json("hooks/hooks.json", &spec.claude_hooks(&self.hooks(), true)),
                File::text("QWEN.md", &plugin::context()),
            ],
            install: vec!["qwen extensions install {dir}".into()],
            uninstall: vec!["qwen extensions uninstall coord".into()],
        })
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        // Qwen Code reads its settings as JSON with comments (strip-json-comments).
        w.json(self.hook_file(), true, |v, f| {
            merge_hooks(v, f, &hooks, true)?;
            merge_mcp(v, f, "mcpServers")
        })
    }
}
