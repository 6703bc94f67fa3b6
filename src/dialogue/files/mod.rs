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
//!
//! Each file's format has its own module: `conversation`, `turn`, `status`, `lock`.

mod conversation;
mod lock;
mod status;
mod turn;

pub use conversation::{
    Conversation, Marker, MessageHead, escape_text, markers_in, render_conversation_header,
    render_message,
};
pub use lock::LockInfo;
pub use status::{SEED_STATUS_KEYS, StatusDoc};
pub use turn::Turn;

use std::time::Duration;

use crate::error::{Error, Result};

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

fn clip(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests;
