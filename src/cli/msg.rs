//! `coord msg send|list|read|wait`: messages between agents (one file each under
//! `.coord/messages/`, read marks per reader).

use clap::{Args, Subcommand};

use coord::clock::{self, Wait};
use coord::error::Refusal;
use coord::message::{self, Inbox, InboxEntry};
use coord::presence;
use coord::{Error, ExitCode};

use super::Ctx;
use super::output::{self, Cell};

/// Send, list, read and wait for messages between agents
///
///   coord -a claude msg send gemini "SHARED.txt is free again"
///   coord -a claude msg send all - < summary.md
///   coord -a gemini msg list --unread
///   coord -a gemini msg read 0mkx2a9q1b3cd
///   coord -a gemini msg wait --timeout 5m
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct MsgArgs {
    #[command(subcommand)]
    command: MsgCommand,
}

#[derive(Debug, Subcommand)]
enum MsgCommand {
    /// Send a message to one agent or to `all`; prints its id
    ///
    ///   coord -a claude msg send gemini "please review section 2"
    ///   echo "build is green" | coord -a claude msg send all -
    #[command(verbatim_doc_comment)]
    Send {
        /// The recipient: an agent name, or `all`
        #[arg(value_name = "PARTNER|all")]
        to: String,
        /// The message (`-` reads it from stdin)
        #[arg(value_name = "TEXT")]
        text: String,
    },
    /// List this agent's inbox (messages to it or to `all`), oldest first
    ///
    ///   coord -a gemini msg list
    ///   coord -a gemini msg list --unread --json
    #[command(verbatim_doc_comment)]
    List {
        /// Only unread messages
        #[arg(long)]
        unread: bool,
    },
    /// Print a message whole and mark it read (for this agent only)
    ///
    ///   coord -a gemini msg read 0mkx2a9q1b3cd
    #[command(verbatim_doc_comment)]
    Read {
        /// The message id (from `coord msg list`)
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Block until this agent has an unread message (exit 3 on timeout); lists the unread ones
    ///
    ///   coord -a gemini msg wait --timeout 10m && coord -a gemini msg list --unread
    #[command(verbatim_doc_comment)]
    Wait {
        /// Give up after this long (`300ms`, `30s`, `5m`, `forever`; default forever)
        #[arg(long, value_name = "DUR")]
        timeout: Option<String>,
    },
}

/// The recipient `to` of a message sent in `ws` (`all`, or an agent id). An agent that lives in
/// a workspace inside this one reads its inbox there, never here: refused before anything is
/// written, rather than left unread.
pub fn recipient_here(ws: &coord::workspace::Workspace, to: &str) -> Result<String, Error> {
    let to = message::recipient(to)?;
    if to != message::ALL
        && let Some(home) = coord::status::nested_home(ws, &to)
    {
        let (root, quoted) = (&home.root, coord::shell::arg(&home.root));
        let why = format!(
            "`{to}` works in the nested workspace `{root}/`, which keeps its own messages: it would never read this one"
        );
        let hint = format!("send it there: `coord -C {quoted} msg send {to} …`");
        return Err(Error::refused(Refusal::AgentElsewhere, why, Some(hint)));
    }
    Ok(to)
}

/// `msg send --json`: the message id, the recipient, when it was sent.
pub fn sent_json(sent: &message::Message) -> serde_json::Value {
    serde_json::json!({ "id": sent.id, "to": sent.to, "time": sent.time })
}

pub fn run(args: MsgArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    match args.command {
        MsgCommand::Send { to, text } => {
            let to = recipient_here(&ws, &to)?;
            let sent = message::send(&ws, &ctx.agent()?, &to, &text_or_stdin(&text)?)?;
            if to != message::ALL
                && matches!(presence::read(ws.root(), &to), Ok(None))
                && !ctx.quiet
            {
                output::diag(&format!(
                    "note: `{to}` has no presence in this workspace yet; the message waits in its inbox"
                ));
            }
            ctx.emit(&sent_json(&sent), || sent.id.clone());
        }
        MsgCommand::List { unread } => {
            let inbox = message::inbox(&ws, &ctx.agent()?, false)?;
            for s in &inbox.skipped {
                let (path, why) = (output::clean(&s.path), output::clean(&s.why));
                output::diag(&format!("warning: skipped `{path}`: {why}"));
            }
            let (listed, text) = list(inbox, unread, output::color_enabled());
            ctx.emit(&listed, || text);
        }
        MsgCommand::Read { id } => {
            let (doc, text) = read(message::read(&ws, &ctx.agent()?, &id)?)?;
            ctx.emit(&doc, || text);
        }
        MsgCommand::Wait { timeout } => {
            let wait = timeout.as_deref().map(Wait::parse).transpose()?;
            let inbox = message::wait(&ws, &ctx.agent()?, wait.unwrap_or(Wait::Forever))?;
            let (listed, text) = list(inbox, true, output::color_enabled());
            ctx.emit(&listed, || text);
        }
    }
    Ok(ExitCode::Success)
}

/// TEXT, or stdin when TEXT is `-` (one trailing newline dropped).
pub(super) fn text_or_stdin(text: &str) -> Result<String, Error> {
    if text != "-" {
        return Ok(text.to_string());
    }
    let buf = super::read_stdin(message::MESSAGE_CAP + 1)
        .map_err(|e| Error::bad_input(format!("cannot read the text from stdin: {e}")))?;
    // Never cut silently: more than the limit is refused, nothing is written.
    if buf.len() as u64 > message::MESSAGE_CAP {
        let mib = message::MESSAGE_CAP / (1024 * 1024);
        return Err(Error::bad_input(format!(
            "the text on stdin is larger than {mib} MiB, the most coord takes from stdin"
        )));
    }
    let text =
        String::from_utf8(buf).map_err(|_| Error::bad_input("the text on stdin is not UTF-8"))?;
    let line = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t));
    Ok(line.unwrap_or(&text).to_string())
}

/// A message just read, as `msg read --json` shows it (as `msg list --json` shows it, now read,
/// with `marked_read`: whether it was unread until this read) and whole: `id:`, `from:`, `to:`,
/// `time:`, a blank line, the body.
pub fn read(mut entry: InboxEntry) -> serde_json::Result<(serde_json::Value, String)> {
    let marked_read = std::mem::replace(&mut entry.unread, false);
    let mut doc = serde_json::to_value(&entry)?;
    doc["marked_read"] = marked_read.into();
    let m = &entry.message;
    let (from, time) = (output::clean(&m.from_name), output::clean(&m.time));
    let body = output::clean_block(m.body.trim_end_matches('\n'));
    let (id, to) = (&m.id, &m.to);
    let text = format!("id: {id}\nfrom: {from}\nto: {to}\ntime: {time}\n\n{body}");
    Ok((doc, text))
}

/// The inbox as `msg list --json` shows it (only unread messages when `only_unread`), and as a
/// table (ID, NEW, FROM, TO, TIME, MESSAGE), or `No (unread) messages`.
pub fn list(mut inbox: Inbox, only_unread: bool, color: bool) -> (Inbox, String) {
    inbox.messages.retain(|e| e.unread || !only_unread);
    if inbox.messages.is_empty() {
        let unread = if only_unread { " unread" } else { "" };
        return (inbox, format!("No{unread} messages"));
    }
    let now = clock::now();
    let row = |e: &InboxEntry| {
        let m = &e.message;
        let when = clock::parse_timestamp(&m.time)
            .map(|t| coord::lock::format_since(Some(&t), &now))
            .unwrap_or_else(|| "-".into());
        vec![
            Cell::plain(&m.id),
            Cell::plain(if e.unread { "*" } else { "" }),
            Cell::plain(&m.from),
            Cell::plain(&m.to),
            Cell::plain(when),
            Cell::plain(m.first_line()),
        ]
    };
    let rows = inbox.messages.iter().map(row).collect();
    let text = output::table(&["ID", "NEW", "FROM", "TO", "TIME", "MESSAGE"], rows, color);
    (inbox, text)
}
