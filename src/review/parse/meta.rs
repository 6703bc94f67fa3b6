//! The `## Meta` section: topic, target, dates, status and participants.
//!
//! Strict only where the rules depend on it: `Status` must be there and be `in_progress` or
//! `closed`. Every other field may be missing or empty.

use super::{Doc, Section};
use crate::error::Result;
use crate::review::model::{Meta, Participant};
use crate::review::syntax::{Field, get, value};

/// Read the Meta section: its fields and what they say.
pub(super) fn read(doc: &Doc<'_>, sec: &Section) -> Result<(Vec<Field>, Meta)> {
    let fields = doc.fields_in(sec.heading + 1, sec.end);
    let status_field = get(&fields, "Status")
        .ok_or_else(|| doc.corrupt(Some(sec.heading), "Meta has no `Status`"))?;
    let status = status_field.value.to_ascii_lowercase();
    if status != "in_progress" && status != "closed" {
        return Err(doc.corrupt(
            Some(status_field.line),
            format!(
                "Meta `Status` is `{}`, expected `in_progress` or `closed`",
                status_field.value
            ),
        ));
    }
    let meta = Meta {
        topic: value(&fields, "Topic"),
        target: value(&fields, "Target"),
        created: value(&fields, "Created"),
        last_updated: value(&fields, "Last updated"),
        status,
        participants: value(&fields, "Participants")
            .map(|p| parse_participants(&p))
            .unwrap_or_default(),
    };
    Ok((fields, meta))
}

/// `Claude (reviewer), Codex (implementer)` → the two participants with their roles.
fn parse_participants(text: &str) -> Vec<Participant> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('(') {
            Some((name, role)) => Participant {
                name: name.trim().to_string(),
                role: Some(role.trim_end_matches(')').trim().to_string()).filter(|r| !r.is_empty()),
            },
            None => Participant {
                name: p.to_string(),
                role: None,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn participants_with_and_without_roles() {
        let p = parse_participants("Claude (reviewer), Codex ( implementer ),  Gemini, , X ()");
        let got: Vec<(&str, Option<&str>)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.role.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("Claude", Some("reviewer")),
                ("Codex", Some("implementer")),
                ("Gemini", None),
                ("X", None)
            ]
        );
    }
}
