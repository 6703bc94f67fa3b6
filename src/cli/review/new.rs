//! `coord review new`: start a review.

use clap::Args;
use serde::Serialize;

use coord::ExitCode;
use coord::review::rules::{NewReview, Reviews};
use coord::workspace::AgentId;

use crate::cli::Ctx;
use crate::cli::output::{self};

/// Start a review: the tracker, with step 01 planned for the reviewer
///
///   coord review new api --target docs/api.md --reviewer claude --implementer codex
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct NewArgs {
    /// The topic (a-z, 0-9, `-`, `_`): the tracker is `TOPIC-tracker.md`
    topic: String,
    /// What is reviewed (a file or folder inside the workspace)
    #[arg(long, value_name = "PATH")]
    target: String,
    /// Who reviews
    #[arg(long, value_name = "A")]
    reviewer: String,
    /// Who responds and implements
    #[arg(long, value_name = "B")]
    implementer: String,
}

#[derive(Serialize)]
struct Created {
    topic: String,
    tracker: String,
    next_actor: String,
    next_action: &'static str,
}

pub(super) fn new(
    a: NewArgs,
    ctx: &Ctx,
    ws: &coord::workspace::Workspace,
    reviews: &Reviews,
) -> anyhow::Result<ExitCode> {
    let target = ws.resolve(ctx.cwd(), &a.target)?;
    let reviewer = AgentId::parse(&a.reviewer)?;
    let implementer = AgentId::parse(&a.implementer)?;
    let tracker = reviews.create(&NewReview {
        topic: &a.topic,
        target: &target,
        reviewer: &reviewer,
        implementer: &implementer,
    })?;
    let created = Created {
        topic: a.topic.clone(),
        tracker,
        next_actor: reviewer.name().to_string(),
        next_action: "review",
    };
    if ctx.json {
        output::json(&created);
    } else if !ctx.quiet {
        output::line(&format!(
            "Review `{}` started: {}",
            a.topic, created.tracker
        ));
        output::line(&format!(
            "Next: {} (review, step 01). `coord review next {}` prints the prompt to paste to them.",
            reviewer.name(),
            a.topic
        ));
    }
    Ok(ExitCode::Success)
}
