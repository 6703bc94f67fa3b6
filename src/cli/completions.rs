//! `coord completions SHELL` and `coord man [COMMAND]`: the command tree, rendered for shells
//! and for `man`.

use clap::Args;
use clap_complete::Shell;

use coord::{Error, ExitCode};

use super::{Ctx, output};

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
    let mut cmd = super::help_command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "coord", &mut script);
    output::raw(&script);
    Ok(ExitCode::Success)
}

pub fn man(args: ManArgs, _ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut cmd = super::help_command();
    cmd.build();
    let mut name = String::from("coord");
    for word in &args.command {
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            let why = format!("`{name}` has no command `{word}` (see `{name} --help`)");
            return Err(Error::bad_input(why).into());
        };
        name = format!("{name} {word}");
        // Built, so its display name is the page's title: `coord-lock`.
        cmd = sub.version(env!("CARGO_PKG_VERSION"));
    }
    // The synopsis with each option's value (`[--wait DUR]`), which clap_mangen leaves out.
    let usage = synopsis(&cmd, &name);
    let cmd = cmd.override_usage(usage);
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(|e| Error::failed(format!("cannot render the manual page: {e}")))?;
    output::raw(&page);
    Ok(ExitCode::Success)
}

/// `NAME [-C|--dir DIR] [--wait DUR] [--json] <FILE>...`: every visible option with its value
/// names, then the positionals, then the subcommand.
fn synopsis(cmd: &clap::Command, name: &str) -> String {
    let mut words = vec![name.to_string()];
    let value_of = |a: &clap::Arg| match a.get_value_names() {
        Some(names) => names.join(" "),
        None => a.get_id().as_str().to_uppercase(),
    };
    let mut options: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .collect();
    // Required options after the optional ones, as clap_mangen orders them.
    options.sort_by_key(|a| a.is_required_set());
    for a in options {
        let flag = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("-{s}|--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, Some(l)) => format!("--{l}"),
            (None, None) => continue,
        };
        let value = match a.get_num_args().is_some_and(|n| n.takes_values()) {
            true => format!(" {}", value_of(a)),
            false => String::new(),
        };
        let (word, required) = (format!("{flag}{value}"), a.is_required_set());
        words.push(if required { word } else { format!("[{word}]") });
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let many = a.get_num_args().is_some_and(|n| n.max_values() > 1);
        let dots = if many { "..." } else { "" };
        let (open, close) = if a.is_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        words.push(format!("{open}{}{close}{dots}", value_of(a)));
    }
    if cmd.has_subcommands() {
        words.push("<COMMAND>".into());
    }
    words.join(" ")
}
