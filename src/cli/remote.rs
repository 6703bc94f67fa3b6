//! `coord remote enable|disable|sync|status`: claims shared with clones on other machines
//! through the repository's remote (contract §13).

use std::time::Duration;

use clap::{Args, Subcommand};

use coord::clock::{self, Timestamp};
use coord::error::Refusal;
use coord::lock::renewal;
use coord::pattern::Pattern;
use coord::remote::{self, AgentWork, Claimed, Item, Outcome, View};
use coord::workspace::{AgentId, Workspace};
use coord::{Error, ExitCode};

use super::Ctx;
use super::output::{self, Cell};

/// Share claims with agents in clones on other machines, through the repository's remote
///
/// In an enabled clone, coord keeps its shared state under refs/coord/ on the remote (and
/// nothing else there); the remote's ref updates decide who wins a claim. `enable` once per
/// clone; `status` shows the other clones' claims and agents as last read, reading the remote
/// again when that is older than `remote_max_age` (.coord/config, default 15s).
///
///   coord remote enable                # share through `origin`
///   coord remote enable upstream
///   coord remote status
///   coord remote sync
///   coord remote disable
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RemoteArgs {
    #[command(subcommand)]
    command: RemoteCommand,
}

#[derive(Debug, Subcommand)]
enum RemoteCommand {
    /// Share this clone's claims through REMOTE (default origin)
    ///
    /// Kept in the clone's git config as coord.remote; the clone gets an id (coord.cloneId).
    /// A REMOTE the repository does not have is refused (exit 2). The remote is read at once;
    /// when it cannot be reached, the clone is enabled all the same and told so.
    ///
    ///   coord remote enable
    ///   coord remote enable upstream
    #[command(verbatim_doc_comment)]
    Enable {
        /// The remote (default origin)
        #[arg(value_name = "REMOTE")]
        remote: Option<String>,
    },
    /// Stop sharing claims through the remote
    ///
    /// This clone's claims and `working_on` there are removed (when it can be reached),
    /// coord.remote is unset and the state read from the remote is forgotten.
    ///
    ///   coord remote disable
    #[command(verbatim_doc_comment)]
    Disable,
    /// Read the remote's coord state now
    ///
    /// One fetch of refs/coord/*; exit 1 naming the remote when it cannot be reached.
    ///
    ///   coord remote sync
    #[command(verbatim_doc_comment)]
    Sync {
        /// Started detached (a reader whose view is old, a lock taken or released): print
        /// nothing, and leave it to a sync of this clone already under way
        #[arg(long, hide = true)]
        background: bool,
    },
    /// Show the other clones' claims and agents, and how old this view is
    ///
    /// Read again from the remote when older than remote_max_age; when the remote cannot be
    /// reached, the view last read is shown with a warning.
    ///
    ///   coord remote status
    ///   coord remote status --json
    #[command(verbatim_doc_comment)]
    Status,
    #[command(hide = true)]
    Claim(ClaimArgs),
    #[command(hide = true)]
    Release(ReleaseArgs),
    #[command(hide = true)]
    Renew(RenewArgs),
    #[command(hide = true)]
    Hold(ClaimArgs),
    #[command(hide = true, name = "working-on")]
    WorkingOn(WorkingOnArgs),
    #[command(hide = true)]
    Who(WorkingOnArgs),
    #[command(hide = true)]
    Renewer,
}

#[derive(Debug, Args)]
struct ClaimArgs {
    /// Patterns relative to the repository's top level
    #[arg(value_name = "PATTERN", required = true)]
    patterns: Vec<String>,
    /// Paths locked one by one (taken literally) instead of patterns
    #[arg(long)]
    path: bool,
    /// What the claim is for
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// The lease (default 15m)
    #[arg(long, value_name = "DUR")]
    ttl: Option<String>,
}

#[derive(Debug, Args)]
struct ReleaseArgs {
    /// Patterns relative to the repository's top level (all of the agent's when none)
    #[arg(value_name = "PATTERN")]
    patterns: Vec<String>,
}

#[derive(Debug, Args)]
struct RenewArgs {
    /// Patterns relative to the repository's top level (all of the agent's when none)
    #[arg(value_name = "PATTERN")]
    patterns: Vec<String>,
    /// The new lease (each keeps its own when not given)
    #[arg(long, value_name = "DUR")]
    ttl: Option<String>,
}

#[derive(Debug, Args)]
struct WorkingOnArgs {
    /// Paths relative to the repository's top level (none: nothing)
    #[arg(value_name = "PATH")]
    paths: Vec<String>,
}

pub fn run(args: RemoteArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    match args.command {
        RemoteCommand::Enable { remote } => enable(&ws, remote, ctx)?,
        RemoteCommand::Disable => disable(&ws, ctx)?,
        RemoteCommand::Sync { background: true } => {
            remote::sync_in_background(&ws, || coord::lock::working_on(&ws))?;
        }
        RemoteCommand::Sync { background: false } => {
            let view = remote::sync(&ws, &coord::lock::working_on(&ws))?;
            warnings(&view);
            show(&ws, Some(view), ctx);
        }
        RemoteCommand::Status => status(&ws, ctx),
        RemoteCommand::Claim(a) => claim(&ws, a, ctx, false)?,
        RemoteCommand::Hold(a) => claim(&ws, a, ctx, true)?,
        RemoteCommand::Release(a) => release(&ws, a, ctx)?,
        RemoteCommand::Renew(a) => renew(&ws, a, ctx)?,
        RemoteCommand::Renewer => {
            super::stop_on_signals()?;
            renewal::run(&ws)?;
        }
        RemoteCommand::Who(a) => {
            // What a hook's edit check reads: the other clones' claims as last synced, no
            // network, no git.
            let paths: Vec<&str> = a.paths.iter().map(String::as_str).collect();
            let claims = remote::claims_on(&ws, &paths);
            for path in &a.paths {
                for c in claims.iter().filter(|c| c.pattern.matches(path)) {
                    output::line(&format!(
                        "{path}: {} (claim `{}`{})",
                        c.holder.describe(),
                        c.pattern,
                        if c.stale { ", STALE" } else { "" }
                    ));
                }
            }
        }
        RemoteCommand::WorkingOn(a) => {
            let agent = ctx.agent()?.id().to_string();
            let work = (!a.paths.is_empty()).then_some(AgentWork {
                agent,
                working_on: a.paths,
            });
            let pushed = remote::publish_working_on(&ws, work.as_slice())?;
            if !ctx.quiet {
                output::line(if pushed {
                    "Published what this clone's agents edit"
                } else {
                    "Unchanged: nothing published"
                });
            }
        }
    }
    Ok(ExitCode::Success)
}

fn enable(ws: &Workspace, remote: Option<String>, ctx: &Ctx) -> anyhow::Result<()> {
    let name = remote.unwrap_or_else(|| "origin".into());
    let cfg = remote::enable(ws, &name)?;
    let url = remote::remote_url(ws.root(), &name).map(|u| format!(" ({u})"));
    if !ctx.quiet && !ctx.json {
        output::line(&format!(
            "Claims are shared through `{name}`{} from now on (this clone: {} on {})",
            url.unwrap_or_default(),
            cfg.clone_id.as_deref().unwrap_or("?"),
            coord::host::hostname()
        ));
    }
    let view = match remote::sync(ws, &coord::lock::working_on(ws)) {
        Ok(v) => {
            warnings(&v);
            Some(v)
        }
        Err(e) => {
            output::diag(&format!(
                "warning: {e}; coord reads it again at the next command that needs it"
            ));
            remote::view(ws)
        }
    };
    show(ws, view, ctx);
    Ok(())
}

fn disable(ws: &Workspace, ctx: &Ctx) -> anyhow::Result<()> {
    let done = remote::disable(ws)?;
    if let Some(w) = &done.warning {
        output::diag(&format!(
            "warning: {w}; this clone's claims there stay until their lease lapses"
        ));
    }
    if ctx.json {
        show(ws, None, ctx);
    } else if !ctx.quiet {
        output::line(&match &done.remote {
            Some(r) => format!(
                "Claims are no longer shared through `{r}` ({} of this clone's released there)",
                done.released
            ),
            None => "Claims were not shared through a remote here".to_string(),
        });
    }
    Ok(())
}

fn status(ws: &Workspace, ctx: &Ctx) {
    let mut view = remote::view(ws);
    let old = view
        .as_ref()
        .is_some_and(|v| v.age.is_none_or(|a| a > remote::max_age(ws)));
    if old {
        match remote::sync(ws, &coord::lock::working_on(ws)) {
            Ok(v) => view = Some(v),
            Err(e) => output::diag(&format!(
                "warning: {e}; showing what was read {}",
                view.as_ref()
                    .and_then(|v| v.age)
                    .map(|a| format!("{} ago", clock::format_age(a)))
                    .unwrap_or_else(|| "before (never)".into())
            )),
        }
    }
    if let Some(v) = &view {
        warnings(v);
    }
    show(ws, view, ctx);
}

/// The records ignored on the remote, one `warning:` line each.
fn warnings(view: &View) {
    for w in &view.warnings {
        output::diag(&format!("warning: {w}"));
    }
}

fn show(ws: &Workspace, view: Option<View>, ctx: &Ctx) {
    if ctx.quiet && !ctx.json {
        return;
    }
    let url = view
        .as_ref()
        .and_then(|v| remote::remote_url(ws.root(), &v.remote));
    if ctx.json {
        output::json(&match &view {
            Some(v) => v.to_json(url.as_deref()),
            None => serde_json::json!({
                "remote": null, "url": null, "synced_at": null, "age_s": null,
                "claims": [], "agents": [],
            }),
        });
        return;
    }
    let Some(v) = view else {
        output::line(
            "Claims are not shared through a remote here (`coord remote enable` shares them through origin)",
        );
        return;
    };
    let color = output::color_enabled();
    let read = match v.age {
        Some(a) => format!("read {} ago", clock::format_age(a)),
        None => "never read yet".to_string(),
    };
    let url = url.map(|u| format!(" ({u})")).unwrap_or_default();
    output::line(&format!(
        "Claims shared through `{}`{url}, {read}",
        v.remote
    ));
    let now = clock::now();
    if v.claims.is_empty() {
        output::line("No claims there");
    } else {
        let rows = v.claims.iter().map(|c| {
            vec![
                Cell::plain(c.pattern.as_str()),
                Cell::plain(&c.holder.agent),
                Cell::plain(&c.holder.host),
                Cell::state(if c.stale { "STALE" } else { "LIVE" }),
                Cell::plain(short_time(&c.since, &now)),
                Cell::plain(short_time(&c.lease_until, &now)),
                Cell::opt(c.reason.as_deref()),
            ]
        });
        let headers = [
            "PATTERN",
            "AGENT",
            "HOST",
            "STATE",
            "SINCE",
            "LEASE UNTIL",
            "REASON",
        ];
        output::line(&output::title("Claims", color));
        output::line(&output::table(&headers, rows.collect(), color));
    }
    if !v.agents.is_empty() {
        let rows = v.agents.iter().map(|a| {
            vec![
                Cell::plain(&a.agent),
                Cell::plain(&a.host),
                Cell::plain(a.working_on.join(", ")),
                Cell::plain(short_time(&a.seen_at, &now)),
            ]
        });
        let headers = ["AGENT", "HOST", "WORKING ON", "SEEN"];
        output::line(&output::title("Agents", color));
        output::line(&output::table(&headers, rows.collect(), color));
    }
}

/// `HH:MM:SS` today, else the date too, in local time.
pub(crate) fn short_time(t: &Timestamp, now: &Timestamp) -> String {
    let t = t.with_timezone(&chrono::Local);
    if t.date_naive() == now.with_timezone(&chrono::Local).date_naive() {
        t.format("%H:%M:%S").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M").to_string()
    }
}

fn parse_patterns(list: &[String], literal: bool) -> Result<Vec<Item>, Error> {
    let parse = |p: &String| match literal {
        true => Ok(Item::lock(p.trim_start_matches("./"))),
        false => Pattern::parse(p).map(Item::claim).map_err(|why| {
            let pattern = p.clone();
            Error::BadPattern { pattern, why }
        }),
    };
    list.iter().map(parse).collect()
}

fn claim(ws: &Workspace, a: ClaimArgs, ctx: &Ctx, hold: bool) -> anyhow::Result<()> {
    let agent = ctx.agent()?;
    let items = parse_patterns(&a.patterns, a.path)?;
    let ttl = a.ttl.as_deref().map(clock::parse_duration).transpose()?;
    let ttl = ttl.unwrap_or(remote::DEFAULT_LEASE);
    let remote_name = remote::config(ws).map(|c| c.remote).unwrap_or_default();
    let published = match remote::publish_claims(ws, &agent, &items, a.reason.as_deref(), ttl)? {
        Claimed::Held(h) => return Err(h.refusal(&remote_name).into()),
        Claimed::Published(p) => p,
    };
    if !ctx.quiet {
        for t in &published.taken_over {
            output::diag(&format!(
                "note: took over `{}` from {} (held since {}, its lease ended {})",
                t.pattern,
                t.holder.describe(),
                clock::format_timestamp(&t.since),
                clock::format_timestamp(&t.lease_ended)
            ));
        }
        output::line(&format!(
            "Claim published: {} (lease until {})",
            published.patterns.join(", "),
            clock::format_timestamp(&published.lease_until)
        ));
    }
    if !hold {
        return Ok(());
    }
    // Renew a third of the way into each lease until refused or stopped.
    let patterns: Vec<Pattern> = items.into_iter().map(|i| i.pattern).collect();
    let step = (ttl / 3).max(Duration::from_millis(200));
    loop {
        std::thread::sleep(step);
        let out = remote::renew(ws, std::slice::from_ref(&agent), Some(&patterns), None)?;
        refuse_gone(&out)?;
    }
}

/// A renewal or release that found a record gone: refused, naming who holds it now.
fn refuse_gone(out: &[Outcome]) -> Result<(), Error> {
    for o in out {
        if let Outcome::Gone { pattern, by } = o {
            let who = by
                .as_ref()
                .map(|h| format!("taken over by {}", h.describe()))
                .unwrap_or_else(|| "not on the remote any more".into());
            return Err(Error::refused(
                Refusal::LockTakenOver,
                format!("the claim on `{pattern}` is no longer yours: {who}"),
                Some(format!(
                    "claim it again with `coord lock {}` once it is free",
                    coord::shell::arg(pattern)
                )),
            ));
        }
    }
    Ok(())
}

/// The patterns of `list`, `None` (all of the agent's) when empty.
fn patterns_of(list: &[String]) -> Result<Option<Vec<Pattern>>, Error> {
    let items = parse_patterns(list, false)?;
    Ok((!items.is_empty()).then(|| items.into_iter().map(|i| i.pattern).collect()))
}

fn release(ws: &Workspace, a: ReleaseArgs, ctx: &Ctx) -> anyhow::Result<()> {
    let agent = ctx.agent()?;
    let patterns = patterns_of(&a.patterns)?;
    let out = remote::release(ws, std::slice::from_ref(&agent), patterns.as_deref())?;
    if !ctx.quiet {
        for o in &out {
            output::line(&match o {
                Outcome::Done { pattern, .. } => format!("Claim released: {pattern}"),
                Outcome::Gone { pattern, by } => format!(
                    "Not held: {pattern}{}",
                    by.as_ref()
                        .map(|h| format!(" (held by {})", h.describe()))
                        .unwrap_or_default()
                ),
            });
        }
    }
    Ok(())
}

fn renew(ws: &Workspace, a: RenewArgs, ctx: &Ctx) -> anyhow::Result<()> {
    let agent = ctx.agent()?;
    let patterns = patterns_of(&a.patterns)?;
    let ttl = a.ttl.as_deref().map(clock::parse_duration).transpose()?;
    let out = remote::renew(ws, std::slice::from_ref(&agent), patterns.as_deref(), ttl)?;
    refuse_gone(&out)?;
    if !ctx.quiet {
        for o in &out {
            if let Outcome::Done {
                pattern,
                lease_until: Some(t),
            } = o
            {
                output::line(&format!(
                    "Claim renewed: {pattern} (lease until {})",
                    clock::format_timestamp(t)
                ));
            }
        }
    }
    Ok(())
}

/// Start this clone's renewer of its remote claims (`coord remote renewer`), detached; it exits
/// at once when one already runs for the clone.
pub fn start_renewer(ws: &Workspace) {
    if let Err(e) = start_detached(ws, &["renewer"]) {
        output::diag(&format!(
            "warning: cannot start the renewer of this clone's remote claims ({e}): they hold until their lease lapses unless `coord lock` runs again"
        ));
    }
}

/// Start the renewer when `agent` holds records marked as published and none runs (it was
/// killed): what keeps an agent LIVE here (a heartbeat, a client's hook) keeps what it holds
/// there renewed too, else its claim would lapse for the other clones while it works under it.
pub fn keep_renewed(ws: &Workspace, agent: &AgentId) {
    if coord::lock::renewal::missing(ws, agent) {
        start_renewer(ws);
    }
}

/// After a lock was taken or released here: when this clone's `working_on` changed since the
/// remote last showed it, start `coord remote sync --background` detached, unless one runs.
pub fn start_sync_if_working_on_changed(ws: &Workspace) {
    // Not shared here: nothing to look at (the lock index is read only where it is).
    if remote::config(ws).is_some()
        && remote::working_on_changed(ws, &coord::lock::working_on(ws))
        && !remote::sync_running(ws)
    {
        let _ = start_detached(ws, &["sync", "--background"]);
    }
}

/// Start `coord remote ARGS` for `ws`, detached ([`remote::spawn_detached`]).
fn start_detached(ws: &Workspace, args: &[&str]) -> std::io::Result<()> {
    let mut child = remote::spawn_detached(ws, args)?;
    std::thread::spawn(move || child.wait());
    Ok(())
}
