//! `coord watch [--json]`: the status view, redrawn on every change.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use coord::changes::{self, Change};
use coord::watch::FolderWatch;
use coord::{ExitCode, clock};

use super::output::{self, clean};
use super::{Ctx, status};

/// How often the view is looked at again without an event (ages move, heartbeats expire, and
/// network filesystems send no events).
const RECHECK: Duration = Duration::from_secs(1);

/// How many recent changes the full-screen view keeps under the status.
const RECENT: usize = 12;

/// Show the status view and redraw it on every change
///
/// On a terminal: the `coord status` view, full screen, redrawn on every change, with the
/// latest changes under it. Piped: the view once, then one line per change. With --json: one
/// JSON object per line, the first `{"event": "started", ...}`, then one per change (lock
/// taken, released, taken over; agent arrived, inactive, finished, left; waiting; message sent;
/// turn passed; review waiting). Runs until interrupted.
///
///   coord watch
///   coord watch --json | jq -c 'select(.event == "lock_taken")'
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WatchArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// One line of `--json` output.
#[derive(Serialize)]
struct Line<'a> {
    at: String,
    #[serde(flatten)]
    change: &'a Change,
}

pub fn run(args: WatchArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let mode = if ctx.json {
        Mode::Json
    } else if std::io::stdout().is_terminal() {
        Mode::Screen
    } else {
        Mode::Lines
    };
    // Subscribe first, then look: a change between the two is still seen. A few folders, not
    // the whole tree (see `changes::watched_folders`): the root and coord's state folders
    // first, then the folders the look names.
    let mut events = FolderWatch::new(&changes::watched_folders(&ws, None));
    let mut before = changes::snapshot(&ws);
    for dir in changes::watched_folders(&ws, Some(&before)) {
        events.add(&dir);
    }
    let mut recent: VecDeque<String> = VecDeque::new();
    match mode {
        Mode::Json => {
            let started = serde_json::json!({
                "event": "started",
                "at": clock::now_string(),
                "root": before.status.root,
            });
            if let Ok(text) = output::json_text(&started, false) {
                output::raw(format!("{text}\n").as_bytes());
            }
        }
        Mode::Screen => draw(&before.status, &recent),
        Mode::Lines => output::line(&status::render(&before.status, false)),
    }
    loop {
        if events.wait(RECHECK) {
            // Let a burst of events (a lock and its presence, say) settle into one look.
            std::thread::sleep(Duration::from_millis(30));
            events.wait(Duration::ZERO);
        }
        let after = changes::snapshot(&ws);
        // Folders that appeared (a queue, the dialogue, the folder of a new lock) are watched
        // from now on; adding a folder watched already changes nothing.
        for dir in changes::watched_folders(&ws, Some(&after)) {
            events.add(&dir);
        }
        let found = changes::diff(&before, &after);
        let at = clock::now_string();
        match mode {
            Mode::Json => {
                for change in &found {
                    let line = Line {
                        at: at.clone(),
                        change,
                    };
                    if let Ok(text) = output::json_text(&line, false) {
                        output::raw(format!("{text}\n").as_bytes());
                    }
                }
            }
            Mode::Lines => {
                for change in &found {
                    output::line(&format!("{} {}", time_of(&at), describe(change)));
                }
            }
            Mode::Screen => {
                for change in &found {
                    recent.push_front(format!("{} {}", time_of(&at), describe(change)));
                }
                recent.truncate(RECENT);
                // Redrawn on every look, not only on changes: ages move.
                draw(&after.status, &recent);
            }
        }
        before = after;
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Json,
    Screen,
    Lines,
}

/// Clear the screen, then the view and the latest changes.
fn draw(st: &coord::status::Status, recent: &VecDeque<String>) {
    let color = output::color_enabled();
    let mut text = String::from("\x1b[H\x1b[2J");
    text.push_str(&format!(
        "{} {} (Ctrl-C to quit)\n\n",
        output::title("coord watch", color),
        time_of(&clock::now_string())
    ));
    text.push_str(&status::render(st, color));
    text.push('\n');
    if !recent.is_empty() {
        text.push('\n');
        text.push_str(&output::title("Latest changes", color));
        text.push('\n');
        for line in recent {
            text.push_str("  ");
            text.push_str(line);
            text.push('\n');
        }
    }
    output::raw(text.as_bytes());
}

/// `HH:MM:SS` of an RFC 3339 time.
fn time_of(at: &str) -> String {
    at.get(11..19).unwrap_or(at).to_string()
}

/// A change in words.
fn describe(change: &Change) -> String {
    let text = match change {
        Change::AgentArrived {
            agent, working_on, ..
        } => match working_on {
            Some(w) if !w.is_empty() => format!("{agent} arrived (working on {w})"),
            _ => format!("{agent} arrived"),
        },
        Change::AgentInactive { agent } => format!("{agent} went INACTIVE"),
        Change::AgentFinished { agent } => format!("{agent} FINISHED"),
        Change::AgentActive { agent } => format!("{agent} is ACTIVE again"),
        Change::AgentLeft { agent } => format!("{agent} left (presence removed)"),
        Change::LockTaken {
            file,
            agent,
            reason,
            ..
        } => match reason {
            Some(r) => format!("{agent} locked `{file}` ({r})"),
            None => format!("{agent} locked `{file}`"),
        },
        Change::LockReleased { file, agent } => format!("{agent} released `{file}`"),
        Change::LockTakenOver { file, agent, from } => {
            format!("{agent} took `{file}` over from {from}")
        }
        Change::LockStale { file, agent, why } => format!(
            "the lock of {agent} on `{file}` is STALE{}",
            why.as_deref()
                .map(|w| format!(" ({w})"))
                .unwrap_or_default()
        ),
        Change::Waiting {
            agent,
            file,
            waits_for,
        } => {
            if waits_for.is_empty() {
                format!("{agent} waits in line for `{file}`")
            } else {
                format!(
                    "{agent} waits for `{file}` held by {}",
                    waits_for.join(", ")
                )
            }
        }
        Change::WaitEnded { agent, file } => format!("{agent} no longer waits for `{file}`"),
        Change::Deadlock { cycle } => format!(
            "DEADLOCK: {}",
            cycle
                .iter()
                .map(|e| format!("{} waits for `{}` held by {}", e.agent, e.file, e.holder))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Change::MessageSent { id, from, to } => format!("{from} sent message {id} to {to}"),
        Change::TurnPassed {
            folder, from, to, ..
        } => match (from, to) {
            (_, Some(to)) => format!("dialogue `{folder}`: {to}'s turn"),
            (Some(_), None) => format!("dialogue `{folder}`: nobody's turn"),
            (None, None) => format!("dialogue `{folder}` changed"),
        },
        Change::ReviewWaiting {
            topic,
            next_actor,
            next_action,
        } => format!(
            "review `{topic}` waits for {next_actor}{}",
            next_action
                .as_deref()
                .map(|a| format!(": {a}"))
                .unwrap_or_default()
        ),
        Change::ReviewClosed { topic } => format!("review `{topic}` closed"),
    };
    clean(&text)
}
