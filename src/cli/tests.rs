//! The command-line trees: clap's own consistency checks on the full tree and on each hand-built
//! hot-path tree, and the hot trees parsing a line as the full tree does.

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use super::{Cli, hot_command, hot_tree};

const HOT: [&str; 4] = ["lock", "unlock", "presence", "hook"];

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn the_full_tree_passes_clap_debug_assert() {
    Cli::command().debug_assert();
}

#[test]
fn every_hot_tree_passes_clap_debug_assert() {
    for name in HOT {
        let sub = hot_command(&os(&["--json", "-a", "claude", name]))
            .unwrap_or_else(|| panic!("{name} is not on the hot path"));
        hot_tree(sub).debug_assert();
    }
}

#[test]
fn only_plain_hot_lines_take_the_hot_path() {
    assert!(hot_command(&os(&["status"])).is_none());
    assert!(hot_command(&os(&["--frobnicate", "lock", "a.md"])).is_none());
    assert!(hot_command(&os(&["-C", "dir", "--agent=x", "unlock", "a.md"])).is_some());
}

#[test]
fn a_hot_tree_parses_a_line_as_the_full_tree_does() {
    let line = [
        "coord", "-a", "claude", "--json", "lock", "a.md", "b.md", "--wait", "5s", "--reason", "r",
    ];
    let sub = hot_command(&os(&line[1..])).expect("lock is hot");
    let hot = hot_tree(sub)
        .try_get_matches_from(os(&line))
        .expect("the hot tree parses it");
    let full = Cli::command()
        .try_get_matches_from(os(&line))
        .expect("the full tree parses it");
    let (hot, full) = (
        Cli::from_arg_matches(&hot).expect("hot"),
        Cli::from_arg_matches(&full).expect("full"),
    );
    assert_eq!(format!("{hot:?}"), format!("{full:?}"));
}
