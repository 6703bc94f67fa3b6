//! `client::payload::read` and `client::parse` on arbitrary bytes: never a panic, and what is read
//! in part (not JSON) is always an object.
#![no_main]

use coord::client::{self, Client, payload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = payload::read(data) {
        assert!(p.fault.is_none() || p.value.is_object());
    }
    for client in [Client::Claude, Client::Codex, Client::Gemini, Client::Copilot] {
        let _ = client::parse(client, data, Some("PreToolUse"));
    }
});
