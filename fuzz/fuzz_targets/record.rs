//! `Record::parse` on arbitrary bytes; what it parsed renders and parses back unchanged.
#![no_main]

use coord::record::Record;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let rec = Record::parse(&text);
    let _ = rec.get("Agent");
    // Rebuild through the writer: every value is folded onto one line, and reads back as set.
    let mut out = Record::new();
    for (k, v) in rec.entries() {
        out.set(k, v);
    }
    let back = Record::parse(&out.render());
    assert_eq!(back.entries(), out.entries());
});
