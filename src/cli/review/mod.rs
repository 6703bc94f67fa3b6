//! `coord review …`: the review tracker of seed 003. The arguments of every subcommand, and
//! each run: parse, call `coord::review::rules::Reviews`, print (`show.rs` renders `show` and
//! `next`).

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};

use coord::review::paths::{Kind, NameParts};
use coord::review::rules::{Reviews, StepRequest};
use coord::review::{Action, IssueStatus, Severity, StepStatus};
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use super::{Ctx, output};

pub(super) mod show;

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
    New(NewArgs),
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
    Step(StepArgs),
    Issue(IssueArgs),
    Agree(AgreeArgs),
    Close(CloseArgs),
    Path(PathArgs),
}

/// A parser of one of the seed's names, giving its typed value.
fn named<T: Clone + Send + Sync + 'static>(
    names: &'static [&'static str],
    parse: fn(&str) -> Option<T>,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(names).try_map(move |s| parse(&s).ok_or("unknown value"))
}

/// Start a review: the tracker, with step 01 planned for the reviewer
///
///   coord review new api --target docs/api.md --reviewer claude --implementer codex
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct NewArgs {
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

/// Finish your planned step and hand over to exactly one next actor
///
/// The output file must exist and end with a `## Handoff Prompt for Next Actor` section; that
/// section is copied into the tracker's Handoff Prompts for the next actor.
///
///   coord -a claude review step api --action review --output REVIEW.md \
///         --summary "3 issues" --next codex
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct StepArgs {
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

/// Add or update a row of the Issues table
///
///   coord review issue api add --severity high --title "Pagination is undefined"
///   coord review issue api set ISSUE-01 --status resolved --resolution "cursor paging"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct IssueArgs {
    /// The topic
    topic: String,
    #[command(subcommand)]
    op: IssueOp,
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

/// Log a key decision in the Agreements Log
///
///   coord review agree api "Cursor paging, not offsets" --adopted codex
///   coord review agree api "Keep v1 endpoints" --disputed
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct AgreeArgs {
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

/// Close a finished review and move its tracker to `reviews/closed/`
///
/// Exit 4, naming what is missing, unless every issue is resolved or wontfix and the last
/// finished step is a verify step that is done.
///
///   coord review close api
///   coord review close api --commit
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct CloseArgs {
    /// The topic
    topic: String,
    /// Commit the review's files with the review protocol's commit message format
    #[arg(long)]
    commit: bool,
    /// The commit summary after `TOPIC review: ` (default: derived from the issues)
    #[arg(long, value_name = "S", requires = "commit")]
    summary: Option<String>,
}

/// Print the conventional path of a review, response or changelog file for today
///
///   coord review path api --kind review --llm claude
///   coord review path api --kind response --llm codex --to claude
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct PathArgs {
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
}

pub fn run(args: ReviewArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let meta = (args.metadata.as_deref()).map(|dir| ws.resolve(ctx.cwd(), dir));
    let reviews = Reviews::new(&ws, meta.transpose()?.map(|t| t.abs), ctx.agent_opt()?);
    match args.command {
        ReviewCommand::New(a) => {
            let target = ws.resolve(ctx.cwd(), &a.target)?;
            let reviewer = AgentId::parse(&a.reviewer)?;
            let implementer = AgentId::parse(&a.implementer)?;
            let (topic, name) = (&a.topic, reviewer.name());
            let tracker = reviews.create(topic, &target, &reviewer, &implementer)?;
            let doc = serde_json::json!({"topic": topic, "tracker": tracker, "next_actor": name, "next_action": "review"});
            ctx.emit_lines(&doc, || vec![
                format!("Review `{topic}` started: {tracker}"),
                format!("Next: {name} (review, step 01). `coord review next {topic}` prints the prompt to paste to them."),
            ]);
        }
        ReviewCommand::Show { topic } => show::show(&reviews.show(&topic)?, ctx),
        ReviewCommand::Next { topic, prompt } => show::next(&reviews.next(&topic)?, prompt, ctx)?,
        ReviewCommand::Step(a) => {
            let why = "say who finishes the step with `--as A` (or `--agent A`, `COORD_AGENT=A`)";
            let actor = match &a.actor {
                Some(name) => AgentId::parse(name)?,
                None => ctx.agent().map_err(|_| Error::bad_input(why))?,
            };
            let next = AgentId::parse(&a.next).map_err(|e| {
                Error::bad_input(format!("`--next` names exactly one next actor: {e}"))
            })?;
            let output = ws.resolve(ctx.cwd(), &a.output)?;
            let input = a.input.map(|i| ws.resolve(ctx.cwd(), &i)).transpose()?;
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
            ctx.emit_lines(&done, || {
                let (n, status, by) = (done.finished, done.status.as_str(), actor.name());
                let (next, who) = (done.next_step, output::clean(&done.next_actor));
                let action = done.next_action.as_str();
                let step = format!(
                    "Step {n:02} {status} by {by}; step {next:02} planned for {who} ({action})"
                );
                let renumbered = "the remaining steps are renumbered from 01";
                let note = |to: &String| format!("Steps 01-10 archived to {to}; {renumbered}");
                let archived = done.archived_to.iter().map(note);
                std::iter::once(step).chain(archived).collect()
            });
        }
        ReviewCommand::Issue(a) => match a.op {
            IssueOp::Add { severity, title } => {
                let issue = reviews.add_issue(&a.topic, severity, &title)?;
                ctx.emit(&issue, || issue.id.clone());
            }
            IssueOp::Set {
                id,
                status,
                resolution: r,
            } => {
                let issue = reviews.set_issue(&a.topic, &id, status, r.as_deref())?;
                let text = format!("{}: {}", issue.id, issue.status.as_str());
                ctx.emit(&issue, || text);
            }
        },
        ReviewCommand::Agree(a) => {
            let added = reviews.agree(&a.topic, &a.text, a.adopted.as_deref(), a.disputed)?;
            let mark = if added.disputed { "[DISPUTED] " } else { "" };
            let text = format!("Logged: - {mark}{}", output::clean(&added.text));
            ctx.emit(&added, || text);
        }
        ReviewCommand::Close(a) => {
            let closed = reviews.close(&a.topic, a.commit, a.summary.as_deref())?;
            ctx.emit_lines(&closed, || {
                let mut lines = vec![format!("Review `{}` closed: {}", a.topic, closed.tracker)];
                if let Some(c) = &closed.commit {
                    let (id, first) = (c.id.get(..12).unwrap_or(&c.id), c.message.lines().next());
                    let first = output::clean(first.unwrap_or_default());
                    lines.push(format!("Committed {id}: {first}"));
                }
                lines
            });
        }
        ReviewCommand::Path(a) => {
            coord::review::check_topic(&a.topic)?;
            let llm = AgentId::parse(&a.llm)?;
            let to = a.to.as_deref().map(AgentId::parse).transpose()?;
            let p = reviews.conventional_path(NameParts {
                kind: a.kind,
                topic: &a.topic,
                llm: llm.id(),
                to: to.as_ref().map(AgentId::id),
                step: a.step,
                action: a.action.map(Action::as_str),
                description: a.description.as_deref(),
            })?;
            let rel = reviews.rel(&p);
            let doc = serde_json::json!({"path": rel, "abs": p.display().to_string()});
            ctx.emit(&doc, || rel.clone());
        }
    }
    Ok(ExitCode::Success)
}
