//! `coord partners`: the stamp card, one row per session.

use clap::Args;
use serde::Serialize;

use coord::ExitCode;
use coord::clock;
use coord::v3::lock::format_since;
use coord::v3::stamp::{self, Row};

use super::Ctx;
use super::output::{self, Cell};

/// Show the stamp card: every session, online, offline or crashed
///
///   coord partners
///   coord partners --json | jq '.partners[] | select(.status == "online")'
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PartnersArgs {}

#[derive(Serialize)]
struct PartnersReport<'a> {
    partners: &'a [Row],
}

pub fn run(_args: PartnersArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let (rows, unreadable) = stamp::scan(ws.root());
    for u in &unreadable {
        output::diag(&format!(
            "warning: cannot read `{}`: {}",
            output::clean(&u.path),
            output::clean(&u.why)
        ));
    }
    if ctx.json {
        output::json(&PartnersReport { partners: &rows });
        return Ok(ExitCode::Success);
    }
    if ctx.quiet {
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        output::line(
            "No sessions on the stamp card (clock in with `coord startup --partner NAME`)",
        );
        return Ok(ExitCode::Success);
    }
    let now = clock::now();
    let when = |t: Option<&str>| match t {
        Some(t) => clock::parse_timestamp(t)
            .map(|ts| format_since(Some(&ts), &now))
            .unwrap_or_else(|| t.to_string()),
        None => "-".into(),
    };
    let table = rows
        .iter()
        .map(|r| {
            vec![
                Cell::plain(r.id.to_string()),
                Cell::plain(&r.partner_name),
                Cell::state(r.status.as_str()),
                Cell::plain(when(Some(&r.clocked_in))),
                Cell::opt(
                    r.clocked_out
                        .is_some()
                        .then(|| when(r.clocked_out.as_deref()))
                        .as_deref(),
                ),
                Cell::plain(output::ago(r.heartbeat_age(&now).map(|a| a.as_secs()))),
                Cell::opt(r.current_task.as_deref()),
                Cell::plain(&r.session_id),
            ]
        })
        .collect();
    output::line(&output::table(
        &[
            "ID",
            "PARTNER",
            "STATUS",
            "CLOCKED IN",
            "CLOCKED OUT",
            "HEARTBEAT",
            "TASK",
            "SESSION",
        ],
        table,
        output::color_enabled(),
    ));
    Ok(ExitCode::Success)
}
