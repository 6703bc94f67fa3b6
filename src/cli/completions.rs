//! `coord completions SHELL` and `coord man [COMMAND]`: the command tree, rendered for shells
//! and for `man`.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use coord::{Error, ExitCode};

use super::{Cli, Ctx, output};

/// Print a shell completion script
///
///   coord completions bash > ~/.local/share/bash-completion/completions/coord
///   coord completions zsh > ~/.zfunc/_coord      # with fpath+=~/.zfunc before compinit
///   coord completions fish > ~/.config/fish/completions/coord.fish
///   coord completions elvish >> ~/.config/elvish/rc.elv
///   coord completions powershell >> $PROFILE
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum, value_name = "SHELL")]
    shell: Shell,
}

/// Print the manual page (roff), of coord or of one of its commands
///
///   coord man | man -l -
///   coord man > /usr/local/share/man/man1/coord.1
///   coord man lock | man -l -
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ManArgs {
    /// A command (and subcommand) whose page to print instead (`lock`, `msg send`)
    #[arg(value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn completions(args: CompletionsArgs, _ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "coord", &mut script);
    output::raw(&script);
    Ok(ExitCode::Success)
}

pub fn man(args: ManArgs, _ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut name = String::from("coord");
    for word in &args.command {
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            return Err(Error::bad_input(format!(
                "`{name}` has no command `{word}` (see `{name} --help`)"
            ))
            .into());
        };
        name = format!("{name} {word}");
        // Built, so its display name is the page's title: `coord-lock`.
        cmd = sub.version(env!("CARGO_PKG_VERSION"));
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(|e| Error::Failed {
            message: format!("cannot render the manual page: {e}"),
        })?;
    output::raw(&page);
    Ok(ExitCode::Success)
}
