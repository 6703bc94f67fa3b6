//! The review tracker parser on arbitrary text (through `coord::fuzzing`): never panics, and a
//! tracker it accepts renders back byte for byte (reading then writing changes nothing).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(rendered) = coord::fuzzing::tracker(&text) {
        assert_eq!(rendered, text);
    }
});
