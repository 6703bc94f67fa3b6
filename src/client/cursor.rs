//! Cursor (the editor; no command-line agent of it runs here), from its published hook format:
//! `.cursor/hooks.json` is `{version: 1, hooks: {event: [{command, matcher?}]}}`; each hook
//! reads one JSON object on stdin with `hook_event_name`, `conversation_id`, `generation_id` and
//! `workspace_roots`. `preToolUse` (`tool_name`, `tool_input`) runs before every agent tool,
//! the file-writing ones (`Write`, `Edit`, `StrReplace`, `MultiEdit`, `Delete`, `EditNotebook`)
//! included, and is answered `{"permission": "deny", "user_message", "agent_message"}`;
//! `beforeShellExecution` (`command`, `cwd`) is the shell's door in every Cursor with hooks;
//! `sessionStart` and `postToolUse` take `{"additional_context"}`; `stop` (`status`,
//! `loop_count`) ends the agent's turn and takes `{"followup_message"}`; `sessionEnd` ends
//! the conversation. The MCP server lives in `.cursor/mcp.json`. Not run end to end here.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{Adapter, HooksRun, Trust, args_object, str_field};
use crate::error::Result;
use crate::hook::{Kind, Reply};
use crate::init::{HookSet, Wiring, array_at, merge_mcp, object_at, runs, runs_own};

/// Cursor.
pub struct Cursor;

/// The events coord registers, in the order written.
const EVENTS: &[&str] = &[
    "sessionStart",
    // Every tool: Cursor's matcher syntax is not published precisely enough to rely on, and
    // coord allows a tool that edits nothing at the cost of a heartbeat.
    "preToolUse",
    // The shell's door in Cursor versions whose `preToolUse` does not see the shell.
    "beforeShellExecution",
    "postToolUse",
    "stop",
    "sessionEnd",
];

/// The name a shell call gets once normalized.
const SHELL: &str = "Shell";

impl Adapter for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn product(&self) -> &'static str {
        "Cursor"
    }

    fn kind(&self, event: &str) -> Kind {
        match event {
            "preToolUse" | "beforeShellExecution" => Kind::BeforeTool,
            "postToolUse" | "postToolUseFailure" | "afterShellExecution" | "afterFileEdit" => {
                Kind::AfterTool
            }
            "sessionStart" => Kind::SessionStart,
            "stop" => Kind::Stop,
            "sessionEnd" => Kind::SessionEnd,
            _ => Kind::Other,
        }
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        match tool {
            "Write" | "Edit" | "StrReplace" | "MultiEdit" | "Delete" | "EditNotebook"
            | "NotebookEdit" => Some(
                str_field(
                    &args_object(input),
                    &[
                        "file_path",
                        "path",
                        "target_file",
                        "target_notebook",
                        "notebook_path",
                    ],
                )
                .into_iter()
                .collect(),
            ),
            _ => None,
        }
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, SHELL, input, Some("working_directory"))
    }

    /// Cursor's payload in the shape coord reads: `conversation_id` is the session, the first
    /// workspace root the folder (unless the event names its `cwd`), a shell event a `Shell`
    /// tool call, `stop`'s `loop_count` above 0 a stop already continued.
    fn normalize(&self, payload: Value) -> Value {
        let Value::Object(mut p) = payload else {
            return payload;
        };
        if let Some(id) = str_field(&Value::Object(p.clone()), &["conversation_id"])
            && !p.contains_key("session_id")
        {
            p.insert("session_id".into(), json!(id));
        }
        if p.get("cwd")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && let Some(root) = p["workspace_roots"]
                .as_array()
                .and_then(|r| r.first())
                .and_then(Value::as_str)
        {
            p.insert("cwd".into(), json!(root));
        }
        let event = p
            .get("hook_event_name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        match event.as_str() {
            "beforeShellExecution" | "afterShellExecution" => {
                let command = p.get("command").cloned().unwrap_or(Value::Null);
                p.insert("tool_name".into(), json!(SHELL));
                p.insert("tool_input".into(), json!({"command": command}));
            }
            "afterFileEdit" => {
                let file = p.get("file_path").cloned().unwrap_or(Value::Null);
                p.insert("tool_name".into(), json!("Write"));
                p.insert("tool_input".into(), json!({"file_path": file}));
            }
            "stop" => {
                let again = p.get("loop_count").and_then(Value::as_u64).unwrap_or(0) > 0;
                p.insert("stop_hook_active".into(), json!(again));
            }
            _ => {}
        }
        Value::Object(p)
    }

    /// Cursor reads JSON from every hook; `{}` changes nothing.
    fn render(&self, reply: &Reply) -> Option<Value> {
        Some(match reply {
            Reply::Allow => json!({}),
            Reply::Deny(reason) => json!({
                "permission": "deny",
                "user_message": reason,
                "agent_message": reason,
            }),
            Reply::Block(reason) => json!({"followup_message": reason}),
            Reply::Context(text) | Reply::Notice(_, text) => json!({"additional_context": text}),
        })
    }

    fn shell_git_hooks(&self) -> (bool, &'static str) {
        (
            true,
            "its terminal runs git with the repository's own config, as far as its docs show (not run here)",
        )
    }

    fn hook_file(&self) -> &'static str {
        ".cursor/hooks.json"
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "open {} in Cursor and check that Cursor's Hooks settings list the hooks of `.cursor/hooks.json`",
            root.display()
        )
    }

    /// Cursor publishes no folder-trust rule for a project's hooks (not run end to end here).
    fn trust(&self, _root: &Path) -> Trust {
        Trust::new(
            HooksRun::Yes,
            "Cursor loads a project's .cursor/hooks.json and its docs name no trust gate; from the published format, not run end to end here",
        )
    }

    fn hooks(&self) -> HookSet {
        let cmd = crate::init::command(self.name(), None);
        EVENTS.iter().map(|e| (*e, None, cmd.clone())).collect()
    }

    /// Cursor has no published plugin format coord writes: `coord init --client cursor`.
    fn plugin(&self, _spec: &crate::plugin::Spec) -> Option<crate::plugin::Bundle> {
        None
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        w.json(self.hook_file(), false, |v, f| {
            merge_flat(v, f, &hooks, true)
        })?;
        w.json(".cursor/mcp.json", false, |v, f| {
            merge_mcp(v, f, "mcpServers")
        })
    }
}

/// `{hooks: {event: [{command}]}}` (Cursor, Windsurf): coord's entry added to each event that
/// does not run it yet; with `version`, `version: 1` when the file has none.
pub(super) fn merge_flat(
    doc: &mut Map<String, Value>,
    file: &str,
    set: &HookSet,
    version: bool,
) -> Result<()> {
    if version && !doc.contains_key("version") {
        doc.insert("version".into(), json!(1));
    }
    let hooks = object_at(doc, "hooks", file)?;
    for (event, _, cmd) in set {
        let entries = array_at(hooks, event, file, "hooks")?;
        if entries.iter().any(|e| runs(e, cmd) || runs_own(e, cmd)) {
            continue;
        }
        entries.push(json!({"command": cmd}));
    }
    Ok(())
}
