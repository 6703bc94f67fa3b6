//! Workspaces in a given state, for the tests of one protocol: a review on one topic driven by
//! its agents through the real binary, the hand-written files the seeds ask agents to write, and
//! git for the commands that commit.
//!
//! Built on [`crate::support`]: every helper returns a [`Cmd`] still to be run, so a test states
//! the outcome it expects (`.ok()`, `.code(3).stderr_has(…)`) where it reads.

#![allow(dead_code)]

use std::process::Command;

use serde::de::DeserializeOwned;

use crate::support::{Cmd, Env};

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

/// Whether `git` can be run here.
pub fn has_git() -> bool {
    Command::new("git").arg("--version").output().is_ok()
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
