//! The dialogue's `conversation.md`, `current-turn.txt` and `status.json` readers on arbitrary
//! text: never panic, and what they report stays self-consistent.
#![no_main]

use coord::dialogue::files::{Conversation, StatusDoc, Turn};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let conv = Conversation::parse(&text);
    let count = conv.count();
    if let Some(last) = conv.last() {
        assert!(count >= 1);
        let _ = &last.speaker;
    }
    let _ = conv.numbering_error();
    let _ = Turn::parse(&text);
    if let Ok(doc) = StatusDoc::parse(&text) {
        let back = StatusDoc::parse(&doc.render()).expect("a rendered status.json reads back");
        assert_eq!(back.render(), doc.render());
    }
});
