//! `coord startup` and `coord shutdown`: clock in and out on the stamp card.

use clap::{Args, ValueEnum};

use coord::clock;
use coord::lock::{Release, ReleaseOutcome};
use coord::session::SESSION_ENV;
use coord::stamp::{self, NEW_PARTNER, Partner, Row, Scope, Startup};
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use super::Ctx;
use super::output::{self, Cell};

/// Clock in: a new session on the stamp card, presence ACTIVE, partners online listed
///
/// Earlier sessions of the same partner that never clocked out and have been silent for more
/// than 5 minutes are marked `crashed`. With two or more agents active, `coord handshake` is
/// recommended. `--partner new` picks a free name (`partner-1`, `partner-2`, …) and prints it.
///
///   coord startup --partner claude --mode silent --task Task_123
///   ... work: coord lock / coord unlock / coord presence ...
///   coord shutdown --partner claude
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct StartupArgs {
    /// Who clocks in (the agent; `new` picks a free name). Default: `--agent`/`COORD_AGENT`
    #[arg(long, value_name = "NAME")]
    partner: Option<String>,
    /// `silent` prints only the essentials; `verbose` (default) also lists who is around
    #[arg(long, value_enum, default_value_t = Mode::Verbose)]
    mode: Mode,
    /// What this session works on (`current_task`, presence `working_on`)
    #[arg(long, value_name = "T")]
    task: Option<String>,
}

/// How much `startup` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Only the essentials.
    Silent,
    /// Everything.
    Verbose,
}

/// Clock out: stamp-card row offline, presence FINISHED, your locks released
///
/// Inside `coord session` (`COORD_SESSION` set) only that session is clocked out; otherwise
/// every open session of the agent.
///
///   coord shutdown --partner claude
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ShutdownArgs {
    /// Who clocks out (default: `--agent`/`COORD_AGENT`)
    #[arg(long, value_name = "NAME")]
    partner: Option<String>,
}

/// Who acts, from `--partner` and `--agent`/`COORD_AGENT`: both given and different is bad input.
pub fn partner_choice(partner: Option<&str>, ctx: &Ctx) -> Result<Partner, Error> {
    let agent = ctx.agent_opt()?;
    match (partner, agent) {
        (None, Some(a)) => Ok(Partner::Named(a)),
        (None, None) => Err(Error::MissingAgent),
        (Some(p), None) if p.eq_ignore_ascii_case(NEW_PARTNER) => Ok(Partner::New),
        (Some(p), Some(a)) if p.eq_ignore_ascii_case(NEW_PARTNER) => {
            Err(Error::bad_input(format!(
                "`--partner new` asks for a fresh name, but the agent `{a}` is also given (by `--agent` or `COORD_AGENT`); drop one of them"
            )))
        }
        (Some(p), agent) => match (AgentId::parse(p)?, agent) {
            (p, Some(a)) if a.id() != p.id() => Err(Error::bad_input(format!(
                "`--partner {p}` and the agent `{a}` (by `--agent` or `COORD_AGENT`) differ; give only one"
            ))),
            (p, _) => Ok(Partner::Named(p)),
        },
    }
}

pub fn run_startup(args: StartupArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    coord::workspace::nested::register(ws.root());
    let partner = partner_choice(args.partner.as_deref(), ctx)?;
    let started = stamp::startup(&ws, partner, args.task.as_deref(), None)?;
    let started = started.with_active_agents(ws.root());
    ctx.emit_lines(&started, || startup_lines(&started, args.mode));
    Ok(ExitCode::Success)
}

/// What `startup` (and `session`) tell the user.
pub fn startup_lines(s: &Startup, mode: Mode) -> Vec<String> {
    let mut out = Vec::new();
    if s.picked {
        out.push(format!("Partner name: {}", s.partner));
    }
    let (partner, session, id) = (&s.partner, &s.row.session_id, s.row.id);
    let task = (s.row.current_task.as_deref()).map(|t| format!(" working on {}", output::clean(t)));
    let task = task.unwrap_or_default();
    out.push(format!(
        "Clocked in: {partner} (session {session}, row {id}){task}"
    ));
    for c in &s.crashed {
        let (session, id, why) = (output::clean(&c.row.session_id), c.row.id, &c.why);
        let line = format!(
            "Marked crashed: earlier session {session} (row {id}) never clocked out: {why}"
        );
        out.push(line);
    }
    if mode == Mode::Verbose {
        out.push(online_text(&s.online));
        out.push(format!("Active agents: {}", s.active_agents.join(", ")));
    }
    if s.recommend_handshake {
        let n = s.active_agents.len();
        out.push(format!(
            "Protocol V3 recommended: {n} agents are active; run `coord handshake`"
        ));
    }
    out
}

/// The sessions online, as a table under `Partners online:`.
fn online_text(online: &[Row]) -> String {
    if online.is_empty() {
        return "Partners online: none".into();
    }
    let now = clock::now();
    let rows = online.iter().map(|r| {
        let age = r.heartbeat_age(&now).map(|a| a.as_secs());
        vec![
            Cell::plain(&r.partner_name),
            Cell::opt(r.current_task.as_deref()),
            Cell::plain(output::ago(age)),
            Cell::plain(&r.session_id),
        ]
    });
    let headers = ["PARTNER", "TASK", "HEARTBEAT", "SESSION"];
    let table = output::table(&headers, rows.collect(), output::color_enabled());
    format!("Partners online:\n{table}")
}

pub fn run_shutdown(args: ShutdownArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let Partner::Named(agent) = partner_choice(args.partner.as_deref(), ctx)? else {
        let why = "`coord shutdown --partner new` names nobody; give the partner's name";
        return Err(Error::bad_input(why).into());
    };
    let session = std::env::var(SESSION_ENV).ok().filter(|s| !s.is_empty());
    let scope = session.as_deref().map_or(Scope::Partner, Scope::Session);
    let done = stamp::shutdown(&ws, &agent, scope)?;
    ctx.emit_lines(&done, || {
        let mut lines = release_lines(&done.released);
        if done.closed.is_empty() {
            lines.push(format!(
                "No open session of {} on the stamp card",
                done.partner
            ));
        }
        lines.extend(done.closed.iter().map(|row| {
            let (name, id, session) = (&row.partner_name, row.id, output::clean(&row.session_id));
            format!("Clocked out: {name} (session {session}, row {id})")
        }));
        if done.finished {
            lines.push("Presence: FINISHED".into());
        }
        lines
    });
    Ok(ExitCode::Success)
}

pub fn release_lines(released: &[Release]) -> Vec<String> {
    released
        .iter()
        .filter_map(|r| match &r.outcome {
            ReleaseOutcome::Released if r.claim => Some(format!("Claim released: {}", r.file)),
            ReleaseOutcome::Released => Some(format!("Lock released: {}", r.file)),
            ReleaseOutcome::Lost => Some(format!("{}: lock was taken over meanwhile", r.file)),
            _ => None,
        })
        .collect()
}
