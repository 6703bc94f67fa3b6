//! `coord note FILE TEXT`: append `[HH:MM] [Agent] TEXT` to FILE under its lock.

use clap::Args;

use coord::ExitCode;
use coord::note;

use super::progress::WaitProgress;
use super::{Ctx, WaitArgs, msg, output};

/// Append `[HH:MM] [Agent] TEXT` to a shared file, under its lock
///
/// Takes FILE's lock (waiting like `coord lock`, 2 minutes by default), appends the line and
/// releases the lock; if you already hold the lock, the line is appended and you keep it.
///
///   coord -a claude note SHARED.txt "Section 2 rewritten, please check the numbers"
///   coord -a claude note PROTOKOL.md - < summary.txt
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct NoteArgs {
    /// The file to append to (created when missing)
    #[arg(value_name = "FILE")]
    file: String,
    /// The note, folded onto one line (`-` reads it from stdin)
    #[arg(value_name = "TEXT")]
    text: String,
    #[command(flatten)]
    wait: WaitArgs,
}

pub fn run(args: NoteArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let agent = ctx.agent()?;
    let target = ws.one_file(ctx.cwd(), &args.file, "note")?;
    let wait = args.wait.wait()?;
    let text = msg::text_or_stdin(&args.text)?;
    let noted = WaitProgress::during(wait, ctx.quiet, |on| {
        note::note(&ws, &agent, &target, &text, wait, on)
    })?;
    ctx.emit(&noted, || noted_line(&noted));
    Ok(ExitCode::Success)
}

/// `Noted in FILE: LINE`.
pub fn noted_line(noted: &note::Noted) -> String {
    format!("Noted in {}: {}", noted.file, output::clean(&noted.line))
}
