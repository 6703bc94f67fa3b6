//! `coord handshake [DIR] [--wait DUR]`: ask every other active agent, accept who asked you.

use std::path::PathBuf;

use clap::Args;

use coord::ExitCode;
use coord::clock::Wait;
use coord::handshake::{self, HandshakeStatus, Round};

use super::Ctx;
use super::output::{self, Cell};

/// Agree with every other active agent to follow the lock rules (a handshake)
///
/// Writes `.handshake_<you>`: a REQUESTED block for each other ACTIVE agent, and ACCEPTED for
/// each agent whose handshake file addresses you. A pair is established once both directions
/// exist and one says ACCEPTED. `--wait` keeps answering until every peer is established
/// (exit 3 when the wait ends first).
///
///   coord -a claude handshake
///   coord -a gemini handshake --wait 1m
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct HandshakeArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Wait until every peer has answered (`30s`, `5m`, `forever`)
    #[arg(long, value_name = "DUR")]
    wait: Option<String>,
}

pub fn run(args: HandshakeArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    let agent = ctx.agent()?;
    let wait = args.wait.as_deref().map(Wait::parse).transpose()?;
    let round = match wait {
        Some(w) => handshake::wait(&ws, &agent, w)?,
        None => handshake::step(&ws, &agent, &[])?,
    };
    ctx.emit(&round, || render(&round));
    Ok(ExitCode::Success)
}

fn render(round: &Round) -> String {
    if round.peers.is_empty() {
        return "No other active agents: nobody to hand-shake with".into();
    }
    let rows = round.peers.iter().map(|p| {
        let pair = if p.established {
            "ESTABLISHED"
        } else {
            "PENDING"
        };
        let theirs = p.theirs.map_or("-", HandshakeStatus::as_str);
        vec![
            Cell::plain(&p.peer),
            Cell::state(p.mine.as_str()),
            Cell::state(theirs),
            Cell::state(pair),
        ]
    });
    let headers = ["PEER", "YOU SENT", "THEY SENT", "PAIR"];
    let table = output::table(&headers, rows.collect(), output::color_enabled());
    let pending = round.pending().join(", ");
    let tail = match pending.is_empty() {
        true => "Protocol V3 active with every peer".to_string(),
        false => format!("Waiting for {pending} to answer (they run `coord handshake`)"),
    };
    format!("Handshake of {}:\n{table}\n{tail}", round.agent)
}
