//! `coord dialogue init|turn|wait|say|command|show|archive`: the turn-based dialogue of seed 002.

use std::io::{IsTerminal, Read};

use clap::{Args, Subcommand};

use coord::clock::{self, Wait};
use coord::dialogue::files::Marker;
use coord::dialogue::say::{self, DEFAULT_LOCK_WAIT, SayRequest};
use coord::dialogue::{DEFAULT_AGENTS, Dialogue, TurnView};
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
    Init(InitArgs),
    Turn(TurnArgs),
    Wait(WaitArgs),
    Say(SayArgs),
    Command(CommandArgs),
    Show(ShowArgs),
    Archive(ArchiveArgs),
}

/// Start a dialogue: conversation.md, current-turn.txt, status.json, user-commands.txt
///
///   coord dialogue init --topic "Cache design"
///   coord dialogue init --topic "Review" --agents claude,gemini,copilot --first gemini
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct InitArgs {
    /// What the dialogue is about
    #[arg(long)]
    topic: String,
    /// The participants, in turn order (two or more; `USER` is reserved)
    #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
    agents: Vec<String>,
    /// Who speaks first (default the first participant)
    #[arg(long, value_name = "ID")]
    first: Option<String>,
}

/// Show whose turn it is and the session state (open, paused, ended, only-one-agent, error)
///
///   coord dialogue turn
///   coord dialogue turn --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct TurnArgs {}

/// Block until it is ID's turn and the dialogue is not paused (exit 3 on timeout or end)
///
///   coord dialogue wait --as AGENT-2 --timeout 10m && coord dialogue say --as AGENT-2 "…"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct WaitArgs {
    /// Whose turn to wait for (default: the `--agent` name)
    #[arg(long = "as", value_name = "ID")]
    as_id: Option<String>,
    /// Give up after this long (`30s`, `10m`, `forever`; default forever)
    #[arg(long, value_name = "DUR")]
    timeout: Option<String>,
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

/// Send a user command: PAUSE, RESUME, RESET, SWITCH-TOPIC: x, END-SESSION, PRIORITY: x, ID-ONLY
///
///   coord dialogue command PAUSE
///   coord dialogue command "PRIORITY: focus on the failing test"
///   coord dialogue command AGENT-2-ONLY
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct CommandArgs {
    /// The command (words are joined with spaces)
    #[arg(required = true, num_args = 1.., value_name = "CMD")]
    words: Vec<String>,
}

/// Print the conversation (`--follow`: keep printing new messages)
///
///   coord dialogue show
///   coord dialogue show --follow
///   coord dialogue show --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct ShowArgs {
    /// Keep printing messages as they are written
    #[arg(long)]
    follow: bool,
}

/// Move conversation.md and status.json to archive/session-YYYYMMDD-HHMMSS/
///
///   coord dialogue archive
///   coord dialogue init --topic "Next question"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct ArchiveArgs {}

pub fn run(args: DialogueArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let d = match &args.folder {
        Some(f) => Dialogue::new(&ws, ws.resolve(ctx.cwd(), f)?),
        None => Dialogue::default_in(&ws)?,
    };
    match args.command {
        DialogueCommand::Init(a) => init(a, &d, ctx),
        DialogueCommand::Turn(_) => turn(&d, ctx),
        DialogueCommand::Wait(a) => wait(a, &d, ctx),
        DialogueCommand::Say(a) => say_cmd(a, &d, ctx),
        DialogueCommand::Command(a) => command(a, &d, ctx),
        DialogueCommand::Show(a) => show(a, &d, ctx),
        DialogueCommand::Archive(_) => archive(&d, ctx),
    }
}

/// `--as ID`, else the `--agent` name as given.
fn speaker(as_id: Option<String>, ctx: &Ctx) -> anyhow::Result<String> {
    match as_id {
        Some(id) => Ok(id),
        None => match ctx.agent_opt()? {
            Some(a) => Ok(a.name().to_string()),
            None => Err(Error::bad_input(
                "say who speaks with `--as ID` (like `--as AGENT-1`), or give `--agent NAME`",
            )
            .into()),
        },
    }
}

fn init(a: InitArgs, d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let agents: Vec<String> = if a.agents.is_empty() {
        DEFAULT_AGENTS.iter().map(|s| s.to_string()).collect()
    } else {
        a.agents
    };
    let snap = d.init(&a.topic, &agents, a.first.as_deref())?;
    let view = snap.view();
    if ctx.json {
        output::json(&view);
    } else if !ctx.quiet {
        output::line(&format!(
            "Dialogue started in {}/: {} ({}). {} speaks first.",
            d.rel(),
            output::clean(&view.topic),
            view.participants.join(", "),
            view.turn.as_deref().unwrap_or("-")
        ));
    }
    Ok(ExitCode::Success)
}

fn turn(d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let view = d.snapshot()?.view();
    if ctx.json {
        output::json(&view);
    } else if !ctx.quiet {
        output::line(&render_view(&view));
    }
    Ok(ExitCode::Success)
}

/// The human form of `coord dialogue turn`.
pub fn render_view(v: &TurnView) -> String {
    let shown = v.next.as_deref().unwrap_or(&v.turn_file);
    // `current-turn.txt` may name anyone (an agent that follows the files by hand can write
    // it): one who is neither a participant nor the user is said to be so.
    let outsider = v.next.as_deref().filter(|id| {
        !coord::dialogue::files::same_id(id, coord::dialogue::files::USER)
            && !v
                .participants
                .iter()
                .any(|p| coord::dialogue::files::same_id(p, id))
    });
    let mut out = vec![
        match outsider {
            Some(_) => format!("turn: {} (not a participant)", output::clean(shown)),
            None => format!("turn: {}", output::clean(shown)),
        },
        format!("state: {}", v.state),
        format!("topic: {}", output::clean(&v.topic)),
    ];
    let last = match (&v.last_speaker, &v.last_time) {
        (Some(s), Some(t)) => format!(" (last: {} at {})", output::clean(s), output::clean(t)),
        _ => String::new(),
    };
    out.push(format!("messages: {}{last}", v.message_count));
    out.push(format!("participants: {}", v.participants.join(", ")));
    if let Some(e) = &v.error {
        out.push(format!("error: {}", output::clean(e)));
    }
    if let Some(id) = outsider {
        out.push(format!(
            "note: `{}` in current-turn.txt is not among the participants ({}); write one of them there, or let {} speak",
            output::clean(id),
            v.participants.join(", "),
            output::clean(id)
        ));
    }
    if let Some(o) = &v.only {
        out.push(format!("only: {o} (the user's {o}-ONLY)"));
    }
    if v.needs_user {
        out.push("note: the last message asks for the user ([NEEDS-USER])".into());
    }
    if v.end_proposed {
        out.push("note: the last message proposes to end ([PROPOSE-END])".into());
    }
    if let Some(p) = &v.priority {
        out.push(format!("priority: {}", output::clean(p)));
    }
    if let Some(l) = &v.lock {
        out.push(format!(
            "lock.txt: held by {}{}",
            output::clean(&l.holder),
            if l.stale { " (STALE)" } else { "" }
        ));
    }
    if v.status_json != "ok" {
        out.push(format!("status.json {}", output::clean(&v.status_json)));
    }
    out.join("\n")
}

fn wait(a: WaitArgs, d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let id = speaker(a.as_id, ctx)?;
    let id = coord::dialogue::files::validate_id(&id)?;
    let timeout = match &a.timeout {
        Some(t) => Wait::parse(t)?.as_duration(),
        None => None,
    };
    let view = d.wait(&id, timeout)?.view();
    if ctx.json {
        output::json(&view);
    } else if !ctx.quiet {
        let mut text = format!(
            "It is {id}'s turn: message #{} is next.",
            view.message_count + 1
        );
        if let Some(p) = &view.priority {
            text.push_str(&format!("\nPRIORITY from the user: {}", output::clean(p)));
        }
        output::line(&text);
    }
    Ok(ExitCode::Success)
}

fn say_cmd(a: SayArgs, d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let who = speaker(a.as_id, ctx)?;
    let markers = a
        .markers
        .iter()
        .map(|m| Marker::parse(m))
        .collect::<Result<Vec<_>, _>>()?;
    let lock_wait = match &a.lock_wait {
        Some(w) => clock::parse_duration(w)?,
        None => DEFAULT_LOCK_WAIT,
    };
    let text = message_text(a.text.as_deref(), a.file.as_deref(), ctx)?;
    let req = SayRequest {
        speaker: who,
        text,
        markers,
        to: a.to,
        lock_wait,
    };
    let result = say::say(d, &req);
    let outcome = result?;
    for w in &outcome.warnings {
        output::diag(&format!("warning: {w}"));
    }
    if let Some(r) = &outcome.repaired {
        output::diag(&format!("note: {r}"));
    }
    if let Some(t) = &outcome.took_over {
        output::diag(&format!(
            "note: took over a stale lock.txt of {}",
            output::clean(&t.holder)
        ));
    }
    if ctx.json {
        output::json(&outcome);
    } else if !ctx.quiet {
        output::line(&said_line(&outcome));
    }
    Ok(ExitCode::Success)
}

/// `Message #N written by ID. The turn is now with NEXT.`
pub fn said_line(outcome: &say::SayOutcome) -> String {
    format!(
        "Message #{} written by {}. The turn is now with {}.",
        outcome.number, outcome.speaker, outcome.next
    )
}

/// The text from TEXT, `-` (stdin), or `--file F` (any readable file: it is only read, as
/// `write --from` reads its source).
fn message_text(text: Option<&str>, file: Option<&str>, ctx: &Ctx) -> anyhow::Result<String> {
    let cap = say::MAX_TEXT as u64;
    match (text, file) {
        (Some("-"), None) => {
            let mut buf = Vec::new();
            std::io::stdin()
                .take(cap + 1)
                .read_to_end(&mut buf)
                .map_err(|e| {
                    Error::bad_input(format!("cannot read the message from stdin: {e}"))
                })?;
            utf8(buf, "stdin")
        }
        (Some(t), None) => Ok(t.to_string()),
        (None, Some(f)) => {
            // Only read: a symlink (to anywhere) is followed, as any reader would.
            let path = ctx.cwd().join(f);
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let bytes = fsutil::read_capped(&path, cap)
                .map_err(|e| Error::bad_input(format!("cannot read `{f}`: {e}")))?;
            utf8(bytes, f)
        }
        (None, None) => {
            let hint = if std::io::stdin().is_terminal() {
                ""
            } else {
                " (`-` reads stdin)"
            };
            Err(Error::bad_input(format!(
                "no message text: give TEXT, `-` or `--file F`{hint}"
            ))
            .into())
        }
        (Some(_), Some(_)) => Err(Error::bad_input("give TEXT or `--file`, not both").into()),
    }
}

fn utf8(bytes: Vec<u8>, from: &str) -> anyhow::Result<String> {
    String::from_utf8(bytes)
        .map_err(|_| Error::bad_input(format!("the message in `{from}` is not UTF-8 text")).into())
}

fn command(a: CommandArgs, d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let text = a.words.join(" ");
    let (cmd, archived) = d.command(&text, DEFAULT_LOCK_WAIT)?;
    if ctx.json {
        output::json(&serde_json::json!({
            "command": cmd.render(),
            "file": d.shown(coord::layout::DIALOGUE_COMMANDS),
            "archived": archived,
        }));
    } else if !ctx.quiet {
        output::line(&format!(
            "Appended `{}` to {}",
            output::clean(&cmd.render()),
            d.shown(coord::layout::DIALOGUE_COMMANDS)
        ));
        if let Some(dir) = archived {
            output::line(&format!(
                "Archived the session to {dir}/ and started a fresh one"
            ));
        }
    }
    Ok(ExitCode::Success)
}

fn show(a: ShowArgs, d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let bytes = d.conversation_bytes()?;
    if !a.follow {
        if ctx.json {
            // A struct, not `json!`: the `turn` object keeps `dialogue turn --json`'s key order.
            #[derive(serde::Serialize)]
            struct ShowJson<'a, V> {
                file: String,
                text: std::borrow::Cow<'a, str>,
                turn: V,
            }
            output::json(&ShowJson {
                file: d.shown(coord::layout::DIALOGUE_CONVERSATION),
                text: String::from_utf8_lossy(&bytes),
                turn: d.snapshot()?.view(),
            });
        } else {
            let text = String::from_utf8_lossy(&bytes);
            output::line(output::clean_block(text.trim_end_matches('\n')).as_str());
        }
        return Ok(ExitCode::Success);
    }
    let watch = FolderWatch::new(&[d.folder().to_path_buf()]);
    let mut printed = 0usize;
    loop {
        if let Ok(bytes) = d.conversation_bytes() {
            if bytes.len() < printed {
                output::diag(
                    "note: the conversation was archived or restarted; showing the new one",
                );
                printed = 0;
            }
            // Print whole lines only, so a block written by hand in pieces is not cut.
            if let Some(end) = bytes[printed..].iter().rposition(|b| *b == b'\n') {
                let chunk = &bytes[printed..printed + end];
                output::line(&output::clean_block(&String::from_utf8_lossy(chunk)));
                printed += end + 1;
            }
        }
        watch.wait(RECHECK);
    }
}

fn archive(d: &Dialogue, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let dir = d.archive(DEFAULT_LOCK_WAIT)?;
    if ctx.json {
        output::json(&serde_json::json!({ "archive": dir }));
    } else if !ctx.quiet {
        output::line(&format!("Archived the dialogue to {dir}/"));
    }
    Ok(ExitCode::Success)
}
