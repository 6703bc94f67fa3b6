//! The shared collaboration file of seed 000: one JSON object per line,
//! `{"llm_id": "Claude", "response": "…", "time": "…"}`, appended by every participant and read
//! back by all.
//!
//! Invariants:
//!
//! - **Compatible both ways with the seed's Python class.** coord writes each entry the way
//!   Python's `json.dumps` does (`", "` and `": "` separators, every non-ASCII or control
//!   character as a `\uXXXX` escape), so the file stays plain ASCII and
//!   `CollaborativeFileCommunication.read_responses` reads coord's lines; the extra `time` key is
//!   ignored there. coord reads the seed's own lines (`llm_id` and `response` only) as well.
//! - **Never interleaved.** A line is appended by [`fsutil::append_line_durable`]: one `write` of
//!   the whole line on an `O_APPEND` descriptor under a kernel lock on the file, then fsync.
//! - **Lenient reading.** A line that is not a JSON object with `llm_id` and `response` is
//!   reported with its 1-based number and skipped; the others are still returned. Blank lines are
//!   skipped silently. Lines are read with a size cap ([`LINE_CAP`]) and the file is never followed
//!   through a symlink.
//! - **Following** reads only complete lines (a line still being written is picked up when its
//!   newline arrives) and starts over, saying so, when the file shrinks.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::clock;
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::wait::{FolderWatch, RECHECK};
use crate::workspace::{AgentId, Target};

/// The longest line coord writes or reads (4 MiB).
pub const LINE_CAP: u64 = 4 * 1024 * 1024;

/// One entry of the collaboration file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Entry {
    /// The 1-based line it was read from, or written to.
    pub line: usize,
    /// Who wrote it (`llm_id`).
    pub llm_id: String,
    /// What they wrote (`response`; a value that is not a string is given as its JSON text).
    pub response: String,
    /// When, if the line says (coord writes it; the seed's class does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
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
#[derive(Debug, Clone, Default, Serialize)]
pub struct Batch {
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// The lines skipped, in file order.
    pub problems: Vec<Problem>,
    /// Whether the file had shrunk since the last read (reading started over).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restarted: bool,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.problems.is_empty() && !self.restarted
    }
}

/// The line coord appends for `llm_id` saying `response` at `time`, without its newline.
pub fn render_line(llm_id: &str, response: &str, time: &str) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        llm_id: &'a str,
        response: &'a str,
        time: &'a str,
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    // Serializing three strings into a Vec cannot fail.
    let _ = Line {
        llm_id,
        response,
        time,
    }
    .serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// Python's `json.dumps` defaults: `", "` and `": "` separators, `ensure_ascii=True`.
struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        for c in fragment.chars() {
            if (' '..='~').contains(&c) {
                w.write_all(&[c as u8])?;
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
}

/// Append an entry by `agent` (its name as given) saying `response` to `target`.
///
/// # Errors
///
/// [`Error::BadInput`] when the response is larger than [`LINE_CAP`] allows (nothing is written);
/// [`Error::Io`] when the file cannot be appended to (a symlink, a folder, a FIFO, no space).
pub fn write(target: &Target, agent: &AgentId, response: &str) -> Result<Entry> {
    let time = clock::now_string();
    let line = render_line(agent.name(), response, &time);
    if line.len() as u64 >= LINE_CAP {
        return Err(Error::bad_input(format!(
            "the response is too long for one line of `{}` (at most {} MiB once encoded)",
            target.rel,
            LINE_CAP / (1024 * 1024)
        )));
    }
    let number = fsutil::append_line_durable_numbered(&target.abs, line.as_bytes())?;
    Ok(Entry {
        line: number,
        llm_id: agent.name().to_string(),
        response: response.to_string(),
        time: Some(time),
    })
}

/// Read one line as an entry.
///
/// # Errors
///
/// The [`Problem`] with the line, when it is not a JSON object with `llm_id` and `response`.
pub fn parse_line(line: usize, bytes: &[u8]) -> std::result::Result<Entry, Problem> {
    let bad = |why: String| Problem { line, why };
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("not valid JSON ({})", short_json_error(&e))))?;
    let Value::Object(map) = value else {
        return Err(bad("not a JSON object".into()));
    };
    let llm_id = match map.get("llm_id") {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Number(_)) => v.to_string(),
        Some(_) => return Err(bad("`llm_id` is not a string".into())),
        None => return Err(bad("no `llm_id`".into())),
    };
    let response = match map.get("response") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => return Err(bad("no `response`".into())),
    };
    let time = match map.get("time") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    Ok(Entry {
        line,
        llm_id,
        response,
        time,
    })
}

fn short_json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.find(" at line ") {
        Some(at) => format!("{} at column {}", &text[..at], e.column()),
        None => text,
    }
}

/// Reads a collaboration file from where it last stopped.
#[derive(Debug, Clone)]
pub struct Reader {
    path: PathBuf,
    offset: u64,
    line: usize,
}

impl Reader {
    /// A reader at the start of `path`.
    pub fn new(path: &Path) -> Reader {
        Reader {
            path: path.to_path_buf(),
            offset: 0,
            line: 0,
        }
    }

    /// Read what was appended since the last call. With `to_end`, a last line without its
    /// newline is read too; otherwise it is left for a later call (it may still be growing).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be opened or read (`NotFound` included).
    pub fn read_new(&mut self, to_end: bool) -> Result<Batch> {
        let mut file = fsutil::open_regular_nofollow(&self.path).at("read", &self.path)?;
        let len = file.metadata().at("read", &self.path)?.len();
        let mut batch = Batch::default();
        if len < self.offset {
            self.offset = 0;
            self.line = 0;
            batch.restarted = true;
        }
        file.seek(SeekFrom::Start(self.offset))
            .at("read", &self.path)?;
        let mut reader = BufReader::new(file.take(len - self.offset));
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = (&mut reader)
                .take(LINE_CAP + 1)
                .read_until(b'\n', &mut buf)
                .at("read", &self.path)?;
            if n == 0 {
                break;
            }
            let complete = buf.last() == Some(&b'\n');
            if !complete && (buf.len() as u64) > LINE_CAP {
                // Too long: skip to the end of this line.
                let (skipped, found_end) = skip_line(&mut reader).at("read", &self.path)?;
                if !found_end && !to_end {
                    break;
                }
                self.offset += (n + skipped) as u64;
                self.line += 1;
                batch.problems.push(Problem {
                    line: self.line,
                    why: format!("longer than {} MiB", LINE_CAP / (1024 * 1024)),
                });
                continue;
            }
            if !complete && !to_end {
                break;
            }
            // A last line without its newline that does not parse is an append still being
            // written, not a corrupt line: it is left for later, not reported.
            if !complete && parse_line(self.line + 1, trim_line(&buf)).is_err() {
                break;
            }
            self.offset += n as u64;
            self.line += 1;
            let text = trim_line(&buf);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_line(self.line, text) {
                Ok(e) => batch.entries.push(e),
                Err(p) => batch.problems.push(p),
            }
        }
        Ok(batch)
    }
}

fn trim_line(buf: &[u8]) -> &[u8] {
    let mut end = buf.len();
    while end > 0 && matches!(buf[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &buf[..end]
}

/// Consume up to and including the next newline; returns the bytes consumed and whether a
/// newline was found.
fn skip_line(reader: &mut impl BufRead) -> io::Result<(usize, bool)> {
    let mut total = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((total, false));
        }
        if let Some(at) = chunk.iter().position(|b| *b == b'\n') {
            reader.consume(at + 1);
            return Ok((total + at + 1, true));
        }
        let n = chunk.len();
        reader.consume(n);
        total += n;
    }
}

/// Read the whole file.
///
/// # Errors
///
/// [`Error::Io`] when it cannot be opened or read.
pub fn read_all(path: &Path) -> Result<Batch> {
    Reader::new(path).read_new(true)
}

/// Print-as-you-go reading: hand every batch of new lines to `on_batch` (the existing ones
/// first), waking on changes in the file's folder with the [`RECHECK`] safety net, until
/// `on_batch` returns `false`. A missing file is waited for.
///
/// # Errors
///
/// [`Error::Io`] when the file exists but cannot be read.
pub fn follow(path: &Path, on_batch: &mut dyn FnMut(Batch) -> bool) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let watch = FolderWatch::new(std::slice::from_ref(&dir));
    let mut reader = Reader::new(path);
    loop {
        match reader.read_new(false) {
            Ok(batch) => {
                if !batch.is_empty() && !on_batch(batch) {
                    return Ok(());
                }
            }
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
            render_line("LLM1", "This is a response from LLM1.", "t"),
            r#"{"llm_id": "LLM1", "response": "This is a response from LLM1.", "time": "t"}"#
        );
        assert_eq!(
            render_line("a", "é \"q\" \n\t\u{7f} 😀", "t"),
            r#"{"llm_id": "a", "response": "\u00e9 \"q\" \n\t\u007f \ud83d\ude00", "time": "t"}"#
        );
    }

    #[test]
    fn lines_parse_back_or_say_why_not() {
        let e = parse_line(1, render_line("a", "é\nb", "t").as_bytes()).unwrap();
        assert_eq!((e.llm_id.as_str(), e.response.as_str()), ("a", "é\nb"));
        let seed = parse_line(2, br#"{"llm_id": "LLM1", "response": "hi"}"#).unwrap();
        assert_eq!(seed.time, None);
        for (bad, why) in [
            (&b"{not json"[..], "not valid JSON"),
            (b"[1, 2]", "not a JSON object"),
            (br#"{"response": "x"}"#, "no `llm_id`"),
            (br#"{"llm_id": "x"}"#, "no `response`"),
            (b"\xff\xfe", "not valid JSON"),
        ] {
            let p = parse_line(3, bad).unwrap_err();
            assert!(p.why.contains(why), "{:?}: {}", bad, p.why);
            assert_eq!(p.line, 3);
        }
    }

    #[test]
    fn the_reader_counts_lines_and_waits_for_partial_ones() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.txt");
        std::fs::write(
            &f,
            "{\"llm_id\": \"a\", \"response\": \"1\"}\n\ngarbage\n{\"llm_id\": \"b\", \"resp",
        )
        .unwrap();
        let mut r = Reader::new(&f);
        let b = r.read_new(false).unwrap();
        assert_eq!(b.entries.len(), 1);
        assert_eq!(b.problems[0].line, 3);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&f)
            .unwrap()
            .write_all(b"onse\": \"2\"}\n")
            .unwrap();
        let b = r.read_new(false).unwrap();
        assert_eq!(b.entries[0].line, 4);
        assert_eq!(b.entries[0].response, "2");
        std::fs::write(&f, "{\"llm_id\": \"c\", \"response\": \"3\"}").unwrap();
        let b = r.read_new(true).unwrap();
        assert!(b.restarted);
        assert_eq!(b.entries[0].line, 1);
    }
}
