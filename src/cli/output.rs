//! All rendering: human text (aligned tables, ages, colour on a terminal) and `--json`.
//! Text from files is shown with control characters replaced (a hostile file cannot drive the
//! terminal); a closed stdout ends the process quietly.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

/// Write `text` and a newline to stdout.
pub fn line(text: &str) {
    raw(format!("{text}\n").as_bytes());
}

/// Write `bytes` as they are to stdout; exit quietly if stdout is closed (its reader is gone).
pub fn raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// Whether a JSON document was already printed (stdout carries at most one).
pub static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

/// `value` with `schema_version` first, as `--json` prints it. The version goes up when a field
/// changes meaning or goes away; new fields do not change it.
pub fn json_value<T: Serialize>(value: &T) -> serde_json::Result<serde_json::Value> {
    Ok(match serde_json::to_value(value)? {
        serde_json::Value::Object(fields) => {
            let mut doc = serde_json::Map::from_iter([("schema_version".into(), 1.into())]);
            doc.extend(fields);
            doc.into()
        }
        doc => doc,
    })
}

/// `value` as one JSON line with `schema_version` first.
pub fn json_text<T: Serialize>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string(&json_value(value)?)
}

/// `value` as `--json` prints it: pretty, with `schema_version` first.
pub fn json_pretty<T: Serialize>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&json_value(value)?)
}

pub fn json<T: Serialize>(value: &T) {
    JSON_PRINTED.store(true, Ordering::Relaxed);
    match json_pretty(value) {
        Ok(text) => line(&text),
        Err(e) => eprintln!("error: cannot render JSON: {e}"),
    }
}

/// A diagnostic line on stderr (`note:`, `warning:`, `waiting …`).
pub fn diag(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// `error: …` and, when known, `hint: …` on stderr.
pub fn error_line(message: &str, hint: Option<&str>) {
    diag(&error_text(message, hint));
}

/// The `error: …` line and, when known, the `hint: …` line, without a final line break.
pub fn error_text(message: &str, hint: Option<&str>) -> String {
    // Messages quote text from files (a holder's name): cleaned here, once; line breaks stay.
    let keep_lines = |text: &str| text.split('\n').map(clean).collect::<Vec<_>>().join("\n");
    let hint = hint.map(|h| format!("\nhint: {}", keep_lines(h)));
    format!("error: {}{}", keep_lines(message), hint.unwrap_or_default())
}

/// `--color`: when to colour human output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` says no (or `CLICOLOR_FORCE` says yes anyway).
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

/// `--color`, set once the command line is read.
pub static COLOR_CHOICE: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Whether stdout gets colour: `--color`, else `NO_COLOR`, `CLICOLOR_FORCE`, a non-dumb terminal.
pub fn color_enabled() -> bool {
    let set = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    match COLOR_CHOICE.get() {
        Some(ColorChoice::Always) => true,
        Some(ColorChoice::Never) => false,
        _ if set("NO_COLOR").is_some() => false,
        _ if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") => true,
        _ => std::io::stdout().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb"),
    }
}

/// How wide a line of a table may be: `COLUMNS` when set (at most 65,535, the widest a terminal
/// reports), else the terminal's width when stdout is one; `None` (no limit) into a pipe or file.
pub fn terminal_width() -> Option<usize> {
    let columns = std::env::var("COLUMNS").ok();
    let columns = columns.and_then(|c| c.trim().parse::<usize>().ok());
    if let Some(n) = columns.filter(|n| *n > 0) {
        return Some(n.min(usize::from(u16::MAX)));
    }
    // Not a terminal (a pipe, a file): no size.
    use std::os::fd::AsFd as _;
    let size = rustix::termios::tcgetwinsize(std::io::stdout().as_fd()).ok()?;
    Some(usize::from(size.ws_col)).filter(|n| *n > 0)
}

/// The SGR colour codes of states: good (ACTIVE, LIVE held by you), needs attention (INACTIVE,
/// WAITING), broken (STALE, CONFLICT), less important (FINISHED, dashes); plain is none.
pub const GOOD: &str = "32";
pub const WARN: &str = "33";
pub const BAD: &str = "1;31";
pub const DIM: &str = "2";
const PLAIN: &str = "";

/// `text` in the colour of SGR `code` (when `color` and there is one).
pub fn paint(text: &str, code: &str, color: bool) -> String {
    if color && !code.is_empty() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A `verbatim_doc_comment` help text with each prose paragraph on one line again (for clap to
/// wrap); indented lines (examples) and blank lines stay as they are.
pub fn reflow(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prose = false;
    for line in text.lines() {
        let indented = line.starts_with([' ', '\t']);
        if line.trim().is_empty() {
            prose = false;
        } else if prose && !indented {
            out.push(' ');
            out.push_str(line.trim_end());
            continue;
        } else {
            prose = !indented;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line.trim_end());
    }
    out
}

/// Replace control characters in text that came from a file.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A block of text from a file (a message, a prompt), for the terminal: newlines and tabs kept,
/// the `\r` of a CRLF line end dropped, any other control character replaced by `?`.
pub fn clean_block(text: &str) -> String {
    let keep = |c: char| matches!(c, '\n' | '\t') || !c.is_control();
    let text = text.replace("\r\n", "\n");
    text.chars()
        .map(|c| if keep(c) { c } else { '?' })
        .collect()
}

pub struct Cell {
    text: String,
    tone: &'static str,
}

impl Cell {
    /// A plain cell (cleaned of control characters).
    pub fn plain(text: impl AsRef<str>) -> Cell {
        Cell {
            text: clean(text.as_ref()),
            tone: PLAIN,
        }
    }

    /// A cell whose tone follows its state word.
    pub fn state(text: impl AsRef<str>) -> Cell {
        let text = clean(text.as_ref());
        let tone = match text.as_str() {
            "ACTIVE" | "LIVE" | "ACCEPTED" => GOOD,
            "INACTIVE" | "WAITING" | "REQUESTED" => WARN,
            "STALE" | "CONFLICT" | "crashed" => BAD,
            "FINISHED" | "-" => DIM,
            _ => PLAIN,
        };
        Cell { text, tone }
    }

    /// A cell for an optional value (`-` when missing).
    pub fn opt(text: Option<&str>) -> Cell {
        match text {
            Some(t) if !t.is_empty() => Cell::plain(t),
            _ => Cell::state("-"),
        }
    }
}

/// Render rows as aligned columns under a header, indented by two spaces; the widest columns
/// are cut alike (ending in `…`, no column below 6) until lines fit [`terminal_width`].
pub fn table(headers: &[&str], mut rows: Vec<Vec<Cell>>, color: bool) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.text.chars().count());
        }
    }
    if let Some(limit) = terminal_width() {
        const MIN: usize = 6;
        let total = |w: &[usize]| 2 + w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
        // The widest column gives way first, down to the next widest: the wide ones end up
        // cut alike, rather than one cut to nothing while its neighbour stays whole.
        while total(&widths) > limit {
            let widest = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w);
            let Some((i, w)) = widest.filter(|(_, w)| *w > MIN) else {
                break;
            };
            let others = widths.iter().enumerate().filter(|(j, _)| *j != i);
            let next = others.map(|(_, w)| *w).max().unwrap_or(0);
            let cut = w.saturating_sub(total(&widths) - limit).max(next).max(MIN);
            widths[i] = if cut < w { cut } else { w - 1 };
        }
        for row in &mut rows {
            for (i, cell) in row.iter_mut().enumerate() {
                cell.text = fit(&cell.text, widths[i]);
            }
        }
    }
    // The last column is not padded: no line ends in spaces.
    let pad = |i: usize, last: usize, text: &str| match i + 1 == last {
        true => text.to_string(),
        false => format!("{text:w$}", w = widths[i]),
    };
    let header: Vec<String> = (headers.iter().enumerate())
        .map(|(i, h)| pad(i, headers.len(), &fit(h, widths[i])))
        .collect();
    let mut out = format!("  {}", paint(&header.join("  "), DIM, color));
    for row in rows {
        let cells: Vec<String> = (row.iter().enumerate())
            .map(|(i, c)| paint(&pad(i, row.len(), &c.text), c.tone, color))
            .collect();
        out.push_str(&format!("\n  {}", cells.join("  ")));
    }
    out
}

/// `text` wrapped at its spaces into lines of at most `width` characters, each line after the
/// first indented by `indent` spaces; a word longer than a whole line is cut, ending in `…`.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let width = width.max(indent + 10);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let room = |lines: &Vec<String>| width - if lines.is_empty() { 0 } else { indent };
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > room(&lines) {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&fit(word, room(&lines)));
    }
    lines.push(line);
    lines.join(&format!("\n{}", " ".repeat(indent)))
}

/// `text` cut to `width` characters, its end marked `…` when cut.
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut + "…"
}

/// `3m ago`, or `-`.
pub fn ago(age_s: Option<u64>) -> String {
    let age = |s| coord::clock::format_age(std::time::Duration::from_secs(s));
    age_s.map_or("-".into(), |s| format!("{} ago", age(s)))
}

pub fn title(text: &str, color: bool) -> String {
    paint(text, "1", color)
}

/// The one line said on stderr when a lock is busy and coord starts waiting: who holds it, since
/// when, what they work on (or how many waiters stand in line first).
pub fn waiting_line(b: &coord::lock::Blocker) -> String {
    let holder = clean(&b.holder);
    let who = if b.queued_ahead > 0 {
        let ahead = b.queued_ahead;
        format!("{ahead} earlier waiter(s) stand in line ({holder} first)")
    } else {
        let task = working_on(b.working_on.as_deref());
        format!("held by {holder} since {}{task}", b.since)
    };
    format!("waiting for `{}`: {who}", b.file)
}

/// ` (working on TASK)`, or nothing.
pub fn working_on(task: Option<&str>) -> String {
    task.map(|w| format!(" (working on {})", clean(w)))
        .unwrap_or_default()
}

/// A deadlock's cycle: `A waits for \`f\` held by B, B waits for ...`.
pub fn cycle(edges: &[coord::lock::deadlock::WaitEdge]) -> String {
    let steps = edges
        .iter()
        .map(|e| format!("{} waits for `{}` held by {}", e.agent, e.file, e.holder));
    steps.collect::<Vec<_>>().join(", ")
}

/// Say on stderr, for each stale lock an acquisition took over, whose it was and why.
pub fn took_over_notes(acquired: &[coord::lock::Acquired]) {
    took_over_lines(acquired).iter().for_each(|l| diag(l));
}

/// For each stale lock or claim an acquisition took over, whose it was and why.
pub fn took_over_lines(acquired: &[coord::lock::Acquired]) -> Vec<String> {
    acquired
        .iter()
        .flat_map(|a| {
            a.took_over.iter().map(move |t| {
                let (what, on) = match (&t.claim, &t.file) {
                    (Some(pattern), _) => ("claim", pattern),
                    (None, Some(file)) => ("lock", file),
                    (None, None) => ("lock", &a.file),
                };
                let (from, why) = (clean(&t.from), &t.why);
                format!("note: took over the stale {what} of {from} on `{on}` ({why})")
            })
        })
        .chain(acquired.iter().filter(|a| a.backup_kept).map(|a| {
            let (file, backup) = (&a.file, a.backup.as_deref().unwrap_or_default());
            format!(
                "note: `{file}` may hold their unfinished edit; their backup `{backup}` (as it was before it) is kept: put it back with `coord restore {file}`"
            )
        }))
        .collect()
}

/// Warn about each refreshed lock that `agent` had taken from another shell or session.
pub fn held_elsewhere_warnings(agent: &str, acquired: &[coord::lock::Acquired]) {
    let agent = clean(agent);
    for a in acquired.iter().filter(|a| a.held_from.is_some()) {
        diag(&format!(
            "warning: {agent} already holds `{}` from another session; the lock was refreshed, not taken (one agent name in two shells excludes nothing: give each shell its own `COORD_AGENT`)",
            a.file
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_paragraphs_are_one_line_and_examples_keep_theirs() {
        let text = "Lock files before you edit them, all or nothing,\nand wait while another holds one.\n\nExamples:\n  coord lock a.md\n  coord lock b.md --wait 5m\nAfter them,\nprose again.";
        assert_eq!(
            reflow(text),
            "Lock files before you edit them, all or nothing, and wait while another holds one.\n\nExamples:\n  coord lock a.md\n  coord lock b.md --wait 5m\nAfter them, prose again."
        );
        assert_eq!(reflow("One line"), "One line");
    }

    #[test]
    fn lines_wrap_at_word_boundaries() {
        let text = "10:41:44 claude-3f2a9c1b (repo-b, feature) finished: released `src/payments/retry.rs`, `src/payments/mod.rs`";
        let wrapped = wrap(text, 40, 9);
        for line in wrapped.lines() {
            assert!(line.chars().count() <= 40, "{line:?}");
        }
        let words: Vec<&str> = wrapped.split_whitespace().collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("         ")));
        assert_eq!(wrap("short", 40, 9), "short");
        let long = wrap(&format!("a {}", "x".repeat(60)), 30, 4);
        assert!(long.lines().all(|l| l.chars().count() <= 30), "{long}");
        assert!(long.ends_with('…'));
    }
}
