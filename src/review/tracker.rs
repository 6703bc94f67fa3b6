//! A tracker held as the lines it was read from: parse, edit, render; and a new one's text.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::markdown::{
    AGREEMENTS, HANDOFFS, ISSUES, Index, PROMPT_POINTER, STEPS, Section, analyze, encode_cell,
    fence_for, field_line, render_row, renumber_heading,
};
use super::{Action, Issue, IssueStatus, Prompt, View};
use crate::error::{Error, Result};

/// The fields of which part [`Tracker::set`] edits.
#[derive(Debug)]
pub(crate) enum Block {
    Meta,
    Current,
    Step(u32),
}

#[derive(Debug)]
pub(crate) struct Tracker {
    /// The file it is written to (moved to `closed/` on close).
    pub(crate) path: PathBuf,
    lines: Vec<String>,
    final_newline: bool,
    crlf: bool,
    index: Index,
    pub(crate) view: View,
}

impl Tracker {
    /// Parse the text of the tracker at `path` (the path only names it in errors).
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Tracker> {
        let final_newline = text.ends_with('\n');
        let body = text.strip_suffix('\n').unwrap_or(text);
        let lines: Vec<String> = body.split('\n').map(str::to_string).collect();
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

    pub(crate) fn render(&self) -> String {
        self.lines.join("\n") + if self.final_newline { "\n" } else { "" }
    }

    fn reindex(&mut self) -> Result<()> {
        let path = self.path.display();
        let (index, view) = analyze(&self.path, &self.lines)
            .map_err(|e| Error::failed(format!("an edit of `{path}` went wrong: {e}")))?;
        (self.index, self.view) = (index, view);
        Ok(())
    }

    fn splice(&mut self, range: Range<usize>, block: Vec<String>) -> Result<()> {
        let eol = if self.crlf { "\r" } else { "" };
        self.lines.splice(range, block.into_iter().map(|l| l + eol));
        self.reindex()
    }

    fn last_text(&self, from: usize, to: usize) -> usize {
        let text = |i: &usize| !self.lines[*i].trim().is_empty();
        (from..to).rev().find(text).unwrap_or(from)
    }

    /// Insert `block` at `at` in `sec`, a blank line after it when a section follows at once.
    fn insert_in(&mut self, sec: &Section, at: usize, mut block: Vec<String>) -> Result<()> {
        if at == sec.end && at < self.lines.len() {
            block.push(String::new());
        }
        self.splice(at..at, block)
    }

    fn find(&self, name: &str) -> Option<Section> {
        self.index.sections.iter().find(|s| s.name == name).cloned()
    }

    /// The section `name`, appended when missing (only optional ones can be).
    fn section(&mut self, name: &str) -> Result<Section> {
        if let Some(s) = self.find(name) {
            return Ok(s);
        }
        let mut block = Vec::new();
        if self.lines.last().is_some_and(|l| !l.trim().is_empty()) {
            block.push(String::new());
        }
        let head = match name {
            AGREEMENTS => "## Agreements Log\nKey positions agreed between LLMs:",
            _ => "## Handoff Prompts",
        };
        block.extend(head.lines().map(String::from));
        self.final_newline = true;
        self.splice(self.lines.len()..self.lines.len(), block)?;
        self.find(name).ok_or_else(|| {
            Error::failed(format!("cannot add a section to `{}`", self.path.display()))
        })
    }

    fn append_to(&mut self, name: &str, block: Vec<String>) -> Result<()> {
        let sec = self.section(name)?;
        let at = self.last_text(sec.heading, sec.end) + 1;
        self.insert_in(&sec, at, [vec![String::new()], block].concat())
    }

    /// Set fields of Meta, Current State or a step, adding missing ones after its last field (each
    /// has one: the parser requires `Status`, `Next actor`, and a step's `Actor` and `Status`).
    pub(crate) fn set(&mut self, block: Block, values: &[(&str, &str)]) -> Result<()> {
        let fields = match block {
            Block::Meta => self.index.meta.clone(),
            Block::Current => self.index.current.clone(),
            Block::Step(n) => {
                let step = self.view.steps.get((n as usize).wrapping_sub(1));
                let step = step.ok_or_else(|| {
                    Error::failed(format!("`{}` has no step {n:02}", self.path.display()))
                })?;
                step.fields.clone()
            }
        };
        let mut extra = Vec::new();
        for (key, value) in values {
            match fields.iter().find(|f| f.key.eq_ignore_ascii_case(key)) {
                Some(f) => {
                    let line = &mut self.lines[f.line];
                    put(line, field_line(&line[..f.value_at], value));
                }
                None => extra.push(field_line(&format!("- **{key}:**"), value)),
            }
        }
        let at = fields.iter().map(|f| f.line + 1).max().unwrap_or_default();
        self.splice(at..at, extra)
    }

    /// Plan the next step, numbered after the last.
    pub(crate) fn push_step(&mut self, actor: &str, action: Action, input: &str) -> Result<()> {
        let number = self.view.steps.len() + 1;
        let fields = [
            ("Actor", actor),
            ("Status", "planned"),
            ("Action", action.as_str()),
            ("Input", input),
            ("Output", ""),
            ("Summary", ""),
            ("Next", ""),
        ];
        let mut block = vec![format!("### {number:02}")];
        block.extend(fields.map(|(k, v)| field_line(&format!("- **{k}:**"), v)));
        self.append_to(STEPS, block)
    }

    /// Add a row to the Issues table (creating the table when the section has none).
    pub(crate) fn add_issue(&mut self, issue: &Issue) -> Result<()> {
        let (severity, status) = (issue.severity.as_str(), issue.status.as_str());
        let resolution = issue.resolution.as_deref().unwrap_or("");
        let values = [&*issue.id, severity, &issue.title, status, resolution].map(encode_cell);
        let Some(table) = &self.index.table else {
            let block = ISSUES_HEADER.lines().map(String::from);
            return self.append_to(ISSUES, block.chain([render_row(&values)]).collect());
        };
        let mut cells = vec![String::new(); table.ncols];
        for (value, &col) in values.into_iter().zip(&table.cols) {
            cells[col] = value;
        }
        let at = table.end;
        self.splice(at..at, vec![render_row(&cells)])
    }

    /// Update the status (and resolution, when given) of issue `id`; returns it updated.
    pub(crate) fn set_issue(
        &mut self,
        id: &str,
        status: IssueStatus,
        resolution: Option<&str>,
    ) -> Result<Issue> {
        // The table's rows and the view's issues are read together: row `k` is issue `k`.
        let same = |i: &Issue| i.id.eq_ignore_ascii_case(id);
        let k = self.view.issues.iter().position(same);
        let (Some(k), Some(table)) = (k, &self.index.table) else {
            let path = self.path.display();
            return Err(Error::bad_input(format!("`{path}` has no issue `{id}`")));
        };
        let (line, mut cells) = table.rows[k].clone();
        cells[table.cols[3]] = encode_cell(status.as_str());
        if let Some(r) = resolution {
            cells[table.cols[4]] = encode_cell(r);
        }
        put(&mut self.lines[line], render_row(&cells));
        self.reindex()?;
        Ok(self.view.issues[k].clone())
    }

    pub(crate) fn add_agreement(&mut self, text: &str, disputed: bool) -> Result<()> {
        let sec = self.section(AGREEMENTS)?;
        let last = self.view.agreements.last().map(|a| a.line);
        let at = last.unwrap_or_else(|| self.last_text(sec.heading, sec.end)) + 1;
        let mark = if disputed { "[DISPUTED] " } else { "" };
        self.insert_in(&sec, at, vec![format!("- {mark}{text}")])
    }

    /// Store the prompt for `actor`'s step `number`, replacing an earlier prompt for that actor.
    pub(crate) fn set_prompt(&mut self, actor: &str, number: u32, text: &str) -> Result<()> {
        let fence = fence_for(text);
        let heading = format!("### For {actor} (step {number:02})");
        let mut block = vec![heading, format!("{fence}text")];
        block.extend(text.lines().map(|l| l.trim_end_matches('\r').to_string()));
        block.push(fence);
        let mine = |p: &&Prompt| p.is_for(actor);
        match self.view.handoff_prompts.iter().find(mine).map(|p| p.lines) {
            Some((heading, end)) => {
                let last = self.last_text(heading, end);
                self.splice(heading..last + 1, block)
            }
            None => self.append_to(HANDOFFS, block),
        }
    }

    /// Remove (and return) the first `count` steps, renumbering the rest and their prompts from 01.
    pub(crate) fn take_first_steps(&mut self, count: usize) -> Result<Vec<String>> {
        let heads: Vec<usize> = self.view.steps.iter().map(|s| s.at).collect();
        if heads.len() <= count {
            return Ok(Vec::new());
        }
        // Renumber on the old indices first: the parser insists on steps numbered from 01.
        for (i, &h) in heads[count..].iter().enumerate() {
            self.lines[h] = renumber_heading(&self.lines[h], i as u32 + 1);
        }
        let shift = count as u32;
        for p in &self.view.handoff_prompts {
            if let (Some(actor), Some(step)) = (&p.actor, p.step)
                && step > shift
            {
                let text = format!("### For {actor} (step {:02})", step - shift);
                put(&mut self.lines[p.lines.0], text);
            }
        }
        let taken: Vec<String> = self.lines.drain(heads[0]..heads[count]).collect();
        self.reindex()?;
        let no_cr = |l: String| l.trim_end_matches('\r').to_string();
        Ok(taken.into_iter().map(no_cr).collect())
    }

    pub(crate) fn set_steps_note(&mut self, note: &str) -> Result<()> {
        if let Some(line) = self.index.note {
            put(&mut self.lines[line], note.to_string());
            return self.reindex();
        }
        let sec = self.section(STEPS)?;
        let mut at = sec.heading + 1;
        if at < sec.end && self.lines[at].trim().is_empty() {
            at += 1;
        }
        self.splice(at..at, vec![note.to_string(), String::new()])
    }
}

/// Replace a line's text, keeping its `\r`.
fn put(line: &mut String, text: String) {
    let cr = line.ends_with('\r').then_some("\r");
    *line = text + cr.unwrap_or_default();
}

const ISSUES_HEADER: &str = "| ID | Severity | Title | Status | Resolution |\n|----|----------|-------|--------|------------|";

/// The text of a new tracker, step 01 planned for the reviewer; `date` is `YYYY-MM-DD`.
pub(crate) fn new_tracker_text(
    topic: &str,
    target: &str,
    date: &str,
    reviewer: &str,
    implementer: &str,
) -> String {
    format!(
        "# Review Tracker: {topic}\n\n## Meta\n- **Topic:** {topic}\n- **Target:** {target}\n\
- **Created:** {date}\n- **Last updated:** {date}\n- **Status:** in_progress\n\
- **Participants:** {reviewer} (reviewer), {implementer} (implementer)\n\n\
## Current State\n- **Next actor:** {reviewer}\n- **Next action:** review (step 01)\n\
- **Prompt for next actor:** {PROMPT_POINTER}\n\n## Steps\n\n### 01\n- **Actor:** {reviewer}\n\
- **Status:** planned\n- **Action:** review\n- **Input:** {target}\n- **Output:**\n\
- **Summary:**\n- **Next:**\n\n## Issues\n{ISSUES_HEADER}\n\n## Agreements Log\n\
Key positions agreed between LLMs:\n\n## Handoff Prompts\n"
    )
}

/// The seed's tracker template (`templates/review-tracker-template.md`), placeholders and all.
pub(crate) const TEMPLATE: &str = include_str!("template.md");

#[cfg(test)]
mod tests;
