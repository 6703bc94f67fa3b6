//! `coord check [DIR] [--strict]`: the other agents and their state; `--strict` fails on
//! STALE or CONFLICT locks (for CI).

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use coord::lock;
use coord::presence::{self, StateCache, Unreadable};
use coord::status::{AgentView, LockView, agent_view, lock_view, settle_lock_status};
use coord::workspace::AgentId;
use coord::{Error, ExitCode, clock};

use super::{Ctx, output};

/// List the other agents and their state
///
/// Prints `No other agents` when alone. With --strict, exits 4 when any lock is STALE or in
/// CONFLICT, listing them, so CI can assert the folder is clean:
///
///   coord check --strict
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CheckArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Also fail (exit 4) when a lock is STALE or in CONFLICT
    #[arg(long)]
    strict: bool,
}

/// `coord check --json`.
#[derive(Serialize)]
pub struct CheckReport {
    /// The other agents.
    pub agents: Vec<AgentView>,
    /// STALE and CONFLICT locks.
    pub problems: Vec<LockView>,
    pub unreadable: Vec<Unreadable>,
    /// No lock problem.
    pub ok: bool,
}

/// Look at the other agents (all of them when `me` is `None`) and the locks: the report, and
/// each problem described in words.
pub fn collect(
    ws: &coord::workspace::Workspace,
    me: Option<&AgentId>,
) -> (CheckReport, Vec<String>) {
    let now = clock::now();
    let (presences, mut unreadable) = presence::scan(ws.root());
    let mut cache = StateCache::from_presences(&presences, &now);
    let entries = lock::scan_judged(ws, &mut cache, &now, lock::HandMade::Walk);
    unreadable.extend(lock::unreadable(&entries, ws));
    let others = presences
        .iter()
        .filter(|p| me.is_none_or(|m| m.id() != p.id));
    let mut agents: Vec<AgentView> = others.map(|p| agent_view(p, &now)).collect();
    let (claims, claims_unread) = lock::claim::judged_or_unreadable(ws.root(), &mut cache, &now);
    unreadable.extend(claims_unread);
    let claims = claims.iter().map(|c| &c.entry);
    let holding = entries.iter().chain(claims).map(|e| e.agent.as_str());
    settle_lock_status(&mut agents, holding, &lock::queue::waiters(ws.root()));
    let problems = lock::problems(&entries);
    let described = problems
        .iter()
        .map(|p| output::clean(&lock::describe_problem(p)));
    let trees = coord::worktree::trees(ws.root());
    let views = problems.iter().map(|e| lock_view(e, ws, &now, &trees));
    let report = CheckReport {
        agents,
        problems: views.collect(),
        unreadable,
        ok: problems.is_empty(),
    };
    (report, described.collect())
}

/// `AGENT: STATUS (working on …, file …, heartbeat …)`, or `No other agents`.
pub fn agent_lines(agents: &[AgentView]) -> Vec<String> {
    if agents.is_empty() {
        return vec!["No other agents".into()];
    }
    agents
        .iter()
        .map(|a| {
            let working =
                (a.working_on.as_ref()).map(|w| format!("working on {}", output::clean(w)));
            let file = (a.current_file.as_ref()).map(|f| format!("file {}", output::clean(f)));
            let heartbeat = format!("heartbeat {}", output::ago(a.heartbeat_age_s));
            let details: Vec<String> = working.into_iter().chain(file).chain([heartbeat]).collect();
            format!("{}: {} ({})", a.agent, a.status, details.join(", "))
        })
        .collect()
}

pub fn run(args: CheckArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let me = ctx.agent_opt()?;
    let (report, problems) = collect(&ws, me.as_ref());
    ctx.emit_lines(&report, || agent_lines(&report.agents));
    if !ctx.json {
        for u in &report.unreadable {
            let (path, why) = (output::clean(&u.path), &u.why);
            output::diag(&format!("warning: cannot read `{path}`: {why}"));
        }
        if !args.strict {
            for p in &problems {
                output::diag(&format!("warning: {p}"));
            }
        }
    }
    if args.strict && !report.ok {
        let n = problems.len();
        let s = if n == 1 { "" } else { "s" };
        let message = format!("{n} lock problem{s}:\n  {}", problems.join("\n  "));
        return Err(Error::CheckFailed { message }.into());
    }
    Ok(ExitCode::Success)
}
