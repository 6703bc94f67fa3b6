//! `coord session -- CMD`: run an agent under coord, and supervise it.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use signal_hook::consts::signal::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use coord::host;
use coord::session::{self, KILL_GRACE};
use coord::stamp::{self, Scope};
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use super::startup::{Mode, partner_choice, release_lines, startup_lines};
use super::{Ctx, output};

/// Even without a signal, look at the child this often (a safety net; SIGCHLD wakes sooner).
const RECHECK: Duration = Duration::from_secs(1);

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
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP, SIGCHLD])
        .context("cannot install the signal handlers")?;
    let handle = signals.handle();
    let (tx, rx) = mpsc::channel::<i32>();
    let listener = std::thread::spawn(move || {
        let _ = signals.forever().try_for_each(|sig| tx.send(sig));
    });

    let started = stamp::startup(&ws, partner, args.task.as_deref(), Some(host::pid()))?;
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
    let own_group = host::ProcessGroup::wanted();
    if own_group {
        command.process_group(0);
    }
    let outcome = match command.spawn() {
        Ok(child) => {
            let group = own_group
                .then(|| host::ProcessGroup::led_by(child.id()))
                .flatten();
            supervise(child, group, &rx, &ws, &agent, &session_id, interval)
        }
        Err(e) => Err(Error::bad_input(format!(
            "cannot run `{}`: {e}",
            program.to_string_lossy()
        ))),
    };
    handle.close();
    let _ = listener.join();

    let done = stamp::shutdown(&ws, &agent, Scope::Session(&session_id))?;
    if !ctx.quiet {
        for line in release_lines(&done.released) {
            output::diag(&line);
        }
        output::diag(&format!(
            "Clocked out: {} (session {session_id})",
            agent.id()
        ));
    }
    let status = outcome?;
    let code = session::exit_code_of(status.code(), status.signal());
    Ok(ExitCode::Passthrough(u8::try_from(code).unwrap_or(1)))
}

/// Wait for the child, beating and forwarding signals meanwhile.
fn supervise(
    mut child: Child,
    group: Option<host::ProcessGroup>,
    signals: &mpsc::Receiver<i32>,
    ws: &coord::workspace::Workspace,
    agent: &AgentId,
    session_id: &str,
    interval: Duration,
) -> Result<ExitStatus, Error> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    let mut next_beat = Instant::now() + interval;
    let mut kill_at: Option<Instant> = None;
    let mut stop_at: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::Failed {
            message: format!("cannot wait for the session's command: {e}"),
        })? {
            // Asked to stop: what CMD started in its group must end too before the session's
            // locks are released.
            if let (Some(g), Some(deadline)) = (&group, stop_at) {
                g.wait_gone(deadline);
            }
            return Ok(status);
        }
        let now = Instant::now();
        if now >= next_beat {
            if let Err(e) = stamp::heartbeat(ws, agent, session_id) {
                output::diag(&format!("warning: heartbeat failed: {e}"));
            }
            next_beat = now + interval;
        }
        if kill_at.is_some_and(|t| now >= t) {
            match &group {
                Some(g) => g.signal(rustix::process::Signal::KILL),
                None => {
                    let _ = child.kill();
                }
            }
            kill_at = None;
        }
        let mut sleep = next_beat.saturating_duration_since(now).min(RECHECK);
        if let Some(t) = kill_at {
            sleep = sleep.min(t.saturating_duration_since(now));
        }
        match signals.recv_timeout(sleep) {
            Ok(SIGCHLD) | Err(RecvTimeoutError::Timeout) => {}
            // Ctrl-C at the terminal already reached CMD; never a reason to kill it.
            Ok(SIGINT) if host::in_terminal_foreground() => {}
            Ok(sig) => {
                // Not reaped yet (only this thread reaps), so `pid` is still our child, and its
                // group still exists. With a group of its own, its whole group is signalled.
                let s = rustix::process::Signal::from_named_raw(sig);
                match (&group, pid, s) {
                    (Some(g), _, Some(s)) => g.signal(s),
                    (None, Some(pid), Some(s)) => {
                        let _ = rustix::process::kill_process(pid, s);
                    }
                    _ => {}
                }
                if sig == SIGINT {
                    continue;
                }
                kill_at.get_or_insert(now + KILL_GRACE);
                stop_at.get_or_insert(now + KILL_GRACE);
            }
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(sleep),
        }
    }
}
