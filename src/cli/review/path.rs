//! `coord review path`: the conventional name of an output file.

use clap::Args;
use clap::builder::PossibleValuesParser;
use serde::Serialize;

use coord::clock;
use coord::review::Action;
use coord::review::paths::{self, Kind, NameParts};
use coord::review::rules::Reviews;
use coord::workspace::AgentId;
use coord::{Error, ExitCode};

use crate::cli::Ctx;
use crate::cli::output::{self};

/// Print the conventional path of a review, response or changelog file for today
///
///   coord review path api --kind review --llm claude
///   coord review path api --kind response --llm codex --to claude
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct PathArgs {
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

#[derive(Serialize)]
struct PathOut {
    path: String,
    abs: String,
}

pub(super) fn path(a: PathArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
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
