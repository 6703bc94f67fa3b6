//! `coord review …`: the review tracker of seed 003, one file per subcommand group (new, show,
//! next, step, issue, agree and close, path).

use clap::{Args, Subcommand};

use coord::ExitCode;
use coord::review::rules::Reviews;

use super::Ctx;

mod close;
mod issue;
mod new;
mod next;
mod path;
mod show;
mod step;

pub use next::next_text;

/// Run a review between two agents through a markdown tracker
///
/// The tracker `.metadata/reviews/active/TOPIC-tracker.md` is the single source of truth: who is
/// next, what they do, the steps so far, the issues, the agreements and the handoff prompts.
///
///   coord review new api --target docs/api.md --reviewer claude --implementer codex
///   coord review next api                      # who is next, and the prompt to paste to them
///   coord -a claude review step api --action review --output REVIEW.md \
///         --summary "3 issues" --next codex
///   coord review issue api add --severity high --title "Pagination is undefined"
///   coord review close api --commit
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReviewArgs {
    /// The review metadata folder (default `.metadata` under the workspace root)
    #[arg(long, global = true, value_name = "DIR")]
    metadata: Option<String>,

    #[command(subcommand)]
    command: ReviewCommand,
}

#[derive(Debug, Subcommand)]
enum ReviewCommand {
    New(new::NewArgs),
    Show(show::ShowArgs),
    Next(next::NextArgs),
    Step(step::StepArgs),
    Issue(issue::IssueArgs),
    Agree(close::AgreeArgs),
    Close(close::CloseArgs),
    Path(path::PathArgs),
}

pub fn run(args: ReviewArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let reviews = match &args.metadata {
        None => Reviews::default_for(&ws),
        Some(dir) => Reviews::new(&ws, ws.resolve(ctx.cwd(), dir)?.abs),
    }
    .acting_as(ctx.agent_opt()?);
    match args.command {
        ReviewCommand::New(a) => new::new(a, ctx, &ws, &reviews),
        ReviewCommand::Show(a) => show::show(a, ctx, &reviews),
        ReviewCommand::Next(a) => next::next(a, ctx, &reviews),
        ReviewCommand::Step(a) => step::step(a, ctx, &ws, &reviews),
        ReviewCommand::Issue(a) => issue::issue(a, ctx, &reviews),
        ReviewCommand::Agree(a) => close::agree(a, ctx, &reviews),
        ReviewCommand::Close(a) => close::close(a, ctx, &reviews),
        ReviewCommand::Path(a) => path::path(a, ctx, &reviews),
    }
}
