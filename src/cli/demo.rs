//! `coord demo`: the scripted session of [`coord::demo`] in a fresh folder, narrated on stdout,
//! ending in `coord status`.

use std::process::Command;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;

use coord::{Error, ExitCode};

use super::{Ctx, output};

/// Run a live multi-agent session in a fresh folder, ending in `coord status`
///
/// Each agent is a real `coord` process: two agent clients' hooks collide on one file (one is
/// denied with the reason its agent reads, then allowed), agents in a shell wait their turn,
/// agree on the rules, talk, hold a short dialogue and one review step; `coord status` ends it.
/// The folder is a new temporary folder unless `--dir` names an empty or new one.
///
///   coord demo
///   coord demo --agents 5 --dir /tmp/coord-demo
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DemoArgs {
    /// How many agents take part (2-8)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=8))]
    agents: u8,
}

pub fn run(args: DemoArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let dir = match &ctx.dir {
        // `-C DIR`: made before the command ran (see `cli::execute`), and resolved.
        Some(d) => {
            let busy = coord::fsutil::read_dir(d)
                .with_context(|| format!("cannot read {}", d.display()))?
                .next()
                .is_some();
            if busy {
                return Err(Error::BadPath {
                    path: d.display().to_string(),
                    why: "the demo needs an empty or new folder".into(),
                }
                .into());
            }
            d.clone()
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("coord-demo-")
                .tempdir()
                .context("cannot create a temporary folder")?;
            std::fs::canonicalize(t.keep())?
        }
    };
    let exe = std::env::current_exe().context("cannot find the coord binary")?;
    let out: coord::demo::Narrator = Arc::new(|line: &str| output::line(line));
    coord::demo::run(exe.clone(), dir.clone(), usize::from(args.agents), out)?;

    output::line("\n$ coord status");
    let status = Command::new(&exe)
        .args(["status"])
        .current_dir(&dir)
        .env("COORD_DIR", &dir)
        .env_remove("COORD_AGENT")
        .status()
        .context("cannot run coord status")?;
    if !status.success() {
        bail!("coord status failed in the demo folder");
    }
    output::line(&format!(
        "\nThe demo folder is {d} (nothing runs in it any more); remove it with: rm -rf {d}",
        d = dir.display()
    ));
    Ok(ExitCode::Success)
}
