//! Codex CLI: Claude-shaped events (plus `turn_id`, `model`); file edits arrive as `apply_patch`
//! with the raw patch in `tool_input.command` (a string, or an argv whose words hold it).

use serde_json::Value;

use super::{claude, patch};

pub use claude::{kind, render};

/// The files an edit tool writes: every path of an `apply_patch`, old and new names alike;
/// Claude's edit tools too, for Codex builds that expose them.
pub fn edited(tool: &str, input: &Value) -> Option<Vec<String>> {
    if tool != "apply_patch" {
        return claude::edited(tool, input);
    }
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
