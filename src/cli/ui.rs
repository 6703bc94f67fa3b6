//! `coord ui [DIR] [--port N]`: the live page for the humans watching (contract §14).

use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use coord::status;
use coord::{Error, ExitCode};

use super::Ctx;
use super::output;

/// Serve a live page of the workspace in a browser, on 127.0.0.1
///
/// Prints the page's address (with a token: only that address opens it) and serves until
/// Ctrl-C: the agents (those waiting for their user first), locks and claims with their
/// holders, who waits for whom, a timeline of recent events, the dialogue's turn, open reviews
/// and the branches whose changes conflict, updated as they change. It only reads.
///
///   coord ui
///   coord ui --port 8765
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UiArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The port on 127.0.0.1 (0: a free one)
    #[arg(long, value_name = "N", default_value_t = 0)]
    port: u16,
}

pub fn run(args: UiArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let failed = |what: &str, e: std::io::Error| Error::failed(format!("{what}: {e}"));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, args.port))
        .map_err(|e| failed(&format!("cannot listen on 127.0.0.1:{}", args.port), e))?;
    let port = listener
        .local_addr()
        .map_err(|e| failed("cannot read the listening port", e))?
        .port();
    // SIGINT and SIGTERM end it with 0: it holds nothing that needs letting go.
    super::exit_on_signals(&[signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])?;
    let root = ws.root().to_path_buf();
    // The very document `coord status --json` prints.
    let server = Arc::new(coord::ui::Server::new(&root, port, move || {
        let doc = status::document(&ws, false);
        output::json_pretty(&doc).map_or_else(|_| "{}".into(), |t| t + "\n")
    }));
    output::line(&format!(
        "http://127.0.0.1:{port}/?token={}",
        server.token()
    ));
    if !ctx.quiet {
        output::diag("serving the page until Ctrl-C (read-only; only that address opens it)");
    }
    server.serve(&listener);
    Ok(ExitCode::Success)
}
