//! `clock::parse_duration` on arbitrary text; every duration it reads formats and reads back.
#![no_main]

use coord::clock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = clock::Wait::parse(&text);
    if let Ok(d) = clock::parse_duration(&text) {
        let written = clock::format_duration(d);
        assert_eq!(clock::parse_duration(&written).ok(), Some(d), "{written}");
    }
});
