//! Gemini CLI: `BeforeTool`, `AfterTool`, `SessionStart`, `AfterAgent`, `SessionEnd`; the edit
//! tools `write_file` and `replace`.

use serde_json::{Value, json};

use super::{Kind, Reply, str_field};

/// The event an event name stands for.
pub fn kind(event: &str) -> Kind {
    match event {
        "BeforeTool" => Kind::BeforeTool,
        "AfterTool" => Kind::AfterTool,
        "SessionStart" => Kind::SessionStart,
        "AfterAgent" => Kind::Stop,
        "SessionEnd" => Kind::SessionEnd,
        _ => Kind::Other,
    }
}

/// The files an edit tool writes; `None` for a tool that edits nothing.
pub fn edited(tool: &str, input: &Value) -> Option<Vec<String>> {
    match tool {
        "write_file" | "replace" => Some(
            str_field(input, &["file_path", "absolute_path", "path"])
                .into_iter()
                .collect(),
        ),
        _ => None,
    }
}

/// The JSON Gemini CLI understands.
pub fn render(reply: &Reply) -> Option<Value> {
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
    }
}
