//! The help reads cleanly at the terminal's width (#9): each paragraph is wrapped where the
//! terminal ends, never where its source line did, and each command's summary is one sentence
//! that fits one line at 100 columns.

use crate::support::Env;

/// `coord ARGS` with the terminal `width` columns wide.
fn help(env: &Env, width: usize, args: &[&str]) -> String {
    env.cmd()
        .env("COLUMNS", width.to_string())
        .args(args)
        .ok()
        .stdout
}

/// The help page of the command at `path` (`["msg", "send"]`), `width` columns wide.
fn page(env: &Env, width: usize, path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    help(env, width, &args)
}

/// The lines under `Commands:` in a help page.
fn listing(page: &str) -> Vec<&str> {
    page.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The names listed under `Commands:` in a help page (`help` itself left out).
fn subcommands(page: &str) -> Vec<String> {
    listing(page)
        .into_iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every command path: `[]`, `["lock"]`, `["msg", "send"]`, ...
fn every_command(env: &Env) -> Vec<Vec<String>> {
    let mut all = vec![Vec::new()];
    let mut i = 0;
    while i < all.len() {
        let path = all[i].clone();
        for name in subcommands(&page(env, 300, &path)) {
            let mut sub = path.clone();
            sub.push(name);
            all.push(sub);
        }
        i += 1;
    }
    all
}

/// Lines of `page` cut where the next line's first word would still have fit: a paragraph
/// wrapped by its source, not by the terminal. Only prose is looked at: the command's text
/// (not indented), an option's text (indented 10) and a command's summary carried over to the
/// next line (indented to the summaries' column); examples and lists keep their lines.
fn ragged(page: &str, width: usize) -> Vec<String> {
    let lines: Vec<&str> = page.lines().collect();
    let mut section = "";
    let mut found = Vec::new();
    for pair in lines.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if !a.starts_with(' ') && a.ends_with(':') {
            section = a;
        }
        let indent = |l: &str| l.len() - l.trim_start().len();
        let prose = match section {
            "Commands:" => indent(a) > 2,
            "Options:" | "Arguments:" => indent(a) == 10,
            _ => indent(a) == 0 && !a.starts_with("Usage:"),
        };
        let first = b.split_whitespace().next().unwrap_or("");
        let special = |l: &str| {
            let l = l.trim_start();
            ["coord ", "-", "[", "#", "...", "Possible values"]
                .iter()
                .any(|p| l.starts_with(p))
        };
        if prose
            && !a.trim().is_empty()
            && indent(a) == indent(b)
            && !special(a)
            && !special(b)
            && !first.is_empty()
            && a.chars().count() + 1 + first.chars().count() <= width
        {
            found.push(format!("{a}⏎{b}"));
        }
    }
    found
}

#[test]
fn every_help_page_is_wrapped_at_the_terminals_width() {
    let env = Env::new();
    let mut wrong = Vec::new();
    for path in every_command(&env) {
        for width in [80, 100] {
            let page = page(&env, width, &path);
            for line in page.lines().filter(|l| l.chars().count() > width) {
                // clap does not wrap a usage line.
                if !line.starts_with("Usage: ") {
                    wrong.push(format!(
                        "coord {} at {width}: too long: {line}",
                        path.join(" ")
                    ));
                }
            }
            for cut in ragged(&page, width) {
                wrong.push(format!("coord {} at {width}: {cut}", path.join(" ")));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn coord_help_init_reads_as_init_help_does() {
    let env = Env::new();
    let page = help(&env, 80, &["help", "init"]);
    assert_eq!(page, help(&env, 80, &["init", "--help"]));
    assert!(ragged(&page, 80).is_empty(), "{page}");
    assert!(page.contains("\n  Claude Code   .claude/settings.json, .mcp.json\n"));
}

/// Each command's summary is one line at 100 columns, so the list of commands has one line a
/// command; the summary is a single sentence (no full stop inside it).
#[test]
fn every_command_summary_is_one_sentence_on_one_line() {
    let env = Env::new();
    let mut wrong = Vec::new();
    for path in every_command(&env) {
        for line in listing(&page(&env, 100, &path)) {
            if line.starts_with("   ") {
                wrong.push(format!("coord {}: carried over: {line}", path.join(" ")));
            } else if line.trim_end().contains(". ") {
                wrong.push(format!("coord {}: two sentences: {line}", path.join(" ")));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
