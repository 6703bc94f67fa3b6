//! Codex CLI: Claude-shaped events (plus `turn_id`, `model`); file edits arrive as `apply_patch`
//! with the raw patch in `tool_input.command` (a string, or an argv whose words hold it). Hooks
//! live in `.codex/hooks.json`, the MCP server in `.codex/config.toml`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{
    Adapter, Config, HooksRun, Trust, args_object, claude, dir_from_env, read_config,
    self_and_ancestors,
};
use crate::error::{Error, Result};
use crate::hook::{Kind, Reply, patch};
use crate::init::{COORD, HookSet, Wiring, merge_hooks};
use crate::plugin::{self, Bundle, File, Spec};

/// Codex CLI.
pub struct Codex;

/// The files an edit tool writes: every path of an `apply_patch`, old and new names alike;
/// Claude's edit tools too, for Codex builds that expose them.
pub fn edited(tool: &str, input: &Value) -> Option<Vec<String>> {
    if tool != "apply_patch" {
        return claude::edited(tool, input);
    }
    let input = match (args_object(input), input) {
        // A raw patch rather than JSON arguments.
        (Value::Null, Value::String(s)) => return Some(patch::paths(s)),
        (v, _) => v,
    };
    let text = match input.get("command").or_else(|| input.get("patch")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(words)) => words
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    Some(patch::paths(&text))
}

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn product(&self) -> &'static str {
        "Codex CLI"
    }

    fn kind(&self, event: &str) -> Kind {
        claude::kind(event)
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        edited(tool, input)
    }

    fn render(&self, reply: &Reply) -> Option<Value> {
        claude::render(reply)
    }

    /// `codex exec` (or its alias, `codex e …`): one task, then it exits.
    fn headless(&self, args: &[String], _stdin_terminal: Option<bool>) -> bool {
        args.iter().any(|a| a == "exec") || args.first().is_some_and(|a| a == "e")
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, "Bash", input, Some("workdir"))
    }

    fn hook_file(&self) -> &'static str {
        ".codex/hooks.json"
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "run `codex` in {} once, trust the folder, and at \"Hooks need review\" choose \"Trust all and continue\" (or trust them with `/hooks`); `codex exec` skips untrusted hooks",
            root.display()
        )
    }

    /// Codex runs a folder's hooks only when the folder is trusted (`[projects."PATH"]
    /// trust_level = "trusted"`) and each hook was reviewed (`[hooks.state."FILE:EVENT:GROUP:HOOK"]
    /// trusted_hash`), both in `$CODEX_HOME/config.toml`.
    fn trust(&self, root: &Path) -> Trust {
        let Some(path) = dir_from_env("CODEX_HOME", ".codex").map(|d| d.join("config.toml")) else {
            return Trust::new(HooksRun::Unknown, "no home folder (HOME) to find ~/.codex");
        };
        let text = match crate::fsutil::read_capped(&path, 64 * 1024 * 1024) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Trust::new(
                    HooksRun::No,
                    format!(
                        "{} does not exist: no folder is trusted yet",
                        path.display()
                    ),
                );
            }
            Err(e) => {
                return Trust::new(
                    HooksRun::Unknown,
                    format!("cannot read {}: {e}", path.display()),
                );
            }
        };
        let doc: toml_edit::DocumentMut = match text.parse() {
            Ok(d) => d,
            Err(e) => {
                return Trust::new(
                    HooksRun::Unknown,
                    format!("{} cannot be parsed: {e}", path.display()),
                );
            }
        };
        let level = self_and_ancestors(root).find_map(|d| {
            doc.get("projects")
                .and_then(|p| p.get(d.as_str()))
                .and_then(|p| p.get("trust_level"))
                .and_then(|l| l.as_str())
                .map(|l| (d.clone(), l.to_string()))
        });
        match level {
            Some((_, l)) if l == "trusted" => {}
            Some((d, l)) => {
                return Trust::new(
                    HooksRun::No,
                    format!("{} sets trust_level = \"{l}\" for {d}", path.display()),
                );
            }
            None => {
                return Trust::new(
                    HooksRun::No,
                    format!("{} does not trust this folder", path.display()),
                );
            }
        }
        let keys = hook_keys(root);
        let trusted = keys
            .iter()
            .filter(|k| {
                let state = doc
                    .get("hooks")
                    .and_then(|h| h.get("state"))
                    .and_then(|s| s.get(k.as_str()));
                state
                    .and_then(|s| s.get("trusted_hash"))
                    .and_then(|h| h.as_str())
                    .is_some_and(|h| !h.is_empty())
                    && state
                        .and_then(|s| s.get("enabled"))
                        .and_then(|e| e.as_bool())
                        != Some(false)
            })
            .count();
        if trusted == keys.len() {
            Trust::new(
                HooksRun::Yes,
                format!(
                    "{} trusts this folder and all {} of coord's hooks (Codex asks again for a hook that changed)",
                    path.display(),
                    keys.len()
                ),
            )
        } else {
            Trust::new(
                HooksRun::No,
                format!(
                    "{} trusts this folder but only {trusted} of coord's {} hooks",
                    path.display(),
                    keys.len()
                ),
            )
        }
    }

    fn hooks(&self) -> HookSet {
        let cmd = crate::init::command(self.name(), None);
        vec![
            ("SessionStart", None, cmd.clone()),
            (
                "PreToolUse",
                Some("apply_patch|Edit|Write|Bash"),
                cmd.clone(),
            ),
            (
                "PostToolUse",
                Some("apply_patch|Edit|Write|Bash"),
                cmd.clone(),
            ),
            // Waiting for the user's approval, and the user's answer.
            ("PermissionRequest", None, cmd.clone()),
            ("UserPromptSubmit", None, cmd.clone()),
            ("Stop", None, cmd.clone()),
            ("SessionEnd", None, cmd),
        ]
    }

    /// A local marketplace (`.agents/plugins/marketplace.json`) holding the plugin `coord/`:
    /// `.codex-plugin/plugin.json` naming `hooks/hooks.json`, `.mcp.json` and a skill.
    fn plugin(&self, spec: &Spec) -> Option<Bundle> {
        Some(self.bundle(spec))
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        w.json(self.hook_file(), false, |v, f| {
            merge_hooks(v, f, &hooks, false)
        })?;
        w.toml(".codex/config.toml", |doc, rel| {
            let servers = doc
                .entry("mcp_servers")
                .or_insert_with(|| {
                    let mut t = toml_edit::Table::new();
                    t.set_implicit(true);
                    toml_edit::Item::Table(t)
                })
                .as_table_like_mut()
                .ok_or_else(|| not_a_table(rel, "mcp_servers"))?;
            if !servers.contains_key("coord") {
                let mut t = toml_edit::Table::new();
                t.insert("command", toml_edit::value(COORD));
                let mut args = toml_edit::Array::new();
                args.push("mcp");
                t.insert("args", toml_edit::value(args));
                servers.insert("coord", toml_edit::Item::Table(t));
            }
            // Hooks are on by default (the `hooks` feature is stable); `[features].codex_hooks`,
            // which earlier versions of `coord init` wrote, is a deprecated alias Codex warns
            // about on every run: take back coord's `codex_hooks = true`.
            if let Some(features) = doc.get_mut("features").and_then(|f| f.as_table_like_mut())
                && features
                    .get("codex_hooks")
                    .and_then(|v| v.as_bool())
                    .is_some_and(|on| on)
            {
                features.remove("codex_hooks");
                if features.is_empty() {
                    doc.remove("features");
                }
            }
            Ok(())
        })
    }
}

/// The keys under which Codex records the review of each of coord's hooks in
/// `.codex/hooks.json`: `/abs/.codex/hooks.json:pre_tool_use:GROUP:HOOK`.
fn hook_keys(root: &Path) -> Vec<String> {
    let file: PathBuf = root.join(".codex/hooks.json");
    let Config::Value(doc) = read_config(&file, false) else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    let Some(events) = doc["hooks"].as_object() else {
        return keys;
    };
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            for (h, hook) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                if hook["command"]
                    .as_str()
                    .is_some_and(|c| c.trim().starts_with("coord hook codex"))
                {
                    keys.push(format!("{}:{}:{g}:{h}", file.display(), snake(event)));
                }
            }
        }
    }
    keys
}

/// `PreToolUse` → `pre_tool_use`.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn not_a_table(rel: &str, key: &str) -> Error {
    Error::bad_input(format!(
        "`{rel}`: `{key}` is not a table; coord cannot merge into it (nothing was written)"
    ))
}

impl Codex {
    fn bundle(&self, spec: &Spec) -> Bundle {
        let marketplace = json!({
            "name": plugin::NAME,
            "plugins": [{
                "name": plugin::NAME,
                "source": {"source": "local", "path": format!("./{}", plugin::NAME)},
            }],
        });
        let manifest = json!({
            "name": plugin::NAME,
            "version": env!("CARGO_PKG_VERSION"),
            "description": plugin::DESCRIPTION,
            "author": {"name": plugin::NAME},
            "license": env!("CARGO_PKG_LICENSE"),
            "hooks": "./hooks/hooks.json",
            "mcpServers": "./.mcp.json",
            "skills": "./skills/",
        });
        Bundle {
            files: vec![
                File::json(".agents/plugins/marketplace.json", &marketplace),
                File::json("coord/.codex-plugin/plugin.json", &manifest),
                File::json(
                    "coord/hooks/hooks.json",
                    &spec.claude_hooks(&self.hooks(), false),
                ),
                File::json(
                    "coord/.mcp.json",
                    &json!({"mcpServers": spec.mcp_servers()}),
                ),
                File::text("coord/skills/coord/SKILL.md", &plugin::skill()),
            ],
            install: vec![
                "codex plugin marketplace add {dir}".into(),
                "codex plugin add coord@coord".into(),
            ],
            uninstall: vec![
                "codex plugin remove coord@coord".into(),
                "codex plugin marketplace remove coord".into(),
            ],
        }
    }
}
