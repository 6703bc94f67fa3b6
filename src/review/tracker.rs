//! The tracker file format: parse, view, edit, render.
//!
//! A tracker is kept as the lines it was read from. Parsing finds the seed's sections
//! (`## Meta`, `## Current State`, `## Steps`, `## Issues`, `## Agreements Log`,
//! `## Handoff Prompts`) and reads them into a [`View`]; every edit rewrites or inserts only the
//! lines it is about and then parses again. So rendering a tracker that was not edited gives back
//! its bytes exactly (unknown sections, extra lines, spacing, CRLF line ends included), and an
//! edit changes nothing but what it meant to change.
//!
//! Reading is lenient where the seed is loose (`- **Key:** value` and `- **Key**: value`, case of
//! section names and severities, prose between items, a missing Agreements Log or Handoff
//! Prompts section) and strict where a command depends on the content: a missing required
//! section, a step heading without its number, steps not numbered 01, 02, …, an unknown step or
//! issue status, a duplicate issue id, or an Issues table row with the wrong number of cells is
//! [`Error::Corrupt`] with the 1-based line number.
//!
//! Lines inside fenced code blocks (```` ``` ```` or `~~~`) are never read as headings or fields,
//! so a handoff prompt copied into the tracker inside a fence cannot break its structure.
//!
//! Issues table cells escape `|` as `\|` (and a `\` that would otherwise be read as part of an
//! escape as `\\`); reading undoes both, so any title or resolution survives the table.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::parse::{
    AGREEMENTS, CURRENT, Field, HANDOFFS, ISSUES, Index, META, STEPS, Section, analyze, is_blank,
    renumber_heading,
};
pub use super::parse::{
    count_archived_steps, decode_cell, encode_cell, handoff_section, renumber_steps,
    split_agreement,
};
pub use super::template::{NewTracker, TEMPLATE, new_tracker_text};
use super::{Action, IssueStatus, Severity, StepStatus};
use crate::error::{Error, Result};

/// The heading that must end every output file, and whose body is the prompt for the next actor.
pub const HANDOFF_HEADING: &str = "Handoff Prompt for Next Actor";

/// The Meta value of `Prompt for next actor`.
pub const PROMPT_POINTER: &str = "See Handoff Prompts section below";

/// A participant and its role, from Meta's `Participants` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Participant {
    /// The name as written (`Claude`).
    pub name: String,
    /// `reviewer`, `implementer`, or whatever the tracker says; `None` when not given.
    pub role: Option<String>,
}

/// The Meta section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Meta {
    /// The topic.
    pub topic: Option<String>,
    /// The reviewed path.
    pub target: Option<String>,
    /// `YYYY-MM-DD`.
    pub created: Option<String>,
    /// `YYYY-MM-DD`.
    pub last_updated: Option<String>,
    /// `in_progress` or `closed`.
    pub status: String,
    /// Who takes part, in the order written.
    pub participants: Vec<Participant>,
}

impl Meta {
    /// The participant with `role` (case is ignored).
    pub fn with_role(&self, role: &str) -> Option<&Participant> {
        self.participants.iter().find(|p| {
            p.role
                .as_deref()
                .is_some_and(|r| r.eq_ignore_ascii_case(role))
        })
    }

    /// The role of the participant named `name` (compared case-insensitively).
    pub fn role_of(&self, name: &str) -> Option<&str> {
        self.participants
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .and_then(|p| p.role.as_deref())
    }
}

/// The Current State section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Current {
    /// Exactly one actor, or `none` once closed.
    pub next_actor: String,
    /// What they are to do.
    pub next_action: Option<String>,
    /// Where their prompt is.
    pub prompt: Option<String>,
}

/// One `### NN` entry of the Steps section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The step number (`01` → 1).
    pub number: u32,
    /// Who owns it.
    pub actor: String,
    /// Where it stands.
    pub status: StepStatus,
    /// What it does.
    pub action: Option<Action>,
    /// What it read.
    pub input: Option<String>,
    /// What it wrote.
    pub output: Option<String>,
    /// What it did, briefly.
    pub summary: Option<String>,
    /// Who comes next.
    pub next: Option<String>,
}

/// One row of the Issues table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// `ISSUE-NN`.
    pub id: String,
    /// critical, high, medium or low.
    pub severity: Severity,
    /// What the problem is.
    pub title: String,
    /// Where it stands.
    pub status: IssueStatus,
    /// How it was settled.
    pub resolution: Option<String>,
}

/// One line of the Agreements Log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agreement {
    /// The entry as written, without the bullet and the `[DISPUTED]` prefix.
    pub text: String,
    /// The decision: `text` before its last ` - `.
    pub decision: String,
    /// Whose position was adopted: `text` after its last ` - `, when there is one.
    pub adopted: Option<String>,
    /// Marked `[DISPUTED]`.
    pub disputed: bool,
}

/// One `###` entry of the Handoff Prompts section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    /// The heading text.
    pub heading: String,
    /// For whom (`### For gemini (step 02)`).
    pub actor: Option<String>,
    /// For which step.
    pub step: Option<u32>,
    /// The prompt (the inside of its fence when fenced).
    pub text: String,
}

/// Everything a tracker says, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct View {
    /// Meta.
    pub meta: Meta,
    /// Current State.
    pub current: Current,
    /// The `Note: Steps 01-10 archived to …` line, when steps were archived.
    pub steps_note: Option<String>,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// Issues in table order.
    pub issues: Vec<Issue>,
    /// Agreements in order.
    pub agreements: Vec<Agreement>,
    /// Handoff prompts in order.
    pub handoff_prompts: Vec<Prompt>,
}

impl View {
    /// The open (planned or in-progress) step, when the last step is one.
    pub fn open_step(&self) -> Option<&Step> {
        self.steps.last().filter(|s| s.status.is_open())
    }

    /// The stored prompt for `actor` and step `number`, if any.
    pub fn prompt_for(&self, actor: &str, number: u32) -> Option<&Prompt> {
        self.handoff_prompts.iter().rev().find(|p| {
            p.step == Some(number)
                && p.actor
                    .as_deref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(actor))
        })
    }
}

/// A tracker: its lines as read, and what they say.
#[derive(Debug, Clone)]
pub struct Tracker {
    path: PathBuf,
    lines: Vec<String>,
    final_newline: bool,
    crlf: bool,
    index: Index,
    view: View,
}

impl Tracker {
    /// Parse the text of the tracker at `path` (the path is only used in error messages).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] with the line number when the text is not a tracker in the seed's format.
    pub fn parse(path: &Path, text: &str) -> Result<Tracker> {
        let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
        let final_newline = text.ends_with('\n');
        if final_newline {
            lines.pop();
        }
        let crlf = lines.first().is_some_and(|l| l.ends_with('\r'));
        let (index, view) = analyze(path, &lines)?;
        Ok(Tracker {
            path: path.to_path_buf(),
            lines,
            final_newline,
            crlf,
            index,
            view,
        })
    }

    /// What the tracker says.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The file it was read from (or will be written to).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Point the tracker at another file (when it moves to `closed/`).
    pub fn set_path(&mut self, path: PathBuf) {
        self.path = path;
    }

    /// The text, byte for byte as read except for the edits made.
    pub fn render(&self) -> String {
        let mut out = self.lines.join("\n");
        if self.final_newline {
            out.push('\n');
        }
        out
    }

    fn reindex(&mut self) -> Result<()> {
        let (index, view) = analyze(&self.path, &self.lines).map_err(|e| Error::Failed {
            message: format!("an edit of `{}` went wrong: {e}", self.path.display()),
        })?;
        self.index = index;
        self.view = view;
        Ok(())
    }

    fn eol(&self, line: String) -> String {
        if self.crlf { line + "\r" } else { line }
    }

    fn insert(&mut self, at: usize, block: Vec<String>) {
        let block: Vec<String> = block.into_iter().map(|l| self.eol(l)).collect();
        self.lines.splice(at..at, block);
    }

    fn section(&self, name: &str) -> Option<&Section> {
        self.index.sections.iter().find(|s| s.name == name)
    }

    /// Rewrite the value of a field line, keeping everything before it (indent, bullet, key).
    fn set_value(&mut self, f: &Field, value: &str) {
        let old = &self.lines[f.line];
        let cr = if old.ends_with('\r') { "\r" } else { "" };
        let head = old[..f.value_at].trim_end();
        self.lines[f.line] = if value.is_empty() {
            format!("{head}{cr}")
        } else {
            format!("{head} {value}{cr}")
        };
    }

    /// Set fields of one block (Meta, Current State or a step), adding missing ones after the
    /// block's last field.
    fn set_fields(
        &mut self,
        fields: &[Field],
        fallback: usize,
        values: &[(&str, &str)],
    ) -> Result<()> {
        let mut extra = Vec::new();
        for (key, value) in values {
            match fields.iter().find(|f| f.key.eq_ignore_ascii_case(key)) {
                Some(f) => self.set_value(f, value),
                None => extra.push(field_line(key, value)),
            }
        }
        if !extra.is_empty() {
            let at = fields.iter().map(|f| f.line + 1).max().unwrap_or(fallback);
            self.insert(at, extra);
        }
        self.reindex()
    }

    /// Set Meta fields (`Last updated`, `Status`, …).
    ///
    /// # Errors
    ///
    /// [`Error::Failed`] if the edit left a tracker that no longer parses (a bug).
    pub fn set_meta(&mut self, values: &[(&str, &str)]) -> Result<()> {
        let fields = self.index.meta.clone();
        let fallback = self.section(META).map_or(0, |s| s.heading + 1);
        self.set_fields(&fields, fallback, values)
    }

    /// Set Current State fields (`Next actor`, `Next action`).
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn set_current(&mut self, values: &[(&str, &str)]) -> Result<()> {
        let fields = self.index.current.clone();
        let fallback = self.section(CURRENT).map_or(0, |s| s.heading + 1);
        self.set_fields(&fields, fallback, values)
    }

    /// Set fields of step `number` (`Status`, `Output`, …).
    ///
    /// # Errors
    ///
    /// [`Error::Failed`] when there is no such step.
    pub fn set_step(&mut self, number: u32, values: &[(&str, &str)]) -> Result<()> {
        let span = self
            .index
            .steps
            .get((number as usize).wrapping_sub(1))
            .cloned()
            .ok_or_else(|| Error::Failed {
                message: format!("`{}` has no step {number:02}", self.path.display()),
            })?;
        self.set_fields(&span.fields, span.heading + 1, values)
    }

    /// Append a step after the last one.
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn push_step(&mut self, step: &Step) -> Result<()> {
        let mut block = vec![format!("### {:02}", step.number)];
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        block.push(field_line("Actor", &step.actor));
        block.push(field_line("Status", step.status.as_str()));
        block.push(field_line(
            "Action",
            step.action.map(Action::as_str).unwrap_or_default(),
        ));
        block.push(field_line("Input", &opt(&step.input)));
        block.push(field_line("Output", &opt(&step.output)));
        block.push(field_line("Summary", &opt(&step.summary)));
        block.push(field_line("Next", &opt(&step.next)));
        self.append_to_section(STEPS, block)
    }

    /// Insert `block` after the last non-blank line of a section, a blank line before it, and a
    /// blank line after it when another section follows at once.
    fn append_to_section(&mut self, name: &str, block: Vec<String>) -> Result<()> {
        let sec = self.ensure_section(name)?;
        let last = (sec.heading..sec.end)
            .rev()
            .find(|&i| !is_blank(&self.lines[i]))
            .unwrap_or(sec.heading);
        let at = last + 1;
        let mut block = std::iter::once(String::new())
            .chain(block)
            .collect::<Vec<_>>();
        if at == sec.end && at < self.lines.len() {
            block.push(String::new());
        }
        self.insert(at, block);
        self.reindex()
    }

    /// The section `name`, appended at the end of the file when missing (only the optional ones
    /// can be missing: the others are required by the parser).
    fn ensure_section(&mut self, name: &str) -> Result<Section> {
        if let Some(s) = self.section(name) {
            return Ok(s.clone());
        }
        let title = match name {
            AGREEMENTS => "Agreements Log",
            HANDOFFS => "Handoff Prompts",
            other => other,
        };
        let mut block = Vec::new();
        if self.lines.last().is_some_and(|l| !is_blank(l)) {
            block.push(String::new());
        }
        block.push(format!("## {title}"));
        if name == AGREEMENTS {
            block.push("Key positions agreed between LLMs:".to_string());
        }
        let at = self.lines.len();
        self.insert(at, block);
        self.final_newline = true;
        self.reindex()?;
        self.section(name).cloned().ok_or_else(|| Error::Failed {
            message: format!("cannot add a section to `{}`", self.path.display()),
        })
    }

    /// Add a row to the Issues table (creating the table when the section has none).
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn add_issue(&mut self, issue: &Issue) -> Result<()> {
        let Some(table) = self.index.table.clone() else {
            let block = vec![
                "| ID | Severity | Title | Status | Resolution |".to_string(),
                "|----|----------|-------|--------|------------|".to_string(),
                issue_row(issue),
            ];
            return self.append_to_section(ISSUES, block);
        };
        let mut cells = vec![String::new(); table.ncols];
        let values = issue_cells(issue);
        for (i, col) in table.cols.iter().enumerate() {
            cells[*col] = values[i].clone();
        }
        let row = render_row(&cells);
        self.insert(table.end, vec![row]);
        self.reindex()
    }

    /// Update the status (and resolution, when given) of issue `id`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] when there is no such issue.
    pub fn set_issue(
        &mut self,
        id: &str,
        status: IssueStatus,
        resolution: Option<&str>,
    ) -> Result<()> {
        let table = self.index.table.clone();
        let Some((table, row)) = table.and_then(|t| {
            let row = t
                .rows
                .iter()
                .find(|r| decode_cell(&r.cells[t.cols[0]]).eq_ignore_ascii_case(id))?
                .clone();
            Some((t, row))
        }) else {
            return Err(Error::bad_input(format!(
                "`{}` has no issue `{id}`",
                self.path.display()
            )));
        };
        let mut cells = row.cells.clone();
        cells[table.cols[3]] = encode_cell(status.as_str());
        if let Some(r) = resolution {
            cells[table.cols[4]] = encode_cell(r);
        }
        let cr = if self.lines[row.line].ends_with('\r') {
            "\r"
        } else {
            ""
        };
        self.lines[row.line] = format!("{}{cr}", render_row(&cells));
        self.reindex()
    }

    /// Append a line to the Agreements Log.
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn add_agreement(&mut self, text: &str, disputed: bool) -> Result<()> {
        let sec = self.ensure_section(AGREEMENTS)?;
        let line = format!("- {}{text}", if disputed { "[DISPUTED] " } else { "" });
        let at = match self.index.agreements.last() {
            Some(&l) => l + 1,
            None => {
                (sec.heading..sec.end)
                    .rev()
                    .find(|&i| !is_blank(&self.lines[i]))
                    .unwrap_or(sec.heading)
                    + 1
            }
        };
        let mut block = vec![line];
        if at == sec.end && at < self.lines.len() {
            block.push(String::new());
        }
        self.insert(at, block);
        self.reindex()
    }

    /// Store the prompt for `actor`'s step `number`, replacing an earlier prompt for that actor.
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn set_prompt(&mut self, actor: &str, number: u32, text: &str) -> Result<()> {
        let mut block = vec![format!("### For {actor} (step {number:02})")];
        let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
        block.push(format!("{fence}text"));
        block.extend(text.lines().map(|l| l.trim_end_matches('\r').to_string()));
        block.push(fence);
        let old = self.view.handoff_prompts.iter().position(|p| {
            p.actor
                .as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case(actor))
        });
        match old {
            Some(i) => {
                let span = self.index.prompts[i].clone();
                let last = (span.heading..span.end)
                    .rev()
                    .find(|&i| !is_blank(&self.lines[i]))
                    .unwrap_or(span.heading);
                let block: Vec<String> = block.into_iter().map(|l| self.eol(l)).collect();
                self.lines.splice(span.heading..=last, block);
                self.reindex()
            }
            None => self.append_to_section(HANDOFFS, block),
        }
    }

    /// Remove the first `count` steps and renumber the rest from 01 (step and prompt headings).
    /// Returns the removed steps' lines, as written.
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn take_first_steps(&mut self, count: usize) -> Result<Vec<String>> {
        let spans = self.index.steps.clone();
        if spans.len() <= count {
            return Ok(Vec::new());
        }
        let (from, to) = (spans[0].heading, spans[count].heading);
        let removed = to - from;
        let shift = u32::try_from(count).unwrap_or(u32::MAX);
        // Renumber on the old indices first: the parser insists on steps numbered from 01.
        for (i, span) in spans[count..].iter().enumerate() {
            let new = u32::try_from(i + 1).unwrap_or(u32::MAX);
            self.lines[span.heading] = renumber_heading(&self.lines[span.heading], new);
        }
        for (i, p) in self.view.handoff_prompts.iter().enumerate() {
            if let (Some(actor), Some(step)) = (&p.actor, p.step)
                && step > shift
            {
                let line = self.index.prompts[i].heading;
                let cr = if self.lines[line].ends_with('\r') {
                    "\r"
                } else {
                    ""
                };
                self.lines[line] = format!("### For {actor} (step {:02}){cr}", step - shift);
            }
        }
        let taken: Vec<String> = self.lines.drain(from..from + removed).collect();
        self.reindex()?;
        Ok(taken
            .into_iter()
            .map(|l| l.trim_end_matches('\r').to_string())
            .collect())
    }

    /// Set the note line at the top of the Steps section.
    ///
    /// # Errors
    ///
    /// As [`Tracker::set_meta`].
    pub fn set_steps_note(&mut self, note: &str) -> Result<()> {
        if let Some(line) = self.index.note {
            let cr = if self.lines[line].ends_with('\r') {
                "\r"
            } else {
                ""
            };
            self.lines[line] = format!("{note}{cr}");
            return self.reindex();
        }
        let sec = self.section(STEPS).cloned().ok_or_else(|| Error::Failed {
            message: "no Steps section".into(),
        })?;
        let mut at = sec.heading + 1;
        if at < sec.end && is_blank(&self.lines[at]) {
            at += 1;
        }
        self.insert(at, vec![note.to_string(), String::new()]);
        self.reindex()
    }
}

fn field_line(key: &str, value: &str) -> String {
    if value.is_empty() {
        format!("- **{key}:**")
    } else {
        format!("- **{key}:** {value}")
    }
}

fn issue_cells(issue: &Issue) -> [String; 5] {
    [
        encode_cell(&issue.id),
        encode_cell(issue.severity.as_str()),
        encode_cell(&issue.title),
        encode_cell(issue.status.as_str()),
        encode_cell(issue.resolution.as_deref().unwrap_or("")),
    ]
}

fn issue_row(issue: &Issue) -> String {
    render_row(&issue_cells(issue))
}

pub(super) fn render_row(cells: &[String]) -> String {
    let mut out = String::from("|");
    for c in cells {
        if c.is_empty() {
            out.push_str("  |");
        } else {
            out.push(' ');
            out.push_str(c);
            out.push_str(" |");
        }
    }
    out
}

pub(super) fn longest_run(text: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == ch { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::parse::split_row;
    use proptest::prelude::*;

    /// A tracker as a person following the seed would write it: the seed's snippets, prose,
    /// an extra section, odd spacing, the other field style, and a filled table.
    pub(crate) const HAND: &str = "# Review: regional federalism

Some words before the first section.

## Meta
- **Topic:** regional-federalism-design
- **Target:** docs/design/
- **Created:** 2026-01-20
- **Last updated:** 2026-01-27
- **Status:** in_progress
- **Participants:** Claude (reviewer), Codex (implementer)
- **Extra:** kept as is

## Current State
- **Next actor:** Codex
- **Next action:**   implement the agreed changes
- **Prompt for next actor:** See Handoff Prompts section below

## Steps
### 01
- **Actor:** Claude
- **Status:** done
- **Action:** review
- **Input:** docs/design/
- **Output:** .metadata/reviews/llms/claude/regional-federalism-design_review_2026_01_20.md
- **Summary:** Found 4 issues; see `ISSUE-01`..`ISSUE-04` | with a pipe
- **Next:** Codex
A free note under the step.

### 02 - response
* **Actor**: Codex
* **Status**: done
* **Action**: response
* **Input**: .metadata/reviews/llms/claude/regional-federalism-design_review_2026_01_20.md
* **Output**: .metadata/review-responses/llms/codex/regional-federalism-design-review/02_response_to_claude_agree_2026_01_21.md
* **Summary**: Agreed with all but ISSUE-03
* **Next**: Claude

### 03
- **Actor:** Codex
- **Status:** planned
- **Action:** implement
- **Input:**
- **Output:**
- **Summary:**
- **Next:**

## Issues
Table tracking all identified problems.

| ID | Severity | Title | Status | Resolution |
|----|----------|-------|--------|------------|
| ISSUE-01 | critical | Elections \\| NPV | resolved | Updated elections design for NPV |
| ISSUE-02 | High | Armed forces `two-key` | open |  |
| ISSUE-03 | medium | Judicial timelines | escalate | |
| ISSUE-04 | low | C:\\path stays | wontfix | not needed |

## Agreements Log
Key positions agreed between LLMs:
- Keep the NPV compact - Claude's position adopted
- [DISPUTED] Judicial timelines - escalated to user, resolved as X

## Notes of our own
Anything at all.

## Handoff Prompts

### For Codex (step 03)
```text
You are Codex. Read the tracker at .metadata/reviews/active/regional-federalism-design-tracker.md.
## Not a heading: inside the fence
```
";

    fn hand() -> Tracker {
        Tracker::parse(Path::new("t.md"), HAND).unwrap()
    }

    #[test]
    fn a_hand_written_tracker_round_trips_byte_for_byte() {
        let t = hand();
        assert_eq!(t.render(), HAND);
        let v = t.view();
        assert_eq!(v.meta.topic.as_deref(), Some("regional-federalism-design"));
        assert_eq!(v.meta.participants[1].name, "Codex");
        assert_eq!(v.meta.role_of("codex"), Some("implementer"));
        assert_eq!(v.current.next_actor, "Codex");
        assert_eq!(
            v.current.next_action.as_deref(),
            Some("implement the agreed changes")
        );
        assert_eq!(v.steps.len(), 3);
        assert_eq!(v.steps[1].actor, "Codex");
        assert_eq!(v.steps[1].status, StepStatus::Done);
        assert_eq!(
            v.steps[0].summary.as_deref(),
            Some("Found 4 issues; see `ISSUE-01`..`ISSUE-04` | with a pipe")
        );
        assert_eq!(v.open_step().unwrap().number, 3);
        assert_eq!(v.issues.len(), 4);
        assert_eq!(v.issues[0].title, "Elections | NPV");
        assert_eq!(v.issues[1].severity, Severity::High);
        assert_eq!(v.issues[1].resolution, None);
        assert_eq!(v.issues[3].title, "C:\\path stays");
        assert_eq!(v.agreements.len(), 2);
        assert!(v.agreements[1].disputed);
        assert_eq!(
            v.agreements[0].adopted.as_deref(),
            Some("Claude's position adopted")
        );
        assert_eq!(v.handoff_prompts.len(), 1);
        assert_eq!(v.handoff_prompts[0].step, Some(3));
        assert!(
            v.handoff_prompts[0]
                .text
                .ends_with("## Not a heading: inside the fence")
        );
    }

    #[test]
    fn an_edit_changes_only_its_lines() {
        let mut t = hand();
        t.set_issue("ISSUE-02", IssueStatus::Resolved, Some("two-key | done"))
            .unwrap();
        t.set_meta(&[("Last updated", "2026-01-28")]).unwrap();
        let out = t.render();
        let diff: Vec<(&str, &str)> = HAND
            .lines()
            .zip(out.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(
            diff,
            vec![
                (
                    "- **Last updated:** 2026-01-27",
                    "- **Last updated:** 2026-01-28"
                ),
                (
                    "| ISSUE-02 | High | Armed forces `two-key` | open |  |",
                    "| ISSUE-02 | High | Armed forces `two-key` | resolved | two-key \\| done |"
                ),
            ]
        );
        assert_eq!(HAND.lines().count(), out.lines().count());
        let again = Tracker::parse(Path::new("t.md"), &out).unwrap();
        assert_eq!(
            again.view().issues[1].resolution.as_deref(),
            Some("two-key | done")
        );
    }

    #[test]
    fn the_other_field_style_is_edited_in_place() {
        let mut t = hand();
        t.set_step(2, &[("Summary", "changed")]).unwrap();
        assert!(t.render().contains("* **Summary**: changed\n"));
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let crlf = HAND.replace('\n', "\r\n");
        let mut t = Tracker::parse(Path::new("t.md"), &crlf).unwrap();
        assert_eq!(t.render(), crlf);
        t.add_agreement("New point - both", false).unwrap();
        t.set_meta(&[("Status", "closed")]).unwrap();
        let out = t.render();
        assert!(out.contains("- New point - both\r\n"));
        assert!(out.contains("- **Status:** closed\r\n"));
        assert!(!out.replace("\r\n", "").contains('\n'));
    }

    #[test]
    fn corrupt_trackers_name_the_line() {
        let cases = [
            (HAND.replace("### 02 - response", "### two"), 30),
            (HAND.replace("### 03", "### 04"), 39),
            (
                HAND.replace("- **Status:** planned", "- **Status:** maybe"),
                41,
            ),
            (
                HAND.replace("| ISSUE-03 | medium |", "| ISSUE-01 | medium |"),
                55,
            ),
            (
                HAND.replace("| ISSUE-04 | low |", "| ISSUE-04 | low | x |"),
                56,
            ),
            (
                HAND.replace("| ISSUE-04 | low |", "| ISSUE-04 | tiny |"),
                56,
            ),
            (HAND.replace("## Agreements Log", "## Meta"), 58),
        ];
        for (text, line) in cases {
            match Tracker::parse(Path::new("t.md"), &text) {
                Err(Error::Corrupt { line: l, .. }) => assert_eq!(l, Some(line), "{text}"),
                other => panic!("expected Corrupt at {line}, got {other:?}"),
            }
        }
        assert!(matches!(
            Tracker::parse(Path::new("t.md"), "# nothing\n"),
            Err(Error::Corrupt { .. })
        ));
        assert!(Tracker::parse(Path::new("t.md"), "\u{0}\u{1}binary").is_err());
    }

    #[test]
    fn the_template_is_not_a_tracker() {
        assert!(Tracker::parse(Path::new("t.md"), TEMPLATE).is_err());
    }

    #[test]
    fn handoff_sections() {
        let p = Path::new("out.md");
        let ok = "# Review\nfindings\n\n## Handoff Prompt for Next Actor\n\nYou are next.\n### Details\nmore\n";
        assert_eq!(
            handoff_section(p, ok).unwrap(),
            "You are next.\n### Details\nmore"
        );
        assert!(handoff_section(p, "# Review\n").is_err());
        assert!(handoff_section(p, "## Handoff Prompt for Next Actor\nx\n## Later\n").is_err());
        assert!(handoff_section(p, "## Handoff Prompt for Next Actor\n\n\n").is_err());
        assert!(handoff_section(p, "```\n## Handoff Prompt for Next Actor\nx\n```\n").is_err());
    }

    #[test]
    fn cells_escape_and_unescape() {
        for s in [
            "a|b",
            "a\\|b",
            "a\\",
            "a\\\\b",
            "C:\\path",
            "|",
            "\\",
            "x \\| y | z",
        ] {
            assert_eq!(decode_cell(&encode_cell(s)), s, "{s:?}");
            let row = render_row(&[encode_cell(s), "x".into()]);
            let cells = split_row(&row).unwrap();
            assert_eq!(cells.len(), 2, "{row}");
            assert_eq!(decode_cell(&cells[0]), s.trim());
        }
    }

    fn fresh() -> Tracker {
        let text = new_tracker_text(&NewTracker {
            topic: "t",
            target: "src/",
            date: "2026-01-28",
            reviewer: "Claude",
            implementer: "Gemini",
            prompt: "Review src/.",
        });
        Tracker::parse(Path::new("t.md"), &text).unwrap()
    }

    #[test]
    fn a_new_tracker_reads_back() {
        let t = fresh();
        let v = t.view();
        assert_eq!(v.current.next_actor, "Claude");
        assert_eq!(v.steps.len(), 1);
        assert_eq!(v.steps[0].status, StepStatus::Planned);
        assert_eq!(v.steps[0].action, Some(Action::Review));
        assert!(v.issues.is_empty());
        assert_eq!(v.prompt_for("claude", 1).unwrap().text, "Review src/.");
        assert_eq!(v.meta.with_role("implementer").unwrap().name, "Gemini");
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        // Markdown, pipes, backslashes, backticks, unicode, and stray newlines.
        proptest::string::string_regex("[a-zA-Z0-9 |\\\\`*_#\\[\\]()<>:.\\-éß\n]{1,40}").unwrap()
    }

    proptest! {
        #[test]
        fn written_values_read_back(
            titles in proptest::collection::vec(text_strategy(), 1..5),
            summaries in proptest::collection::vec(text_strategy(), 1..4),
            agreements in proptest::collection::vec((text_strategy(), any::<bool>()), 0..3),
            prompt in text_strategy(),
        ) {
            let mut t = fresh();
            let mut expect_titles = Vec::new();
            for (i, title) in titles.iter().enumerate() {
                let title = crate::review::one_line(title);
                prop_assume!(!title.is_empty());
                t.add_issue(&Issue {
                    id: format!("ISSUE-{:02}", i + 1),
                    severity: Severity::Low,
                    title: title.clone(),
                    status: IssueStatus::Open,
                    resolution: None,
                }).unwrap();
                expect_titles.push(title);
            }
            t.set_issue("ISSUE-01", IssueStatus::Resolved, Some(&crate::review::one_line(&titles[0]))).unwrap();
            for (i, s) in summaries.iter().enumerate() {
                let s = crate::review::one_line(s);
                let n = u32::try_from(i + 1).unwrap();
                t.set_step(n, &[("Status", "done"), ("Summary", &s)]).unwrap();
                t.push_step(&Step {
                    number: n + 1, actor: "Gemini".into(), status: StepStatus::Planned,
                    action: Some(Action::Response), input: None, output: None, summary: None, next: None,
                }).unwrap();
                prop_assert_eq!(t.view().steps[i].summary.clone(), Some(s).filter(|s| !s.is_empty()));
            }
            for (a, d) in &agreements {
                let a = crate::review::one_line(a);
                prop_assume!(!a.is_empty() && !a.starts_with("[DISPUTED]"));
                t.add_agreement(&a, *d).unwrap();
            }
            t.set_prompt("Gemini", 2, &prompt).unwrap();
            let view = t.view().clone();
            let titles_read: Vec<String> = view.issues.iter().map(|i| i.title.clone()).collect();
            prop_assert_eq!(&titles_read, &expect_titles);
            prop_assert_eq!(view.issues[0].resolution.clone(), Some(expect_titles[0].clone()));
            let texts: Vec<(String, bool)> = view.agreements.iter().map(|a| (a.text.clone(), a.disputed)).collect();
            let expect: Vec<(String, bool)> = agreements.iter().map(|(a, d)| (crate::review::one_line(a), *d)).collect();
            prop_assert_eq!(texts, expect);
            let trimmed: Vec<&str> = prompt.lines().map(str::trim_end).collect();
            let stored = view.prompt_for("gemini", 2).unwrap().text.clone();
            let got = stored.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
            let want = trimmed.join("\n");
            prop_assert_eq!(got.trim(), want.trim());
            // parse(render(x)) == x, and render(parse(text)) == text.
            let text = t.render();
            let again = Tracker::parse(Path::new("t.md"), &text).unwrap();
            prop_assert_eq!(again.view(), &view);
            prop_assert_eq!(again.render(), text);
        }

        #[test]
        fn extra_lines_anywhere_survive(at in 0usize..80, extra in "[a-zA-Z0-9 .,:!?-]{0,30}") {
            let mut lines: Vec<&str> = HAND.lines().collect();
            let at = at.min(lines.len());
            lines.insert(at, &extra);
            let text = lines.join("\n") + "\n";
            if let Ok(t) = Tracker::parse(Path::new("t.md"), &text) {
                prop_assert_eq!(t.render(), text);
            }
        }
    }
}
