//! The `## Issues` section: one markdown table, ID, Severity, Title, Status and Resolution in
//! any column order (other columns are kept and ignored).
//!
//! Strict: the header names all five columns and is followed by a `|----|` separator; every row
//! has as many cells as the header (a `|` inside a cell is escaped as `\|`), a non-empty ID used
//! once (case is ignored), a known severity and a known status. The table ends at the first line
//! that is not a row. A section without a table has no issues.

use super::{Doc, Row, Section, Table};
use crate::error::Result;
use crate::review::model::Issue;
use crate::review::syntax::{decode_cell, split_row};
use crate::review::{IssueStatus, Severity};

/// The columns coord needs, in the order of [`Table::cols`].
const COLUMNS: [&str; 5] = ["id", "severity", "title", "status", "resolution"];

/// Read the Issues section: its table (if any) and its issues.
pub(super) fn read(doc: &Doc<'_>, sec: &Section) -> Result<(Option<Table>, Vec<Issue>)> {
    let start = doc
        .unfenced(sec.heading + 1, sec.end)
        .find(|&i| doc.lines[i].trim_start().starts_with('|'));
    let Some(h) = start else {
        return Ok((None, Vec::new()));
    };
    let header: Vec<String> = split_row(&doc.lines[h])
        .unwrap_or_default()
        .iter()
        .map(|c| decode_cell(c).to_ascii_lowercase())
        .collect();
    let mut cols = [0; 5];
    for (k, name) in COLUMNS.iter().enumerate() {
        cols[k] = header.iter().position(|c| c == name).ok_or_else(|| {
            doc.corrupt(
                Some(h),
                format!("the Issues table has no `{name}` column (ID, Severity, Title, Status, Resolution)"),
            )
        })?;
    }
    check_separator(doc, h + 1, header.len())?;
    let mut issues = Vec::new();
    let mut rows = Vec::new();
    let mut i = h + 2;
    while i < sec.end && !doc.is_fenced(i) {
        let Some(cells) = split_row(&doc.lines[i]) else {
            break;
        };
        if cells.len() != header.len() {
            return Err(doc.corrupt(
                Some(i),
                format!(
                    "this Issues row has {} cells, the header {} (escape `|` inside a cell as `\\|`)",
                    cells.len(),
                    header.len()
                ),
            ));
        }
        issues.push(read_issue(doc, i, &cells, &cols, &issues)?);
        rows.push(Row { line: i, cells });
        i += 1;
    }
    let table = Table {
        cols,
        ncols: header.len(),
        rows,
        end: i,
    };
    Ok((Some(table), issues))
}

/// The header must be followed by a separator row of as many `---` cells.
fn check_separator(doc: &Doc<'_>, at: usize, ncols: usize) -> Result<()> {
    let ok = doc
        .lines
        .get(at)
        .and_then(|l| split_row(l))
        .is_some_and(|cells| {
            cells.len() == ncols
                && cells.iter().all(|c| {
                    let c = c.trim_matches(':');
                    !c.is_empty() && c.chars().all(|ch| ch == '-')
                })
        });
    if ok {
        Ok(())
    } else {
        Err(doc.corrupt(
            Some(at),
            "the Issues table header must be followed by a `|----|` separator row",
        ))
    }
}

/// One row (line `i`) as an issue; `before` are the rows above it.
fn read_issue(
    doc: &Doc<'_>,
    i: usize,
    cells: &[String],
    cols: &[usize; 5],
    before: &[Issue],
) -> Result<Issue> {
    let cell = |k: usize| decode_cell(&cells[cols[k]]);
    let id = cell(0);
    if id.is_empty() {
        return Err(doc.corrupt(Some(i), "an Issues row without an ID"));
    }
    if before.iter().any(|x| x.id.eq_ignore_ascii_case(&id)) {
        return Err(doc.corrupt(Some(i), format!("issue id `{id}` is used twice")));
    }
    let severity = Severity::parse(&cell(1)).ok_or_else(|| {
        doc.corrupt(
            Some(i),
            format!(
                "issue `{id}` has severity `{}`, expected one of {}",
                cell(1),
                Severity::NAMES.join(", ")
            ),
        )
    })?;
    let status = IssueStatus::parse(&cell(3)).ok_or_else(|| {
        doc.corrupt(
            Some(i),
            format!(
                "issue `{id}` has status `{}`, expected one of {}",
                cell(3),
                IssueStatus::NAMES.join(", ")
            ),
        )
    })?;
    Ok(Issue {
        id,
        severity,
        title: cell(2),
        status,
        resolution: Some(cell(4)).filter(|r| !r.is_empty()),
    })
}
