//! `coord mcp`: a Model Context Protocol server on stdin/stdout, as one agent.

mod tools;

use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use serde_json::Value;
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use coord::identity;
use coord::lock::Owner;
use coord::mcp::{Server, jsonrpc, tool_result};
use coord::message::base36;
use coord::session;
use coord::stamp::{self, Partner, Scope};
use coord::workspace::{AgentId, Workspace};
use coord::{ExitCode, host};

use super::startup::release_lines;
use super::{Ctx, output};

/// The longest line the server reads; a longer one is answered with -32700 and skipped.
const MAX_LINE: u64 = 32 * 1024 * 1024;

/// Serve coord's tools to an MCP client over stdio (JSON-RPC, one message per line)
///
/// The agent is --agent/COORD_AGENT; else, started by an agent client, the agent of the client's
/// session (as its hooks and shell commands); else `mcp-` and 6 random letters and digits. It
/// clocks in at the first tool call and heartbeats while it runs; locks taken through it follow
/// the client process (else this one), so they are STALE the moment it dies, and are released
/// at end of input or on SIGTERM/SIGINT.
///
///   coord -a claude -C /path/to/shared mcp      # what a client starts
///   claude mcp add coord -- coord -C /path/to/shared mcp
///   codex:  [mcp_servers.coord] command = "coord", args = ["mcp"]
///   gemini: "mcpServers": {"coord": {"command": "coord", "args": ["mcp"]}}
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    /// What this agent works on (its presence's `working_on`)
    #[arg(long, value_name = "T")]
    task: Option<String>,
    /// Run as the user-level plugin (`coord plugin write`): in a repository that turned coord
    /// off (`git config coord.enabled false`), or outside any git work tree or coord
    /// workspace, serve no tools and write nothing; keep coord's state out of `git status` in
    /// a repository nobody set up
    #[arg(long)]
    plugin: bool,
}

/// The server's life as an agent: nobody until the first tool call (a health check leaves
/// nothing behind), then clocked in until the end as the agent given (`explicit`: `named` is
/// it), else the session's (looked up then), else `named`.
struct Life {
    ws: Workspace,
    quiet: bool,
    explicit: bool,
    named: AgentId,
    state: Mutex<Stage>,
}

enum Stage {
    /// Not clocked in yet; the task to clock in with.
    Idle(Option<String>),
    /// Clocked in: the tools, run as the agent in its stamp-card session.
    Serving(tools::Host),
    /// Clocked out: nothing more is done.
    Closed,
}

impl Life {
    fn state(&self) -> std::sync::MutexGuard<'_, Stage> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Clock in once: a stamp-card row for this process, the presence.
    fn start(&self) -> anyhow::Result<tools::Host> {
        let mut state = self.state();
        let task = match &mut *state {
            Stage::Serving(host) => return Ok(host.clone()),
            Stage::Closed => anyhow::bail!("the server is shutting down"),
            Stage::Idle(task) => task.take(),
        };
        let session = (!self.explicit)
            .then(|| identity::current(self.ws.root()))
            .flatten();
        let agent = (session.as_ref()).map_or_else(|| self.named.clone(), |s| s.agent.clone());
        let partner = Partner::Named(agent.clone());
        let started = stamp::startup(&self.ws, partner, task.as_deref(), Some(host::pid()))?;
        let row = started.row.session_id;
        // In an agent client's session, locks follow the client process (the session's hooks
        // and shell act as the same agent); else this process.
        let owner = match session.as_ref().and_then(|s| Some((s, s.process?.pid))) {
            Some((s, pid)) => super::lock::client_owner(s.client, &s.id, pid, Some(row.clone())),
            None => Owner::process(host::pid(), Some(row.clone())),
        };
        if !self.quiet {
            let of = (session.as_ref())
                .map(|s| format!(", the agent of {} session {}", s.client.as_str(), s.id))
                .unwrap_or_default();
            let (id, root) = (agent.id(), self.ws.root().display());
            output::diag(&format!(
                "coord mcp: serving as agent {id}{of} in {root} (session {row})"
            ));
        }
        let host = tools::Host {
            ws: self.ws.clone(),
            agent,
            session: row,
            owner,
        };
        *state = Stage::Serving(host.clone());
        Ok(host)
    }

    /// Release the session's locks and clock out, once (end of input or a signal).
    fn close(&self, why: &str) {
        let mut state = self.state();
        let Stage::Serving(host) = std::mem::replace(&mut *state, Stage::Closed) else {
            return;
        };
        // After a stop request (a signal, the client gone) too.
        let closed = coord::wait::finishing(|| {
            stamp::shutdown(&self.ws, &host.agent, Scope::Session(&host.session))
        });
        match closed {
            Ok(closed) if !self.quiet => {
                for line in release_lines(&closed.released) {
                    output::diag(&line);
                }
                let (id, session) = (host.agent.id(), &host.session);
                output::diag(&format!(
                    "coord mcp: {why}; clocked out {id} (session {session})"
                ));
            }
            Ok(_) => {}
            Err(e) => output::diag(&format!("warning: cannot clock out: {e}")),
        }
    }
}

pub fn run(args: McpArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = if args.plugin {
        let ws = Workspace::discover(ctx.dir.as_deref(), ctx.cwd())?;
        // The plugin's server: nothing at all where coord stays out, before anything is written.
        match coord::plugin::gate(&ws, None) {
            coord::plugin::Gate::Go | coord::plugin::Gate::Wired => ws.adopt()?,
            gate => return idle(&gate, ctx),
        }
        ws
    } else {
        ctx.workspace(None)?
    };
    let explicit = ctx.agent_explicit()?.is_some();
    // Who the server will be, for the instructions: nobody is clocked in before a tool call.
    let random = || AgentId::parse(&format!("mcp-{}", base36(host::random_u64(), 6)));
    let named = ctx.agent_opt()?.map_or_else(random, Ok)?;
    let interval = session::heartbeat_interval()?;
    // Listen before anything else, so a signal that arrives meanwhile is not lost.
    let mut signals =
        Signals::new([SIGTERM, SIGINT, SIGHUP]).context("cannot install the signal handlers")?;
    if !ctx.quiet {
        let (root, id) = (ws.root().display(), named.id());
        output::diag(&format!(
            "coord mcp: ready in {root} (agent {id} from the first tool call)"
        ));
    }
    let instructions = instructions(&named, &ws);
    // It lives as long as the process: the threads below end with it.
    let life: &'static Life = Box::leak(Box::new(Life {
        ws,
        quiet: ctx.quiet,
        explicit,
        named,
        state: Mutex::new(Stage::Idle(args.task)),
    }));

    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let name = signal_hook::low_level::signal_name(sig).unwrap_or("a signal");
            stop(life, sig, &format!("{name} received"));
        }
    });

    // Notice the client going away while a call may wait: any wait then ends as on `SIGHUP`. On
    // stdin hung up the main loop finishes the input; with stdout or the parent gone, the server
    // clocks out and exits once the running call has ended.
    let parent = rustix::process::getppid();
    std::thread::spawn(move || {
        if let Some(why) = client_gone(parent) {
            stop(life, SIGHUP, why);
        }
    });

    // Beaten under the state's lock: the clock-out waits for a beat, and no beat follows it.
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(interval);
            if let Stage::Serving(host) = &*life.state() {
                if let Err(e) = stamp::heartbeat(&life.ws, &host.agent, &host.session) {
                    output::diag(&format!("warning: heartbeat failed: {e}"));
                }
                super::remote::keep_renewed(&life.ws, &host.agent);
            }
        }
    });

    let mut server = Server::new(
        |tool, args| {
            IN_CALL.store(true, Ordering::SeqCst);
            let outcome = life.start().and_then(|host| host.run(tool, args));
            IN_CALL.store(false, Ordering::SeqCst);
            outcome.unwrap_or_else(|e| tools::failed(&e))
        },
        instructions,
    );
    life.close(serve(|line| server.handle_line(line)));
    Ok(ExitCode::Success)
}

/// The plugin's server where coord stays out: every tool call is an error saying why, nothing
/// is written.
fn idle(gate: &coord::plugin::Gate, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let why = match gate {
        coord::plugin::Gate::Off => format!(
            "coord is turned off in this repository (`git config {}` is false)",
            coord::plugin::SWITCH
        ),
        _ => "this folder is neither a git work tree nor a coord workspace".to_string(),
    };
    if !ctx.quiet {
        output::diag(&format!("coord mcp: {why}; every tool answers that"));
    }
    let text = format!("error: {why}; coord's tools are not available here");
    let mut server = Server::new(
        |_, _| tool_result(&text, None, true),
        format!("{why}: coord's tools are not available here."),
    );
    serve(|line| server.handle_line(line));
    Ok(ExitCode::Success)
}

/// Whether a tool call is running (it may be waiting for a lock).
static IN_CALL: AtomicBool = AtomicBool::new(false);

/// How long a signal lets a running call end cleanly before the server clocks out anyway.
const CALL_GRACE: Duration = Duration::from_secs(5);

/// How often the client watch looks at the parent process when nothing happens on stdio.
const CLIENT_CHECK: Duration = Duration::from_millis(500);

/// End the server: a waiting call ends cleanly first (as `sig` would end it), then clock out.
fn stop(life: &Life, sig: i32, why: &str) -> ! {
    coord::wait::request_stop(sig);
    let asked = std::time::Instant::now();
    while IN_CALL.load(Ordering::SeqCst) && asked.elapsed() < CALL_GRACE {
        std::thread::sleep(Duration::from_millis(10));
    }
    life.close(why);
    std::process::exit(0);
}

/// Wait until the client goes away: `None` when its end of stdin hung up (any wait ends as
/// on `SIGHUP`), else why nobody can read an answer any more.
fn client_gone(parent: Option<rustix::process::Pid>) -> Option<&'static str> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    // Hang-ups and errors are always reported; a readable stdin is not asked about (the next
    // request is the main loop's to read).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let hangup = PollFlags::RDHUP;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let hangup = PollFlags::empty();
    let mut fds = [
        PollFd::new(&stdin, hangup),
        PollFd::new(&stdout, PollFlags::empty()),
    ];
    let timeout = Timespec::try_from(CLIENT_CHECK).unwrap_or_default();
    let gone = PollFlags::HUP | PollFlags::ERR | hangup;
    loop {
        // After a failed poll `revents` hold no hang-up: cleared, or the last poll's (none).
        let polled = poll(&mut fds, Some(&timeout));
        if fds[1].revents().intersects(gone) {
            return Some("the client stopped reading");
        }
        if fds[0].revents().intersects(gone) {
            coord::wait::request_stop(SIGHUP);
            return None;
        }
        // A failed poll, or an fd it cannot judge (closed, not pollable): fall back to the clock.
        if polled != Ok(0) {
            std::thread::sleep(CLIENT_CHECK);
        }
        // Started by a process that was already gone (`parent` is init): only stdio can tell.
        if parent.is_some_and(|p| p.as_raw_nonzero().get() != 1)
            && rustix::process::getppid() != parent
        {
            return Some("the client process is gone");
        }
    }
}

/// Answer lines until end of input (or until the client stops reading); says why it stopped.
fn serve(mut handle_line: impl FnMut(&[u8]) -> Option<Value>) -> &'static str {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = std::io::Read::take(&mut input, MAX_LINE + 1).read_until(b'\n', &mut line);
        match read {
            Ok(0) => return "end of input",
            Ok(_) => {}
            Err(e) => {
                output::diag(&format!("warning: cannot read stdin: {e}"));
                return "stdin failed";
            }
        }
        let response = if line.len() as u64 > MAX_LINE && line.last() != Some(&b'\n') {
            if input.skip_until(b'\n').is_err() {
                return "stdin failed";
            }
            let why = format!("the line is longer than {MAX_LINE} bytes");
            Some(jsonrpc::error(&Value::Null, jsonrpc::PARSE_ERROR, &why))
        } else {
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            handle_line(&line)
        };
        // One response, one line, flushed at once.
        let mut out = std::io::stdout().lock();
        if let Some(response) = response
            && writeln!(out, "{response}")
                .and_then(|()| out.flush())
                .is_err()
        {
            return "stdout closed";
        }
    }
}

/// What the client tells the model: who it is here and how the protocol goes, in a few lines.
fn instructions(agent: &AgentId, ws: &Workspace) -> String {
    format!(
        "coord coordinates several agents editing one shared folder ({root}) through plain files. \
You are agent `{id}` here; other agents see what you do at once, and you see them.\n\
- Before editing a shared file, call `lock` with its path (relative to the folder). If another agent \
holds it, the result is an error naming them: wait (`wait_s`), do something else, or `msg_send` them. \
Call `unlock` as soon as your edit is done.\n\
- Call `status` to see who works on what and which files are locked; `msg_list` for messages to you \
(`msg_read` marks one read).\n\
- In a turn-based dialogue, speak with `dialogue_say` only when `dialogue_turn` says it is your turn; \
in a review, `review_next` says who acts next.\n\
- Your locks are released when this server ends, and count as STALE at once if it dies.",
        root = ws.root().display(),
        id = agent.id(),
    )
}
