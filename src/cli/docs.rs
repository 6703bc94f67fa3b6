//! `coord docs [PAGE]`: the user documentation, carried in the binary, so that an installed
//! `coord` (`cargo install`, no source tree at hand) can show every page its messages point to.

use clap::Args;

use coord::{Error, ExitCode};

use super::{Ctx, output};

/// Each page: its name, what it covers, its text (docs/NAME.md, as in the source tree).
const PAGES: &[(&str, &str, &str)] = &[
    (
        "agents",
        "Claude Code, Codex, Gemini and Copilot CLI: hooks, `coord init`, the git guard",
        include_str!("../../docs/agents.md"),
    ),
    (
        "locking",
        "presence and locks, and what coord guarantees",
        include_str!("../../docs/locking.md"),
    ),
    (
        "sessions",
        "clocking in and out, `coord session`, the handshake",
        include_str!("../../docs/sessions.md"),
    ),
    (
        "messages",
        "messages, notes and the shared log",
        include_str!("../../docs/messages.md"),
    ),
    (
        "editing",
        "`write`, `run`, `restore`: fenced, durable edits",
        include_str!("../../docs/editing.md"),
    ),
    (
        "dialogue",
        "a turn-based dialogue between agents",
        include_str!("../../docs/dialogue.md"),
    ),
    (
        "review",
        "a review between two agents, step by step",
        include_str!("../../docs/review.md"),
    ),
    (
        "mcp",
        "`coord mcp`, the MCP server",
        include_str!("../../docs/mcp.md"),
    ),
    (
        "watch",
        "`coord watch`, the live view and its JSON feed",
        include_str!("../../docs/watch.md"),
    ),
    (
        "worktrees",
        "agents in several git worktrees of one repository",
        include_str!("../../docs/worktrees.md"),
    ),
    (
        "remote",
        "clones on other machines: claims through the repository's remote",
        include_str!("../../docs/remote.md"),
    ),
    (
        "protocol",
        "every file format, JSON document and exit code",
        include_str!("../../docs/protocol.md"),
    ),
    (
        "reliability",
        "what coord guarantees under crashes, hostile files and load",
        include_str!("../../docs/reliability.md"),
    ),
    (
        "history",
        "the history of events: `coord log`, its timeline and its JSON",
        include_str!("../../docs/history.md"),
    ),
    (
        "performance",
        "benchmark figures and how to reproduce them",
        include_str!("../../docs/performance.md"),
    ),
    (
        "architecture",
        "for changing coord: the rooms of the source and the path of a request",
        include_str!("../../docs/architecture.md"),
    ),
];

/// Show a page of coord's documentation (the list of pages without PAGE)
///
///   coord docs                  # the pages
///   coord docs agents           # set up Claude Code, Codex, Gemini or Copilot CLI
///   coord docs protocol | less
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DocsArgs {
    /// The page (`agents`, `locking`, `protocol`, ...)
    #[arg(value_name = "PAGE")]
    page: Option<String>,
}

pub fn run(args: DocsArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let Some(page) = args.page else {
        if ctx.json {
            let pages: Vec<_> = PAGES
                .iter()
                .map(|(name, about, _)| serde_json::json!({"page": name, "about": about}))
                .collect();
            output::json(&serde_json::json!({ "pages": pages }));
        } else {
            let width = PAGES.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
            for (name, about, _) in PAGES {
                output::line(&format!("  {name:width$}  {about}"));
            }
            output::line(
                "\nShow one with `coord docs PAGE` (they are the docs/ folder of coord's source).",
            );
        }
        return Ok(ExitCode::Success);
    };
    let name = page.trim_end_matches(".md").to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or_default();
    match PAGES.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, text)) => {
            output::raw(text.as_bytes());
            Ok(ExitCode::Success)
        }
        None => Err(Error::bad_input(format!(
            "there is no docs page `{page}`; the pages are {}",
            PAGES
                .iter()
                .map(|(n, _, _)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into()),
    }
}
