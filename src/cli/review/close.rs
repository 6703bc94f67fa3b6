//! `coord review agree` and `coord review close`: agreements and the end of a review.

use clap::Args;

use coord::ExitCode;
use coord::review::rules::{CommitRequest, Reviews};

use crate::cli::Ctx;
use crate::cli::output::{self};

/// Log a key decision in the Agreements Log
///
///   coord review agree api "Cursor paging, not offsets" --adopted codex
///   coord review agree api "Keep v1 endpoints" --disputed
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct AgreeArgs {
    /// The topic
    topic: String,
    /// The decision
    text: String,
    /// Whose position was adopted
    #[arg(long, value_name = "A")]
    adopted: Option<String>,
    /// Mark it `[DISPUTED]` (escalated to the user)
    #[arg(long)]
    disputed: bool,
}

pub(super) fn agree(a: AgreeArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let added = reviews.agree(&a.topic, &a.text, a.adopted.as_deref(), a.disputed)?;
    if ctx.json {
        output::json(&added);
    } else if !ctx.quiet {
        let mark = if added.disputed { "[DISPUTED] " } else { "" };
        output::line(&format!("Logged: - {mark}{}", output::clean(&added.text)));
    }
    Ok(ExitCode::Success)
}

/// Close a finished review and move its tracker to `reviews/closed/`
///
/// Exit 4, naming what is missing, unless every issue is resolved or wontfix and the last
/// finished step is a verify step that is done.
///
///   coord review close api
///   coord review close api --commit
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct CloseArgs {
    /// The topic
    topic: String,
    /// Commit the review's files with the review protocol's commit message format
    #[arg(long)]
    commit: bool,
    /// The commit summary after `TOPIC review: ` (default: derived from the issues)
    #[arg(long, value_name = "S", requires = "commit")]
    summary: Option<String>,
}

pub(super) fn close(a: CloseArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let commit = a.commit.then_some(CommitRequest { summary: a.summary });
    let closed = reviews.close(&a.topic, commit.as_ref())?;
    if ctx.json {
        output::json(&closed);
    } else if !ctx.quiet {
        output::line(&format!("Review `{}` closed: {}", a.topic, closed.tracker));
        if let Some(c) = &closed.commit {
            let first = c.message.lines().next().unwrap_or_default();
            output::line(&format!(
                "Committed {}: {}",
                c.id.get(..12).unwrap_or(&c.id),
                output::clean(first)
            ));
        }
    }
    Ok(ExitCode::Success)
}
