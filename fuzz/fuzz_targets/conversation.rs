//! The dialogue's `conversation.md`, `current-turn.txt` and `status.json` readers on arbitrary
//! bytes, written to a dialogue folder and read as `coord dialogue turn` reads them: never panic,
//! and what they report stays self-consistent; `status.json` render → parse (through
//! `coord::fuzzing`).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use coord::dialogue::Dialogue;
use coord::fuzzing::status_json;
use coord::workspace::Workspace;
use libfuzzer_sys::fuzz_target;

fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        std::fs::create_dir(dir.join("agent-dialogue")).unwrap();
        std::fs::canonicalize(dir).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let ws = Workspace::at(root().clone());
    let dialogue = Dialogue::default_in(&ws).unwrap();
    for name in ["conversation.md", "current-turn.txt", "status.json"] {
        std::fs::write(dialogue.folder.join(name), data).unwrap();
    }
    let view = dialogue.snapshot().unwrap().view();
    if view.last_speaker.is_some() {
        assert!(view.message_count >= 1);
    }
    if let Some(doc) = status_json(&String::from_utf8_lossy(data)) {
        let back = status_json(&doc).expect("a rendered status.json reads back");
        assert_eq!(back, doc);
    }
});
