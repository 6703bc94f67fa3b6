//! All rendering: human text (aligned tables, ages, colour on a terminal) and `--json`.
//!
//! stdout carries data, stderr diagnostics. A closed stdout (`coord status | head -1`) ends the
//! process quietly. Text that comes from files is shown with control characters replaced, so a
//! hostile presence file cannot drive the terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

/// Write `text` and a newline to stdout; exit quietly if stdout is closed.
pub fn line(text: &str) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// Write `bytes` as they are to stdout; exit quietly if stdout is closed.
pub fn raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

/// Whether a JSON document was already printed (stdout carries at most one).
pub fn json_printed() -> bool {
    JSON_PRINTED.load(Ordering::Relaxed)
}

/// Write one JSON document to stdout.
pub fn json<T: Serialize>(value: &T) {
    JSON_PRINTED.store(true, Ordering::Relaxed);
    match serde_json::to_string_pretty(value) {
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
    // Messages quote text from files (a holder's name, a reason): clean it here, once, so a
    // hostile lock file cannot drive the terminal. Line breaks of multi-line messages stay.
    let keep_lines = |text: &str| text.split('\n').map(clean).collect::<Vec<_>>().join("\n");
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "error: {}", keep_lines(message));
    if let Some(hint) = hint {
        let _ = writeln!(err, "hint: {}", keep_lines(hint));
    }
}

/// Whether stdout gets colour: a terminal, `NO_COLOR` unset or empty, `TERM` not `dumb`.
pub fn color_enabled() -> bool {
    std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Colours used for states.
#[derive(Debug, Clone, Copy)]
pub enum Tone {
    /// Nothing special.
    Plain,
    /// Good (ACTIVE, LIVE held by you).
    Good,
    /// Needs attention (INACTIVE, WAITING).
    Warn,
    /// Broken (STALE, CONFLICT).
    Bad,
    /// Less important (FINISHED, dashes).
    Dim,
}

fn paint(text: &str, tone: Tone, color: bool) -> String {
    let code = match tone {
        Tone::Plain => return text.to_string(),
        Tone::Good => "32",
        Tone::Warn => "33",
        Tone::Bad => "1;31",
        Tone::Dim => "2",
    };
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// `text` in the colour of a broken state (when `color`).
pub fn paint_bad(text: &str, color: bool) -> String {
    paint(text, Tone::Bad, color)
}

/// The tone of a state word.
pub fn tone_of(word: &str) -> Tone {
    match word {
        "ACTIVE" | "LIVE" | "ACCEPTED" => Tone::Good,
        "INACTIVE" | "WAITING" | "REQUESTED" => Tone::Warn,
        "STALE" | "CONFLICT" | "crashed" => Tone::Bad,
        "FINISHED" | "-" => Tone::Dim,
        _ => Tone::Plain,
    }
}

/// Replace control characters in text that came from a file.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A cell: text and tone.
pub struct Cell {
    text: String,
    tone: Tone,
}

impl Cell {
    /// A plain cell (cleaned of control characters).
    pub fn plain(text: impl AsRef<str>) -> Cell {
        Cell {
            text: clean(text.as_ref()),
            tone: Tone::Plain,
        }
    }

    /// A cell whose tone follows its state word.
    pub fn state(text: impl AsRef<str>) -> Cell {
        let text = clean(text.as_ref());
        let tone = tone_of(&text);
        Cell { text, tone }
    }

    /// A cell for an optional value (`-` when missing).
    pub fn opt(text: Option<&str>) -> Cell {
        match text {
            Some(t) if !t.is_empty() => Cell::plain(t),
            _ => Cell {
                text: "-".into(),
                tone: Tone::Dim,
            },
        }
    }
}

/// Render rows as aligned columns under a header, indented by two spaces.
pub fn table(headers: &[&str], rows: Vec<Vec<Cell>>, color: bool) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.text.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| pad(h, widths[i], i + 1 == headers.len()))
        .collect();
    out.push_str("  ");
    out.push_str(&paint(&header.join("  "), Tone::Dim, color));
    out.push('\n');
    for row in rows {
        out.push_str("  ");
        let last = row.len();
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let padded = pad(&c.text, widths[i], i + 1 == last);
                paint(&padded, c.tone, color)
            })
            .collect();
        out.push_str(&cells.join("  "));
        out.push('\n');
    }
    out.pop();
    out
}

fn pad(text: &str, width: usize, last: bool) -> String {
    if last {
        return text.to_string();
    }
    let n = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(n)))
}

/// `3m ago`, or `-`.
pub fn ago(age_s: Option<u64>) -> String {
    match age_s {
        Some(s) => format!(
            "{} ago",
            coord::clock::format_age(std::time::Duration::from_secs(s))
        ),
        None => "-".into(),
    }
}

/// A section title.
pub fn title(text: &str, color: bool) -> String {
    if color {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The one line said on stderr when a lock is busy and coord starts waiting: who holds it, since
/// when, what they work on (or how many waiters stand in line first).
pub fn waiting_line(b: &coord::v3::lock::Blocker) -> String {
    let who = if b.queued_ahead > 0 {
        format!(
            "{} earlier waiter(s) stand in line ({} first)",
            b.queued_ahead,
            clean(&b.holder)
        )
    } else {
        format!(
            "held by {} since {}{}",
            clean(&b.holder),
            b.since,
            b.working_on
                .as_deref()
                .map(|w| format!(" (working on {})", clean(w)))
                .unwrap_or_default()
        )
    };
    format!("waiting for `{}`: {who}", b.file)
}

/// Say on stderr, for each stale lock an acquisition took over, whose it was and why.
pub fn took_over_notes(acquired: &[coord::v3::lock::Acquired]) {
    for a in acquired {
        for t in &a.took_over {
            diag(&format!(
                "note: took over the stale lock of {} on `{}` ({})",
                clean(&t.from),
                a.file,
                t.why
            ));
        }
    }
}
