//! GitHub Copilot CLI: `sessionStart`, `preToolUse`, `postToolUse`, `agentStop` (the main agent
//! stopped: its turn is over), `sessionEnd`. The payload does not name its event, so `coord init`
//! registers each with `--event`; the session id is `sessionId`. `toolArgs` is an object (or a
//! JSON string) for `edit`, `create` and `str_replace_editor`, and the raw patch text for
//! `apply_patch` (the edit tool Copilot offers GPT-5-family models instead of `edit`/`create`).
//! Hooks live in `.github/hooks/coord.json`; Copilot reads MCP servers from `.mcp.json`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{
    Adapter, Config, HooksRun, Trust, args_object, dir_from_env, read_config, self_and_ancestors,
    str_field,
};
use crate::error::Result;
use crate::hook::{Kind, Reply, patch};
use crate::init::{HookSet, Wiring, array_at, command, merge_mcp, object_at, runs, runs_own};
use crate::plugin::{self, Bundle, File, Spec};

/// The events `coord init` registers, in order.
pub const EVENTS: [&str; 5] = [
    "sessionStart",
    "preToolUse",
    "postToolUse",
    "agentStop",
    "sessionEnd",
];

/// GitHub Copilot CLI.
pub struct Copilot;

/// Copilot's config: `$COPILOT_HOME/config.json`, else `~/.copilot/config.json` (JSON with
/// comments: Copilot writes a `//` header into it).
fn config_file() -> Option<PathBuf> {
    dir_from_env("COPILOT_HOME", ".copilot").map(|d| d.join("config.json"))
}

impl Adapter for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn product(&self) -> &'static str {
        "Copilot CLI"
    }

    fn kind(&self, event: &str) -> Kind {
        match event {
            "preToolUse" => Kind::BeforeTool,
            "postToolUse" => Kind::AfterTool,
            "sessionStart" => Kind::SessionStart,
            "agentStop" => Kind::Stop,
            "sessionEnd" => Kind::SessionEnd,
            _ => Kind::Other,
        }
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        let args = args_object(input);
        let path = || {
            str_field(&args, &["path", "file_path", "filePath"])
                .into_iter()
                .collect()
        };
        match tool {
            "edit" | "create" => Some(path()),
            // Anthropic's editor tool: every command but `view` writes.
            "str_replace_editor" => match str_field(&args, &["command"]).as_deref() {
                Some("view") => None,
                _ => Some(path()),
            },
            "apply_patch" => match (&args, input) {
                (Value::Null, Value::String(text)) => Some(patch::paths(text)),
                _ => Some(patch::paths(
                    &str_field(&args, &["input", "patch", "command"]).unwrap_or_default(),
                )),
            },
            _ => None,
        }
    }

    /// A pre-tool decision, the session-start context (`SessionStartHookOutput`), and the
    /// agent-stop block (`AgentStopHookOutput`).
    fn render(&self, reply: &Reply) -> Option<Value> {
        match reply {
            Reply::Allow => None,
            Reply::Deny(reason) => Some(json!({
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            })),
            Reply::Block(reason) => Some(json!({"decision": "block", "reason": reason})),
            Reply::Context(text) | Reply::Notice(_, text) => {
                Some(json!({"additionalContext": text}))
            }
        }
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, "bash", input, None)
    }

    /// `copilot -p` (`--prompt`): one prompt, then it exits.
    fn headless(&self, args: &[String], _stdin_terminal: Option<bool>) -> bool {
        super::has_option(args, "-p", "--prompt")
    }

    fn hook_file(&self) -> &'static str {
        ".github/hooks/coord.json"
    }

    fn shell_git_hooks(&self) -> (bool, &'static str) {
        (
            true,
            "its shell tool sets only safe.bareRepository and core.fsmonitor through GIT_CONFIG_*; git hooks run",
        )
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "run `copilot` in {} and trust the folder for future sessions (or add `\"{}\"` to `trustedFolders` in {}; `copilot -p --trust-folder` trusts it for one run)",
            root.display(),
            root.display(),
            config_file().map_or("~/.copilot/config.json".into(), |p| p.display().to_string())
        )
    }

    /// Copilot CLI runs a repository's hooks only in a trusted folder: `COPILOT_ALLOW_ALL=true`,
    /// or the folder (or one above it) in `trustedFolders` of its config.
    fn trust(&self, root: &Path) -> Trust {
        if std::env::var("COPILOT_ALLOW_ALL").as_deref() == Ok("true") {
            return Trust::new(HooksRun::Yes, "COPILOT_ALLOW_ALL=true");
        }
        let Some(path) = config_file() else {
            return Trust::new(
                HooksRun::Unknown,
                "no home folder (HOME) to find ~/.copilot",
            );
        };
        let config = match read_config(&path, true) {
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
        let trusted: Vec<&str> = config["trustedFolders"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match self_and_ancestors(root)
            .find(|d| trusted.iter().any(|t| Path::new(t) == Path::new(d)))
        {
            Some(dir) => Trust::new(HooksRun::Yes, format!("{} trusts {dir}", path.display())),
            None => Trust::new(
                HooksRun::No,
                format!("{} does not trust this folder", path.display()),
            ),
        }
    }

    fn hooks(&self) -> HookSet {
        EVENTS
            .iter()
            .map(|e| (*e, None, command(self.name(), Some(e))))
            .collect()
    }

    /// A local marketplace (`.github/plugin/marketplace.json`) holding the plugin `coord/`:
    /// `.github/plugin/plugin.json` naming `hooks/hooks.json` (Copilot's own hook format),
    /// `.mcp.json` and a skill. Copilot loads it live from this folder: keep the folder.
    fn plugin(&self, spec: &Spec) -> Option<Bundle> {
        Some(self.bundle(spec))
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        w.json(self.hook_file(), false, |v, f| merge_copilot(v, f, &hooks))?;
        w.json(".mcp.json", false, |v, f| merge_mcp(v, f, "mcpServers"))
    }
}

/// One Copilot hook entry running `cmd`.
fn hook_entry(cmd: &str) -> Value {
    json!({
        "type": "command",
        "bash": cmd,
        // PowerShell has no `exec`.
        "powershell": cmd.strip_prefix("exec ").unwrap_or(cmd),
        "timeoutSec": 30,
    })
}

/// `.github/hooks/coord.json`: Copilot's `{version: 1, hooks: {event: [{type, bash, ...}]}}`.
fn merge_copilot(doc: &mut Map<String, Value>, file: &str, set: &HookSet) -> Result<()> {
    if !doc.contains_key("version") {
        doc.insert("version".into(), json!(1));
    }
    let hooks = object_at(doc, "hooks", file)?;
    for (event, _, cmd) in set {
        let groups = array_at(hooks, event, file, "hooks")?;
        if groups.iter().any(|g| runs(g, cmd) || runs_own(g, cmd)) {
            continue;
        }
        groups.push(hook_entry(cmd));
    }
    Ok(())
}

impl Copilot {
    fn bundle(&self, spec: &Spec) -> Bundle {
        let mut hooks = Map::new();
        for (event, _, cmd) in spec.hooks(&self.hooks()) {
            hooks.insert(event.into(), json!([hook_entry(&cmd)]));
        }
        let mut manifest = super::claude::plugin_manifest();
        if let Some(m) = manifest.as_object_mut() {
            m.insert("hooks".into(), json!("hooks/hooks.json"));
            m.insert("mcpServers".into(), json!(".mcp.json"));
            m.insert("skills".into(), json!("skills"));
        }
        Bundle {
            files: vec![
                File::json(".github/plugin/marketplace.json", &plugin::marketplace()),
                File::json("coord/.github/plugin/plugin.json", &manifest),
                File::json(
                    "coord/hooks/hooks.json",
                    &json!({"version": 1, "hooks": hooks}),
                ),
                File::json(
                    "coord/.mcp.json",
                    &json!({"mcpServers": spec.mcp_servers()}),
                ),
                File::text("coord/skills/coord/SKILL.md", &plugin::skill()),
            ],
            install: vec![
                "copilot plugin marketplace add {dir}".into(),
                "copilot plugin install coord@coord".into(),
            ],
            uninstall: vec![
                "copilot plugin uninstall coord@coord".into(),
                "copilot plugin marketplace remove coord".into(),
            ],
        }
    }
}
