//! `status.json`: a JSON object with at least `message_count`. It is kept as an object so keys
//! written by others survive a rewrite; coord writes the seed's keys first, in the seed's order.

use serde_json::{Map, Value};

use super::{USER, same_id, validate_id};
use crate::clock::{self, Timestamp};

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
