//! `coord init`: wire a folder for agent clients.

use anyhow::Context;
use clap::{Args, ValueEnum};

use coord::ExitCode;
use coord::hook::Client;
use coord::init;
use coord::workspace::Workspace;

use super::{Ctx, output};

/// Wire this folder for agent clients: hooks, MCP server, instructions for agents
///
/// Creates `.coord/`; registers `coord hook CLIENT` and the `coord mcp` server with each client
/// (Claude Code: .claude/settings.json, .mcp.json; Codex CLI: .codex/hooks.json,
/// .codex/config.toml; Gemini CLI: .gemini/settings.json; Copilot CLI: .github/hooks/coord.json);
/// writes an instructions block in AGENTS.md (and CLAUDE.md, GEMINI.md) between
/// `<!-- coord:begin -->` and `<!-- coord:end -->`, and coord's state files into .gitignore.
/// Existing files are merged, never clobbered; running it twice changes nothing.
///
///   coord init                       # every client
///   coord init --client claude --dry-run
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InitArgs {
    /// The clients to wire (repeat or separate with commas; default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLIENT")]
    client: Vec<ClientChoice>,
    /// Print what would change and write nothing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ClientChoice {
    Claude,
    Codex,
    Gemini,
    Copilot,
    All,
}

pub fn run(args: InitArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    // `-C DIR init` wires DIR itself, even inside another workspace (that is how a nested
    // one is made on purpose); without a folder named, the workspace around here.
    let ws = match ctx.named_dir() {
        Some(dir) => Workspace::at(
            std::fs::canonicalize(ctx.cwd().join(dir))
                .with_context(|| format!("cannot resolve `{}`", dir.display()))?,
        ),
        None => ctx.workspace(None)?,
    };
    let mut clients: Vec<Client> = Vec::new();
    let all = args.client.is_empty() || args.client.contains(&ClientChoice::All);
    for c in Client::ALL {
        let chosen = all
            || args.client.iter().any(|a| {
                matches!(
                    (a, c),
                    (ClientChoice::Claude, Client::Claude)
                        | (ClientChoice::Codex, Client::Codex)
                        | (ClientChoice::Gemini, Client::Gemini)
                        | (ClientChoice::Copilot, Client::Copilot)
                )
            });
        if chosen {
            clients.push(c);
        }
    }
    let plan = init::plan(&ws, &clients)?;
    if !args.dry_run {
        init::apply(&ws, &plan)?;
    }
    if ctx.json {
        output::json(&serde_json::json!({
            "dry_run": args.dry_run,
            "plan": plan,
        }));
        return Ok(ExitCode::Success);
    }
    if ctx.quiet {
        return Ok(ExitCode::Success);
    }
    let verb = |action: &str| match (args.dry_run, action) {
        (true, "create") => "Would create",
        (true, _) => "Would update",
        (false, "create") => "Created",
        (false, _) => "Updated",
    };
    if plan.create_state_dir {
        output::line(&format!("{} .coord/", verb("create")));
    }
    for c in &plan.changes {
        output::line(&format!("{}: {}", verb(c.action), c.file));
        if args.dry_run {
            for l in String::from_utf8_lossy(&c.content).lines() {
                output::line(&format!("  | {l}"));
            }
        }
    }
    if plan.changes.is_empty() && !plan.create_state_dir {
        output::line("Nothing to change: coord is already wired here");
    } else if !args.dry_run {
        output::line(&format!(
            "Wired for {}. Check with `coord status`; see docs/agents.md for each client.",
            plan.clients.join(", ")
        ));
    }
    Ok(ExitCode::Success)
}
