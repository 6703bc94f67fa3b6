//! A client's hook payload reader (`client::payload::read`, through `coord::fuzzing`) and
//! `client::parse` for every client on arbitrary bytes: never a panic, and what is read in part
//! (not JSON) is always an object.
#![no_main]

use coord::client::{self, Client};
use coord::fuzzing::hook_payload;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = hook_payload(data) {
        assert!(p.fault.is_none() || p.value.is_object());
    }
    for &client in Client::ALL {
        let _ = client::parse(client, data, Some("PreToolUse"));
    }
});
