//! Handoff prompts: the `## Handoff Prompts` section of a tracker (optional; one
//! `### For ACTOR (step NN)` entry per prompt, its text usually fenced), and the
//! `## Handoff Prompt for Next Actor` section that must end every output file.
//!
//! A prompt's text is the inside of its fence when it is fenced, else its lines as written;
//! blank lines at either end are dropped.

use std::path::Path;

use super::{Doc, PromptSpan, Section};
use crate::error::{Error, Result};
use crate::review::model::Prompt;
use crate::review::syntax::{HANDOFF_HEADING, fenced, heading, without_blank_ends};

/// Read the Handoff Prompts section: the spans of its entries, and the prompts.
pub(super) fn read(doc: &Doc<'_>, sec: &Section) -> (Vec<PromptSpan>, Vec<Prompt>) {
    let heads: Vec<usize> = doc
        .unfenced(sec.heading + 1, sec.end)
        .filter(|&i| matches!(heading(&doc.lines[i]), Some((3, _))))
        .collect();
    let mut spans = Vec::new();
    let mut prompts = Vec::new();
    for (k, &h) in heads.iter().enumerate() {
        let end = heads.get(k + 1).copied().unwrap_or(sec.end);
        let text = heading(&doc.lines[h]).map(|(_, t)| t).unwrap_or_default();
        let (actor, step) = parse_prompt_heading(text);
        prompts.push(Prompt {
            heading: text.to_string(),
            actor,
            step,
            text: prompt_body(&doc.lines[h + 1..end]),
        });
        spans.push(PromptSpan { heading: h, end });
    }
    (spans, prompts)
}

/// `For gemini (step 02)` → (`gemini`, 2).
fn parse_prompt_heading(text: &str) -> (Option<String>, Option<u32>) {
    let Some(rest) = text.strip_prefix("For ") else {
        return (None, None);
    };
    match rest.split_once(" (step ") {
        Some((actor, num)) => (
            Some(actor.trim().to_string()),
            num.trim_end_matches(')').trim().parse().ok(),
        ),
        None => (Some(rest.trim().to_string()), None),
    }
}

/// A prompt entry's text: the inside of its fence when the whole body is one fenced block.
fn prompt_body(lines: &[String]) -> String {
    let body = without_blank_ends(lines);
    if body.len() >= 2 {
        let open = body[0].trim();
        let ch = open.chars().next().unwrap_or(' ');
        let run = open.chars().take_while(|&c| c == ch).count();
        let close = body[body.len() - 1].trim();
        if (ch == '`' || ch == '~')
            && run >= 3
            && close.chars().all(|c| c == ch)
            && close.len() >= run
        {
            return body[1..body.len() - 1].join("\n");
        }
    }
    body.join("\n")
}

/// The body of the `## Handoff Prompt for Next Actor` section that ends an output file.
///
/// # Errors
///
/// [`Error::BadInput`] when the file has no such section, when another `##` section follows it,
/// or when it is empty.
pub(crate) fn handoff_section(path: &Path, text: &str) -> Result<String> {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let fence = fenced(&lines);
    let mut found = None;
    let mut after = None;
    for (i, line) in lines.iter().enumerate() {
        if fence[i] {
            continue;
        }
        if let Some((level, t)) = heading(line)
            && level <= 2
        {
            if level == 2 && t.eq_ignore_ascii_case(HANDOFF_HEADING) {
                found = Some(i);
                after = None;
            } else if found.is_some() {
                after = Some((i, t.to_string()));
            }
        }
    }
    let shown = path.display();
    let Some(h) = found else {
        return Err(Error::bad_input(format!(
            "`{shown}` does not end with a `## {HANDOFF_HEADING}` section"
        )));
    };
    if let Some((i, t)) = after {
        return Err(Error::bad_input(format!(
            "`{shown}` must end with its `## {HANDOFF_HEADING}` section, but `{t}` follows it at line {}",
            i + 1
        )));
    }
    let body = without_blank_ends(&lines[h + 1..]);
    if body.is_empty() {
        return Err(Error::bad_input(format!(
            "the `## {HANDOFF_HEADING}` section of `{shown}` is empty"
        )));
    }
    Ok(body.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn prompt_headings_and_bodies() {
        assert_eq!(
            parse_prompt_heading("For gemini (step 02)"),
            (Some("gemini".into()), Some(2))
        );
        assert_eq!(
            parse_prompt_heading("For Codex"),
            (Some("Codex".into()), None)
        );
        assert_eq!(parse_prompt_heading("Notes"), (None, None));
        let lines = |s: &str| s.split('\n').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            prompt_body(&lines("\n````text\na\n```\nb\n````\n\n")),
            "a\n```\nb"
        );
        assert_eq!(prompt_body(&lines("plain\r\ntext\r")), "plain\ntext");
        assert_eq!(prompt_body(&lines("```\nunclosed")), "```\nunclosed");
    }
}
