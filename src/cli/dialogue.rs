//! `coord dialogue init|turn|wait|say|command|show|archive`: the turn-based dialogue of seed 002.

use std::io::IsTerminal;

use clap::{Args, Subcommand};

use coord::clock::{self, Wait};
use coord::dialogue::files::{USER, same_id, validate_id};
use coord::dialogue::say::{self, DEFAULT_LOCK_WAIT, SayRequest};
use coord::dialogue::{Dialogue, TurnView};
use coord::layout::{DIALOGUE_COMMANDS, DIALOGUE_CONVERSATION};
use coord::wait::{FolderWatch, RECHECK};
use coord::{Error, ExitCode, fsutil};

use super::{Ctx, output};

/// Hold a turn-based dialogue between agents in `agent-dialogue/`
///
/// Agents take turns writing numbered messages to conversation.md; current-turn.txt says whose
/// turn it is, user-commands.txt carries the user's PAUSE / RESUME / END-SESSION / …
///
///   coord dialogue init --topic "Cache design"
///   coord dialogue say --as AGENT-1 "Proposal: an LRU in front of the API"
///   coord dialogue wait --as AGENT-1 && coord dialogue say --as AGENT-1 - < reply.md
///   coord dialogue command PAUSE
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DialogueArgs {
    /// The dialogue folder (default `agent-dialogue/` under the workspace root)
    #[arg(long, global = true, value_name = "DIR")]
    folder: Option<String>,

    #[command(subcommand)]
    command: DialogueCommand,
}

#[derive(Debug, Subcommand)]
enum DialogueCommand {
    /// Start a dialogue: conversation.md, current-turn.txt, status.json, user-commands.txt
    ///
    ///   coord dialogue init --topic "Cache design"
    ///   coord dialogue init --topic "Review" --agents claude,gemini,copilot --first gemini
    #[command(verbatim_doc_comment)]
    Init {
        /// What the dialogue is about
        #[arg(long)]
        topic: String,
        /// The participants, in turn order (two or more; `USER` is reserved)
        #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
        agents: Vec<String>,
        /// Who speaks first (default the first participant)
        #[arg(long, value_name = "ID")]
        first: Option<String>,
    },
    /// Show whose turn it is and the session state (open, paused, ended, only-one-agent, error)
    ///
    ///   coord dialogue turn
    ///   coord dialogue turn --json
    #[command(verbatim_doc_comment)]
    Turn,
    /// Block until it is ID's turn and the dialogue is not paused (exit 3 on timeout or end)
    ///
    ///   coord dialogue wait --as AGENT-2 --timeout 10m && coord dialogue say --as AGENT-2 "…"
    #[command(verbatim_doc_comment)]
    Wait {
        /// Whose turn to wait for (default: the `--agent` name)
        #[arg(long = "as", value_name = "ID")]
        as_id: Option<String>,
        /// Give up after this long (`30s`, `10m`, `forever`; default forever)
        #[arg(long, value_name = "DUR")]
        timeout: Option<String>,
    },
    Say(SayArgs),
    /// Send the dialogue a user command (PAUSE, RESUME, RESET, ...)
    ///
    /// PAUSE, RESUME, RESET, SWITCH-TOPIC: x, END-SESSION, PRIORITY: x, or ID-ONLY (only
    /// that agent answers next).
    ///
    ///   coord dialogue command PAUSE
    ///   coord dialogue command "PRIORITY: focus on the failing test"
    ///   coord dialogue command AGENT-2-ONLY
    #[command(verbatim_doc_comment)]
    Command {
        /// The command (words are joined with spaces)
        #[arg(required = true, num_args = 1.., value_name = "CMD")]
        words: Vec<String>,
    },
    /// Print the conversation (`--follow`: keep printing new messages)
    ///
    ///   coord dialogue show
    ///   coord dialogue show --follow
    ///   coord dialogue show --json
    #[command(verbatim_doc_comment)]
    Show {
        /// Keep printing messages as they are written
        #[arg(long)]
        follow: bool,
    },
    /// Move conversation.md and status.json to archive/session-YYYYMMDD-HHMMSS/
    ///
    ///   coord dialogue archive
    ///   coord dialogue init --topic "Next question"
    #[command(verbatim_doc_comment)]
    Archive,
}

/// Write the next message and pass the turn (every step of the dialogue protocol at once)
///
/// Refused (exit 3) unless it is ID's turn and no PAUSE, END-SESSION or other agent's -ONLY
/// stands. The turn goes to the next participant, or to USER with `--marker NEEDS-USER`.
///
///   coord dialogue say --as AGENT-1 "I propose an LRU cache" --marker QUESTION-CRITICAL
///   coord dialogue say --as AGENT-2 --file reply.md
///   echo "Agreed." | coord dialogue say --as AGENT-1 - --marker AGREEMENT --marker PROPOSE-END
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct SayArgs {
    /// Who speaks (default: the `--agent` name)
    #[arg(long = "as", value_name = "ID")]
    as_id: Option<String>,
    /// The message text (`-`: read stdin)
    #[arg(value_name = "TEXT", conflicts_with = "file")]
    text: Option<String>,
    /// Read the message text from a file (anywhere: it is only read)
    #[arg(long, value_name = "F")]
    file: Option<String>,
    /// A marker: NEEDS-USER, WAITING, PROPOSE-END, QUESTION-CRITICAL, AGREEMENT, DISAGREEMENT
    #[arg(long = "marker", value_name = "M")]
    markers: Vec<String>,
    /// Pass the turn to this participant (or USER) instead of the next one
    #[arg(long, value_name = "ID")]
    to: Option<String>,
    /// How long to wait for a lock.txt held by another writer (default 10s)
    #[arg(long, value_name = "DUR")]
    lock_wait: Option<String>,
}

pub fn run(args: DialogueArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let d = match &args.folder {
        Some(f) => Dialogue::new(&ws, ws.resolve(ctx.cwd(), f)?),
        None => Dialogue::default_in(&ws)?,
    };
    match args.command {
        DialogueCommand::Init {
            topic,
            agents,
            first,
        } => {
            let v = d.init(&topic, &agents, first.as_deref())?;
            let (topic, agents) = (output::clean(&v.topic), v.participants.join(", "));
            let (rel, first) = (&d.rel, v.turn.as_deref().unwrap_or("-"));
            ctx.emit(&v, || {
                format!("Dialogue started in {rel}/: {topic} ({agents}). {first} speaks first.")
            });
        }
        DialogueCommand::Turn => {
            let view = d.snapshot()?.view();
            ctx.emit(&view, || render_view(&view));
        }
        DialogueCommand::Wait { as_id, timeout } => {
            let id = validate_id(&speaker(as_id, ctx)?)?;
            let timeout = timeout.map(|t| Wait::parse(&t)).transpose()?;
            let v = d.wait(&id, timeout.and_then(Wait::as_duration))?;
            let next = v.message_count + 1;
            let mut text = format!("It is {id}'s turn: message #{next} is next.");
            if let Some(p) = &v.priority {
                text.push_str(&format!("\nPRIORITY from the user: {}", output::clean(p)));
            }
            ctx.emit(&v, || text);
        }
        DialogueCommand::Say(a) => {
            let lock_wait = a.lock_wait.as_deref().map(clock::parse_duration);
            let req = SayRequest {
                speaker: speaker(a.as_id, ctx)?,
                markers: a.markers,
                lock_wait: lock_wait.unwrap_or(Ok(DEFAULT_LOCK_WAIT))?,
                text: message_text(a.text.as_deref(), a.file.as_deref(), ctx)?,
                to: a.to,
            };
            let outcome = say::say(&d, &req)?;
            say_notes(&outcome).iter().for_each(|l| output::diag(l));
            if let Some(t) = &outcome.took_over {
                let holder = output::clean(&t.holder);
                output::diag(&format!("note: took over a stale lock.txt of {holder}"));
            }
            ctx.emit(&outcome, || said_line(&outcome));
        }
        DialogueCommand::Command { words } => {
            let (cmd, archived) = d.command(&words.join(" "))?;
            let file = d.shown(DIALOGUE_COMMANDS);
            let mut text = format!("Appended `{}` to {file}", output::clean(&cmd));
            if let Some(dir) = &archived {
                text += &format!("\nArchived the session to {dir}/ and started a fresh one");
            }
            let doc = serde_json::json!({ "command": cmd, "file": file, "archived": archived });
            ctx.emit(&doc, || text);
        }
        DialogueCommand::Show { follow } => {
            let bytes = d.conversation_bytes()?;
            if follow {
                follow_conversation(&d);
            }
            let text = String::from_utf8_lossy(&bytes);
            if !ctx.json {
                output::line(&output::clean_block(text.trim_end_matches('\n')));
                return Ok(ExitCode::Success);
            }
            let (file, turn) = (d.shown(DIALOGUE_CONVERSATION), d.snapshot()?.view());
            output::json(&serde_json::json!({ "file": file, "text": text, "turn": turn }));
        }
        DialogueCommand::Archive => {
            let dir = d.archive()?;
            let doc = serde_json::json!({ "archive": dir });
            ctx.emit(&doc, || format!("Archived the dialogue to {dir}/"));
        }
    }
    Ok(ExitCode::Success)
}

/// `--as ID`, else the `--agent` name as given.
fn speaker(as_id: Option<String>, ctx: &Ctx) -> Result<String, Error> {
    if let Some(id) = as_id {
        return Ok(id);
    }
    let why = "say who speaks with `--as ID` (like `--as AGENT-1`), or give `--agent NAME`";
    let agent = ctx.agent_opt()?.ok_or_else(|| Error::bad_input(why))?;
    Ok(agent.name().to_string())
}

pub fn render_view(v: &TurnView) -> String {
    let shown = output::clean(v.next.as_deref().unwrap_or(&v.turn_file));
    // `current-turn.txt` may name anyone (an agent that follows the files by hand can write
    // it): one who is neither a participant nor the user is said to be so.
    let known = |id: &str| same_id(id, USER) || v.participants.iter().any(|p| same_id(p, id));
    let outsider = v.next.as_deref().filter(|id| !known(id));
    let last = match (&v.last_speaker, &v.last_time) {
        (Some(s), Some(t)) => format!(" (last: {} at {})", output::clean(s), output::clean(t)),
        _ => String::new(),
    };
    let participants = v.participants.join(", ");
    let not = outsider.map_or("", |_| " (not a participant)");
    let mut out = vec![
        format!("turn: {shown}{not}"),
        format!("state: {}", v.state),
        format!("topic: {}", output::clean(&v.topic)),
        format!("messages: {}{last}", v.message_count),
        format!("participants: {participants}"),
    ];
    out.extend((v.error.as_ref()).map(|e| format!("error: {}", output::clean(e))));
    out.extend(outsider.map(|id| {
        let id = output::clean(id);
        format!("note: `{id}` in current-turn.txt is not among the participants ({participants}); write one of them there, or let {id} speak")
    }));
    let only = v.only.as_ref();
    out.extend(only.map(|o| format!("only: {o} (the user's {o}-ONLY)")));
    for (on, note) in [
        (v.needs_user, "asks for the user ([NEEDS-USER])"),
        (v.end_proposed, "proposes to end ([PROPOSE-END])"),
    ] {
        out.extend(on.then(|| format!("note: the last message {note}")));
    }
    out.extend((v.priority.as_ref()).map(|p| format!("priority: {}", output::clean(p))));
    out.extend(v.lock.as_ref().map(|l| {
        let stale = if l.stale { " (STALE)" } else { "" };
        format!("lock.txt: held by {}{stale}", output::clean(&l.holder))
    }));
    if v.status_json != "ok" {
        out.push(format!("status.json {}", output::clean(&v.status_json)));
    }
    out.join("\n")
}

/// The `warning:` lines of a said message, and the `note:` of a repair.
pub fn say_notes(o: &say::SayOutcome) -> Vec<String> {
    let warnings = o.warnings.iter().map(|w| format!("warning: {w}"));
    let notes = o.repaired.iter().map(|r| format!("note: {r}"));
    warnings.chain(notes).collect()
}

pub fn said_line(o: &say::SayOutcome) -> String {
    let (number, speaker, next) = (o.number, &o.speaker, &o.next);
    format!("Message #{number} written by {speaker}. The turn is now with {next}.")
}

/// The text from TEXT, `-` (stdin), or `--file F` (any readable file: it is only read, as
/// `write --from` reads its source).
fn message_text(text: Option<&str>, file: Option<&str>, ctx: &Ctx) -> Result<String, Error> {
    let cap = say::MAX_TEXT as u64;
    let (bytes, from) = match (text, file) {
        (Some("-"), _) => {
            let read = super::read_stdin(cap + 1);
            let why = |e| Error::bad_input(format!("cannot read the message from stdin: {e}"));
            (read.map_err(why)?, "stdin")
        }
        (Some(t), _) => return Ok(t.to_string()),
        (None, Some(f)) => {
            // Only read: a symlink (to anywhere) is followed, as any reader would.
            let path = ctx.cwd().join(f);
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let why = |e| Error::bad_input(format!("cannot read `{f}`: {e}"));
            (fsutil::read_capped(&path, cap).map_err(why)?, f)
        }
        (None, None) => {
            let piped = !std::io::stdin().is_terminal();
            let hint = if piped { " (`-` reads stdin)" } else { "" };
            let why = format!("no message text: give TEXT, `-` or `--file F`{hint}");
            return Err(Error::bad_input(why));
        }
    };
    let utf8 = String::from_utf8(bytes);
    utf8.map_err(|_| Error::bad_input(format!("the message in `{from}` is not UTF-8 text")))
}

/// `show --follow`: print whole lines as they are appended, until the process is ended.
fn follow_conversation(d: &Dialogue) -> ! {
    let mut watch = FolderWatch::new(std::slice::from_ref(&d.folder));
    let mut printed = 0;
    loop {
        if let Ok(bytes) = d.conversation_bytes() {
            if bytes.len() < printed {
                let note = "note: the conversation was archived or restarted; showing the new one";
                output::diag(note);
                printed = 0;
            }
            // Print whole lines only, so a block written by hand in pieces is not cut.
            if let Some(end) = bytes[printed..].iter().rposition(|b| *b == b'\n') {
                let chunk = String::from_utf8_lossy(&bytes[printed..printed + end]);
                output::line(&output::clean_block(&chunk));
                printed += end + 1;
            }
        }
        watch.wait(RECHECK);
    }
}
