//! Workspaces in a given state, for the tests of one protocol: a review on one topic driven by
//! its agents through the real binary, the hand-written files the seeds ask agents to write (a
//! dialogue, a presence gone quiet), agents as shell processes racing for a counter, and git
//! for the commands that commit.
//!
//! Built on [`crate::support`]: every helper returns a [`Cmd`] still to be run, so a test states
//! the outcome it expects (`.ok()`, `.code(3).stderr_has(…)`) where it reads.

#![allow(dead_code)]

use std::process::{Child, Command};

use serde::de::DeserializeOwned;

use crate::support::{Cmd, Env, coord_bin};

/// `coord review SUBCOMMAND TOPIC …` on one topic, at a fixed time when [`Review::at`] says so.
#[derive(Clone, Copy)]
pub struct Review<'e> {
    env: &'e Env,
    topic: &'e str,
    now: Option<&'e str>,
}

impl<'e> Review<'e> {
    /// The review `topic` in `env`, at the real time.
    pub fn new(env: &'e Env, topic: &'e str) -> Review<'e> {
        Review {
            env,
            topic,
            now: None,
        }
    }

    /// The same review, its commands run at `now` (`COORD_NOW`, RFC 3339).
    pub fn at(self, now: &'e str) -> Review<'e> {
        Review {
            now: Some(now),
            ..self
        }
    }

    /// `coord review SUB TOPIC ARGS…`, with no agent.
    pub fn cmd(&self, sub: &str, args: &[&str]) -> Cmd {
        let mut cmd = self.env.cmd();
        if let Some(now) = self.now {
            cmd = cmd.env("COORD_NOW", now);
        }
        cmd.args(["review", sub, self.topic]).args(args)
    }

    /// `review new TOPIC --target … --reviewer … --implementer …`.
    pub fn start(&self, target: &str, reviewer: &str, implementer: &str) -> Cmd {
        self.cmd(
            "new",
            &[
                "--target",
                target,
                "--reviewer",
                reviewer,
                "--implementer",
                implementer,
            ],
        )
    }

    /// `review step TOPIC --as ACTOR --action … --output … --summary … --next …`.
    pub fn step(&self, actor: &str, action: &str, out: &str, summary: &str, next: &str) -> Cmd {
        self.cmd(
            "step",
            &[
                "--as",
                actor,
                "--action",
                action,
                "--output",
                out,
                "--summary",
                summary,
                "--next",
                next,
            ],
        )
    }

    /// `review issue TOPIC add --severity … --title …`.
    pub fn add_issue(&self, severity: &str, title: &str) -> Cmd {
        self.cmd("issue", &["add", "--severity", severity, "--title", title])
    }

    /// `review issue TOPIC set ID --status …` (chain `.args(["--resolution", …])` for one).
    pub fn set_issue(&self, id: &str, status: &str) -> Cmd {
        self.cmd("issue", &["set", id, "--status", status])
    }

    /// `review agree TOPIC TEXT`.
    pub fn agree(&self, text: &str) -> Cmd {
        self.cmd("agree", &[text])
    }

    /// `review path TOPIC --kind … --llm …`, run: the path it prints.
    #[track_caller]
    pub fn path(&self, kind: &str, llm: &str, more: &[&str]) -> String {
        self.cmd("path", &["--kind", kind, "--llm", llm])
            .args(more)
            .ok()
            .stdout
            .trim()
            .to_string()
    }

    /// `review show TOPIC --json`, run and read.
    #[track_caller]
    pub fn show<T: DeserializeOwned>(&self) -> T {
        self.cmd("show", &["--json"]).ok().json()
    }
}

/// Write an output file by hand as the review seed asks: a body, then the
/// `## Handoff Prompt for Next Actor` section holding `prompt`.
pub fn handoff_output(env: &Env, rel: &str, body: &str, prompt: &str) {
    env.write(
        rel,
        format!("# Output\n\n{body}\n\n## Handoff Prompt for Next Actor\n\n{prompt}\n"),
    );
}

/// `git ARGS` in the workspace root, which must succeed: its stdout.
#[track_caller]
pub fn git(env: &Env, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(env.root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An agent as a shell process: `sh -c SCRIPT` in the root, as `agent`, with `$COORD` the
/// binary, no inherited session or fixed clock, and `vars` set.
pub fn agent_sh(env: &Env, agent: &str, script: &str, vars: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(env.root())
        .env("COORD_DIR", env.root())
        .env("COORD_AGENT", agent)
        .env("COORD", coord_bin())
        .env_remove("COORD_SESSION")
        .env_remove("COORD_SESSION_PID")
        .env_remove("COORD_NOW");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// The racing worker's script: `rounds` times lock `counter.txt` (with `lock_flags`), add one,
/// unlock. Inside the critical section a witness file is created with `O_EXCL` (`set -C`): a
/// second holder there at the same time appends its name to `collisions`.
pub fn counter_cycle(rounds: u32, lock_flags: &str) -> String {
    format!(
        r#"
        i=0
        while [ $i -lt {rounds} ]; do
            "$COORD" lock counter.txt {lock_flags} -q || exit 10
            if ! ( set -C; : > witness ) 2>/dev/null; then echo "$COORD_AGENT" >> collisions; fi
            n=$(cat counter.txt)
            echo $((n + 1)) > counter.txt
            rm -f witness
            "$COORD" unlock counter.txt -q || exit 11
            i=$((i + 1))
        done
    "#
    )
}

/// Wait for every worker; each must succeed.
#[track_caller]
pub fn wait_all(children: Vec<Child>) {
    for mut c in children {
        let status = c.wait().unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
}

/// `.AGENT_presence` written by hand in the seed's form, its heartbeat `minutes` old: ACTIVE
/// under 2 minutes, INACTIVE (and its locks STALE) after that.
pub fn presence_written_by_hand(env: &Env, agent: &str, minutes: i64, current_file: &str) {
    let at = (chrono::Local::now() - chrono::Duration::minutes(minutes)).to_rfc3339();
    let status = if current_file == "-" {
        "FREE"
    } else {
        "LOCKED"
    };
    env.write(
        &format!(".{agent}_presence"),
        format!(
            "status: ACTIVE\nstarted: {at}\nheartbeat: {at}\nworking_on: -\ncurrent_file: {current_file}\nlock_status: {status}\n"
        ),
    );
}

/// Dialogue files written by hand in the seed's format (seed 002), under `agent-dialogue/`.
pub mod dialogue_seed {
    use crate::support::Env;

    /// The dialogue folder.
    pub const DIR: &str = "agent-dialogue";

    /// `agent-dialogue/NAME`.
    pub fn p(name: &str) -> String {
        format!("{DIR}/{name}")
    }

    /// A conversation with messages #1-N, alternating AGENT-1 and AGENT-2.
    pub fn conversation(n: u64) -> String {
        let mut text = String::from(
            "# Agent Dialogue: API caching\n\nContext: the user wants a cache.\n\n---\n\n",
        );
        for i in 1..=n {
            let id = if i % 2 == 1 { "AGENT-1" } else { "AGENT-2" };
            let other = if i % 2 == 1 { "AGENT-2" } else { "AGENT-1" };
            text.push_str(&format!(
                "## Message #{i} [{id}] - 2025-10-16 14:{:02}:00\n\nPoint {i}.\n\n### Key Points\n- Point 1\n\n### Questions for {other}\n1. Question 1\n\n---\n\n",
                10 + i
            ));
        }
        text
    }

    /// `status.json` counting `count` messages, the last by `last`.
    pub fn status(count: u64, last: &str) -> String {
        format!(
            "{{\n  \"topic\": \"API caching\",\n  \"message_count\": {count},\n  \"last_update\": \"2025-10-16T14:15:00\",\n  \"last_speaker\": \"{last}\",\n  \"participants\": [\"AGENT-1\", \"AGENT-2\"]\n}}\n"
        )
    }

    /// The seed's "Example Turn Cycle", initial state: five messages, AGENT-1's turn.
    pub fn initial_state(env: &Env) {
        env.write(&p("conversation.md"), conversation(5));
        env.write(&p("status.json"), status(5, "AGENT-2"));
        env.write(&p("current-turn.txt"), "AGENT-1\n");
    }
}
