//! `clock::parse_timestamp` on arbitrary text; what it reads formats and reads back.
#![no_main]

use coord::clock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(ts) = clock::parse_timestamp(&text) {
        let written = clock::format_timestamp(&ts);
        let _ = clock::parse_timestamp(&written);
        let _ = clock::age(&ts, &ts);
    }
});
