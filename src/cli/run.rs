//! `coord run FILE... [--wait DUR] -- CMD [ARGS...]`: hold locks while a command runs.

use std::ffi::OsString;

use clap::Args;

use coord::ExitCode;
use coord::edit::run::{self, RunEnd, RunEvent, RunRequest};

use super::progress::WaitProgress;
use super::{Ctx, WaitArgs, output};

/// Lock files, run a command, release the locks however it ends
///
/// Like flock(1) for the protocol: takes every FILE's lock (all or nothing, waiting up to
/// --wait, default 2m), writes FILE.bak, runs CMD with COORD_AGENT and COORD_DIR set, and
/// releases the locks when CMD ends, whatever the way: exit, crash, or a signal to coord
/// (SIGINT, SIGTERM and SIGHUP are forwarded to CMD). A folder (`dir/`) or a pattern
/// (`'src/**'`) among the FILEs is claimed for as long, as `coord lock` claims it. Exits with
/// CMD's status (128+N when a signal N killed it), 3 when the locks were not had (CMD did not
/// run), 127 when CMD was not found.
///
///   coord -a claude run counter.txt -- sh -c 'echo $(( $(cat counter.txt) + 1 )) > counter.txt'
///   coord -a claude run --wait 30s SHARED.txt NOTES.md -- ./update-docs.sh
///   coord -a claude run 'src/**/*.sql' -- ./migrate.sh
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    /// Files to lock, or folders (`dir/`) and patterns (`'src/**/*.sql'`) to claim (relative to the current directory, inside the workspace)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    #[command(flatten)]
    wait: WaitArgs,
    /// The command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

pub fn run(args: RunArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.lock_workspace()?;
    let agent = ctx.agent()?;
    let (targets, claims) = ws.file_args(ctx.cwd(), &args.files)?;
    let wait = args.wait.wait()?;
    let req = RunRequest {
        agent,
        targets,
        claims,
        wait,
        command: args.command,
        // With `-C DIR`, CMD runs in DIR, where FILE was read from (contract §1).
        dir: ctx.cwd().to_path_buf(),
    };
    // The locks are released before this process exits: kept locked until then, the first
    // waiter in line sleeps on them (see `coord::wait::handoff`).
    coord::wait::handoff::hold_locks();
    // A signal while waiting leaves the queue and resets WAITING before exiting 130/143/129 (as
    // `coord lock` does); once the command runs, it is passed on to the command.
    super::stop_on_signals()?;
    let mut progress = WaitProgress::new(req.wait, ctx.quiet);
    let outcome = run::run(&ws, &req, &mut |event| match event {
        RunEvent::Lock(e) => progress.on_event(e),
        RunEvent::Locked(got) => {
            progress.finish();
            output::took_over_notes(&got.acquired);
            if !ctx.quiet {
                output::held_elsewhere_warnings(req.agent.id(), &got.acquired);
            }
        }
    });
    progress.finish();
    let outcome = outcome?;
    for file in &outcome.lost {
        output::diag(&format!(
            "warning: the lock on `{file}` was taken over while the command ran (it had gone STALE)"
        ));
    }
    if let RunEnd::NotStarted(e) = &outcome.end {
        let program = req.command[0].to_string_lossy();
        output::error_line(
            &format!("cannot run `{}`: {e}", output::clean(&program)),
            Some(
                "check the command after `--` (it is run directly, not through a shell: use `sh -c '…'` for shell syntax)",
            ),
        );
    }
    Ok(ExitCode::Passthrough(outcome.end.status()))
}
