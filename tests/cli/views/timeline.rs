//! `coord log --timeline`: the history drawn as one lane per agent, at the terminal's width.

use std::collections::BTreeMap;
use std::process::Command;

use crate::support::{Env, coord_bin, eventually};
use crate::views::history::LOG;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A history written with fixed times: alice holds a.txt 0–40 s, bob waits 10–40 s then holds
/// it 40–80 s, carol's edit is denied at 60 s; dave holds b.txt from 20 s until erin takes it
/// over at 70 s and releases it at 100 s.
fn fixed_history(env: &Env) {
    let t = |s: u32| format!("2026-01-28T10:{:02}:{:02}.000+00:00", s / 60, s % 60);
    let ev = |s: u32, event: &str, agent: &str, file: &str| {
        format!(
            r#"{{"at":"{}","event":"{event}","agent":"{agent}","file":"{file}"}}"#,
            t(s)
        )
    };
    let lines = [
        ev(0, "lock_taken", "alice", "a.txt"),
        ev(10, "lock_waiting", "bob", "a.txt"),
        ev(20, "lock_taken", "dave", "b.txt"),
        ev(40, "lock_released", "alice", "a.txt"),
        ev(40, "lock_taken", "bob", "a.txt"),
        ev(60, "edit_denied", "carol", "a.txt"),
        ev(70, "lock_taken_over", "erin", "b.txt"),
        ev(80, "lock_released", "bob", "a.txt"),
        ev(100, "lock_released", "erin", "b.txt"),
    ];
    env.write(LOG, lines.join("\n") + "\n");
}

/// The timeline drawn in a real terminal (tmux) at 80 and at 200 columns: the same rows, every
/// line within the width, the bars scaled to it (bob takes a.txt over from alice at 40% of the
/// way across), colour in a terminal and none with `NO_COLOR`.
#[test]
fn timeline_under_tmux_at_80_and_200_columns() {
    if !have("tmux") {
        eprintln!("skipped: tmux is not installed; the timeline was not drawn in a terminal");
        return;
    }
    let env = Env::new();
    fixed_history(&env);
    let screen = |width: u32, no_color: bool| -> String {
        let socket = env.path(&format!("tmux-{width}-{no_color}.sock"));
        let tmux = |args: &[&str]| {
            Command::new("tmux")
                .arg("-S")
                .arg(&socket)
                .args(args)
                .output()
                .unwrap()
        };
        let command = format!(
            "env -u COLUMNS -u NO_COLOR -u CLICOLOR_FORCE COORD_DIR='{}' {} TERM=xterm-256color COORD_HISTORY_MAX_AGE=100000d '{}' log --timeline; : > '{}'; sleep 60",
            env.root().display(),
            if no_color { "NO_COLOR=1" } else { "" },
            coord_bin(),
            env.path(&format!("done-{width}-{no_color}")).display(),
        );
        let out = tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            "30",
            &command,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eventually("the timeline drawn", || {
            env.exists(&format!("done-{width}-{no_color}"))
        });
        let shot = tmux(&["capture-pane", "-p", "-e"]);
        tmux(&["kill-server"]);
        String::from_utf8_lossy(&shot.stdout).into_owned()
    };
    let strip = |s: &str| -> String {
        let mut out = String::new();
        let mut esc = false;
        for ch in s.chars() {
            if esc {
                esc = !ch.is_ascii_alphabetic();
            } else if ch == '\x1b' {
                esc = true;
            } else {
                out.push(ch);
            }
        }
        out
    };
    let mut rows_at: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for width in [80u32, 200] {
        let coloured = screen(width, false);
        assert!(
            coloured.contains("\x1b["),
            "no colour in a terminal:\n{coloured}"
        );
        let plain = screen(width, true);
        assert!(
            !plain.contains("\x1b["),
            "colour despite NO_COLOR:\n{plain}"
        );
        let trimmed = |s: &str| -> Vec<String> {
            let mut v: Vec<String> = s.lines().map(|l| l.trim_end().to_string()).collect();
            while v.last().is_some_and(String::is_empty) {
                v.pop();
            }
            v
        };
        assert_eq!(trimmed(&strip(&coloured)), trimmed(&plain));
        for line in plain.lines() {
            assert!(line.chars().count() <= width as usize, "{width}: {line:?}");
        }
        let labels: Vec<String> = plain
            .lines()
            .filter(|l| l.contains('│'))
            .map(|l| l.split('│').next().unwrap().trim().to_string())
            .collect();
        rows_at.insert(width, labels);
        let bar = |label: &str| -> Vec<char> {
            let line = plain
                .lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("no row {label}:\n{plain}"));
            line.split('│').nth(1).unwrap().chars().collect()
        };
        let a = bar("a.txt");
        assert!(
            a.len() > width as usize / 2,
            "{width}: the bar does not use the width"
        );
        let first_b = a.iter().position(|c| *c == 'B').unwrap();
        let expected = (a.len() - 1) * 40 / 100;
        assert!(
            first_b.abs_diff(expected) <= 1,
            "{width}: B at {first_b}, not ~{expected}\n{plain}"
        );
        assert_eq!(a[0], 'A', "{plain}");
        assert!(a.contains(&'x'), "the denial is not drawn:\n{plain}");
        let b = bar("b.txt");
        assert!(b.contains(&'>'), "the takeover is not drawn:\n{plain}");
        assert!(plain.contains("waits"), "{plain}");
        let waits = bar("  waits");
        assert!(waits.contains(&'b'), "bob's wait is not drawn:\n{plain}");
        assert!(
            plain.contains("A alice") && plain.contains("E erin"),
            "{plain}"
        );
    }
    assert_eq!(
        rows_at[&80], rows_at[&200],
        "the rows differ between widths"
    );
    // Piped: plain text, no escapes.
    let piped = env
        .cmd()
        .env_remove("NO_COLOR")
        .env("COORD_HISTORY_MAX_AGE", "100000d")
        .args(["log", "--timeline"])
        .ok();
    assert!(!piped.stdout.contains('\x1b'));
    assert!(piped.stdout.contains("a.txt"));
}
