//! The markdown of a tracker: [`analyze`] reads its lines into what they say (a [`View`]) and
//! where each part is (an [`Index`]), so edits touch just those lines. The line syntax (headings,
//! code fences, `- **Key:** value` fields, table cells) is read and written here only.

use std::path::Path;

use super::{
    Action, Agreement, Current, Issue, IssueStatus, Meta, Participant, Prompt, Severity, Step,
    StepStatus, View,
};
use crate::error::{Error, Result};

/// The heading that must end every output file, and whose body is the prompt for the next actor.
pub(crate) const HANDOFF_HEADING: &str = "Handoff Prompt for Next Actor";

/// The Current State value of `Prompt for next actor`.
pub(crate) const PROMPT_POINTER: &str = "See Handoff Prompts section below";

pub(crate) const STEPS: &str = "steps";
pub(crate) const ISSUES: &str = "issues";
pub(crate) const AGREEMENTS: &str = "agreements log";
pub(crate) const HANDOFFS: &str = "handoff prompts";

const COLUMNS: [&str; 5] = ["id", "severity", "title", "status", "resolution"];

/// A `- **Key:** value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) line: usize,
    /// Byte offset in the line where the value starts (after the `:**`).
    pub(crate) value_at: usize,
}

/// A `#` or `##` section, from its heading to the next; `name` is its `##` title, lower-cased.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub(crate) name: String,
    pub(crate) heading: usize,
    pub(crate) end: usize,
}

/// The Issues table: the five columns' places among `ncols`, its rows (line, raw cells), its end.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) cols: [usize; 5],
    pub(crate) ncols: usize,
    pub(crate) rows: Vec<(usize, Vec<String>)>,
    pub(crate) end: usize,
}

/// Where each part of a tracker is, by line.
#[derive(Debug)]
pub(crate) struct Index {
    pub(crate) sections: Vec<Section>,
    pub(crate) meta: Vec<Field>,
    pub(crate) current: Vec<Field>,
    /// The `Note: Steps 01-NN archived to …` line.
    pub(crate) note: Option<usize>,
    pub(crate) table: Option<Table>,
}

/// A heading's level and text (`## Meta` → `(2, "Meta")`).
pub(crate) fn heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    let level = t.bytes().take_while(|&b| b == b'#').count();
    let rest = &t[level..];
    let spaced = rest.is_empty() || rest.starts_with([' ', '\t']);
    (line.len() - t.len() <= 3 && (1..=6).contains(&level) && spaced)
        .then(|| (level, rest.trim().trim_end_matches('#').trim()))
}

/// Whether `line` is a `### NN…` step heading.
pub(crate) fn is_step_heading(line: &str) -> bool {
    matches!(heading(line), Some((3, t)) if t.starts_with(|c: char| c.is_ascii_digit()))
}

/// A step heading with its number replaced (`### 12 - response` → `### 02 - response`).
pub(crate) fn renumber_heading(line: &str, number: u32) -> String {
    let rest = line.trim_start().trim_start_matches('#').trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    format!("### {number:02}{}", &rest[digits..])
}

fn fence_open(line: &str) -> Option<(char, usize)> {
    let t = line.trim();
    let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let run = t.chars().take_while(|&c| c == ch).count();
    (run >= 3).then_some((ch, run))
}

/// Whether `line` closes a fence opened by `run` × `ch`.
fn fence_closes(line: &str, (ch, run): (char, usize)) -> bool {
    let t = line.trim();
    t.len() >= run && t.chars().all(|c| c == ch)
}

/// Which lines lie inside a fenced code block (the fences included).
pub(crate) fn fenced(lines: &[String]) -> Vec<bool> {
    let mut open: Option<(char, usize)> = None;
    (lines.iter())
        .map(|line| {
            let inside = open.is_some();
            open = match open {
                Some(fence) => Some(fence).filter(|&f| !fence_closes(line, f)),
                None => fence_open(line),
            };
            inside || open.is_some()
        })
        .collect()
}

pub(crate) fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// A fence `text` cannot close: one backtick more than its longest run of them, at least three.
pub(crate) fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn trimmed_block(lines: &[String]) -> Vec<&str> {
    let block: Vec<&str> = lines.iter().map(|l| l.trim_end_matches('\r')).collect();
    let text = |l: &&str| !l.trim().is_empty();
    let (start, end) = (block.iter().position(text), block.iter().rposition(text));
    block[start.unwrap_or(0)..end.map_or(0, |e| e + 1)].to_vec()
}

pub(crate) fn parse_field(line: &str, at: usize) -> Option<Field> {
    let lead = line.len() - line.trim_start().len();
    let t = &line[lead..];
    let rest = t.strip_prefix("- **").or_else(|| t.strip_prefix("* **"))?;
    let close = rest.find("**")?;
    let (inner, after) = (&rest[..close], &rest[close + 2..]);
    let (key, colon) = match inner.strip_suffix(':') {
        Some(k) => (k, 0),
        None if after.starts_with(':') => (inner, 1),
        None => return None,
    };
    let value_at = lead + 4 + close + 2 + colon;
    let value = line[value_at..].trim().to_string();
    (!key.trim().is_empty()).then(|| Field {
        key: key.trim().to_string(),
        value,
        line: at,
        value_at,
    })
}

/// A field's line: `head` (`- **Key:**`, or a line up to its value), then ` value` unless empty.
pub(crate) fn field_line(head: &str, value: &str) -> String {
    let head = head.trim_end();
    match value {
        "" => head.to_string(),
        _ => format!("{head} {value}"),
    }
}

fn get<'a>(fields: &'a [Field], key: &str) -> Option<&'a Field> {
    fields.iter().find(|f| f.key.eq_ignore_ascii_case(key))
}

fn value(fields: &[Field], key: &str) -> Option<String> {
    let f = get(fields, key)?;
    (!f.value.is_empty()).then(|| f.value.clone())
}

/// Escape text for one Issues table cell: `|` as `\|`, and `\` as `\\` before `|`, `\` or the end.
pub(crate) fn encode_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' if matches!(chars.peek(), None | Some('|' | '\\')) => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

/// Undo [`encode_cell`] (and trim the cell).
pub(crate) fn decode_cell(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match chars.peek() {
            Some(&n @ ('|' | '\\')) if c == '\\' => {
                out.push(n);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// A table row's raw (still escaped, trimmed) cells; `None` unless it starts with `|`.
pub(crate) fn split_row(line: &str) -> Option<Vec<String>> {
    let mut chars = line.trim().strip_prefix('|')?.chars();
    let (mut cells, mut cur) = (Vec::new(), String::new());
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(std::iter::once(c).chain(chars.next())),
            '|' => cells.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        cells.push(cur.trim().to_string());
    }
    Some(cells)
}

/// A table row of raw cells: an empty cell is two blanks.
pub(crate) fn render_row(cells: &[String]) -> String {
    let cells: String = cells.iter().map(|c| format!(" {c} |")).collect();
    format!("|{cells}")
}

struct Doc<'a> {
    path: &'a Path,
    lines: &'a [String],
    fence: Vec<bool>,
}

impl Doc<'_> {
    fn corrupt(&self, line: Option<usize>, why: impl Into<String>) -> Error {
        Error::corrupt(self.path, line.map(|l| l + 1), why)
    }

    fn body(&self, sec: &Section) -> impl Iterator<Item = usize> + '_ {
        (sec.heading + 1..sec.end).filter(|&i| !self.fence[i])
    }

    /// The `###` entries of `sec`: each one's heading line and text, and the line after it.
    fn entries(&self, sec: &Section) -> Vec<(usize, &str, usize)> {
        let mut entries: Vec<(usize, &str, usize)> = Vec::new();
        for i in self.body(sec) {
            if let Some((3, text)) = heading(&self.lines[i]) {
                if let Some(last) = entries.last_mut() {
                    last.2 = i;
                }
                entries.push((i, text, sec.end));
            }
        }
        entries
    }

    fn fields(&self, from: usize, to: usize) -> Vec<Field> {
        let field = |i: usize| parse_field(&self.lines[i], i).filter(|_| !self.fence[i]);
        (from..to).filter_map(field).collect()
    }

    fn sections(&self) -> Result<Vec<Section>> {
        let mut sections: Vec<Section> = Vec::new();
        for i in (0..self.lines.len()).filter(|&i| !self.fence[i]) {
            let Some((level, text)) = heading(&self.lines[i]).filter(|(l, _)| *l <= 2) else {
                continue;
            };
            if let Some(last) = sections.last_mut() {
                last.end = i;
            }
            let name = (level == 2).then(|| text.to_ascii_lowercase());
            let name = name.unwrap_or_default();
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

pub(crate) fn analyze(path: &Path, lines: &[String]) -> Result<(Index, View)> {
    let fence = fenced(lines);
    let doc = Doc { path, lines, fence };
    let sections = doc.sections()?;
    let find = |name: &str| sections.iter().find(|s| s.name == name);
    let require = |title: &str| {
        let found = find(&title.to_ascii_lowercase());
        found.ok_or_else(|| doc.corrupt(None, format!("it has no `## {title}` section")))
    };
    let (meta_sec, cur_sec) = (require("Meta")?, require("Current State")?);
    let (steps_sec, issues_sec) = (require("Steps")?, require("Issues")?);

    let meta = doc.fields(meta_sec.heading + 1, meta_sec.end);
    let meta_view = read_meta(&doc, meta_sec, &meta)?;
    let current = doc.fields(cur_sec.heading + 1, cur_sec.end);
    let no_actor = || doc.corrupt(Some(cur_sec.heading), "Current State has no `Next actor`");
    let next_actor = value(&current, "Next actor").ok_or_else(no_actor)?;
    let (note, steps) = read_steps(&doc, steps_sec)?;
    let (table, issues) = read_issues(&doc, issues_sec)?;
    let agreements = find(AGREEMENTS).map_or_else(Vec::new, |s| read_agreements(&doc, s));
    let handoff_prompts = find(HANDOFFS).map_or_else(Vec::new, |s| read_prompts(&doc, s));
    let view = View {
        meta: meta_view,
        current: Current {
            next_actor,
            next_action: value(&current, "Next action"),
            prompt: value(&current, "Prompt for next actor"),
        },
        steps_note: note.map(|l| lines[l].trim().to_string()),
        steps,
        issues,
        agreements,
        handoff_prompts,
    };
    let index = Index {
        sections,
        meta,
        current,
        note,
        table,
    };
    Ok((index, view))
}

/// Meta: `Status` must be `in_progress` or `closed`; every other field may be missing.
fn read_meta(doc: &Doc<'_>, sec: &Section, fields: &[Field]) -> Result<Meta> {
    let sf = get(fields, "Status")
        .ok_or_else(|| doc.corrupt(Some(sec.heading), "Meta has no `Status`"))?;
    let status = sf.value.to_ascii_lowercase();
    if status != "in_progress" && status != "closed" {
        let v = &sf.value;
        let why = format!("Meta `Status` is `{v}`, expected `in_progress` or `closed`");
        return Err(doc.corrupt(Some(sf.line), why));
    }
    Ok(Meta {
        topic: value(fields, "Topic"),
        target: value(fields, "Target"),
        created: value(fields, "Created"),
        last_updated: value(fields, "Last updated"),
        status,
        participants: parse_participants(&value(fields, "Participants").unwrap_or_default()),
    })
}

fn parse_participants(text: &str) -> Vec<Participant> {
    let parts = text.split(',').map(str::trim).filter(|p| !p.is_empty());
    let participant = |p: &str| {
        let (name, role) = p.split_once('(').unwrap_or((p, ""));
        let role = role.trim_end_matches(')').trim();
        let role = (!role.is_empty()).then(|| role.to_string());
        Participant {
            name: name.trim().to_string(),
            role,
        }
    };
    parts.map(participant).collect()
}

/// Steps: a `Note:` line, then `### NN` entries from 01 without gaps, with `Actor` and `Status`.
fn read_steps(doc: &Doc<'_>, sec: &Section) -> Result<(Option<usize>, Vec<Step>)> {
    let before = |i: &usize| !matches!(heading(&doc.lines[*i]), Some((3, _)));
    let is_note = |i: &usize| doc.lines[*i].trim_start().starts_with("Note:");
    let note = doc.body(sec).take_while(before).find(is_note);
    let mut steps = Vec::new();
    for (expected, (head, text, end)) in (1u32..).zip(doc.entries(sec)) {
        let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
        let why = format!("step heading `### {text}` does not start with its number (`### 01`)");
        let number: u32 = digits.parse().map_err(|_| doc.corrupt(Some(head), why))?;
        if number != expected {
            let why = format!("step {number:02} where step {expected:02} was expected");
            return Err(doc.corrupt(Some(head), why));
        }
        let fields = doc.fields(head + 1, end);
        let missing =
            |key: &str| doc.corrupt(Some(head), format!("step {number:02} has no `{key}`"));
        let actor = value(&fields, "Actor").ok_or_else(|| missing("Actor"))?;
        let sf = get(&fields, "Status").ok_or_else(|| missing("Status"))?;
        let bad = |f: &Field, what: &str, e| {
            doc.corrupt(Some(f.line), format!("step {number:02} has {what} {e}"))
        };
        let status = StepStatus::expected(&sf.value).map_err(|e| bad(sf, "status", e))?;
        let action = get(&fields, "Action").filter(|f| !f.value.is_empty());
        let action = action.map(|f| Action::expected(&f.value).map_err(|e| bad(f, "action", e)));
        steps.push(Step {
            number,
            actor,
            status,
            action: action.transpose()?,
            input: value(&fields, "Input"),
            output: value(&fields, "Output"),
            summary: value(&fields, "Summary"),
            next: value(&fields, "Next"),
            at: head,
            fields,
        });
    }
    Ok((note, steps))
}

/// Issues: one table, a header with the five columns in any order, `|----|`, rows to a non-row.
fn read_issues(doc: &Doc<'_>, sec: &Section) -> Result<(Option<Table>, Vec<Issue>)> {
    let row = |i: usize| split_row(&doc.lines[i]).filter(|_| !doc.fence[i]);
    let Some((h, header)) = doc.body(sec).find_map(|i| Some((i, row(i)?))) else {
        return Ok((None, Vec::new()));
    };
    let lower = |c: &String| decode_cell(c).to_ascii_lowercase();
    let header: Vec<String> = header.iter().map(lower).collect();
    let mut cols = [0; 5];
    for (k, name) in COLUMNS.iter().enumerate() {
        cols[k] = header.iter().position(|c| c == name).ok_or_else(|| {
            let why = format!(
                "the Issues table has no `{name}` column (ID, Severity, Title, Status, Resolution)"
            );
            doc.corrupt(Some(h), why)
        })?;
    }
    let dashes = |c: &String| {
        let c = c.trim_matches(':');
        !c.is_empty() && c.bytes().all(|b| b == b'-')
    };
    let separator = doc.lines.get(h + 1).and_then(|l| split_row(l));
    let separator = separator.is_some_and(|c| c.len() == header.len() && c.iter().all(dashes));
    if !separator {
        let why = "the Issues table header must be followed by a `|----|` separator row";
        return Err(doc.corrupt(Some(h + 1), why));
    }
    let rows: Vec<_> = (h + 2..sec.end).map_while(|i| Some((i, row(i)?))).collect();
    let mut issues = Vec::<Issue>::new();
    for &(i, ref cells) in &rows {
        let (n, want) = (cells.len(), header.len());
        if n != want {
            let why = format!(
                "this Issues row has {n} cells, the header {want} (escape `|` inside a cell as `\\|`)"
            );
            return Err(doc.corrupt(Some(i), why));
        }
        let cell = |k: usize| decode_cell(&cells[cols[k]]);
        let id = cell(0);
        if id.is_empty() {
            return Err(doc.corrupt(Some(i), "an Issues row without an ID"));
        }
        if issues.iter().any(|x| x.id.eq_ignore_ascii_case(&id)) {
            return Err(doc.corrupt(Some(i), format!("issue id `{id}` is used twice")));
        }
        let bad = |what: &str, e| doc.corrupt(Some(i), format!("issue `{id}` has {what} {e}"));
        let severity = Severity::expected(&cell(1)).map_err(|e| bad("severity", e))?;
        let status = IssueStatus::expected(&cell(3)).map_err(|e| bad("status", e))?;
        let resolution = Some(cell(4)).filter(|r| !r.is_empty());
        issues.push(Issue {
            id,
            severity,
            title: cell(2),
            status,
            resolution,
        });
    }
    let table = Table {
        cols,
        ncols: header.len(),
        end: h + 2 + rows.len(),
        rows,
    };
    Ok((Some(table), issues))
}

/// Agreements Log: `- [DISPUTED] DECISION - ADOPTED POSITION` bullets, other lines ignored.
fn read_agreements(doc: &Doc<'_>, sec: &Section) -> Vec<Agreement> {
    doc.body(sec)
        .filter_map(|i| {
            let t = doc.lines[i].trim_start();
            let entry = t.strip_prefix("- ").or(t.strip_prefix("* "))?.trim();
            let rest = entry.strip_prefix("[DISPUTED]");
            let (disputed, text) = (rest.is_some(), rest.map_or(entry, str::trim));
            let (decision, adopted) = match text.rsplit_once(" - ") {
                Some((d, a)) if !a.trim().is_empty() => (d.trim(), Some(a.trim().to_string())),
                _ => (text, None),
            };
            let (text, decision) = (text.to_string(), decision.to_string());
            Some(Agreement {
                text,
                decision,
                adopted,
                disputed,
                line: i,
            })
        })
        .collect()
}

/// Handoff Prompts: `### For ACTOR (step NN)` entries; a fenced body gives the inside of its fence.
fn read_prompts(doc: &Doc<'_>, sec: &Section) -> Vec<Prompt> {
    (doc.entries(sec).into_iter())
        .map(|(h, text, end)| {
            let who = text.strip_prefix("For ");
            let who = who.map(|r| r.split_once(" (step ").unwrap_or((r, "")));
            let body = trimmed_block(&doc.lines[h + 1..end]);
            let fence = body.first().and_then(|l| fence_open(l));
            let inner = match (fence, body.last()) {
                (Some(f), Some(close)) if body.len() >= 2 && fence_closes(close, f) => {
                    &body[1..body.len() - 1]
                }
                _ => &body,
            };
            Prompt {
                heading: text.to_string(),
                actor: who.map(|(a, _)| a.trim().to_string()),
                step: who.and_then(|(_, n)| n.trim_end_matches(')').trim().parse().ok()),
                text: inner.join("\n"),
                lines: (h, end),
            }
        })
        .collect()
}

/// The body of the `## Handoff Prompt for Next Actor` section that ends an output file.
pub(crate) fn handoff_section(path: &Path, text: &str) -> Result<String> {
    let lines = lines(text);
    let fence = fenced(&lines);
    let top = |i: usize| Some((i, heading(&lines[i]).filter(|&(l, _)| l <= 2 && !fence[i])?));
    let heads: Vec<_> = (0..lines.len()).filter_map(top).collect();
    let handoff = |&(_, (l, t)): &(_, (_, &str))| l == 2 && t.eq_ignore_ascii_case(HANDOFF_HEADING);
    let shown = path.display();
    let Some(k) = heads.iter().rposition(handoff) else {
        return Err(Error::bad_input(format!(
            "`{shown}` does not end with a `## {HANDOFF_HEADING}` section"
        )));
    };
    if let Some((i, (_, t))) = heads[k + 1..].last() {
        return Err(Error::bad_input(format!(
            "`{shown}` must end with its `## {HANDOFF_HEADING}` section, but `{t}` follows it at line {}",
            i + 1
        )));
    }
    let body = trimmed_block(&lines[heads[k].0 + 1..]);
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

    fn lines(s: &str) -> Vec<String> {
        s.split('\n').map(String::from).collect()
    }

    #[test]
    fn cells_escape_and_unescape() {
        for s in "a|b,a\\|b,a\\,a\\\\b,C:\\path,|,\\,x \\| y | z".split(',') {
            assert_eq!(decode_cell(&encode_cell(s)), s, "{s:?}");
            let cells = split_row(&render_row(&[encode_cell(s), "x".into()])).unwrap();
            let got = (cells.len(), decode_cell(&cells[0]));
            assert_eq!(got, (2, s.trim().to_string()));
        }
    }

    #[test]
    fn fields_headings_and_fences() {
        for (line, at) in [("- **Status:** done", 3), ("  * **Status**: done\r", 0)] {
            let f = parse_field(line, at).unwrap();
            assert_eq!((&*f.key, &*f.value, f.line), ("Status", "done", at));
        }
        for not in ["- **Status** done", "- **:** x", "Status: done"] {
            assert!(parse_field(not, 0).is_none(), "{not}");
        }
        assert_eq!(heading("## Meta"), Some((2, "Meta")));
        assert_eq!(heading("   ### 01 ##"), Some((3, "01")));
        assert!(heading("    ## indented code").is_none() && heading("##no space").is_none());
        let fence = fenced(&lines("a\n````text\n```\n## x\n````\nb"));
        assert_eq!(fence, [false, true, true, true, true, false]);
        assert_eq!(["no ticks", "a ```` b"].map(fence_for), ["```", "`````"]);
        let renumbered = renumber_heading("### 12 - response", 2);
        assert_eq!(renumbered, "### 02 - response");
        assert!(is_step_heading("### 03") && !is_step_heading("### For Codex (step 03)"));
        let p = parse_participants("Claude (reviewer), Codex ( implementer ),  Gemini, , X ()");
        let roles: Vec<_> = (p.iter())
            .map(|p| format!("{}:{}", p.name, p.role.as_deref().unwrap_or("-")))
            .collect();
        let want = ["Claude:reviewer", "Codex:implementer", "Gemini:-", "X:-"];
        assert_eq!(roles, want);
    }

    #[test]
    fn handoff_sections() {
        let (p, h) = (Path::new("out.md"), "## Handoff Prompt for Next Actor");
        let ok = format!("# Review\nfindings\n\n{h}\n\nYou are next.\n### Details\nmore\n");
        let body = handoff_section(p, &ok).unwrap();
        assert_eq!(body, "You are next.\n### Details\nmore");
        for bad in [
            "# Review\n".into(),
            format!("{h}\nx\n## Later\n"),
            format!("{h}\n\n\n"),
            format!("```\n{h}\nx\n```\n"),
        ] {
            assert!(handoff_section(p, &bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn prompts_and_agreements() {
        let text = "## Meta\n- **Status:** in_progress\n## Current State\n- **Next actor:** A\n## Steps\n\
## Issues\n## Agreements Log\nKey positions\n- [DISPUTED] Timelines - a - b - escalated to user\n\
- Keep NPV -  \n## Handoff Prompts\n### For gemini (step 02)\n\n````text\na\n```\nb\n````\n\n\
### For Codex\nplain\r\ntext\r\n### Notes\n```\nunclosed";
        let (_, v) = analyze(Path::new("t"), &lines(text)).unwrap();
        let a: Vec<_> = (v.agreements.iter())
            .map(|a| (a.disputed, &*a.text, &*a.decision, a.adopted.as_deref()))
            .collect();
        let (text, escalated) = ("Timelines - a - b", Some("escalated to user"));
        let disputed = format!("{text} - escalated to user");
        let want = [
            (true, &*disputed, text, escalated),
            (false, "Keep NPV -", "Keep NPV -", None),
        ];
        assert_eq!(a, want);
        let p: Vec<_> = (v.handoff_prompts.iter())
            .map(|p| (p.actor.as_deref(), p.step, &*p.text))
            .collect();
        let want = [
            (Some("gemini"), Some(2), "a\n```\nb"),
            (Some("Codex"), None, "plain\ntext"),
            (None, None, "```\nunclosed"),
        ];
        assert_eq!(p, want);
    }
}
