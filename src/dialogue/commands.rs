//! `user-commands.txt`: the user's channel (seed 002, "From user-commands.txt").

use crate::error::{Error, Result};

use super::files::{USER, same_id, validate_id};

/// One command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserCommand {
    Pause,
    Resume,
    Reset,
    SwitchTopic(String),
    EndSession,
    Priority(String),
    /// `<ID>-ONLY`.
    Only(String),
}

impl UserCommand {
    /// Read one line; `None` for a line that is not a command.
    pub fn parse(line: &str) -> Option<UserCommand> {
        let t = line.trim().trim_start_matches('\u{feff}');
        let upper = t.to_ascii_uppercase();
        let arg =
            |prefix: &str| Some(t[prefix.len()..].trim().to_string()).filter(|a| !a.is_empty());
        Some(match upper.as_str() {
            "PAUSE" => UserCommand::Pause,
            "RESUME" => UserCommand::Resume,
            "RESET" => UserCommand::Reset,
            "END-SESSION" => UserCommand::EndSession,
            u if u.starts_with("SWITCH-TOPIC:") => UserCommand::SwitchTopic(arg("SWITCH-TOPIC:")?),
            u if u.starts_with("PRIORITY:") => UserCommand::Priority(arg("PRIORITY:")?),
            u if u.ends_with("-ONLY") => {
                let id = &t[..t.len() - "-ONLY".len()];
                let ok = validate_id(id).is_ok() && !same_id(id, USER);
                UserCommand::Only(ok.then(|| id.to_string())?)
            }
            _ => return None,
        })
    }

    /// Parse a command given on the command line, an `-ONLY` id checked against `participants`.
    pub fn from_arg(text: &str, participants: &[String]) -> Result<UserCommand> {
        if text.contains(['\n', '\r', '\0']) {
            return Err(Error::bad_input("a user command is one line"));
        }
        let cmd = UserCommand::parse(text).ok_or_else(|| {
            Error::bad_input(format!(
                "unknown user command `{text}`: use PAUSE, RESUME, RESET, `SWITCH-TOPIC: x`, END-SESSION, `PRIORITY: x` or <ID>-ONLY (like AGENT-1-ONLY)"
            ))
        })?;
        let UserCommand::Only(id) = &cmd else {
            return Ok(cmd);
        };
        let list = participants.join(", ");
        let why = format!("`{text}` names no participant of this dialogue (participants: {list})");
        let found = participants.iter().find(|p| same_id(p, id));
        Ok(UserCommand::Only(
            found.ok_or_else(|| Error::bad_input(why))?.clone(),
        ))
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommandState {
    pub paused: bool,
    pub ended: bool,
    /// The only speaker allowed next (an `<ID>-ONLY` not yet answered).
    pub only: Option<String>,
    /// The latest `SWITCH-TOPIC:`.
    pub topic: Option<String>,
    /// The latest `PRIORITY:`.
    pub priority: Option<String>,
    /// How many lines the file has (what a new message takes into account).
    pub lines: usize,
}

/// Judge the file's text: only lines after the last `RESET` count, the latest command wins.
/// An `-ONLY` stands past `read` lines (`status.json`'s `commands_read`), or when that is
/// unknown, while `newer_than_last_message`.
pub(crate) fn judge(
    text: &str,
    read: Option<usize>,
    newer_than_last_message: bool,
) -> CommandState {
    let lines: Vec<&str> = text.lines().collect();
    let reset = |l: &&str| UserCommand::parse(l) == Some(UserCommand::Reset);
    let start = lines.iter().rposition(reset).map_or(0, |i| i + 1);
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
                let unread = read.map_or(newer_than_last_message, |n| i >= n);
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
    fn lines_that_are_no_command_and_how_the_file_is_judged() {
        for line in ["USER-ONLY", "-ONLY", "PRIORITY:", "hello"] {
            assert_eq!(UserCommand::parse(line), None, "{line}");
        }
        let text = "END-SESSION\nRESET\nPAUSE\nRESUME\nPRIORITY: tests\n";
        let st = judge(text, Some(0), false);
        let got = (st.ended, st.paused, st.priority.as_deref());
        assert_eq!(got, (false, false, Some("tests")));
        for (newer, only) in [(true, Some("AGENT-2")), (false, None)] {
            assert_eq!(judge("AGENT-2-ONLY\n", None, newer).only.as_deref(), only);
        }
    }
}
