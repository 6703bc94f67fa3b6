//! The formats of the dialogue folder's files, as seed 002 gives them: parsing is lenient (the
//! files are also written by hand), rendering strict (the seed's exact shapes).

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::host;
use crate::workspace::is_valid_agent_id;

/// The id reserved for the human observer.
pub const USER: &str = "USER";

/// The line the seed writes into `current-turn.txt` on corruption.
pub(crate) const CORRUPTED_LINE: &str = "[ERROR] conversation.md appears corrupted";

const HEADER_START: &str = "## Message #";

/// Seed 002: a `lock.txt` that "exists for >60 seconds" is stale.
const LOCK_STALE_AFTER: Duration = Duration::from_secs(60);

/// Validate a dialogue id (`AGENT-1`, `claude`, `Agent_2`): an agent id in any case, as spelled.
pub fn validate_id(id: &str) -> Result<String> {
    if is_valid_agent_id(&id.to_ascii_lowercase()) {
        return Ok(id.to_string());
    }
    Err(Error::bad_input(format!(
        "invalid dialogue id `{id}`: use 1-32 letters, digits, `-` and `_`, starting with a letter or digit (like `AGENT-1`)"
    )))
}

/// A speaker's id: `USER` (in any case), or a valid dialogue id.
pub(crate) fn speaker_id(id: &str) -> Result<String> {
    match same_id(id, USER) {
        true => Ok(USER.to_string()),
        false => validate_id(id),
    }
}

/// Whether two ids name the same speaker (ids compare without regard to case).
pub fn same_id(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn clip(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// The seed's markers ("From Your Message"), as written.
const MARKERS: [&str; 6] = [
    "[NEEDS-USER]",
    "[WAITING]",
    "[PROPOSE-END]",
    "[QUESTION-CRITICAL]",
    "[AGREEMENT]",
    "[DISAGREEMENT]",
];
pub(crate) const NEEDS_USER: &str = MARKERS[0];
pub(crate) const PROPOSE_END: &str = MARKERS[2];

/// A marker as written: one of the seed's, or `[PROPOSE-TOPIC-CHANGE: topic]`, from `NEEDS-USER`,
/// `[NEEDS-USER]`, `needs-user` or `PROPOSE-TOPIC-CHANGE: x`.
pub(crate) fn parse_marker(text: &str) -> Result<String> {
    const CHANGE: &str = "PROPOSE-TOPIC-CHANGE:";
    let t = text.trim();
    let bare = t.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
    let t = bare.unwrap_or(t).trim();
    let upper = t.to_ascii_uppercase();
    if let Some(m) = MARKERS.iter().find(|m| m[1..m.len() - 1] == upper) {
        return Ok(m.to_string());
    }
    if !upper.starts_with(CHANGE) {
        return Err(Error::bad_input(format!(
            "unknown marker `{text}`: use NEEDS-USER, WAITING, PROPOSE-END, QUESTION-CRITICAL, AGREEMENT, DISAGREEMENT or `PROPOSE-TOPIC-CHANGE: topic`"
        )));
    }
    let topic = t[CHANGE.len()..].trim().split(['\n', '\r']).next();
    match topic.filter(|t| !t.is_empty() && !t.contains(']')) {
        Some(topic) => Ok(format!("[{CHANGE} {topic}]")),
        None => Err(Error::bad_input(
            "marker `PROPOSE-TOPIC-CHANGE:` needs a topic (without `]`)",
        )),
    }
}

/// One message header found in `conversation.md`, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MessageHead {
    pub number: u64,
    pub speaker: String,
    /// What follows ` - ` (empty in a hand-written header without a time).
    pub time: String,
    /// The 1-based line of the header.
    pub line: usize,
}

/// What `conversation.md` says: its message headers, and what its header says of the session.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conversation {
    pub messages: Vec<MessageHead>,
    /// From a `# Agent Dialogue: T` title.
    pub topic: Option<String>,
    /// From a `- Participants: A, B` header line.
    pub participants: Option<Vec<String>>,
    /// The seed's markers found in the last message's text.
    last_markers: Vec<&'static str>,
    lead: &'static str,
}

impl Conversation {
    /// Read the text of `conversation.md` (never fails; see [`Conversation::numbering_error`]).
    pub fn parse(text: &str) -> Conversation {
        let mut c = Conversation::default();
        let mut body_from = usize::MAX;
        for (i, line) in text.lines().enumerate() {
            // The session's header is what comes before the first message.
            let header = c.messages.is_empty().then(|| line.trim());
            if let Some(head) = parse_header(line, i + 1) {
                c.messages.push(head);
                body_from = i + 1;
            } else if let Some(t) = header.and_then(|l| l.strip_prefix("# Agent Dialogue:")) {
                c.topic.get_or_insert_with(|| t.trim().to_string());
            } else if let Some(p) = header.and_then(|l| l.strip_prefix("- Participants:")) {
                let valid = |s: &&str| validate_id(s).is_ok();
                let ids = p.split(',').map(str::trim).filter(valid);
                let ids: Vec<String> = ids.map(str::to_string).collect();
                if !ids.is_empty() {
                    c.participants.get_or_insert(ids);
                }
            }
        }
        let body = text.lines().skip(body_from).collect::<Vec<_>>().join("\n");
        c.last_markers = MARKERS.into_iter().filter(|m| body.contains(m)).collect();
        c.lead = match text {
            t if t.is_empty() || t.ends_with("\n\n") => "",
            t if t.ends_with('\n') => "\n",
            _ => "\n\n",
        };
        c
    }

    pub fn count(&self) -> u64 {
        self.messages.len() as u64
    }

    /// The first place where the numbers stop running 1, 2, 3, …: `(line, why)`.
    pub fn numbering_error(&self) -> Option<(usize, String)> {
        let mut numbered = self.messages.iter().zip(1..);
        let (m, n) = numbered.find(|(m, n)| m.number != *n)?;
        let why = format!("expected message #{n}, found #{}", m.number);
        Some((m.line, why))
    }

    /// Whether the last message carries `marker` (one of the seed's, like `[NEEDS-USER]`).
    pub fn last_has(&self, marker: &str) -> bool {
        self.last_markers.contains(&marker)
    }
}

/// Parse `## Message #N [ID] - time`. The ` - time` part may be missing (a hand-written header).
fn parse_header(line: &str, line_no: usize) -> Option<MessageHead> {
    let rest = line.strip_prefix(HEADER_START)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number = rest[..digits].parse().ok().filter(|_| digits <= 12)?;
    let rest = rest[digits..].trim_start().strip_prefix('[')?;
    let (speaker, after) = rest.split_once(']')?;
    let after = after.trim();
    let time = after
        .strip_prefix(['-', '\u{2013}'])
        .unwrap_or(after)
        .trim();
    Some(MessageHead {
        number,
        speaker: speaker.trim().to_string(),
        time: time.to_string(),
        line: line_no,
    })
}

/// The header coord writes at the top of a new `conversation.md`.
pub(crate) fn render_conversation_header(
    topic: &str,
    participants: &[String],
    first: &str,
    now: &Timestamp,
) -> String {
    let (started, list) = (now.format("%Y-%m-%d %H:%M:%S"), participants.join(", "));
    format!(
        "# Agent Dialogue: {topic}\n\n- Started: {started}\n- Participants: {list}\n- First speaker: {first}\n\n---\n"
    )
}

/// One message block, exactly as appended; a text line that starts like a header gets a
/// backslash (invisible in Markdown), so no text can forge one.
pub(crate) fn render_message(
    conv: &Conversation,
    number: u64,
    speaker: &str,
    now: &Timestamp,
    text: &str,
    markers: &[String],
) -> String {
    let (lead, time) = (conv.lead, now.format("%Y-%m-%d %H:%M:%S"));
    let mut block = format!("{lead}{HEADER_START}{number} [{speaker}] - {time}\n\n");
    let text = text.replace("\r\n", "\n");
    for line in text.trim_end_matches('\n').split('\n') {
        let escape = line.starts_with(HEADER_START).then_some("\\");
        block.push_str(&format!("{}{line}\n", escape.unwrap_or_default()));
    }
    if !markers.is_empty() {
        block.push_str(&format!("\n{}\n", markers.join(" ")));
    }
    block + "\n---\n\n"
}

/// What `current-turn.txt` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Turn {
    /// A speaker's id as written, or `USER`.
    Id(String),
    /// An `[ERROR] ...` line.
    Error(String),
    Missing,
    /// Something else (why).
    Garbled(String),
}

impl Turn {
    pub fn parse(text: &str) -> Turn {
        let lines = text
            .lines()
            .map(|l| l.trim().trim_start_matches('\u{feff}'));
        match lines.filter(|l| !l.is_empty()).collect::<Vec<_>>()[..] {
            [] => Turn::Garbled("it is empty".into()),
            [one] if one.starts_with("[ERROR]") => Turn::Error(one.to_string()),
            [one] => speaker_id(one).map_or_else(
                |_| Turn::Garbled(format!("`{}` is not a dialogue id", clip(one))),
                Turn::Id,
            ),
            _ => Turn::Garbled("it holds more than one line".into()),
        }
    }

    /// The id whose turn it is (`USER` included), when the file is clear about it.
    pub fn id(&self) -> Option<&str> {
        match self {
            Turn::Id(id) => Some(id),
            _ => None,
        }
    }
}

/// The keys the seed names for `status.json`, in the order coord writes them.
const SEED_STATUS_KEYS: [&str; 5] = [
    "topic",
    "message_count",
    "last_update",
    "last_speaker",
    "participants",
];

/// `status.json`, kept as a JSON object so keys written by others survive a rewrite.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusDoc(Map<String, Value>);

impl StatusDoc {
    pub fn new(topic: &str, participants: &[String], now: &Timestamp) -> StatusDoc {
        let mut doc = StatusDoc(Map::new());
        doc.set("topic", topic);
        doc.set("message_count", 0);
        doc.set("last_update", clock::format_timestamp(now));
        doc.set("last_speaker", Value::Null);
        doc.set("participants", participants);
        doc
    }

    /// Parse the file's text; the error says why it cannot be used.
    pub fn parse(text: &str) -> std::result::Result<StatusDoc, String> {
        let value = serde_json::from_str(text.trim_start_matches('\u{feff}'));
        let Value::Object(map) = value.map_err(|e| format!("it is not valid JSON ({e})"))? else {
            return Err("it is not a JSON object".into());
        };
        match map.get("message_count").map(Value::as_u64) {
            Some(Some(_)) => Ok(StatusDoc(map)),
            Some(None) => Err("`message_count` is not a whole number".into()),
            None => Err("`message_count` is missing".into()),
        }
    }

    pub fn message_count(&self) -> u64 {
        let count = self.0.get("message_count").and_then(Value::as_u64);
        count.unwrap_or(0)
    }

    pub fn topic(&self) -> Option<&str> {
        self.0.get("topic").and_then(Value::as_str)
    }

    /// `participants`, when it lists valid ids (`USER` left out).
    pub fn participants(&self) -> Option<Vec<String>> {
        let list = self.0.get("participants")?.as_array()?;
        let agent = |s: &&str| validate_id(s).is_ok() && !same_id(s, USER);
        let ids = list.iter().filter_map(Value::as_str).filter(agent);
        let ids: Vec<String> = ids.map(str::to_string).collect();
        (!ids.is_empty()).then_some(ids)
    }

    /// How many lines of `user-commands.txt` the last message took into account.
    pub fn commands_read(&self) -> Option<usize> {
        self.0.get("commands_read")?.as_u64().map(|n| n as usize)
    }

    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_string(), value.into());
    }

    pub fn record_message(&mut self, count: u64, speaker: &str, now: &Timestamp) {
        self.set("message_count", count);
        self.set("last_update", clock::format_timestamp(now));
        self.set("last_speaker", speaker);
    }

    /// One key per line, the seed's keys first in the seed's order, then the others.
    pub fn render(&self) -> String {
        let (keys, map) = (SEED_STATUS_KEYS, &self.0);
        let seed = keys.iter().filter_map(|k| map.get_key_value(*k));
        let rest = map.iter().filter(|(k, _)| !keys.contains(&k.as_str()));
        let lines: Vec<String> = seed
            .chain(rest)
            .map(|(k, v)| format!("  {}: {v}", Value::from(k.as_str())))
            .collect();
        format!("{{\n{}\n}}\n", lines.join(",\n"))
    }
}

/// What `lock.txt` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockInfo {
    /// The writer's id (the first line).
    pub holder: String,
    pub(crate) since: Option<String>,
    pub(crate) pid: Option<u32>,
    pub(crate) host: Option<String>,
    pub(crate) age_s: Option<u64>,
    /// Whether it is stale (older than 60 s, or its process is gone).
    pub stale: bool,
    /// The writer whose interrupted write may still need completing (set by a `say` that took
    /// a stale `lock.txt` over, so that one killed in turn hides nothing from the next).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interrupted: Option<String>,
}

impl LockInfo {
    /// Read `lock.txt`'s text, judging staleness at `now` (by `mtime` when there is no `since:`).
    pub(crate) fn parse(text: &str, mtime: Option<Timestamp>, now: &Timestamp) -> LockInfo {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        let first = first.unwrap_or_default();
        let strip = |label| first.strip_prefix(label);
        let label = strip("Agent:").or_else(|| strip("agent:"));
        let holder = Some(label.unwrap_or(first).trim()).filter(|h| !h.is_empty());
        let rec = crate::record::Record::parse(text);
        let since = rec.get("since").and_then(clock::parse_timestamp).or(mtime);
        let pid = rec.get("pid").and_then(|p| p.parse().ok());
        let on = rec.get_nonempty("host");
        let age = since.as_ref().map(|s| clock::age(now, s));
        let gone = |(pid, h)| host::recorded_process_gone(pid, h, None);
        LockInfo {
            holder: clip(holder.unwrap_or("(unknown)")),
            since: since.as_ref().map(clock::format_timestamp),
            pid,
            host: on.map(str::to_string),
            age_s: age.map(|a| a.as_secs()),
            stale: pid.zip(on).is_some_and(gone) || age.is_some_and(|a| a > LOCK_STALE_AFTER),
            interrupted: rec.get_nonempty("interrupted").map(clip),
        }
    }

    /// The text coord writes: the id first (as the seed asks), then `since:`, `pid:`, `host:`.
    pub(crate) fn render(holder: &str, now: &Timestamp, interrupted: Option<&str>) -> String {
        let (since, pid, on) = (clock::format_timestamp(now), host::pid(), host::hostname());
        let interrupted = interrupted.map_or(String::new(), |w| format!("interrupted: {w}\n"));
        format!("{holder}\nsince: {since}\npid: {pid}\nhost: {on}\n{interrupted}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_markers_headers_and_status_json() {
        for bad in ["", "-a", "a b", "ä", &"a".repeat(33)] {
            assert!(validate_id(bad).is_err(), "{bad:?}");
        }
        let change = parse_marker("propose-topic-change: caching").unwrap();
        assert_eq!(change, "[PROPOSE-TOPIC-CHANGE: caching]");
        let head = parse_header("## Message #4 [b] \u{2013} 10:00", 1).unwrap();
        assert_eq!((head.speaker.as_str(), head.time.as_str()), ("b", "10:00"));
        let by_hand = parse_header("## Message #3 [a]", 9).unwrap();
        assert_eq!(by_hand.time, "", "written by hand");
        let mut s = StatusDoc::parse(r#"{"mood":"good","message_count":5}"#).unwrap();
        s.record_message(6, "AGENT-1", &clock::now());
        let kept = s.render().ends_with("\n  \"mood\": \"good\"\n}\n");
        assert!(kept, "unknown keys are kept");
    }
}
