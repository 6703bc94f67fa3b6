//! `user-commands.txt`: the user's channel (seed 002, "From user-commands.txt").
//!
//! One command per line: `PAUSE`, `RESUME`, `RESET`, `SWITCH-TOPIC: x`, `END-SESSION`,
//! `PRIORITY: x`, `<ID>-ONLY` (the seed's `AGENT-1-ONLY`, `AGENT-2-ONLY`, for any participant).
//! Keywords are read without regard to case; lines that are none of these are ignored.
//!
//! How the file is judged (the latest relevant command wins):
//! - only lines after the last `RESET` count (a reset starts a fresh session);
//! - among `PAUSE`, `RESUME` and `END-SESSION`, the latest decides: paused, running or ended;
//! - `<ID>-ONLY` applies to the next message only: it stands while it comes after the lines the
//!   last message took into account (`status.json`'s `commands_read`; without that number,
//!   while the file is newer than the last message);
//! - the latest `SWITCH-TOPIC:` names the topic, the latest `PRIORITY:` is the user's urgent input.

use serde::Serialize;

use crate::error::{Error, Result};

use super::files::{USER, same_id, validate_id};

/// One command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserCommand {
    /// `PAUSE`.
    Pause,
    /// `RESUME`.
    Resume,
    /// `RESET`.
    Reset,
    /// `SWITCH-TOPIC: x`.
    SwitchTopic(String),
    /// `END-SESSION`.
    EndSession,
    /// `PRIORITY: x`.
    Priority(String),
    /// `<ID>-ONLY`.
    Only(String),
}

impl UserCommand {
    /// Read one line; `None` for a line that is not a command.
    pub fn parse(line: &str) -> Option<UserCommand> {
        let t = line.trim().trim_start_matches('\u{feff}');
        let upper = t.to_ascii_uppercase();
        let arg = |prefix: &str| -> Option<String> {
            upper
                .starts_with(prefix)
                .then(|| t[prefix.len()..].trim().to_string())
        };
        match upper.as_str() {
            "PAUSE" => return Some(UserCommand::Pause),
            "RESUME" => return Some(UserCommand::Resume),
            "RESET" => return Some(UserCommand::Reset),
            "END-SESSION" => return Some(UserCommand::EndSession),
            _ => {}
        }
        if let Some(x) = arg("SWITCH-TOPIC:") {
            return (!x.is_empty()).then_some(UserCommand::SwitchTopic(x));
        }
        if let Some(x) = arg("PRIORITY:") {
            return (!x.is_empty()).then_some(UserCommand::Priority(x));
        }
        let id = t.get(..t.len().checked_sub(5)?)?;
        if upper.ends_with("-ONLY") && validate_id(id).is_ok() && !same_id(id, USER) {
            return Some(UserCommand::Only(id.to_string()));
        }
        None
    }

    /// Parse a command given on the command line (`pause`, `agent-1-only`, `PRIORITY: x`),
    /// checking an `-ONLY` id against the participants.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for anything else, or an `-ONLY` naming no participant.
    pub fn from_arg(text: &str, participants: &[String]) -> Result<UserCommand> {
        if text.contains(['\n', '\r', '\0']) {
            return Err(Error::bad_input("a user command is one line"));
        }
        let cmd = UserCommand::parse(text).ok_or_else(|| {
            Error::bad_input(format!(
                "unknown user command `{text}`: use PAUSE, RESUME, RESET, `SWITCH-TOPIC: x`, END-SESSION, `PRIORITY: x` or <ID>-ONLY (like AGENT-1-ONLY)"
            ))
        })?;
        if let UserCommand::Only(id) = &cmd {
            match participants.iter().find(|p| same_id(p, id)) {
                Some(p) => return Ok(UserCommand::Only(p.clone())),
                None => {
                    return Err(Error::bad_input(format!(
                        "`{text}` names no participant of this dialogue (participants: {})",
                        participants.join(", ")
                    )));
                }
            }
        }
        Ok(cmd)
    }

    /// The line as coord writes it.
    pub fn render(&self) -> String {
        match self {
            UserCommand::Pause => "PAUSE".into(),
            UserCommand::Resume => "RESUME".into(),
            UserCommand::Reset => "RESET".into(),
            UserCommand::SwitchTopic(t) => format!("SWITCH-TOPIC: {t}"),
            UserCommand::EndSession => "END-SESSION".into(),
            UserCommand::Priority(p) => format!("PRIORITY: {p}"),
            UserCommand::Only(id) => format!("{id}-ONLY"),
        }
    }
}

/// What the commands file says now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CommandState {
    /// A `PAUSE` stands (until `RESUME`).
    pub paused: bool,
    /// `END-SESSION` stands.
    pub ended: bool,
    /// The only speaker allowed next (`<ID>-ONLY` not yet answered).
    pub only: Option<String>,
    /// The latest `SWITCH-TOPIC:`.
    pub topic: Option<String>,
    /// The latest `PRIORITY:`.
    pub priority: Option<String>,
    /// How many lines the file has (what a new message takes into account).
    pub lines: usize,
}

/// Judge the file's text. `read` is how many lines the last message took into account (from
/// `status.json`); `None` means unknown, and then `newer_than_last_message` decides whether an
/// `-ONLY` still stands.
pub fn judge(text: &str, read: Option<usize>, newer_than_last_message: bool) -> CommandState {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| UserCommand::parse(l) == Some(UserCommand::Reset))
        .map_or(0, |i| i + 1);
    let mut st = CommandState {
        lines: lines.len(),
        ..CommandState::default()
    };
    for (i, line) in lines.iter().enumerate().skip(start) {
        match UserCommand::parse(line) {
            Some(UserCommand::Pause) => (st.paused, st.ended) = (true, false),
            Some(UserCommand::Resume) => (st.paused, st.ended) = (false, false),
            Some(UserCommand::EndSession) => (st.paused, st.ended) = (false, true),
            Some(UserCommand::SwitchTopic(t)) => st.topic = Some(t),
            Some(UserCommand::Priority(p)) => st.priority = Some(p),
            Some(UserCommand::Only(id)) => {
                let unread = match read {
                    Some(n) => i >= n,
                    None => newer_than_last_message,
                };
                st.only = unread.then_some(id);
            }
            Some(UserCommand::Reset) | None => {}
        }
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse() {
        assert_eq!(UserCommand::parse(" pause "), Some(UserCommand::Pause));
        assert_eq!(
            UserCommand::parse("SWITCH-TOPIC: caching"),
            Some(UserCommand::SwitchTopic("caching".into()))
        );
        assert_eq!(
            UserCommand::parse("AGENT-2-ONLY"),
            Some(UserCommand::Only("AGENT-2".into()))
        );
        assert_eq!(UserCommand::parse("USER-ONLY"), None);
        assert_eq!(UserCommand::parse("-ONLY"), None);
        assert_eq!(UserCommand::parse("PRIORITY:"), None);
        assert_eq!(UserCommand::parse("hello"), None);
        let parts = vec!["AGENT-1".to_string(), "AGENT-2".to_string()];
        assert_eq!(
            UserCommand::from_arg("agent-1-only", &parts).unwrap(),
            UserCommand::Only("AGENT-1".into())
        );
        assert!(UserCommand::from_arg("AGENT-3-ONLY", &parts).is_err());
        assert!(UserCommand::from_arg("STOP", &parts).is_err());
    }

    #[test]
    fn latest_relevant_command_wins() {
        let st = judge("PAUSE\nRESUME\nPAUSE\n", Some(0), false);
        assert!(st.paused);
        let st = judge("PAUSE\nRESUME\n", Some(0), false);
        assert!(!st.paused);
        let st = judge("END-SESSION\nRESET\nPRIORITY: tests\n", Some(0), false);
        assert!(!st.ended);
        assert_eq!(st.priority.as_deref(), Some("tests"));
        let st = judge("AGENT-2-ONLY\n", Some(0), false);
        assert_eq!(st.only.as_deref(), Some("AGENT-2"));
        let st = judge("AGENT-2-ONLY\n", Some(1), false);
        assert_eq!(st.only, None, "answered by the message that read it");
        let st = judge("AGENT-2-ONLY\n", None, true);
        assert_eq!(st.only.as_deref(), Some("AGENT-2"));
    }
}
