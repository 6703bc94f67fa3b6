//! The docs' code blocks marked `<!-- runnable: NAME -->` run as printed, with the real binary
//! on `PATH` as `coord`, in a fresh workspace.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin};

/// Every block in `docs/<doc>` (or `README.md`) marked runnable: (name, code).
pub fn runnable_blocks(doc: &str) -> Vec<(String, String)> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = if doc == "README.md" {
        manifest.join(doc)
    } else {
        manifest.join("docs").join(doc)
    };
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

/// The commands a `hint:` line suggests (the backticked parts starting with `coord `).
fn hinted_commands(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("hint:"))
        .flat_map(|l| l.split('`').skip(1).step_by(2).map(str::to_string))
        .filter(|c| c.starts_with("coord "))
        .collect()
}

/// Every command a hint suggests runs as printed, even for a file whose name a shell would
/// split or choke on and a holder shown with its process: pasted into bash, it parses, and
/// (once the way is clear) does what it says.
#[test]
fn suggested_commands_run_as_printed() {
    let env = Env::new();
    let name = "a file (1) & 'x'.txt";
    env.write(name, "v1\n");
    let mut holder = env
        .agent("claude")
        .args(["run", name, "--", "sleep", "30"])
        .spawn();
    wait_until("the run's lock", || {
        env.files_ending(".lock.claude").len() == 1
    });
    let out = env
        .agent("claude")
        .args(["lock", name, "--no-wait"])
        .code(3);
    out.stderr_has("(process ");
    let hinted = hinted_commands(&out.stderr);
    assert_eq!(hinted.len(), 2, "{}", out.stderr);
    for cmd in &hinted {
        let syntax = Command::new("bash")
            .args(["-n", "-c", cmd])
            .output()
            .unwrap();
        assert!(syntax.status.success(), "not valid shell: {cmd}");
    }
    // The message goes to claude, as printed.
    let send = hinted.iter().find(|c| c.contains("msg send")).unwrap();
    let sent = bash(&env, send)
        .env("COORD_AGENT", "gemini")
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{send}: {}",
        String::from_utf8_lossy(&sent.stderr)
    );
    env.agent("claude")
        .args(["msg", "list", "--unread"])
        .ok()
        .stdout_has("gemini");
    // Once the run is over, the suggested lock takes the file.
    let pid = rustix::process::Pid::from_raw(holder.id() as i32).unwrap();
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let _ = holder.wait();
    let lock = hinted.iter().find(|c| c.starts_with("coord lock")).unwrap();
    let got = bash(&env, lock)
        .env("COORD_AGENT", "claude")
        .output()
        .unwrap();
    assert!(
        got.status.success(),
        "{lock}: {}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert!(env.exists(&format!("{name}.lock.claude")));

    // A write without the lock: both suggested commands run, in order, and succeed.
    let out = env
        .agent("gemini")
        .args(["write", name])
        .stdin("v2\n")
        .code(3);
    let hinted = hinted_commands(&out.stderr);
    assert_eq!(hinted.len(), 2, "{}", out.stderr);
    env.agent("claude").args(["unlock", name]).ok();
    for cmd in &hinted {
        let ran = bash(&env, cmd)
            .env("COORD_AGENT", "gemini")
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
    }
    assert_eq!(env.read(name), "v2\n");
}

/// What a runnable block needs around it: files in the workspace and shell lines before it.
/// `None`: the block has a test of its own (it needs other agents to play along).
fn setup_of(name: &str) -> Option<(&'static [(&'static str, &'static str)], &'static str)> {
    Some(match name {
        "dialogue-loop" => return None,
        "readme-quickstart" | "locking-workflow" | "sessions-stamp-card" => (&[], ""),
        "editing-workflow" => (
            &[
                ("SHARED.txt", "shared\n"),
                (
                    "update-shared.sh",
                    "#!/bin/sh\necho updated >> SHARED.txt\n",
                ),
            ],
            "chmod +x update-shared.sh\ngenerate-notes() { echo notes; }\n",
        ),
        "editing-counter" => (&[("counter.txt", "41\n")], ""),
        "dialogue-init" | "messages-collab" => (&[], ""),
        "dialogue-say" | "dialogue-commands" => (&[], "coord dialogue init --topic T\n"),
        "editing-recipes" => (
            &[
                ("counter.txt", "0\n"),
                ("src/lib.rs", "\n"),
                ("CHANGELOG.md", "\n"),
                (
                    "bump-version.sh",
                    "#!/bin/sh\necho bumped >> CHANGELOG.md\n",
                ),
                ("SHARED.txt", "shared\n"),
                ("edit.sh", "#!/bin/sh\necho edited >> SHARED.txt\n"),
                ("draft.md", "the report\n"),
                ("notes.md", "notes\n"),
                ("notes.md.rejected.claude", "refused notes\n"),
            ],
            "chmod +x bump-version.sh edit.sh\n",
        ),
        "messages-send-read" => (
            &[("a.txt", "a\n")],
            "git init -q && git add a.txt && git commit -qm a && echo b >> a.txt\n\
             COORD_AGENT=gemini coord msg send claude \"hello claude\"\n",
        ),
        "review-cycle" => (&[("docs/api.md", "# API\n")], "git init -q\n"),
        "remote-enable" => (
            &[],
            "git init -q && git init -q --bare .remote.git\n\
             git remote add origin \"file://$PWD/.remote.git\"\n",
        ),
        "editing-two-runs" | "messages-note" | "messages-note-under-lock" => {
            (&[("SHARED.txt", "shared\n")], "")
        }
        other => panic!("runnable block `{other}` has no setup in tests/cli/views/docs.rs"),
    })
}

/// Every docs code block marked `<!-- runnable: NAME -->` runs as printed (with `bash -e`, as
/// agent `claude` unless the block says otherwise) in a fresh workspace, and exits 0.
#[test]
fn every_runnable_docs_block_runs() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut names: Vec<String> = std::fs::read_dir(&docs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.push("README.md".into());
    let mut ran = Vec::new();
    for doc in &names {
        for (name, code) in runnable_blocks(doc) {
            let Some((files, prelude)) = setup_of(&name) else {
                continue;
            };
            if code.contains("jq ") && !has("jq") {
                eprintln!("skipped docs/{doc} block `{name}`: jq is not installed");
                continue;
            }
            if prelude.contains("git ") && !has("git") {
                eprintln!("skipped docs/{doc} block `{name}`: git is not installed");
                continue;
            }
            let env = Env::new();
            for (f, content) in files {
                env.write(f, content);
            }
            let out = bash(&env, &format!("set -e\n{prelude}{code}"))
                .env("COORD_AGENT", "claude")
                .env("GIT_AUTHOR_NAME", "Dev")
                .env("GIT_AUTHOR_EMAIL", "dev@example.com")
                .env("GIT_COMMITTER_NAME", "Dev")
                .env("GIT_COMMITTER_EMAIL", "dev@example.com")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "docs/{doc} block `{name}` failed ({:?})\n{code}\n--- stdout\n{}--- stderr\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if name == "editing-counter" {
                assert_eq!(env.read("counter.txt"), "42\n");
            }
            if name == "review-cycle" {
                assert!(env.exists(".metadata/reviews/closed/api-tracker.md"));
            }
            if name == "messages-collab" {
                assert!(env.read("notes/team-log.txt").contains("elsewhere"));
            }
            if name == "editing-two-runs" {
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(stdout.contains("refused with exit 3"), "{stdout}");
            }
            ran.push(name);
        }
    }
    assert!(ran.len() >= 14, "only {ran:?} ran");
}

/// Whether `tool` is on `PATH`.
fn has(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Pages whose shell blocks are not held to the rule below, and why.
const UNMARKED_PAGES: &[(&str, &str)] = &[
    (
        "agents.md",
        "every block runs in the reader's own repository with its clients",
    ),
    (
        "performance.md",
        "its blocks are the benchmark's commands, run by bench/run.sh",
    ),
];

/// Every shell block of README.md and docs/ either runs as printed (marked `<!-- runnable:
/// NAME -->`, run by `every_runnable_docs_block_runs`) or says why it cannot run here (marked
/// `<!-- not-run: WHY -->`: it needs a client, waits for Ctrl-C, writes into the home folder).
/// A reader who pastes a block is never left with one that fails as written. (Issue 30, item 7.)
#[test]
fn every_shell_block_is_runnable_or_says_why_not() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![manifest.join("README.md")];
    pages.extend(
        std::fs::read_dir(manifest.join("docs"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    let mut unmarked = Vec::new();
    for page in pages {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        if UNMARKED_PAGES.iter().any(|(p, _)| *p == name) {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut in_block = false;
        for (i, line) in lines.iter().enumerate() {
            if line.starts_with("```") {
                let opening = !in_block;
                in_block = !in_block;
                let lang = line.trim_start_matches('`').trim();
                if opening && matches!(lang, "sh" | "bash" | "shell" | "console") {
                    let above = if i > 0 { lines[i - 1].trim() } else { "" };
                    if !(above.starts_with("<!-- runnable:") || above.starts_with("<!-- not-run:"))
                    {
                        unmarked.push(format!("{name}:{}", i + 1));
                    }
                }
            }
        }
    }
    assert!(
        unmarked.is_empty(),
        "shell blocks neither runnable nor saying why not: {unmarked:?}"
    );
}

/// The `.gitignore` lines `coord init` writes are the ones docs/protocol.md lists: one list.
#[test]
fn init_writes_the_gitignore_lines_the_docs_list() {
    let env = Env::new();
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md"))
            .unwrap();
    let listed: Vec<&str> = doc
        .split("<!-- gitignore -->\n```gitignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/protocol.md has the gitignore block")
        .lines()
        .collect();
    env.cmd().args(["init", "--client", "claude"]).ok();
    let written = env.read(".gitignore");
    let block: Vec<&str> = written
        .lines()
        .skip_while(|l| *l != "# coord:begin")
        .skip(1)
        .take_while(|l| *l != "# coord:end")
        .collect();
    assert_eq!(block, listed);
}

/// Every page the README's documentation list names is in the binary: `coord docs NAME` prints
/// it as the source tree has it (#48: `coord docs history` was refused).
#[test]
fn every_page_the_readme_lists_is_in_the_binary() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(manifest.join("README.md")).unwrap();
    let section = readme
        .split("## Documentation")
        .nth(1)
        .expect("README has a Documentation section");
    let pages: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- [docs/"))
        .filter_map(|l| l.split(".md]").next())
        .filter(|name| !name.contains('/'))
        .collect();
    assert!(pages.len() >= 15, "{pages:?}");
    let env = Env::new();
    for page in pages {
        let out = env.cmd().args(["docs", page]).ok();
        let text = std::fs::read_to_string(manifest.join(format!("docs/{page}.md"))).unwrap();
        assert_eq!(out.stdout, text, "coord docs {page}");
    }
}
