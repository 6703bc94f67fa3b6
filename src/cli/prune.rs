//! `coord prune [--dry-run]`: remove what finished agents left.

use clap::Args;

use coord::ExitCode;
use coord::prune;

use super::{Ctx, output};

/// Remove what finished agents left behind
///
/// Their presences, stamp-card rows, read marks and empty wait queues. An agent is finished when its presence says FINISHED (or it has been silent for over a
/// day) and it holds no lock, waits in no queue and has no live session. Everything of the
/// other agents is kept. History events older than its age bound are dropped too, and so are
/// entries of the index of locks (`.coord/held/`) whose lock file is gone (removed by hand).
///
///   coord prune --dry-run     # what would go
///   coord prune
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PruneArgs {
    /// Say what would be removed, remove nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: PruneArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let out = prune::prune(&ws, args.dry_run)?;
    if ctx.json_or_quiet(&out) {
        return Ok(ExitCode::Success);
    }
    let verb = if out.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for path in &out.removed {
        output::line(&format!("{verb} {}", output::clean(path)));
    }
    let events = out.history_events;
    if events > 0 {
        let s = if events == 1 { "" } else { "s" };
        output::line(&format!(
            "{verb} {events} history event{s} past the age bound"
        ));
    }
    if out.removed.is_empty() && events == 0 {
        output::line("Nothing to prune");
    } else if !out.agents.is_empty() {
        let (n, agents) = (out.agents.len(), out.agents.join(", "));
        let s = if n == 1 { "" } else { "s" };
        output::line(&format!("{n} finished agent{s}: {agents}"));
    }
    Ok(ExitCode::Success)
}
