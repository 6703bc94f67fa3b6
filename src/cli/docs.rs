//! `coord docs [PAGE]`: the user documentation, carried in the binary, so that an installed
//! `coord` (`cargo install`, no source tree at hand) can show every page its messages point to.

use clap::Args;

use coord::{Error, ExitCode};

use super::{Ctx, output};

/// Each page: its name, what it covers, its text (docs/NAME.md, as in the source tree).
macro_rules! pages {
    ($($name:literal: $about:literal,)*) => {
        &[$(($name, $about, include_str!(concat!("../../docs/", $name, ".md")))),*]
    };
}

const PAGES: &[(&str, &str, &str)] = pages! {
    "agents": "Claude Code, Codex, Gemini and Copilot CLI: hooks, `coord init`, the git guard",
    "locking": "presence and locks, and what coord guarantees",
    "sessions": "clocking in and out, `coord session`, the handshake",
    "messages": "messages, notes and the shared log",
    "editing": "`write`, `run`, `restore`: fenced, durable edits",
    "dialogue": "a turn-based dialogue between agents",
    "review": "a review between two agents, step by step",
    "mcp": "`coord mcp`, the MCP server",
    "watch": "`coord watch`, the live view and its JSON feed",
    "worktrees": "agents in several git worktrees of one repository",
    "remote": "clones on other machines: claims through the repository's remote",
    "protocol": "every file format, JSON document and exit code",
    "reliability": "what coord guarantees under crashes, hostile files and load",
    "history": "the history of events: `coord log`, its timeline and its JSON",
    "performance": "benchmark figures and how to reproduce them",
    "architecture": "for changing coord: the rooms of the source and the path of a request",
};

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
    let Some((_, _, text)) = PAGES.iter().find(|(n, _, _)| *n == name) else {
        let pages: Vec<String> = PAGES.iter().map(|(n, _, _)| format!("`{n}`")).collect();
        let pages = pages.join(", ");
        let why = format!("there is no docs page `{page}`; the pages are {pages}");
        return Err(Error::bad_input(why).into());
    };
    output::raw(text.as_bytes());
    Ok(ExitCode::Success)
}
