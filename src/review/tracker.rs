//! A tracker file held as the lines it was read from: read it, edit it, render it.
//!
//! [`Tracker::parse`] keeps the lines and asks `super::parse` where each part is and what it
//! says (a [`View`]); every edit rewrites or inserts only the lines it is about, in the
//! file's own style (field spelling, CRLF line ends), and then parses again. So rendering a
//! tracker that was not edited gives back its bytes exactly (unknown sections, extra lines,
//! spacing, CRLF line ends included), and an edit changes nothing but what it meant to change.
//!
//! Reading is lenient where the seed is loose (`- **Key:** value` and `- **Key**: value`, case of
//! section names and severities, prose between items, a missing Agreements Log or Handoff
//! Prompts section) and strict where a command depends on the content (see `super::parse`).
//! Text is written through `super::syntax`: a handoff prompt goes inside a fence longer than
//! any run of backticks in it, and Issues cells are escaped, so no title, resolution or prompt
//! can break the file's structure. An edit that would leave a tracker coord cannot read back is
//! [`Error::Failed`] (a bug), and the caller writes nothing.

use std::path::{Path, PathBuf};

use super::model::{Issue, Step, View};
use super::parse::{AGREEMENTS, CURRENT, HANDOFFS, ISSUES, Index, META, STEPS, Section, analyze};
use super::syntax::{
    Field, decode_cell, encode_cell, fence_for, field_line, is_blank, render_row, renumber_heading,
};
use super::{Action, IssueStatus};
use crate::error::{Error, Result};

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
        let fence = fence_for(text);
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

#[cfg(test)]
mod tests;
