//! GitHub Copilot CLI: `preToolUse`, `postToolUse`, `sessionStart`, `sessionEnd` (the payload
//! does not name its event: `coord init` registers each with `--event`); `toolArgs` is a JSON
//! string; the edit tools are `edit` and `create`. Hooks live in `.github/hooks/coord.json`.

use serde_json::{Map, Value, json};

use super::{Adapter, args_object, str_field};
use crate::error::Result;
use crate::hook::{Kind, Reply};
use crate::init::{Wiring, array_at, command, object_at, runs};

/// GitHub Copilot CLI.
pub struct Copilot;

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
        match tool {
            "edit" | "create" => Some(
                str_field(&args_object(input), &["path", "file_path", "filePath"])
                    .into_iter()
                    .collect(),
            ),
            _ => None,
        }
    }

    /// Only a pre-tool decision; other output is ignored by it.
    fn render(&self, reply: &Reply) -> Option<Value> {
        match reply {
            Reply::Deny(reason) => Some(json!({
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            })),
            _ => None,
        }
    }

    fn hook_file(&self) -> &'static str {
        ".github/hooks/coord.json"
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        w.json(self.hook_file(), false, merge_copilot)
    }
}

/// `.github/hooks/coord.json`: Copilot's `{version: 1, hooks: {event: [{type, bash, ...}]}}`.
fn merge_copilot(doc: &mut Map<String, Value>, file: &str) -> Result<()> {
    if !doc.contains_key("version") {
        doc.insert("version".into(), json!(1));
    }
    let hooks = object_at(doc, "hooks", file)?;
    for event in ["sessionStart", "preToolUse", "postToolUse", "sessionEnd"] {
        let cmd = command("copilot", Some(event));
        let groups = array_at(hooks, event, file, "hooks")?;
        if groups.iter().any(|g| runs(g, &cmd)) {
            continue;
        }
        groups.push(json!({
            "type": "command",
            "bash": cmd,
            "powershell": cmd,
            "timeoutSec": 30,
        }));
    }
    Ok(())
}
