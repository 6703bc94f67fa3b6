//! `user-commands.txt`: every line parses without panicking, a parsed command renders to a line
//! that parses back to the same command, and judging a whole file never panics.
#![no_main]

use coord::dialogue::commands::{UserCommand, judge};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        if let Some(cmd) = UserCommand::parse(line) {
            assert_eq!(UserCommand::parse(&cmd.render()), Some(cmd));
        }
    }
    let _ = judge(
        &text,
        Some(text.len() % 7),
        data.first().is_some_and(|b| b & 1 == 1),
    );
    let _ = judge(&text, None, false);
});
