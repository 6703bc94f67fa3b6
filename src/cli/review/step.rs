//! `coord review step`: record a finished step and plan the next.

use clap::Args;

use coord::Error;
use coord::review::rules::{Reviews, StepRequest};
use coord::review::{Action, StepStatus};
use coord::workspace::{AgentId, Workspace};

use super::named;
use crate::cli::Ctx;
use crate::cli::output;

/// Finish your planned step and hand over to exactly one next actor
///
/// The output file must exist and end with a `## Handoff Prompt for Next Actor` section; that
/// section is copied into the tracker's Handoff Prompts for the next actor.
///
///   coord -a claude review step api --action review --output REVIEW.md \
///         --summary "3 issues" --next codex
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct StepArgs {
    /// The topic
    topic: String,
    /// Who finishes the step (default: `--agent` / `COORD_AGENT`)
    #[arg(long = "as", value_name = "A")]
    actor: Option<String>,
    /// What the step did
    #[arg(long, value_name = "ACTION", value_parser = named(Action::NAMES, Action::parse))]
    action: Action,
    /// The file the step wrote
    #[arg(long, value_name = "F")]
    output: String,
    /// The file the step read
    #[arg(long, value_name = "F")]
    input: Option<String>,
    /// What was done, in a line
    #[arg(long, value_name = "S")]
    summary: String,
    /// Exactly one next actor
    #[arg(long, value_name = "B")]
    next: String,
    /// How the step ended
    #[arg(long, value_name = "STATUS", default_value = "done",
          value_parser = named(&["done", "blocked", "no_action"], StepStatus::parse))]
    status: StepStatus,
    /// The next step's action, when not the usual one
    #[arg(long, value_name = "ACTION", value_parser = named(Action::NAMES, Action::parse))]
    next_action: Option<Action>,
}

pub(super) fn step(a: StepArgs, ctx: &Ctx, ws: &Workspace, reviews: &Reviews) -> Result<(), Error> {
    let actor = match &a.actor {
        Some(name) => AgentId::parse(name)?,
        None => ctx.agent().map_err(|_| {
            Error::bad_input(
                "say who finishes the step with `--as A` (or `--agent A`, `COORD_AGENT=A`)",
            )
        })?,
    };
    let next = AgentId::parse(&a.next)
        .map_err(|e| Error::bad_input(format!("`--next` names exactly one next actor: {e}")))?;
    let output = ws.resolve(ctx.cwd(), &a.output)?;
    let input = a
        .input
        .as_deref()
        .map(|i| ws.resolve(ctx.cwd(), i))
        .transpose()?;
    let done = reviews.step(&StepRequest {
        topic: &a.topic,
        actor: &actor,
        action: a.action,
        output: &output,
        input: input.as_ref(),
        summary: &a.summary,
        next: &next,
        status: a.status,
        next_action: a.next_action,
    })?;
    if let Some(w) = &done.warning {
        output::diag(&format!("warning: {}", output::clean(w)));
    }
    if ctx.json {
        output::json(&done);
    } else if !ctx.quiet {
        output::line(&format!(
            "Step {:02} {} by {}; step {:02} planned for {} ({})",
            done.finished,
            done.status.as_str(),
            actor.name(),
            done.next_step,
            output::clean(&done.next_actor),
            done.next_action.as_str()
        ));
        if let Some(arch) = &done.archived_to {
            output::line(&format!(
                "Steps 01-10 archived to {arch}; the remaining steps are renumbered from 01"
            ));
        }
    }
    Ok(())
}
