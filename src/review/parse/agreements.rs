//! The `## Agreements Log` section (optional): one bullet per decision,
//! `- DECISION - ADOPTED POSITION`, `[DISPUTED] ` first when the user had to decide.
//!
//! Lenient: any line that is not a bullet (the seed's `Key positions agreed between LLMs:`, prose)
//! is kept and ignored; an entry without ` - ` has no adopted position.

use super::{Doc, Section};
use crate::review::model::Agreement;

/// Read the Agreements Log: the lines of its entries, and the entries.
pub(super) fn read(doc: &Doc<'_>, sec: &Section) -> (Vec<usize>, Vec<Agreement>) {
    let mut lines = Vec::new();
    let mut agreements = Vec::new();
    for i in doc.unfenced(sec.heading + 1, sec.end) {
        let t = doc.lines[i].trim_start();
        let Some(entry) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) else {
            continue;
        };
        agreements.push(read_entry(entry.trim_end_matches('\r').trim()));
        lines.push(i);
    }
    (lines, agreements)
}

/// One entry, without its bullet.
fn read_entry(entry: &str) -> Agreement {
    let (disputed, text) = match entry.strip_prefix("[DISPUTED]") {
        Some(rest) => (true, rest.trim()),
        None => (false, entry),
    };
    let (decision, adopted) = split_agreement(text);
    Agreement {
        text: text.to_string(),
        decision,
        adopted,
        disputed,
    }
}

/// Split an agreement entry into decision and adopted position (at its last ` - `).
fn split_agreement(text: &str) -> (String, Option<String>) {
    match text.rsplit_once(" - ") {
        Some((d, a)) if !a.trim().is_empty() => (d.trim().to_string(), Some(a.trim().to_string())),
        _ => (text.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_split_at_their_last_dash() {
        let a = read_entry("[DISPUTED] Timelines - a - b - escalated to user");
        assert!(a.disputed);
        assert_eq!(a.text, "Timelines - a - b - escalated to user");
        assert_eq!(a.decision, "Timelines - a - b");
        assert_eq!(a.adopted.as_deref(), Some("escalated to user"));
        let a = read_entry("Keep NPV -  ");
        assert!(!a.disputed);
        assert_eq!((a.decision.as_str(), a.adopted), ("Keep NPV -  ", None));
    }
}
