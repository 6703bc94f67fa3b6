//! What a hook call leaves in the history: edits denied and made, and whether the agent's
//! client waits for its user (contract §11).

use std::path::Path;

use serde_json::Value;

use crate::client::{HookCall, Kind, Reply};
use crate::history::{self, Event};
use crate::layout;
use crate::workspace::{AgentId, Workspace};

/// After the call was handled (`reply`, `None` when coord failed): record what it did.
pub fn record(ws: &Workspace, agent: &AgentId, call: &HookCall, cwd: &Path, reply: Option<&Reply>) {
    let root = ws.root();
    let edit = match (call.kind, reply) {
        (Kind::BeforeTool, Some(Reply::Deny(why))) => Some((history::Kind::EditDenied, Some(why))),
        (Kind::AfterTool, _) => Some((history::Kind::EditMade, None)),
        _ => None,
    };
    if let Some((kind, why)) = edit {
        let resolve = |f: &String| {
            ws.resolve(cwd, f)
                .ok()
                .or_else(|| ws.resolve_unmade(cwd, f))
        };
        for file in call.files.iter().flatten().filter_map(resolve) {
            let (file, abs) = (&file.rel, root.join(&file.rel));
            let event = Event::new(kind, agent.id()).file(file);
            let event = event.with("tool", call.tool.clone());
            let event = match why {
                Some(why) => event.with("why", why.as_str()),
                None => event
                    .with("hash_before", history::file_hash(&layout::backup(&abs)))
                    .with("hash_after", history::file_hash(&abs)),
            };
            history::record(root, event);
        }
    }
    if let Some(what) = waits(call, reply) {
        history::set_needs_user(root, agent.id(), what.as_deref());
    }
    if call.kind == Kind::Prompt {
        keep_first_prompt(ws, agent, call);
    }
}

const PROMPT_CHARS: usize = 40;

/// Keep the session's first prompt in its presence, once (best effort: a label, nothing more).
fn keep_first_prompt(ws: &Workspace, agent: &AgentId, call: &HookCall) {
    let had = crate::presence::read(ws.root(), agent.id())
        .ok()
        .flatten()
        .is_some_and(|p| p.field("prompt").is_some());
    if had {
        return;
    }
    let prompt = call.payload.get("prompt").and_then(Value::as_str);
    let Some(prompt) = prompt.map(short_prompt).filter(|p| !p.is_empty()) else {
        return;
    };
    let update = crate::presence::Update {
        extras: vec![
            ("client", call.client.as_str().to_string()),
            ("prompt", prompt),
        ],
        ..Default::default()
    };
    let write = || -> crate::Result<()> {
        ws.ensure_state_dir()?;
        let _mutex = ws.lock_mutex()?;
        crate::presence::write(ws.root(), agent, &update).map(|_| ())
    };
    if let Err(e) = write() {
        eprintln!("warning: coord cannot keep this session's first prompt: {e}");
    }
}

/// A prompt as one line, without Gemini CLI's `<hook_context>…</hook_context>`, cut with `…`.
fn short_prompt(text: &str) -> String {
    let mut text = text.trim_start();
    while let Some(rest) = text.strip_prefix("<hook_context>") {
        text = rest
            .split_once("</hook_context>")
            .map_or("", |(_, after)| after)
            .trim_start();
    }
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= PROMPT_CHARS {
        return line;
    }
    let cut: String = line.chars().take(PROMPT_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// `Some(Some(what))`: the client now waits for its user; `Some(None)`: it no longer does;
/// `None`: nothing changed.
fn waits(call: &HookCall, reply: Option<&Reply>) -> Option<Option<String>> {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| call.payload.get(*k).and_then(Value::as_str))
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    match call.kind {
        Kind::BeforeTool
        | Kind::AfterTool
        | Kind::SessionStart
        | Kind::SessionEnd
        | Kind::Prompt => Some(None),
        // A stop held back (unread messages) is not the end of the turn.
        Kind::Stop if matches!(reply, Some(Reply::Block(_))) => None,
        // Nobody to ask: the client exits (`claude -p`, `codex exec`).
        Kind::Stop if call.headless => Some(None),
        Kind::Stop => Some(Some("its turn is over: waiting for a prompt".into())),
        Kind::Notification => {
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
        Kind::Permission => Some(Some(match text(&["tool_name", "toolName"]) {
            Some(t) => format!("permission to use {t}"),
            None => text(&["message", "title"]).unwrap_or_else(|| "a permission".into()),
        })),
        Kind::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::short_prompt;

    #[test]
    fn prompts_are_one_short_line_without_the_hook_context() {
        assert_eq!(short_prompt("fix  the\nlogin bug"), "fix the login bug");
        assert_eq!(
            short_prompt("<hook_context>coord: you are agent x</hook_context>\n\nwrite target.txt"),
            "write target.txt"
        );
        let long = short_prompt(&"word ".repeat(30));
        assert_eq!(long.chars().count(), 40);
        assert!(long.ends_with("word…"), "{long}");
        assert_eq!(short_prompt("<hook_context>unclosed"), "");
    }
}
