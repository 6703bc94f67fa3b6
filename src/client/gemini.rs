//! Gemini CLI: `BeforeTool`, `AfterTool`, `SessionStart`, `AfterAgent`, `SessionEnd`; the edit
//! tools `write_file` and `replace`. Hooks and the MCP server live in `.gemini/settings.json`,
//! instructions in `GEMINI.md`.

use serde_json::{Value, json};

use super::{Adapter, args_object, str_field};
use crate::error::Result;
use crate::hook::{Kind, Reply};
use crate::init::{HookSet, Wiring, merge_hooks, merge_mcp};

/// Gemini CLI.
pub struct Gemini;

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
        }
    }

    fn hook_file(&self) -> &'static str {
        ".gemini/settings.json"
    }

    fn instruction_file(&self) -> Option<&'static str> {
        Some("GEMINI.md")
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let cmd = crate::init::command(self.name(), None);
        let edit = Some("write_file|replace");
        let hooks: HookSet = vec![
            ("SessionStart", None, cmd.clone()),
            ("BeforeTool", edit, cmd.clone()),
            ("AfterTool", edit, cmd.clone()),
            ("AfterAgent", None, cmd.clone()),
            ("SessionEnd", None, cmd),
        ];
        // Gemini CLI reads its settings as JSON with comments (strip-json-comments).
        w.json(self.hook_file(), true, |v, f| {
            merge_hooks(v, f, &hooks, true)?;
            merge_mcp(v, f, "mcpServers")
        })
    }
}
