//! `coord lock FILE...`: acquire, all or nothing; wait for a held lock; take a stale one over.

use std::time::Duration;

use clap::Args;

use coord::clock::{self, Wait};
use coord::v3::lock::{self, DEFAULT_TTL, LockEvent, LockRequest, Owner};
use coord::v3::session::{SESSION_ENV, SESSION_PID_ENV};
use coord::{Error, ExitCode};

use super::{Ctx, output};

/// How long `lock` waits by default.
const DEFAULT_WAIT: Duration = Duration::from_secs(120);

/// Acquire locks on files, all or nothing
///
/// Waits (2 minutes by default) while another agent holds a lock, saying once on stderr who
/// holds it, since when, and what they work on; wakes within milliseconds of its release.
/// A STALE lock is taken over (and said so). FILE.bak is written before you edit.
///
///   coord -a claude lock SHARED.txt
///   ... edit SHARED.txt ...
///   coord -a claude unlock SHARED.txt
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LockArgs {
    /// Files to lock (relative to the current directory, inside the workspace)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// Wait at most this long for a held lock (`30s`, `5m`, `forever`; default 2m)
    #[arg(long, value_name = "DUR", conflicts_with = "no_wait")]
    wait: Option<String>,
    /// Fail at once (exit 3) if a lock is held
    #[arg(long)]
    no_wait: bool,
    /// After this long without a heartbeat from you, others may take the lock over (default 5m)
    #[arg(long, value_name = "DUR")]
    ttl: Option<String>,
    /// Do not write FILE.bak
    #[arg(long)]
    no_backup: bool,
    /// Why you lock (shown to whoever waits)
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
}

pub fn run(args: LockArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let agent = ctx.agent()?;
    let targets = ctx.targets(&ws, &args.files)?;
    let wait = match (&args.wait, args.no_wait) {
        (_, true) => Wait::For(Duration::ZERO),
        (Some(w), false) => Wait::parse(w)?,
        (None, false) => Wait::For(DEFAULT_WAIT),
    };
    let ttl = match &args.ttl {
        Some(t) => clock::parse_duration(t)?,
        None => DEFAULT_TTL,
    };
    if ttl.is_zero() {
        return Err(Error::BadDuration {
            text: args.ttl.unwrap_or_default(),
            why: "a lock needs a TTL above zero".into(),
        }
        .into());
    }
    let req = LockRequest {
        agent,
        targets,
        wait,
        ttl,
        backup: !args.no_backup,
        reason: args.reason,
        owner: session_owner(),
    };
    let quiet = ctx.quiet;
    let got = lock::acquire(&ws, &req, &mut |event| match event {
        LockEvent::Waiting(b) if !quiet => {
            let who = if b.queued_ahead > 0 {
                format!(
                    "{} earlier waiter(s) stand in line ({} first)",
                    b.queued_ahead,
                    output::clean(&b.holder)
                )
            } else {
                format!(
                    "held by {} since {}{}",
                    output::clean(&b.holder),
                    b.since,
                    b.working_on
                        .as_deref()
                        .map(|w| format!(" (working on {})", output::clean(w)))
                        .unwrap_or_default()
                )
            };
            output::diag(&format!("waiting for `{}`: {who}", b.file));
        }
        LockEvent::Waiting(_) => {}
    })?;
    for a in &got.acquired {
        for t in &a.took_over {
            output::diag(&format!(
                "note: took over the stale lock of {} on `{}` ({})",
                output::clean(&t.from),
                a.file,
                t.why
            ));
        }
    }
    if ctx.json {
        output::json(&got);
    } else if !ctx.quiet {
        for a in &got.acquired {
            let verb = if a.refreshed {
                "Lock refreshed"
            } else {
                "Lock acquired"
            };
            let backup = a
                .backup
                .as_deref()
                .map(|b| format!(" (backup {b})"))
                .unwrap_or_default();
            output::line(&format!("{verb}: {}{backup}", a.file));
        }
    }
    Ok(ExitCode::Success)
}

/// Inside `coord session`, locks follow the session's process. The variable is trusted only
/// when it names a live ancestor of this process: a stray or forged value would otherwise make
/// the lock stale the moment it is written.
fn session_owner() -> Option<Owner> {
    let pid: u32 = std::env::var(SESSION_PID_ENV).ok()?.parse().ok()?;
    if !coord::host::is_ancestor(pid) {
        return None;
    }
    Some(Owner {
        pid,
        session: std::env::var(SESSION_ENV).ok().filter(|s| !s.is_empty()),
    })
}
