//! The tools of `coord mcp`, each a thin door onto the library call of the CLI command of the
//! same name: the text is what that command prints, `structuredContent` what it prints with
//! `--json`, and a refusal is its `error:` line (and `hint:`).

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use coord::clock::Wait;
use coord::dialogue::Dialogue;
use coord::dialogue::say::{self, DEFAULT_LOCK_WAIT, SayRequest};
use coord::edit::write;
use coord::lock::{self, DEFAULT_TTL, LockRequest, Owner};
use coord::mcp::tool_result;
use coord::mcp::tools::{Args, ToolSpec};
use coord::message;
use coord::note;
use coord::presence::Update;
use coord::review::rules::Reviews;
use coord::status;
use coord::workspace::{AgentId, Workspace};

use super::super::{Described, check, dialogue, lock as lock_cmd, msg, note as note_cmd};
use super::super::{output, presence, review, unlock, write as write_cmd};

/// A call that names no wait does not wait: it would block the client; the agent is told who
/// holds the file at once.
const DEFAULT_WAIT: Wait = Wait::For(std::time::Duration::ZERO);

/// Runs the tools as one agent in one workspace, in the server's session.
#[derive(Clone)]
pub struct Host {
    pub(super) ws: Workspace,
    pub(super) agent: AgentId,
    pub(super) session: String,
    /// What locks taken through the server follow: STALE the moment that process is gone.
    pub(super) owner: Owner,
}

impl Host {
    /// Run `tool` with `args`: its outcome, or why it is refused (see [`failed`]).
    pub fn run(&self, tool: &'static ToolSpec, args: &Map<String, Value>) -> anyhow::Result<Value> {
        let args = Args::new(tool, args)?;
        let (ws, agent) = (&self.ws, &self.agent);
        match tool.name {
            "status" => {
                let st = status::document(ws, true);
                done(super::super::status::render(&st, false), &st)
            }
            "check" => {
                let (report, problems) = check::collect(ws, Some(agent));
                let mut lines = check::agent_lines(&report.agents);
                lines.extend(problems.iter().map(|p| format!("warning: {p}")));
                done(lines.join("\n"), &report)
            }
            "presence" => {
                let file = |f| ws.one_file(ws.root(), f, "presence");
                let update = Update {
                    current_file: args.str("file")?.map(file).transpose()?.map(|t| t.rel),
                    working_on: args.str("task")?.map(str::to_string),
                    ..Default::default()
                };
                let view = presence::refresh(ws, agent, &update, Some(&self.session))?;
                done(presence::updated_line(&view), &view)
            }
            "lock" => {
                let files = args.strings("files")?.unwrap_or_default();
                // Folders (`dir/`) and patterns in `files` are claims (contract §10).
                let (targets, claims) = ws.file_args(ws.root(), &files)?;
                let ttl = args.duration("ttl_s")?.unwrap_or(DEFAULT_TTL);
                let req = LockRequest {
                    agent: agent.clone(),
                    targets,
                    wait: args.wait("wait_s", DEFAULT_WAIT)?,
                    ttl: lock_cmd::nonzero_ttl(ttl, "0")?,
                    backup: true,
                    reason: args.str("reason")?.map(str::to_string),
                    owner: Some(self.owner.clone()),
                    claims,
                };
                // Claims reach the remote as `coord lock`'s do (contract §13).
                let got = lock::acquire(ws, &req, &lock::Reach::CLAIMS, &mut |_| {})?;
                if got.acquired.iter().any(|a| a.remote.is_some()) {
                    super::super::remote::start_renewer(ws);
                }
                super::super::remote::start_sync_if_working_on_changed(ws);
                let mut lines = output::took_over_lines(&got.acquired);
                lines.extend(lock_cmd::acquired_lines(&got));
                done(lines.join("\n"), &got)
            }
            "unlock" => {
                let files = args.strings("files")?.unwrap_or_default();
                let results = unlock::release(ws, agent, ws.root(), &files, false)?;
                if let Some(err) = unlock::refusal(&results, agent) {
                    return Err(err.into());
                }
                let doc = serde_json::json!({ "results": results });
                done(unlock::release_lines(&results).join("\n"), &doc)
            }
            "write" => {
                let target = ws.one_file(ws.root(), args.req_str("file")?, "write")?;
                let mut content = args.req_str("content")?.as_bytes();
                let name = Path::new("the tool call");
                let written = write::write(ws, agent, &target, &mut content, name)?;
                done(write_cmd::written_line(&written), &written)
            }
            "note" => {
                let target = ws.one_file(ws.root(), args.req_str("file")?, "note")?;
                let text = args.req_str("text")?;
                let wait = args.wait("wait_s", DEFAULT_WAIT)?;
                let noted = note::note(ws, agent, &target, text, wait, &mut |_| {})?;
                done(note_cmd::noted_line(&noted), &noted)
            }
            "msg_send" => {
                let to = msg::recipient_here(ws, args.req_str("to")?)?;
                let sent = message::send(ws, agent, &to, args.req_str("text")?)?;
                let doc = msg::sent_json(&sent);
                done(format!("Sent to {}: {}", sent.to, sent.id), &doc)
            }
            "msg_list" => {
                let only_unread = args.bool("unread_only")?.unwrap_or(false);
                let (listed, text) =
                    msg::list(message::inbox(ws, agent, false)?, only_unread, false);
                done(text, &listed)
            }
            "msg_read" => {
                let (doc, text) = msg::read(message::read(ws, agent, args.req_str("id")?)?)?;
                done(text, &doc)
            }
            "dialogue_turn" => {
                let view = Dialogue::default_in(ws)?.snapshot()?.view();
                done(dialogue::render_view(&view), &view)
            }
            "dialogue_say" => {
                let markers = args.strings("markers")?.unwrap_or_default();
                let req = SayRequest {
                    speaker: args.req_str("as")?.to_string(),
                    text: args.req_str("text")?.to_string(),
                    markers,
                    to: None,
                    lock_wait: DEFAULT_LOCK_WAIT,
                };
                let outcome = say::say(&Dialogue::default_in(ws)?, &req)?;
                let mut lines = dialogue::say_notes(&outcome);
                lines.push(dialogue::said_line(&outcome));
                done(lines.join("\n"), &outcome)
            }
            "review_next" => {
                let topic = args.req_str("topic")?;
                let reviews = Reviews::new(ws, None, Some(agent.clone()));
                let n = reviews.next(topic)?;
                done(review::show::next_text(&n), &n)
            }
            other => anyhow::bail!("tool `{other}` has no implementation"),
        }
    }
}

/// A tool's success: its text and its `--json` object.
fn done(text: String, json: &impl Serialize) -> anyhow::Result<Value> {
    Ok(tool_result(&text, output::json_value(json).ok(), false))
}

/// A call refused, or one that could not run at all (the server could not become its agent).
pub fn failed(err: &anyhow::Error) -> Value {
    let d = Described::of(err);
    let text = output::error_text(&d.message, d.hint.as_deref());
    tool_result(&text, output::json_value(&d.json()).ok(), true)
}
