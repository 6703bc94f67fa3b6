//! The command tree: global options, one module per command, and the one place where an
//! outcome becomes an exit code and an `error:` line.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use coord::workspace::{AgentId, Workspace};
use coord::{Error, ExitCode};

mod check;
mod child_fence;
mod collab;
mod completions;
mod demo;
mod dialogue;
mod docs;
mod doctor;
mod guard;
mod handshake;
mod hook;
mod init;
mod lock;
mod log;
mod mcp;
mod msg;
mod note;
mod output;
mod partners;
mod plugin;
mod presence;
mod progress;
mod prune;
mod remote;
mod restore;
mod review;
mod run;
mod session;
mod startup;
mod status;
mod ui;
mod unlock;
mod version;
mod watch;
mod who;
mod whoami;
mod write;

const ABOUT: &str = "Coordinate AI coding agents and humans in one shared folder";

const LONG_ABOUT: &str = "\
Coordinate AI coding agents and humans in one shared folder.

coord keeps presence, FILE.lock.<agent> locks and .bak backups (and messages, a shared log, a
turn-based dialogue and a review tracker) in plain files that agents following the protocols by
hand can read and write too, and makes every lock race-free. `coord docs` shows the documentation.

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
    /// Run as if started in DIR: the workspace is DIR (or the workspace around it) and relative FILEs are read from DIR
    ///
    /// Like `git -C` and `make -C`: change directory to DIR first. Without it the workspace is
    /// the nearest folder holding `.coord/` at or above the current directory, else the git
    /// work tree's top level, else the current directory. `COORD_DIR` names the workspace
    /// only; FILEs stay relative to the current directory.
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

    /// When to colour output: auto (a terminal; `NO_COLOR` and `CLICOLOR_FORCE` are honoured), always, never
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: output::ColorChoice,
}

/// The commands: each variant's arguments, and the function that runs it.
macro_rules! commands {
    ($($variant:ident($args:ty) => $run:path,)*) => {
        #[derive(Debug, Subcommand)]
        // Parsing builds the arguments of the command it runs only (a hook or a lock starts
        // faster); `expanded` builds them all.
        #[command(defer = true)]
        enum Command {
            $($variant($args),)*
        }

        fn dispatch(command: Command, ctx: &Ctx) -> anyhow::Result<ExitCode> {
            match command {
                $(Command::$variant(args) => $run(args, ctx),)*
            }
        }

        /// The whole tree, every command's arguments added now rather than deferred to when
        /// the command runs (so that help, man pages and completions show them all).
        fn expanded() -> clap::Command {
            let mut expand = [$(<$args as Args>::augment_args,)*].into_iter();
            // The deferred addition is replaced by one that adds nothing.
            Cli::command().mut_subcommands(|sub| match expand.next() {
                Some(augment) => augment(sub.defer(|sub| sub)),
                None => sub,
            })
        }
    };
}

commands! {
    Startup(startup::StartupArgs) => startup::run_startup,
    Shutdown(startup::ShutdownArgs) => startup::run_shutdown,
    Session(session::SessionArgs) => session::run,
    Presence(presence::PresenceArgs) => presence::run,
    Check(check::CheckArgs) => check::run,
    Handshake(handshake::HandshakeArgs) => handshake::run,
    Partners(partners::PartnersArgs) => partners::run,
    Lock(lock::LockArgs) => lock::run,
    Unlock(unlock::UnlockArgs) => unlock::run,
    Write(write::WriteArgs) => write::run,
    Run(run::RunArgs) => run::run,
    Restore(restore::RestoreArgs) => restore::run,
    Note(note::NoteArgs) => note::run,
    Msg(msg::MsgArgs) => msg::run,
    Collab(collab::CollabArgs) => collab::run,
    Dialogue(dialogue::DialogueArgs) => dialogue::run,
    Review(review::ReviewArgs) => review::run,
    Status(status::StatusArgs) => status::run,
    Demo(demo::DemoArgs) => demo::run,
    Hook(hook::HookArgs) => hook::run,
    Init(init::InitArgs) => init::run,
    Guard(guard::GuardArgs) => guard::run,
    Mcp(mcp::McpArgs) => mcp::run,
    Who(who::WhoArgs) => who::run,
    Whoami(whoami::WhoamiArgs) => whoami::run,
    Watch(watch::WatchArgs) => watch::run,
    Ui(ui::UiArgs) => ui::run,
    Log(log::LogArgs) => log::run,
    Prune(prune::PruneArgs) => prune::run,
    Completions(completions::CompletionsArgs) => completions::completions,
    Man(completions::ManArgs) => completions::man,
    Doctor(doctor::DoctorArgs) => doctor::run,
    Version(version::VersionArgs) => version::run,
    Docs(docs::DocsArgs) => docs::run,
    Plugin(plugin::PluginArgs) => plugin::run,
    Remote(remote::RemoteArgs) => remote::run,
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
    /// The wait asked for (2 minutes by default).
    pub fn wait(&self) -> Result<coord::clock::Wait, Error> {
        use coord::clock::Wait;
        match (&self.wait, self.no_wait) {
            (_, true) => Ok(Wait::For(std::time::Duration::ZERO)),
            (Some(w), false) => Wait::parse(w),
            (None, false) => Ok(Wait::For(std::time::Duration::from_secs(120))),
        }
    }
}

/// What every command gets: the global options, resolved lazily.
pub struct Ctx {
    cwd: PathBuf,
    dir: Option<PathBuf>,
    /// The name given; an empty one (`COORD_AGENT=`, as a shell leaves it) is no name.
    agent: Option<String>,
    /// `-a` stood on the command line (else the name, if any, came from `COORD_AGENT`).
    agent_flag: bool,
    session: std::cell::OnceCell<Option<coord::identity::Session>>,
    pub json: bool,
    pub quiet: bool,
}

impl Ctx {
    /// The workspace: a positional DIR wins over `--dir`/`COORD_DIR`.
    pub fn workspace(&self, positional: Option<&Path>) -> Result<Workspace, Error> {
        let ws = Workspace::discover(positional.or(self.dir.as_deref()), &self.cwd)?;
        // A folder under a sync tool cannot keep exclusion between machines: said once.
        let shared = coord::worktree::shared_root(ws.root());
        if let Some(warning) = coord::arbiter::doctor::sync_warning_once(ws.root(), &shared) {
            output::diag(&format!("warning: {warning}"));
        }
        Ok(ws)
    }

    /// As [`Ctx::workspace`] without the look for a sync tool's markers (`lock`, `unlock`, `run`).
    pub fn lock_workspace(&self) -> Result<Workspace, Error> {
        Workspace::discover(self.dir.as_deref(), &self.cwd)
    }

    /// The acting agent (`-a`/`COORD_AGENT`, else the client session's), or the error.
    pub fn agent(&self) -> Result<AgentId, Error> {
        self.agent_opt()?.ok_or(Error::MissingAgent)
    }

    /// As [`Ctx::agent`], for commands that work without one.
    pub fn agent_opt(&self) -> Result<Option<AgentId>, Error> {
        Ok(self
            .agent_explicit()?
            .or_else(|| self.session().map(|s| s.agent.clone())))
    }

    /// The agent given with `-a` or `COORD_AGENT`, and nothing else.
    pub fn agent_explicit(&self) -> Result<Option<AgentId>, Error> {
        self.agent.as_deref().map(AgentId::parse).transpose()
    }

    /// The agent client session this process runs in, when no agent is given.
    pub fn session(&self) -> Option<&coord::identity::Session> {
        if self.agent.is_some() {
            return None;
        }
        self.session
            .get_or_init(|| coord::identity::current(self.lock_workspace().ok()?.root()))
            .as_ref()
    }

    /// The directory relative FILE arguments are read from.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Print `doc` with `--json`, else the human `text` unless `--quiet`.
    pub fn emit(&self, doc: &impl serde::Serialize, text: impl FnOnce() -> String) {
        self.emit_lines(doc, || vec![text()]);
    }

    /// With `--json`, print `doc`; whether that or `--quiet` leaves no human text to print.
    pub fn json_or_quiet(&self, doc: &impl serde::Serialize) -> bool {
        if self.json {
            output::json(doc);
        }
        self.json || self.quiet
    }

    /// As [`Ctx::emit`], the human text in lines (none: nothing printed).
    pub fn emit_lines(&self, doc: &impl serde::Serialize, lines: impl FnOnce() -> Vec<String>) {
        if !self.json_or_quiet(doc) {
            lines().iter().for_each(|l| output::line(l));
        }
    }
}

/// A signal while waiting for a lock leaves the queue and resets WAITING before the process
/// exits 130/143/129.
fn stop_on_signals() -> Result<(), Error> {
    coord::wait::stop_on_signals().map_err(signal_error)
}

fn signal_error(e: std::io::Error) -> Error {
    Error::failed(format!("cannot install the signal handlers: {e}"))
}

fn read_stdin(cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut buf = Vec::new();
    std::io::stdin().lock().take(cap).read_to_end(&mut buf)?;
    Ok(buf)
}

/// End the process with exit 0 on any of `signals` (a command that holds nothing to let go).
fn exit_on_signals(signals: &[i32]) -> Result<(), Error> {
    let mut signals = signal_hook::iterator::Signals::new(signals).map_err(signal_error)?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            std::process::exit(0);
        }
    });
    Ok(())
}

pub fn run() -> ExitCode {
    let first = std::env::args_os().nth(1);
    if first.is_some_and(|a| a == coord::fsutil::FINISH_APPEND_ARG) {
        return ExitCode::Passthrough(coord::fsutil::finish_append());
    }
    coord::fsutil::finish_appends();
    // The library's background children (syncs, the renewer) leave this process as the
    // binary's one piece of pre-exec code makes them.
    coord::remote::set_detacher(child_fence::detach);
    // Which client session this process runs in, from the client's variable (no file read).
    coord::lock::set_runs_in(coord::identity::runs_in());
    // `coord run`'s CMD dies with it, as `coord session`'s does.
    coord::edit::run::set_supervisor(child_fence::die_with_parent);
    let (cli, dir_given, agent_flag) = match parse_args() {
        Ok(parsed) => parsed,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::Success;
        }
        // `--json` promises one document, a usage error included, and an error is said in one
        // stream: the document on stdout with `--json`, the text on stderr without.
        Err(e) => {
            let mut args = std::env::args_os().skip(1).take_while(|a| a != "--");
            if args.any(|a| a == "--json") {
                let detail = e.render().to_string();
                let first = detail
                    .strip_prefix("error: ")
                    .and_then(|d| d.lines().next());
                let usage = Described {
                    message: first.map_or_else(|| e.kind().to_string(), str::to_string),
                    hint: Some("see `coord help`".into()),
                    code: ExitCode::Usage,
                    kind: "usage",
                };
                output::json(&usage.json());
            } else {
                let _ = e.print();
            }
            return ExitCode::Usage;
        }
    };
    let json = cli.global.json;
    let _ = output::COLOR_CHOICE.set(cli.global.color);
    let result = execute(cli, dir_given, agent_flag);
    let history = coord::history::take_warning();
    // The history's warning may be about the same link: said once.
    let link = coord::fsutil::take_link_warning().filter(|(link, _)| {
        !history
            .as_ref()
            .is_some_and(|h| h.contains(&*link.to_string_lossy()))
    });
    let warnings = coord::lock::remote_warnings().into_iter().chain(history);
    for warning in warnings.chain(link.map(|(_, warning)| warning)) {
        output::diag(&format!("warning: {warning}"));
    }
    // An error is said in one stream: the `error:` and `hint:` lines on stderr, or with `--json`
    // the error document on stdout (on stderr as text when the command printed its document).
    let err = match result {
        Ok(code) => return code,
        Err(err) => Described::of(&err),
    };
    if json && !output::JSON_PRINTED.load(std::sync::atomic::Ordering::Relaxed) {
        output::json(&err.json());
    } else {
        output::error_line(&err.message, err.hint.as_deref());
    }
    err.code
}

/// Run the parsed command line, in DIR after `-C DIR`.
fn execute(cli: Cli, dir_given: bool, agent_flag: bool) -> anyhow::Result<ExitCode> {
    // When `getcwd` fails (a FUSE mount remade the folder's inode), the shell's absolute `PWD`;
    // a hook takes it even when the folder is gone, as the workspace around it still holds the
    // files the client edits.
    let hook = matches!(cli.command, Command::Hook(_));
    let mut cwd = std::env::current_dir()
        .or_else(|e| {
            std::env::var_os("PWD")
                .map(PathBuf::from)
                .filter(|p| {
                    p.is_absolute() && (hook || std::fs::metadata(p).is_ok_and(|m| m.is_dir()))
                })
                .ok_or(e)
        })
        .context("cannot read the current directory")?;
    let demo = matches!(cli.command, Command::Demo(_));
    // `-C DIR` on the command line: relative FILEs are read from DIR (`COORD_DIR` only names
    // the root).
    if let Some(dir) = cli.global.dir.as_deref().filter(|_| dir_given) {
        // The demo's `--dir` may name a folder still to be made.
        if demo {
            coord::fsutil::ensure_dir(&cwd.join(dir))?;
        }
        cwd = coord::init::workspace_at(&cwd.join(dir))?
            .root()
            .to_path_buf();
    }
    let ctx = Ctx {
        // The demo plays in a folder of its own unless `-C` names one: an exported `COORD_DIR`
        // names the user's workspace.
        dir: match (dir_given, demo) {
            (true, _) => Some(cwd.clone()),
            (false, true) => None,
            (false, false) => cli.global.dir,
        },
        cwd,
        agent: cli.global.agent.filter(|name| !name.is_empty()),
        agent_flag,
        session: std::cell::OnceCell::new(),
        json: cli.global.json,
        quiet: cli.global.quiet,
    };
    dispatch(cli.command, &ctx)
}

/// Parse the command line, and whether `-C/--dir` and `-a/--agent` stood on it; help asked for
/// is rendered from [`help_command`].
fn parse_args() -> Result<(Cli, bool, bool), clap::Error> {
    let mut command = Cli::command();
    for id in ["dir", "agent", "json", "quiet", "color"] {
        command = command.mut_arg(id, |a| a.help(None).long_help(None));
    }
    let matches = match command.try_get_matches_from_mut(std::env::args_os()) {
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp
                    | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            return Err(help_command()
                .try_get_matches_from(std::env::args_os())
                .err()
                .unwrap_or(e));
        }
        other => other?,
    };
    let dir_given = on_command_line(&matches, "dir");
    let agent_flag = on_command_line(&matches, "agent");
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    Ok((cli, dir_given, agent_flag))
}

/// The command line as help, man page and completions show it: every help text reflowed
/// ([`output::reflow`]) for clap to wrap at the terminal's width. Built only when shown.
pub(crate) fn help_command() -> clap::Command {
    fn reflowed(command: clap::Command) -> clap::Command {
        use clap::builder::{Resettable, StyledStr};
        let text = |s: Option<&StyledStr>| match s {
            Some(s) => Resettable::Value(StyledStr::from(output::reflow(&s.to_string()))),
            None => Resettable::Reset,
        };
        let (about, long) = (text(command.get_about()), text(command.get_long_about()));
        command
            .mut_args(|arg| {
                let (help, long) = (text(arg.get_help()), text(arg.get_long_help()));
                arg.help(help).long_help(long)
            })
            .about(about)
            .long_about(long)
            .mut_subcommands(reflowed)
    }
    reflowed(expanded())
}

/// Whether global option `id` stood on the command line (not from the environment), before or
/// after the subcommand's name.
fn on_command_line(matches: &clap::ArgMatches, id: &str) -> bool {
    std::iter::successors(Some(matches), |m| m.subcommand().map(|(_, sub)| sub))
        .any(|m| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
}

/// An error as the user sees it: the `error:` line's message, the hint, the exit code.
pub struct Described {
    pub message: String,
    pub hint: Option<String>,
    pub code: ExitCode,
    /// The variant's short name (`lock_held`, `bad_input`, ...).
    pub kind: &'static str,
}

impl Described {
    pub fn of(err: &anyhow::Error) -> Described {
        let coord_err = err.chain().find_map(|e| e.downcast_ref::<Error>());
        let message = match coord_err {
            Some(e) if err.downcast_ref::<Error>().is_some() => e.to_string(),
            _ => format!("{err:#}"),
        };
        Described {
            message,
            hint: coord_err.and_then(Error::hint),
            code: coord_err.map(ExitCode::from).unwrap_or(ExitCode::Failure),
            kind: coord_err.map(Error::kind).unwrap_or("failed"),
        }
    }

    /// The object `--json` prints for an error.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "kind": self.kind,
                "message": self.message,
                "hint": self.hint,
                "exit_code": self.code.code(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_tree_passes_clap_debug_assert() {
        super::expanded().debug_assert();
    }
}
