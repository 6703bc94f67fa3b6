//! `current-turn.txt`: one line, a dialogue id, `USER`, or an `[ERROR] ...` line. Anything else
//! is read as garbled, with the reason, never guessed at.

use super::{USER, clip, same_id, validate_id};

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
