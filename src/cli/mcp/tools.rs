//! The tools of `coord mcp`, each a thin door onto the library call of the CLI command of the
//! same name: the text is what that command prints, `structuredContent` what it prints with
//! `--json`, and a refusal is its `error:` line (and `hint:`).

use std::io::Cursor;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use coord::Error;
use coord::clock::Wait;
use coord::dialogue::Dialogue;
use coord::dialogue::files::Marker;
use coord::dialogue::say::{self, DEFAULT_LOCK_WAIT, SayRequest};
use coord::edit::write;
use coord::mcp::tools::{Args, ToolSpec};
use coord::mcp::{ToolHost, ToolOutcome};
use coord::review::rules::Reviews;
use coord::status;
use coord::v3::lock::{self, DEFAULT_TTL, LockRequest, Owner};
use coord::v3::message::{self, Recipient};
use coord::v3::note::{self, NoteRequest};
use coord::v3::presence::Update;
use coord::workspace::{AgentId, Target, Workspace};

use super::super::{Described, check, dialogue, lock as lock_cmd, msg, note as note_cmd};
use super::super::{output, presence, review, unlock, write as write_cmd};

/// How long a lock or note call waits for a lock held by another agent when the call does not
/// say: not at all. A tool call blocks the client while it waits, so the agent is told who
/// holds the file at once and chooses (`wait_s`, another task, a message).
const DEFAULT_WAIT: Wait = Wait::For(std::time::Duration::ZERO);

/// Runs the tools as one agent in one workspace, in the server's session.
pub struct Host {
    ws: Workspace,
    agent: AgentId,
    session: String,
    owner: Owner,
}

impl Host {
    /// The tools of `agent` in `ws`, in stamp-card session `session`, whose locks follow `owner`.
    pub fn new(ws: Workspace, agent: AgentId, session: String, owner: Owner) -> Host {
        Host {
            ws,
            agent,
            session,
            owner,
        }
    }

    /// Locks taken through the server follow its owner: STALE the moment that process is gone.
    fn owner(&self) -> Owner {
        self.owner.clone()
    }

    /// The FILE argument of a tool that acts on one file (`write`, `note`, `presence`):
    /// relative to the workspace root (the server has no "current folder" an agent could
    /// know), or absolute inside it; a folder or a pattern is refused, as on the command line.
    fn one_file(&self, file: &str, command: &str) -> Result<Target, Error> {
        self.ws.one_file(self.ws.root(), file, command)
    }

    /// FILE arguments (`lock`, `unlock`): the files, and the claims (folders, patterns) among
    /// them, as on the command line.
    fn file_args(
        &self,
        files: &[String],
    ) -> Result<(Vec<Target>, Vec<coord::pattern::Pattern>), Error> {
        self.ws.file_args(self.ws.root(), files)
    }

    fn run(&mut self, tool: &'static ToolSpec, args: &Args<'_>) -> anyhow::Result<Done> {
        match tool.name {
            "status" | "check" | "presence" => self.workspace_tool(tool.name, args),
            "lock" | "unlock" | "write" | "note" => self.file_tool(tool.name, args),
            "msg_send" | "msg_list" | "msg_read" => self.msg_tool(tool.name, args),
            "dialogue_turn" | "dialogue_say" => self.dialogue_tool(tool.name, args),
            "review_next" => self.review_tool(tool.name, args),
            other => Err(no_implementation(other)),
        }
    }

    /// The workspace as a whole, and this agent in it: `status`, `check`, `presence`.
    fn workspace_tool(&mut self, name: &str, args: &Args<'_>) -> anyhow::Result<Done> {
        match name {
            "status" => {
                let mut st = status::collect(&self.ws);
                status::add_conflicts(&mut st, &self.ws);
                Ok(Done::new(super::super::status::render(&st, false), &st))
            }
            "check" => {
                let checked = check::collect(&self.ws, Some(&self.agent));
                let mut lines = check::agent_lines(&checked.report.agents);
                lines.extend(checked.problems.iter().map(|p| format!("warning: {p}")));
                Ok(Done::new(lines.join("\n"), &checked.report))
            }
            "presence" => {
                let current_file = match args.str("file")? {
                    Some(f) => Some(self.one_file(f, "presence")?.rel),
                    None => None,
                };
                let update = Update {
                    working_on: args.str("task")?.map(str::to_string),
                    current_file,
                    ..Default::default()
                };
                let view = presence::refresh(&self.ws, &self.agent, &update, Some(&self.session))?;
                Ok(Done::new(presence::updated_line(&view), &view))
            }
            other => Err(no_implementation(other)),
        }
    }

    /// One file or a few: `lock`, `unlock`, `write`, `note`.
    fn file_tool(&mut self, name: &str, args: &Args<'_>) -> anyhow::Result<Done> {
        match name {
            "lock" => self.lock(args),
            "unlock" => {
                let results = match args.strings("files")? {
                    Some(files) => {
                        let (targets, claims) = self.file_args(&files)?;
                        let mut results = Vec::new();
                        if !targets.is_empty() {
                            results = lock::release(&self.ws, &self.agent, Some(&targets), false)?;
                        }
                        if !claims.is_empty() {
                            results.extend(lock::claim::release(
                                &self.ws,
                                &self.agent,
                                Some(&claims),
                                false,
                            )?);
                        }
                        results
                    }
                    None => lock::release(&self.ws, &self.agent, None, false)?,
                };
                if let Some(err) = unlock::refusal(&results, &self.agent) {
                    return Err(err.into());
                }
                Ok(Done::new(
                    unlock::release_lines(&results).join("\n"),
                    &unlock::UnlockReport { results: &results },
                ))
            }
            "write" => {
                let target = self.one_file(args.req_str("file")?, "write")?;
                let content = args.req_str("content")?;
                let written = write::write(
                    &self.ws,
                    &self.agent,
                    &target,
                    &mut Cursor::new(content.as_bytes()),
                    Path::new("the tool call"),
                )?;
                Ok(Done::new(write_cmd::written_line(&written), &written))
            }
            "note" => {
                let req = NoteRequest {
                    agent: self.agent.clone(),
                    target: self.one_file(args.req_str("file")?, "note")?,
                    text: args.req_str("text")?.to_string(),
                    wait: args.wait("wait_s", DEFAULT_WAIT)?,
                    runs_in: coord::identity::runs_in(),
                };
                let noted = note::note(&self.ws, &req, &mut |_| {})?;
                Ok(Done::new(note_cmd::noted_line(&noted), &noted))
            }
            other => Err(no_implementation(other)),
        }
    }

    /// Messages: `msg_send`, `msg_list`, `msg_read`.
    fn msg_tool(&mut self, name: &str, args: &Args<'_>) -> anyhow::Result<Done> {
        match name {
            "msg_send" => {
                let to = Recipient::parse(args.req_str("to")?)?;
                let sent = message::send(&self.ws, &self.agent, &to, args.req_str("text")?)?;
                Ok(Done::new(
                    format!("Sent to {}: {}", sent.to, sent.id),
                    &msg::SentJson {
                        id: &sent.id,
                        to: &sent.to,
                        time: &sent.time,
                    },
                ))
            }
            "msg_list" => {
                let only_unread = args.bool("unread_only")?.unwrap_or(false);
                let inbox = message::try_inbox(&self.ws, &self.agent)?;
                let listed = msg::list_json(&inbox, only_unread);
                Ok(Done::new(
                    msg::list_text(&listed.messages, only_unread, false),
                    &listed,
                ))
            }
            "msg_read" => {
                let entry = message::read(&self.ws, &self.agent, args.req_str("id")?)?;
                Ok(Done::new(msg::read_text(&entry), &entry))
            }
            other => Err(no_implementation(other)),
        }
    }

    /// The dialogue: `dialogue_turn`, `dialogue_say`.
    fn dialogue_tool(&mut self, name: &str, args: &Args<'_>) -> anyhow::Result<Done> {
        match name {
            "dialogue_turn" => {
                let view = Dialogue::default_in(&self.ws)?.snapshot()?.view();
                Ok(Done::new(dialogue::render_view(&view), &view))
            }
            "dialogue_say" => {
                let markers = args
                    .strings("markers")?
                    .unwrap_or_default()
                    .iter()
                    .map(|m| Marker::parse(m))
                    .collect::<Result<Vec<_>, _>>()?;
                let req = SayRequest {
                    speaker: args.req_str("as")?.to_string(),
                    text: args.req_str("text")?.to_string(),
                    markers,
                    to: None,
                    lock_wait: DEFAULT_LOCK_WAIT,
                };
                let d = Dialogue::default_in(&self.ws)?;
                let outcome = say::say(&d, &req)?;
                let mut lines: Vec<String> = outcome
                    .warnings
                    .iter()
                    .map(|w| format!("warning: {w}"))
                    .collect();
                if let Some(r) = &outcome.repaired {
                    lines.push(format!("note: {r}"));
                }
                lines.push(dialogue::said_line(&outcome));
                Ok(Done::new(lines.join("\n"), &outcome))
            }
            other => Err(no_implementation(other)),
        }
    }

    /// The review tracker: `review_next`.
    fn review_tool(&mut self, name: &str, args: &Args<'_>) -> anyhow::Result<Done> {
        match name {
            "review_next" => {
                let topic = args.req_str("topic")?;
                let reviews = Reviews::default_for(&self.ws).acting_as(Some(self.agent.clone()));
                let n = reviews.next(topic)?;
                Ok(Done::new(review::next_text(&n, topic), &n))
            }
            other => Err(no_implementation(other)),
        }
    }

    fn lock(&mut self, args: &Args<'_>) -> anyhow::Result<Done> {
        let files = args.strings("files")?.unwrap_or_default();
        // Folders (`dir/`) and patterns in `files` are claims (contract §10).
        let (targets, claims) = self.file_args(&files)?;
        let wait = args.wait("wait_s", DEFAULT_WAIT)?;
        let ttl = args.duration("ttl_s")?.unwrap_or(DEFAULT_TTL);
        if ttl.is_zero() {
            return Err(Error::BadDuration {
                text: "0".into(),
                why: "a lock needs a TTL above zero".into(),
            }
            .into());
        }
        let req = LockRequest {
            agent: self.agent.clone(),
            targets,
            wait,
            ttl,
            backup: true,
            reason: args.str("reason")?.map(str::to_string),
            owner: Some(self.owner()),
            claims,
            runs_in: coord::identity::runs_in(),
        };
        let got = lock::acquire(&self.ws, &req, &mut |_| {})?;
        let mut lines = output::took_over_lines(&got.acquired);
        lines.extend(lock_cmd::acquired_lines(&got));
        Ok(Done::new(lines.join("\n"), &got))
    }
}

/// The error for a tool the server lists but this host does not run.
fn no_implementation(tool: &str) -> anyhow::Error {
    Error::Failed {
        message: format!("tool `{tool}` has no implementation"),
    }
    .into()
}

/// A tool's success: its text and its `--json` object.
struct Done {
    text: String,
    structured: Option<Value>,
}

impl Done {
    fn new(text: String, json: &impl Serialize) -> Done {
        Done {
            text,
            structured: output::json_value(json),
        }
    }
}

impl ToolHost for Host {
    fn call(&mut self, tool: &'static ToolSpec, args: &Map<String, Value>) -> ToolOutcome {
        let result = Args::new(tool, args)
            .map_err(anyhow::Error::from)
            .and_then(|args| self.run(tool, &args));
        match result {
            Ok(done) => ToolOutcome {
                text: done.text,
                structured: done.structured,
                is_error: false,
            },
            Err(err) => {
                let d = Described::of(&err);
                ToolOutcome {
                    text: output::error_text(&d.message, d.hint.as_deref()),
                    structured: output::json_value(&d.json()),
                    is_error: true,
                }
            }
        }
    }
}

/// A call that could not run at all (the server could not become its agent).
pub fn failed(err: &anyhow::Error) -> ToolOutcome {
    let d = Described::of(err);
    ToolOutcome {
        text: output::error_text(&d.message, d.hint.as_deref()),
        structured: output::json_value(&d.json()),
        is_error: true,
    }
}
