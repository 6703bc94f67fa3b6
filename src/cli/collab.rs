//! `coord collab write|read`: the shared collaboration file of seed 000
//! (`collaboration_file.txt`, one JSON entry per line).

use clap::{Args, Subcommand};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use coord::ExitCode;
use coord::collab::{self, Batch};
use coord::layout;
use coord::workspace::Target;

use super::{Ctx, msg, output};

/// Write to and read the shared log (`collaboration_file.txt`)
///
/// Each entry is one JSON line `{"llm_id": …, "response": …, "time": …}`, readable by the
/// Python `CollaborativeFileCommunication` class the protocol text gives, and by coord.
///
///   coord -a claude collab write "I take the parser; gemini takes the tests"
///   coord collab read
///   coord collab read --follow
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CollabArgs {
    #[command(subcommand)]
    command: CollabCommand,
}

#[derive(Debug, Subcommand)]
enum CollabCommand {
    /// Append one entry (one JSON line) as this agent
    ///
    ///   coord -a claude collab write "Plan: I refactor lock.rs"
    ///   git diff --stat | coord -a claude collab write -
    #[command(verbatim_doc_comment)]
    Write {
        /// The response (`-` reads it from stdin)
        #[arg(value_name = "TEXT")]
        text: String,
        /// The collaboration file (default `collaboration_file.txt` in the workspace root)
        #[arg(long, value_name = "F")]
        file: Option<String>,
    },
    /// Print every entry as `LLM ID: X, Response: Y`; bad lines are reported and skipped
    ///
    ///   coord collab read
    ///   coord collab read --json | jq -r '.entries[].response'
    ///   coord collab read --follow
    #[command(verbatim_doc_comment)]
    Read {
        /// The collaboration file (default `collaboration_file.txt` in the workspace root)
        #[arg(long, value_name = "F")]
        file: Option<String>,
        /// Keep printing new entries as they are written (stop with Ctrl-C); with `--json`,
        /// one JSON entry per line
        #[arg(long)]
        follow: bool,
    },
}

pub fn run(args: CollabArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let (CollabCommand::Write { file, .. } | CollabCommand::Read { file, .. }) = &args.command;
    let target = match file {
        Some(f) => ws.one_file(ctx.cwd(), f, "collab")?,
        None => ws.target_from_rel(layout::COLLAB_FILE)?,
    };
    match args.command {
        CollabCommand::Write { text, .. } => {
            let agent = ctx.agent()?;
            let entry = collab::write(&target, &agent, &msg::text_or_stdin(&text)?)?;
            let doc = serde_json::json!({ "file": target.rel, "entry": entry });
            ctx.emit(&doc, || format!("Appended to {}", target.rel));
        }
        CollabCommand::Read { follow: true, .. } => {
            // Ctrl-C or SIGTERM ends it with exit 0: every line printed so far is complete.
            let _ = super::exit_on_signals(&[SIGINT, SIGTERM, SIGHUP]);
            collab::follow(&target.abs, &mut |b| print_batch(&target, &b, ctx, true))?;
        }
        CollabCommand::Read { follow: false, .. } => {
            let batch = if std::fs::symlink_metadata(&target.abs).is_err() {
                let file = &target.rel;
                output::diag(&format!(
                    "note: `{file}` does not exist yet; write the first entry with `coord collab write \"…\"`"
                ));
                Batch::default()
            } else {
                collab::read_all(&target.abs)?
            };
            print_batch(&target, &batch, ctx, false);
        }
    }
    Ok(ExitCode::Success)
}

fn print_batch(target: &Target, batch: &Batch, ctx: &Ctx, following: bool) {
    let file = &target.rel;
    if batch.restarted {
        let why = format!("warning: {file} became shorter; reading it again from the start");
        output::diag(&why);
    }
    for p in &batch.problems {
        let why = output::clean(&p.why);
        output::diag(&format!("warning: {file}:{}: {why}, skipped", p.line));
    }
    if ctx.json && !following {
        output::json(&serde_json::json!({ "entries": batch.entries, "skipped": batch.problems }));
        return;
    }
    for e in &batch.entries {
        if ctx.json {
            match output::json_text(e) {
                Ok(text) => output::line(&text),
                Err(e) => output::diag(&format!("error: cannot render JSON: {e}")),
            }
        } else if !ctx.quiet {
            let id = output::clean_block(&e.llm_id);
            let response = output::clean_block(&e.response);
            output::line(&format!("LLM ID: {id}, Response: {response}"));
        }
    }
}
