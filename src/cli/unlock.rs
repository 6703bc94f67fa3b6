//! `coord unlock [FILE...] [--force]`: release own locks (all of them without FILE).

use clap::Args;
use serde::Serialize;

use coord::v3::lock::{self, LockState, Release, ReleaseOutcome};
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use super::{Ctx, output};
use coord::error::Refusal;

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

/// `coord unlock --json`.
#[derive(Serialize)]
pub struct UnlockReport<'a> {
    /// One entry per file.
    pub results: &'a [Release],
}

pub fn run(args: UnlockArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.lock_workspace()?;
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
        for line in release_lines(&results) {
            output::line(&line);
        }
    }
    match refusal(&results, &agent) {
        Some(err) => Err(err.into()),
        None => Ok(ExitCode::Success),
    }
}

/// `Lock released: FILE`, one line per file (`No locks held` for none).
pub fn release_lines(results: &[Release]) -> Vec<String> {
    if results.is_empty() {
        return vec!["No locks held".into()];
    }
    results
        .iter()
        .filter_map(|r| match &r.outcome {
            ReleaseOutcome::Released => Some(format!("Lock released: {}", r.file)),
            ReleaseOutcome::NotLocked => Some(format!("{}: not locked", r.file)),
            ReleaseOutcome::ForcedStale { from } => Some(format!(
                "Stale lock of {} on {} removed",
                output::clean(from),
                r.file
            )),
            ReleaseOutcome::Lost => Some(format!("{}: lock was taken over", r.file)),
            ReleaseOutcome::HeldByOther { .. } => None,
        })
        .collect()
}

/// The refusal to report when one of the files is locked by another agent.
pub fn refusal(results: &[Release], agent: &AgentId) -> Option<Error> {
    let (file, holder, state) = results.iter().find_map(|r| match &r.outcome {
        ReleaseOutcome::HeldByOther { holder, state } => Some((&r.file, holder, *state)),
        _ => None,
    })?;
    if state == LockState::Stale {
        return Some(Error::refused(
            Refusal::StaleLock,
            format!(
                "`{file}` has a STALE lock of {}, not yours",
                output::clean(holder)
            ),
            Some(format!(
                "remove it with `coord unlock {} --force`",
                coord::shell::arg(file)
            )),
        ));
    }
    Some(Error::NotHolder {
        file: file.clone(),
        holder: output::clean(holder),
        agent: agent.id().to_string(),
    })
}
