//! The tools `coord mcp` offers: names, descriptions an agent can act on, JSON Schemas of their
//! arguments, annotations — and [`Args`], which reads a call's arguments against them.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::clock::{self, Wait};
use crate::error::{Error, Result};

/// One tool as `tools/list` shows it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// The name used in `tools/call`.
    pub name: &'static str,
    title: &'static str,
    description: &'static str,
    /// The arguments, each `"name":{JSON Schema}`, and those it cannot do without.
    args: &'static [&'static str],
    required: &'static [&'static str],
    /// It changes nothing on disk, it may remove or replace what others wrote, calling it twice
    /// with the same arguments does no more than once.
    hints: [bool; 3],
}

const READS: [bool; 3] = [true, false, true];
const CHANGES: [bool; 3] = [false, false, true];
const ADDS: [bool; 3] = [false, false, false];

impl ToolSpec {
    /// The `tools/list` entry: name, title, description, inputSchema, annotations.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": self.properties(),
                "required": self.required,
                "additionalProperties": false,
            },
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.hints[0],
                "destructiveHint": self.hints[1],
                "idempotentHint": self.hints[2],
                "openWorldHint": false,
            },
        })
    }

    /// The arguments' JSON Schemas by name, in order.
    fn properties(&self) -> Map<String, Value> {
        serde_json::from_str(&format!("{{{}}}", self.args.join(","))).unwrap_or_default()
    }
}

const FILES: &str = r#""files":{"type":["array","string"],"items":{"type":"string","minLength":1},"minItems":1,"minLength":1,"description":"Paths relative to the workspace root (absolute paths inside it work too); one path may be given as a string. A folder ending in `/` or a pattern (`src/**/*.sql`) is a claim on every path it matches"}"#;
const WAIT_S: &str = r#""wait_s":{"type":["number","string"],"description":"How long to wait for a lock held by another agent: seconds (0 = fail at once, the default), or a duration like \"30s\", \"5m\", \"forever\""}"#;

/// Every tool, in the order `tools/list` shows them.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "status",
        title: "Workspace status",
        description: "Show everyone working in this folder: agents and their heartbeat, every lock (LIVE, STALE, CONFLICT) with its holder, handshakes, unread messages per agent, the open dialogue and open reviews. Call it first, and whenever you wonder who is doing what.",
        args: &[],
        required: &[],
        hints: READS,
    },
    ToolSpec {
        name: "check",
        title: "Other agents",
        description: "List the other agents and their state (ACTIVE, INACTIVE, FINISHED), plus any lock problem (STALE or CONFLICT). Cheaper than status when you only need to know who else is here.",
        args: &[],
        required: &[],
        hints: READS,
    },
    ToolSpec {
        name: "presence",
        title: "Say what you work on",
        description: "Refresh your presence (heartbeat now) and tell the others what you work on (task) and which file (file). The server already heartbeats for you; call this when your task changes.",
        args: &[
            r#""task":{"type":"string","description":"What you work on (working_on), e.g. \"Task_123: fix the parser\""}"#,
            r#""file":{"type":"string","description":"The file you work on (current_file), relative to the workspace root"}"#,
        ],
        required: &[],
        hints: CHANGES,
    },
    ToolSpec {
        name: "lock",
        title: "Lock files before editing",
        description: "Lock files before you edit them, all or nothing. Writes FILE.bak first. If another agent holds one, the result is an error naming the holder, since when and what they work on: then wait (wait_s), work on something else, or msg_send them. Locking again what you hold refreshes it. Your locks are released when you unlock them or when this server ends, and are STALE at once if it dies.",
        args: &[
            FILES,
            WAIT_S,
            r#""ttl_s":{"type":["number","string"],"description":"After this long without your heartbeat others may take the lock over: seconds or a duration like \"10m\" (default 5 minutes)"}"#,
            r#""reason":{"type":"string","description":"Why you lock (shown to whoever waits)"}"#,
        ],
        required: &["files"],
        hints: CHANGES,
    },
    ToolSpec {
        name: "unlock",
        title: "Release your locks",
        description: "Release your locks on files (all of your locks when files is omitted) as soon as your edit is done, so others can go on. A file nobody locked is fine (not locked); another agent's lock is refused.",
        args: &[
            r#""files":{"type":"array","items":{"type":"string","minLength":1},"description":"Paths relative to the workspace root (a folder ending in `/` or a pattern releases that claim); omit to release every lock you hold"}"#,
        ],
        required: &[],
        hints: CHANGES,
    },
    ToolSpec {
        name: "write",
        title: "Replace a locked file's content",
        description: "Replace a file's whole content, only while you hold its lock (lock it first). Writes FILE.bak, then replaces the file atomically and durably. If you do not hold the lock (or it was taken over), the file is left alone and your content is kept in FILE.rejected.<you>.",
        args: &[
            r#""file":{"type":"string","minLength":1,"description":"One file's path relative to the workspace root (a folder or a pattern is refused)"}"#,
            r#""content":{"type":"string","description":"The new content, whole"}"#,
        ],
        required: &["file", "content"],
        hints: [false, true, true],
    },
    ToolSpec {
        name: "note",
        title: "Append a note to a shared file",
        description: "Append one line `[HH:MM] [You] text` to a shared file (a log, a PROTOKOLL), under its lock: taken and released for you unless you already hold it.",
        args: &[
            r#""file":{"type":"string","minLength":1,"description":"One file's path relative to the workspace root, created when missing (a folder or a pattern is refused)"}"#,
            r#""text":{"type":"string","description":"The note, folded onto one line"}"#,
            WAIT_S,
        ],
        required: &["file", "text"],
        hints: ADDS,
    },
    ToolSpec {
        name: "msg_send",
        title: "Message another agent",
        description: "Send a message to another agent by name, or to \"all\". Use it to ask for a lock, hand work over, or say a file is free again. Returns the message id.",
        args: &[
            r#""to":{"type":"string","minLength":1,"description":"An agent name, or \"all\""}"#,
            r#""text":{"type":"string","minLength":1,"description":"The message"}"#,
        ],
        required: &["to", "text"],
        hints: ADDS,
    },
    ToolSpec {
        name: "msg_list",
        title: "Your inbox",
        description: "List the messages addressed to you (or to all), oldest first, with id, sender, time, first line and whether you read them. Read one whole with msg_read.",
        args: &[
            r#""unread_only":{"type":"boolean","description":"Only the ones you have not read (default false)"}"#,
        ],
        required: &[],
        hints: READS,
    },
    ToolSpec {
        name: "msg_read",
        title: "Read a message",
        description: "Show one message whole and mark it read for you (the id comes from msg_list).",
        args: &[
            r#""id":{"type":"string","minLength":1,"description":"The message id from msg_list"}"#,
        ],
        required: &["id"],
        hints: CHANGES,
    },
    ToolSpec {
        name: "dialogue_turn",
        title: "Whose turn in the dialogue",
        description: "Show the turn-based dialogue in agent-dialogue/: whose turn it is, the topic, how many messages, and whether the user paused or ended it. Speak with dialogue_say only when it is your turn.",
        args: &[],
        required: &[],
        hints: READS,
    },
    ToolSpec {
        name: "dialogue_say",
        title: "Speak in the dialogue",
        description: "Write the next dialogue message as participant `as` (e.g. AGENT-1) and pass the turn on. Refused unless it is that participant's turn and the user has not paused the dialogue. Markers: NEEDS-USER (passes the turn to the user), WAITING, PROPOSE-END, QUESTION-CRITICAL, AGREEMENT, DISAGREEMENT.",
        args: &[
            r#""as":{"type":"string","minLength":1,"description":"Your participant id in the dialogue, e.g. AGENT-1"}"#,
            r#""text":{"type":"string","minLength":1,"description":"The message (Markdown)"}"#,
            r#""markers":{"type":"array","items":{"type":"string","enum":["NEEDS-USER","WAITING","PROPOSE-END","QUESTION-CRITICAL","AGREEMENT","DISAGREEMENT"]},"description":"Markers appended to the message"}"#,
        ],
        required: &["as", "text"],
        hints: ADDS,
    },
    ToolSpec {
        name: "review_next",
        title: "Next step of a review",
        description: "Show who acts next in a review tracker (.metadata/reviews/active/TOPIC-tracker.md), which action (review, response, implement, verify, fix), and the handoff prompt for them.",
        args: &[
            r#""topic":{"type":"string","minLength":1,"description":"The review topic (the tracker's name without -tracker.md)"}"#,
        ],
        required: &["topic"],
        hints: READS,
    },
];

/// A tool call's arguments, read against its spec: each getter says, in an `error:` line an
/// agent can act on, what is wrong with an argument.
#[derive(Debug)]
pub struct Args<'a> {
    tool: &'static ToolSpec,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Check that every argument is one the tool has and that the required ones are there.
    pub fn new(tool: &'static ToolSpec, map: &'a Map<String, Value>) -> Result<Args<'a>> {
        let props = tool.properties();
        if let Some(unknown) = map.keys().find(|k| !props.contains_key(*k)) {
            let names: Vec<&str> = props.keys().map(String::as_str).collect();
            let names = Some(names.join(", ")).filter(|n| !n.is_empty());
            return Err(Error::bad_input(format!(
                "tool `{}` has no argument `{unknown}` (its arguments: {})",
                tool.name,
                names.as_deref().unwrap_or("none")
            )));
        }
        let args = Args { tool, map };
        match tool.required.iter().find(|r| args.get(r).is_none()) {
            Some(name) => Err(args.missing(name)),
            None => Ok(args),
        }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn missing(&self, name: &str) -> Error {
        let tool = self.tool.name;
        Error::bad_input(format!("tool `{tool}` needs the argument `{name}`"))
    }

    fn bad(&self, name: &str, what: impl std::fmt::Display) -> Error {
        let tool = self.tool.name;
        Error::bad_input(format!("argument `{name}` of tool `{tool}` {what}"))
    }

    fn wrong(&self, name: &str, want: &str, got: &Value) -> Error {
        let got = super::jsonrpc::kind(got);
        self.bad(name, format_args!("must be {want}, got {got}"))
    }

    /// The argument read by `read`, or the error saying it must be `want`; `None` when absent.
    fn typed<T>(
        &self,
        name: &str,
        want: &str,
        read: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Option<T>> {
        let typed = |v| read(v).ok_or_else(|| self.wrong(name, want, v));
        self.get(name).map(typed).transpose()
    }

    /// A string argument.
    pub fn str(&self, name: &str) -> Result<Option<&'a str>> {
        self.typed(name, "a string", Value::as_str)
    }

    /// A required string argument (presence was checked by [`Args::new`]).
    pub fn req_str(&self, name: &str) -> Result<&'a str> {
        self.str(name)?.ok_or_else(|| self.missing(name))
    }

    /// A boolean argument.
    pub fn bool(&self, name: &str) -> Result<Option<bool>> {
        self.typed(name, "true or false", Value::as_bool)
    }

    /// An array of strings; a lone string is taken as an array of one.
    pub fn strings(&self, name: &str) -> Result<Option<Vec<String>>> {
        const WANT: &str = "an array of strings";
        let items = match self.get(name) {
            None => return Ok(None),
            Some(Value::String(s)) if !s.is_empty() => return Ok(Some(vec![s.clone()])),
            Some(Value::Array(items)) if !items.is_empty() => items,
            Some(Value::Array(_)) => {
                return Err(self.bad(name, "is an empty list: name at least one"));
            }
            Some(v) => return Err(self.wrong(name, WANT, v)),
        };
        let read = |v: &Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| self.wrong(name, WANT, v))
        };
        items.iter().map(read).collect::<Result<_>>().map(Some)
    }

    /// A duration: a number of seconds, or a duration string (`30s`, `5m`).
    pub fn duration(&self, name: &str) -> Result<Option<Duration>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(s) if (0.0..1e12).contains(&s) => Ok(Some(Duration::from_secs_f64(s))),
                _ => Err(self.bad(
                    name,
                    format_args!("must be a number of seconds from 0 up, got {n}"),
                )),
            },
            Some(Value::String(s)) => clock::parse_duration(s).map(Some),
            Some(v) => Err(self.wrong(name, "seconds or a duration like \"30s\"", v)),
        }
    }

    /// A wait: like [`Args::duration`], and `"forever"`; absent means `default`.
    pub fn wait(&self, name: &str, default: Wait) -> Result<Wait> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::String(s)) => Wait::parse(s),
            Some(_) => Ok(Wait::For(self.duration(name)?.unwrap_or_default())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_argument_schema_reads() {
        for t in TOOLS {
            let props = t.properties();
            assert_eq!(props.len(), t.args.len(), "{}", t.name);
            let required_known = t.required.iter().all(|r| props.contains_key(*r));
            assert!(required_known, "{}", t.name);
        }
    }

    #[test]
    fn arguments_are_checked() {
        let lock = TOOLS.iter().find(|t| t.name == "lock").unwrap();
        let m = args(json!({"files": ["a"], "bogus": 1}));
        let e = Args::new(lock, &m).unwrap_err().to_string();
        assert!(e.contains("no argument `bogus`"), "{e}");
        let m = args(json!({}));
        let e = Args::new(lock, &m).unwrap_err().to_string();
        assert!(e.contains("needs the argument `files`"), "{e}");
        let m = args(json!({"files": [1]}));
        let a = Args::new(lock, &m).unwrap();
        assert!(a.strings("files").is_err());
        let m = args(json!({"files": [], "wait_s": -1}));
        let a = Args::new(lock, &m).unwrap();
        assert!(a.strings("files").is_err());
        assert!(a.wait("wait_s", Wait::For(Duration::ZERO)).is_err());
        let m = args(json!({"files": "a", "wait_s": 1.5, "ttl_s": "10m"}));
        let a = Args::new(lock, &m).unwrap();
        assert_eq!(a.strings("files").unwrap(), Some(vec!["a".to_string()]));
        // The schema says so: a lone path is accepted as a string, an empty one is not.
        let schema = lock.to_json()["inputSchema"]["properties"]["files"].clone();
        assert_eq!(schema["type"], json!(["array", "string"]));
        let m = args(json!({"files": ""}));
        assert!(Args::new(lock, &m).unwrap().strings("files").is_err());
        assert_eq!(
            a.wait("wait_s", Wait::For(Duration::ZERO)).unwrap(),
            Wait::For(Duration::from_millis(1500))
        );
        assert_eq!(a.duration("ttl_s").unwrap(), Some(Duration::from_secs(600)));
    }
}
