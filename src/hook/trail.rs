//! What a hook call leaves in the history: edits denied and made, and whether the agent's
//! client waits for its user (contract §11).
//!
//! Waiting for the user, per client (the event names each client sends):
//!
//! | client | waits | answered |
//! | --- | --- | --- |
//! | Claude Code | `Notification` (`permission_prompt`, `idle_prompt`, `elicitation_dialog`), `PermissionRequest`, `Stop` | `UserPromptSubmit` |
//! | Codex CLI | `PermissionRequest`, `Stop` | `UserPromptSubmit` |
//! | Gemini CLI | `Notification` (`ToolPermission`), `AfterAgent` | `BeforeAgent` |
//! | Copilot CLI | `notification`, `permissionRequest`, `agentStop` | `userPromptSubmitted` |
//!
//! Any tool call, session start or end also means the agent no longer waits.

use std::path::Path;

use serde_json::Value;

use super::{Client, HookCall, Kind, Reply};
use crate::history::{self, Event};
use crate::layout;
use crate::workspace::{AgentId, Workspace};

/// Before the call is handled: every event of this process names the client and session.
pub fn begin(call: &HookCall) {
    history::set_context(call.client.as_str(), call.session_id.as_deref());
}

/// After the call was handled (`reply`, `None` when coord failed): record what it did.
pub fn record(
    ws: &Workspace,
    agent: &AgentId,
    call: &HookCall,
    payload: &[u8],
    cwd: &Path,
    reply: Option<&Reply>,
) {
    let root = ws.root();
    let files = || -> Vec<String> {
        call.files
            .iter()
            .flatten()
            .filter_map(|f| {
                ws.resolve(cwd, f)
                    .ok()
                    .or_else(|| ws.resolve_unmade(cwd, f))
            })
            .map(|t| t.rel)
            .collect()
    };
    match (call.kind, reply) {
        (Kind::BeforeTool, Some(Reply::Deny(why))) => {
            for file in files() {
                history::record(
                    root,
                    Event::new(history::Kind::EditDenied, agent.id())
                        .file(&file)
                        .with("tool", call.tool.clone())
                        .with("why", why.as_str()),
                );
            }
        }
        (Kind::AfterTool, _) => {
            for file in files() {
                let abs = root.join(&file);
                history::record(
                    root,
                    Event::new(history::Kind::EditMade, agent.id())
                        .file(&file)
                        .with("tool", call.tool.clone())
                        .with("hash_before", history::file_hash(&layout::backup(&abs)))
                        .with("hash_after", history::file_hash(&abs)),
                );
            }
        }
        _ => {}
    }
    match waits(call, payload, reply) {
        Some(Some(what)) => history::set_needs_user(root, agent.id(), &what),
        Some(None) => history::clear_needs_user(root, agent.id()),
        None => {}
    }
}

/// `Some(Some(what))`: the client now waits for its user; `Some(None)`: it no longer does;
/// `None`: nothing changed.
fn waits(call: &HookCall, payload: &[u8], reply: Option<&Reply>) -> Option<Option<String>> {
    let end_of_turn = "its turn is over: waiting for a prompt".to_string();
    match call.kind {
        Kind::BeforeTool | Kind::AfterTool | Kind::SessionStart | Kind::SessionEnd => {
            return Some(None);
        }
        // A stop held back (unread messages) is not the end of the turn.
        Kind::Stop if matches!(reply, Some(Reply::Block(_))) => return None,
        Kind::Stop => return Some(Some(end_of_turn)),
        Kind::Other => {}
    }
    // Read again only for the events that say what the client waits for (never a tool's
    // payload, which may carry a whole file).
    let value = crate::client::payload::read(payload)
        .map(|p| p.value)
        .unwrap_or(Value::Null);
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str))
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    let event = call.event.as_str();
    let permission = || {
        let tool = text(&["tool_name", "toolName"]);
        Some(Some(match tool {
            Some(t) => format!("permission to use {t}"),
            None => text(&["message", "title"]).unwrap_or_else(|| "a permission".into()),
        }))
    };
    match (call.client, event) {
        (Client::Claude | Client::Gemini, "Notification") | (Client::Copilot, "notification") => {
            let kind = text(&["notification_type", "notificationType"]).unwrap_or_default();
            match kind.as_str() {
                // Said after the fact: nothing to wait for.
                "auth_success" => None,
                "elicitation_complete" | "elicitation_response" => Some(None),
                _ => Some(Some(
                    text(&["message", "title"]).unwrap_or_else(|| "attention".into()),
                )),
            }
        }
        (Client::Claude | Client::Codex, "PermissionRequest")
        | (Client::Copilot, "permissionRequest") => permission(),
        (Client::Claude | Client::Codex, "UserPromptSubmit")
        | (Client::Gemini, "BeforeAgent")
        | (Client::Copilot, "userPromptSubmitted") => Some(None),
        _ => None,
    }
}
