//! `coord restore FILE`: put FILE.bak back under FILE's lock (a swap, so it can be undone).

use clap::Args;

use coord::ExitCode;
use coord::edit::restore;

use super::progress::WaitProgress;
use super::{Ctx, WaitArgs, output};

/// Put FILE.bak back (the current content becomes the new FILE.bak)
///
/// Works under FILE's lock: if you hold it, you keep it; otherwise restore takes it for the
/// swap and releases it after (waiting up to --wait while someone else holds it). Because it
/// swaps, running it twice gives the original back. No FILE.bak: exit 1, nothing changes.
///
///   coord -a claude restore SHARED.txt     # undo the last change
///   coord -a claude restore SHARED.txt     # ... and redo it
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RestoreArgs {
    /// The file to restore from FILE.bak
    #[arg(value_name = "FILE")]
    file: String,
    #[command(flatten)]
    wait: WaitArgs,
}

pub fn run(args: RestoreArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let agent = ctx.agent()?;
    let target = ws.resolve(ctx.cwd(), &args.file)?;
    let wait = args.wait.wait()?;
    let mut progress = WaitProgress::new(wait, ctx.quiet);
    let restored = restore::restore(&ws, &agent, &target, wait, &mut |event| {
        progress.on_event(event)
    });
    progress.finish();
    let restored = restored?;
    if ctx.json {
        output::json(&restored);
    } else if !ctx.quiet {
        let note = if restored.swapped {
            format!(" ({} now holds the content it replaced)", restored.backup)
        } else {
            String::new()
        };
        output::line(&format!(
            "Restored: {} from {}{note}",
            restored.file, restored.backup
        ));
    }
    Ok(ExitCode::Success)
}
