//! GitHub Copilot CLI: `preToolUse`, `postToolUse`, `sessionStart`, `sessionEnd` (the payload
//! does not name its event: `coord init` registers each with `--event`); `toolArgs` is a JSON
//! string; the edit tools are `edit` and `create`.

use serde_json::{Value, json};

use super::{Kind, Reply, str_field};

/// The event an event name stands for.
pub fn kind(event: &str) -> Kind {
    match event {
        "preToolUse" => Kind::BeforeTool,
        "postToolUse" => Kind::AfterTool,
        "sessionStart" => Kind::SessionStart,
        "agentStop" => Kind::Stop,
        "sessionEnd" => Kind::SessionEnd,
        _ => Kind::Other,
    }
}

/// The files an edit tool writes; `None` for a tool that edits nothing.
pub fn edited(tool: &str, input: &Value) -> Option<Vec<String>> {
    match tool {
        "edit" | "create" => Some(
            str_field(input, &["path", "file_path", "filePath"])
                .into_iter()
                .collect(),
        ),
        _ => None,
    }
}

/// The JSON Copilot CLI understands: only a pre-tool decision; other output is ignored by it.
pub fn render(reply: &Reply) -> Option<Value> {
    match reply {
        Reply::Deny(reason) => Some(json!({
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        })),
        _ => None,
    }
}
