//! A presence file of arbitrary bytes: parsed and judged (state, heartbeat, locks, view).
#![no_main]

use coord::clock;
use coord::presence::Presence;
use coord::status::agent_view;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let now = clock::parse_timestamp("2026-01-28T01:00:00+01:00").unwrap();
    for mtime in [None, Some(now)] {
        let p = Presence::parse("fuzz", &text, mtime);
        let _ = (p.name(), p.heartbeat(), p.state(&now), p.locks());
        let _ = agent_view(&p, &now);
    }
});
