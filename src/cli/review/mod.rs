//! `coord review …`: the review tracker of seed 003. This file holds the arguments of every
//! subcommand and runs `new`, `issue`, `agree` and `close`; `show.rs` renders `show` and `next`,
//! `step.rs` runs `step` and `path`.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use serde::Serialize;

use coord::ExitCode;
use coord::review::paths::{Kind, NameParts};
use coord::review::rules::Reviews;
use coord::review::{Action, IssueStatus, Severity};
use coord::workspace::AgentId;

use super::Ctx;
use super::output;

mod show;
mod step;

pub use show::next_text;

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

/// A parser of one of the seed's names, giving its typed value.
fn named<T: Clone + Send + Sync + 'static>(
    names: &'static [&'static str],
    parse: fn(&str) -> Option<T>,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(names).try_map(move |s| parse(&s).ok_or("unknown value"))
}

#[derive(Debug, Subcommand)]
enum ReviewCommand {
    /// Start a review: the tracker, with step 01 planned for the reviewer
    ///
    ///   coord review new api --target docs/api.md --reviewer claude --implementer codex
    #[command(verbatim_doc_comment)]
    New {
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
    },
    /// Show a tracker: meta, current state, steps, issues, agreements
    ///
    ///   coord review show api
    ///   coord review show api --json
    #[command(verbatim_doc_comment)]
    Show {
        /// The topic
        topic: String,
    },
    /// Say who is next, what they do, and print the prompt to paste to them
    ///
    ///   coord review next api
    ///   coord review next api --prompt | pbcopy
    #[command(verbatim_doc_comment)]
    Next {
        /// The topic
        topic: String,
        /// Print only the prompt (to pipe it to a clipboard or an agent)
        #[arg(long)]
        prompt: bool,
    },
    Step(step::StepArgs),
    /// Add or update a row of the Issues table
    ///
    ///   coord review issue api add --severity high --title "Pagination is undefined"
    ///   coord review issue api set ISSUE-01 --status resolved --resolution "cursor paging"
    #[command(verbatim_doc_comment)]
    Issue {
        /// The topic
        topic: String,
        #[command(subcommand)]
        op: IssueOp,
    },
    /// Log a key decision in the Agreements Log
    ///
    ///   coord review agree api "Cursor paging, not offsets" --adopted codex
    ///   coord review agree api "Keep v1 endpoints" --disputed
    #[command(verbatim_doc_comment)]
    Agree {
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
    },
    /// Close a finished review and move its tracker to `reviews/closed/`
    ///
    /// Exit 4, naming what is missing, unless every issue is resolved or wontfix and the last
    /// finished step is a verify step that is done.
    ///
    ///   coord review close api
    ///   coord review close api --commit
    #[command(verbatim_doc_comment)]
    Close {
        /// The topic
        topic: String,
        /// Commit the review's files with the review protocol's commit message format
        #[arg(long)]
        commit: bool,
        /// The commit summary after `TOPIC review: ` (default: derived from the issues)
        #[arg(long, value_name = "S", requires = "commit")]
        summary: Option<String>,
    },
    /// Print the conventional path of a review, response or changelog file for today
    ///
    ///   coord review path api --kind review --llm claude
    ///   coord review path api --kind response --llm codex --to claude
    #[command(verbatim_doc_comment)]
    Path {
        /// The topic
        topic: String,
        /// Which kind of file
        #[arg(long, value_parser = named(Kind::NAMES, Kind::parse))]
        kind: Kind,
        /// Who writes it
        #[arg(long, value_name = "A")]
        llm: String,
        /// The other participant (default: from the tracker)
        #[arg(long, value_name = "B")]
        to: Option<String>,
        /// The step number (default: the planned step)
        #[arg(long, value_name = "NN")]
        step: Option<u32>,
        /// The action (default: the planned step's)
        #[arg(long, value_name = "X", value_parser = named(Action::NAMES, Action::parse))]
        action: Option<Action>,
        /// A few words, snake_cased into the name
        #[arg(long, value_name = "D")]
        description: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum IssueOp {
    /// Add an issue; prints its id (`ISSUE-NN`)
    ///
    ///   coord review issue api add --severity critical --title "Tokens leak in logs"
    #[command(verbatim_doc_comment)]
    Add {
        /// How bad it is
        #[arg(long, value_parser = named(Severity::NAMES, Severity::parse))]
        severity: Severity,
        /// What the problem is
        #[arg(long, value_name = "T")]
        title: String,
    },
    /// Set an issue's status (and resolution)
    ///
    ///   coord review issue api set ISSUE-02 --status wontfix --resolution "out of scope"
    #[command(verbatim_doc_comment)]
    Set {
        /// The issue id (`ISSUE-01`)
        id: String,
        /// The new status
        #[arg(long, value_parser = named(IssueStatus::NAMES, IssueStatus::parse))]
        status: IssueStatus,
        /// How it was settled
        #[arg(long, value_name = "R")]
        resolution: Option<String>,
    },
}

/// What `review new --json` prints.
#[derive(Serialize)]
struct Created<'a> {
    topic: &'a str,
    tracker: String,
    next_actor: &'a str,
    next_action: &'static str,
}

/// What `review path --json` prints.
#[derive(Serialize)]
struct PathOut {
    path: String,
    abs: String,
}

pub fn run(args: ReviewArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let reviews = match &args.metadata {
        None => Reviews::default_for(&ws),
        Some(dir) => Reviews::new(&ws, ws.resolve(ctx.cwd(), dir)?.abs),
    }
    .acting_as(ctx.agent_opt()?);
    let say = |text: &str| {
        if !ctx.json && !ctx.quiet {
            output::line(text);
        }
    };
    match args.command {
        ReviewCommand::New {
            topic,
            target,
            reviewer,
            implementer,
        } => {
            let target = ws.resolve(ctx.cwd(), &target)?;
            let (reviewer, implementer) =
                (AgentId::parse(&reviewer)?, AgentId::parse(&implementer)?);
            let tracker = reviews.create(&topic, &target, &reviewer, &implementer)?;
            say(&format!("Review `{topic}` started: {tracker}"));
            say(&format!(
                "Next: {} (review, step 01). `coord review next {topic}` prints the prompt to paste to them.",
                reviewer.name()
            ));
            json(
                ctx,
                &Created {
                    topic: &topic,
                    tracker,
                    next_actor: reviewer.name(),
                    next_action: "review",
                },
            );
        }
        ReviewCommand::Show { topic } => show::show(&reviews.show(&topic)?, ctx),
        ReviewCommand::Next { topic, prompt } => show::next(&reviews.next(&topic)?, prompt, ctx)?,
        ReviewCommand::Step(a) => step::step(a, ctx, &ws, &reviews)?,
        ReviewCommand::Issue {
            topic,
            op: IssueOp::Add { severity, title },
        } => {
            let issue = reviews.add_issue(&topic, severity, &title)?;
            say(&issue.id);
            json(ctx, &issue);
        }
        ReviewCommand::Issue {
            topic,
            op:
                IssueOp::Set {
                    id,
                    status,
                    resolution,
                },
        } => {
            let issue = reviews.set_issue(&topic, &id, status, resolution.as_deref())?;
            say(&format!("{}: {}", issue.id, issue.status.as_str()));
            json(ctx, &issue);
        }
        ReviewCommand::Agree {
            topic,
            text,
            adopted,
            disputed,
        } => {
            let added = reviews.agree(&topic, &text, adopted.as_deref(), disputed)?;
            let mark = if added.disputed { "[DISPUTED] " } else { "" };
            say(&format!("Logged: - {mark}{}", output::clean(&added.text)));
            json(ctx, &added);
        }
        ReviewCommand::Close {
            topic,
            commit,
            summary,
        } => {
            let closed = reviews.close(&topic, commit, summary.as_deref())?;
            say(&format!("Review `{topic}` closed: {}", closed.tracker));
            if let Some(c) = &closed.commit {
                let first = c.message.lines().next().unwrap_or_default();
                say(&format!(
                    "Committed {}: {}",
                    c.id.get(..12).unwrap_or(&c.id),
                    output::clean(first)
                ));
            }
            json(ctx, &closed);
        }
        ReviewCommand::Path {
            topic,
            kind,
            llm,
            to,
            step,
            action,
            description,
        } => {
            coord::review::check_topic(&topic)?;
            let llm = AgentId::parse(&llm)?;
            let to = to.as_deref().map(AgentId::parse).transpose()?;
            let p = reviews.conventional_path(NameParts {
                kind,
                topic: &topic,
                llm: llm.id(),
                to: to.as_ref().map(AgentId::id),
                step,
                action: action.map(Action::as_str),
                description: description.as_deref(),
            })?;
            let out = PathOut {
                path: reviews.rel(&p),
                abs: p.display().to_string(),
            };
            say(&out.path);
            json(ctx, &out);
        }
    }
    Ok(ExitCode::Success)
}

/// Print `value` when `--json` was given.
fn json<T: Serialize>(ctx: &Ctx, value: &T) {
    if ctx.json {
        output::json(value);
    }
}
