//! Gemini CLI: `BeforeTool`, `AfterTool`, `SessionStart`, `AfterAgent`, `SessionEnd`; the edit
//! tools `write_file` and `replace`. Hooks and the MCP server live in `.gemini/settings.json`,
//! instructions in `GEMINI.md`.

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

/// Gemini CLI.
pub struct Gemini;

/// `~/.gemini` (`GEMINI_CLI_HOME` replaces the home folder).
fn gemini_dir() -> Option<PathBuf> {
    dir_from_env("GEMINI_CLI_HOME", "").map(|h| h.join(".gemini"))
}

/// The trusted-folders file: `GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else `~/.gemini/trustedFolders.json`.
fn trusted_folders() -> Option<PathBuf> {
    std::env::var_os("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| gemini_dir().map(|d| d.join("trustedFolders.json")))
}

/// The system settings: `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, else `/etc/gemini-cli/settings.json`.
fn system_settings() -> Option<PathBuf> {
    Some(
        std::env::var_os("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/gemini-cli/settings.json")),
    )
}

impl Adapter for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn product(&self) -> &'static str {
        "Gemini CLI"
    }

    fn kind(&self, event: &str) -> Kind {
        match event {
            "BeforeTool" => Kind::BeforeTool,
            "AfterTool" => Kind::AfterTool,
            "SessionStart" => Kind::SessionStart,
            "AfterAgent" => Kind::Stop,
            "SessionEnd" => Kind::SessionEnd,
            _ => Kind::Other,
        }
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        match tool {
            "write_file" | "replace" => Some(
                str_field(&args_object(input), &["file_path", "absolute_path", "path"])
                    .into_iter()
                    .collect(),
            ),
            _ => None,
        }
    }

    fn render(&self, reply: &Reply) -> Option<Value> {
        match reply {
            Reply::Allow => None,
            Reply::Deny(reason) => Some(json!({"decision": "deny", "reason": reason})),
            Reply::Block(reason) => Some(json!({"decision": "block", "reason": reason})),
            Reply::Context(text) => Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": text,
                }
            })),
            // Appended to the tool's result for the model; `systemMessage` is shown to the user.
            Reply::Notice(_, text) => Some(json!({
                "systemMessage": text,
                "hookSpecificOutput": {
                    "hookEventName": "AfterTool",
                    "additionalContext": text,
                }
            })),
        }
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, "run_shell_command", input, Some("dir_path"))
    }

    /// `gemini -p` (`--prompt`), or its input not a terminal (`echo … | gemini`): one prompt,
    /// then it exits; `-i` (`--prompt-interactive`) stays at the terminal.
    fn headless(&self, args: &[String], stdin_terminal: Option<bool>) -> bool {
        if super::has_option(args, "-i", "--prompt-interactive") {
            return false;
        }
        super::has_option(args, "-p", "--prompt") || stdin_terminal == Some(false)
    }

    fn hook_file(&self) -> &'static str {
        ".gemini/settings.json"
    }

    fn shell_git_hooks(&self) -> (bool, &'static str) {
        (
            false,
            "its shell tool runs git with core.hooksPath empty (GIT_CONFIG_COUNT): no git hook runs; coord's BeforeTool hook checks those commits instead",
        )
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "run `gemini` in {} and choose \"Trust folder\" (or add `\"{}\": \"TRUST_FOLDER\"` to {})",
            root.display(),
            root.display(),
            trusted_folders().map_or("~/.gemini/trustedFolders.json".into(), |p| p
                .display()
                .to_string())
        )
    }

    /// Gemini CLI ignores a folder's `.gemini/settings.json` (hooks included) unless folder
    /// trust is off or the folder is trusted: `GEMINI_CLI_TRUST_WORKSPACE`, then
    /// `security.folderTrust.enabled` in the user and system settings, then the longest
    /// matching rule of `trustedFolders.json`.
    fn trust(&self, root: &Path) -> Trust {
        let env = |k: &str| std::env::var(k).ok();
        if env("GEMINI_RESTRICTED_MODE").as_deref() == Some("true")
            || env("GEMINI_CLI_TRUST_WORKSPACE").as_deref() == Some("false")
        {
            return Trust::new(
                HooksRun::No,
                "the environment sets restricted mode or GEMINI_CLI_TRUST_WORKSPACE=false",
            );
        }
        if env("GEMINI_CLI_TRUST_WORKSPACE").as_deref() == Some("true") {
            return Trust::new(HooksRun::Yes, "GEMINI_CLI_TRUST_WORKSPACE=true");
        }
        for settings in [
            system_settings(),
            gemini_dir().map(|d| d.join("settings.json")),
        ]
        .into_iter()
        .flatten()
        {
            if let Config::Value(v) = read_config(&settings, true)
                && v["security"]["folderTrust"]["enabled"] == Value::Bool(false)
            {
                return Trust::new(
                    HooksRun::Yes,
                    format!("folder trust is off in {}", settings.display()),
                );
            }
        }
        let Some(path) = trusted_folders() else {
            return Trust::new(HooksRun::Unknown, "no home folder (HOME) to find ~/.gemini");
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
                        "{} does not exist: no folder is trusted yet",
                        path.display()
                    ),
                );
            }
            Config::Bad(why) => return Trust::new(HooksRun::Unknown, why),
        };
        // The longest rule whose folder holds this one decides.
        let mut best: Option<(usize, &str, &str)> = None;
        for (rule, level) in &rules {
            let level = level.as_str().unwrap_or_default();
            let folder = match level {
                "TRUST_PARENT" => Path::new(rule).parent().unwrap_or(Path::new(rule)),
                _ => Path::new(rule),
            };
            if self_and_ancestors(root).any(|d| Path::new(&d) == folder)
                && best.is_none_or(|(len, _, _)| rule.len() > len)
            {
                best = Some((rule.len(), rule, level));
            }
        }
        match best {
            Some((_, rule, "TRUST_FOLDER" | "TRUST_PARENT")) => {
                Trust::new(HooksRun::Yes, format!("{} trusts {rule}", path.display()))
            }
            Some((_, rule, level)) => Trust::new(
                HooksRun::No,
                format!("{} says {level} for {rule}", path.display()),
            ),
            None => Trust::new(
                HooksRun::No,
                format!("{} does not trust this folder", path.display()),
            ),
        }
    }

    fn instruction_file(&self) -> Option<&'static str> {
        Some("GEMINI.md")
    }

    fn hooks(&self) -> HookSet {
        let cmd = crate::init::command(self.name(), None);
        vec![
            ("SessionStart", None, cmd.clone()),
            (
                "BeforeTool",
                Some("write_file|replace|run_shell_command"),
                cmd.clone(),
            ),
            (
                "AfterTool",
                Some("write_file|replace|run_shell_command"),
                cmd.clone(),
            ),
            // Waiting for the user's approval, and the user's next prompt.
            ("Notification", None, cmd.clone()),
            ("BeforeAgent", None, cmd.clone()),
            ("AfterAgent", None, cmd.clone()),
            ("SessionEnd", None, cmd),
        ]
    }

    /// An extension folder: `gemini-extension.json` (with the MCP server and the context
    /// file's name), `hooks/hooks.json` and `GEMINI.md`.
    fn plugin(&self, spec: &Spec) -> Option<Bundle> {
        Some(self.bundle(spec))
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        // Gemini CLI reads its settings as JSON with comments (strip-json-comments).
        w.json(self.hook_file(), true, |v, f| {
            merge_hooks(v, f, &hooks, true)?;
            merge_mcp(v, f, "mcpServers")
        })
    }
}

impl Gemini {
    fn bundle(&self, spec: &Spec) -> Bundle {
        let manifest = json!({
            "name": plugin::NAME,
            "version": env!("CARGO_PKG_VERSION"),
            "description": plugin::DESCRIPTION,
            "contextFileName": "GEMINI.md",
            "mcpServers": spec.mcp_servers(),
        });
        Bundle {
            files: vec![
                File::json("gemini-extension.json", &manifest),
                File::json("hooks/hooks.json", &spec.claude_hooks(&self.hooks(), true)),
                File::text("GEMINI.md", &plugin::context()),
            ],
            install: vec!["gemini extensions install {dir}".into()],
            uninstall: vec!["gemini extensions uninstall coord".into()],
        }
    }
}
