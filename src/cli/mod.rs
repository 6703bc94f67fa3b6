//! The command tree: global options, one module per command, and the one place where an
//! outcome becomes an exit code and an `error:` line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use coord::workspace::{AgentId, Target, Workspace};
use coord::{Error, ExitCode};

mod check;
mod collab;
mod completions;
mod demo;
mod dialogue;
mod handshake;
mod lock;
mod msg;
mod note;
mod output;
mod partners;
mod presence;
mod restore;
mod review;
mod run;
mod session;
mod startup;
mod status;
mod unlock;
mod watch;
mod write;

const ABOUT: &str = "Coordinate AI coding agents and humans in one shared folder";

const LONG_ABOUT: &str = "\
Coordinate AI coding agents and humans in one shared folder.

coord implements Protocol V3 (presence, FILE.lock.<agent> locks, .bak backups) with plain files
that agents following the protocol by hand can read and write too, and makes every lock race-free.

A typical agent turn:
  coord -a claude presence . \"Task_123\"
  coord -a claude lock SHARED.txt        # waits while someone else holds it
  ... edit SHARED.txt ...
  coord -a claude unlock SHARED.txt
  coord status";

/// The command line.
#[derive(Debug, Parser)]
#[command(name = "coord", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(flatten)]
    global: Global,

    #[command(subcommand)]
    command: Command,
}

/// The options every command takes, before or after its name.
#[derive(Debug, Args)]
struct Global {
    /// The shared working folder (default: nearest ancestor holding `.coord/`, else the current directory)
    #[arg(
        short = 'C',
        long = "dir",
        env = "COORD_DIR",
        global = true,
        value_name = "DIR"
    )]
    dir: Option<PathBuf>,

    /// Who is acting (lower-cased for file names; the name as given is shown in files)
    #[arg(short, long, env = "COORD_AGENT", global = true, value_name = "NAME")]
    agent: Option<String>,

    /// Print one JSON document on stdout instead of human text
    #[arg(long, global = true)]
    json: bool,

    /// Print nothing on success
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    Startup(startup::StartupArgs),
    Shutdown(startup::ShutdownArgs),
    Session(session::SessionArgs),
    Presence(presence::PresenceArgs),
    Check(check::CheckArgs),
    Handshake(handshake::HandshakeArgs),
    Partners(partners::PartnersArgs),
    Lock(lock::LockArgs),
    Unlock(unlock::UnlockArgs),
    Write(write::WriteArgs),
    Run(run::RunArgs),
    Restore(restore::RestoreArgs),
    Note(note::NoteArgs),
    Msg(msg::MsgArgs),
    Collab(collab::CollabArgs),
    Dialogue(dialogue::DialogueArgs),
    Review(review::ReviewArgs),
    Status(status::StatusArgs),
    Demo(demo::DemoArgs),
    Watch(watch::WatchArgs),
    Completions(completions::CompletionsArgs),
    Man(completions::ManArgs),
}

/// How long a command waits for a lock held by another agent: `--wait DUR` or `--no-wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Wait at most this long for a lock held by another (`30s`, `5m`, `forever`; default 2m)
    #[arg(long, value_name = "DUR", conflicts_with = "no_wait")]
    wait: Option<String>,
    /// Fail at once (exit 3) if another agent holds the lock
    #[arg(long)]
    no_wait: bool,
}

impl WaitArgs {
    /// How long commands wait for a lock by default.
    pub const DEFAULT: std::time::Duration = std::time::Duration::from_secs(120);

    /// The wait asked for.
    pub fn wait(&self) -> Result<coord::clock::Wait, Error> {
        use coord::clock::Wait;
        match (&self.wait, self.no_wait) {
            (_, true) => Ok(Wait::For(std::time::Duration::ZERO)),
            (Some(w), false) => Wait::parse(w),
            (None, false) => Ok(Wait::For(Self::DEFAULT)),
        }
    }
}

/// What every command gets: the global options, resolved lazily.
pub struct Ctx {
    cwd: PathBuf,
    dir: Option<PathBuf>,
    agent: Option<String>,
    /// `--json` was given.
    pub json: bool,
    /// `--quiet` was given.
    pub quiet: bool,
}

impl Ctx {
    /// The workspace: a positional DIR wins over `--dir`/`COORD_DIR`.
    pub fn workspace(&self, positional: Option<&Path>) -> Result<Workspace, Error> {
        Workspace::discover(positional.or(self.dir.as_deref()), &self.cwd)
    }

    /// The acting agent, or the error that says how to give one.
    pub fn agent(&self) -> Result<AgentId, Error> {
        match self.agent.as_deref() {
            Some(name) => AgentId::parse(name),
            None => Err(Error::MissingAgent),
        }
    }

    /// The acting agent when one was given (commands that work without one).
    pub fn agent_opt(&self) -> Result<Option<AgentId>, Error> {
        self.agent.as_deref().map(AgentId::parse).transpose()
    }

    /// Resolve FILE arguments inside the workspace; all are checked before anything is done.
    pub fn targets(&self, ws: &Workspace, files: &[String]) -> Result<Vec<Target>, Error> {
        files.iter().map(|f| ws.resolve(&self.cwd, f)).collect()
    }

    /// The current directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}

/// Run the command line and return the process exit code.
pub fn run() -> ExitCode {
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::Usage
            } else {
                ExitCode::Success
            };
        }
    };
    let json = cli.global.json;
    let result = std::env::current_dir()
        .context("cannot read the current directory")
        .and_then(|cwd| {
            let ctx = Ctx {
                cwd,
                dir: cli.global.dir,
                agent: cli.global.agent,
                json: cli.global.json,
                quiet: cli.global.quiet,
            };
            dispatch(cli.command, &ctx)
        });
    match result {
        Ok(code) => code,
        Err(err) => report(&err, json),
    }
}

/// Parse the command line.
///
/// coord is one short process per command, and an agent runs `lock` and `unlock` (and
/// `presence`) far more often than anything else. Building clap's tree of every command costs
/// about as much as a lock itself, so for those three the tree holds just that one command
/// (parsed by the very same derived definitions); anything else, and any command line that is
/// not plainly one of them, gets the whole tree. The tree is leaked rather than freed: the
/// process exits soon after and freeing its many small allocations was a fifth of the work.
fn parse_args() -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let mut command = match args.get(1..).and_then(hot_command) {
        Some(sub) => Global::augment_args(
            clap::Command::new("coord")
                .version(env!("CARGO_PKG_VERSION"))
                .about(ABOUT)
                .long_about(LONG_ABOUT),
        )
        .subcommand_required(true)
        .subcommand(sub),
        None => Cli::command(),
    };
    let parsed = command
        .try_get_matches_from_mut(args)
        .and_then(|matches| {
            let cli = Cli::from_arg_matches(&matches);
            std::mem::forget(matches);
            cli
        })
        .map_err(|e| e.format(&mut command));
    std::mem::forget(command);
    parsed
}

/// The clap command of `args`' subcommand when it is one of the hot ones and everything before
/// it is a plain global option; `None` sends the line to the full tree.
fn hot_command(args: &[OsString]) -> Option<clap::Command> {
    let mut args = args.iter().map(|a| a.to_str());
    let name = loop {
        match args.next()?? {
            "--json" | "--quiet" | "-q" => {}
            "--dir" | "--agent" | "-C" | "-a" => {
                args.next()??;
            }
            a if a.starts_with("--dir=") || a.starts_with("--agent=") => {}
            a if (a.starts_with("-C") || a.starts_with("-a")) && a.len() > 2 => {}
            a if a.starts_with('-') => return None,
            a => break a,
        }
    };
    let named = |n: &'static str| clap::Command::new(n);
    Some(match name {
        "lock" => lock::LockArgs::augment_args(named("lock")),
        "unlock" => unlock::UnlockArgs::augment_args(named("unlock")),
        "presence" => presence::PresenceArgs::augment_args(named("presence")),
        _ => return None,
    })
}

fn dispatch(command: Command, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    match command {
        Command::Presence(args) => presence::run(args, ctx),
        Command::Check(args) => check::run(args, ctx),
        Command::Lock(args) => lock::run(args, ctx),
        Command::Unlock(args) => unlock::run(args, ctx),
        Command::Status(args) => status::run(args, ctx),
        Command::Demo(args) => demo::run(args, ctx),
        Command::Msg(args) => msg::run(args, ctx),
        Command::Note(args) => note::run(args, ctx),
        Command::Collab(args) => collab::run(args, ctx),
        Command::Startup(args) => startup::run_startup(args, ctx),
        Command::Shutdown(args) => startup::run_shutdown(args, ctx),
        Command::Partners(args) => partners::run(args, ctx),
        Command::Session(args) => session::run(args, ctx),
        Command::Handshake(args) => handshake::run(args, ctx),
        Command::Dialogue(args) => dialogue::run(args, ctx),
        Command::Review(args) => review::run(args, ctx),
        Command::Write(args) => write::run(args, ctx),
        Command::Run(args) => run::run(args, ctx),
        Command::Restore(args) => restore::run(args, ctx),
        Command::Watch(args) => watch::run(args, ctx),
        Command::Completions(args) => completions::completions(args, ctx),
        Command::Man(args) => completions::man(args, ctx),
    }
}

/// Print an error (and its hint) and map it to the contract's exit code.
fn report(err: &anyhow::Error, json: bool) -> ExitCode {
    let coord_err = err.chain().find_map(|e| e.downcast_ref::<Error>());
    let code = coord_err.map(ExitCode::from).unwrap_or(ExitCode::Failure);
    let message = match coord_err {
        Some(e) if err.downcast_ref::<Error>().is_some() => e.to_string(),
        _ => format!("{err:#}"),
    };
    let hint = coord_err.and_then(Error::hint);
    output::error_line(&message, hint.as_deref());
    if json && !output::json_printed() {
        output::json(&serde_json::json!({
            "error": {
                "kind": coord_err.map(Error::kind).unwrap_or("failed"),
                "message": message,
                "hint": hint,
                "exit_code": code.code(),
            }
        }));
    }
    code
}
