//! `coord init`: wire a folder for agent clients.

use anyhow::Context;
use clap::Args;
use clap::builder::TypedValueParser;

use coord::ExitCode;
use coord::client::HooksRun;
use coord::hook::Client;
use coord::init;
use coord::workspace::Workspace;

use super::{Ctx, output};

/// Wire this folder for agent clients: hooks, MCP server, instructions for agents
///
/// Creates `.coord/`; registers `coord hook CLIENT` and the `coord mcp` server with each client
/// (Claude Code: .claude/settings.json, .mcp.json; Codex CLI: .codex/hooks.json,
/// .codex/config.toml; Gemini CLI: .gemini/settings.json; Copilot CLI: .github/hooks/coord.json,
/// .mcp.json; Qwen Code: .qwen/settings.json; OpenCode: the plugin .opencode/plugin/coord.js,
/// opencode.json; Cline CLI: the plugin .cline/plugins/coord.js); prints, per client, whether it runs these hooks here or the step that makes it
/// (the client's own folder trust);
/// writes an instructions block in AGENTS.md (and CLAUDE.md, GEMINI.md, QWEN.md) between
/// `<!-- coord:begin -->` and `<!-- coord:end -->`, and coord's state files into .gitignore.
/// Existing files are merged, never clobbered; running it twice changes nothing.
///
///   coord init                       # every client
///   coord init --client claude --dry-run
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InitArgs {
    /// The clients to wire (repeat or separate with commas; default: all)
    #[arg(long, value_parser = client_choice(), value_delimiter = ',', value_name = "CLIENT")]
    client: Vec<Option<Client>>,
    /// Print what would change and write nothing
    #[arg(long)]
    dry_run: bool,
}

/// A client's name, or `all` (`None`).
pub(super) fn client_choice() -> impl clap::builder::TypedValueParser<Value = Option<Client>> {
    let mut names = Client::names();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names).map(|name| Client::parse(&name))
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
    let all = args.client.is_empty() || args.client.contains(&None);
    let clients: Vec<Client> = Client::ALL
        .iter()
        .copied()
        .filter(|c| all || args.client.contains(&Some(*c)))
        .collect();
    let plan = init::plan(&ws, &clients)?;
    if !args.dry_run {
        init::apply(&ws, &plan)?;
    }
    let trust: Vec<ClientTrust> = clients
        .iter()
        .map(|c| ClientTrust::of(*c, ws.root()))
        .collect();
    if ctx.json {
        output::json(&serde_json::json!({
            "dry_run": args.dry_run,
            "plan": plan,
            "trust": trust,
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
            "Wired for {}. Check with `coord status`; `coord docs agents` shows each client's setup.",
            plan.clients.join(", ")
        ));
    }
    for t in &trust {
        output::line(&t.line());
    }
    Ok(ExitCode::Success)
}

/// Whether a client runs this folder's hooks, and the step that makes it (for `init` and
/// `doctor`).
#[derive(Debug, serde::Serialize)]
pub(super) struct ClientTrust {
    client: &'static str,
    product: &'static str,
    hooks_run: HooksRun,
    why: String,
    step: String,
    /// Whether git hooks run for commits made through the client's shell tool.
    shell_git_hooks: bool,
    shell_git_hooks_why: &'static str,
}

impl ClientTrust {
    pub(super) fn of(client: Client, root: &std::path::Path) -> ClientTrust {
        let a = client.adapter();
        let t = a.trust(root);
        let (shell_git_hooks, shell_git_hooks_why) = a.shell_git_hooks();
        ClientTrust {
            shell_git_hooks,
            shell_git_hooks_why,
            client: a.name(),
            product: a.product(),
            hooks_run: t.hooks_run,
            why: t.why,
            step: a.trust_step(root),
        }
    }

    /// Whether git hooks run for the client's shell commits, in one line.
    pub(super) fn git_line(&self) -> String {
        format!(
            "{}: git hooks for commits through its shell: {} ({})",
            self.product,
            if self.shell_git_hooks { "yes" } else { "no" },
            self.shell_git_hooks_why
        )
    }

    /// One line: the client runs the hooks (and why), or the step that makes it.
    pub(super) fn line(&self) -> String {
        match self.hooks_run {
            HooksRun::Yes => format!("{}: runs these hooks ({})", self.product, self.why),
            _ => format!(
                "{}: runs these hooks only in a folder it trusts ({}): {}",
                self.product, self.why, self.step
            ),
        }
    }
}
