//! `coord run FILE... -- CMD`: hold locks for the life of a command, like flock(1) for the
//! protocol. Locks record this process (stale at once if it is killed) and are released only
//! once CMD's process group has ended.

use std::ffi::OsString;
use std::io::ErrorKind::{Interrupted, TimedOut, WouldBlock};
use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};

use crate::clock::Wait;
use crate::error::{Error, IoResultExt, Result};
use crate::host::ProcessGroup;
use crate::lock::{self, Acquisition, LockEvent, LockRequest};
use crate::pattern::Pattern;
use crate::presence;
use crate::session::{AGENT_ENV, DIR_ENV, HEARTBEAT_EVERY, KILL_GRACE};
use crate::workspace::{AgentId, Target, Workspace};

/// The signals forwarded to CMD.
const FORWARDED: [(i32, Signal); 3] = [
    (SIGINT, Signal::INT),
    (SIGTERM, Signal::TERM),
    (SIGHUP, Signal::HUP),
];

/// What `coord run` asks for.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Who.
    pub agent: AgentId,
    /// The files, all or nothing.
    pub targets: Vec<Target>,
    /// The folders and patterns claimed, all or nothing with the files.
    pub claims: Vec<Pattern>,
    /// How long to wait for a lock held by another.
    pub wait: Wait,
    /// The program and its arguments (at least the program).
    pub command: Vec<OsString>,
    /// The folder CMD runs in (`-C DIR`: DIR, where FILE arguments were read from).
    pub dir: std::path::PathBuf,
}

/// Something worth telling the user before CMD ends.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// From the acquire (waiting for a held lock).
    Lock(&'a LockEvent),
    /// The locks are held; CMD starts next.
    Locked(&'a Acquisition),
}

/// How CMD ended.
#[derive(Debug)]
pub enum RunEnd {
    /// It ran and ended so.
    Ended(ExitStatus),
    /// It could not be started.
    NotStarted(io::Error),
}

impl RunEnd {
    /// The exit status `coord run` passes on: CMD's own, 128 + the signal when a signal killed
    /// it, 127 when it was not found, 126 when it could not be executed (as shells do).
    pub fn status(&self) -> u8 {
        match self {
            RunEnd::Ended(s) => match (s.code(), s.signal()) {
                (Some(c), _) => c as u8,
                (None, Some(sig)) => (128 + sig) as u8,
                (None, None) => 1,
            },
            RunEnd::NotStarted(e) if e.kind() == io::ErrorKind::NotFound => 127,
            RunEnd::NotStarted(_) => 126,
        }
    }
}

/// The outcome of a run whose locks were had.
#[derive(Debug)]
pub struct RunOutcome {
    /// How CMD ended.
    pub end: RunEnd,
    /// Files (and claims) no longer ours at release (taken over while CMD ran).
    pub lost: Vec<String>,
}

/// How CMD is made to die with this process, installed by the binary ([`set_supervisor`]).
static SUPERVISOR: std::sync::OnceLock<fn(&mut Command)> = std::sync::OnceLock::new();

/// Install how [`run`] makes its CMD die with this process, even by `kill -9` (once per
/// process; later calls are ignored): the locks record this process only, and go STALE the
/// moment it dies, so CMD must not go on editing under them.
pub fn set_supervisor(supervise: fn(&mut Command)) {
    let _ = SUPERVISOR.set(supervise);
}

/// Lock `req.targets` and claim `req.claims`, run CMD, release them whatever happens.
pub fn run(
    ws: &Workspace,
    req: &RunRequest,
    on_event: &mut dyn FnMut(RunEvent<'_>),
) -> Result<RunOutcome> {
    let Some((program, args)) = req.command.split_first() else {
        return Err(Error::bad_input("no command to run"));
    };
    // Waiters are told the program's file name.
    let name = Path::new(program)
        .file_name()
        .unwrap_or(program.as_os_str());
    let name = name.to_string_lossy();
    let name: String = name.chars().filter(|c| !c.is_control()).take(60).collect();
    let reason = format!("coord run {name}");
    let lock_req = LockRequest {
        claims: req.claims.clone(),
        ..super::process_lock(&req.agent, &req.targets, req.wait, &reason, true)
    };
    // Ready before the wait, so that the command starts as soon as the locks are had. Listening
    // this early also forwards a signal that arrives between the acquire and the start.
    let signals = Signals::listen().at("listen for signals in", ws.root())?;
    let got = lock::acquire(ws, &lock_req, &lock::Reach::HERE, &mut |e| {
        on_event(RunEvent::Lock(e))
    })?;
    let target_of = |a: &lock::Acquired| req.targets.iter().find(|t| t.rel == a.file).cloned();
    let held: Vec<(Target, String)> = (got.acquired.iter())
        .filter_map(|a| Some((target_of(a)?, a.token.clone())))
        .collect();
    let got_claims = got.acquired.iter().filter(|a| a.claim);
    let claimed: Vec<(String, String)> = got_claims
        .map(|a| (a.file.clone(), a.token.clone()))
        .collect();
    let release = || -> Result<Vec<lock::Release>> {
        // Both, whatever the first does.
        let claims =
            lock::release_claims(ws, &req.agent, lock::claim::Which::Tokens(&claimed), true);
        let locks = lock::release_tokens(ws, &req.agent, &held, true);
        let mut out = claims?;
        out.extend(locks?);
        Ok(out)
    };
    // Asked to stop (see `wait::stop_on_signals`) during the try that got the locks: the
    // command does not start.
    let first = (req.targets.first().map(|t| t.rel.clone()))
        .or_else(|| req.claims.first().map(|c| c.as_str().to_string()));
    if let Err(e) = crate::wait::stopped(|| first.unwrap_or_default()) {
        let _ = release();
        return Err(e);
    }
    on_event(RunEvent::Locked(&got));

    // CMD runs as the agent, its presence beating (best effort: a failure only risks staleness).
    let mut command = Command::new(program);
    command
        .args(args)
        .env(AGENT_ENV, req.agent.name())
        .env(DIR_ENV, ws.root())
        .current_dir(&req.dir);
    if let Some(supervise) = SUPERVISOR.get() {
        supervise(&mut command);
    }
    let beat = &mut || {
        if let Ok(_mutex) = ws.lock_mutex() {
            let _ = presence::write(ws.root(), &req.agent, &presence::Update::default());
        }
    };
    let end = start_forwarding(&mut command, &signals, (HEARTBEAT_EVERY, beat), false)
        .at("wait for", Path::new(program));
    let released = release();
    let end = end?;
    let lost = released?
        .into_iter()
        .filter(|r| r.outcome == lock::ReleaseOutcome::Lost)
        .map(|r| r.file)
        .collect();
    Ok(RunOutcome { end, lost })
}

/// Start `command` and wait for it, forwarding the signals `signals` catches and calling `beat`
/// every `every` (`coord run`, and `coord session` with `session`: a Ctrl-C typed at the
/// terminal already reached the child and is not sent again, and never gets it killed).
pub fn start_forwarding(
    command: &mut Command,
    signals: &Signals,
    (every, beat): (Duration, &mut dyn FnMut()),
    session: bool,
) -> io::Result<RunEnd> {
    // Decided now, not before a wait: the job may have moved to or from the foreground.
    let own_group = ProcessGroup::wanted();
    if own_group {
        command.process_group(0);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Ok(RunEnd::NotStarted(e)),
    };
    let group = own_group
        .then(|| ProcessGroup::led_by(child.id()))
        .flatten();
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::other("the child has no valid process id"))?;
    // Signal CMD's whole group when it has one (its children too), else CMD alone.
    let send = |sig: Signal| match &group {
        Some(g) => g.signal(sig),
        None => {
            let _ = rustix::process::kill_process(pid, sig);
        }
    };
    let mut kill_at: Option<Instant> = None;
    let mut next_beat = Instant::now() + every;
    loop {
        // Forward before reaping: until `try_wait` reaps it, the child's pid cannot be reused.
        for ((_, sig), flag) in FORWARDED.iter().zip(signals.flags.iter()) {
            if flag.swap(false, Ordering::SeqCst) {
                let interrupt = *sig == Signal::INT;
                if session && interrupt && crate::host::in_terminal_foreground() {
                    continue;
                }
                send(*sig);
                // A Ctrl-C to an interactive command (no group of its own) or a session may
                // only cancel what it does: it is not killed for not ending.
                if !interrupt || (group.is_some() && !session) {
                    kill_at.get_or_insert(Instant::now() + KILL_GRACE);
                }
            }
        }
        if let Some(status) = child.try_wait()? {
            // Asked to stop: what CMD started in its group (a job in the background, a child
            // that outlived the signal) must end too before the locks are released. The group's
            // id stays reserved while any member lives, so this never signals a stranger.
            if let (Some(g), Some(deadline)) = (&group, kill_at) {
                g.wait_gone(deadline);
            }
            return Ok(RunEnd::Ended(status));
        }
        let now = Instant::now();
        if kill_at.is_some_and(|t| now >= t) {
            send(Signal::KILL);
        }
        if now >= next_beat {
            beat();
            next_beat = now + every;
        }
        let mut until = next_beat;
        if let Some(t) = kill_at {
            until = until.min(t.max(now + Duration::from_millis(100)));
        }
        signals.wait(until.saturating_duration_since(now))?;
    }
}

/// A self-pipe woken by `SIGCHLD` and the forwarded signals, one flag each; the handlers stay
/// until exit, so a signal during the release cannot cut it short.
#[derive(Debug)]
pub struct Signals {
    rx: UnixStream,
    flags: [Arc<AtomicBool>; 3],
}

impl Signals {
    /// Catch `SIGCHLD` and the signals forwarded to a child from now on.
    pub fn listen() -> io::Result<Signals> {
        let (rx, tx) = UnixStream::pair()?;
        let flags: [Arc<AtomicBool>; 3] = std::array::from_fn(|_| Arc::default());
        // The flag is set before the wake-up byte is written (actions run in registration order).
        for ((sig, _), flag) in FORWARDED.iter().zip(flags.iter()) {
            signal_hook::flag::register(*sig, Arc::clone(flag))?;
        }
        for sig in [SIGCHLD, SIGINT, SIGTERM, SIGHUP] {
            signal_hook::low_level::pipe::register(sig, tx.try_clone()?)?;
        }
        Ok(Signals { rx, flags })
    }

    /// Block until a signal arrives or `timeout` passes.
    fn wait(&self, timeout: Duration) -> io::Result<()> {
        (self.rx).set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        match (&self.rx).read(&mut [0u8; 64]) {
            Err(e) if !matches!(e.kind(), Interrupted | WouldBlock | TimedOut) => Err(e),
            _ => Ok(()),
        }
    }
}
