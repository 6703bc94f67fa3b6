//! `coord watch [--json]`: the status view, redrawn on every change.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use coord::history::ending::{Endings, Item};
use coord::history::{self, Event, Tail};
use coord::wait::FolderWatch;
use coord::watch::{self, Change};
use coord::{ExitCode, clock};

use super::output::{self, clean};
use super::{Ctx, log, status};

/// How often the view is looked at again without an event (ages move, heartbeats expire, and
/// network filesystems send no events).
const RECHECK: Duration = Duration::from_secs(1);
/// How many recent changes the full-screen view keeps under the status.
const RECENT: usize = 12;
/// How often the history is looked at (a stat and, when it grew, a read).
const POLL: Duration = Duration::from_millis(50);
/// How long a change seen by a look waits for the history to say it (then it is not repeated).
const HOLD: Duration = Duration::from_millis(1500);
/// How long the history's events are remembered, to recognise a look's change as the same.
const REMEMBER: Duration = Duration::from_secs(10);

/// Show the status view and redraw it on every change
///
/// On a terminal: the `coord status` view, full screen, redrawn on every change, with the
/// latest events under it; agents waiting for their user come first. Piped: the view once,
/// then one line per event. With --json: one JSON object per line, the first
/// `{"event": "started", ...}`, then every event of the workspace's history as it is written
/// (lock taken, released, taken over, waited for, refused; edits denied and made; messages;
/// dialogue turns; review steps; agents arriving, leaving, crashing, needing their user), so
/// no lock is missed however briefly it was held, and the changes only a look can see (agent
/// inactive, lock stale, waiting, turn passed, review waiting, a lock made by hand). --since
/// replays the history from then first. --notify rings the terminal (bell and OSC 9) when an
/// agent starts waiting for its user. Runs until interrupted.
///
///   coord watch
///   coord watch --json | jq -c 'select(.event == "lock_taken")'
///   coord watch --since 1h --notify
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WatchArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// First replay the history from then: a duration back from now (`30m`) or a time
    #[arg(long, value_name = "DUR")]
    since: Option<String>,
    /// Ring the terminal (bell, and an OSC 9 notification) when an agent starts waiting for its user
    #[arg(long)]
    notify: bool,
}

/// One line of `--json` output.
#[derive(Serialize)]
struct Line<'a> {
    at: &'a str,
    #[serde(flatten)]
    change: &'a Change,
}

pub fn run(args: WatchArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let since = args.since.as_deref().map(history::since).transpose()?;
    let mode = match (ctx.json, std::io::stdout().is_terminal()) {
        (true, _) => Mode::Json,
        (false, true) => Mode::Screen,
        (false, false) => Mode::Lines,
    };
    // Subscribe first, then look: a change between the two is still seen.
    let mut events = FolderWatch::new(&watch::watched_folders(&ws, None));
    let mut tail = match since {
        Some(_) => Tail::from_oldest(ws.root()),
        None => Tail::from_end(ws.root()),
    };
    let mut before = watch::snapshot(&ws, None);
    for dir in watch::watched_folders(&ws, Some(&before)) {
        events.add(&dir);
    }
    let indent = if mode == Mode::Screen { 2 } else { 0 };
    let mut feed = Feed {
        mode,
        notify: args.notify,
        recent: VecDeque::new(),
        said: VecDeque::new(),
        held: Vec::new(),
        places: log::Places::of(&ws),
        endings: Endings::default(),
        width: output::terminal_width().map(|w| w.saturating_sub(indent)),
    };
    match mode {
        Mode::Json => {
            let (at, root) = (clock::now_string(), &before.status.root);
            let started = serde_json::json!({ "event": "started", "at": at, "root": root });
            feed.say(output::json_text(&started), "", String::new());
        }
        Mode::Screen => {}
        Mode::Lines => output::line(&status::render(&before.status, false)),
    }
    if let Some(since) = since {
        for (_, e) in tail.poll_positioned() {
            if e.time().is_some_and(|t| t >= since) {
                feed.history(&e, false);
            }
        }
    }
    if mode == Mode::Screen {
        draw(&before.status, &feed.recent);
    }
    let mut last_look = Instant::now();
    loop {
        let fired = events.wait(POLL);
        let mut changed = feed.poll(&mut tail);
        if fired || last_look.elapsed() >= RECHECK {
            if fired {
                // Let a burst of events (a lock and its presence, say) settle into one look.
                std::thread::sleep(Duration::from_millis(30));
                events.wait(Duration::ZERO);
                feed.poll(&mut tail);
            }
            let after = watch::snapshot(&ws, Some(&before));
            // Read the branches again: a tree may have switched since.
            feed.places.branches.clear();
            // The history is read again after the look: an event recorded before the change the
            // look saw (a lock taken before its waiter's ticket leaves) is printed before it.
            feed.poll(&mut tail);
            // Folders that appeared (a queue, the dialogue, the folder of a new lock) are
            // watched from now on; adding a folder watched already changes nothing.
            for dir in watch::watched_folders(&ws, Some(&after)) {
                events.add(&dir);
            }
            for change in watch::diff(&before, &after) {
                feed.looked(change);
            }
            before = after;
            last_look = Instant::now();
            changed = true;
        }
        changed |= feed.show_held(|t, _| t.elapsed() >= HOLD);
        let over = feed.endings.due(&clock::now());
        over.iter().for_each(|item| feed.say_item(item));
        changed |= !over.is_empty();
        if changed && mode == Mode::Screen {
            // Redrawn on every look, not only on changes: ages move.
            draw(&before.status, &feed.recent);
        }
    }
}

struct Feed {
    mode: Mode,
    notify: bool,
    recent: VecDeque<String>,
    /// Keys of the history's recent events, to recognise a look's change as one of them.
    said: VecDeque<(Instant, String)>,
    /// Changes seen by a look that the history may still say: shown once HOLD passed unsaid.
    held: Vec<(Instant, Change)>,
    places: log::Places,
    /// The events of endings not over yet, said in one line once they are (human lines only).
    endings: Endings,
    /// How wide a line may be (the screen's lines are indented by two).
    width: Option<usize>,
}

impl Feed {
    /// Say the events the history gained. Whether there were any.
    fn poll(&mut self, tail: &mut Tail) -> bool {
        let events = tail.poll_positioned();
        events.iter().for_each(|(_, e)| self.history(e, true));
        !events.is_empty()
    }

    fn history(&mut self, e: &Event, live: bool) {
        let now = Instant::now();
        self.said.retain(|(t, _)| now.duration_since(*t) < REMEMBER);
        self.said.extend(history_key(e).map(|key| (now, key)));
        let mode = self.mode;
        self.held.retain(|(_, c)| {
            !change_key(c, mode).is_some_and(|k| self.said.iter().any(|(_, s)| *s == k))
        });
        if live && self.notify && e.event == "needs_user" {
            ring(&e.agent, e.str("what").unwrap_or(""), self.mode);
        }
        if self.mode == Mode::Json {
            self.say(serde_json::to_string(e), &e.at, String::new());
        } else {
            for item in self.endings.push(e.clone()) {
                self.say_item(&item);
            }
        }
        // A lock taken or refused concludes its taker's wait: the wait's held end is shown now.
        let concludes = ["lock_taken", "lock_taken_over", "lock_refused"];
        if concludes.contains(&e.event.as_str()) {
            self.show_held(|_, c| {
                matches!(c, Change::WaitEnded { agent, file }
                    if *agent == e.agent && Some(file.as_str()) == e.file.as_deref())
            });
        }
    }

    fn say_item(&mut self, item: &Item) {
        let (at, text) = log::say(item, &mut self.places);
        self.say(Ok(String::new()), at, text);
    }

    fn looked(&mut self, change: Change) {
        match change_key(&change, self.mode) {
            Some(k) if self.said.iter().any(|(_, s)| *s == k) => {}
            Some(_) => self.held.push((Instant::now(), change)),
            None => self.show(&change),
        }
    }

    /// Show (and stop holding) the held changes `due` picks. Whether any was shown.
    fn show_held(&mut self, due: impl Fn(&Instant, &Change) -> bool) -> bool {
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(t, c)| due(t, c));
        self.held = keep;
        due.iter().for_each(|(_, c)| self.show(c));
        !due.is_empty()
    }

    fn show(&mut self, change: &Change) {
        let at = clock::now_string();
        let line = Line { at: &at, change };
        self.say(output::json_text(&line), &at, describe(change));
    }

    /// One event or change: its `json` line, or `HH:MM:SS text` wrapped at word boundaries to
    /// the terminal's width (printed, or kept on screen).
    fn say(&mut self, json: serde_json::Result<String>, at: &str, text: String) {
        let line = format!("{} {text}", time_of(at));
        let line = match self.width {
            Some(w) => output::wrap(&line, w, TIME_WIDTH + 1),
            None => line,
        };
        match self.mode {
            Mode::Json => {
                if let Ok(text) = json {
                    output::line(&text);
                }
            }
            Mode::Lines => output::line(&line),
            Mode::Screen => {
                self.recent.push_front(line);
                self.recent.truncate(RECENT);
            }
        }
    }
}

/// The key under which a history event matches a change a look sees.
fn history_key(e: &Event) -> Option<String> {
    let f = e.file.as_deref().unwrap_or("");
    Some(match e.event.as_str() {
        "lock_taken" | "lock_taken_over" => format!("taken|{f}"),
        "lock_released" => format!("released|{f}"),
        "message_sent" => format!("message|{}", e.str("id").unwrap_or("")),
        "agent_arrived" => format!("arrived|{}", e.agent),
        "lock_waiting" => format!("waiting|{}|{f}", e.agent),
        "agent_left" => format!("left|{}", e.agent),
        _ => return None,
    })
}

/// The key under which a change waits for the history to say it (so the lines people read say
/// it once, in order), `None` for one only a look sees.
fn change_key(c: &Change, mode: Mode) -> Option<String> {
    Some(match c {
        // A wait ends with the lock taken or refused, which the history says: held, to be shown
        // after that event (or after HOLD), never before it.
        Change::WaitEnded { agent, file } => format!("wait ended|{agent}|{file}"),
        Change::LockTaken { file, .. } | Change::LockTakenOver { file, .. } => {
            format!("taken|{file}")
        }
        Change::LockReleased { file, .. } => format!("released|{file}"),
        Change::MessageSent { id, .. } => format!("message|{id}"),
        Change::AgentArrived { agent, .. } => format!("arrived|{agent}"),
        Change::Waiting { agent, file, .. } if mode != Mode::Json => {
            format!("waiting|{agent}|{file}")
        }
        Change::AgentFinished { agent } if mode != Mode::Json => format!("left|{agent}"),
        _ => return None,
    })
}

/// Ring the bell and send an OSC 9 notification on the terminal (never into `--json`): an
/// agent waits for its user.
fn ring(agent: &str, what: &str, mode: Mode) {
    use std::io::Write;
    // Cleaned, the text holds no escape or bell to end the sequence early.
    let text = clean(&format!("coord: {agent} needs you: {what}"));
    let text: String = text.chars().take(200).collect();
    let bytes = format!("\x07\x1b]9;{text}\x07");
    if mode != Mode::Json && std::io::stdout().is_terminal() {
        output::raw(bytes.as_bytes());
    } else {
        let _ = std::io::stderr().write_all(bytes.as_bytes());
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Json,
    Screen,
    Lines,
}

/// Clear the screen, then the view and the latest changes.
fn draw(st: &coord::status::Status, recent: &VecDeque<String>) {
    let color = output::color_enabled();
    let now = time_of(&clock::now_string());
    let title = output::title("coord watch", color);
    let view = status::render(st, color);
    let mut text = format!("\x1b[H\x1b[2J{title} {now} (Ctrl-C to quit)\n\n{view}\n");
    if !recent.is_empty() {
        text.push_str(&format!("\n{}\n", output::title("Latest changes", color)));
        for line in recent.iter().flat_map(|l| l.lines()) {
            text.push_str(&format!("  {line}\n"));
        }
    }
    output::raw(text.as_bytes());
}

/// How wide a line's time is (`HH:MM:SS`).
const TIME_WIDTH: usize = 8;

/// `HH:MM:SS` of an RFC 3339 time.
fn time_of(at: &str) -> String {
    at.get(11..19).unwrap_or(at).to_string()
}

fn describe(change: &Change) -> String {
    let paren = |o: Option<&str>| o.map(|t| format!(" ({t})")).unwrap_or_default();
    let text = match change {
        Change::AgentArrived {
            agent, working_on, ..
        } => {
            let w = working_on.as_deref().filter(|w| !w.is_empty());
            format!("{agent} arrived{}", output::working_on(w))
        }
        Change::AgentInactive { agent } => format!("{agent} went INACTIVE"),
        Change::AgentFinished { agent } => format!("{agent} FINISHED"),
        Change::AgentActive { agent } => format!("{agent} is ACTIVE again"),
        Change::AgentLeft { agent } => format!("{agent} left (presence removed)"),
        Change::LockTaken {
            file,
            agent,
            reason,
            ..
        } => format!("{agent} locked `{file}`{}", paren(reason.as_deref())),
        Change::LockReleased { file, agent } => format!("{agent} released `{file}`"),
        Change::LockTakenOver { file, agent, from } => {
            format!("{agent} took `{file}` over from {from}")
        }
        Change::LockStale { file, agent, why } => {
            let why = paren(why.as_deref());
            format!("the lock of {agent} on `{file}` is STALE{why}")
        }
        Change::Waiting {
            agent,
            file,
            waits_for,
        } => match waits_for.join(", ") {
            holders if holders.is_empty() => format!("{agent} waits in line for `{file}`"),
            holders => format!("{agent} waits for `{file}` held by {holders}"),
        },
        Change::WaitEnded { agent, file } => format!("{agent} no longer waits for `{file}`"),
        Change::Deadlock { cycle } => format!("DEADLOCK: {}", output::cycle(cycle)),
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
        } => {
            let action = next_action.as_deref().map(|a| format!(": {a}"));
            let action = action.unwrap_or_default();
            format!("review `{topic}` waits for {next_actor}{action}")
        }
        Change::ReviewClosed { topic } => format!("review `{topic}` closed"),
    };
    clean(&text)
}
