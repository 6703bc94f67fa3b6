//! `say`: seed 002's steps 1–7 as one operation.

use std::io;
use std::time::Duration;

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::history::{self, Event, Kind};
use crate::layout::{DIALOGUE_CONVERSATION, DIALOGUE_STATUS, DIALOGUE_TURN};

use super::files::{self, CORRUPTED_LINE, LockInfo, NEEDS_USER, StatusDoc, Turn, USER};
use super::files::{same_id, speaker_id};
use super::{Dialogue, Snapshot};

/// The largest message text coord accepts.
pub const MAX_TEXT: usize = 1024 * 1024;

/// How long `say` waits for a fresh `lock.txt` by default.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// One message to write.
#[derive(Debug, Clone)]
pub struct SayRequest {
    /// Who speaks (a participant's id, or `USER`).
    pub speaker: String,
    /// The message text.
    pub text: String,
    /// Markers to add after the text, as given (`NEEDS-USER`, `[AGREEMENT]`, …).
    pub markers: Vec<String>,
    /// Pass the turn to this id instead of the next participant.
    pub to: Option<String>,
    /// How long to wait for a fresh `lock.txt` held by another writer.
    pub lock_wait: Duration,
}

/// What `say` did.
#[derive(Debug, Clone, Serialize)]
pub struct SayOutcome {
    /// The new message's number.
    pub number: u64,
    /// Who spoke.
    pub speaker: String,
    /// Whose turn it is now.
    pub next: String,
    markers: Vec<String>,
    /// Problems noticed and worked around (`status.json needs repair`).
    pub warnings: Vec<String>,
    /// An interrupted earlier write that was completed first.
    pub repaired: Option<String>,
    /// A stale `lock.txt` that was taken over.
    pub took_over: Option<LockInfo>,
}

fn check_request(speaker: &str, text: &str) -> Result<String> {
    let speaker = speaker_id(speaker)?;
    let too_big = || format!("the message text is larger than {MAX_TEXT} bytes");
    match () {
        _ if text.trim().is_empty() => Err(Error::bad_input("the message text is empty")),
        _ if text.contains('\0') => Err(Error::bad_input("the message text contains a NUL byte")),
        _ if text.len() > MAX_TEXT => Err(Error::bad_input(too_big())),
        _ => Ok(speaker),
    }
}

/// Write one message as `req.speaker`, under the kernel lock and `lock.txt`: check the turn,
/// append the block (the commit point), replace `current-turn.txt` and `status.json`.
pub fn say(d: &Dialogue, req: &SayRequest) -> Result<SayOutcome> {
    let mut markers: Vec<String> = Vec::new();
    for m in &req.markers {
        let m = files::parse_marker(m)?;
        markers.extend((!markers.contains(&m)).then_some(m));
    }
    let speaker = check_request(&req.speaker, &req.text)?;
    let to = req.to.as_deref().map(speaker_id).transpose()?;
    if !d.exists() {
        return Err(d.no_dialogue());
    }
    let lock = d.take_lock_txt(d.lock_mutex()?, &speaker, req.lock_wait)?;
    let now = clock::now();
    let mut snap = d.snapshot()?;
    let (mut warnings, mut repaired) = (Vec::new(), None);
    if matches!(snap.turn, Turn::Error(_)) {
        // Already stopped (by an earlier corruption, or by the user): wait for the user.
        snap.may_speak(&speaker)?;
    }
    if let Some((line, why)) = snap.conv.numbering_error() {
        return Err(mark_corrupted(d, Some(line), &why));
    }
    if let Err(problem) = &snap.status {
        warnings.push(format!(
            "status.json needs repair ({problem}); continuing with conversation.md only"
        ));
    } else if let Some(why) = snap.corruption() {
        repaired = repair_interrupted(d, &mut snap, lock.took_over.as_ref(), &now)?;
        if repaired.is_none() {
            return Err(mark_corrupted(d, None, &why));
        }
    }
    if lock.took_over.is_some() {
        // Anything interrupted is complete: from now on only this holder's own message can be
        // the one a crash leaves uncounted.
        let record = LockInfo::render(&speaker, &now, None);
        fsutil::replace(&lock.path, record.as_bytes())?;
    }
    let known = snap.participants.iter().find(|p| same_id(p, &speaker));
    let speaker = known.cloned().unwrap_or(speaker);
    snap.may_speak(&speaker)?;

    let needs_user = req.text.contains(NEEDS_USER) || markers.iter().any(|m| m == NEEDS_USER);
    let next = next_turn(&snap, &speaker, to.as_deref(), needs_user)?;
    let number = snap.conv.count() + 1;
    let block = files::render_message(&snap.conv, number, &speaker, &now, &req.text, &markers);

    // Refuse before the append (the commit point) what would fail after it: a folder standing
    // where `current-turn.txt` or `status.json` is replaced.
    for path in [d.path(DIALOGUE_TURN), d.path(DIALOGUE_STATUS)] {
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            let why = "is a folder; move it out of the way";
            return Err(io::Error::new(io::ErrorKind::InvalidData, why)).at("replace", &path);
        }
    }
    fsutil::append_durable(&d.path(DIALOGUE_CONVERSATION), block.as_bytes())?;
    // Committed: when the turn or status cannot be written, `lock.txt` stays as after a crash,
    // so the next `say` completes this write rather than call it corruption.
    let fresh = |_| StatusDoc::new(&snap.topic, &snap.participants, &now);
    let mut status = snap.status.clone().unwrap_or_else(fresh);
    status.record_message(number, &speaker, &now);
    status.set("commands_read", snap.commands.lines);
    let written = d.replace(DIALOGUE_TURN, &format!("{next}\n"));
    if let Err(e) = written.and_then(|()| d.replace(DIALOGUE_STATUS, &status.render())) {
        lock.keep();
        return Err(e);
    }
    let took_over = lock.took_over.clone();
    lock.release()?;
    let agent = crate::workspace::AgentId::parse(&speaker)
        .map_or_else(|_| speaker.clone(), |a| a.id().to_string());
    let event = Event::new(Kind::DialogueTurn, &agent)
        .with("folder", d.rel.as_str())
        .with("number", number)
        .with("next", next.as_str());
    history::record(d.ws.root(), event);
    Ok(SayOutcome {
        number,
        speaker,
        next,
        markers,
        warnings,
        repaired,
        took_over,
    })
}

/// Who speaks after `speaker`: `to`, else `USER` on `[NEEDS-USER]`, else round-robin (after the
/// user, from the last agent who spoke).
fn next_turn(snap: &Snapshot, speaker: &str, to: Option<&str>, needs_user: bool) -> Result<String> {
    let parts = &snap.participants;
    match to {
        Some(t) => super::participant(parts, "to", t),
        None if needs_user => Ok(USER.into()),
        None if speaker != USER => Ok(round_robin(parts, speaker)),
        None => {
            let mut agents = snap.conv.messages.iter().rev().map(|m| m.speaker.as_str());
            let last_agent = agents.find(|s| !same_id(s, USER));
            Ok(round_robin(parts, last_agent.unwrap_or_default()))
        }
    }
}

fn round_robin(parts: &[String], after: &str) -> String {
    let at = parts.iter().position(|p| same_id(p, after));
    parts[at.map_or(0, |i| (i + 1) % parts.len())].clone()
}

/// Write the seed's error line to `current-turn.txt`; the error to return.
fn mark_corrupted(d: &Dialogue, line: Option<usize>, why: &str) -> Error {
    let turn_note = match d.replace(DIALOGUE_TURN, &format!("{CORRUPTED_LINE}\n")) {
        Ok(()) => format!("`{}` now says `{CORRUPTED_LINE}`", d.shown(DIALOGUE_TURN)),
        Err(e) => format!("and the error line could not be written ({e})"),
    };
    let (file, why) = (d.shown(DIALOGUE_CONVERSATION), why.to_string());
    Error::DialogueCorrupted {
        file,
        line,
        why,
        turn_note,
    }
}

/// Complete a write a crash interrupted after its append: only when a stale `lock.txt` was
/// taken over, the conversation holds exactly one message more than `status.json` counts, and
/// that message is by the stale lock's holder (or the writer it was completing itself).
fn repair_interrupted(
    d: &Dialogue,
    snap: &mut Snapshot,
    stale: Option<&LockInfo>,
    now: &Timestamp,
) -> Result<Option<String>> {
    let (Some(stale), Ok(mut status), Some(last)) =
        (stale, snap.status.clone(), snap.conv.messages.last())
    else {
        return Ok(None);
    };
    let by = |w: &str| same_id(&last.speaker, w);
    let by_writer = by(&stale.holder) || stale.interrupted.as_deref().is_some_and(by);
    if status.message_count().checked_add(1) != Some(snap.conv.count()) || !by_writer {
        return Ok(None);
    }
    let (writer, number) = (last.speaker.clone(), last.number);
    if snap.turn.id().is_some_and(|t| same_id(t, &writer)) {
        // As the interrupted say would have passed it (its `--to` is lost with it).
        let next = next_turn(snap, &writer, None, snap.conv.last_has(NEEDS_USER))?;
        d.replace(DIALOGUE_TURN, &format!("{next}\n"))?;
        snap.turn = Turn::parse(&next);
    }
    status.record_message(number, &writer, now);
    d.replace(DIALOGUE_STATUS, &status.render())?;
    snap.status = Ok(status);
    let done = format!("completed the interrupted write of message #{number} by {writer}");
    Ok(Some(done))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bad text is bad input (CLI arguments cannot carry a NUL byte, so it is checked here).
    #[test]
    fn empty_or_nul_text_is_bad_input() {
        for text in ["", " \n", "a\0b"] {
            let refused = check_request("AGENT-1", text);
            assert!(matches!(refused, Err(Error::BadInput { .. })), "{text:?}");
        }
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // plants a hand-made lock.txt
    fn a_held_lock_txt_is_dialogue_busy() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let d = Dialogue::default_in(&crate::workspace::Workspace::init(&root).unwrap().0).unwrap();
        d.init("T", &[], None).unwrap();
        std::fs::write(d.path(crate::layout::DIALOGUE_LOCK), "AGENT-2\n").unwrap();
        let req = SayRequest {
            speaker: "AGENT-1".into(),
            text: "x".into(),
            markers: Vec::new(),
            to: None,
            lock_wait: Duration::ZERO,
        };
        assert_eq!(say(&d, &req).unwrap_err().kind(), "dialogue_busy");
    }
}
