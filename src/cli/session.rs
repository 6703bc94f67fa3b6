//! `coord session -- CMD`: run an agent under coord, and supervise it.

use std::ffi::OsString;
use std::process::Command;

use anyhow::Context as _;
use clap::Args;

use coord::edit::run::{RunEnd, Signals, start_forwarding};
use coord::host;
use coord::session;
use coord::stamp::{self, Scope};
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use super::startup::{Mode, partner_choice, release_lines, startup_lines};
use super::{Ctx, output};

/// Run a command as an agent session: clock in, run it, clean up whatever happens
///
/// CMD gets COORD_AGENT, COORD_DIR, COORD_SESSION and COORD_SESSION_PID. Locks it takes with
/// `coord lock` follow the session: they are released when CMD ends, and are STALE at once if
/// the session process dies — and then CMD dies too (Linux: the kernel kills it with coord). The presence and stamp card beat every 30 s
/// (COORD_HEARTBEAT_INTERVAL overrides). Exits with CMD's status (128+N when killed by signal N).
///
/// Ctrl-C reaches CMD once (from the terminal) and does not end the session; the session ends
/// when CMD ends.
///
///   coord session --partner claude --task Task_123 -- claude
///   coord session --partner new -- ./my-agent.sh --flag
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SessionArgs {
    /// Who (the agent; `new` picks a free name). Default: `--agent`/`COORD_AGENT`
    #[arg(long, value_name = "NAME")]
    partner: Option<String>,
    /// What this session works on
    #[arg(long, value_name = "T")]
    task: Option<String>,
    /// The command to run, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

pub fn run(args: SessionArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let partner = partner_choice(args.partner.as_deref(), ctx)?;
    let interval = session::heartbeat_interval()?;
    // Listen before clocking in, so a signal that arrives meanwhile is not lost.
    let signals = Signals::listen().context("cannot install the signal handlers")?;

    let started = stamp::startup(&ws, partner, args.task.as_deref(), Some(host::pid()))?;
    let started = started.with_active_agents(ws.root());
    let agent = AgentId::parse(&started.partner)?;
    let session_id = started.row.session_id.clone();
    if !ctx.quiet {
        for line in startup_lines(&started, Mode::Silent) {
            output::diag(&line);
        }
    }

    let (program, rest) = args
        .command
        .split_first()
        .context("no command given after `--`")?;
    let mut command = Command::new(program);
    // With `-C DIR`, CMD runs in DIR (contract §1).
    command.args(rest).current_dir(ctx.cwd());
    command.envs(session::child_env(&ws, &agent, &session_id, host::pid()));
    // CMD never outlives coord: killed with it, even by `kill -9` (Linux).
    super::child_fence::die_with_parent(&mut command);
    let beat = &mut || {
        if let Err(e) = stamp::heartbeat(&ws, &agent, &session_id) {
            output::diag(&format!("warning: heartbeat failed: {e}"));
        }
        super::remote::keep_renewed(&ws, &agent);
    };
    let name = program.to_string_lossy();
    let status = match start_forwarding(&mut command, &signals, (interval, beat), true) {
        Ok(RunEnd::NotStarted(e)) => Err(Error::bad_input(format!("cannot run `{name}`: {e}"))),
        Ok(end) => Ok(end.status()),
        Err(e) => Err(Error::failed(format!(
            "cannot wait for the session's command: {e}"
        ))),
    };

    let done = stamp::shutdown(&ws, &agent, Scope::Session(&session_id))?;
    if !ctx.quiet {
        for line in release_lines(&done.released) {
            output::diag(&line);
        }
        let id = agent.id();
        output::diag(&format!("Clocked out: {id} (session {session_id})"));
    }
    Ok(ExitCode::Passthrough(status?))
}
