//! The `## Current State` section: exactly one next actor, what they do, where their prompt is.
//!
//! `Next actor` is required (it is `none` once a review is closed); the others may be missing.

use super::{Doc, Section};
use crate::error::Result;
use crate::review::model::Current;
use crate::review::syntax::{Field, value};

/// Read the Current State section: its fields and what they say.
pub(super) fn read(doc: &Doc<'_>, sec: &Section) -> Result<(Vec<Field>, Current)> {
    let fields = doc.fields_in(sec.heading + 1, sec.end);
    let next_actor = value(&fields, "Next actor")
        .ok_or_else(|| doc.corrupt(Some(sec.heading), "Current State has no `Next actor`"))?;
    let current = Current {
        next_actor,
        next_action: value(&fields, "Next action"),
        prompt: value(&fields, "Prompt for next actor"),
    };
    Ok((fields, current))
}
