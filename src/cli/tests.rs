//! The command-line trees: clap's own consistency checks on the full tree and on each
//! single-command tree, and those parsing a line and printing help as the full tree does.

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use super::{Cli, GLOBAL_VARS, plain_hook_line, single_command, single_tree};

/// Every command of the full tree but those that describe the whole tree (`completions`,
/// `man`): each parses with a tree of its own.
fn single() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "completions" && n != "man")
        .collect()
}

#[test]
fn every_command_but_the_tree_describers_has_its_own_tree() {
    let names = single();
    assert!(names.len() > 20, "{names:?}");
    for name in &names {
        assert!(single_command(&os(&[name])).is_some(), "{name}");
    }
    assert!(single_command(&os(&["completions", "bash"])).is_none());
    assert!(single_command(&os(&["help", "lock"])).is_none());
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn the_full_tree_passes_clap_debug_assert() {
    Cli::command().debug_assert();
}

#[test]
fn every_single_command_tree_passes_clap_debug_assert() {
    for name in single() {
        let sub = single_command(&os(&["--json", "-a", "claude", &name]))
            .unwrap_or_else(|| panic!("{name} has no tree of its own"));
        single_tree(sub).debug_assert();
    }
}

#[test]
fn only_plain_lines_take_a_single_command_tree() {
    assert!(single_command(&os(&["--frobnicate", "lock", "a.md"])).is_none());
    assert!(single_command(&os(&["-C", "dir", "--agent=x", "unlock", "a.md"])).is_some());
}

#[test]
fn a_single_command_tree_parses_a_line_as_the_full_tree_does() {
    let line = [
        "coord", "-a", "claude", "--json", "lock", "a.md", "b.md", "--wait", "5s", "--reason", "r",
    ];
    same_parse(&line);
    same_parse(&[
        "coord",
        "-q",
        "run",
        "a.md",
        "--wait",
        "5m",
        "--",
        "sh",
        "-c",
        "echo --wait",
        "-q",
    ]);
    same_parse(&["coord", "msg", "send", "gemini", "hello", "--json"]);
    same_parse(&[
        "coord",
        "-C",
        ".",
        "review",
        "issue",
        "api",
        "add",
        "--severity",
        "high",
        "--title",
        "t",
    ]);
    same_parse(&["coord", "status", "--json", "--color", "never"]);
}

#[test]
fn a_single_command_tree_prints_the_full_trees_help() {
    /// The long help of `command` and of every command below it, by path.
    fn helps(command: &mut clap::Command, path: String, out: &mut Vec<(String, String)>) {
        out.push((path.clone(), command.render_long_help().to_string()));
        for sub in command.get_subcommands_mut() {
            let name = format!("{path} {}", sub.get_name());
            helps(sub, name, out);
        }
    }
    for name in single() {
        let of = |mut tree: clap::Command| {
            tree.build();
            let mut out = Vec::new();
            let sub = tree.find_subcommand_mut(&name).expect("the subcommand");
            helps(sub, name.clone(), &mut out);
            out
        };
        let single = of(single_tree(
            single_command(&os(&[&name])).expect("its own tree"),
        ));
        let full = of(Cli::command());
        assert!(!single.is_empty());
        assert_eq!(single, full, "`coord {name} … --help`");
    }
}

fn same_parse(line: &[&str]) {
    let sub = single_command(&os(&line[1..])).expect("a command with its own tree");
    let single = single_tree(sub)
        .try_get_matches_from(os(line))
        .expect("the single-command tree parses it");
    let full = Cli::command()
        .try_get_matches_from(os(line))
        .expect("the full tree parses it");
    let (single, full) = (
        Cli::from_arg_matches(&single).expect("single"),
        Cli::from_arg_matches(&full).expect("full"),
    );
    assert_eq!(format!("{single:?}"), format!("{full:?}"));
}

/// The hook lines read without clap come out as clap reads them; any other line is left to clap.
#[test]
fn a_plain_hook_line_reads_as_clap_reads_it() {
    // Not with the variables clap reads for the global options (the test runs in no session).
    if GLOBAL_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
        return;
    }
    for line in [
        &["coord", "hook", "claude"][..],
        &["coord", "hook", "claude", "--plugin"],
        &[
            "coord",
            "hook",
            "copilot",
            "--event",
            "preToolUse",
            "--plugin",
        ],
        &["coord", "hook", "gemini", "--wait=0", "--event=BeforeTool"],
        &["coord", "hook", "codex", "--plugin", "--wait", "2s"],
    ] {
        let plain = plain_hook_line(&os(line)).unwrap_or_else(|| panic!("{line:?} is plain"));
        let clap =
            Cli::from_arg_matches(&Cli::command().try_get_matches_from(os(line)).unwrap()).unwrap();
        assert_eq!(format!("{plain:?}"), format!("{clap:?}"), "{line:?}");
    }
    for line in [
        &["coord", "hook"][..],
        &["coord", "hook", "nobody"],
        &["coord", "hook", "Claude"],
        &["coord", "hook", "claude", "--help"],
        &["coord", "hook", "claude", "--json"],
        &["coord", "hook", "claude", "-a", "x"],
        &["coord", "hook", "claude", "--plugin", "--plugin"],
        &["coord", "hook", "claude", "--plugin=yes"],
        &["coord", "hook", "claude", "--wait"],
        &["coord", "hook", "claude", "--wait", "--plugin"],
        &["coord", "hook", "claude", "--wait", "1s", "--wait", "2s"],
        &["coord", "hook", "claude", "extra"],
        &["coord", "-q", "hook", "claude"],
        &["coord", "lock", "claude"],
    ] {
        assert!(plain_hook_line(&os(line)).is_none(), "{line:?} is for clap");
    }
}
