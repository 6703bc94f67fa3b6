//! `coord review …`: the review tracker of seed 003 (new, show, next, step, issue, agree, close, path).

use clap::builder::PossibleValuesParser;
use clap::{Args, Subcommand};
use serde::Serialize;

use coord::clock;
use coord::review::paths::{self, Kind, NameParts};
use coord::review::rules::{CommitRequest, NewReview, Reviews, Shown, StepRequest};
use coord::review::{Action, IssueStatus, Severity, StepStatus};
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use super::Ctx;
use super::output::{self, Cell};
use coord::error::Refusal;

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
    Show(ShowArgs),
    Next(NextArgs),
    Step(StepArgs),
    Issue(IssueArgs),
    Agree(AgreeArgs),
    Close(CloseArgs),
    Path(PathArgs),
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

/// Show a tracker: meta, current state, steps, issues, agreements
///
///   coord review show api
///   coord review show api --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct ShowArgs {
    /// The topic
    topic: String,
}

/// Say who is next, what they do, and print the prompt to paste to them
///
///   coord review next api
///   coord review next api --prompt | pbcopy
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
struct NextArgs {
    /// The topic
    topic: String,
    /// Print only the prompt (to pipe it to a clipboard or an agent)
    #[arg(long)]
    prompt: bool,
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
    #[arg(long, value_name = "ACTION", value_parser = PossibleValuesParser::new(Action::NAMES))]
    action: String,
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
          value_parser = PossibleValuesParser::new(["done", "blocked", "no_action"]))]
    status: String,
    /// The next step's action, when not the usual one
    #[arg(long, value_name = "ACTION", value_parser = PossibleValuesParser::new(Action::NAMES))]
    next_action: Option<String>,
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
        #[arg(long, value_parser = PossibleValuesParser::new(Severity::NAMES))]
        severity: String,
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
        #[arg(long, value_parser = PossibleValuesParser::new(IssueStatus::NAMES))]
        status: String,
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
    /// Commit the review's files with the seed's message format
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
    #[arg(long, value_parser = PossibleValuesParser::new(Kind::NAMES))]
    kind: String,
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
    #[arg(long, value_name = "X", value_parser = PossibleValuesParser::new(Action::NAMES))]
    action: Option<String>,
    /// A few words, snake_cased into the name
    #[arg(long, value_name = "D")]
    description: Option<String>,
}

pub fn run(args: ReviewArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let reviews = match &args.metadata {
        None => Reviews::default_for(&ws),
        Some(dir) => Reviews::new(&ws, ws.resolve(ctx.cwd(), dir)?.abs),
    }
    .acting_as(ctx.agent_opt()?);
    match args.command {
        ReviewCommand::New(a) => new(a, ctx, &ws, &reviews),
        ReviewCommand::Show(a) => show(a, ctx, &reviews),
        ReviewCommand::Next(a) => next(a, ctx, &reviews),
        ReviewCommand::Step(a) => step(a, ctx, &ws, &reviews),
        ReviewCommand::Issue(a) => issue(a, ctx, &reviews),
        ReviewCommand::Agree(a) => agree(a, ctx, &reviews),
        ReviewCommand::Close(a) => close(a, ctx, &reviews),
        ReviewCommand::Path(a) => path(a, ctx, &reviews),
    }
}

#[derive(Serialize)]
struct Created {
    topic: String,
    tracker: String,
    next_actor: String,
    next_action: &'static str,
}

fn new(
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

fn show(a: ShowArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let shown = reviews.show(&a.topic)?;
    if ctx.json {
        output::json(&shown);
    } else if !ctx.quiet {
        output::line(&render_show(&shown, output::color_enabled()));
    }
    Ok(ExitCode::Success)
}

fn render_show(s: &Shown, color: bool) -> String {
    let v = &s.view;
    let mut out = Vec::new();
    out.push(format!(
        "{} {}",
        output::title(&format!("Review {}", s.topic), color),
        output::clean(&s.tracker)
    ));
    let participants: Vec<String> = v
        .meta
        .participants
        .iter()
        .map(|p| match &p.role {
            Some(r) => format!("{} ({r})", p.name),
            None => p.name.clone(),
        })
        .collect();
    for (k, val) in [
        ("Target", v.meta.target.clone()),
        ("Status", Some(v.meta.status.clone())),
        ("Participants", Some(participants.join(", "))),
        ("Created", v.meta.created.clone()),
        ("Last updated", v.meta.last_updated.clone()),
        ("Next actor", Some(v.current.next_actor.clone())),
        ("Next action", v.current.next_action.clone()),
    ] {
        out.push(format!(
            "  {k:<13} {}",
            output::clean(val.as_deref().unwrap_or("-"))
        ));
    }
    out.push(String::new());
    out.push(output::title("Steps", color));
    if let Some(note) = &v.steps_note {
        out.push(format!("  {}", output::clean(note)));
    }
    let rows = v
        .steps
        .iter()
        .map(|st| {
            vec![
                Cell::plain(format!("{:02}", st.number)),
                Cell::plain(&st.actor),
                Cell::plain(st.status.as_str()),
                Cell::opt(st.action.map(Action::as_str)),
                Cell::opt(st.summary.as_deref()),
            ]
        })
        .collect();
    out.push(output::table(
        &["STEP", "ACTOR", "STATUS", "ACTION", "SUMMARY"],
        rows,
        color,
    ));
    out.push(String::new());
    out.push(output::title("Issues", color));
    if v.issues.is_empty() {
        out.push("  No issues".into());
    } else {
        let rows = v
            .issues
            .iter()
            .map(|i| {
                vec![
                    Cell::plain(&i.id),
                    Cell::plain(i.severity.as_str()),
                    Cell::plain(i.status.as_str()),
                    Cell::plain(&i.title),
                    Cell::opt(i.resolution.as_deref()),
                ]
            })
            .collect();
        out.push(output::table(
            &["ID", "SEVERITY", "STATUS", "TITLE", "RESOLUTION"],
            rows,
            color,
        ));
    }
    if !v.agreements.is_empty() {
        out.push(String::new());
        out.push(output::title("Agreements", color));
        for ag in &v.agreements {
            let mark = if ag.disputed { "[DISPUTED] " } else { "" };
            out.push(format!("  - {mark}{}", output::clean(&ag.text)));
        }
    }
    out.join("\n")
}

fn clean_block(text: &str) -> String {
    text.lines()
        .map(output::clean)
        .collect::<Vec<_>>()
        .join("\n")
}

fn next(a: NextArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let n = reviews.next(&a.topic)?;
    if ctx.json {
        output::json(&n);
        return Ok(ExitCode::Success);
    }
    if a.prompt {
        match &n.prompt {
            Some(p) => output::line(&clean_block(p)),
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
            out.push(clean_block(p));
        }
        None => out.push(format!("\nReview `{topic}` is {}.", n.status)),
    }
    out.join("\n")
}

fn step(
    a: StepArgs,
    ctx: &Ctx,
    ws: &coord::workspace::Workspace,
    reviews: &Reviews,
) -> anyhow::Result<ExitCode> {
    let actor = match &a.actor {
        Some(name) => AgentId::parse(name)?,
        None => ctx.agent().map_err(|_| {
            Error::bad_input(
                "say who finishes the step with `--as A` (or `--agent A`, `COORD_AGENT=A`)",
            )
        })?,
    };
    let next_agent = AgentId::parse(&a.next)
        .map_err(|e| Error::bad_input(format!("`--next` names exactly one next actor: {e}")))?;
    let output_target = ws.resolve(ctx.cwd(), &a.output)?;
    let input = a
        .input
        .as_deref()
        .map(|i| ws.resolve(ctx.cwd(), i))
        .transpose()?;
    let action = Action::parse(&a.action).ok_or_else(|| Error::bad_input("unknown action"))?;
    let status = StepStatus::parse(&a.status).ok_or_else(|| Error::bad_input("unknown status"))?;
    let next_action = a.next_action.as_deref().and_then(Action::parse);
    let done = reviews.step(&StepRequest {
        topic: &a.topic,
        actor: &actor,
        action,
        output: &output_target,
        input: input.as_ref(),
        summary: &a.summary,
        next: &next_agent,
        status,
        next_action,
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
    Ok(ExitCode::Success)
}

fn issue(a: IssueArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let issue = match a.op {
        IssueOp::Add { severity, title } => {
            let severity =
                Severity::parse(&severity).ok_or_else(|| Error::bad_input("unknown severity"))?;
            let issue = reviews.add_issue(&a.topic, severity, &title)?;
            if !ctx.json && !ctx.quiet {
                output::line(&issue.id);
            }
            issue
        }
        IssueOp::Set {
            id,
            status,
            resolution,
        } => {
            let status =
                IssueStatus::parse(&status).ok_or_else(|| Error::bad_input("unknown status"))?;
            let issue = reviews.set_issue(&a.topic, &id, status, resolution.as_deref())?;
            if !ctx.json && !ctx.quiet {
                output::line(&format!("{}: {}", issue.id, issue.status.as_str()));
            }
            issue
        }
    };
    if ctx.json {
        output::json(&issue);
    }
    Ok(ExitCode::Success)
}

fn agree(a: AgreeArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let added = reviews.agree(&a.topic, &a.text, a.adopted.as_deref(), a.disputed)?;
    if ctx.json {
        output::json(&added);
    } else if !ctx.quiet {
        let mark = if added.disputed { "[DISPUTED] " } else { "" };
        output::line(&format!("Logged: - {mark}{}", output::clean(&added.text)));
    }
    Ok(ExitCode::Success)
}

fn close(a: CloseArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
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

#[derive(Serialize)]
struct PathOut {
    path: String,
    abs: String,
}

fn path(a: PathArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    coord::review::check_topic(&a.topic)?;
    let llm = AgentId::parse(&a.llm)?;
    let to = a.to.as_deref().map(AgentId::parse).transpose()?;
    let kind = Kind::parse(&a.kind).ok_or_else(|| Error::bad_input("unknown kind"))?;
    // Defaults come from the tracker when there is one; without it the flags must say.
    let view = reviews.load(&a.topic).ok().map(|(t, _)| t.view().clone());
    let other = to.map(|t| t.id().to_string()).or_else(|| {
        view.as_ref().and_then(|v| {
            v.meta
                .participants
                .iter()
                .find(|p| !p.name.eq_ignore_ascii_case(llm.id()))
                .map(|p| p.name.to_ascii_lowercase())
        })
    });
    let open = view.as_ref().and_then(|v| v.open_step().cloned());
    let step = a.step.or(open.as_ref().map(|s| s.number));
    let action = a.action.clone().or_else(|| {
        open.as_ref()
            .and_then(|s| s.action)
            .map(|x| x.as_str().to_string())
    });
    let now = clock::now();
    let p = paths::conventional(
        reviews.meta(),
        &NameParts {
            kind,
            topic: &a.topic,
            llm: llm.id(),
            to: other.as_deref(),
            step,
            action: action.as_deref(),
            description: a.description.as_deref(),
        },
        &now,
    )?;
    let out = PathOut {
        path: reviews.rel(&p),
        abs: p.display().to_string(),
    };
    if ctx.json {
        output::json(&out);
    } else if !ctx.quiet {
        output::line(&out.path);
    }
    Ok(ExitCode::Success)
}
