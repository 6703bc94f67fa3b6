//! Reading a client's tool calls: which files an edit tool writes, what a shell tool runs, and
//! the payloads of clients shaped otherwise than Claude Code's (Cursor, Windsurf).

use std::path::Path;

use serde_json::{Value, json};

use super::{Shell, patch, str_field};

/// The name a Cursor shell call gets once normalized.
pub const CURSOR_SHELL: &str = "Shell";
/// The tool names coord gives Cascade's two actions (its payload names the event only).
pub const WINDSURF_WRITE: &str = "write_code";
/// See [`WINDSURF_WRITE`].
pub const WINDSURF_RUN: &str = "run_command";

/// The shell call of a tool named `name`: the command under `command`, the folder under `dir_key`.
pub fn shell_call(tool: &str, name: &str, args: &Value, dir_key: Option<&str>) -> Option<Shell> {
    if tool != name {
        return None;
    }
    let command = match &args["command"] {
        Value::String(s) => s.clone(),
        // An argv: `["bash", "-lc", "script"]` runs its last word.
        Value::Array(words) => words.last()?.as_str()?.to_string(),
        _ => return None,
    };
    let dir = dir_key.and_then(|k| str_field(args, &[k]));
    Some(Shell { command, dir })
}

/// How an edit tool names the files it writes: the first string under one of the keys (`Path`;
/// `Viewable`: none when its `command` is `view`), or the paths of a patch: the first string
/// under one of the keys (`Patch`; `PatchLines`: whatever the first key present holds, a string
/// or its lines), else the raw string sent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Edit {
    Path(&'static [&'static str]),
    Viewable(&'static [&'static str]),
    Patch(&'static [&'static str]),
    PatchLines(&'static [&'static str]),
}

/// The files a call of `tool` with `args` (as sent: `input`) edits, as `edits` (tool names
/// joined by `|`) say; `None`: the tool edits nothing.
pub(crate) fn edited(
    edits: &[(&str, Edit)],
    tool: &str,
    args: &Value,
    input: &Value,
) -> Option<Vec<String>> {
    let (_, edit) = edits
        .iter()
        .find(|(names, _)| names.split('|').any(|n| n == tool))?;
    let text = match *edit {
        Edit::Viewable(_) if args["command"] == "view" => return None,
        Edit::Path(keys) | Edit::Viewable(keys) => {
            return Some(str_field(args, keys).into_iter().collect());
        }
        Edit::Patch(keys) => str_field(args, keys),
        Edit::PatchLines(keys) => keys.iter().find_map(|k| args.get(*k)).and_then(lines),
    };
    let text = text.or_else(|| input.as_str().map(str::to_string));
    Some(patch::paths(&text.unwrap_or_default()))
}

/// Cline's `run_commands`: each of its `commands` runs in the workspace, read as one script.
pub fn cline_shell(tool: &str, args: &Value) -> Option<Shell> {
    if tool != "run_commands" {
        return None;
    }
    let command = lines(&args["commands"]).or_else(|| str_field(args, &["command"]))?;
    Some(Shell { command, dir: None })
}

/// A string, or the strings of an array a line each.
fn lines(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(words) => {
            let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
            Some(words.join("\n"))
        }
        _ => None,
    }
}

/// Cursor's payload in the shape coord reads: `conversation_id` is the session, the first
/// workspace root the folder (unless the event names its `cwd`), a shell event a `Shell`
/// tool call, `afterFileEdit` a `Write`, `stop`'s `loop_count` above 0 a stop already
/// continued.
pub fn cursor_normalize(payload: Value) -> Value {
    let field = |key| str_field(&payload, &[key]);
    let (id, event) = (field("conversation_id"), field("hook_event_name"));
    let root = (field("cwd").is_none()).then(|| payload["workspace_roots"][0].clone());
    let Value::Object(mut p) = payload else {
        return payload;
    };
    if let Some(id) = id {
        p.entry("session_id").or_insert(json!(id));
    }
    if let Some(root @ Value::String(_)) = root {
        p.insert("cwd".into(), root);
    }
    let mut tool = |name: &str, key: &str| {
        let v = p.get(key).cloned().unwrap_or(Value::Null);
        p.insert("tool_name".into(), json!(name));
        p.insert("tool_input".into(), json!({ key: v }));
    };
    match event.as_deref().unwrap_or_default() {
        "beforeShellExecution" | "afterShellExecution" => tool(CURSOR_SHELL, "command"),
        "afterFileEdit" => tool("Write", "file_path"),
        "stop" => {
            let again = p.get("loop_count").and_then(Value::as_u64).unwrap_or(0) > 0;
            p.insert("stop_hook_active".into(), json!(again));
        }
        _ => {}
    }
    Value::Object(p)
}

/// Cascade's payload in the shape coord reads: `agent_action_name` is the event,
/// `trajectory_id` the session, `tool_info` the tool's arguments; the folder is the command's
/// `cwd`, else the written file's folder.
pub fn windsurf_normalize(payload: Value) -> Value {
    let event = str_field(&payload, &["agent_action_name"]);
    let id = str_field(&payload, &["trajectory_id"]);
    let Value::Object(mut p) = payload else {
        return payload;
    };
    if let Some(event) = event {
        p.entry("hook_event_name").or_insert(json!(event));
        let info = p.get("tool_info").cloned().unwrap_or(Value::Null);
        match event.as_str() {
            "pre_write_code" | "post_write_code" => {
                p.insert("tool_name".into(), json!(WINDSURF_WRITE));
                if let Some(file) = str_field(&info, &["file_path"])
                    && let Some(dir) = Path::new(&file).parent().filter(|d| d.is_absolute())
                {
                    p.entry("cwd").or_insert(json!(dir.to_string_lossy()));
                }
                p.insert("tool_input".into(), info);
            }
            "pre_run_command" | "post_run_command" => {
                p.insert("tool_name".into(), json!(WINDSURF_RUN));
                if let Some(cwd) = str_field(&info, &["cwd"]) {
                    p.entry("cwd").or_insert(json!(cwd));
                }
                let command = info["command_line"].clone();
                p.insert("tool_input".into(), json!({ "command": command }));
            }
            _ => {}
        }
    }
    if let Some(id) = id {
        p.entry("session_id").or_insert(json!(id));
    }
    Value::Object(p)
}
