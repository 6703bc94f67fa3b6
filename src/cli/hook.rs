//! `coord hook CLIENT`: one hook event of an agent client, read from stdin.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};

use coord::ExitCode;
use coord::client::{self, Client, Kind, Reply};
use coord::clock;
use coord::hook::{self, act};
use coord::identity;
use coord::plugin;
use coord::workspace::Workspace;

use super::{Ctx, output};

/// Answer one hook event of an agent client (JSON on stdin)
///
/// Before a file-editing tool runs, locks every file it edits (all or nothing, waiting at most
/// --wait); a file another agent holds is denied in the client's own format, naming the holder.
/// Before the client's shell tool runs a command that commits or pushes, runs the git guard's
/// check (denied when it touches a file another agent holds). After a tool: heartbeat. Session
/// start: clock in and print who else is here. Stop: release this agent's locks. Session end:
/// clock out. coord's own failures print a warning and allow.
///
///   coord init --client claude            # registers this for you
///   echo '{"hook_event_name":"SessionStart","session_id":"3f2a9c1b","cwd":"."}' | coord hook claude
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct HookArgs {
    /// The client that runs the hook
    #[arg(value_parser = PossibleValuesParser::new(Client::names())
        .map(|name| Client::parse(&name).unwrap_or(Client::ALL[0])))]
    client: Client,
    /// The event, where the client's payload does not name it (Copilot CLI)
    #[arg(long, value_name = "NAME")]
    event: Option<String>,
    /// Wait at most this long for a file another agent holds (default 2s)
    #[arg(long, value_name = "DUR")]
    wait: Option<String>,
    /// Run as the user-level plugin (`coord plugin write`): do nothing in a repository that
    /// turned coord off (`git config coord.enabled false`), that `coord init` wired for this
    /// client, or outside any git work tree or coord workspace; keep coord's state out of
    /// `git status` in a repository nobody set up
    #[arg(long)]
    plugin: bool,
}

pub fn run(args: HookArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let client = args.client;
    match answer(&args, ctx) {
        Ok(reply) => {
            // A client told "no" by its exit status (Windsurf): status 2, the reason on stderr.
            if let Reply::Deny(reason) = &reply
                && client.adapter().denies_by_exit_status
            {
                output::diag(reason);
                return Ok(ExitCode::Passthrough(2));
            }
            if let Some(text) = client::render(client, &reply) {
                output::line(&text);
            }
        }
        Err(why) => warn(client, &why.to_string()),
    }
    Ok(ExitCode::Success)
}

fn warn(client: Client, why: &str) {
    output::diag(&format!("warning: coord hook {}: {why}", client.as_str()));
}

/// Everything that can fail, as a warning: a hook never stops the client for coord's sake.
fn answer(args: &HookArgs, ctx: &Ctx) -> anyhow::Result<Reply> {
    let client = args.client;
    let given = args.wait.as_deref().map(clock::parse_duration);
    let wait = given.unwrap_or(Ok(act::DEFAULT_WAIT)).unwrap_or_else(|e| {
        let default = clock::format_duration(act::DEFAULT_WAIT);
        output::diag(&format!("warning: {e}; waiting {default}"));
        act::DEFAULT_WAIT
    });
    let input = super::read_stdin(client::PAYLOAD_CAP)
        .map_err(|e| anyhow::anyhow!("cannot read the event from stdin: {e}"))?;
    let mut call = client::parse(client, &input, args.event.as_deref())?;
    // The folder the client works in. One that is not there (removed while the client ran in
    // it, a payload from elsewhere) is judged from the workspace around it when coord or git
    // made one there; else the call is answered with a warning, never with a workspace made in
    // whatever folder is left or this process happens to run in.
    // The current directory is absolute: a payload without `cwd` is judged from it.
    let given = call.cwd.as_deref().unwrap_or(ctx.cwd());
    let cwd = ctx.cwd().join(given);
    let base = match cwd.is_dir() {
        true => cwd.clone(),
        false => gone_cwd_base(ctx.dir.as_deref(), &cwd).ok_or_else(|| {
            anyhow::anyhow!(
                "the event's cwd `{}` is not a folder; nothing done (the tool call is allowed)",
                given.display()
            )
        })?,
    };
    // A client working in the filesystem's root (a service, a container's default folder): no
    // workspace is made there, which every folder below would join. The folder of the first
    // file the call edits says where it works; a call that edits nothing is left alone.
    let root_only = |c| {
        matches!(
            c,
            Component::RootDir | Component::CurDir | Component::ParentDir
        )
    };
    let at_root = ctx.dir.is_none() && base.components().all(root_only);
    let base = match at_root && !base.join(".coord").is_dir() && !base.join(".git").exists() {
        false => base,
        true => edited_folder(&call, &cwd).ok_or_else(|| {
            anyhow::anyhow!(
                "the event's cwd is the filesystem's root, where coord makes no workspace; nothing done (the tool call is allowed)"
            )
        })?,
    };
    let explicit = ctx.agent_explicit()?;
    // Else the session's own agent (from the payload: it names the session this very call
    // belongs to).
    let of_session = || match call.session_id.as_deref() {
        Some(sid) => identity::agent_for(client, sid),
        None => identity::agent_for_parent(client),
    };
    let agent = explicit.clone().or_else(of_session);
    let nameless =
        "the payload has no usable `session_id`; give the agent with `-a` or COORD_AGENT";
    let ws = match Workspace::discover(ctx.dir.as_deref(), &base) {
        Ok(ws) => ws,
        Err(_) if agent.is_none() => anyhow::bail!("{nameless}"),
        Err(e) => return Err(e.into()),
    };
    // The plugin's hook: nothing at all where coord stays out, before anything is written.
    if args.plugin {
        if plugin::gate(&ws, Some(client)) != plugin::Gate::Go {
            return Ok(Reply::Allow);
        }
        if call.fault.is_none() && agent.is_some() {
            ws.adopt()?;
        }
    }
    // A session coord cannot name, or a payload read only in part: judged on the files it
    // names, nothing written.
    let Some(agent) = agent else {
        let deny = act::judge_untaken(&ws, None, &call, &cwd);
        return judged(client, deny, nameless, "");
    };
    if let Some(why) = &call.fault {
        let warning = format!(
            "the hook payload is not JSON ({why}); read as far as it goes, nothing written"
        );
        let deny = act::judge_untaken(&ws, Some(&agent), &call, &cwd);
        return judged(client, deny, &warning, " (the tool call is allowed)");
    }
    // The session's agent: every later coord below the client process acts as it, and the
    // locks its edits take follow the client process.
    let stop = call.kind == Kind::Stop;
    let process = (stop || (explicit.is_none() && call.session_id.is_some()))
        .then(identity::hook_client_process)
        .flatten();
    // Who is asked at the end of the turn: nobody, when the client runs one prompt and exits.
    call.headless = stop && process.is_some_and(|p| identity::headless(client, p));
    let session = (call.session_id.as_deref())
        .filter(|_| explicit.is_none())
        .zip(process);
    let owner = session.map(|(sid, p)| super::lock::client_owner(client, sid, p.pid, None));
    if let Some((sid, process)) = session
        && call.kind != Kind::SessionEnd
        && let Err(e) = identity::register(&ws, client, sid, &agent, process)
    {
        warn(client, &format!("cannot register the session: {e}"));
    }
    coord::history::set_context(client.as_str(), call.session_id.as_deref());
    // The end of a turn never waits on the network: the clone's renewer releases there.
    coord::lock::leave_releases_to_renewer();
    let reply = act::handle(&ws, &agent, &call, &cwd, wait.min(MAX_WAIT), owner.as_ref());
    // A release left to the renewer, or published records with no renewer running (it was
    // killed): started, so that what this clone holds there is released or renewed in time.
    if coord::lock::releases_left() {
        super::remote::start_renewer(&ws);
    } else {
        super::remote::keep_renewed(&ws, &agent);
    }
    // Only the locks before an edit and the releases at a stop or a session's end change what
    // this clone works on.
    let edit = call.kind == Kind::BeforeTool && call.files.is_some();
    if edit || matches!(call.kind, Kind::Stop | Kind::SessionEnd) {
        super::remote::start_sync_if_working_on_changed(&ws);
    }
    hook::trail::record(&ws, &agent, &call, &cwd, reply.as_ref().ok());
    if let Some((sid, process)) = session
        && call.kind == Kind::SessionEnd
    {
        identity::end(&ws, client, sid, process)?;
    }
    Ok(reply?)
}

/// The deny of a call judged without writing, with the warning `why`; no deny: `why` (and
/// `allowed`) as the error.
fn judged(client: Client, deny: Option<Reply>, why: &str, allowed: &str) -> anyhow::Result<Reply> {
    let deny = deny.ok_or_else(|| anyhow::anyhow!("{why}{allowed}"))?;
    warn(client, why);
    Ok(deny)
}

/// Where to find the workspace from when the event's `cwd` is gone: the nearest folder above
/// it that is there, when the workspace found from it is one that coord or git made, never one
/// that would be made in whatever folder is left (`None`).
fn gone_cwd_base(explicit: Option<&Path>, gone: &Path) -> Option<PathBuf> {
    let base = gone.ancestors().skip(1).find(|d| d.is_dir())?;
    let base = std::fs::canonicalize(base).ok()?;
    let ws = Workspace::discover(explicit, &base).ok()?;
    let state = coord::layout::state_dir(&coord::worktree::shared_root(ws.root()));
    let made = explicit.is_some() || ws.root() != base || state.is_dir();
    made.then_some(base)
}

/// The folder of the first file `call` edits (the nearest one above it that is there), unless
/// that is the filesystem's root too.
fn edited_folder(call: &client::HookCall, cwd: &Path) -> Option<PathBuf> {
    let file = cwd.join(call.files.as_ref()?.first()?);
    let dir = file.ancestors().skip(1).find(|d| d.is_dir())?;
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.parent().is_some().then_some(dir)
}

/// A hook must not hang its client: waits are capped.
const MAX_WAIT: Duration = Duration::from_secs(600);
