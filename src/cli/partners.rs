//! `coord partners`: the stamp card, one row per session.

use clap::Args;

use coord::ExitCode;
use coord::clock;
use coord::lock::format_since;
use coord::stamp;

use super::Ctx;
use super::output::{self, Cell};

/// Show the stamp card: every session, online, offline or crashed
///
///   coord partners
///   coord partners --json | jq '.partners[] | select(.status == "online")'
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PartnersArgs {}

pub fn run(_args: PartnersArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let (rows, unreadable) = stamp::scan(ws.root());
    for u in &unreadable {
        let (path, why) = (output::clean(&u.path), output::clean(&u.why));
        output::diag(&format!("warning: cannot read `{path}`: {why}"));
    }
    ctx.emit(&serde_json::json!({ "partners": rows }), || {
        if rows.is_empty() {
            let none =
                "No sessions on the stamp card (clock in with `coord startup --partner NAME`)";
            return none.to_string();
        }
        let now = clock::now();
        let when = |t: &str| match clock::parse_timestamp(t) {
            Some(ts) => format_since(Some(&ts), &now),
            None => t.to_string(),
        };
        let table = rows
            .iter()
            .map(|r| {
                vec![
                    Cell::plain(r.id.to_string()),
                    Cell::plain(&r.partner_name),
                    Cell::state(r.status.as_str()),
                    Cell::plain(when(&r.clocked_in)),
                    Cell::opt(r.clocked_out.as_deref().map(when).as_deref()),
                    Cell::plain(output::ago(r.heartbeat_age(&now).map(|a| a.as_secs()))),
                    Cell::opt(r.current_task.as_deref()),
                    Cell::plain(&r.session_id),
                ]
            })
            .collect();
        let headers = [
            "ID",
            "PARTNER",
            "STATUS",
            "CLOCKED IN",
            "CLOCKED OUT",
            "HEARTBEAT",
            "TASK",
            "SESSION",
        ];
        output::table(&headers, table, output::color_enabled())
    });
    Ok(ExitCode::Success)
}
