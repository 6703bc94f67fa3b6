//! `coord prune [--dry-run]`: remove what finished agents left.

use clap::Args;

use coord::ExitCode;

use super::Ctx;

/// Remove what finished agents left: presences, stamp-card rows, read marks, empty queues
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Say what would be removed, remove nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(_args: PruneArgs, _ctx: &Ctx) -> anyhow::Result<ExitCode> {
    Ok(ExitCode::Success)
}
