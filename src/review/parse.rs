//! Reading a tracker: sections, fields, steps, the Issues table, agreements and prompts, with
//! the line each came from, so [`super::tracker::Tracker`] can edit just those lines.
//!
//! Lines inside fenced code blocks (```` ``` ```` or `~~~`) are never read as headings or fields.
//! Issues table cells escape `|` as `\|` (and a `\` that would otherwise be read as part of an
//! escape as `\\`); [`decode_cell`] undoes both.

use std::path::Path;

use super::tracker::{
    Agreement, Current, HANDOFF_HEADING, Issue, Meta, Participant, Prompt, Step, View,
};
use super::{Action, IssueStatus, Severity, StepStatus};
use crate::error::{Error, Result};

pub(super) const META: &str = "meta";
pub(super) const CURRENT: &str = "current state";
pub(super) const STEPS: &str = "steps";
pub(super) const ISSUES: &str = "issues";
pub(super) const AGREEMENTS: &str = "agreements log";
pub(super) const HANDOFFS: &str = "handoff prompts";

#[derive(Debug, Clone)]
pub(super) struct Field {
    pub(super) key: String,
    pub(super) value: String,
    pub(super) line: usize,
    /// Byte offset in the line where the value starts (after the `:**` and one blank).
    pub(super) value_at: usize,
}

#[derive(Debug, Clone)]
pub(super) struct Section {
    pub(super) name: String,
    pub(super) heading: usize,
    pub(super) end: usize,
}

#[derive(Debug, Clone)]
pub(super) struct StepSpan {
    pub(super) heading: usize,
    pub(super) fields: Vec<Field>,
}

#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) line: usize,
    pub(super) cells: Vec<String>,
}

#[derive(Debug, Clone)]
pub(super) struct Table {
    pub(super) cols: [usize; 5],
    pub(super) ncols: usize,
    pub(super) rows: Vec<Row>,
    /// The line after the last row.
    pub(super) end: usize,
}

#[derive(Debug, Clone)]
pub(super) struct PromptSpan {
    pub(super) heading: usize,
    pub(super) end: usize,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Index {
    pub(super) sections: Vec<Section>,
    pub(super) meta: Vec<Field>,
    pub(super) current: Vec<Field>,
    pub(super) note: Option<usize>,
    pub(super) steps: Vec<StepSpan>,
    pub(super) table: Option<Table>,
    pub(super) agreements: Vec<usize>,
    pub(super) prompts: Vec<PromptSpan>,
}

pub(super) fn renumber_heading(line: &str, number: u32) -> String {
    let lead = line.len() - line.trim_start().len();
    let after_hashes = line[lead..].trim_start_matches('#');
    let rest = after_hashes.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    format!("### {number:02}{}", &rest[digits..])
}

/// Escape text for one Issues table cell.
pub fn encode_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' if matches!(chars.get(i + 1), None | Some('|') | Some('\\')) => {
                out.push_str("\\\\")
            }
            c => out.push(c),
        }
    }
    out
}

/// Undo [`encode_cell`] (and trim the cell).
pub fn decode_cell(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && (n == '|' || n == '\\')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Split a table row into its raw (still escaped, trimmed) cells. `None` unless it starts with `|`.
pub(super) fn split_row(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    let body = t.strip_prefix('|')?;
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '|' => cells.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        cells.push(cur.trim().to_string());
    }
    Some(cells)
}

pub(super) fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// A heading's level and text (`## Meta` → `(2, "Meta")`).
pub(super) fn heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let level = t.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    Some((level, text))
}

/// Which lines lie inside a fenced code block (the fences included).
pub(super) fn fenced(lines: &[String]) -> Vec<bool> {
    let mut out = Vec::with_capacity(lines.len());
    let mut open: Option<(char, usize)> = None;
    for line in lines {
        let t = line.trim_start();
        let t = t.trim_end();
        match open {
            Some((ch, n)) => {
                out.push(true);
                let run = t.chars().take_while(|&c| c == ch).count();
                if run >= n && t.chars().all(|c| c == ch) {
                    open = None;
                }
            }
            None => {
                let ch = t.chars().next().unwrap_or(' ');
                let run = t.chars().take_while(|&c| c == ch).count();
                if (ch == '`' || ch == '~') && run >= 3 {
                    open = Some((ch, run));
                    out.push(true);
                } else {
                    out.push(false);
                }
            }
        }
    }
    out
}

pub(super) fn parse_field(line: &str, at: usize) -> Option<Field> {
    let lead = line.len() - line.trim_start().len();
    let t = &line[lead..];
    let rest = t.strip_prefix("- **").or_else(|| t.strip_prefix("* **"))?;
    let close = rest.find("**")?;
    let inner = &rest[..close];
    let after = &rest[close + 2..];
    let (key, colon) = match inner.strip_suffix(':') {
        Some(k) => (k, 0),
        None if after.starts_with(':') => (inner, 1),
        None => return None,
    };
    if key.trim().is_empty() {
        return None;
    }
    let value_at = lead + 4 + close + 2 + colon;
    let value = line[value_at..].trim_end_matches('\r').trim().to_string();
    Some(Field {
        key: key.trim().to_string(),
        value,
        line: at,
        value_at,
    })
}

pub(super) fn get<'a>(fields: &'a [Field], key: &str) -> Option<&'a Field> {
    fields.iter().find(|f| f.key.eq_ignore_ascii_case(key))
}

pub(super) fn value(fields: &[Field], key: &str) -> Option<String> {
    get(fields, key)
        .map(|f| f.value.clone())
        .filter(|v| !v.is_empty())
}

pub(super) fn parse_participants(text: &str) -> Vec<Participant> {
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

/// Split an agreement entry into decision and adopted position (at its last ` - `).
pub fn split_agreement(text: &str) -> (String, Option<String>) {
    match text.rsplit_once(" - ") {
        Some((d, a)) if !a.trim().is_empty() => (d.trim().to_string(), Some(a.trim().to_string())),
        _ => (text.to_string(), None),
    }
}

pub(super) fn analyze(path: &Path, lines: &[String]) -> Result<(Index, View)> {
    let corrupt = |line: Option<usize>, why: String| Error::Corrupt {
        path: path.to_path_buf(),
        line: line.map(|l| l + 1),
        why,
    };
    let fence = fenced(lines);
    let mut ix = Index::default();

    for (i, line) in lines.iter().enumerate() {
        if fence[i] {
            continue;
        }
        if let Some((level, text)) = heading(line)
            && level <= 2
        {
            if let Some(last) = ix.sections.last_mut() {
                last.end = i;
            }
            let name = if level == 2 {
                text.to_ascii_lowercase()
            } else {
                String::new()
            };
            if !name.is_empty() && ix.sections.iter().any(|s| s.name == name) {
                return Err(corrupt(Some(i), format!("a second `## {text}` section")));
            }
            ix.sections.push(Section {
                name,
                heading: i,
                end: lines.len(),
            });
        }
    }
    let find = |name: &str| ix.sections.iter().find(|s| s.name == name).cloned();
    let require = |name: &str, title: &str| {
        find(name).ok_or_else(|| corrupt(None, format!("it has no `## {title}` section")))
    };
    let meta_sec = require(META, "Meta")?;
    let cur_sec = require(CURRENT, "Current State")?;
    let steps_sec = require(STEPS, "Steps")?;
    let issues_sec = require(ISSUES, "Issues")?;

    let fields_in = |from: usize, to: usize| -> Vec<Field> {
        (from..to)
            .filter(|&i| !fence[i])
            .filter_map(|i| parse_field(&lines[i], i))
            .collect()
    };

    // Meta.
    ix.meta = fields_in(meta_sec.heading + 1, meta_sec.end);
    let status_field = get(&ix.meta, "Status")
        .ok_or_else(|| corrupt(Some(meta_sec.heading), "Meta has no `Status`".into()))?;
    let status = status_field.value.to_ascii_lowercase();
    if status != "in_progress" && status != "closed" {
        return Err(corrupt(
            Some(status_field.line),
            format!(
                "Meta `Status` is `{}`, expected `in_progress` or `closed`",
                status_field.value
            ),
        ));
    }
    let meta = Meta {
        topic: value(&ix.meta, "Topic"),
        target: value(&ix.meta, "Target"),
        created: value(&ix.meta, "Created"),
        last_updated: value(&ix.meta, "Last updated"),
        status,
        participants: value(&ix.meta, "Participants")
            .map(|p| parse_participants(&p))
            .unwrap_or_default(),
    };

    // Current State.
    ix.current = fields_in(cur_sec.heading + 1, cur_sec.end);
    let next_actor = value(&ix.current, "Next actor").ok_or_else(|| {
        corrupt(
            Some(cur_sec.heading),
            "Current State has no `Next actor`".into(),
        )
    })?;
    let current = Current {
        next_actor,
        next_action: value(&ix.current, "Next action"),
        prompt: value(&ix.current, "Prompt for next actor"),
    };

    // Steps.
    let mut step_heads = Vec::new();
    for i in steps_sec.heading + 1..steps_sec.end {
        if fence[i] {
            continue;
        }
        if let Some((3, text)) = heading(&lines[i]) {
            step_heads.push((i, text));
        } else if step_heads.is_empty()
            && ix.note.is_none()
            && lines[i].trim_start().starts_with("Note:")
        {
            ix.note = Some(i);
        }
    }
    let mut steps = Vec::new();
    for (k, &(head, text)) in step_heads.iter().enumerate() {
        let end = step_heads
            .get(k + 1)
            .map_or(steps_sec.end, |&(next, _)| next);
        let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
        let number: u32 = digits.parse().map_err(|_| {
            corrupt(
                Some(head),
                format!("step heading `### {text}` does not start with its number (`### 01`)"),
            )
        })?;
        let expected = u32::try_from(k + 1).unwrap_or(u32::MAX);
        if number != expected {
            return Err(corrupt(
                Some(head),
                format!("step {number:02} where step {expected:02} was expected"),
            ));
        }
        let fields = fields_in(head + 1, end);
        let actor = value(&fields, "Actor")
            .ok_or_else(|| corrupt(Some(head), format!("step {number:02} has no `Actor`")))?;
        let sf = get(&fields, "Status")
            .ok_or_else(|| corrupt(Some(head), format!("step {number:02} has no `Status`")))?;
        let status = StepStatus::parse(&sf.value).ok_or_else(|| {
            corrupt(
                Some(sf.line),
                format!(
                    "step {number:02} has status `{}`, expected one of {}",
                    sf.value,
                    StepStatus::NAMES.join(", ")
                ),
            )
        })?;
        let action = match get(&fields, "Action").filter(|f| !f.value.is_empty()) {
            None => None,
            Some(f) => Some(Action::parse(&f.value).ok_or_else(|| {
                corrupt(
                    Some(f.line),
                    format!(
                        "step {number:02} has action `{}`, expected one of {}",
                        f.value,
                        Action::NAMES.join(", ")
                    ),
                )
            })?),
        };
        steps.push(Step {
            number,
            actor,
            status,
            action,
            input: value(&fields, "Input"),
            output: value(&fields, "Output"),
            summary: value(&fields, "Summary"),
            next: value(&fields, "Next"),
        });
        ix.steps.push(StepSpan {
            heading: head,
            fields,
        });
    }

    // Issues.
    let mut issues = Vec::new();
    let table_start = (issues_sec.heading + 1..issues_sec.end)
        .find(|&i| !fence[i] && lines[i].trim_start().starts_with('|'));
    if let Some(h) = table_start {
        let header: Vec<String> = split_row(&lines[h])
            .unwrap_or_default()
            .iter()
            .map(|c| decode_cell(c).to_ascii_lowercase())
            .collect();
        let col = |name: &str| {
            header.iter().position(|c| c == name).ok_or_else(|| {
                corrupt(
                    Some(h),
                    format!("the Issues table has no `{name}` column (ID, Severity, Title, Status, Resolution)"),
                )
            })
        };
        let cols = [
            col("id")?,
            col("severity")?,
            col("title")?,
            col("status")?,
            col("resolution")?,
        ];
        let sep_ok = lines
            .get(h + 1)
            .and_then(|l| split_row(l))
            .is_some_and(|cells| {
                cells.len() == header.len()
                    && cells.iter().all(|c| {
                        let c = c.trim_matches(':');
                        !c.is_empty() && c.chars().all(|ch| ch == '-')
                    })
            });
        if !sep_ok {
            return Err(corrupt(
                Some(h + 1),
                "the Issues table header must be followed by a `|----|` separator row".into(),
            ));
        }
        let mut rows = Vec::new();
        let mut i = h + 2;
        while i < issues_sec.end && !fence[i] {
            let Some(cells) = split_row(&lines[i]) else {
                break;
            };
            if cells.len() != header.len() {
                return Err(corrupt(
                    Some(i),
                    format!(
                        "this Issues row has {} cells, the header {} (escape `|` inside a cell as `\\|`)",
                        cells.len(),
                        header.len()
                    ),
                ));
            }
            let cell = |k: usize| decode_cell(&cells[cols[k]]);
            let id = cell(0);
            if id.is_empty() {
                return Err(corrupt(Some(i), "an Issues row without an ID".into()));
            }
            if issues
                .iter()
                .any(|x: &Issue| x.id.eq_ignore_ascii_case(&id))
            {
                return Err(corrupt(Some(i), format!("issue id `{id}` is used twice")));
            }
            let severity = Severity::parse(&cell(1)).ok_or_else(|| {
                corrupt(
                    Some(i),
                    format!(
                        "issue `{id}` has severity `{}`, expected one of {}",
                        cell(1),
                        Severity::NAMES.join(", ")
                    ),
                )
            })?;
            let status = IssueStatus::parse(&cell(3)).ok_or_else(|| {
                corrupt(
                    Some(i),
                    format!(
                        "issue `{id}` has status `{}`, expected one of {}",
                        cell(3),
                        IssueStatus::NAMES.join(", ")
                    ),
                )
            })?;
            issues.push(Issue {
                id,
                severity,
                title: cell(2),
                status,
                resolution: Some(cell(4)).filter(|r| !r.is_empty()),
            });
            rows.push(Row { line: i, cells });
            i += 1;
        }
        ix.table = Some(Table {
            cols,
            ncols: header.len(),
            rows,
            end: i,
        });
    }

    // Agreements Log.
    let mut agreements = Vec::new();
    if let Some(sec) = find(AGREEMENTS) {
        for i in sec.heading + 1..sec.end {
            if fence[i] {
                continue;
            }
            let t = lines[i].trim_start();
            let Some(entry) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) else {
                continue;
            };
            let entry = entry.trim_end_matches('\r').trim();
            let (disputed, text) = match entry.strip_prefix("[DISPUTED]") {
                Some(rest) => (true, rest.trim()),
                None => (false, entry),
            };
            let (decision, adopted) = split_agreement(text);
            agreements.push(Agreement {
                text: text.to_string(),
                decision,
                adopted,
                disputed,
            });
            ix.agreements.push(i);
        }
    }

    // Handoff Prompts.
    let mut prompts = Vec::new();
    if let Some(sec) = find(HANDOFFS) {
        let heads: Vec<usize> = (sec.heading + 1..sec.end)
            .filter(|&i| !fence[i] && matches!(heading(&lines[i]), Some((3, _))))
            .collect();
        for (k, &h) in heads.iter().enumerate() {
            let end = heads.get(k + 1).copied().unwrap_or(sec.end);
            let text = heading(&lines[h]).map(|(_, t)| t).unwrap_or_default();
            let (actor, step) = parse_prompt_heading(text);
            prompts.push(Prompt {
                heading: text.to_string(),
                actor,
                step,
                text: prompt_body(&lines[h + 1..end]),
            });
            ix.prompts.push(PromptSpan { heading: h, end });
        }
    }

    let view = View {
        meta,
        current,
        steps_note: ix
            .note
            .map(|l| lines[l].trim_end_matches('\r').trim().to_string()),
        steps,
        issues,
        agreements,
        handoff_prompts: prompts,
    };
    Ok((ix, view))
}

/// `For gemini (step 02)` → (`gemini`, 2).
pub(super) fn parse_prompt_heading(text: &str) -> (Option<String>, Option<u32>) {
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

pub(super) fn prompt_body(lines: &[String]) -> String {
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
pub fn handoff_section(path: &Path, text: &str) -> Result<String> {
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

/// `lines` without their `\r` line ends and without blank lines at either end.
fn without_blank_ends(lines: &[String]) -> Vec<&str> {
    let clean: Vec<&str> = lines.iter().map(|l| l.trim_end_matches('\r')).collect();
    let start = clean
        .iter()
        .position(|l| !is_blank(l))
        .unwrap_or(clean.len());
    let end = clean
        .iter()
        .rposition(|l| !is_blank(l))
        .map_or(start, |e| e + 1);
    clean[start..end].to_vec()
}

/// The number of `### NN` step entries in an archive file (outside code fences).
pub fn count_archived_steps(text: &str) -> usize {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let fence = fenced(&lines);
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            !fence[*i]
                && matches!(heading(l), Some((3, t)) if t.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count()
}

/// Renumber the `### NN` headings of archived step lines from `first`.
pub fn renumber_steps(lines: &[String], first: u32) -> Vec<String> {
    let fence = fenced(lines);
    let mut n = first;
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if !fence[i]
                && matches!(heading(l), Some((3, t)) if t.starts_with(|c: char| c.is_ascii_digit()))
            {
                let out = renumber_heading(l, n);
                n += 1;
                out
            } else {
                l.clone()
            }
        })
        .collect()
}
