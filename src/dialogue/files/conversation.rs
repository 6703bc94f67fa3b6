//! `conversation.md`: a header, then blocks `## Message #N [ID] - YYYY-MM-DD HH:MM:SS`, blank
//! line, text, markers, `---`.
//!
//! Parsing is lenient (a hand-written header may lack its time); only header lines count as
//! structure, and message numbers must run 1..N ([`Conversation::numbering_error`]). Rendering
//! is strict: text coord writes can never forge a header, since a text line that starts like
//! one is escaped with a backslash (which Markdown renders invisibly).

use std::fmt;

use serde::Serialize;

use super::{HEADER_START, validate_id};
use crate::clock::Timestamp;
use crate::error::{Error, Result};

/// A marker a message may carry (seed 002, "From Your Message").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Marker {
    /// `[NEEDS-USER]`: the turn goes to the user.
    NeedsUser,
    /// `[WAITING]`.
    Waiting,
    /// `[PROPOSE-END]`.
    ProposeEnd,
    /// `[QUESTION-CRITICAL]`.
    QuestionCritical,
    /// `[AGREEMENT]`.
    Agreement,
    /// `[DISAGREEMENT]`.
    Disagreement,
    /// `[PROPOSE-TOPIC-CHANGE: topic]` (seed 002, Best Practices).
    ProposeTopicChange(String),
}

impl Marker {
    /// Parse `NEEDS-USER`, `[NEEDS-USER]`, `needs-user`, `PROPOSE-TOPIC-CHANGE: x`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] listing the known markers.
    pub fn parse(text: &str) -> Result<Marker> {
        let t = text.trim();
        let t = t
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(t)
            .trim();
        let upper = t.to_ascii_uppercase();
        let m = match upper.as_str() {
            "NEEDS-USER" => Marker::NeedsUser,
            "WAITING" => Marker::Waiting,
            "PROPOSE-END" => Marker::ProposeEnd,
            "QUESTION-CRITICAL" => Marker::QuestionCritical,
            "AGREEMENT" => Marker::Agreement,
            "DISAGREEMENT" => Marker::Disagreement,
            _ => match upper.strip_prefix("PROPOSE-TOPIC-CHANGE:") {
                Some(_) => {
                    let topic = one_line(t["PROPOSE-TOPIC-CHANGE:".len()..].trim());
                    if topic.is_empty() || topic.contains(']') {
                        return Err(Error::bad_input(
                            "marker `PROPOSE-TOPIC-CHANGE:` needs a topic (without `]`)",
                        ));
                    }
                    Marker::ProposeTopicChange(topic)
                }
                None => {
                    return Err(Error::bad_input(format!(
                        "unknown marker `{text}`: use NEEDS-USER, WAITING, PROPOSE-END, QUESTION-CRITICAL, AGREEMENT, DISAGREEMENT or `PROPOSE-TOPIC-CHANGE: topic`"
                    )));
                }
            },
        };
        Ok(m)
    }
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Marker::NeedsUser => f.write_str("[NEEDS-USER]"),
            Marker::Waiting => f.write_str("[WAITING]"),
            Marker::ProposeEnd => f.write_str("[PROPOSE-END]"),
            Marker::QuestionCritical => f.write_str("[QUESTION-CRITICAL]"),
            Marker::Agreement => f.write_str("[AGREEMENT]"),
            Marker::Disagreement => f.write_str("[DISAGREEMENT]"),
            Marker::ProposeTopicChange(t) => write!(f, "[PROPOSE-TOPIC-CHANGE: {t}]"),
        }
    }
}

fn one_line(text: &str) -> String {
    text.split(['\n', '\r']).next().unwrap_or("").to_string()
}

/// One message header found in `conversation.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHead {
    /// The message number as written.
    pub number: u64,
    /// The speaker's id as written.
    pub speaker: String,
    /// The time as written after ` - ` (may be empty).
    pub time: String,
    /// The 1-based line of the header.
    pub line: usize,
}

/// What `conversation.md` says: its messages, and what its header says about the session.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// Every message header, in file order.
    pub messages: Vec<MessageHead>,
    /// The topic from a `# Agent Dialogue: T` title, when there is one.
    pub topic: Option<String>,
    /// The participants from a `- Participants: A, B` header line, when there is one.
    pub participants: Option<Vec<String>>,
    /// The markers in the last message's text.
    pub last_markers: Vec<String>,
    /// The file's length in bytes.
    pub len: usize,
    /// Whether the file ends with a blank line (so a new block needs no separator).
    pub ends_with_blank_line: bool,
    /// Whether the file is empty or ends with a newline.
    pub ends_with_newline: bool,
}

impl Conversation {
    /// Read the text of `conversation.md`. Never fails: [`Conversation::numbering_error`] says
    /// whether the numbers make sense.
    pub fn parse(text: &str) -> Conversation {
        let mut c = Conversation {
            len: text.len(),
            ends_with_blank_line: text.is_empty() || text.ends_with("\n\n"),
            ends_with_newline: text.is_empty() || text.ends_with('\n'),
            ..Conversation::default()
        };
        let mut last_body: Vec<&str> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(head) = parse_header(line, i + 1) {
                c.messages.push(head);
                last_body.clear();
                continue;
            }
            if c.messages.is_empty() {
                let l = line.trim();
                if let Some(t) = l.strip_prefix("# Agent Dialogue:") {
                    c.topic.get_or_insert_with(|| t.trim().to_string());
                } else if let Some(p) = l.strip_prefix("- Participants:") {
                    let ids: Vec<String> = p
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| validate_id(s).is_ok())
                        .collect();
                    if !ids.is_empty() {
                        c.participants.get_or_insert(ids);
                    }
                }
            } else {
                last_body.push(line);
            }
        }
        c.last_markers = markers_in(&last_body.join("\n"));
        c
    }

    /// How many messages there are.
    pub fn count(&self) -> u64 {
        self.messages.len() as u64
    }

    /// The last message, if any.
    pub fn last(&self) -> Option<&MessageHead> {
        self.messages.last()
    }

    /// The first place where the numbers stop running 1, 2, 3, …: `(line, why)`.
    pub fn numbering_error(&self) -> Option<(usize, String)> {
        self.messages
            .iter()
            .enumerate()
            .find(|(i, m)| m.number != *i as u64 + 1)
            .map(|(i, m)| {
                (
                    m.line,
                    format!("expected message #{}, found #{}", i + 1, m.number),
                )
            })
    }

    /// Whether the last message carries `marker` (like `[NEEDS-USER]`).
    pub fn last_has(&self, marker: &Marker) -> bool {
        let want = marker.to_string();
        self.last_markers.iter().any(|m| m == &want)
    }
}

/// Parse `## Message #N [ID] - time`. The ` - time` part may be missing (a hand-written header).
fn parse_header(line: &str, line_no: usize) -> Option<MessageHead> {
    let rest = line.strip_prefix(HEADER_START)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 12 {
        return None;
    }
    let number: u64 = rest[..digits].parse().ok()?;
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix('[')?;
    let close = rest.find(']')?;
    let speaker = rest[..close].trim().to_string();
    let after = rest[close + 1..].trim();
    let time = after
        .strip_prefix('-')
        .or_else(|| after.strip_prefix('\u{2013}'))
        .unwrap_or(after)
        .trim()
        .to_string();
    Some(MessageHead {
        number,
        speaker,
        time,
        line: line_no,
    })
}

const KNOWN_MARKERS: [&str; 6] = [
    "[NEEDS-USER]",
    "[WAITING]",
    "[PROPOSE-END]",
    "[QUESTION-CRITICAL]",
    "[AGREEMENT]",
    "[DISAGREEMENT]",
];

/// The seed's markers found anywhere in `text`, each once, in the seed's order.
pub fn markers_in(text: &str) -> Vec<String> {
    KNOWN_MARKERS
        .iter()
        .filter(|m| text.contains(*m))
        .map(|m| m.to_string())
        .collect()
}

/// The header coord writes at the top of a new `conversation.md`.
pub fn render_conversation_header(
    topic: &str,
    participants: &[String],
    first: &str,
    now: &Timestamp,
) -> String {
    format!(
        "# Agent Dialogue: {topic}\n\n- Started: {}\n- Participants: {}\n- First speaker: {first}\n\n---\n",
        now.format("%Y-%m-%d %H:%M:%S"),
        participants.join(", ")
    )
}

/// Escape text lines that would read as a message header, so a text can never forge one.
pub fn escape_text(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.trim_end_matches('\n').split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.starts_with(HEADER_START) {
            out.push('\\');
        }
        out.push_str(line);
    }
    out
}

/// One message block, exactly as appended: a separator so it starts after a blank line, the
/// header, a blank line, the (escaped) text, the markers on one line, and `---`.
pub fn render_message(
    conv: &Conversation,
    number: u64,
    speaker: &str,
    now: &Timestamp,
    text: &str,
    markers: &[Marker],
) -> String {
    let lead = if conv.ends_with_blank_line {
        ""
    } else if conv.ends_with_newline {
        "\n"
    } else {
        "\n\n"
    };
    let mut block = format!(
        "{lead}{HEADER_START}{number} [{speaker}] - {}\n\n{}\n",
        now.format("%Y-%m-%d %H:%M:%S"),
        escape_text(text)
    );
    if !markers.is_empty() {
        let line: Vec<String> = markers.iter().map(Marker::to_string).collect();
        block.push('\n');
        block.push_str(&line.join(" "));
        block.push('\n');
    }
    block.push_str("\n---\n\n");
    block
}
