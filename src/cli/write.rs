//! `coord write FILE [--from SRC]`: replace FILE's content under its lock (fenced commit).

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use clap::Args;

use coord::ExitCode;
use coord::edit::write;
use coord::error::IoResultExt;

use super::{Ctx, output};

/// Replace a file's content, only while you hold its lock
///
/// Reads the new content from stdin (or --from SRC), then, if you still hold FILE's lock,
/// writes FILE.bak and replaces FILE atomically and durably (temporary file, fsync, rename).
/// If you do not hold the lock, or it was taken over while you wrote, FILE is left alone and
/// your content is kept in FILE.rejected.<agent> (exit 3).
///
///   coord -a claude lock SHARED.txt
///   generate-notes | coord -a claude write SHARED.txt
///   coord -a claude unlock SHARED.txt
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WriteArgs {
    /// The file to replace (relative to the current directory, inside the workspace)
    #[arg(value_name = "FILE")]
    file: String,
    /// Read the new content from SRC instead of stdin (`-` is stdin)
    #[arg(long, value_name = "SRC")]
    from: Option<PathBuf>,
}

pub fn run(args: WriteArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let agent = ctx.agent()?;
    let target = ws.one_file(ctx.cwd(), &args.file, "write")?;
    let (mut input, name): (Box<dyn Read>, PathBuf) =
        match args.from.filter(|p| p.as_os_str() != "-") {
            Some(src) => {
                let file = std::fs::File::open(ctx.cwd().join(&src)).at("read", &src)?;
                (Box::new(file), src)
            }
            None => {
                let stdin = std::io::stdin();
                if stdin.is_terminal() && !ctx.quiet {
                    output::diag(&format!(
                        "reading the new content of `{}` from stdin (end with Ctrl-D)",
                        target.rel
                    ));
                }
                (Box::new(stdin.lock()), PathBuf::from("stdin"))
            }
        };
    if let Some(w) = coord::remote::editing_warning(&ws, &[target.rel.as_str()]) {
        output::diag(&format!("warning: {w}"));
    }
    let written = write::write(&ws, &agent, &target, &mut input, &name)?;
    super::remote::start_sync_if_working_on_changed(&ws);
    ctx.emit(&written, || written_line(&written));
    Ok(ExitCode::Success)
}

/// `Written: FILE (N bytes, backup FILE.bak)`.
pub fn written_line(w: &write::Written) -> String {
    let backup = (w.backup.as_deref().map(|b| format!(", backup {b}"))).unwrap_or_default();
    format!("Written: {} ({} bytes{backup})", w.file, w.bytes)
}
