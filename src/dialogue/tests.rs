//! Unit tests of `say`: a message lands and passes the turn; out of turn, paused and ended
//! dialogues are refused by rule and write nothing; bad text is bad input.
#![allow(clippy::disallowed_methods)] // plants hand-made files on purpose

use std::path::PathBuf;
use std::time::Duration;

use super::Dialogue;
use super::say::{SayRequest, say};
use crate::error::{Error, Refusal};
use crate::layout;
use crate::workspace::Workspace;

fn dialogue() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = std::fs::canonicalize(dir.path()).unwrap();
    let (ws, _) = Workspace::init(&root).unwrap();
    let d = Dialogue::default_in(&ws).unwrap();
    d.init("Caching", &["AGENT-1".into(), "AGENT-2".into()], None)
        .unwrap();
    (dir, ws)
}

fn request(speaker: &str, text: &str) -> SayRequest {
    SayRequest {
        speaker: speaker.into(),
        text: text.into(),
        markers: Vec::new(),
        to: None,
        lock_wait: Duration::from_millis(200),
    }
}

fn refusal(err: Error) -> Refusal {
    match err {
        Error::Refused { why, .. } => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn say_writes_the_message_and_passes_the_turn() {
    let (_dir, ws) = dialogue();
    let d = Dialogue::default_in(&ws).unwrap();
    let out = say(&d, &request("AGENT-1", "An LRU cache")).unwrap();
    assert_eq!((out.number, out.next.as_str()), (1, "AGENT-2"));
    let conv = std::fs::read_to_string(d.path(layout::DIALOGUE_CONVERSATION)).unwrap();
    assert!(conv.contains("## Message #1 [AGENT-1]"), "{conv}");
    assert!(conv.contains("An LRU cache"), "{conv}");
    let turn = std::fs::read_to_string(d.path(layout::DIALOGUE_TURN)).unwrap();
    assert_eq!(turn, "AGENT-2\n");
    assert!(
        !d.path(layout::DIALOGUE_LOCK).exists(),
        "lock.txt is released"
    );
}

#[test]
fn refusals_name_their_rule_and_write_nothing() {
    let (_dir, ws) = dialogue();
    let d = Dialogue::default_in(&ws).unwrap();
    let conv = d.path(layout::DIALOGUE_CONVERSATION);
    let before = std::fs::read(&conv).unwrap();
    let err = say(&d, &request("AGENT-2", "me first")).unwrap_err();
    assert_eq!(refusal(err), Refusal::NotYourTurn);
    std::fs::write(d.path(layout::DIALOGUE_COMMANDS), "PAUSE\n").unwrap();
    let err = say(&d, &request("AGENT-1", "now?")).unwrap_err();
    assert_eq!(refusal(err), Refusal::DialoguePaused);
    std::fs::write(d.path(layout::DIALOGUE_COMMANDS), "END-SESSION\n").unwrap();
    let err = say(&d, &request("AGENT-1", "still?")).unwrap_err();
    assert_eq!(refusal(err), Refusal::DialogueEnded);
    assert_eq!(std::fs::read(&conv).unwrap(), before);
}

#[test]
fn a_held_lock_txt_is_dialogue_busy_after_the_wait() {
    let (_dir, ws) = dialogue();
    let d = Dialogue::default_in(&ws).unwrap();
    let held = super::files::LockInfo::render("AGENT-2", &crate::clock::now(), None);
    std::fs::write(d.path(layout::DIALOGUE_LOCK), held).unwrap();
    let err = say(&d, &request("AGENT-1", "x")).unwrap_err();
    assert_eq!(refusal(err), Refusal::DialogueBusy);
}

#[test]
fn empty_or_nul_text_is_bad_input() {
    let (_dir, ws) = dialogue();
    let d = Dialogue::default_in(&ws).unwrap();
    for text in ["", "a\0b"] {
        let err = say(&d, &request("AGENT-1", text)).unwrap_err();
        assert!(matches!(err, Error::BadInput { .. }), "{text:?}: {err:?}");
    }
}
