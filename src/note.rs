//! In-file notes (seed 001's "in-file communication"): one line `[HH:MM] [Agent] TEXT` appended
//! to a shared file, under that file's lock.

use serde::Serialize;

use crate::clock::{self, Timestamp, Wait};
use crate::edit::{process_lock, with_own_lock};
use crate::error::{Error, Refusal, Result};
use crate::fsutil;
use crate::lock::{self, Fence, LockEvent};
use crate::record::one_line;
use crate::workspace::{AgentId, Target, Workspace};

/// A note written.
#[derive(Debug, Clone, Serialize)]
pub struct Noted {
    /// The file, relative to the root.
    pub file: String,
    /// The line appended (without its newline).
    pub line: String,
    /// Whether coord took the lock for this note (and released it); `false` when it was held.
    pub(crate) took_lock: bool,
    /// The backup written when the lock was taken, relative to the root.
    pub(crate) backup: Option<String>,
}

/// The note line: `[HH:MM] [Agent] TEXT`, with the agent's name as given.
pub fn format_line(now: &Timestamp, agent: &AgentId, text: &str) -> String {
    let (time, name, text) = (now.format("%H:%M"), agent.name(), one_line(text));
    format!("[{time}] [{name}] {text}")
}

/// Append `agent`'s note `text` to `target` under its lock, waiting at most `wait` for it.
pub fn note(
    ws: &Workspace,
    agent: &AgentId,
    target: &Target,
    text: &str,
    wait: Wait,
    on_event: &mut dyn FnMut(&LockEvent),
) -> Result<Noted> {
    if one_line(text).is_empty() {
        return Err(Error::bad_input("the note is empty"));
    }
    let targets = std::slice::from_ref(target);
    let lock = process_lock(agent, targets, wait, "writing a note", true);
    // The line is appended under the workspace mutex, while the lock is still ours; synced after.
    let append = |fence: &Fence, took_lock| {
        let line = format_line(&clock::now(), agent, text);
        let mutex = ws.lock_mutex()?;
        if !lock::holds_fence(target, agent, fence) {
            let (me, file) = (agent.id(), &target.rel);
            let why =
                format!("the lock of {me} on `{file}` was taken over before the note was written");
            let file = crate::shell::file(file);
            let hint = format!("nothing was written; try again: `coord note {file} \"…\"`");
            return Err(Error::refused(Refusal::LockTakenOver, why, Some(hint)));
        }
        fsutil::append_line(&target.abs, line.as_bytes())?;
        drop(mutex);
        fsutil::sync_file(&target.abs)?;
        Ok((line, took_lock))
    };
    let ((line, took_lock), backup) = with_own_lock(ws, &lock, on_event, append)?;
    Ok(Noted {
        file: target.rel.clone(),
        line,
        took_lock,
        backup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_line_format() {
        let now = clock::parse_timestamp("2026-01-28T09:05:00+01:00").unwrap();
        let a = AgentId::parse("Claude").unwrap();
        assert_eq!(
            format_line(&now, &a, "Section 2 done\nnext: [10:00] [Gemini] fake"),
            "[09:05] [Claude] Section 2 done next: [10:00] [Gemini] fake"
        );
    }
}
