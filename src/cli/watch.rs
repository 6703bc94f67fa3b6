//! `coord watch`: the status view, redrawn on every change.

use clap::Args;

use coord::ExitCode;

use super::Ctx;

/// Show the status view and redraw it on every change (not yet)
#[derive(Debug, Args)]
pub struct WatchArgs {}

pub fn run(_args: WatchArgs, _ctx: &Ctx) -> anyhow::Result<ExitCode> {
    Ok(ExitCode::Success)
}
