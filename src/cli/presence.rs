//! `coord presence [DIR] [TASK]`: create or refresh this agent's presence (heartbeat now).

use std::path::Path;

use clap::Args;

use coord::ExitCode;
use coord::presence::{self, Update};
use coord::session::SESSION_ENV;
use coord::stamp;
use coord::status::{AgentView, agent_view};
use coord::workspace::{AgentId, Workspace};

use super::{Ctx, output};

/// Create or refresh this agent's presence (heartbeat now)
///
/// Run it every 30-60 seconds while working; an agent whose heartbeat is older than two
/// minutes is INACTIVE to the others.
///
///   coord -a claude presence . "Task_123"
///   coord -a claude presence --status finished
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PresenceArgs {
    /// The workspace folder (like `--dir`); a lone plain word (no `/`, not `.`) is the TASK
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<String>,
    /// What the agent works on (`working_on`)
    #[arg(value_name = "TASK")]
    task: Option<String>,
    /// The file the agent works on (`current_file`)
    #[arg(long, value_name = "F")]
    file: Option<String>,
    /// ACTIVE (default) or FINISHED
    #[arg(long, value_parser = ["active", "finished"])]
    status: Option<String>,
}

pub fn run(args: PresenceArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    // A lone argument is the DIR only when it is written like a path (`.`, `..`, `./x`, `/x`,
    // `a/b`); a plain word is the TASK, even if a folder of that name happens to exist.
    let (dir, task) = match (args.dir, args.task) {
        (Some(one), None) if !(one == "." || one == ".." || one.contains('/')) => (None, Some(one)),
        pair => pair,
    };
    let ws = ctx.workspace(dir.as_deref().map(Path::new))?;
    let agent = ctx.agent()?;
    let file = args.file.map(|f| ws.one_file(ctx.cwd(), &f, "presence"));
    let update = Update {
        finished: args.status.map(|s| s == "finished"),
        working_on: task,
        current_file: file.transpose()?.map(|t| t.rel),
        ..Default::default()
    };
    let session = std::env::var(SESSION_ENV).ok().filter(|s| !s.is_empty());
    let view = refresh(&ws, &agent, &update, session.as_deref())?;
    ctx.emit(&view, || updated_line(&view));
    Ok(ExitCode::Success)
}

/// Refresh the stamp card (only `session`'s row when given) and write the presence.
pub fn refresh(
    ws: &Workspace,
    agent: &AgentId,
    update: &Update,
    session: Option<&str>,
) -> Result<AgentView, coord::Error> {
    let written = {
        let _mutex = ws.lock_mutex()?;
        stamp::refresh_partner(ws.root(), agent, session, false)?;
        presence::write(ws.root(), agent, update)?
    };
    coord::workspace::nested::register(ws.root());
    super::remote::keep_renewed(ws, agent);
    Ok(agent_view(&written, &coord::clock::now()))
}

/// `Presence updated: AGENT ACTIVE (working on …)`.
pub fn updated_line(view: &AgentView) -> String {
    let working_on = output::working_on(view.working_on.as_deref());
    format!(
        "Presence updated: {} {}{working_on}",
        view.agent, view.status
    )
}
