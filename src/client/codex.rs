//! Codex CLI: Claude-shaped events (plus `turn_id`, `model`); file edits arrive as `apply_patch`
//! with the raw patch in `tool_input.command` (a string, or an argv whose words hold it). Hooks
//! live in `.codex/hooks.json`, the MCP server in `.codex/config.toml`.

use serde_json::Value;

use super::{Adapter, args_object, claude};
use crate::error::{Error, Result};
use crate::hook::{Kind, Reply, patch};
use crate::init::{COORD, HookSet, Wiring, merge_hooks};

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

    fn hook_file(&self) -> &'static str {
        ".codex/hooks.json"
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let cmd = crate::init::command(self.name(), None);
        let edit = Some("apply_patch|Edit|Write");
        let hooks: HookSet = vec![
            ("SessionStart", None, cmd.clone()),
            ("PreToolUse", edit, cmd.clone()),
            ("PostToolUse", edit, cmd.clone()),
            ("Stop", None, cmd.clone()),
            ("SessionEnd", None, cmd),
        ];
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

fn not_a_table(rel: &str, key: &str) -> Error {
    Error::bad_input(format!(
        "`{rel}`: `{key}` is not a table; coord cannot merge into it (nothing was written)"
    ))
}
