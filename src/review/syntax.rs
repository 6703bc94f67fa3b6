//! The markdown a tracker is written in, line by line: headings, code fences, `- **Key:** value`
//! fields, table rows and their cell escapes.
//!
//! Everything here works on single lines (or on which lines are fenced) and knows nothing of
//! the seed's sections: [`super::parse`] reads sections with it, [`super::tracker`] and
//! [`super::template`] write lines with it, so what is written is what is read.
//!
//! Invariants: a line inside a fenced code block (```` ``` ```` or `~~~`, the fences included) is
//! never a heading or a field; [`decode_cell`] undoes [`encode_cell`] for any text, so a `|` or a
//! `\` in a title or resolution survives the Issues table.

/// The heading that must end every output file, and whose body is the prompt for the next actor.
pub const HANDOFF_HEADING: &str = "Handoff Prompt for Next Actor";

/// The Meta value of `Prompt for next actor`.
pub const PROMPT_POINTER: &str = "See Handoff Prompts section below";

/// A `- **Key:** value` line (or `- **Key**: value`, or with `*` as the bullet).
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) line: usize,
    /// Byte offset in the line where the value starts (after the `:**` and one blank).
    pub(crate) value_at: usize,
}

pub(crate) fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// A heading's level and text (`## Meta` → `(2, "Meta")`).
pub(crate) fn heading(line: &str) -> Option<(usize, &str)> {
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

/// Whether `line` is a `### NN…` step heading.
pub(crate) fn is_step_heading(line: &str) -> bool {
    matches!(heading(line), Some((3, t)) if t.starts_with(|c: char| c.is_ascii_digit()))
}

/// A step heading with its number replaced (`### 12 - response` → `### 02 - response`).
pub(crate) fn renumber_heading(line: &str, number: u32) -> String {
    let lead = line.len() - line.trim_start().len();
    let after_hashes = line[lead..].trim_start_matches('#');
    let rest = after_hashes.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    format!("### {number:02}{}", &rest[digits..])
}

/// Which lines lie inside a fenced code block (the fences included).
pub(crate) fn fenced(lines: &[String]) -> Vec<bool> {
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

/// The fence that can hold `text` without being closed by it: one backtick more than its
/// longest run of backticks, at least three.
pub(crate) fn fence_for(text: &str) -> String {
    "`".repeat(longest_run(text, '`').max(2) + 1)
}

fn longest_run(text: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == ch { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// `lines` without their `\r` line ends and without blank lines at either end.
pub(crate) fn without_blank_ends(lines: &[String]) -> Vec<&str> {
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

/// Read line `at` as a field, if it is one.
pub(crate) fn parse_field(line: &str, at: usize) -> Option<Field> {
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

/// A new field line, as coord writes it.
pub(crate) fn field_line(key: &str, value: &str) -> String {
    if value.is_empty() {
        format!("- **{key}:**")
    } else {
        format!("- **{key}:** {value}")
    }
}

/// The field `key` (case is ignored).
pub(crate) fn get<'a>(fields: &'a [Field], key: &str) -> Option<&'a Field> {
    fields.iter().find(|f| f.key.eq_ignore_ascii_case(key))
}

/// The value of field `key`, `None` when missing or empty.
pub(crate) fn value(fields: &[Field], key: &str) -> Option<String> {
    get(fields, key)
        .map(|f| f.value.clone())
        .filter(|v| !v.is_empty())
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
pub(crate) fn split_row(line: &str) -> Option<Vec<String>> {
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

/// A table row of already escaped cells.
pub(crate) fn render_row(cells: &[String]) -> String {
    let mut out = String::from("|");
    for c in cells {
        if c.is_empty() {
            out.push_str("  |");
        } else {
            out.push(' ');
            out.push_str(c);
            out.push_str(" |");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_and_unescape() {
        for s in [
            "a|b",
            "a\\|b",
            "a\\",
            "a\\\\b",
            "C:\\path",
            "|",
            "\\",
            "x \\| y | z",
        ] {
            assert_eq!(decode_cell(&encode_cell(s)), s, "{s:?}");
            let row = render_row(&[encode_cell(s), "x".into()]);
            let cells = split_row(&row).unwrap();
            assert_eq!(cells.len(), 2, "{row}");
            assert_eq!(decode_cell(&cells[0]), s.trim());
        }
    }

    #[test]
    fn both_field_styles_are_fields() {
        let f = parse_field("- **Status:** done", 3).unwrap();
        assert_eq!(
            (f.key.as_str(), f.value.as_str(), f.line),
            ("Status", "done", 3)
        );
        let f = parse_field("  * **Status**: done\r", 0).unwrap();
        assert_eq!((f.key.as_str(), f.value.as_str()), ("Status", "done"));
        assert!(parse_field("- **Status** done", 0).is_none());
        assert!(parse_field("- **:** x", 0).is_none());
        assert!(parse_field("Status: done", 0).is_none());
    }

    #[test]
    fn headings_and_fences() {
        assert_eq!(heading("## Meta"), Some((2, "Meta")));
        assert_eq!(heading("   ### 01 ##"), Some((3, "01")));
        assert_eq!(heading("    ## indented code"), None);
        assert_eq!(heading("##no space"), None);
        let lines: Vec<String> = ["a", "````text", "```", "## x", "````", "b"]
            .map(String::from)
            .to_vec();
        assert_eq!(fenced(&lines), [false, true, true, true, true, false]);
        assert_eq!(fence_for("no ticks"), "```");
        assert_eq!(fence_for("a ```` b"), "`````");
        assert_eq!(
            renumber_heading("### 12 - response", 2),
            "### 02 - response"
        );
        assert!(is_step_heading("### 03"));
        assert!(!is_step_heading("### For Codex (step 03)"));
    }
}
