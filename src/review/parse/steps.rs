//! The `## Steps` section: the archive note, then `### NN` entries numbered 01, 02, … in order.
//!
//! Strict: a step heading must start with its number, numbers run from 01 without gaps, and
//! every step has an `Actor` and a known `Status` (and a known `Action` when it has one), since
//! the rules decide who may act from them. Prose between steps is kept and ignored.

use super::{Doc, Section, StepSpan};
use crate::error::Result;
use crate::review::model::Step;
use crate::review::syntax::{Field, get, heading, value};
use crate::review::{Action, StepStatus};

/// What the Steps section holds.
#[derive(Debug, Default)]
pub(super) struct Steps {
    /// The `Note:` line before the first step (the archive note).
    pub(super) note: Option<usize>,
    pub(super) spans: Vec<StepSpan>,
    pub(super) steps: Vec<Step>,
}

/// Read the Steps section.
pub(super) fn read(doc: &Doc<'_>, sec: &Section) -> Result<Steps> {
    let mut out = Steps::default();
    let mut heads = Vec::new();
    for i in doc.unfenced(sec.heading + 1, sec.end) {
        let line = &doc.lines[i];
        if let Some((3, text)) = heading(line) {
            heads.push((i, text));
        } else if heads.is_empty() && out.note.is_none() && line.trim_start().starts_with("Note:") {
            out.note = Some(i);
        }
    }
    for (k, &(head, text)) in heads.iter().enumerate() {
        let end = heads.get(k + 1).map_or(sec.end, |&(next, _)| next);
        let expected = u32::try_from(k + 1).unwrap_or(u32::MAX);
        let number = step_number(doc, head, text, expected)?;
        let fields = doc.fields_in(head + 1, end);
        out.steps.push(read_step(doc, head, number, &fields)?);
        out.spans.push(StepSpan {
            heading: head,
            fields,
        });
    }
    Ok(out)
}

/// The number a step heading starts with, which must be `expected`.
fn step_number(doc: &Doc<'_>, head: usize, text: &str, expected: u32) -> Result<u32> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let number: u32 = digits.parse().map_err(|_| {
        doc.corrupt(
            Some(head),
            format!("step heading `### {text}` does not start with its number (`### 01`)"),
        )
    })?;
    if number != expected {
        return Err(doc.corrupt(
            Some(head),
            format!("step {number:02} where step {expected:02} was expected"),
        ));
    }
    Ok(number)
}

/// One step's fields: `Actor` and `Status` required, `Action` known when given.
fn read_step(doc: &Doc<'_>, head: usize, number: u32, fields: &[Field]) -> Result<Step> {
    let actor = value(fields, "Actor")
        .ok_or_else(|| doc.corrupt(Some(head), format!("step {number:02} has no `Actor`")))?;
    let sf = get(fields, "Status")
        .ok_or_else(|| doc.corrupt(Some(head), format!("step {number:02} has no `Status`")))?;
    let status = StepStatus::parse(&sf.value).ok_or_else(|| {
        doc.corrupt(
            Some(sf.line),
            format!(
                "step {number:02} has status `{}`, expected one of {}",
                sf.value,
                StepStatus::NAMES.join(", ")
            ),
        )
    })?;
    let action = match get(fields, "Action").filter(|f| !f.value.is_empty()) {
        None => None,
        Some(f) => Some(Action::parse(&f.value).ok_or_else(|| {
            doc.corrupt(
                Some(f.line),
                format!(
                    "step {number:02} has action `{}`, expected one of {}",
                    f.value,
                    Action::NAMES.join(", ")
                ),
            )
        })?),
    };
    Ok(Step {
        number,
        actor,
        status,
        action,
        input: value(fields, "Input"),
        output: value(fields, "Output"),
        summary: value(fields, "Summary"),
        next: value(fields, "Next"),
    })
}
