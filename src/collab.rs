//! The shared collaboration file of seed 000: one JSON object per line,
//! `{"llm_id": "Claude", "response": "…", "time": "…"}`, written as Python's `json.dumps` writes
//! it, appended whole under a kernel lock and fsynced; reading skips a bad line (naming it) and
//! never goes through a symlink.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::clock;
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::wait::{FolderWatch, RECHECK};
use crate::workspace::{AgentId, Target};

/// The longest line coord writes or reads.
const LINE_CAP_MIB: u64 = 4;
const LINE_CAP: u64 = LINE_CAP_MIB * 1024 * 1024;

/// One entry of the collaboration file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Entry {
    /// The 1-based line it was read from, or written to.
    pub(crate) line: usize,
    /// Who wrote it (`llm_id`).
    pub llm_id: String,
    /// What they wrote (`response`; a value that is not a string is given as its JSON text).
    pub response: String,
    /// When, if the line says (coord writes it; the seed's class does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) time: Option<String>,
}

/// A line that could not be read as an entry.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Problem {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

/// What one read of the file found.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// The lines skipped, in file order.
    pub problems: Vec<Problem>,
    /// Whether the file had shrunk since the last read (reading started over).
    pub restarted: bool,
}

/// The line coord appends for `llm_id` saying `response` at `time`, without its newline:
/// Python's `json.dumps` with its defaults (`", "` and `": "`, `ensure_ascii=True`).
pub fn render_line(llm_id: &str, response: &str, time: &str) -> String {
    let python = |s: &str| {
        let mut out = String::new();
        // serde_json escapes quotes, backslashes and control characters as Python does; what
        // is left beyond printable ASCII becomes `\uXXXX` (UTF-16 units, lowercase hex).
        for c in Value::from(s).to_string().chars() {
            if (' '..='~').contains(&c) {
                out.push(c);
            } else {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
        out
    };
    let (id, response, time) = (python(llm_id), python(response), python(time));
    format!("{{\"llm_id\": {id}, \"response\": {response}, \"time\": {time}}}")
}

/// Append an entry by `agent` (its name as given) saying `response` to `target`.
pub fn write(target: &Target, agent: &AgentId, response: &str) -> Result<Entry> {
    let time = clock::now_string();
    let line = render_line(agent.name(), response, &time);
    if line.len() as u64 >= LINE_CAP {
        let rel = &target.rel;
        return Err(Error::bad_input(format!(
            "the response is too long for one line of `{rel}` (at most {LINE_CAP_MIB} MiB once encoded)"
        )));
    }
    Ok(Entry {
        line: fsutil::append_line_durable_numbered(&target.abs, line.as_bytes())?,
        llm_id: agent.name().to_string(),
        response: response.to_string(),
        time: Some(time),
    })
}

/// Read one line as an entry, or say what is wrong with it.
pub fn parse_line(line: usize, bytes: &[u8]) -> std::result::Result<Entry, Problem> {
    let bad = |why: &str| Problem {
        line,
        why: why.to_string(),
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        // serde's "at line 1 column N" says nothing on one line: keep the column.
        let text = e.to_string();
        let text = match text.find(" at line ") {
            Some(at) => format!("{} at column {}", &text[..at], e.column()),
            None => text,
        };
        bad(&format!("not valid JSON ({text})"))
    })?;
    let Value::Object(map) = value else {
        return Err(bad("not a JSON object"));
    };
    let llm_id = match map.get("llm_id") {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Number(_)) => v.to_string(),
        Some(_) => return Err(bad("`llm_id` is not a string")),
        None => return Err(bad("no `llm_id`")),
    };
    let response = match map.get("response") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => return Err(bad("no `response`")),
    };
    let time = map.get("time").and_then(Value::as_str).map(str::to_string);
    Ok(Entry {
        line,
        llm_id,
        response,
        time,
    })
}

/// Where the next read of one file starts: its byte offset, and the line number before it.
#[derive(Default)]
struct Reader {
    offset: u64,
    line: usize,
}

impl Reader {
    /// Read what was appended since the last call. With `to_end`, a last line without its
    /// newline is read too; otherwise it is left for a later call (it may still be growing).
    fn read_new(&mut self, path: &Path, to_end: bool) -> Result<Batch> {
        let mut file = fsutil::open_regular_nofollow(path).at("read", path)?;
        let len = file.metadata().at("read", path)?.len();
        let mut batch = Batch::default();
        if len < self.offset {
            (self.offset, self.line, batch.restarted) = (0, 0, true);
        }
        file.seek(SeekFrom::Start(self.offset)).at("read", path)?;
        let mut reader = BufReader::new(file.take(len - self.offset));
        let mut piece =
            |cap: u64, into: &mut Vec<u8>| (&mut reader).take(cap).read_until(b'\n', into);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let mut n = piece(LINE_CAP + 1, &mut buf).at("read", path)?;
            if n == 0 {
                break;
            }
            let mut complete = buf.last() == Some(&b'\n');
            let too_long = !complete && buf.len() as u64 > LINE_CAP;
            let mut rest = Vec::new();
            while too_long && !complete {
                rest.clear();
                let more = piece(LINE_CAP, &mut rest).at("read", path)?;
                if more == 0 {
                    break;
                }
                n += more;
                complete = rest.last() == Some(&b'\n');
            }
            let end = buf.iter().rposition(|b| !matches!(b, b'\n' | b'\r'));
            let text = &buf[..end.map_or(0, |i| i + 1)];
            // A last line without its newline is left for later unless reading to the end; then,
            // one that does not parse is an append still being written, not a corrupt line.
            if !complete && (!to_end || (!too_long && parse_line(self.line + 1, text).is_err())) {
                break;
            }
            self.offset += n as u64;
            self.line += 1;
            if too_long {
                let why = format!("longer than {LINE_CAP_MIB} MiB");
                batch.problems.push(Problem {
                    line: self.line,
                    why,
                });
            } else if !text.iter().all(u8::is_ascii_whitespace) {
                match parse_line(self.line, text) {
                    Ok(e) => batch.entries.push(e),
                    Err(p) => batch.problems.push(p),
                }
            }
        }
        Ok(batch)
    }
}

/// Read the whole file.
pub fn read_all(path: &Path) -> Result<Batch> {
    Reader::default().read_new(path, true)
}

/// Hand every batch of new lines to `on_batch` (the existing ones first), woken by changes in the
/// file's folder; a missing file is waited for, and this returns only when it cannot be read.
pub fn follow(path: &Path, on_batch: &mut dyn FnMut(Batch)) -> Result<()> {
    let mut watch = FolderWatch::new(&[fsutil::parent_of(path).to_path_buf()]);
    let mut reader = Reader::default();
    loop {
        match reader.read_new(path, false) {
            Ok(b) if b.entries.is_empty() && b.problems.is_empty() && !b.restarted => {}
            Ok(batch) => on_batch(batch),
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        watch.wait(RECHECK);
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn lines_look_like_python_json_dumps() {
        assert_eq!(
            render_line("a", "é \"q\" \n\t\u{7f} 😀", "t"),
            r#"{"llm_id": "a", "response": "\u00e9 \"q\" \n\t\u007f \ud83d\ude00", "time": "t"}"#
        );
    }

    #[test]
    fn a_line_that_is_no_entry_says_why() {
        let why = |bad: &[u8]| parse_line(3, bad).unwrap_err().why;
        assert_eq!(why(b"[1]"), "not a JSON object");
        assert_eq!(why(br#"{"llm_id": "x"}"#), "no `response`");
    }

    /// A file that shrinks is read again from the start, and says so.
    #[test]
    fn the_reader_starts_over_when_the_file_shrinks() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.txt");
        let (a, b) = (render_line("a", "1", "t"), render_line("b", "2", "t"));
        std::fs::write(&f, format!("{a}\n\n{b}\n")).unwrap();
        let mut r = Reader::default();
        assert_eq!(r.read_new(&f, false).unwrap().entries[1].line, 3);
        std::fs::write(&f, render_line("c", "3", "t")).unwrap();
        let b = r.read_new(&f, true).unwrap();
        assert!(b.restarted);
        assert_eq!((b.entries[0].line, b.entries[0].llm_id.as_str()), (1, "c"));
    }
}
