//! The formats of the dialogue folder's files, as seed 002 gives them: parsing (lenient, for
//! files written by hand) and rendering (strict, the seed's exact shapes).
//!
//! - `conversation.md`: a header, then blocks `## Message #N [ID] - YYYY-MM-DD HH:MM:SS`, blank
//!   line, text, markers, `---`. Only header lines count as structure; message numbers must run
//!   1..N. Text coord writes can never forge a header: a text line that starts like one is
//!   escaped with a backslash (which Markdown renders invisibly).
//! - `current-turn.txt`: one line, a dialogue id, `USER`, or an `[ERROR] ...` line.
//! - `status.json`: a JSON object with at least `message_count`; unknown keys are kept.
//! - `lock.txt`: the writer's id on the first line (all the seed asks); coord adds `since:`,
//!   `pid:` and `host:` lines so a crashed writer is recognised at once.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::host;

/// The id reserved for the human observer.
pub const USER: &str = "USER";

/// The start of every message header line.
pub const HEADER_START: &str = "## Message #";

/// The line the seed writes into `current-turn.txt` on corruption.
pub const CORRUPTED_LINE: &str = "[ERROR] conversation.md appears corrupted";

/// After this long a `lock.txt` is stale (seed 002: "exists for >60 seconds").
pub const LOCK_STALE_AFTER: Duration = Duration::from_secs(60);

/// Validate a dialogue id (`AGENT-1`, `claude`, `Agent_2`): 1-32 ASCII letters, digits, `-`
/// and `_`, starting with a letter or digit. The spelling is kept.
///
/// # Errors
///
/// [`Error::BadInput`] naming the id.
pub fn validate_id(id: &str) -> Result<String> {
    let ok = !id.is_empty()
        && id.len() <= 32
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(id.to_string())
    } else {
        Err(Error::bad_input(format!(
            "invalid dialogue id `{id}`: use 1-32 letters, digits, `-` and `_`, starting with a letter or digit (like `AGENT-1`)"
        )))
    }
}

/// Whether two ids name the same speaker (ids compare without regard to case).
pub fn same_id(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

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

/// What `current-turn.txt` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// A speaker's id, as written.
    Speaker(String),
    /// `USER`: the user's turn.
    User,
    /// An `[ERROR] ...` line.
    Error(String),
    /// The file is missing.
    Missing,
    /// Something that is none of the above (why).
    Garbled(String),
}

impl Turn {
    /// Read the file's text.
    pub fn parse(text: &str) -> Turn {
        let lines: Vec<&str> = text
            .lines()
            .map(|l| l.trim().trim_start_matches('\u{feff}'))
            .filter(|l| !l.is_empty())
            .collect();
        match lines.as_slice() {
            [] => Turn::Garbled("it is empty".into()),
            [one] if one.starts_with("[ERROR]") => Turn::Error(one.to_string()),
            [one] if same_id(one, USER) => Turn::User,
            [one] => match validate_id(one) {
                Ok(id) => Turn::Speaker(id),
                Err(_) => Turn::Garbled(format!("`{}` is not a dialogue id", clip(one))),
            },
            _ => Turn::Garbled("it holds more than one line".into()),
        }
    }

    /// The text to show for it.
    pub fn describe(&self) -> String {
        match self {
            Turn::Speaker(id) => id.clone(),
            Turn::User => USER.into(),
            Turn::Error(line) => line.clone(),
            Turn::Missing => "(missing)".into(),
            Turn::Garbled(why) => format!("(unreadable: {why})"),
        }
    }

    /// The id whose turn it is (`USER` included), when the file is clear about it.
    pub fn id(&self) -> Option<&str> {
        match self {
            Turn::Speaker(id) => Some(id),
            Turn::User => Some(USER),
            _ => None,
        }
    }
}

fn clip(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// The keys the seed names for `status.json`, in the order coord writes them.
pub const SEED_STATUS_KEYS: [&str; 5] = [
    "topic",
    "message_count",
    "last_update",
    "last_speaker",
    "participants",
];

/// `status.json`, kept as a JSON object so keys written by others survive a rewrite.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusDoc {
    map: Map<String, Value>,
}

impl StatusDoc {
    /// A fresh status for a new session.
    pub fn new(topic: &str, participants: &[String], now: &Timestamp) -> StatusDoc {
        let mut map = Map::new();
        map.insert("topic".into(), Value::from(topic));
        map.insert("message_count".into(), Value::from(0u64));
        map.insert(
            "last_update".into(),
            Value::from(clock::format_timestamp(now)),
        );
        map.insert("last_speaker".into(), Value::Null);
        map.insert("participants".into(), Value::from(participants.to_vec()));
        map.insert("commands_read".into(), Value::from(0u64));
        StatusDoc { map }
    }

    /// Parse the file's text.
    ///
    /// # Errors
    ///
    /// Why it cannot be used: not JSON, not an object, or no non-negative `message_count`.
    pub fn parse(text: &str) -> std::result::Result<StatusDoc, String> {
        let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
            .map_err(|e| format!("it is not valid JSON ({e})"))?;
        let Value::Object(map) = value else {
            return Err("it is not a JSON object".into());
        };
        match map.get("message_count") {
            Some(v) if v.as_u64().is_some() => Ok(StatusDoc { map }),
            Some(_) => Err("`message_count` is not a whole number".into()),
            None => Err("`message_count` is missing".into()),
        }
    }

    /// `message_count`.
    pub fn message_count(&self) -> u64 {
        self.map
            .get("message_count")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// A string field.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// `participants`, when it is a list of valid ids.
    pub fn participants(&self) -> Option<Vec<String>> {
        let list = self.map.get("participants")?.as_array()?;
        let ids: Vec<String> = list
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| validate_id(s).is_ok() && !same_id(s, USER))
            .map(str::to_string)
            .collect();
        (!ids.is_empty()).then_some(ids)
    }

    /// `commands_read`: how many lines of `user-commands.txt` the last message took into account.
    pub fn commands_read(&self) -> Option<usize> {
        self.map
            .get("commands_read")
            .and_then(Value::as_u64)
            .map(|n| n as usize)
    }

    /// Set a field.
    pub fn set(&mut self, key: &str, value: Value) {
        self.map.insert(key.to_string(), value);
    }

    /// Record a new message.
    pub fn record_message(&mut self, count: u64, speaker: &str, now: &Timestamp) {
        self.set("message_count", Value::from(count));
        self.set("last_update", Value::from(clock::format_timestamp(now)));
        self.set("last_speaker", Value::from(speaker));
    }

    /// The file's text: one key per line, the seed's keys first in the seed's order, then the
    /// others (coord's and anyone else's) in name order.
    pub fn render(&self) -> String {
        let mut keys: Vec<&String> = SEED_STATUS_KEYS
            .iter()
            .filter_map(|k| self.map.get_key_value(*k).map(|(k, _)| k))
            .collect();
        keys.extend(
            self.map
                .keys()
                .filter(|k| !SEED_STATUS_KEYS.contains(&k.as_str())),
        );
        let lines: Vec<String> = keys
            .iter()
            .map(|k| {
                format!(
                    "  {}: {}",
                    Value::from(k.as_str()),
                    serde_json::to_string(&self.map[k.as_str()]).unwrap_or_else(|_| "null".into())
                )
            })
            .collect();
        format!("{{\n{}\n}}\n", lines.join(",\n"))
    }
}

/// What `lock.txt` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockInfo {
    /// The writer's id (the first line).
    pub holder: String,
    /// When it was taken: the `since:` line, else the file's mtime.
    pub since: Option<String>,
    /// The writing process, when coord wrote it.
    pub pid: Option<u32>,
    /// The host of that process.
    pub host: Option<String>,
    /// Seconds since it was taken.
    pub age_s: Option<u64>,
    /// Whether it is stale (older than 60 s, or its process is gone).
    pub stale: bool,
    /// The writer whose interrupted write may still need completing: written by a `say` that
    /// took a stale `lock.txt` over, and dropped once it knows nothing is left to complete, so
    /// a `say` killed in between does not hide whose message the next one may complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl LockInfo {
    /// Read `lock.txt`'s text, judging staleness at `now` (`mtime` when there is no `since:`).
    pub fn parse(text: &str, mtime: Option<Timestamp>, now: &Timestamp) -> LockInfo {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or("");
        let holder = first
            .strip_prefix("Agent:")
            .or_else(|| first.strip_prefix("agent:"))
            .unwrap_or(first)
            .trim();
        let holder = if holder.is_empty() {
            "(unknown)".to_string()
        } else {
            clip(holder)
        };
        let rec = crate::record::Record::parse(text);
        let since_ts = rec.get("since").and_then(clock::parse_timestamp).or(mtime);
        let pid = rec.get("pid").and_then(|p| p.parse().ok());
        let host_name = rec.get_nonempty("host").map(str::to_string);
        let age = since_ts.as_ref().map(|s| clock::age(now, s));
        let gone = match (pid, &host_name) {
            (Some(pid), Some(h)) => host::recorded_process_gone(pid, h),
            _ => false,
        };
        LockInfo {
            holder,
            since: since_ts.as_ref().map(clock::format_timestamp),
            pid,
            host: host_name,
            age_s: age.map(|a| a.as_secs()),
            stale: gone || age.is_some_and(|a| a > LOCK_STALE_AFTER),
            interrupted: rec.get_nonempty("interrupted").map(clip),
        }
    }

    /// The text coord writes: the id first (as the seed asks), then who and since when, and
    /// the writer whose interrupted write may need completing (see [`LockInfo::interrupted`]).
    pub fn render(holder: &str, now: &Timestamp, interrupted: Option<&str>) -> String {
        let mut text = format!(
            "{holder}\nsince: {}\npid: {}\nhost: {}\n",
            clock::format_timestamp(now),
            host::pid(),
            host::hostname()
        );
        if let Some(w) = interrupted {
            text.push_str(&format!("interrupted: {w}\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests;
