//! The review protocol: [`Reviews`], the handle on one metadata folder, one `impl` block a command
//! (here `create`, `show`, issues and agreements; `step`, `next` and `close` in their files).

mod close;
mod next;
mod step;

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use close::{Closed, CommitInfo};
pub use next::Next;
pub use step::{StepOutcome, StepRequest};

use super::paths::{self, NameParts};
use super::tracker::{Block, TEMPLATE, Tracker, new_tracker_text};
use super::{Action, Agreement, Issue, IssueStatus, Severity, View, check_topic, one_line};
use crate::arbiter::Guard;
use crate::clock;
use crate::error::{Error, IoResultExt, Refusal, Result};
use crate::fsutil;
use crate::layout;
use crate::lock;
use crate::presence::{StateCache, Unreadable};
use crate::workspace::{AgentId, Target, Workspace};

const FILE_CAP: u64 = 8 * 1024 * 1024;

/// The review metadata folder of a workspace.
#[derive(Debug, Clone)]
pub struct Reviews {
    ws: Workspace,
    meta: PathBuf,
    actor: Option<AgentId>,
}

/// One open review, for `coord status`.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewSummary {
    /// The topic.
    pub topic: String,
    pub(crate) tracker: String,
    /// The next actor.
    pub next_actor: String,
    /// The next action.
    pub next_action: Option<String>,
    /// Issues not resolved or wontfix.
    pub open_issues: usize,
    pub(crate) steps: usize,
}

/// A tracker read for showing.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    /// The topic.
    pub topic: String,
    /// The tracker, relative to the root.
    pub tracker: String,
    /// `true` when it was found in `reviews/closed/`.
    pub(crate) closed: bool,
    /// What it says.
    #[serde(flatten)]
    pub view: View,
}

impl Reviews {
    /// The metadata folder `meta` of `ws` (absolute, inside the workspace; default
    /// `<root>/.metadata`), for commands run by `actor`: its own `coord lock` on a tracker does
    /// not stop it.
    pub fn new(ws: &Workspace, meta: Option<PathBuf>, actor: Option<AgentId>) -> Reviews {
        let meta = meta.unwrap_or_else(|| ws.root().join(layout::REVIEW_METADATA_DIR));
        let ws = ws.clone();
        Reviews { ws, meta, actor }
    }

    fn dir(&self, closed: bool) -> PathBuf {
        if closed {
            layout::review_closed_dir(&self.meta)
        } else {
            layout::review_active_dir(&self.meta)
        }
    }

    fn tracker_path(&self, topic: &str, closed: bool) -> PathBuf {
        layout::review_tracker(&self.dir(closed), topic)
    }

    /// A path relative to the root, for messages and output.
    pub fn rel(&self, path: &Path) -> String {
        (self.ws.rel(path)).unwrap_or_else(|| path.display().to_string())
    }

    fn read(&self, path: &Path) -> Result<Option<Tracker>> {
        let text = read_text(path)?;
        text.map(|text| Tracker::parse(path, &text)).transpose()
    }

    fn load(&self, topic: &str) -> Result<(Tracker, bool)> {
        check_topic(topic)?;
        for closed in [false, true] {
            if let Some(t) = self.read(&self.tracker_path(topic, closed))? {
                return Ok((t, closed));
            }
        }
        Err(self.no_review(topic))
    }

    fn no_review(&self, topic: &str) -> Error {
        Error::bad_input(format!(
            "there is no review `{topic}` (no `{}`); start one with `coord review new {topic} --target PATH --reviewer A --implementer B`",
            self.rel(&self.tracker_path(topic, false))
        ))
    }

    /// The tracker for showing.
    pub fn show(&self, topic: &str) -> Result<Shown> {
        let (t, closed) = self.load(topic)?;
        Ok(Shown {
            topic: topic.to_string(),
            tracker: self.rel(&t.path),
            closed,
            view: t.view.clone(),
        })
    }

    /// Take the mutex and read TOPIC's active tracker for an edit by `actor`.
    fn begin(&self, topic: &str, actor: Option<&AgentId>) -> Result<(Guard, Tracker)> {
        check_topic(topic)?;
        let guard = self.ws.lock_mutex()?;
        // Every tracker update starts here: sweep the temporary files killed updates left.
        fsutil::sweep_temps(&self.dir(false));
        let path = self.tracker_path(topic, false);
        let Some(t) = self.read(&path)? else {
            if fsutil::mtime(&self.tracker_path(topic, true)).is_none() {
                return Err(self.no_review(topic));
            }
            let why = format!("review `{topic}` is closed");
            let hint = Some(format!("see it with `coord review show {topic}`"));
            return Err(Error::refused(Refusal::ReviewClosed, why, hint));
        };
        if t.view.meta.status == "closed" {
            let why = format!(
                "review `{topic}` is closed (`{}` says `Status: closed`)",
                self.rel(&path)
            );
            return Err(Error::refused(Refusal::ReviewClosed, why, None));
        }
        self.check_not_locked(&path, actor.or(self.actor.as_ref()))?;
        Ok((guard, t))
    }

    /// One edit of TOPIC's active tracker by `actor` (default: the acting agent), under the mutex.
    fn edit<R>(
        &self,
        topic: &str,
        actor: Option<&AgentId>,
        change: impl FnOnce(&mut Tracker) -> Result<R>,
    ) -> Result<R> {
        let (_guard, mut t) = self.begin(topic, actor)?;
        let out = change(&mut t)?;
        self.finish(&mut t)?;
        Ok(out)
    }

    /// Stamp `Last updated` and replace the tracker durably (the mutex is held).
    fn finish(&self, t: &mut Tracker) -> Result<()> {
        t.set(Block::Meta, &[("Last updated", &meta_date())])?;
        fsutil::replace_durable(&t.path, t.render().as_bytes())
    }

    fn check_not_locked(&self, path: &Path, actor: Option<&AgentId>) -> Result<()> {
        let Some(rel) = self.ws.rel(path) else {
            return Ok(());
        };
        let target = Target {
            rel,
            abs: path.to_path_buf(),
        };
        let (mut entries, now) = (lock::locks_of(&target), clock::now());
        let cache = &mut StateCache::default();
        lock::classify(self.ws.root(), &mut entries, cache, &now);
        let Some(e) = entries.iter().find(|e| e.excludes(actor)) else {
            return Ok(());
        };
        Err(Error::LockHeld {
            file: target.rel,
            holder: e.holder().to_string(),
            since: lock::format_since(e.since.as_ref(), &now),
            working_on: e.reason().map(str::to_string),
        })
    }

    /// Start a review (and write the seed's template when missing); returns the tracker's path.
    pub fn create(
        &self,
        topic: &str,
        target: &Target,
        reviewer: &AgentId,
        implementer: &AgentId,
    ) -> Result<String> {
        check_topic(topic)?;
        if reviewer.id() == implementer.id() {
            return Err(Error::bad_input(format!(
                "`{}` cannot be both reviewer and implementer: a review needs two participants",
                reviewer.name()
            )));
        }
        let Ok(kind) = std::fs::symlink_metadata(&target.abs) else {
            let why = format!("the review target `{}` does not exist", target.rel);
            return Err(Error::bad_input(why));
        };
        let slash = if kind.is_dir() { "/" } else { "" };
        let target = format!("{}{slash}", target.rel);
        let _guard = self.ws.lock_mutex()?;
        let path = self.tracker_path(topic, false);
        for existing in [&path, &self.tracker_path(topic, true)] {
            if fsutil::mtime(existing).is_some() {
                let why = format!("review `{topic}` already exists: `{}`", self.rel(existing));
                let hint =
                    format!("see it with `coord review show {topic}`, or choose another topic");
                return Err(Error::refused(Refusal::ReviewExists, why, Some(hint)));
            }
        }
        let template = layout::review_template(&self.meta);
        if let Some(dir) = template.parent() {
            fsutil::ensure_dir(dir)?;
        }
        fsutil::create_new(&template, TEMPLATE.as_bytes())?;
        fsutil::ensure_dir(&self.dir(false))?;
        let (rel, date) = (self.rel(&path), meta_date());
        let (reviewer, implementer) = (reviewer.name(), implementer.name());
        let text = new_tracker_text(topic, &target, &date, reviewer, implementer);
        // Parsed before it is written: a tracker coord cannot read back is never written.
        let mut t = Tracker::parse(&path, &text)?;
        let (_, prompt) = self.guide(topic, &rel, &t.view, &t.view.steps[0], None);
        t.set_prompt(reviewer, 1, &prompt)?;
        fsutil::replace_durable(&path, t.render().as_bytes())?;
        Ok(rel)
    }

    /// The conventional path of a file dated today; `to`, `step` and `action` default to the
    /// tracker's other participant and open step when there is a tracker to read.
    pub fn conventional_path(&self, parts: NameParts<'_>) -> Result<PathBuf> {
        let view = self.load(parts.topic).ok().map(|(t, _)| t.view.clone());
        let other = view.as_ref().and_then(|v| v.meta.other_than(parts.llm));
        let open = view.as_ref().and_then(View::open_step);
        let action = open.and_then(|s| s.action).map(Action::as_str);
        let parts = NameParts {
            to: parts.to.or(other.as_deref()),
            step: parts.step.or(open.map(|s| s.number)),
            action: parts.action.or(action),
            ..parts
        };
        paths::conventional(&self.meta, &parts, &clock::now())
    }

    /// Add an open issue, its id `ISSUE-NN` one above the highest.
    pub fn add_issue(&self, topic: &str, severity: Severity, title: &str) -> Result<Issue> {
        let title = one_line(title);
        if title.is_empty() {
            return Err(Error::bad_input("the issue title is empty"));
        }
        self.edit(topic, None, |t| {
            let Some(n) = next_issue_number(&t.view) else {
                let why = format!("its issues reach ISSUE-{}: no number is left", u32::MAX);
                return Err(Error::corrupt(t.path.clone(), None, why));
            };
            let issue = Issue {
                id: format!("ISSUE-{n:02}"),
                severity,
                title,
                status: IssueStatus::Open,
                resolution: None,
            };
            t.add_issue(&issue)?;
            Ok(issue)
        })
    }

    /// Update an issue's status and resolution.
    pub fn set_issue(
        &self,
        topic: &str,
        id: &str,
        status: IssueStatus,
        resolution: Option<&str>,
    ) -> Result<Issue> {
        let r = resolution.map(one_line);
        self.edit(topic, None, |t| t.set_issue(id, status, r.as_deref()))
    }

    /// Add a line to the Agreements Log: `- [DISPUTED] TEXT - ADOPTED`.
    pub fn agree(
        &self,
        topic: &str,
        text: &str,
        adopted: Option<&str>,
        disputed: bool,
    ) -> Result<Agreement> {
        let (mut text, mut disputed) = (one_line(text), disputed);
        if let Some(rest) = text.strip_prefix("[DISPUTED]") {
            (disputed, text) = (true, rest.trim().to_string());
        }
        if text.is_empty() {
            return Err(Error::bad_input("the agreement text is empty"));
        }
        if let Some(a) = adopted.map(one_line).filter(|a| !a.is_empty()) {
            text = format!("{text} - {a}");
        }
        self.edit(topic, None, |t| {
            t.add_agreement(&text, disputed)?;
            let added = t.view.agreements.last().cloned();
            added.ok_or_else(|| Error::failed("the agreement was not added"))
        })
    }
}

fn meta_date() -> String {
    clock::now().format("%Y-%m-%d").to_string()
}

/// One above the highest `ISSUE-NN`; `None` when that is `ISSUE-4294967295` already.
fn next_issue_number(view: &View) -> Option<u32> {
    let number = |id: &str| {
        id.get(..6)?
            .eq_ignore_ascii_case("ISSUE-")
            .then(|| id[6..].parse::<u32>().ok())?
    };
    let numbers = view.issues.iter().filter_map(|i| number(&i.id));
    numbers.max().unwrap_or(0).checked_add(1)
}

/// Read a whole file as UTF-8 (capped, no symlink followed on its path); `None` when missing.
fn read_text(path: &Path) -> Result<Option<String>> {
    // O_NOFOLLOW guards only the last component: a symlinked `.metadata` or `reviews/active`
    // would still lead the read (and the replace that follows it) outside the workspace.
    if let Some(link) = fsutil::linked_ancestor(path) {
        let e = io::Error::new(io::ErrorKind::InvalidData, "is a symlink (not followed)");
        return Err(e).at("read through", &link);
    }
    let read = fsutil::if_found(fsutil::read_capped(path, FILE_CAP));
    let Some(bytes) = read.at("read", path)? else {
        return Ok(None);
    };
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        Error::corrupt(path, Some(line), "it is not UTF-8 text")
    })
}

/// Every open review under the default metadata folder, and the trackers that cannot be read.
pub fn open_reviews(ws: &Workspace) -> (Vec<ReviewSummary>, Vec<Unreadable>) {
    let reviews = Reviews::new(ws, None, None);
    let (mut found, mut bad) = (Vec::new(), Vec::new());
    let mut names = fsutil::list_names(&reviews.dir(false)).unwrap_or_default();
    names.sort();
    let topics = (names.iter()).filter_map(|n| layout::review_tracker_topic(n.to_str()?));
    for topic in topics {
        let path = reviews.tracker_path(topic, false);
        match reviews.read(&path) {
            Ok(Some(t)) if t.view.meta.status != "closed" => {
                let v = t.view;
                found.push(ReviewSummary {
                    topic: topic.to_string(),
                    tracker: reviews.rel(&path),
                    next_actor: v.current.next_actor.clone(),
                    next_action: v.current.next_action.clone(),
                    open_issues: v.issues.iter().filter(|i| !i.status.is_settled()).count(),
                    steps: v.steps.len(),
                });
            }
            Ok(_) => {}
            Err(e) => bad.push(Unreadable {
                path: reviews.rel(&path),
                why: e.to_string(),
            }),
        }
    }
    (found, bad)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tracker's view: Claude reviews and Codex implements, with these issues (`ID status
    /// [resolution]`, high, titled `title of ID`) and steps (`action status`, all Claude's).
    pub(crate) fn view_with(issues: &'static str, steps: &'static str) -> View {
        let mut text = "## Meta\n- **Status:** in_progress\n\
- **Participants:** Claude (reviewer), Codex (implementer)\n\
## Current State\n- **Next actor:** Claude\n## Steps\n"
            .to_string();
        let items = |list: &'static str| list.split(',').map(str::trim).filter(|s| !s.is_empty());
        for (n, step) in (1..).zip(items(steps)) {
            let (action, status) = step.split_once(' ').unwrap();
            text += &format!("### {n:02}\n- **Actor:** Claude\n- **Status:** {status}\n");
            text += &format!("- **Action:** {action}\n");
        }
        text += "## Issues\n| ID | Severity | Title | Status | Resolution |\n|-|-|-|-|-|\n";
        for issue in items(issues) {
            let mut part = issue.splitn(3, ' ');
            let (id, status) = (part.next().unwrap(), part.next().unwrap());
            let res = part.next().unwrap_or("");
            text += &format!("| {id} | high | title of {id} | {status} | {res} |\n");
        }
        Tracker::parse(Path::new("t"), &text).unwrap().view.clone()
    }

    #[test]
    fn issues_are_numbered_above_the_highest() {
        assert_eq!(next_issue_number(&view_with("", "")), Some(1));
        let issues = "ISSUE-07 open, issue-03 open, BUG-99 open, ISSUE-x open";
        let v = view_with(issues, "");
        assert_eq!(next_issue_number(&v), Some(8));
    }
}
