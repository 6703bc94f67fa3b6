//! `coord status [DIR] [--json]`: agents, locks, handshakes, messages and open reviews in one view.

use std::path::PathBuf;

use clap::Args;

use coord::ExitCode;
use coord::status::{self, LockView, Status};

use super::Ctx;
use super::output::{self, Cell};

/// Show agents, locks, handshakes, messages, the dialogue and reviews in one view
///
///   coord status
///   coord status --json | jq '.locks[] | select(.state != "LIVE")'
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct StatusArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Also show agents that finished over an hour ago (they fade from the view)
    #[arg(long)]
    all: bool,
}

pub fn run(args: StatusArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let st = status::document(&ws, args.all);
    let waiting = st.agents.iter().any(|a| a.needs_user.is_some()) || !st.waits.is_empty();
    let hint =
        "\n\nhint: agents are waiting; `coord ui` shows who waits for whom, live in a browser";
    let hint = if waiting { hint } else { "" };
    ctx.emit(&st, || render(&st, output::color_enabled()) + hint);
    Ok(ExitCode::Success)
}

/// What a lock's NOTE says: why it is stale; else, for a hook's lock, the holder's prompt or
/// task when known; else the reason its holder gave.
fn lock_note(st: &Status, l: &LockView) -> String {
    if let Some(why) = &l.stale_reason {
        return why.clone();
    }
    let holder = st.agents.iter().find(|a| a.agent == l.agent);
    let task = holder.and_then(status::AgentView::task);
    match (&l.client, task, &l.reason) {
        (Some(_), Some(task), _) | (None, Some(task), None) => task,
        (_, _, Some(reason)) => reason.clone(),
        _ => String::new(),
    }
}

/// The human view: one section per kind of state, the empty ones left out (but for agents and
/// locks, which say so).
pub fn render(st: &Status, color: bool) -> String {
    let now = coord::clock::now();
    let ago_of = |since: Option<&str>| {
        let t = since.and_then(coord::clock::parse_timestamp);
        output::ago(t.map(|t| coord::clock::age(&now, &t).as_secs()))
    };
    let root = output::clean(&st.shared_root);
    let mut out = vec![format!("{} {root}", output::title("Workspace", color))];
    // Each work tree of a repository shows the one shared workspace: say which tree this is.
    let several = st.worktrees.len() > 1;
    if several {
        let main = st.root == st.shared_root;
        let here = if main { "the main one" } else { &st.root };
        let branch =
            (st.branch.as_deref()).map_or(" (detached)".to_string(), |b| format!(", branch {b}"));
        let trees = st.worktrees.len();
        let line = format!("  shared by {trees} work trees; you are in {here}{branch}");
        out.push(output::clean(&line));
    }
    let mut section = |title: &str, headers: &[&str], rows: Vec<Vec<Cell>>, empty: Option<&str>| {
        if rows.is_empty() && empty.is_none() {
            return;
        }
        out.extend([String::new(), output::title(title, color)]);
        match empty {
            Some(none) if rows.is_empty() => out.push(format!("  {none}")),
            _ => out.push(output::table(headers, rows, color)),
        }
    };
    let needs = st.agents.iter().filter_map(|a| {
        let n = a.needs_user.as_ref()?;
        // Where it is: its label, else its work tree's folder.
        let place = match (a.label.as_str(), a.worktree.as_deref()) {
            ("", tree) => tree.map_or("-", coord::worktree::short_name),
            (label, _) => label,
        };
        Some(vec![
            Cell::plain(&a.agent),
            Cell::opt(Some(place)),
            Cell::plain(ago_of(Some(&n.since))),
            Cell::opt(Some(&n.what)),
        ])
    });
    let headers = ["AGENT", "WHERE", "WAITING", "ASKS"];
    section("Needs you", &headers, needs.collect(), None);
    let agents = st.agents.iter().map(|a| {
        vec![
            Cell::plain(&a.agent),
            Cell::state(&a.status),
            Cell::plain(output::ago(a.heartbeat_age_s)),
            Cell::opt(Some(&a.label)),
            Cell::opt(Some(&a.holds.join(", "))),
            Cell::state(a.lock_status.as_deref().unwrap_or("-")),
        ]
    });
    let headers = ["AGENT", "STATUS", "HEARTBEAT", "WHO", "WORKING ON", "LOCK"];
    section("Agents", &headers, agents.collect(), Some("No agents"));
    // Where the repository has several work trees (or a lock lies in one that is gone): which
    // tree and branch each lock is in.
    let elsewhere = |l: &LockView| l.worktree.as_ref().is_some_and(|w| *w != st.shared_root);
    let trees = several || st.locks.iter().any(elsewhere);
    let locks = st.locks.iter().map(|l| {
        let mut row = vec![Cell::plain(&l.file), Cell::plain(&l.agent)];
        if trees {
            let tree = l.worktree.as_deref().map(coord::worktree::short_name);
            row.push(Cell::opt(tree));
            row.push(Cell::opt(l.branch.as_deref()));
        }
        row.extend([
            Cell::plain(output::ago(l.age_s)),
            Cell::state(l.state.as_str()),
            Cell::opt(Some(&lock_note(st, l))),
        ]);
        row
    });
    let headers: &[&str] = if trees {
        &[
            "FILE", "HOLDER", "WORKTREE", "BRANCH", "SINCE", "STATE", "NOTE",
        ]
    } else {
        &["FILE", "HOLDER", "SINCE", "STATE", "NOTE"]
    };
    section("Locks", headers, locks.collect(), Some("No locks"));
    let claims = st.claims.iter().map(|c| {
        let holder = match (&c.worktree, &c.branch) {
            (Some(w), b) if *w != st.root => {
                format!("{} ({})", c.agent, coord::worktree::place(w, b.as_deref()))
            }
            _ => c.agent.clone(),
        };
        vec![
            Cell::plain(&c.pattern),
            Cell::plain(holder),
            Cell::plain(output::ago(c.age_s)),
            Cell::state(c.state.as_str()),
            Cell::opt(c.stale_reason.as_deref().or(c.reason.as_deref())),
        ]
    });
    let headers = ["PATTERN", "HOLDER", "SINCE", "STATE", "NOTE"];
    section("Claims", &headers, claims.collect(), None);
    let waits = st.waits.iter().map(|w| {
        let whom = if w.waits_for.is_empty() {
            format!("earlier waiters (#{} in line)", w.position)
        } else {
            w.waits_for.join(", ")
        };
        let since = ago_of(w.since.as_deref());
        [&w.agent, &w.file, &whom, &since].map(Cell::plain).into()
    });
    let headers = ["AGENT", "FILE", "WAITS FOR", "SINCE"];
    section("Waiting", &headers, waits.collect(), None);
    for cycle in &st.deadlocks {
        let deadlock = output::paint("DEADLOCK:", output::BAD, color);
        let cycle = output::clean(&output::cycle(cycle));
        out.push(format!("  {deadlock} {cycle}"));
    }
    let mut section = |title: &str, headers: &[&str], rows: Vec<Vec<Cell>>| {
        if !rows.is_empty() {
            out.extend([String::new(), output::title(title, color)]);
            out.push(output::table(headers, rows, color));
        }
    };
    let nested = st.nested.iter().map(|n| {
        let agents: Vec<String> = (n.agents.iter())
            .map(|a| format!("{} {}", a.name, a.status))
            .collect();
        let agents = (!agents.is_empty()).then(|| agents.join(", "));
        let see = format!("coord -C {} status", coord::shell::arg(&n.root));
        let root = format!("{}/", n.root);
        [root, agents.unwrap_or_else(|| "-".into()), see]
            .map(Cell::plain)
            .into()
    });
    let title = "Nested workspaces (their own agents, locks and messages)";
    section(title, &["FOLDER", "AGENTS", "SEE"], nested.collect());
    // An agent's one session says nothing its row in the agents table does not: only the
    // others are shown.
    let sessions_of = |name: &str| {
        st.partners
            .iter()
            .filter(|p| p.partner_name.eq_ignore_ascii_case(name))
            .count()
    };
    let listed = |name: &str| st.agents.iter().any(|a| a.agent.eq_ignore_ascii_case(name));
    let sessions = st.partners.iter().filter_map(|p| {
        let note = match (listed(&p.partner_name), sessions_of(&p.partner_name)) {
            (false, _) => "no presence here (left without clocking out?)".to_string(),
            (true, n) if n > 1 => format!("one of {n} sessions of this agent"),
            _ => return None,
        };
        Some(vec![
            Cell::plain(&p.partner_name),
            Cell::plain(output::ago(p.heartbeat_age_s)),
            Cell::opt(p.current_task.as_deref()),
            Cell::plain(&p.session_id),
            Cell::plain(note),
        ])
    });
    let headers = ["AGENT", "HEARTBEAT", "TASK", "SESSION", "NOTE"];
    let title = "More clocked-in sessions (all of them: `coord partners`)";
    section(title, &headers, sessions.collect());
    let handshakes = st.handshakes.iter().map(|h| {
        vec![
            Cell::plain(&h.from),
            Cell::plain(&h.to),
            Cell::state(h.status.as_str()),
        ]
    });
    let title = match st.protocol_v3_active {
        true => "Handshakes (Protocol V3 active)",
        false => "Handshakes (Protocol V3 not yet active)",
    };
    section(title, &["FROM", "TO", "STATUS"], handshakes.collect());
    let unread = st.unread.iter().filter(|(_, n)| **n > 0);
    let unread = unread.map(|(agent, n)| vec![Cell::plain(agent), Cell::plain(n.to_string())]);
    section("Unread messages", &["AGENT", "UNREAD"], unread.collect());
    let dialogue = st.dialogue.iter().map(|d| {
        vec![
            Cell::plain(&d.folder),
            Cell::plain(&d.topic),
            Cell::plain(d.message_count.to_string()),
            Cell::opt(d.turn.as_deref()),
            Cell::state(&d.state),
        ]
    });
    let headers = ["FOLDER", "TOPIC", "MESSAGES", "TURN", "STATE"];
    section("Dialogue", &headers, dialogue.collect());
    let reviews = st.reviews.iter().map(|r| {
        vec![
            Cell::plain(&r.topic),
            Cell::plain(&r.next_actor),
            Cell::opt(r.next_action.as_deref()),
            Cell::plain(r.open_issues.to_string()),
        ]
    });
    let headers = ["TOPIC", "NEXT ACTOR", "NEXT ACTION", "OPEN ISSUES"];
    section("Open reviews", &headers, reviews.collect());
    let conflicts = st.conflicts.iter().map(|c| {
        let side = |t: &coord::conflicts::Side| {
            let branch = t.branch.as_deref().unwrap_or("detached");
            format!("{branch} ({})", t.worktree)
        };
        let sides: Vec<String> = c.trees.iter().map(side).collect();
        vec![
            Cell::plain(&c.file),
            Cell::state(c.state),
            Cell::plain(sides.join(", ")),
        ]
    });
    let title = "Changed on two or more branches (before the merge)";
    section(title, &["FILE", "MERGE", "BRANCHES"], conflicts.collect());
    if let Some(note) = &st.conflicts_note {
        if st.conflicts.is_empty() {
            out.extend([String::new(), output::title(title, color)]);
        }
        out.push(format!("  note: {}", output::clean(note)));
    }
    if let Some(r) = &st.remote {
        out.extend(remote_section(r, color));
    }
    if !st.unreadable.is_empty() {
        out.extend([String::new(), output::title("Could not read", color)]);
        for u in &st.unreadable {
            let (path, why) = (output::clean(&u.path), output::clean(&u.why));
            out.push(format!("  {path}: {why}"));
        }
    }
    out.join("\n")
}

/// The other clones (contract §13): their claims and agents as last synced, how old that is,
/// and the remote branches that changed this branch's files.
fn remote_section(r: &status::RemoteStatus, color: bool) -> Vec<String> {
    let v = &r.view;
    let now = coord::clock::now();
    let when = |t| super::remote::short_time(t, &now);
    let synced = match v.age {
        Some(a) => format!("synced {} ago", coord::clock::format_age(a)),
        None => "never synced: run coord remote sync".to_string(),
    };
    let mut out = vec![
        String::new(),
        output::title(&format!("Remote `{}` ({synced})", v.remote), color),
    ];
    let claims = v.claims.iter().map(|c| {
        vec![
            Cell::plain(c.pattern.as_str()),
            Cell::plain(format!("{}@{}", c.holder.agent, c.holder.host)),
            Cell::plain(when(&c.since)),
            Cell::opt(c.reason.as_deref()),
            Cell::state(if c.stale { "STALE" } else { "LIVE" }),
            Cell::plain(when(&c.lease_until)),
        ]
    });
    if v.claims.is_empty() {
        out.push("  no claims of other clones".into());
    } else {
        let headers = ["CLAIM", "HOLDER", "SINCE", "REASON", "STATE", "LEASE UNTIL"];
        out.push(output::table(&headers, claims.collect(), color));
    }
    let agents = v.agents.iter().map(|a| {
        let who = format!("{}@{}", a.agent, a.host);
        vec![Cell::plain(who), Cell::plain(a.working_on.join(", "))]
    });
    let branches = r.branches.iter().map(|b| {
        let files = b.files.join(", ");
        vec![
            Cell::plain(&b.branch),
            Cell::state(b.state),
            Cell::plain(files),
        ]
    });
    let branch_headers = ["REMOTE BRANCH", "MERGE", "FILES ALSO CHANGED HERE"];
    for (headers, rows) in [
        (&["AGENT", "WORKING ON"][..], agents.collect::<Vec<_>>()),
        (&branch_headers[..], branches.collect()),
    ] {
        if !rows.is_empty() {
            out.push(output::table(headers, rows, color));
        }
    }
    for w in &v.warnings {
        out.push(format!("  warning: {}", output::clean(w)));
    }
    out
}
