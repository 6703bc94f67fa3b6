//! `coord demo`'s script: a live session of several agent processes in a fresh folder. Every
//! step is the real `coord` binary run as its own process; the threads here only start them and
//! narrate. The library never prints: each line goes to the caller's [`Narrator`].

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;

/// Where the demo's lines go (one call per line, from several threads).
pub type Narrator = Arc<dyn Fn(&str) + Send + Sync>;

/// The agents' names, in the order they join.
pub const NAMES: [&str; 8] = [
    "claude",
    "gemini",
    "copilot",
    "ollama",
    "perplexity",
    "cursor",
    "windsurf",
    "cline",
];

fn failed(message: impl Into<String>) -> Error {
    Error::Failed {
        message: message.into(),
    }
}

/// Play the scripted session: `agents` (2-8) agents, each step a real `coord` process (`exe`)
/// working in `dir` (an empty folder); every line of narration and of the processes' output
/// goes to `out`. Ends with one agent clocked out and one holding a lock, for a `coord status`.
///
/// # Errors
///
/// [`Error::Failed`] when a step's process cannot be started or fails; [`Error::Io`].
pub fn run(exe: PathBuf, dir: PathBuf, agents: usize, out: Narrator) -> Result<()> {
    let agents: Vec<&str> = NAMES[..agents.clamp(2, NAMES.len())].to_vec();
    let demo = Demo {
        exe,
        dir: dir.clone(),
        out,
        print: Arc::new(Mutex::new(())),
        started: Instant::now(),
    };
    demo.line(&format!(
        "coord demo: {} agents in {}\n",
        agents.len(),
        dir.display()
    ));

    demo.line("# Every agent clocks in on the stamp card");
    for (i, a) in agents.iter().enumerate() {
        let task = format!("Task_{}", 123 + i * 111);
        demo.run(
            a,
            &[
                "startup",
                "--partner",
                a,
                "--mode",
                "silent",
                "--task",
                &task,
            ],
        )?;
    }
    demo.run(agents[0], &["check"])?;

    demo.line("\n# All of them want SHARED.txt at once: one holds it, the others wait their turn");
    fsutil::replace(&dir.join("SHARED.txt"), b"# Shared notes\n")?;
    let handles: Vec<_> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let demo = demo.clone();
            let a = a.to_string();
            std::thread::spawn(move || -> Result<()> {
                std::thread::sleep(Duration::from_millis(60 * i as u64));
                let reason = format!("adding section {}", i + 1);
                demo.run(
                    &a,
                    &["lock", "SHARED.txt", "--wait", "30s", "--reason", &reason],
                )?;
                let line = format!(
                    "[{}] [{a}] section {} written under the lock\n",
                    crate::clock::now().format("%H:%M"),
                    i + 1
                );
                fsutil::append_line(&demo.dir.join("SHARED.txt"), line.as_bytes())?;
                demo.say(&a, &format!("edits SHARED.txt: {}", line.trim_end()));
                std::thread::sleep(Duration::from_millis(400));
                demo.run(&a, &["unlock", "SHARED.txt"])?;
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| failed("a demo agent thread panicked"))??;
    }

    demo.line("\n# The result: every section is there, each written by one holder at a time");
    let shared = dir.join("SHARED.txt");
    let text = std::fs::read_to_string(&shared).at("read", &shared)?;
    for l in text.lines() {
        demo.line(&format!("  {l}"));
    }

    step_counter(&demo, &agents)?;
    handshake_step(&demo, &agents)?;
    messages_step(&demo, &agents)?;
    dialogue_step(&demo, agents[0], agents[1])?;
    review_step(&demo, &agents)?;

    demo.line("\n# One agent clocks out; one keeps a lock while it works");
    demo.run(agents[0], &["shutdown"])?;
    demo.run(agents[1], &["lock", "NOTES.md", "--reason", "summarising"])?;

    Ok(())
}

/// The agents talk: one direct message, one broadcast to `all`, a note in the shared file; the
/// first agent lists its inbox and reads a message.
fn messages_step(demo: &Demo, agents: &[&str]) -> Result<()> {
    demo.line("\n# They talk: a direct message, a broadcast, a note; the first agent reads");
    let (first, second, last) = (agents[0], agents[1], agents[agents.len() - 1]);
    demo.run(
        second,
        &[
            "msg",
            "send",
            first,
            "SHARED.txt is yours again, thanks for waiting",
        ],
    )?;
    demo.run(
        last,
        &[
            "msg",
            "send",
            "all",
            "Heads-up: I summarise everything in NOTES.md next",
        ],
    )?;
    demo.run(
        last,
        &[
            "note",
            "SHARED.txt",
            "summary of this file goes to NOTES.md",
        ],
    )?;
    demo.run(first, &["msg", "list"])?;
    let out = Command::new(&demo.exe)
        .args(["msg", "list", "--unread", "--json"])
        .current_dir(&demo.dir)
        .env("COORD_DIR", &demo.dir)
        .env("COORD_AGENT", first)
        .env_remove("COORD_SESSION")
        .env_remove("COORD_SESSION_PID")
        .output()
        .map_err(|e| failed(format!("cannot run coord msg list: {e}")))?;
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| failed(format!("coord msg list --json printed no JSON: {e}")))?;
    let id = listed["messages"][0]["id"]
        .as_str()
        .ok_or_else(|| failed("the first agent has no unread message"))?
        .to_string();
    demo.run(first, &["msg", "read", &id])?;
    Ok(())
}

/// Every agent hand-shakes with the others at once and waits for their answers; then one
/// agent's `.handshake_*` file (one block per peer) is shown.
fn handshake_step(demo: &Demo, agents: &[&str]) -> Result<()> {
    demo.line("\n# They agree to follow the lock rules (a handshake): each asks the others and accepts who asked it");
    let handles: Vec<_> = agents
        .iter()
        .map(|a| {
            let demo = demo.clone();
            let a = a.to_string();
            std::thread::spawn(move || demo.run(&a, &["handshake", "--wait", "30s"]))
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| failed("a demo agent thread panicked"))??;
    }
    let file = format!(".handshake_{}", agents[0]);
    demo.line(&format!("\n$ cat {file}"));
    let path = demo.dir.join(&file);
    let text = std::fs::read_to_string(&path).at("read", &path)?;
    for l in text.lines() {
        demo.line(format!("  {l}").trim_end());
    }
    Ok(())
}

/// Two agents hold a short turn-based dialogue (seed 002): each is its own loop of real
/// `coord dialogue wait` / `coord dialogue say` processes.
fn dialogue_step(demo: &Demo, first: &str, second: &str) -> Result<()> {
    demo.line("\n# A short turn-based dialogue: each agent waits for its turn, then speaks");
    let agents = format!("{first},{second}");
    demo.run(
        first,
        &[
            "dialogue",
            "init",
            "--topic",
            "Where do the notes go?",
            "--agents",
            &agents,
        ],
    )?;
    let lines: [(&str, &[&str]); 4] = [
        (
            "I suggest one section per agent in SHARED.txt.",
            &["QUESTION-CRITICAL"],
        ),
        ("Agreed, and a summary at the top.", &["AGREEMENT"]),
        ("I will write the summary after the review.", &[]),
        ("Then we are done here.", &["PROPOSE-END"]),
    ];
    let handles: Vec<_> = [first, second]
        .into_iter()
        .enumerate()
        .map(|(who, agent)| {
            let demo = demo.clone();
            let agent = agent.to_string();
            let mine: Vec<(String, Vec<String>)> = lines
                .iter()
                .skip(who)
                .step_by(2)
                .map(|(t, m)| (t.to_string(), m.iter().map(|s| s.to_string()).collect()))
                .collect();
            std::thread::spawn(move || -> Result<()> {
                for (text, markers) in mine {
                    demo.run(
                        &agent,
                        &["dialogue", "wait", "--as", &agent, "--timeout", "30s"],
                    )?;
                    let mut args = vec!["dialogue", "say", "--as", &agent, &text];
                    for m in &markers {
                        args.extend(["--marker", m]);
                    }
                    demo.run(&agent, &args)?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| failed("a demo dialogue thread panicked"))??;
    }
    demo.run(first, &["dialogue", "turn"])?;
    Ok(())
}

/// One review step (seed 003): a new review of SHARED.txt, the reviewer writes its review file
/// ending with the handoff prompt, records the step, and the implementer is told what is next.
fn review_step(demo: &Demo, agents: &[&str]) -> Result<()> {
    let (reviewer, implementer) = (agents[0], agents[1]);
    demo.line("\n# A review: the reviewer writes its findings and hands over to the implementer");
    let topic = "shared-notes";
    demo.run(
        reviewer,
        &[
            "review",
            "new",
            topic,
            "--target",
            "SHARED.txt",
            "--reviewer",
            reviewer,
            "--implementer",
            implementer,
        ],
    )?;
    let meta = demo.dir.join(crate::layout::REVIEW_METADATA_DIR);
    let file = crate::review::paths::conventional(
        &meta,
        &crate::review::paths::NameParts {
            kind: crate::review::paths::Kind::Review,
            topic,
            llm: reviewer,
            to: None,
            step: None,
            action: None,
            description: None,
        },
        &crate::clock::now(),
    )?;
    if let Some(dir) = file.parent() {
        fsutil::ensure_dir(dir)?;
    }
    fsutil::replace(
        &file,
        format!(
            "# Review of SHARED.txt\n\nEvery section is there, one per agent.\n\n\
             ## Handoff Prompt for Next Actor\n\n\
             You are {implementer}, the implementer of review `{topic}`. Read the tracker \
             `.metadata/reviews/active/{topic}-tracker.md` and answer the review in step 02.\n"
        )
        .as_bytes(),
    )?;
    let rel = file
        .strip_prefix(&demo.dir)
        .unwrap_or(&file)
        .display()
        .to_string();
    demo.run(
        reviewer,
        &[
            "review",
            "step",
            topic,
            "--action",
            "review",
            "--output",
            &rel,
            "--summary",
            "no issues: every section is present",
            "--next",
            implementer,
        ],
    )?;
    demo.run(implementer, &["review", "next", topic])
}

/// Every agent bumps a shared counter once with `coord run`, all at the same time: each holds
/// the lock only while its command runs, and no increment is lost.
fn step_counter(demo: &Demo, agents: &[&str]) -> Result<()> {
    demo.line(
        "\n# Each agent bumps a shared counter with `coord run` (the lock lives as long as the command)",
    );
    fsutil::replace(&demo.dir.join("COUNTER.txt"), b"0\n")?;
    let script = "echo $(( $(cat COUNTER.txt) + 1 )) > COUNTER.txt";
    let handles: Vec<_> = agents
        .iter()
        .map(|a| {
            let (demo, a) = (demo.clone(), a.to_string());
            std::thread::spawn(move || {
                let args = [
                    "run",
                    "COUNTER.txt",
                    "--wait",
                    "30s",
                    "--",
                    "sh",
                    "-c",
                    script,
                ];
                demo.run(&a, &args)
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| failed("a demo agent thread panicked"))??;
    }
    let counter = demo.dir.join("COUNTER.txt");
    let n = std::fs::read_to_string(&counter).at("read", &counter)?;
    demo.line(&format!(
        "  COUNTER.txt = {} ({} agents, one increment each)",
        n.trim(),
        agents.len()
    ));
    Ok(())
}

#[derive(Clone)]
struct Demo {
    exe: PathBuf,
    dir: PathBuf,
    out: Narrator,
    print: Arc<Mutex<()>>,
    started: Instant,
}

impl Demo {
    fn stamp(&self) -> String {
        format!("{:>5.2}s", self.started.elapsed().as_secs_f64())
    }

    fn say(&self, agent: &str, text: &str) {
        self.line(&format!("{} [{agent:<8}] {text}", self.stamp()));
    }

    /// One line of narration, never interleaved with another thread's.
    fn line(&self, text: &str) {
        let _g = self.print.lock();
        (self.out)(text);
    }

    /// Run `coord ARGS` as `agent`, streaming its output with a prefix.
    fn run(&self, agent: &str, args: &[&str]) -> Result<()> {
        let shown: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        self.say(agent, &format!("$ coord {}", shown.join(" ")));
        let mut child = Command::new(&self.exe)
            .args(args)
            .current_dir(&self.dir)
            .env("COORD_DIR", &self.dir)
            .env("COORD_AGENT", agent)
            .env_remove("COORD_SESSION")
            .env_remove("COORD_SESSION_PID")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("cannot start coord: {e}")))?;
        let out = child.stdout.take().map(|s| self.stream(agent, s));
        let err = child.stderr.take().map(|s| self.stream(agent, s));
        let status = child.wait().at("wait for", &self.exe)?;
        for h in [out, err].into_iter().flatten() {
            let _ = h.join();
        }
        if !status.success() {
            return Err(failed(format!(
                "`coord {}` failed for {agent}",
                args.join(" ")
            )));
        }
        Ok(())
    }

    fn stream(
        &self,
        agent: &str,
        stream: impl Read + Send + 'static,
    ) -> std::thread::JoinHandle<()> {
        let me = self.clone();
        let agent = agent.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                me.say(&agent, &format!("  {line}"));
            }
        })
    }
}

/// Quote an argument for display the way a shell user would type it.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,%+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
