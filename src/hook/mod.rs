//! Agent clients lock by themselves: one adapter per client's hook payload format, onto the
//! same protocol calls as the command line.
//!
//! A client runs `coord hook CLIENT` at points of its loop and writes one JSON object on stdin.
//! [`parse`] reads it into a [`HookCall`] (which event, which session, which folder, which
//! files a tool is about to edit); [`act::handle`] does what the event asks (lock, heartbeat,
//! clock in, release, clock out) and answers a [`Reply`]; [`render`] writes that reply in the
//! client's own format. Nothing here locks, heartbeats or messages by itself: every step is a
//! call into [`crate::v3`].

pub mod act;
pub mod gitcmd;
pub mod patch;
pub mod payload;
pub mod trail;

use std::path::PathBuf;

use serde_json::Value;

pub use crate::client::Client;
use crate::client::str_field;
use crate::error::{Error, Result};
use crate::workspace::AgentId;

/// What an event is about, whatever the client calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool is about to run.
    BeforeTool,
    /// A tool ran.
    AfterTool,
    /// A session starts.
    SessionStart,
    /// The agent stops answering (its turn is over).
    Stop,
    /// The session ends.
    SessionEnd,
    /// Anything else: nothing to do.
    Other,
}

/// One hook call, as read from the client's payload.
#[derive(Debug, Clone)]
pub struct HookCall {
    /// Which client.
    pub client: Client,
    /// The event name as the client wrote it (or as given with `--event`).
    pub event: String,
    /// What the event is about.
    pub kind: Kind,
    /// The client's session id, when the payload has one.
    pub session_id: Option<String>,
    /// The client's working folder.
    pub cwd: Option<PathBuf>,
    /// The tool, for tool events.
    pub tool: Option<String>,
    /// The files the tool edits, as written in the payload; `None` when the tool edits nothing.
    pub files: Option<Vec<String>>,
    /// The command, when the tool is the client's shell.
    pub shell: Option<crate::client::Shell>,
    /// A `Stop` that the client already continued once because of a hook.
    pub stop_hook_active: bool,
    /// The client runs with nobody at it (`claude -p`, `codex exec`: see
    /// [`crate::identity::headless`]; set by the caller): the end of its turn asks no one.
    pub headless: bool,
    /// Why the payload is not JSON, when it is not: it was read only in part (see
    /// [`payload`]), and is judged on what it names without anything being written
    /// ([`act::judge_unread`]).
    pub fault: Option<String>,
}

/// What coord answers the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Go ahead (nothing printed).
    Allow,
    /// Refuse the tool call, with why.
    Deny(String),
    /// Do not stop yet, with why.
    Block(String),
    /// Tell the agent this at the start of its session.
    Context(String),
    /// Tell the agent this right after a tool ran (a shell command changed files others hold):
    /// the event as the client named it (`PostToolUse`, `PostToolUseFailure`), and the text.
    Notice(String, String),
}

/// The largest payload read (a `Write` carries the whole file).
pub const PAYLOAD_CAP: u64 = 64 * 1024 * 1024;

/// Read one payload. `event` (from `--event`) wins over the payload's `hook_event_name`.
///
/// A payload that is not JSON but names its event is read as far as it can be (see
/// [`payload`]), with [`HookCall::fault`] saying why.
///
/// # Errors
///
/// [`Error::BadInput`] when the bytes are not one JSON object, or no event is named.
pub fn parse(client: Client, input: &[u8], event: Option<&str>) -> Result<HookCall> {
    let not_json = |why: &str| Error::bad_input(format!("the hook payload is not JSON: {why}"));
    let read = payload::read(input).map_err(|why| not_json(&why))?;
    let Value::Object(_) = read.value else {
        return Err(Error::bad_input("the hook payload is not a JSON object"));
    };
    let adapter = client.adapter();
    let value = adapter.normalize(read.value);
    let event = event
        .map(str::to_string)
        .or_else(|| str_field(&value, &["hook_event_name", "hookEventName"]))
        .ok_or_else(|| match &read.fault {
            Some(why) => not_json(why),
            None => Error::bad_input(
                "the hook payload names no event (`hook_event_name`); pass `--event`",
            ),
        })?;
    let kind = adapter.kind(&event);
    let tool = str_field(&value, &["tool_name", "toolName"]);
    // As sent: an object, or a string (Copilot's JSON-encoded arguments, or a raw patch).
    let input = value
        .get("tool_input")
        .or_else(|| value.get("toolArgs"))
        .unwrap_or(&Value::Null);
    let files = match (kind, &tool) {
        (Kind::BeforeTool | Kind::AfterTool, Some(t)) => adapter.edited(t, input),
        _ => None,
    };
    let shell = match (kind, &tool) {
        (Kind::BeforeTool | Kind::AfterTool, Some(t)) => adapter.shell(t, input),
        _ => None,
    };
    Ok(HookCall {
        client,
        kind,
        session_id: str_field(&value, &["session_id", "sessionId"]),
        cwd: str_field(&value, &["cwd"]).map(PathBuf::from),
        tool,
        files,
        shell,
        stop_hook_active: value
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        headless: false,
        event,
        fault: read.fault,
    })
}

/// The agent of a session (see [`crate::identity::agent_for`]: the rule lives there).
pub use crate::identity::agent_for;

/// The agent of a client whose payload carries no session id: the client process that ran the
/// hook stands for the session (`copilot-p4242`; past the `sh -c` it may run hooks through).
pub fn agent_for_parent(client: Client) -> Option<AgentId> {
    let pid = match crate::identity::hook_client_process() {
        Some(p) => p.pid,
        None => crate::host::invoker(),
    };
    AgentId::parse(&format!("{}-p{pid}", client.as_str())).ok()
}

/// The reply as the client's JSON, `None` when there is nothing to print.
pub fn render(client: Client, reply: &Reply) -> Option<String> {
    let value = client.adapter().render(reply)?;
    serde_json::to_string(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copilot_tool_args_are_a_json_string() {
        let call = parse(
            Client::Copilot,
            br#"{"timestamp":1,"cwd":"/p","toolName":"edit","toolArgs":"{\"path\":\"/p/a.txt\"}"}"#,
            Some("preToolUse"),
        )
        .unwrap();
        assert_eq!(call.kind, Kind::BeforeTool);
        assert_eq!(call.files, Some(vec!["/p/a.txt".to_string()]));
    }

    #[test]
    fn malformed_payloads_are_bad_input() {
        for bad in [&b""[..], b"[]", b"{", b"{\"cwd\":\"/\"}", b"\xff"] {
            assert!(matches!(
                parse(Client::Claude, bad, None),
                Err(Error::BadInput { .. })
            ));
        }
    }
}
