//! `coord who FILE...`: who holds these files, in one line each.

use clap::Args;

use coord::ExitCode;
use coord::clock;
use coord::lock::since_text;
use coord::status;

use super::{Ctx, output};

/// Say who holds each FILE's lock (holder, since when, working on what, LIVE or STALE)
///
/// Exit 0 whether or not the files are locked; `--json` gives the locks as `status --json`
/// shows them, plus the holder's task. For a folder (`dir/`) or a pattern: the locks on the
/// files it matches and the claims it overlaps.
///
///   coord who SHARED.txt
///   coord who src/lib.rs src/main.rs --json
///   coord who 'src/auth/**'
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WhoArgs {
    /// Files, folders (`dir/`) or patterns to ask about (relative to the current directory, inside the workspace)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
}

pub fn run(args: WhoArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(None)?;
    let asked: Vec<_> =
        (args.files.iter().map(|f| ws.file_arg(ctx.cwd(), f))).collect::<Result<_, _>>()?;
    let (files, claims_unread) = status::who(&ws, &asked);
    // Its claims still hold: a file they match is not free for all that is shown.
    if let Some(coord::presence::Unreadable { path, why }) = claims_unread {
        output::diag(&format!(
            "warning: cannot read `{path}`: {why}; the claims in it still hold and are not shown"
        ));
    }
    if ctx.json_or_quiet(&serde_json::json!({ "files": files })) {
        return Ok(ExitCode::Success);
    }
    let now = clock::now();
    for f in &files {
        if f.locks.is_empty() && f.claims.is_empty() {
            output::line(&format!("{}: not locked", f.file));
        }
        for c in &f.claims {
            let reason = c.reason.as_deref().map(output::clean);
            let reason = (reason.map(|r| format!(" (reason: {r})"))).unwrap_or_default();
            let (name, pattern) = (output::clean(&c.name), output::clean(&c.pattern));
            let (ago, state) = (output::ago(c.age_s), c.state.as_str());
            let file = &f.file;
            output::line(&format!(
                "{file}: claimed by {name} with `{pattern}` since {ago}{reason} [{state}]"
            ));
        }
        for h in &f.locks {
            let l = &h.lock;
            // `13:02 (3m ago)`, as `status` and the refusals say it; the full time is in `--json`.
            let since = since_text(l.locked_at.as_deref(), &now);
            let ago = output::ago(l.age_s);
            let working = coord::lock::working_text(h.working_on.as_deref(), l.reason.as_deref());
            let working = output::working_on(working.as_deref());
            let process = l.pid.map(|p| format!(", process {p}")).unwrap_or_default();
            // The file itself, also when a pattern was asked about.
            let (file, name, state) = (&l.file, output::clean(&l.name), l.state.as_str());
            output::line(&format!(
                "{file}: held by {name} since {since} ({ago}){working} [{state}{process}]"
            ));
        }
    }
    Ok(ExitCode::Success)
}
