//! `user-commands.txt` (through `coord::fuzzing`): every line parses without panicking, a parsed
//! command renders to a line that parses back to the same command, and judging a whole file never
//! panics.
#![no_main]

use coord::fuzzing::{judge_commands, user_command};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        user_command(line);
    }
    let _ = judge_commands(
        &text,
        Some(text.len() % 7),
        data.first().is_some_and(|b| b & 1 == 1),
    );
    let _ = judge_commands(&text, None, false);
});
