//! Windsurf (the editor's agent, Cascade; no command-line agent of it runs here), from its
//! published hook format: `.windsurf/hooks.json` is `{hooks: {event: [{command, show_output?}]}}`;
//! each hook reads one JSON object on stdin, `{agent_action_name, trajectory_id, execution_id,
//! timestamp, tool_info}`. `pre_write_code` (`tool_info.file_path`, `edits`) runs before
//! Cascade writes a file and `pre_run_command` (`tool_info.command_line`, `cwd`) before it runs
//! a command: a pre-hook blocks the action by exiting with status 2, its stderr the reason.
//! `post_write_code`, `post_run_command` follow them; `post_cascade_response` ends Cascade's
//! turn. There is no session-start event (no context at the start) and no project MCP file
//! (Windsurf reads MCP servers from the user's `~/.codeium/windsurf/mcp_config.json`). Not run
//! end to end here.

use std::path::Path;

use serde_json::{Value, json};

use super::{Adapter, HooksRun, Trust, args_object, str_field};
use crate::error::Result;
use crate::hook::{Kind, Reply};
use crate::init::{HookSet, Wiring};

/// Windsurf.
pub struct Windsurf;

/// The events coord registers, in the order written.
const EVENTS: &[&str] = &[
    "pre_write_code",
    "pre_run_command",
    "post_write_code",
    "post_run_command",
    "post_cascade_response",
];

/// The tool names coord gives Cascade's two actions (its payload names the event only).
const WRITE: &str = "write_code";
const RUN: &str = "run_command";

impl Adapter for Windsurf {
    fn name(&self) -> &'static str {
        "windsurf"
    }

    fn product(&self) -> &'static str {
        "Windsurf"
    }

    fn kind(&self, event: &str) -> Kind {
        match event {
            "pre_write_code" | "pre_run_command" => Kind::BeforeTool,
            "post_write_code" | "post_run_command" => Kind::AfterTool,
            "post_cascade_response" => Kind::Stop,
            _ => Kind::Other,
        }
    }

    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>> {
        (tool == WRITE).then(|| {
            str_field(&args_object(input), &["file_path"])
                .into_iter()
                .collect()
        })
    }

    fn shell(&self, tool: &str, input: &Value) -> Option<super::Shell> {
        super::shell_call(tool, RUN, input, None)
    }

    /// Cascade's payload in the shape coord reads: `agent_action_name` is the event,
    /// `trajectory_id` the session, `tool_info` the tool's arguments; the folder is the
    /// command's `cwd`, else the written file's folder.
    fn normalize(&self, payload: Value) -> Value {
        let Value::Object(mut p) = payload else {
            return payload;
        };
        let whole = Value::Object(p.clone());
        if let Some(event) = str_field(&whole, &["agent_action_name"]) {
            p.entry("hook_event_name").or_insert(json!(event.clone()));
            let info = p.get("tool_info").cloned().unwrap_or(Value::Null);
            match event.as_str() {
                "pre_write_code" | "post_write_code" => {
                    p.insert("tool_name".into(), json!(WRITE));
                    if let Some(file) = str_field(&info, &["file_path"])
                        && let Some(dir) = Path::new(&file).parent().filter(|d| d.is_absolute())
                    {
                        p.entry("cwd").or_insert(json!(dir.to_string_lossy()));
                    }
                    p.insert("tool_input".into(), info);
                }
                "pre_run_command" | "post_run_command" => {
                    p.insert("tool_name".into(), json!(RUN));
                    if let Some(cwd) = str_field(&info, &["cwd"]) {
                        p.entry("cwd").or_insert(json!(cwd));
                    }
                    p.insert(
                        "tool_input".into(),
                        json!({"command": info.get("command_line").cloned().unwrap_or(Value::Null)}),
                    );
                }
                _ => {}
            }
        }
        if let Some(id) = str_field(&whole, &["trajectory_id"]) {
            p.entry("session_id").or_insert(json!(id));
        }
        Value::Object(p)
    }

    /// Cascade reads no JSON: a denial is exit status 2 with the reason on stderr
    /// ([`Adapter::denies_by_exit_status`]); its post-hooks cannot hold a turn.
    fn render(&self, _reply: &Reply) -> Option<Value> {
        None
    }

    fn denies_by_exit_status(&self) -> bool {
        true
    }

    fn shell_git_hooks(&self) -> (bool, &'static str) {
        (
            true,
            "its terminal runs git with the repository's own config, as far as its docs show (not run here)",
        )
    }

    fn hook_file(&self) -> &'static str {
        ".windsurf/hooks.json"
    }

    fn trust_step(&self, root: &Path) -> String {
        format!(
            "open {} in Windsurf; Cascade loads the workspace's `.windsurf/hooks.json`",
            root.display()
        )
    }

    /// Windsurf's docs name no trust gate for workspace hooks (not run end to end here).
    fn trust(&self, _root: &Path) -> Trust {
        Trust::new(
            HooksRun::Yes,
            "Windsurf loads a workspace's .windsurf/hooks.json and its docs name no trust gate; from the published format, not run end to end here",
        )
    }

    fn hooks(&self) -> HookSet {
        let cmd = crate::init::command(self.name(), None);
        EVENTS.iter().map(|e| (*e, None, cmd.clone())).collect()
    }

    /// Windsurf has no published plugin format: `coord init --client windsurf`.
    fn plugin(&self, _spec: &crate::plugin::Spec) -> Option<crate::plugin::Bundle> {
        None
    }

    fn wire(&self, w: &mut Wiring) -> Result<()> {
        let hooks = self.hooks();
        w.json(self.hook_file(), false, |v, f| {
            super::cursor::merge_flat(v, f, &hooks, false)
        })
    }
}
