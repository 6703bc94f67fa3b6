//! Closing a review (`coord review close`), and its commit.

use std::io;
use std::path::Path;
use std::process::Command;

use serde::Serialize;

use super::Reviews;
use crate::error::{Error, Refusal, Result};
use crate::fsutil;
use crate::layout;
use crate::review::tracker::Block;
use crate::review::{Action, Issue, IssueStatus, Step, StepStatus, View, one_line};

/// What `close` did.
#[derive(Debug, Clone, Serialize)]
pub struct Closed {
    /// The closed tracker, relative to the root.
    pub tracker: String,
    pub(crate) archive: Option<String>,
    /// The commit made with `--commit`.
    pub commit: Option<CommitInfo>,
}

/// A commit made by `close --commit`.
#[derive(Debug, Clone, Serialize)]
pub struct CommitInfo {
    /// The commit id.
    pub id: String,
    /// The message.
    pub message: String,
}

impl Reviews {
    /// Close a review: check the completion criteria, mark it closed, move it to `reviews/closed/`,
    /// and with `commit` commit it (`summary` after `{topic} review: `).
    pub fn close(&self, topic: &str, commit: bool, summary: Option<&str>) -> Result<Closed> {
        let root = self.ws.root();
        if commit {
            let inside = git(root, &["rev-parse", "--is-inside-work-tree"])
                .map_err(|e| Error::failed(format!("cannot run `git` for `--commit`: {e}")))?;
            if inside.is_err() {
                return Err(Error::bad_input(format!(
                    "`--commit` needs a git work tree, and `{}` is not in one",
                    root.display()
                )));
            }
        }
        let (guard, mut t) = self.begin(topic, None)?;
        let missing = missing_for_close(&t.view);
        if !missing.is_empty() {
            return Err(Error::ReviewUnfinished {
                topic: topic.to_string(),
                missing,
            });
        }
        let (active, closed) = (self.dir(false), self.dir(true));
        let closed_path = self.tracker_path(topic, true);
        if fsutil::mtime(&closed_path).is_some() {
            let shown = self.rel(&closed_path);
            let why = format!("`{shown}` exists already: an earlier review `{topic}` was closed");
            let hint = Some("move that file aside, then close again".into());
            return Err(Error::refused(Refusal::ReviewExists, why, hint));
        }
        let active_path = t.path.clone();
        if let Some(open) = t.view.open_step().map(|s| s.number) {
            let values = [("Status", "no_action"), ("Summary", "Review closed")];
            t.set(Block::Step(open), &values)?;
        }
        t.set(Block::Meta, &[("Status", "closed")])?;
        let action = ("Next action", "none (review closed)");
        t.set(Block::Current, &[("Next actor", "none"), action])?;
        fsutil::ensure_dir(&closed)?;
        t.path = closed_path.clone();
        self.finish(&mut t)?;
        let from = layout::review_archive(&active, topic);
        let to = layout::review_archive(&closed, topic);
        let archive = fsutil::mtime(&from).map(|_| self.rel(&to));
        if archive.is_some() {
            fsutil::rename(&from, &to)?;
        }
        fsutil::remove(&active_path)?;
        fsutil::sync_dir(&active)?;
        drop(guard);
        let commit = commit.then(|| self.commit(topic, &t.view, summary));
        Ok(Closed {
            tracker: self.rel(&closed_path),
            archive,
            commit: commit.transpose()?,
        })
    }

    /// Commit the metadata folder, the target and every step's input and output that exist.
    fn commit(&self, topic: &str, view: &View, summary: Option<&str>) -> Result<CommitInfo> {
        let message = commit_message(topic, view, summary);
        let root = self.ws.root();
        let mut paths = vec![self.rel(&self.meta)];
        let target = view.meta.target.as_ref();
        paths.extend(target.map(|t| t.trim_end_matches('/').to_string()));
        for s in &view.steps {
            paths.extend(s.input.iter().chain(&s.output).cloned());
        }
        paths.retain(|p| !p.is_empty() && root.join(p).exists());
        paths.sort();
        paths.dedup();
        let run = |args: &[&str]| git(root, args).unwrap_or_else(|e| Err(e.to_string()));
        let mut add = vec!["add", "-A", "--"];
        add.extend(paths.iter().map(String::as_str));
        let id = run(&add)
            .and_then(|_| run(&["commit", "-q", "-m", &message]))
            .and_then(|_| run(&["rev-parse", "HEAD"]))
            .map_err(|e| Error::failed(format!(
                "review `{topic}` is closed, but the commit failed: {e}; commit by hand with the message:\n{message}"
            )))?;
        Ok(CommitInfo { id, message })
    }
}

fn git(root: &Path, args: &[&str]) -> io::Result<std::result::Result<String, String>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    Ok(if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    })
}

fn missing_for_close(view: &View) -> Vec<String> {
    let mut missing: Vec<String> = (view.issues.iter())
        .filter(|i| !i.status.is_settled())
        .map(|i| format!("{} is {}", i.id, i.status.as_str()))
        .collect();
    let finished = |s: &&Step| !s.status.is_open() && s.status != StepStatus::NoAction;
    match view.steps.iter().rev().find(finished) {
        None => missing.push("no step is finished yet (a verify step must be done)".into()),
        Some(s) if s.action != Some(Action::Verify) => missing.push(format!(
            "the last finished step {:02} is {}, not a verify step",
            s.number,
            s.action.map_or("without an action", Action::as_str)
        )),
        Some(s) if s.status != StepStatus::Done => missing.push(format!(
            "the last verify step {:02} is {}, not done",
            s.number,
            s.status.as_str()
        )),
        Some(_) => {}
    }
    let running = |s: &&Step| s.status == StepStatus::InProgress;
    let last = view.steps.last().filter(running);
    missing.extend(last.map(|s| format!("step {:02} is in progress ({})", s.number, s.actor)));
    missing
}

/// The seed's commit message: summary, one line per issue, a `Co-Authored-By:` per known agent.
fn commit_message(topic: &str, view: &View, summary: Option<&str>) -> String {
    let resolved = |i: &&Issue| i.status == IssueStatus::Resolved;
    let resolved = view.issues.iter().filter(resolved).count();
    let s = if resolved == 1 { "" } else { "s" };
    let summary = summary.map(one_line).filter(|s| !s.is_empty());
    let summary = summary.unwrap_or_else(|| match view.issues.len() {
        0 => "reviewed, no issues found".to_string(),
        n if n == resolved => format!("{resolved} issue{s} resolved"),
        n => format!("{resolved} of {n} issues resolved"),
    });
    let gap = if view.issues.is_empty() { "" } else { "\n" };
    let mut msg = format!("{topic} review: {summary}\n{gap}");
    for i in &view.issues {
        let wontfix = (i.status == IssueStatus::Wontfix).then_some(" (wontfix)");
        let text = i.resolution.as_ref().unwrap_or(&i.title);
        msg += &format!("- {}: {text}{}\n", i.id, wontfix.unwrap_or_default());
    }
    let authors = view.meta.participants.iter();
    for (k, a) in authors.filter_map(|p| co_author(&p.name)).enumerate() {
        msg += &format!("{}Co-Authored-By: {a}\n", if k == 0 { "\n" } else { "" });
    }
    msg
}

fn co_author(name: &str) -> Option<String> {
    let id = name.to_ascii_lowercase();
    let domains = [
        ("claude", "anthropic.com"),
        ("codex", "openai.com"),
        ("gpt", "openai.com"),
        ("chatgpt", "openai.com"),
        ("gemini", "google.com"),
        ("copilot", "github.com"),
    ];
    let (_, domain) = domains.into_iter().find(|(p, _)| id.starts_with(p))?;
    // The name starts with one of the prefixes: its first character is ASCII.
    let display = name[..1].to_ascii_uppercase() + &name[1..];
    Some(format!("{display} <noreply@{domain}>"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::Participant;
    use crate::review::rules::tests::view_with;

    #[test]
    fn close_criteria() {
        // `ISSUES; STEPS => what is missing`, as `view_with` reads them.
        for case in [
            "I-1 open; review done, implement done, verify planned => I-1 is open|the last finished step 02 is implement, not a verify step",
            "I-1 wontfix; verify blocked, fix planned => the last verify step 01 is blocked, not done",
            "I-1 resolved; verify done, fix planned => ",
            "; review planned => no step is finished yet (a verify step must be done)",
            "; verify done, fix in_progress => step 02 is in progress (Claude)",
            "; verify done, fix no_action => ",
        ] {
            let (given, want) = case.split_once(" => ").unwrap();
            let (issues, steps) = given.split_once("; ").unwrap();
            assert_eq!(missing_for_close(&view_with(issues, steps)).join("|"), want);
        }
    }

    #[test]
    fn the_seed_commit_message() {
        let mut v = view_with("ISSUE-01 resolved Updated the design, ISSUE-02 wontfix", "");
        v.meta.participants[0].name = "claude".into();
        v.meta.participants.push(Participant {
            name: "Local".into(),
            role: None,
        });
        let message = commit_message("rfd", &v, Some("align the design"));
        let want = "rfd review: align the design\n\n- ISSUE-01: Updated the design\n\
- ISSUE-02: title of ISSUE-02 (wontfix)\n\nCo-Authored-By: Claude <noreply@anthropic.com>\n\
Co-Authored-By: Codex <noreply@openai.com>\n";
        assert_eq!(message, want);
        assert!(commit_message("t", &v, None).starts_with("t review: 1 of 2 issues resolved\n"));
    }
}
