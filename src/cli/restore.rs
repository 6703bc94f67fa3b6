//! `coord restore FILE`: put FILE.bak back under FILE's lock (a swap, so it can be undone).

use clap::Args;

use coord::ExitCode;
use coord::edit::restore;

use super::progress::WaitProgress;
use super::{Ctx, WaitArgs};

/// Put FILE.bak back (the current content becomes the new FILE.bak)
///
/// Works under FILE's lock: if you hold it, you keep it; otherwise restore takes it for the
/// swap and releases it after (waiting up to --wait while someone else holds it). Because it
/// swaps, running it twice gives the original back. No FILE.bak: exit 1, nothing changes.
///
/// Older backups are kept too (the newest 8 under .coord/backups/): --list shows every
/// generation (1 is FILE.bak, 2 the backup it replaced, ...), --from N puts generation N
/// back (the current content becomes FILE.bak; nothing is dropped).
///
///   coord -a claude restore SHARED.txt     # undo the last change
///   coord -a claude restore SHARED.txt     # ... and redo it
///   coord restore SHARED.txt --list        # every backup generation
///   coord -a claude restore SHARED.txt --from 3
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RestoreArgs {
    /// The file to restore from FILE.bak
    #[arg(value_name = "FILE")]
    file: String,
    /// List the backup generations of FILE (newest first) and change nothing
    #[arg(long, conflicts_with = "from")]
    list: bool,
    /// Restore generation N (1 is FILE.bak; see --list)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    from: Option<u64>,
    #[command(flatten)]
    wait: WaitArgs,
}

pub fn run(args: RestoreArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let target = ws.one_file(ctx.cwd(), &args.file, "restore")?;
    if args.list {
        target.regular_or_absent()?;
        let all = coord::lock::backup::generations(ws.root(), &target)?;
        let doc = serde_json::json!({ "file": target.rel, "generations": all });
        ctx.emit_lines(&doc, || {
            if all.is_empty() {
                return vec![format!("No backups of {}", target.rel)];
            }
            let line = |g: &coord::lock::backup::Generation| {
                let (n, at, bytes, path) = (g.n, &g.saved_at, g.bytes, &g.path);
                format!("{n:>3}  {at}  {bytes:>10} bytes  {path}")
            };
            all.iter().map(line).collect()
        });
        return Ok(ExitCode::Success);
    }
    let agent = ctx.agent()?;
    let wait = args.wait.wait()?;
    let generation = usize::try_from(args.from.unwrap_or(1)).unwrap_or(usize::MAX);
    let restored = WaitProgress::during(wait, ctx.quiet, |on| {
        restore::restore(&ws, &agent, &target, generation, wait, on)
    })?;
    ctx.emit(&restored, || {
        let (file, backup) = (&restored.file, &restored.backup);
        let note = format!(" ({backup} now holds the content it replaced)");
        let note = if restored.swapped { note.as_str() } else { "" };
        format!("Restored: {file} from {backup}{note}")
    });
    Ok(ExitCode::Success)
}
