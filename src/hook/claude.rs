//! Claude Code: `PreToolUse`, `PostToolUse`, `SessionStart`, `Stop`, `SessionEnd`; the edit tools
//! `Edit`, `Write`, `MultiEdit` (older installs) and `NotebookEdit`.

use serde_json::{Value, json};

use super::{Kind, Reply, str_field};

/// The event an event name stands for.
pub fn kind(event: &str) -> Kind {
    match event {
        "PreToolUse" => Kind::BeforeTool,
        "PostToolUse" => Kind::AfterTool,
        "SessionStart" => Kind::SessionStart,
        "Stop" => Kind::Stop,
        "SessionEnd" => Kind::SessionEnd,
        _ => Kind::Other,
    }
}

/// The files an edit tool writes; `None` for a tool that edits nothing.
pub fn edited(tool: &str, input: &Value) -> Option<Vec<String>> {
    let key = match tool {
        "Edit" | "Write" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        _ => return None,
    };
    Some(str_field(input, &[key]).into_iter().collect())
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
    }
}
