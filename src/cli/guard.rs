//! `coord guard install | check`: git hooks that refuse commits and pushes touching held files.

use clap::{Args, Subcommand};

use coord::ExitCode;
use coord::clock;
use coord::guard;

use super::{Ctx, output};

/// Git hooks that refuse a commit or push touching a file another agent holds
///
/// `install` adds pre-commit and pre-push hooks (where core.hooksPath points, else .git/hooks;
/// an existing hook is kept and still runs); `uninstall` takes them out and puts such a hook back. `check --staged` is what pre-commit runs,
/// `check REV-RANGE` what pre-push runs: exit 4 when a path (a rename's old name too) is locked
/// LIVE by another agent, naming path and holder. COORD_GUARD=warn prints and exits 0;
/// COORD_GUARD=off skips the check.
///
///   coord guard install
///   coord guard check --staged
///   coord guard check origin/main..HEAD
///   coord guard uninstall
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct GuardArgs {
    #[command(subcommand)]
    command: GuardCommand,
}

#[derive(Debug, Subcommand)]
enum GuardCommand {
    /// Install the pre-commit and pre-push hooks in this repository
    ///
    /// Where core.hooksPath points, else .git/hooks; an existing hook is kept as NAME.chained
    /// and still runs after the check. Installing twice changes nothing.
    ///
    ///   coord guard install
    #[command(verbatim_doc_comment)]
    Install,
    /// Remove the pre-commit and pre-push hooks `install` added
    ///
    /// A hook `install` kept as NAME.chained goes back to its own name, as it was; a hook
    /// coord did not write is left alone.
    ///
    ///   coord guard uninstall
    #[command(verbatim_doc_comment)]
    Uninstall,
    /// Check the staged paths or the commits of a range for files other agents hold
    ///
    /// Exit 4 when a path (a rename's old name too) is locked LIVE by another agent, naming
    /// path and holder; a range (a push) also when another clone's agent claims it through
    /// the remote (`coord remote enable`), read first. COORD_GUARD=warn prints and exits 0; COORD_GUARD=off skips the check.
    ///
    ///   coord guard check --staged               # what the pre-commit hook runs
    ///   coord guard check origin/main..HEAD      # what the pre-push hook runs
    #[command(verbatim_doc_comment)]
    Check {
        /// Check the staged paths (what the pre-commit hook runs)
        #[arg(long, conflicts_with = "revs")]
        staged: bool,
        /// The commits to check, as `git log` takes them (`A..B`, or `SHA --not --remotes=origin`)
        #[arg(
            value_name = "REV-RANGE",
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required_unless_present = "staged"
        )]
        revs: Vec<String>,
    },
}

pub fn run(args: GuardArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let dir = ctx.dir.clone().unwrap_or_else(|| ctx.cwd().to_path_buf());
    match args.command {
        GuardCommand::Install => {
            let exe = std::env::current_exe().unwrap_or_else(|_| "coord".into());
            let done = guard::install(&dir, &exe)?;
            ctx.emit_lines(&serde_json::json!({ "hooks": done }), || {
                let mut lines = Vec::new();
                for h in &done {
                    let hook = &h.hook;
                    lines.push(format!("{hook} {}: {}", h.outcome, h.path));
                    if let Some(c) = &h.chained {
                        let line = format!("  the earlier {hook} hook runs after the check: {c}");
                        lines.push(line);
                    }
                }
                lines
            });
        }
        GuardCommand::Uninstall => {
            let done = guard::uninstall_in(&guard::hooks_dir(&dir)?, false)?;
            ctx.emit_lines(&serde_json::json!({ "hooks": done }), || {
                let line = |h: &guard::Uninstalled| {
                    let what = match h.outcome {
                        "restored" => "removed; the earlier hook is back in its place",
                        "not coord's" => "not coord's, left alone",
                        other => other,
                    };
                    format!("{} {what}: {}", h.hook, h.path)
                };
                done.iter().map(line).collect()
            });
        }
        GuardCommand::Check { staged, revs } => return check(staged, &revs, ctx),
    }
    Ok(ExitCode::Success)
}

fn check(staged: bool, revs: &[String], ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mode = std::env::var("COORD_GUARD").unwrap_or_default();
    if mode.eq_ignore_ascii_case("off") {
        if !ctx.quiet {
            output::diag("note: COORD_GUARD=off: not checked");
        }
        return Ok(ExitCode::Success);
    }
    let ws = ctx.workspace(None)?;
    let me = ctx.agent_opt()?;
    let top = guard::toplevel(ctx.cwd())?;
    let paths = if staged {
        guard::staged(ctx.cwd())?
    } else {
        guard::changed(ctx.cwd(), revs)?
    };
    if !staged && coord::remote::config(&ws).is_some() {
        // A push honours the other clones' claims as the remote holds them now; when it cannot
        // be read, as last read.
        if let Err(e) =
            coord::remote::sync_within(&ws, &coord::lock::working_on(&ws), guard::REMOTE_BUDGET)
        {
            let age = coord::remote::synced_age(&ws)
                .map(|a| format!("read {} ago", clock::format_age(a)))
                .unwrap_or_else(|| "never read".into());
            output::diag(&format!(
                "warning: {e}; judging the push by the remote's claims as last read ({age})"
            ));
        }
    }
    let warn = mode.eq_ignore_ascii_case("warn");
    let held = match guard::held(&ws, &top, &paths, me.as_ref(), !staged) {
        Ok(held) => held,
        Err(e) if warn => {
            output::diag(&format!("warning: {e}"));
            return Ok(ExitCode::Success);
        }
        Err(e) => return Err(e.into()),
    };
    let doc = serde_json::json!({ "checked": paths.len(), "held": held });
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if held.is_empty() {
        let (n, s) = (paths.len(), plural(paths.len()));
        ctx.emit(&doc, || {
            format!("coord guard: {n} path{s} checked, none held by another agent")
        });
        return Ok(ExitCode::Success);
    }
    if ctx.json {
        output::json(&doc);
    }
    let now = clock::now();
    let what = if staged { "commit" } else { "push" };
    let (n, s) = (held.len(), plural(held.len()));
    let mut lines = vec![format!("{what} touches {n} file{s} another agent holds:")];
    let line = |h: &guard::Held| output::clean(&format!("  {}: {}", h.file, h.locked_by(&now)));
    lines.extend(held.iter().map(line));
    if warn {
        output::diag(&format!("warning: {}", lines.join("\n")));
        return Ok(ExitCode::Success);
    }
    // With `--json` the document above says it all (one stream per mode).
    if ctx.json {
        return Ok(ExitCode::CheckFailed);
    }
    // The agent's own locks never count (an agent client's session is found from the process
    // tree): what is left is another agent's, and the way through is that agent's unlock.
    let hint = match &me {
        Some(me) => format!(
            "these are not locks of {} (the agent committing): wait until they are released (`coord status`), or ask them with `coord msg send HOLDER ...`",
            me.id()
        ),
        None => "wait until they are released (`coord status`); if you hold them yourself, commit as that agent: `COORD_AGENT=NAME git commit ...`".to_string(),
    };
    output::error_line(&lines.join("\n"), Some(&hint));
    Ok(ExitCode::CheckFailed)
}
