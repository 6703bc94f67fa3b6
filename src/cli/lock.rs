//! `coord lock FILE...`: acquire, all or nothing; wait for a held lock; take a stale one over.

use clap::Args;

use coord::client::Client;
use coord::clock;
use coord::lock::{self, ClientSession, DEFAULT_TTL, LockRequest, Owner, Reach};
use coord::session::{SESSION_ENV, SESSION_PID_ENV};
use coord::{Error, ExitCode};

use super::progress::WaitProgress;
use super::{Ctx, WaitArgs, output};

/// Acquire locks on files, and claims on folders and patterns, all or nothing
///
/// Waits (2 minutes by default) while another agent holds a lock, saying once on stderr who
/// holds it, since when, and what they work on; wakes within milliseconds of its release.
/// A STALE lock is taken over (and said so). FILE.bak is written before you edit.
/// A wait that would deadlock (agents waiting for each other in a cycle) is refused at once.
///
/// In a clone that shares its claims through its remote (`coord remote enable`), a claim is
/// published there before coord answers, and so is a file lock taken with --share: a claim
/// of another clone that overlaps it refuses it (or is waited for); --local keeps a claim to
/// this clone. This clone renews them while you hold them (lease 15m, or --ttl).
///
///   coord -a claude lock SHARED.txt
///   ... edit SHARED.txt ...
///   coord -a claude unlock SHARED.txt
///   coord -a claude lock src/auth/ 'src/**/*.sql' --reason "auth refactor"
///   coord -a claude lock --share src/schema.sql   # held in the other clones too
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LockArgs {
    /// Files to lock, or folders (`dir/`) and patterns (`'src/**/*.sql'`) to claim (relative to the current directory, inside the workspace)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    #[command(flatten)]
    wait: WaitArgs,
    /// After this long without a heartbeat from you, others may take the lock over (default 5m)
    #[arg(long, value_name = "DUR")]
    ttl: Option<String>,
    /// Do not write FILE.bak
    #[arg(long)]
    no_backup: bool,
    /// Why you lock (shown to whoever waits)
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Publish the file locks to the repository's remote too, so that other clones honour them (an enabled clone: `coord remote enable`)
    #[arg(long, conflicts_with = "local")]
    share: bool,
    /// Keep claims to this clone: nothing is published to the remote
    #[arg(long)]
    local: bool,
}

pub fn run(args: LockArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.lock_workspace()?;
    let agent = ctx.agent()?;
    let (targets, claims) = ws.file_args(ctx.cwd(), &args.files)?;
    let wait = args.wait.wait()?;
    let ttl = (args.ttl.as_deref()).map(|t| nonzero_ttl(clock::parse_duration(t)?, t));
    let given_ttl = ttl.transpose()?;
    let reach = Reach {
        claims: !args.local,
        files: args.share,
        lease: given_ttl,
    };
    let req = LockRequest {
        agent,
        targets,
        wait,
        ttl: given_ttl.unwrap_or(DEFAULT_TTL),
        backup: !args.no_backup,
        reason: args.reason,
        owner: session_owner(ctx),
        claims,
    };
    // A signal while waiting leaves the queue and resets WAITING before exiting 130/143/129.
    super::stop_on_signals()?;
    let got = WaitProgress::during(wait, ctx.quiet, |on| lock::acquire(&ws, &req, &reach, on))?;
    if got.acquired.iter().any(|a| a.remote.is_some()) {
        super::remote::start_renewer(&ws);
    }
    output::took_over_notes(&got.acquired);
    if !ctx.quiet {
        // A typo is otherwise silent: the lock is taken (a file may be locked before it is
        // made), and the user is told the file is not there yet.
        for t in req.targets.iter().filter(|t| !t.abs.exists()) {
            output::diag(&format!(
                "note: `{}` does not exist (yet); it is locked all the same",
                t.rel
            ));
        }
        output::held_elsewhere_warnings(req.agent.id(), &got.acquired);
        let paths: Vec<&str> = req.targets.iter().map(|t| t.rel.as_str()).collect();
        if let Some(w) = coord::remote::editing_warning(&ws, &paths) {
            output::diag(&format!("warning: {w}"));
        }
    }
    super::remote::start_sync_if_working_on_changed(&ws);
    ctx.emit_lines(&got, || acquired_lines(&got));
    Ok(ExitCode::Success)
}

/// `ttl` (written `text`), refused when zero: a lock needs a TTL above zero.
pub fn nonzero_ttl(ttl: std::time::Duration, text: &str) -> Result<std::time::Duration, Error> {
    if ttl.is_zero() {
        return Err(Error::BadDuration {
            text: text.into(),
            why: "a lock needs a TTL above zero".into(),
        });
    }
    Ok(ttl)
}

/// One line per file: `Lock acquired: FILE (backup FILE.bak)`.
pub fn acquired_lines(got: &lock::Acquisition) -> Vec<String> {
    let line = |a: &lock::Acquired| {
        let what = if a.claim { "Claim" } else { "Lock" };
        let verb = if a.refreshed { "refreshed" } else { "acquired" };
        let backup = (a.backup.as_deref().map(|b| format!(" (backup {b})"))).unwrap_or_default();
        let shared = match (&a.remote, &a.lease_until) {
            (Some(r), Some(until)) => format!(" (shared through `{r}`, lease until {until})"),
            (Some(r), None) => format!(" (shared through `{r}`)"),
            _ => String::new(),
        };
        format!("{what} {verb}: {}{backup}{shared}", a.file)
    };
    got.acquired.iter().map(line).collect()
}

/// What locks follow: `coord session`'s process (only a live ancestor: a forged value would
/// make the lock stale at once), else an agent client's process when no agent is given.
pub fn session_owner(ctx: &Ctx) -> Option<Owner> {
    let pid = std::env::var(SESSION_PID_ENV)
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|pid| coord::host::is_ancestor(*pid));
    if let Some(pid) = pid {
        return Some(Owner::process(
            pid,
            std::env::var(SESSION_ENV).ok().filter(|s| !s.is_empty()),
        ));
    }
    let s = ctx.session()?;
    Some(client_owner(s.client, &s.id, s.process?.pid, None))
}

/// A lock taken in `client`'s session `sid` follows the client process `pid`.
pub fn client_owner(client: Client, sid: &str, pid: u32, session: Option<String>) -> Owner {
    Owner {
        client: Some(ClientSession {
            client: client.as_str().to_string(),
            session: sid.to_string(),
        }),
        ..Owner::process(pid, session)
    }
}
