//! Reading a tracker: which lines hold its sections, fields, steps, Issues rows, agreements and
//! prompts, and what they say ([`View`]), so [`super::tracker::Tracker`] can edit just those
//! lines.
//!
//! [`analyze`] finds the `##` sections, checks the four required ones are there (Meta, Current
//! State, Steps, Issues), then hands each section to its own reader: [`meta`], [`current`],
//! [`steps`], [`issues`], [`agreements`], [`handoffs`]. Each reader returns the lines it read
//! (for the [`Index`]) and their meaning (for the [`View`]).
//!
//! Invariants: lines inside fenced code blocks are never read as headings or fields (see
//! [`super::syntax`]); a tracker coord could not edit safely (a missing required section, steps
//! not numbered 01, 02, …, an unknown status, a duplicate issue id, an Issues row with the wrong
//! number of cells) is [`Error::Corrupt`] with its 1-based line number, never a guess.

mod agreements;
mod current;
mod handoffs;
mod issues;
mod meta;
mod steps;

use std::path::Path;

pub(crate) use handoffs::handoff_section;

use super::model::View;
use super::syntax::{Field, fenced, heading, parse_field};
use crate::error::{Error, Result};

pub(crate) const META: &str = "meta";
pub(crate) const CURRENT: &str = "current state";
pub(crate) const STEPS: &str = "steps";
pub(crate) const ISSUES: &str = "issues";
pub(crate) const AGREEMENTS: &str = "agreements log";
pub(crate) const HANDOFFS: &str = "handoff prompts";

/// A `#` or `##` section: from its heading to the next one (or the end of the file).
#[derive(Debug, Clone)]
pub(crate) struct Section {
    /// The `##` title in lower case; empty for a `#` title.
    pub(crate) name: String,
    pub(crate) heading: usize,
    pub(crate) end: usize,
}

/// A `### NN` step entry and its fields.
#[derive(Debug, Clone)]
pub(crate) struct StepSpan {
    pub(crate) heading: usize,
    pub(crate) fields: Vec<Field>,
}

/// One Issues row: its line and its raw (still escaped) cells.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) line: usize,
    pub(crate) cells: Vec<String>,
}

/// The Issues table.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// Where ID, Severity, Title, Status and Resolution are among the columns.
    pub(crate) cols: [usize; 5],
    pub(crate) ncols: usize,
    pub(crate) rows: Vec<Row>,
    /// The line after the last row.
    pub(crate) end: usize,
}

/// A `###` entry of the Handoff Prompts section: its heading to the next one.
#[derive(Debug, Clone)]
pub(crate) struct PromptSpan {
    pub(crate) heading: usize,
    pub(crate) end: usize,
}

/// Where each part of a tracker is, by line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    pub(crate) sections: Vec<Section>,
    pub(crate) meta: Vec<Field>,
    pub(crate) current: Vec<Field>,
    /// The `Note: Steps 01-NN archived to …` line.
    pub(crate) note: Option<usize>,
    pub(crate) steps: Vec<StepSpan>,
    pub(crate) table: Option<Table>,
    pub(crate) agreements: Vec<usize>,
    pub(crate) prompts: Vec<PromptSpan>,
}

/// The lines being read, which of them are fenced, and the path errors name.
pub(crate) struct Doc<'a> {
    path: &'a Path,
    pub(crate) lines: &'a [String],
    fence: Vec<bool>,
}

impl<'a> Doc<'a> {
    fn new(path: &'a Path, lines: &'a [String]) -> Doc<'a> {
        Doc {
            path,
            lines,
            fence: fenced(lines),
        }
    }

    /// [`Error::Corrupt`] at 0-based `line`.
    pub(crate) fn corrupt(&self, line: Option<usize>, why: impl Into<String>) -> Error {
        Error::Corrupt {
            path: self.path.to_path_buf(),
            line: line.map(|l| l + 1),
            why: why.into(),
        }
    }

    pub(crate) fn is_fenced(&self, line: usize) -> bool {
        self.fence[line]
    }

    /// The lines of `from..to` outside code fences.
    pub(crate) fn unfenced(&self, from: usize, to: usize) -> impl Iterator<Item = usize> + '_ {
        (from..to).filter(|&i| !self.fence[i])
    }

    /// The fields of `from..to` (outside code fences).
    pub(crate) fn fields_in(&self, from: usize, to: usize) -> Vec<Field> {
        self.unfenced(from, to)
            .filter_map(|i| parse_field(&self.lines[i], i))
            .collect()
    }

    /// Every `#` and `##` section; a `##` title used twice is corrupt.
    fn sections(&self) -> Result<Vec<Section>> {
        let mut sections: Vec<Section> = Vec::new();
        for i in self.unfenced(0, self.lines.len()) {
            let Some((level, text)) = heading(&self.lines[i]).filter(|(l, _)| *l <= 2) else {
                continue;
            };
            if let Some(last) = sections.last_mut() {
                last.end = i;
            }
            let name = if level == 2 {
                text.to_ascii_lowercase()
            } else {
                String::new()
            };
            if !name.is_empty() && sections.iter().any(|s| s.name == name) {
                return Err(self.corrupt(Some(i), format!("a second `## {text}` section")));
            }
            sections.push(Section {
                name,
                heading: i,
                end: self.lines.len(),
            });
        }
        Ok(sections)
    }
}

/// Read a tracker's lines: where everything is, and what it says.
pub(crate) fn analyze(path: &Path, lines: &[String]) -> Result<(Index, View)> {
    let doc = Doc::new(path, lines);
    let sections = doc.sections()?;
    let find = |name: &str| sections.iter().find(|s| s.name == name);
    let require = |name: &str, title: &str| {
        find(name).ok_or_else(|| doc.corrupt(None, format!("it has no `## {title}` section")))
    };
    let meta_sec = require(META, "Meta")?;
    let cur_sec = require(CURRENT, "Current State")?;
    let steps_sec = require(STEPS, "Steps")?;
    let issues_sec = require(ISSUES, "Issues")?;

    let (meta_fields, meta) = meta::read(&doc, meta_sec)?;
    let (current_fields, current) = current::read(&doc, cur_sec)?;
    let steps = steps::read(&doc, steps_sec)?;
    let (table, issues) = issues::read(&doc, issues_sec)?;
    let (agreement_lines, agreements) = find(AGREEMENTS)
        .map(|sec| agreements::read(&doc, sec))
        .unwrap_or_default();
    let (prompt_spans, prompts) = find(HANDOFFS)
        .map(|sec| handoffs::read(&doc, sec))
        .unwrap_or_default();

    let view = View {
        meta,
        current,
        steps_note: steps
            .note
            .map(|l| lines[l].trim_end_matches('\r').trim().to_string()),
        steps: steps.steps,
        issues,
        agreements,
        handoff_prompts: prompts,
    };
    let index = Index {
        sections,
        meta: meta_fields,
        current: current_fields,
        note: steps.note,
        steps: steps.spans,
        table,
        agreements: agreement_lines,
        prompts: prompt_spans,
    };
    Ok((index, view))
}
