//! `coord unlock [FILE...] [--force]`: release own locks (all of them without FILE).

use std::path::Path;

use clap::Args;

use coord::error::Refusal;
use coord::lock::claim::Which;
use coord::lock::{self, LockState, Release, ReleaseOutcome};
use coord::workspace::{AgentId, Workspace};
use coord::{Error, ExitCode};

use super::{Ctx, output};

/// Release your locks and claims (all of them without FILE)
///
/// A lock held by someone else is never removed (exit 3), unless it is STALE and you
/// pass --force. A FILE with no lock is fine: it prints `not locked`. A person at a
/// terminal cleans up a STALE lock without an agent name: `--force` with FILEs acts as
/// the login name ($USER).
///
///   coord -a claude unlock SHARED.txt
///   coord -a claude unlock 'src/auth/**' # a claim
///   coord -a claude unlock              # everything you hold
///   coord unlock SHARED.txt --force     # a STALE lock someone left behind
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UnlockArgs {
    /// Files, folders (`dir/`) or patterns to unlock (default: every lock and claim you hold)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
    /// Also remove another agent's lock if it is STALE
    #[arg(long)]
    force: bool,
}

pub fn run(args: UnlockArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.lock_workspace()?;
    let agent = match ctx.agent_opt()? {
        Some(agent) => agent,
        // Removing a STALE lock needs no locks of one's own: a person does it as themselves.
        None if args.force && !args.files.is_empty() => human()?,
        None => return Err(Error::MissingAgent.into()),
    };
    let results = release(&ws, &agent, ctx.cwd(), &args.files, args.force)?;
    let doc = serde_json::json!({ "results": results });
    ctx.emit_lines(&doc, || release_lines(&results));
    refusal(&results, &agent).map_or(Ok(ExitCode::Success), |err| Err(err.into()))
}

/// Release `files` (relative to `base`; folders and patterns are claims), or every lock and claim
/// of `agent` when `files` is empty; then tell the remote when that changed what this clone edits.
pub fn release(
    ws: &Workspace,
    agent: &AgentId,
    base: &Path,
    files: &[String],
    force: bool,
) -> Result<Vec<Release>, Error> {
    let (targets, patterns) = ws.file_args(base, files)?;
    // No FILE: every lock of `agent`; only patterns: no file lock.
    let mut results = match (files.is_empty(), targets.is_empty()) {
        (false, true) => Vec::new(),
        (all, _) => lock::release(ws, agent, (!all).then_some(&targets[..]), force)?,
    };
    if !patterns.is_empty() {
        let which = Which::Patterns(&patterns, force);
        results.extend(lock::release_claims(ws, agent, which, true)?);
    }
    super::remote::start_sync_if_working_on_changed(ws);
    Ok(results)
}

/// The person at the terminal, as an agent id: the login name (`USER`, else `LOGNAME`) made
/// into a valid id (`Jane.Doe` → `jane-doe`), else `human`.
fn human() -> Result<AgentId, Error> {
    let login = ["USER", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_default();
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let login = login.to_ascii_lowercase().replace(|c| !allowed(c), "-");
    let start = login.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let id: String = start.chars().take(32).collect();
    AgentId::parse(&id).or_else(|_| AgentId::parse("human"))
}

/// `Lock released: FILE`, one line per file (`No locks held` for none).
pub fn release_lines(results: &[Release]) -> Vec<String> {
    if results.is_empty() {
        return vec!["No locks held".into()];
    }
    let line = |r: &Release| {
        let file = &r.file;
        Some(match &r.outcome {
            ReleaseOutcome::Released => {
                let what = if r.claim { "Claim" } else { "Lock" };
                let remote = match &r.remote {
                    Some(x) if x.released => format!(" (and on remote `{}`)", x.remote),
                    Some(x) => format!(
                        " (here only: its record on remote `{}` stays until its lease lapses)",
                        x.remote
                    ),
                    None => String::new(),
                };
                format!("{what} released: {file}{remote}")
            }
            ReleaseOutcome::NotLocked => format!("{file}: not locked"),
            ReleaseOutcome::ForcedStale { from } => {
                format!("Stale lock of {} on {file} removed", output::clean(from))
            }
            ReleaseOutcome::Lost => format!("{file}: lock was taken over"),
            ReleaseOutcome::HeldByOther { .. } => return None,
        })
    };
    results.iter().filter_map(line).collect()
}

/// The refusal to report when one of the files is locked by another agent.
pub fn refusal(results: &[Release], agent: &AgentId) -> Option<Error> {
    let (file, holder, state) = results.iter().find_map(|r| match &r.outcome {
        ReleaseOutcome::HeldByOther { holder, state } => Some((&r.file, holder, *state)),
        _ => None,
    })?;
    if state == LockState::Stale {
        let (holder, arg) = (output::clean(holder), coord::shell::arg(file));
        let why = format!("`{file}` has a STALE lock of {holder}, not yours");
        let hint = format!("remove it with `coord unlock {arg} --force`");
        return Some(Error::refused(Refusal::StaleLock, why, Some(hint)));
    }
    Some(Error::NotHolder {
        file: file.clone(),
        holder: output::clean(holder),
        agent: agent.id().to_string(),
    })
}
