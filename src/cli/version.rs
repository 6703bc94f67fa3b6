//! `coord version`: the version of this binary, as `coord --version` prints it.

use clap::Args;

use coord::ExitCode;

use super::{Ctx, output};

/// Print coord's version
///
///   coord version
///   coord version --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct VersionArgs {}

pub fn run(_args: VersionArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let version = env!("CARGO_PKG_VERSION");
    if ctx.json {
        output::json(&serde_json::json!({ "version": version }));
    } else {
        // Asked for, so printed even with `-q`, like `coord --version`.
        output::line(&format!("coord {version}"));
    }
    Ok(ExitCode::Success)
}
