//! `coord check [DIR] [--strict]`: the other agents and their state; `--strict` fails on
//! STALE or CONFLICT locks (for CI).

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use coord::status::{AgentView, LockView, agent_view, lock_view};
use coord::v3::lock;
use coord::v3::presence::{self, StateCache, Unreadable};
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

#[derive(Serialize)]
struct CheckReport {
    agents: Vec<AgentView>,
    problems: Vec<LockView>,
    unreadable: Vec<Unreadable>,
    ok: bool,
}

pub fn run(args: CheckArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let me = ctx.agent_opt()?;
    let now = clock::now();
    let (presences, mut unreadable) = presence::scan(ws.root());
    let mut cache = StateCache::from_presences(&presences, &now);
    let entries = lock::scan_judged(&ws, &mut cache, &now);
    unreadable.extend(lock::unreadable(&entries, &ws));
    let others: Vec<AgentView> = presences
        .iter()
        .filter(|p| me.as_ref().is_none_or(|m| m.id() != p.id))
        .map(|p| agent_view(p, &now))
        .collect();
    let problems = lock::problems(&entries);
    let ok = problems.is_empty();
    if ctx.json {
        output::json(&CheckReport {
            agents: others,
            problems: problems.iter().map(|e| lock_view(e, &ws, &now)).collect(),
            unreadable,
            ok,
        });
    } else {
        if !ctx.quiet {
            if others.is_empty() {
                output::line("No other agents");
            }
            for a in &others {
                let mut details = Vec::new();
                if let Some(w) = &a.working_on {
                    details.push(format!("working on {}", output::clean(w)));
                }
                if let Some(f) = &a.current_file {
                    details.push(format!("file {}", output::clean(f)));
                }
                details.push(format!("heartbeat {}", output::ago(a.heartbeat_age_s)));
                output::line(&format!(
                    "{}: {} ({})",
                    a.agent,
                    a.status,
                    details.join(", ")
                ));
            }
        }
        for u in &unreadable {
            output::diag(&format!(
                "warning: cannot read `{}`: {}",
                output::clean(&u.path),
                u.why
            ));
        }
        if !args.strict {
            for p in &problems {
                output::diag(&format!(
                    "warning: {}",
                    output::clean(&lock::describe_problem(p))
                ));
            }
        }
    }
    if args.strict && !ok {
        let list: Vec<String> = problems
            .iter()
            .map(|p| output::clean(&lock::describe_problem(p)))
            .collect();
        return Err(Error::CheckFailed {
            message: format!(
                "{} lock problem{}:\n  {}",
                list.len(),
                if list.len() == 1 { "" } else { "s" },
                list.join("\n  ")
            ),
        }
        .into());
    }
    Ok(ExitCode::Success)
}
