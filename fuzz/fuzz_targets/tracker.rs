//! The review tracker parser on arbitrary text: never panics, and a tracker it accepts renders
//! back byte for byte (reading then writing changes nothing).
#![no_main]

use std::path::Path;

use coord::review::tracker::Tracker;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(tracker) = Tracker::parse(Path::new("fuzz-tracker.md"), &text) {
        let _ = tracker.view();
        assert_eq!(tracker.render(), text);
    }
});
