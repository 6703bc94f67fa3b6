//! `coord review next`: who is next, what they do, and the prompt to paste to them.

use clap::Args;

use coord::error::Refusal;
use coord::review::rules::Reviews;
use coord::{Error, ExitCode};

use crate::cli::Ctx;
use crate::cli::output::{self};

/// Say who is next, what they do, and print the prompt to paste to them
///
///   coord review next api
///   coord review next api --prompt | pbcopy
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct NextArgs {
    /// The topic
    topic: String,
    /// Print only the prompt (to pipe it to a clipboard or an agent)
    #[arg(long)]
    prompt: bool,
}

pub(super) fn next(a: NextArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let n = reviews.next(&a.topic)?;
    if ctx.json {
        output::json(&n);
        return Ok(ExitCode::Success);
    }
    if a.prompt {
        match &n.prompt {
            Some(p) => output::line(&output::clean_block(p.strip_suffix('\n').unwrap_or(p))),
            None => {
                return Err(Error::refused(
                    Refusal::NoOpenStep,
                    format!("review `{}` has no planned step, so no prompt", a.topic),
                    Some(format!("see `coord review show {}`", a.topic)),
                )
                .into());
            }
        }
        return Ok(ExitCode::Success);
    }
    if ctx.quiet {
        return Ok(ExitCode::Success);
    }
    output::line(&next_text(&n, &a.topic));
    Ok(ExitCode::Success)
}

/// Next actor, next action, tracker, output and the handoff prompt, as `review next` prints them.
pub fn next_text(n: &coord::review::rules::Next, topic: &str) -> String {
    let role = n
        .role
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let mut out = vec![format!(
        "Next actor:  {}{}",
        output::clean(&n.next_actor),
        output::clean(&role)
    )];
    let action = match (n.action, n.step) {
        (Some(act), Some(step)) => format!("{} (step {step:02})", act.as_str()),
        _ => n.next_action.clone().unwrap_or_else(|| "-".into()),
    };
    out.push(format!("Next action: {}", output::clean(&action)));
    out.push(format!("Tracker:     {}", output::clean(&n.tracker)));
    if let Some(o) = &n.suggested_output {
        out.push(format!("Output:      {}", output::clean(o)));
    }
    match &n.prompt {
        Some(p) => {
            out.push("\nHandoff prompt (paste it to them as is):\n".into());
            out.push(output::clean_block(p.strip_suffix('\n').unwrap_or(p)));
        }
        None => out.push(format!("\nReview `{topic}` is {}.", n.status)),
    }
    out.join("\n")
}
