//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`, off by default), for
//! the parsers and round trips the public API does not reach. Not an API.

use crate::dialogue::commands::{UserCommand, judge};
use crate::dialogue::files::StatusDoc;
use crate::review::tracker::Tracker;

pub use crate::client::payload::read as hook_payload;

/// `status.json` read and rendered back (`None`: it does not read).
pub fn status_json(text: &str) -> Option<String> {
    StatusDoc::parse(text).ok().map(|doc| doc.render())
}

/// A `user-commands.txt` line: a command it holds renders to a line that reads back the same.
pub fn user_command(line: &str) {
    if let Some(cmd) = UserCommand::parse(line) {
        assert_eq!(UserCommand::parse(&cmd.render()), Some(cmd));
    }
}

/// A whole `user-commands.txt` judged.
pub fn judge_commands(text: &str, read: Option<usize>, newer: bool) -> impl std::fmt::Debug {
    judge(text, read, newer)
}

/// A review tracker read and rendered back (`None`: it does not read).
pub fn tracker(text: &str) -> Option<String> {
    let path = std::path::Path::new("fuzz-tracker.md");
    Tracker::parse(path, text).ok().map(|t| t.render())
}
