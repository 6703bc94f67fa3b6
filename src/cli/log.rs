//! `coord log [FILE...] [--agent A] [--since DUR] [--json] [--timeline]`: what happened.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use clap::Args;

use coord::ExitCode;
use coord::clock::{self, Timestamp};
use coord::history::ending::{self, Ending, Item};
use coord::history::{self, Event, Filter};
use coord::workspace::Workspace;

use super::Ctx;
use super::output::{self, clean};

/// Show the workspace's history: locks, edits, messages, agents, oldest first
///
/// Every lock taken, released, taken over, waited for or refused; every edit a client's hook
/// denied or made; claims, messages, dialogue turns, review steps; agents arriving, leaving,
/// crashing or waiting for their user. The events of one ending (an agent's locks released as
/// its turn or session ends, and it leaving) read as one line. FILEs (or folders) and --agent
/// narrow it; --since shows the last DUR (`10m`, `2h`, `1d`) or what followed a time (RFC
/// 3339). --json prints one object per event and line. --timeline draws one row per file (per
/// agent with --by-agent), time across.
///
///   coord log
///   coord log src/ --since 1h
///   coord log --agent claude --json | jq -c 'select(.event == "lock_taken")'
///   coord log --timeline
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LogArgs {
    /// Only events about these files, folders (`src/`) or patterns (`'src/**/*.sql'`)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
    /// Only events after this: a duration back from now (`30m`) or a time (RFC 3339)
    #[arg(long, value_name = "DUR")]
    since: Option<String>,
    /// Draw a timeline: one row per file, time across (who held it when, waits, takeovers, denials)
    #[arg(long)]
    timeline: bool,
    /// With --timeline: one row per agent instead of per file
    #[arg(long, requires = "timeline")]
    by_agent: bool,
}

pub fn run(args: LogArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    // A folder (`src/`) or a pattern is a claim, as for every command that takes FILEs: the
    // events of the files it matches and of the claims it overlaps.
    let (targets, patterns) = ws.file_args(ctx.cwd(), &args.files)?;
    let filter = Filter {
        files: targets.into_iter().map(|t| t.rel).collect(),
        patterns,
        // Only `-a` on the command line filters: `COORD_AGENT`, which an agent's whole session
        // carries, names who acts, not whose history to show.
        agent: match ctx.agent_flag {
            true => ctx.agent_opt()?.map(|a| a.id().to_string()),
            false => None,
        },
        since: args.since.as_deref().map(history::since).transpose()?,
    };
    let events = history::read(ws.root(), &filter);
    if args.timeline {
        let width = output::terminal_width().unwrap_or(100).max(40);
        let color = output::color_enabled();
        let text = timeline(&events, width, color, args.by_agent);
        output::raw(text.as_bytes());
    } else if ctx.json {
        for text in events.iter().filter_map(|e| serde_json::to_string(e).ok()) {
            output::line(&text);
        }
    } else if !ctx.quiet {
        let mut places = Places::of(&ws);
        for item in ending::fold(events.iter().cloned()) {
            // `HH:MM:SS.mmm`, in the local offset the event was written with.
            let (at, text) = say(&item, &mut places);
            output::line(&format!("{} {text}", at.get(11..23).unwrap_or(at)));
        }
        if events.is_empty() {
            output::diag("no events (yet)");
        }
    }
    Ok(ExitCode::Success)
}

/// Where an event happened, for the lines people read: `agent (wt-b, feature)` where the
/// repository has several work trees (each tree's branch read once).
pub struct Places {
    /// The main work tree (events written there name no `worktree`).
    main: String,
    several: bool,
    /// Each tree's branch, as read once (a long-running view clears it at each look).
    pub branches: HashMap<String, Option<String>>,
}

impl Places {
    pub fn of(ws: &Workspace) -> Places {
        let main = coord::worktree::shared_root(ws.root());
        Places {
            main: main.display().to_string(),
            several: coord::worktree::trees(ws.root()).len() > 1,
            branches: HashMap::new(),
        }
    }

    /// The agent of `e`, with its tree and branch where that tells something.
    pub fn who(&mut self, e: &Event) -> String {
        let agent = &e.agent;
        if !self.several && e.worktree.is_none() {
            return agent.to_string();
        }
        let tree = e.worktree.clone().unwrap_or_else(|| self.main.clone());
        let branch = (self.branches.entry(tree.clone()))
            .or_insert_with(|| coord::worktree::branch_at(Path::new(&tree)));
        let (name, branch) = (coord::worktree::short_name(&tree), branch.as_ref());
        let branch = branch.map(|b| format!(", {b}")).unwrap_or_default();
        format!("{agent} ({name}{branch})")
    }
}

/// A line's time and text: the event's, or an ending's (at its first event).
pub fn say<'a>(item: &'a Item, places: &mut Places) -> (&'a str, String) {
    match item {
        Item::One(e) => (&e.at, describe(e, &places.who(e))),
        Item::Ending(x) => (&x.first.at, describe_ending(x, &places.who(&x.first))),
    }
}

/// How many names a line lists before it says how many more there are.
const LISTED: usize = 6;

/// An ending in words: `claude-3f2a9c1b finished: released \`a.rs\`, \`b.rs\``.
pub fn describe_ending(x: &Ending, who: &str) -> String {
    let mut gone: Vec<String> = x.released.iter().map(|f| format!("`{f}`")).collect();
    gone.extend(x.claims.iter().map(|p| format!("the claim `{p}`")));
    let mut list = gone[..gone.len().min(LISTED)].join(", ");
    if gone.len() > LISTED {
        list.push_str(&format!(" and {} more", gone.len() - LISTED));
    }
    let text = match (x.left, &x.waits) {
        (true, _) if gone.is_empty() => format!("{who} finished"),
        (true, _) => format!("{who} finished: released {list}"),
        (false, Some(what)) => format!("{who} released {list}; NEEDS ITS USER: {what}"),
        (false, None) => format!("{who} released {list}"),
    };
    clean(&text)
}

/// An event in words; `a` is its agent as the line names it (see [`Places::who`]).
pub fn describe(e: &Event, a: &str) -> String {
    let f = e.file.as_deref().unwrap_or("?");
    let p = e.pattern.as_deref().unwrap_or(f);
    let s = |k: &str| e.str(k).unwrap_or("").to_string();
    let n = |k: &str| e.extra.get(k).map(|n| n.to_string()).unwrap_or_default();
    let via = match (&e.client, e.str("tool")) {
        (Some(c), Some(t)) => format!(" ({t} in {c})"),
        (Some(c), None) => format!(" (through {c})"),
        _ => String::new(),
    };
    let text = match e.event.as_str() {
        "lock_taken" => format!("{a} locked `{f}`"),
        "lock_released" if e.extra.contains_key("forced") => {
            format!("{a} removed the STALE lock of {} on `{f}`", s("from"))
        }
        "lock_released" => format!("{a} released `{f}`"),
        "lock_taken_over" => format!("{a} took `{f}` over from {} ({})", s("from"), s("why")),
        "lock_waiting" => format!("{a} waits for `{f}` (held by {})", s("holder")),
        "lock_refused" => format!("{a} was refused `{f}`: {}", s("why")),
        "claim_taken" => format!("{a} claimed `{p}`"),
        "claim_released" => format!("{a} released the claim `{p}`"),
        "claim_lost" | "lock_lost" => {
            let (what, remote) = (e.event.trim_end_matches("_lost"), s("remote"));
            let how = e
                .str("by")
                .map_or("gone".into(), |by| format!("taken over by {by}"));
            format!("{a} lost the {what} `{p}`: {how} on remote `{remote}` (its lease lapsed)")
        }
        "edit_denied" => format!("{a}'s edit of `{f}` was denied{via}"),
        "edit_made" => {
            // Hashed alike: the file is back as it was when it was locked (its backup).
            let (before, after) = (e.str("hash_before"), e.str("hash_after"));
            let back = before.is_some() && before == after;
            let back = if back { ": as it was when locked" } else { "" };
            format!("{a} edited `{f}`{via}{back}")
        }
        "shell_edit" => {
            let (how, holder) = (s("how"), s("holder"));
            format!("{a}'s shell command {how} `{f}`, held by {holder}{via}")
        }
        "message_sent" => format!("{a} sent message {} to {}", s("id"), s("to")),
        "dialogue_turn" => {
            let (number, folder, next) = (n("number"), s("folder"), s("next"));
            format!("{a} said message #{number} in `{folder}`; {next}'s turn")
        }
        "review_step" => {
            let (step, action, topic, next) = (n("step"), s("action"), s("topic"), s("next"));
            format!("{a} finished step {step} ({action}) of review `{topic}`; next {next}")
        }
        "agent_arrived" => format!("{a} arrived{via}"),
        "agent_left" => format!("{a} left"),
        "agent_crashed" => format!("an earlier session of {a} crashed ({})", s("why")),
        "needs_user" => format!("{a} NEEDS ITS USER: {}", s("what")),
        "user_answered" => format!("{a} no longer waits for its user"),
        other => match &e.file {
            Some(f) => format!("{a} {other} `{f}`"),
            None => format!("{a} {other}"),
        },
    };
    clean(&text)
}

/// What a cell of the timeline shows, strongest last.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Empty,
    Wait(usize),
    Hold(usize),
    TakeOver(usize),
    Denied(usize),
}

/// Draw `events` as rows (per file, or per agent), time across `width` columns.
pub fn timeline(events: &[Event], width: usize, color: bool, by_agent: bool) -> String {
    let timed: Vec<(Timestamp, &Event)> =
        events.iter().filter_map(|e| Some((e.time()?, e))).collect();
    let Some(start) = timed.first().map(|(t, _)| *t) else {
        return "no events (yet)\n".to_string();
    };
    let agents = unique(timed.iter().map(|(_, e)| e.agent.clone()));
    let who = |a: &str| agents.iter().position(|x| x == a).unwrap_or(0);
    // Holds, waits and denials (a point) as spans, each with its mark; an open one ends at the
    // last event, or now while it lasts.
    let mut spans: Vec<(String, usize, Timestamp, Option<Timestamp>, Mark)> = Vec::new();
    for (t, e) in &timed {
        let Some(file) = e.file.clone().or_else(|| e.pattern.clone()) else {
            continue;
        };
        let w = who(&e.agent);
        // Whether it ends the agent's wait for the file, whose holds of it it ends (anyone's:
        // taken over, forced), and what it starts.
        let (ends_wait, ends_holds, starts) = match e.event.as_str() {
            "lock_taken" | "claim_taken" => (true, Some(false), Some(Mark::Hold(w))),
            "lock_taken_over" => (true, Some(true), Some(Mark::TakeOver(w))),
            "lock_released" | "claim_released" | "claim_lost" | "lock_lost" => {
                (false, Some(e.extra.contains_key("forced")), None)
            }
            "lock_waiting" => (false, None, Some(Mark::Wait(w))),
            "lock_refused" | "edit_denied" => (true, None, Some(Mark::Denied(w))),
            _ => continue,
        };
        let mut waits = spans.iter_mut().rev();
        let wait = waits.find(|s| s.0 == file && s.3.is_none() && s.4 == Mark::Wait(w));
        if let Some(wait) = wait.filter(|_| ends_wait) {
            wait.3 = Some(*t);
        }
        for h in spans.iter_mut().filter(|h| h.0 == file && h.3.is_none()) {
            let held = matches!(h.4, Mark::Hold(_) | Mark::TakeOver(_));
            if held && ends_holds.is_some_and(|any| any || h.1 == w) {
                h.3 = Some(*t);
            }
        }
        let end = matches!(starts, Some(Mark::Denied(_))).then_some(*t);
        spans.extend(starts.map(|m| (file, w, *t, end, m)));
    }
    // Holds first, then waits, then denials: the order of the rows and of the painting.
    spans.sort_by_key(|s| match s.4 {
        Mark::Wait(_) => 1,
        Mark::Denied(_) => 2,
        _ => 0,
    });
    let last = timed.last().map(|(t, _)| *t).unwrap_or(start);
    let open = spans.iter().any(|s| s.3.is_none());
    let end = if open { last.max(clock::now()) } else { last };
    let span_ms = ((end - start).num_milliseconds()).max(1);

    let key_of = |file: &str, agent: usize| match by_agent {
        true => agents[agent].clone(),
        false => file.to_string(),
    };
    let keys = unique(spans.iter().map(|s| key_of(&s.0, s.1)));
    if keys.is_empty() {
        return "no locks, waits or denials to draw\n".to_string();
    }
    let longest = keys.iter().map(|k| k.chars().count()).max().unwrap_or(0);
    let label_w = longest.clamp(7, (width / 3).max(7));
    let bar_w = width.saturating_sub(label_w + 3).max(10);
    let col = |t: &Timestamp| -> usize {
        let ms = (*t - start).num_milliseconds().clamp(0, span_ms);
        ((ms as u128 * (bar_w as u128 - 1)) / span_ms as u128) as usize
    };
    // Per key its cells, and (per file) a second line of who waited when.
    let mut rows: Vec<(Vec<Mark>, Option<Vec<Mark>>)> =
        vec![(vec![Mark::Empty; bar_w], None); keys.len()];
    let row_of = |f: &str, a: usize| keys.iter().position(|k| *k == key_of(f, a)).unwrap_or(0);
    let paint = |cells: &mut Vec<Mark>, from: usize, to: usize, m: Mark| {
        for c in cells.iter_mut().take(to.min(bar_w - 1) + 1).skip(from) {
            if m > *c || matches!(*c, Mark::Hold(_)) && matches!(m, Mark::Hold(_)) {
                *c = m;
            }
        }
    };
    for (f, a, from, to, mark) in &spans {
        let row = &mut rows[row_of(f, *a)];
        let (c0, c1) = (col(from), col(&to.unwrap_or(end)));
        match mark {
            Mark::Wait(_) if by_agent => paint(&mut row.0, c0, c1, *mark),
            Mark::Wait(_) => {
                let line = row.1.get_or_insert_with(|| vec![Mark::Empty; bar_w]);
                paint(line, c0, c1, *mark);
            }
            Mark::Denied(_) => row.0[c0] = *mark,
            _ => {
                paint(&mut row.0, c0, c1, Mark::Hold(*a));
                if let Mark::TakeOver(_) = mark {
                    row.0[c0] = *mark;
                }
            }
        }
    }

    let rows_are = if by_agent { "agents" } else { "files" };
    let (from, to, span) = (hms(&start), hms(&end), span_text(span_ms));
    let head = format!("{rows_are} {from} → {to} ({span})");
    let mut out = format!("{}\n", output::title(&output::fit(&head, width), color));
    let axis_mid = hms(&(start + chrono::Duration::milliseconds(span_ms / 2)));
    let mut axis = vec![' '; bar_w];
    put(&mut axis, 0, &format!("|{from}"));
    if bar_w >= 40 {
        put(&mut axis, bar_w / 2 - 4, &axis_mid);
    }
    let right = format!("{to}|");
    put(&mut axis, bar_w.saturating_sub(right.len()), &right);
    let axis: String = axis.into_iter().collect();
    out.push_str(&format!("{:label_w$} │{axis}\n", ""));
    for (key, (row, waits)) in keys.iter().zip(&rows) {
        let (label, row) = (pad(&clean(key), label_w), cells(row, color, false));
        out.push_str(&format!("{label} │{row}\n"));
        if let Some(w) = waits {
            let line = format!("{} │{}", pad("  waits", label_w), cells(w, color, true));
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    let mut legend: Vec<(String, usize)> = (agents.iter().enumerate())
        .map(|(i, a)| {
            let (l, a) = (letter(i).to_string(), clean(a));
            let n = 2 + a.chars().count();
            (format!("{} {a}", paint_cell(&l, i, color, false)), n)
        })
        .collect();
    legend.extend(
        [
            "(upper case: held",
            "lower case: waiting",
            "> taken over",
            "x refused or denied)",
        ]
        .map(|t| (t.to_string(), t.chars().count())),
    );
    let mut len = 0;
    for (item, visible) in legend {
        if len > 0 && len + 2 + visible > width {
            out.push('\n');
            len = 0;
        } else if len > 0 {
            out.push_str("  ");
            len += 2;
        }
        out.push_str(&item);
        len += visible;
    }
    out.push('\n');
    out
}

/// `items` without repeats, in the order they first come.
fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    items.filter(|item| seen.insert(item.clone())).collect()
}

fn letter(i: usize) -> char {
    char::from(b'A' + (i % 26) as u8)
}

fn cells(cells: &[Mark], color: bool, waits: bool) -> String {
    let cell = |text: &str, a: usize, light: bool| paint_cell(text, a, color, light);
    (cells.iter())
        .map(|m| match *m {
            Mark::Empty => output::paint(if waits { " " } else { "·" }, output::DIM, color),
            Mark::Hold(a) => cell(&letter(a).to_string(), a, false),
            Mark::Wait(a) => cell(&letter(a).to_ascii_lowercase().to_string(), a, true),
            Mark::TakeOver(a) => cell(">", a, false),
            Mark::Denied(a) => cell("x", a, true),
        })
        .collect()
}

/// A cell in its agent's colour: a background for a hold, the foreground for a wait or a mark.
fn paint_cell(text: &str, agent: usize, color: bool, light: bool) -> String {
    const COLOURS: [u8; 6] = [4, 2, 5, 6, 3, 1];
    let c = COLOURS[agent % COLOURS.len()];
    let code = format!("{}{c}", if light { "1;3" } else { "30;4" });
    output::paint(text, &code, color)
}

fn put(line: &mut [char], at: usize, text: &str) {
    for (c, ch) in line.iter_mut().skip(at).zip(text.chars()) {
        *c = ch;
    }
}

fn pad(s: &str, w: usize) -> String {
    format!("{:w$}", output::fit(s, w))
}

/// `850ms`, `42s`, `5m27s`, `3h05m`.
fn span_text(ms: i64) -> String {
    let s = ms / 1000;
    match ms {
        ..1000 => format!("{ms}ms"),
        1000..60_000 => format!("{s}s"),
        60_000..3_600_000 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

fn hms(t: &Timestamp) -> String {
    t.format("%H:%M:%S").to_string()
}
