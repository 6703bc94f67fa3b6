//! `coord unlock [FILE...] [--force]`: release own locks (all of them without FILE).

use clap::Args;
use serde::Serialize;

use coord::v3::lock::{self, LockState, Release, ReleaseOutcome};
use coord::{Error, ExitCode};

use super::{Ctx, output};

/// Release your locks (all of them without FILE)
///
/// A lock held by someone else is never removed (exit 3), unless it is STALE and you
/// pass --force. A FILE with no lock is fine: it prints `not locked`.
///
///   coord -a claude unlock SHARED.txt
///   coord -a claude unlock              # everything you hold
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UnlockArgs {
    /// Files to unlock (default: every lock you hold)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
    /// Also remove another agent's lock if it is STALE
    #[arg(long)]
    force: bool,
}

#[derive(Serialize)]
struct UnlockReport<'a> {
    results: &'a [Release],
}

pub fn run(args: UnlockArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let agent = ctx.agent()?;
    let targets = if args.files.is_empty() {
        None
    } else {
        Some(ctx.targets(&ws, &args.files)?)
    };
    let results = lock::release(&ws, &agent, targets.as_deref(), args.force)?;
    if ctx.json {
        output::json(&UnlockReport { results: &results });
    } else if !ctx.quiet {
        if results.is_empty() {
            output::line("No locks held");
        }
        for r in &results {
            match &r.outcome {
                ReleaseOutcome::Released => output::line(&format!("Lock released: {}", r.file)),
                ReleaseOutcome::NotLocked => output::line(&format!("{}: not locked", r.file)),
                ReleaseOutcome::ForcedStale { from } => output::line(&format!(
                    "Stale lock of {} on {} removed",
                    output::clean(from),
                    r.file
                )),
                ReleaseOutcome::Lost => output::line(&format!("{}: lock was taken over", r.file)),
                ReleaseOutcome::HeldByOther { .. } => {}
            }
        }
    }
    if let Some((file, holder, state)) = results.iter().find_map(|r| match &r.outcome {
        ReleaseOutcome::HeldByOther { holder, state } => Some((&r.file, holder, *state)),
        _ => None,
    }) {
        if state == LockState::Stale {
            return Err(Error::refused(
                format!(
                    "`{file}` has a STALE lock of {}, not yours",
                    output::clean(holder)
                ),
                Some(format!(
                    "remove it with `coord unlock {} --force`",
                    coord::shell::arg(file)
                )),
            )
            .into());
        }
        return Err(Error::NotHolder {
            file: file.clone(),
            holder: output::clean(holder),
            agent: agent.id().to_string(),
        }
        .into());
    }
    Ok(ExitCode::Success)
}
