//! `coord review issue add|set`: the issue table.

use clap::builder::PossibleValuesParser;
use clap::{Args, Subcommand};

use coord::review::rules::Reviews;
use coord::review::{IssueStatus, Severity};
use coord::{Error, ExitCode};

use crate::cli::Ctx;
use crate::cli::output::{self};

/// Add or update a row of the Issues table
///
///   coord review issue api add --severity high --title "Pagination is undefined"
///   coord review issue api set ISSUE-01 --status resolved --resolution "cursor paging"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct IssueArgs {
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

pub(super) fn issue(a: IssueArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
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
