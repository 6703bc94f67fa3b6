//! `coord demo`: a live session of several agents in a fresh folder, narrated on stdout, ending
//! in `coord status`. Every step is the real `coord` binary run as its own process (the agent
//! clients' hooks get the payloads Claude Code and Codex send); the threads here only start
//! them and narrate.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use serde_json::json;

use coord::error::IoResultExt;
use coord::{Error, ExitCode, fsutil};

use super::{Ctx, output};

/// Run a live multi-agent session in a fresh folder, ending in `coord status`
///
/// Each agent is a real `coord` process: two agent clients' hooks collide on one file (one is
/// denied with the reason its agent reads, then allowed), agents in a shell wait their turn,
/// agree on the rules, talk, hold a short dialogue and one review step; `coord status` ends it.
/// The folder is a new temporary folder unless `--dir` names an empty or new one.
///
///   coord demo
///   coord demo --agents 5 --dir /tmp/coord-demo
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DemoArgs {
    /// How many agents take part (2-8)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=8))]
    agents: u8,
}

pub fn run(args: DemoArgs, ctx: &Ctx) -> Result<ExitCode> {
    let dir = match &ctx.dir {
        // `-C DIR`: made before the command ran (see `cli::execute`), and resolved.
        Some(d) => {
            let unreadable = || format!("cannot read {}", d.display());
            let mut entries = fsutil::read_dir(d).with_context(unreadable)?;
            if entries.next().is_some() {
                let why = "the demo needs an empty or new folder";
                return Err(Error::bad_path(d.display().to_string(), why).into());
            }
            d.clone()
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("coord-demo-")
                .tempdir()
                .context("cannot create a temporary folder")?;
            std::fs::canonicalize(t.keep())?
        }
    };
    let exe = std::env::current_exe().context("cannot find the coord binary")?;
    let agents = &NAMES[..usize::from(args.agents)];
    let started = Instant::now();
    let demo = Demo { exe, dir, started };
    let (n, shown) = (agents.len(), demo.dir.display());
    output::line(&format!(
        "coord demo: {n} agents share {shown} (every line below is a real coord process)"
    ));
    let (first, second, last) = (agents[0], agents[1], agents[agents.len() - 1]);
    demo.heading("The agents arrive: each says who it is and what it works on");
    let tasks = ["parser", "tests", "docs", "release"];
    for (a, task) in agents.iter().zip(tasks.iter().cycle()) {
        let line = format!("startup --partner {a} --mode silent --task {task}");
        demo.show(a, &line, &[], 1)?;
    }
    demo.heading(
        "Two agent clients edit the same file (`coord init` makes each call `coord hook` before an edit)",
    );
    fsutil::ensure_dir(&demo.dir.join("src"))?;
    let file = demo.dir.join("src/app.rs");
    fsutil::replace(&file, b"fn main() {}\n")?;
    // The payloads the clients send (tests/fixtures/), built as JSON so any folder name fits.
    let claude = "cedd012c-f1ba-4d70-ad6d-1c65c16ba070";
    let codex = "01a20dbd-c053-7b63-9944-21d2369b8293";
    let event = |session: &str, name: &str, mut e: serde_json::Value| {
        e["session_id"] = session.into();
        e["transcript_path"] = "/dev/null".into();
        e["cwd"] = json!(demo.dir);
        e["hook_event_name"] = name.into();
        e.to_string()
    };
    let edit = json!({"tool_name": "Edit",
        "tool_input": {"file_path": file, "old_string": "fn main() {}",
            "new_string": "fn main() { run() }", "replace_all": false}});
    let edit = event(claude, "PreToolUse", edit);
    let patch = json!({"tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch\n*** Update File: src/app.rs\n@@\n-fn main() {}\n+fn main() { serve() }\n*** End Patch\n"}});
    let patch = event(codex, "PreToolUse", patch);
    let stop = |session: &str| event(session, "Stop", json!({"stop_hook_active": false}));

    if let Some(why) = demo.hook(first, "claude", "PreToolUse", &edit)? {
        bail!("Claude Code's edit was denied: {why}");
    }
    let said = "Claude Code: Edit src/app.rs -> allowed; claude holds src/app.rs while it edits";
    demo.say(first, said);
    let Some(why) = demo.hook(second, "codex", "PreToolUse", &patch)? else {
        bail!("Codex's edit of a held file was allowed");
    };
    let said = "Codex: apply_patch src/app.rs -> denied; its agent reads:";
    demo.say(second, said);
    for l in output::wrap(&why, 92, 0).split('\n') {
        output::line(&format!("{:>19}{l}", ""));
    }
    demo.hook(first, "claude", "Stop", &stop(claude))?;
    demo.say(first, "Claude Code's turn ends -> its locks are released");
    if let Some(why) = demo.hook(second, "codex", "PreToolUse", &patch)? {
        bail!("Codex's edit after the release was denied: {why}");
    }
    let said = "Codex: apply_patch src/app.rs -> allowed; codex holds it now";
    demo.say(second, said);
    demo.hook(second, "codex", "Stop", &stop(codex))?;
    demo.say(second, "Codex's turn ends -> released");
    demo.heading("From a shell, agents wait their turn: `coord lock --wait`, then `coord unlock`");
    let shared = demo.dir.join("SHARED.txt");
    fsutil::replace(&shared, b"# Shared notes\n")?;
    each_at_once(&demo, agents, |demo, i, a| {
        std::thread::sleep(Duration::from_millis(60 * i as u64));
        let reason = format!("adding section {}", i + 1);
        demo.show(a, "lock SHARED.txt --wait 30s --reason", &[&reason], 1)?;
        let line = format!("- section {} by {a}\n", i + 1);
        fsutil::append_line(&shared, line.as_bytes())?;
        std::thread::sleep(Duration::from_millis(300));
        demo.show(a, "unlock SHARED.txt", &[], 1)
    })?;
    let text = std::fs::read_to_string(&shared).at("read", &shared)?;
    let n = text.lines().filter(|l| l.starts_with("- ")).count();
    output::line(&format!(
        "  SHARED.txt now holds {n} sections, each written by one holder at a time"
    ));

    demo.heading(
        "`coord run FILE -- CMD` holds the lock while CMD runs: a counter, no update lost",
    );
    let counter = demo.dir.join("COUNTER.txt");
    fsutil::replace(&counter, b"0\n")?;
    let script = "n=$(cat COUNTER.txt); sleep 0.05; echo $((n + 1)) > COUNTER.txt";
    let run = "run COUNTER.txt --wait 30s -- sh -c";
    each_at_once(&demo, agents, |demo, _, a| demo.quiet(a, run, &[script]))?;
    let count = std::fs::read_to_string(&counter).at("read", &counter)?;
    let (n, count) = (agents.len(), count.trim());
    output::line(&format!(
        "  {n} agents ran `coord run COUNTER.txt -- sh -c 'n=$(cat COUNTER.txt); echo $((n + 1)) > COUNTER.txt'` at once: COUNTER.txt = {count}"
    ));
    demo.heading("They agree to follow the locking rules (a handshake with every other agent)");
    each_at_once(&demo, agents, |demo, _, a| {
        demo.quiet(a, "handshake --wait 30s", &[])
    })?;
    // Once everyone answered, the first agent's view of every pair.
    demo.show(first, "handshake", &[], 1 + agents.len())?;
    demo.heading("They talk: a message, a broadcast, a note in the shared file");
    let thanks = "SHARED.txt is yours again, thanks";
    demo.quiet(second, &format!("msg send {first}"), &[thanks])?;
    let heads_up = "Heads-up: I summarise everything in NOTES.md next";
    demo.quiet(last, "msg send all", &[heads_up])?;
    let note = "summary of this file goes to NOTES.md";
    demo.show(last, "note SHARED.txt", &[note], 1)?;
    demo.show(first, "msg list", &[], 3)?;
    demo.heading("A short dialogue: each agent waits for its turn, then speaks");
    let pair = format!("{first},{second}");
    let topic = "Where do the notes go?";
    let init = [topic, "--agents", &pair];
    demo.show(first, "dialogue init --topic", &init, 1)?;
    let ask = "One section per agent in SHARED.txt?";
    let lines = [
        (ask, Some("QUESTION-CRITICAL")),
        ("Agreed, and a summary at the top.", Some("AGREEMENT")),
        ("I will write the summary after the review.", None),
        ("Then we are done here.", Some("PROPOSE-END")),
    ];
    let speakers = [first, second];
    each_at_once(&demo, &speakers, |demo, who, agent| {
        for (text, marker) in lines.iter().skip(who).step_by(2) {
            let wait = format!("dialogue wait --as {agent} --timeout 30s");
            demo.quiet(agent, &wait, &[])?;
            let mut args = vec![*text];
            args.extend(marker.iter().flat_map(|m| ["--marker", *m]));
            demo.quiet(agent, &format!("dialogue say --as {agent}"), &args)?;
            demo.say(agent, &format!("says: {text}"));
        }
        Ok(())
    })?;
    demo.heading("A review: the reviewer records its findings and hands over to the implementer");
    let topic = "shared-notes";
    let new =
        format!("review new {topic} --target SHARED.txt --reviewer {first} --implementer {second}");
    demo.show(first, &new, &[], 1)?;
    let meta = demo.dir.join(coord::layout::REVIEW_METADATA_DIR);
    let day = coord::clock::now().format("%Y_%m_%d").to_string();
    let file = coord::layout::review_file(&meta, first, topic, &day);
    fsutil::ensure_dir(file.parent().unwrap_or(&demo.dir))?;
    let rel = file.strip_prefix(&demo.dir).unwrap_or(&file).display();
    let text = format!(
        "# Review of SHARED.txt\n\nEvery section is there, one per agent.\n\n\
         ## Handoff Prompt for Next Actor\n\n\
         You are {second}, the implementer of review `{topic}`. Read the tracker \
         `.metadata/reviews/active/{topic}-tracker.md` and answer the review in step 02.\n"
    );
    fsutil::replace(&file, text.as_bytes())?;
    let step = format!("review step {topic} --action review --output {rel} --summary");
    let summary = "no issues: every section is present";
    demo.show(first, &step, &[summary, "--next", second], 1)?;
    demo.show(second, &format!("review next {topic}"), &[], 2)?;
    demo.heading("One agent leaves; another keeps a lock while it works");
    demo.show(first, "shutdown", &[], 1)?;
    demo.show(second, "lock NOTES.md --reason summarising", &[], 2)?;

    output::line("\n$ coord status");
    // As no agent: the view is everyone's.
    let status = (demo.command("", &["status"]).env_remove("COORD_AGENT"))
        .status()
        .context("cannot run coord status")?;
    if !status.success() {
        bail!("coord status failed in the demo folder");
    }
    let d = demo.dir.display();
    output::line(&format!(
        "\nThe demo folder is {d} (nothing runs in it any more); remove it with: rm -rf {d}"
    ));
    Ok(ExitCode::Success)
}

/// The agents' names, in the order they join; the first two are driven through their clients'
/// hooks (Claude Code, then Codex).
const NAMES: [&str; 8] = [
    "claude", "codex", "gemini", "copilot", "qwen", "opencode", "cline", "cursor",
];

/// Run `step(demo, i, agent)` for every agent, each on its own thread, and wait for all.
fn each_at_once(
    demo: &Demo,
    agents: &[&str],
    step: impl Fn(&Demo, usize, &str) -> Result<()> + Sync,
) -> Result<()> {
    std::thread::scope(|s| {
        let step = &step;
        let agents = agents.iter().enumerate();
        let handles: Vec<_> = agents
            .map(|(i, a)| s.spawn(move || step(demo, i, a)))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().map_err(|_| anyhow!("a demo agent panicked"))?)
    })
}

struct Demo {
    exe: PathBuf,
    dir: PathBuf,
    started: Instant,
}

impl Demo {
    fn heading(&self, text: &str) {
        output::line(&format!("\n# {text}"));
    }

    fn say(&self, agent: &str, text: &str) {
        let stamp = format!("{:>5.2}s", self.started.elapsed().as_secs_f64());
        output::line(&format!("{stamp} [{agent:<8}] {text}"));
    }

    fn command(&self, agent: &str, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(args)
            .current_dir(&self.dir)
            .env("COORD_DIR", &self.dir)
            .env("COORD_AGENT", agent)
            .env_remove("COORD_SESSION")
            .env_remove("COORD_SESSION_PID")
            .stdin(Stdio::null());
        c
    }

    /// Run `coord LINE TAIL...` as `agent` (`line`: words without spaces in them; `tail`: any
    /// arguments), its output unseen; its failure is the demo's.
    fn quiet(&self, agent: &str, line: &str, tail: &[&str]) -> Result<()> {
        let mut args: Vec<&str> = line.split_whitespace().collect();
        args.extend(tail);
        let out = self
            .command(agent, &args)
            .output()
            .context("cannot start coord")?;
        if !out.status.success() {
            let (line, stderr) = (args.join(" "), String::from_utf8_lossy(&out.stderr));
            bail!("`coord {line}` failed for {agent}: {}", stderr.trim());
        }
        Ok(())
    }

    /// Show `$ coord LINE TAIL...` as `agent`, run it, and show as they come the first `lines`
    /// lines it prints on stdout and every line on stderr (a waiter's news, a warning).
    fn show(&self, agent: &str, line: &str, tail: &[&str], lines: usize) -> Result<()> {
        let mut args: Vec<&str> = line.split_whitespace().collect();
        args.extend(tail);
        let shown: Vec<String> = args.iter().map(|a| coord::shell::arg(a)).collect();
        self.say(agent, &format!("$ coord {}", shown.join(" ")));
        let mut child = self
            .command(agent, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start coord")?;
        let (out, err) = (child.stdout.take(), child.stderr.take());
        let status = std::thread::scope(|s| {
            let relay = |stream: Box<dyn Read + Send>, limit: usize| {
                s.spawn(move || {
                    BufReader::new(stream)
                        .lines()
                        .map_while(std::result::Result::ok)
                        .filter(|l| !l.trim().is_empty())
                        .take(limit)
                        .for_each(|l| self.say(agent, &format!("  {l}")));
                })
            };
            let relays = [
                out.map(|o| relay(Box::new(o), lines)),
                err.map(|e| relay(Box::new(e), usize::MAX)),
            ];
            let status = child.wait();
            relays.into_iter().flatten().for_each(|h| _ = h.join());
            status
        })
        .at("wait for", &self.exe)?;
        if !status.success() {
            bail!("`coord {}` failed for {agent}", args.join(" "));
        }
        Ok(())
    }

    /// Send `payload` to `coord hook CLIENT --event EVENT` as `agent`, as the client would; the
    /// reason of a denial, `None` when allowed.
    fn hook(&self, agent: &str, client: &str, event: &str, json: &str) -> Result<Option<String>> {
        let mut child = self
            .command(agent, &["hook", client, "--event", event, "--wait", "0s"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start coord hook")?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(json.as_bytes()).at("write to", &self.exe)?;
        }
        let out = child.wait_with_output().at("wait for", &self.exe)?;
        let text = String::from_utf8_lossy(&out.stdout);
        if text.trim().is_empty() {
            return Ok(None);
        }
        let reply: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("coord hook {client} printed no JSON ({e}): {text}"))?;
        let out = &reply["hookSpecificOutput"];
        let reason = out["permissionDecisionReason"].as_str().unwrap_or("");
        Ok((out["permissionDecision"] == "deny").then(|| reason.to_string()))
    }
}
