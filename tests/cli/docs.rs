//! The docs' code blocks marked `<!-- runnable: NAME -->` run as printed, with the real binary
//! on `PATH` as `coord`, in a fresh workspace.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin};

/// Every block in `docs/<doc>` marked runnable: (name, code).
pub fn runnable_blocks(doc: &str) -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(doc);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .trim()
            .strip_prefix("<!-- runnable:")
            .and_then(|r| r.strip_suffix("-->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "{doc}: a runnable marker must stand right above a code block"
        );
        let code: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        out.push((name.trim().to_string(), code.join("\n") + "\n"));
    }
    out
}

/// The runnable block `name` of `docs/<doc>`.
#[track_caller]
pub fn block(doc: &str, name: &str) -> String {
    runnable_blocks(doc)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("docs/{doc} has no runnable block `{name}`"))
        .1
}

/// A folder holding `coord` (a link to the binary under test), for `PATH`.
pub fn bin_dir(env: &Env) -> PathBuf {
    let dir = env.path(".test-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("coord");
    if !link.exists() {
        std::os::unix::fs::symlink(coord_bin(), &link).unwrap();
    }
    dir
}

/// `bash -euo pipefail -c SCRIPT` in the workspace, with `coord` on `PATH` and no agent.
pub fn bash(env: &Env, script: &str) -> Command {
    let path = format!(
        "{}:{}",
        bin_dir(env).display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let template = env.cmd().command();
    let mut cmd = Command::new("bash");
    cmd.args(["-c", script])
        .current_dir(env.root())
        .env("PATH", path);
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

#[track_caller]
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} never happened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(child: Child) -> (Option<i32>, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// docs/dialogue.md's copy-paste loop, as printed: its scratch files live outside the
/// workspace, and its first turn must go through.
#[test]
fn the_dialogue_loop_in_the_docs_runs() {
    let env = Env::new();
    let code = block("dialogue.md", "dialogue-loop");
    env.cmd()
        .args(["dialogue", "init", "--topic", "Cache design"])
        .ok();
    let script = format!(
        "compose_reply() {{ echo \"Reply after $(grep -c '^## Message' \"$1\") message(s)\"; }}\n{code}echo loop-ended\n"
    );
    let child = bash(&env, &script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    env.cmd()
        .args(["dialogue", "say", "--as", "AGENT-1", "Shall we cache?"])
        .ok();
    wait_until("AGENT-2's reply", || {
        std::fs::read_to_string(env.path("agent-dialogue/conversation.md"))
            .is_ok_and(|c| c.contains("## Message #2 [AGENT-2]"))
    });
    env.cmd().args(["dialogue", "command", "END-SESSION"]).ok();
    let (code, stdout, stderr) = finish(child);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("loop-ended"), "{stdout}\n{stderr}");
    let conversation = env.read("agent-dialogue/conversation.md");
    assert!(
        conversation.contains("Reply after 1 message(s)"),
        "{conversation}"
    );
}

/// `dialogue say --file` reads a file anywhere, like `write --from`.
#[test]
fn dialogue_say_reads_a_file_outside_the_workspace() {
    let env = Env::new();
    let elsewhere = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(elsewhere.path(), "From outside.\n").unwrap();
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    env.cmd()
        .args(["dialogue", "say", "--as", "AGENT-1", "--file"])
        .arg(elsewhere.path())
        .ok();
    assert!(
        env.read("agent-dialogue/conversation.md")
            .contains("From outside.")
    );
    env.cmd()
        .args([
            "dialogue",
            "say",
            "--as",
            "AGENT-2",
            "--file",
            "/nonexistent/reply.md",
        ])
        .code(2)
        .stderr_has("/nonexistent/reply.md");
}

/// The subcommands listed on a help page (`help` itself left out).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            let name = l.strip_prefix("  ")?.split_whitespace().next()?;
            (!l.starts_with("   ") && name != "help").then(|| name.to_string())
        })
        .collect()
}

/// Every command's `--help` shows an example, line by line as written (not re-wrapped into
/// prose): the part above `Usage:` has an indented line starting with `coord`, and no line
/// of prose there holds a command (clap re-wraps a paragraph into unindented lines, gluing
/// its commands together).
#[test]
fn every_help_page_has_a_verbatim_example() {
    let env = Env::new();
    let top = subcommands(&env.cmd().arg("--help").ok().stdout);
    // `coord -a NAME …` or `coord SUBCOMMAND …` in a line of prose is a re-wrapped example.
    let is_command = |text: &str| {
        text.split("coord ").skip(1).any(|rest| {
            let word = rest.split_whitespace().next().unwrap_or_default();
            word == "-a" || top.iter().any(|t| t == word)
        })
    };
    let mut pages = vec![Vec::<String>::new()];
    let mut seen = 0;
    while let Some(path) = pages.pop() {
        let help = env.cmd().args(&path).arg("--help").ok().stdout;
        seen += 1;
        for sub in subcommands(&help) {
            let mut next = path.clone();
            next.push(sub);
            pages.push(next);
        }
        let head: Vec<&str> = help
            .lines()
            .take_while(|l| !l.starts_with("Usage:"))
            .collect();
        let shown = format!("coord {} --help", path.join(" "));
        assert!(
            head.iter()
                .any(|l| l.starts_with("  ") && l.trim_start().starts_with("coord ")),
            "{shown} has no example\n{help}"
        );
        for l in &head {
            if !l.starts_with("  ") {
                let unquoted: String = l.split('`').step_by(2).collect();
                assert!(
                    !is_command(&unquoted),
                    "{shown}: an example re-wrapped into prose: {l:?}"
                );
            }
        }
    }
    assert!(seen >= 40, "only {seen} help pages found");
}
