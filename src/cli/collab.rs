//! `coord collab write|read`: the shared collaboration file of seed 000
//! (`collaboration_file.txt`, one JSON entry per line).

use clap::{Args, Subcommand};
use serde::Serialize;

use coord::ExitCode;
use coord::collab::{self, Batch, Entry, Problem};
use coord::layout;
use coord::workspace::{Target, Workspace};

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

/// `collab read --json`.
#[derive(Debug, Serialize)]
struct ReadJson<'a> {
    /// The entries, in file order.
    entries: &'a [Entry],
    /// Lines that were skipped, with why.
    skipped: &'a [Problem],
}

/// `collab write --json`.
#[derive(Debug, Serialize)]
struct WriteJson<'a> {
    file: &'a str,
    entry: &'a Entry,
}

pub fn run(args: CollabArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    match args.command {
        CollabCommand::Write { text, file } => {
            let target = target(&ws, ctx, file.as_deref())?;
            let agent = ctx.agent()?;
            let text = msg::text_or_stdin(&text)?;
            let entry = collab::write(&target, &agent, &text)?;
            if ctx.json {
                output::json(&WriteJson {
                    file: &target.rel,
                    entry: &entry,
                });
            } else if !ctx.quiet {
                output::line(&format!("Appended to {}", target.rel));
            }
        }
        CollabCommand::Read { file, follow } => {
            let target = target(&ws, ctx, file.as_deref())?;
            if follow {
                stop_on_signals();
                collab::follow(&target.abs, &mut |batch| {
                    print_batch(&target, &batch, ctx, true);
                    true
                })?;
                return Ok(ExitCode::Success);
            }
            if std::fs::symlink_metadata(&target.abs).is_err() {
                output::diag(&format!(
                    "note: `{}` does not exist yet; write the first entry with `coord collab write \"…\"`",
                    target.rel
                ));
                print_batch(&target, &Batch::default(), ctx, false);
                return Ok(ExitCode::Success);
            }
            let batch = collab::read_all(&target.abs)?;
            print_batch(&target, &batch, ctx, false);
        }
    }
    Ok(ExitCode::Success)
}

fn target(ws: &Workspace, ctx: &Ctx, file: Option<&str>) -> Result<Target, coord::Error> {
    match file {
        Some(f) => ctx.one_file(ws, f, "collab"),
        None => ws.target_from_rel(layout::COLLAB_FILE),
    }
}

fn print_batch(target: &Target, batch: &Batch, ctx: &Ctx, following: bool) {
    if batch.restarted {
        output::diag(&format!(
            "warning: {} became shorter; reading it again from the start",
            target.rel
        ));
    }
    for p in &batch.problems {
        output::diag(&format!(
            "warning: {}:{}: {}, skipped",
            target.rel,
            p.line,
            output::clean(&p.why)
        ));
    }
    if ctx.json && following {
        for e in &batch.entries {
            match output::json_text(e, false) {
                Ok(text) => output::line(&text),
                Err(e) => output::diag(&format!("error: cannot render JSON: {e}")),
            }
        }
        return;
    }
    if ctx.json {
        output::json(&ReadJson {
            entries: &batch.entries,
            skipped: &batch.problems,
        });
        return;
    }
    if ctx.quiet {
        return;
    }
    for e in &batch.entries {
        output::line(&format!(
            "LLM ID: {}, Response: {}",
            output::clean_block(&e.llm_id),
            output::clean_block(&e.response)
        ));
    }
}

/// `--follow` ends on Ctrl-C or SIGTERM with exit 0: every line printed so far is complete.
fn stop_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                std::process::exit(0);
            }
        });
    }
}
