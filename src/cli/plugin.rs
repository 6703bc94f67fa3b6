//! `coord plugin write`: coord as a plugin of each agent client, installed once per user.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use coord::ExitCode;
use coord::client::Client;
use coord::plugin;

use super::init::client_choice;
use super::{Ctx, output};

/// Write coord as a plugin for agent clients, installed once for every repository
///
/// For each client, a folder DIR/<client>/ in the client's own format, bundling coord's hooks
/// (every event `coord init` wires), the `coord mcp` server and the instructions for the
/// agent, all calling this `coord` binary by its absolute path (with `--plugin`). Install it
/// with the client's own commands (printed); keep the folder (Copilot CLI and OpenCode load it
/// from there).
///
/// With the plugin, a repository needs no `coord init`. In a repository nobody set up, coord's
/// state stays out of `git status` (`.coord/.gitignore`, and coord's file patterns in the
/// repository's `.git/info/exclude`). `git config coord.enabled false` turns the plugin off
/// for one repository; a repository wired with `coord init` runs its own hooks instead.
///
///   coord plugin write ~/.local/share/coord/plugins
///   coord plugin write --client gemini ./plugins && gemini extensions install ./plugins/gemini
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PluginArgs {
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Write each client's plugin into DIR/<client>/
    ///
    /// Each folder is in the client's own format and installs with the client's own commands,
    /// which are printed (with --json: `install` and `uninstall` of each plugin).
    ///
    ///   coord plugin write ~/.local/share/coord/plugins
    ///   coord plugin write --client claude,codex ./plugins --json
    #[command(verbatim_doc_comment)]
    Write {
        /// The clients (repeat or separate with commas; default: all)
        #[arg(long, value_parser = client_choice(), value_delimiter = ',', value_name = "CLIENT")]
        client: Vec<Option<Client>>,
        /// The folder to write into (created when missing)
        #[arg(value_name = "DIR")]
        folder: PathBuf,
    },
}

pub fn run(args: PluginArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let PluginCommand::Write { client, folder } = args.command;
    let (all, clients) = super::init::chosen(&client);
    let coord = plugin::current_binary()?;
    if !all && let Some(c) = clients.iter().find(|c| !c.adapter().has_plugin()) {
        let (product, name) = (c.adapter().product, c.as_str());
        let why = format!(
            "coord writes no plugin for {product}; wire it in each repository with `coord init --client {name}`"
        );
        return Err(coord::Error::bad_input(why).into());
    }
    let dir = ctx.cwd().join(&folder);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        let why = "it exists and is not a folder";
        return Err(coord::Error::bad_path(dir.display().to_string(), why).into());
    }
    coord::fsutil::ensure_dir(&dir)?;
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let written = plugin::write(&dir, &clients, &coord)?;
    let doc = serde_json::json!({
        "dir": dir.display().to_string(),
        "coord": coord,
        "plugins": written,
    });
    if ctx.json_or_quiet(&doc) {
        return Ok(ExitCode::Success);
    }
    for w in &written {
        output::line(&format!("Wrote {}/ ({})", w.dir, w.product));
        output::line(&format!("  install:   {}", w.install.join(" && ")));
        output::line(&format!("  uninstall: {}", w.uninstall.join(" && ")));
    }
    let switch = plugin::SWITCH;
    output::line(&format!(
        "The plugins run {coord}; write them again after moving it. Turn coord off in one repository with `git config {switch} false`."
    ));
    Ok(ExitCode::Success)
}
