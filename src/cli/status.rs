//! `coord status [DIR] [--json]`: agents, locks, handshakes, messages and open reviews in one view.

use std::path::PathBuf;

use clap::Args;

use coord::ExitCode;
use coord::status::{self, Status};

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
    if ctx.json {
        output::json(&st);
    } else if !ctx.quiet {
        output::line(&render(&st, output::color_enabled()));
        if st.agents.iter().any(|a| a.needs_user.is_some()) || !st.waits.is_empty() {
            output::line(
                "\nhint: agents are waiting; `coord ui` shows who waits for whom, live in a browser",
            );
        }
    }
    Ok(ExitCode::Success)
}

/// The human view: one section per kind of state, the empty ones left out (but for agents and
/// locks, which say so).
pub fn render(st: &Status, color: bool) -> String {
    let mut out = vec![format!(
        "{} {}",
        output::title("Workspace", color),
        output::clean(&st.root)
    )];
    let mut section = |title: &str, headers: &[&str], rows: Vec<Vec<Cell>>, empty: Option<&str>| {
        if rows.is_empty() && empty.is_none() {
            return;
        }
        out.push(String::new());
        out.push(output::title(title, color));
        match empty {
            Some(none) if rows.is_empty() => out.push(format!("  {none}")),
            _ => out.push(output::table(headers, rows, color)),
        }
    };
    section(
        "Needs you",
        &["AGENT", "WAITING", "ASKS"],
        needs_rows(st),
        None,
    );
    section(
        "Agents",
        &["AGENT", "STATUS", "HEARTBEAT", "WORKING ON", "FILE", "LOCK"],
        agent_rows(st),
        Some("No agents"),
    );
    section(
        "Locks",
        &["FILE", "HOLDER", "SINCE", "STATE", "NOTE"],
        lock_rows(st),
        Some("No locks"),
    );
    if !st.claims.is_empty() {
        section(
            "Claims",
            &["PATTERN", "HOLDER", "SINCE", "STATE", "NOTE"],
            claim_rows(st),
            None,
        );
    }
    section(
        "Waiting",
        &["AGENT", "FILE", "WAITS FOR", "SINCE"],
        wait_rows(st),
        None,
    );
    for cycle in &st.deadlocks {
        let steps: Vec<String> = cycle
            .iter()
            .map(|e| format!("{} waits for `{}` held by {}", e.agent, e.file, e.holder))
            .collect();
        out.push(format!(
            "  {} {}",
            output::paint_bad("DEADLOCK:", color),
            output::clean(&steps.join(", "))
        ));
    }
    let mut section = |title: &str, headers: &[&str], rows: Vec<Vec<Cell>>| {
        if !rows.is_empty() {
            out.push(String::new());
            out.push(output::title(title, color));
            out.push(output::table(headers, rows, color));
        }
    };
    section(
        "Nested workspaces (their own agents, locks and messages)",
        &["FOLDER", "AGENTS", "SEE"],
        nested_rows(st),
    );
    section(
        "Sessions online (stamp card)",
        &["PARTNER", "HEARTBEAT", "TASK", "SESSION"],
        partner_rows(st),
    );
    section(
        if st.protocol_v3_active {
            "Handshakes (Protocol V3 active)"
        } else {
            "Handshakes (Protocol V3 not yet active)"
        },
        &["FROM", "TO", "STATUS"],
        handshake_rows(st),
    );
    section(
        "Unread messages",
        &["AGENT", "UNREAD"],
        st.unread
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(agent, n)| vec![Cell::plain(agent), Cell::plain(n.to_string())])
            .collect(),
    );
    section(
        "Dialogue",
        &["FOLDER", "TOPIC", "MESSAGES", "TURN", "STATE"],
        dialogue_rows(st),
    );
    section(
        "Open reviews",
        &["TOPIC", "NEXT ACTOR", "NEXT ACTION", "OPEN ISSUES"],
        review_rows(st),
    );
    if !st.conflicts.is_empty() || st.conflicts_note.is_some() {
        out.push(String::new());
        out.push(output::title(
            "Changed on two or more branches (before the merge)",
            color,
        ));
        if !st.conflicts.is_empty() {
            out.push(output::table(
                &["FILE", "MERGE", "BRANCHES"],
                conflict_rows(st),
                color,
            ));
        }
        if let Some(note) = &st.conflicts_note {
            out.push(format!("  note: {}", output::clean(note)));
        }
    }
    if !st.unreadable.is_empty() {
        out.push(String::new());
        out.push(output::title("Could not read", color));
        for u in &st.unreadable {
            out.push(format!(
                "  {}: {}",
                output::clean(&u.path),
                output::clean(&u.why)
            ));
        }
    }
    out.join("\n")
}

fn conflict_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.conflicts
        .iter()
        .map(|c| {
            let sides: Vec<String> = c
                .trees
                .iter()
                .map(|t| match &t.branch {
                    Some(b) => format!("{b} ({})", t.worktree),
                    None => format!("detached ({})", t.worktree),
                })
                .collect();
            vec![
                Cell::plain(&c.file),
                Cell::state(c.state),
                Cell::plain(sides.join(", ")),
            ]
        })
        .collect()
}

fn nested_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.nested
        .iter()
        .map(|n| {
            let agents: Vec<String> = n
                .agents
                .iter()
                .map(|a| format!("{} {}", a.name, a.status))
                .collect();
            vec![
                Cell::plain(format!("{}/", n.root)),
                Cell::plain(if agents.is_empty() {
                    "-".to_string()
                } else {
                    agents.join(", ")
                }),
                Cell::plain(format!("coord -C {} status", coord::shell::arg(&n.root))),
            ]
        })
        .collect()
}

fn needs_rows(st: &Status) -> Vec<Vec<Cell>> {
    let now = coord::clock::now();
    st.agents
        .iter()
        .filter_map(|a| {
            let n = a.needs_user.as_ref()?;
            let age = coord::clock::parse_timestamp(&n.since)
                .map(|t| coord::clock::age(&now, &t).as_secs());
            Some(vec![
                Cell::plain(&a.agent),
                Cell::plain(output::ago(age)),
                Cell::opt(Some(n.what.as_str()).filter(|w| !w.is_empty())),
            ])
        })
        .collect()
}

fn agent_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.agents
        .iter()
        .map(|a| {
            vec![
                Cell::plain(&a.agent),
                Cell::state(&a.status),
                Cell::plain(output::ago(a.heartbeat_age_s)),
                Cell::opt(a.working_on.as_deref()),
                Cell::opt(a.current_file.as_deref()),
                Cell::state(a.lock_status.as_deref().unwrap_or("-")),
            ]
        })
        .collect()
}

fn lock_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.locks
        .iter()
        .map(|l| {
            vec![
                Cell::plain(&l.file),
                Cell::plain(&l.agent),
                Cell::plain(output::ago(l.age_s)),
                Cell::state(l.state.as_str()),
                Cell::opt(l.stale_reason.as_deref().or(l.reason.as_deref())),
            ]
        })
        .collect()
}

fn claim_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.claims
        .iter()
        .map(|c| {
            let holder = match (&c.worktree, &c.branch) {
                (Some(w), b) if *w != st.root => format!(
                    "{} (worktree {w}, branch {})",
                    c.agent,
                    b.as_deref().unwrap_or("(detached)")
                ),
                _ => c.agent.clone(),
            };
            vec![
                Cell::plain(&c.pattern),
                Cell::plain(holder),
                Cell::plain(output::ago(c.age_s)),
                Cell::state(c.state.as_str()),
                Cell::opt(c.stale_reason.as_deref().or(c.reason.as_deref())),
            ]
        })
        .collect()
}

fn wait_rows(st: &Status) -> Vec<Vec<Cell>> {
    let now = coord::clock::now();
    st.waits
        .iter()
        .map(|w| {
            let whom = if w.waits_for.is_empty() {
                format!("earlier waiters (#{} in line)", w.position)
            } else {
                w.waits_for.join(", ")
            };
            let age = w
                .since
                .as_deref()
                .and_then(coord::clock::parse_timestamp)
                .map(|t| coord::clock::age(&now, &t).as_secs());
            vec![
                Cell::plain(&w.agent),
                Cell::plain(&w.file),
                Cell::plain(whom),
                Cell::plain(output::ago(age)),
            ]
        })
        .collect()
}

fn handshake_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.handshakes
        .iter()
        .map(|h| {
            vec![
                Cell::plain(&h.from),
                Cell::plain(&h.to),
                Cell::state(&h.status),
            ]
        })
        .collect()
}

fn dialogue_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.dialogue
        .iter()
        .map(|d| {
            vec![
                Cell::plain(&d.folder),
                Cell::plain(&d.topic),
                Cell::plain(d.message_count.to_string()),
                Cell::opt(d.turn.as_deref()),
                Cell::state(&d.state),
            ]
        })
        .collect()
}

fn partner_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.partners
        .iter()
        .map(|p| {
            vec![
                Cell::plain(&p.partner_name),
                Cell::plain(output::ago(p.heartbeat_age_s)),
                Cell::opt(p.current_task.as_deref()),
                Cell::plain(&p.session_id),
            ]
        })
        .collect()
}

fn review_rows(st: &Status) -> Vec<Vec<Cell>> {
    st.reviews
        .iter()
        .map(|r| {
            vec![
                Cell::plain(&r.topic),
                Cell::plain(&r.next_actor),
                Cell::opt(r.next_action.as_deref()),
                Cell::plain(r.open_issues.to_string()),
            ]
        })
        .collect()
}
