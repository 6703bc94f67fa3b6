//! Every on-disk name parser and the agent id check on arbitrary text; names that parse build
//! back into the same name, and a valid agent id never makes a path leave its folder.
#![no_main]

use std::path::Path;

use coord::layout;
use coord::workspace::AgentId;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // A name read from a folder never holds `/` (paths normalise repeated ones).
    let file_name = !text.contains('/');
    if let Some((base, agent)) = layout::parse_lock_name(&text).filter(|_| file_name) {
        // The agent part is read case-insensitively (`FILE.lock.Claude` is claude's lock); the
        // canonical name coord writes is the same text with that part lower-cased.
        let built = layout::lock_file(Path::new(base), &agent);
        let (b, a) = text
            .rsplit_once(".lock.")
            .expect("a lock name has the infix");
        assert_eq!(b, base);
        assert_eq!(a.to_ascii_lowercase(), agent);
        assert_eq!(built.to_str(), Some(&*format!("{base}.lock.{agent}")));
    }
    if let Some((tag, pid)) = layout::parse_temp_name(&text) {
        assert!(layout::temp_prefix(tag, pid).len() <= text.len());
    }
    let _ = layout::parse_ticket(&text);
    let _ = layout::handshake_agent(&text);
    if let Some(id) = layout::presence_agent(&text) {
        assert_eq!(
            layout::presence(Path::new("/w"), id).parent(),
            Some(Path::new("/w"))
        );
    }
    if let Ok(a) = AgentId::parse(&text) {
        let p = layout::presence(Path::new("/w"), a.id());
        assert_eq!(p.parent(), Some(Path::new("/w")));
    }
});
