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
}

pub fn run(args: StatusArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let st = status::collect(&ws);
    if ctx.json {
        output::json(&st);
    } else if !ctx.quiet {
        output::line(&render(&st, output::color_enabled()));
    }
    Ok(ExitCode::Success)
}

/// The human view.
pub fn render(st: &Status, color: bool) -> String {
    let mut out = Vec::new();
    out.push(format!(
        "{} {}",
        output::title("Workspace", color),
        output::clean(&st.root)
    ));
    out.push(String::new());
    out.push(output::title("Agents", color));
    if st.agents.is_empty() {
        out.push("  No agents".into());
    } else {
        let rows = st
            .agents
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
            .collect();
        out.push(output::table(
            &["AGENT", "STATUS", "HEARTBEAT", "WORKING ON", "FILE", "LOCK"],
            rows,
            color,
        ));
    }
    out.push(String::new());
    out.push(output::title("Locks", color));
    if st.locks.is_empty() {
        out.push("  No locks".into());
    } else {
        let rows = st
            .locks
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
            .collect();
        out.push(output::table(
            &["FILE", "HOLDER", "SINCE", "STATE", "NOTE"],
            rows,
            color,
        ));
    }
    if !st.waits.is_empty() {
        out.push(String::new());
        out.push(output::title("Waiting", color));
        let rows = st
            .waits
            .iter()
            .map(|w| {
                let whom = if w.waits_for.is_empty() {
                    format!("earlier waiters (#{} in line)", w.position)
                } else {
                    w.waits_for.join(", ")
                };
                let now = coord::clock::now();
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
            .collect();
        out.push(output::table(
            &["AGENT", "FILE", "WAITS FOR", "SINCE"],
            rows,
            color,
        ));
    }
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
    if !st.partners.is_empty() {
        out.push(String::new());
        out.push(output::title("Sessions online (stamp card)", color));
        let rows = st
            .partners
            .iter()
            .map(|p| {
                vec![
                    Cell::plain(&p.partner_name),
                    Cell::plain(output::ago(p.heartbeat_age_s)),
                    Cell::opt(p.current_task.as_deref()),
                    Cell::plain(&p.session_id),
                ]
            })
            .collect();
        out.push(output::table(
            &["PARTNER", "HEARTBEAT", "TASK", "SESSION"],
            rows,
            color,
        ));
    }
    if !st.handshakes.is_empty() {
        out.push(String::new());
        out.push(output::title(
            if st.protocol_v3_active {
                "Handshakes (Protocol V3 active)"
            } else {
                "Handshakes (Protocol V3 not yet active)"
            },
            color,
        ));
        let rows = st
            .handshakes
            .iter()
            .map(|h| {
                vec![
                    Cell::plain(&h.from),
                    Cell::plain(&h.to),
                    Cell::state(&h.status),
                ]
            })
            .collect();
        out.push(output::table(&["FROM", "TO", "STATUS"], rows, color));
    }
    if st.unread.values().any(|n| *n > 0) {
        out.push(String::new());
        out.push(output::title("Unread messages", color));
        let rows = st
            .unread
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(agent, n)| vec![Cell::plain(agent), Cell::plain(n.to_string())])
            .collect();
        out.push(output::table(&["AGENT", "UNREAD"], rows, color));
    }
    if let Some(d) = &st.dialogue {
        out.push(String::new());
        out.push(output::title("Dialogue", color));
        let rows = vec![vec![
            Cell::plain(&d.folder),
            Cell::plain(&d.topic),
            Cell::plain(d.message_count.to_string()),
            Cell::opt(d.turn.as_deref()),
            Cell::state(&d.state),
        ]];
        out.push(output::table(
            &["FOLDER", "TOPIC", "MESSAGES", "TURN", "STATE"],
            rows,
            color,
        ));
    }
    if !st.reviews.is_empty() {
        out.push(String::new());
        out.push(output::title("Open reviews", color));
        let rows = st
            .reviews
            .iter()
            .map(|r| {
                vec![
                    Cell::plain(&r.topic),
                    Cell::plain(&r.next_actor),
                    Cell::opt(r.next_action.as_deref()),
                    Cell::plain(r.open_issues.to_string()),
                ]
            })
            .collect();
        out.push(output::table(
            &["TOPIC", "NEXT ACTOR", "NEXT ACTION", "OPEN ISSUES"],
            rows,
            color,
        ));
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
