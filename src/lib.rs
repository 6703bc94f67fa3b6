//! coord: coordinate several AI coding agents (and the humans watching them) in one shared folder.
//!
//! The library implements the seed protocols as plain files. It never prints and never exits:
//! every operation returns data or a typed [`Error`], and the `coord` binary renders both.
//! docs/architecture.md maps the modules in layers: foundation, protocols, views, front doors.

// The library has no unsafe code; the binary has one place that needs it, documented there
// (src/cli/child_fence.rs: code run between fork and exec).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adopt;
pub mod arbiter;
pub mod client;
pub mod clock;
pub mod collab;
pub mod conflicts;
pub mod dialogue;
pub mod edit;
pub mod error;
pub mod exit_code;
pub mod fsutil;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gitconfig;
pub mod guard;
pub mod handshake;
pub mod history;
pub mod hook;
pub mod host;
pub mod identity;
pub mod init;
pub mod layout;
pub mod lock;
pub mod mcp;
pub mod message;
pub mod note;
pub mod pattern;
pub mod plugin;
pub mod presence;
pub mod prune;
pub mod record;
pub mod remote;
pub mod review;
pub mod session;
pub mod shell;
pub mod shelledit;
pub mod stamp;
pub mod status;
pub mod textblock;
pub mod ui;
pub mod wait;
pub mod watch;
pub mod workspace;
pub mod worktree;

#[cfg(test)]
mod proptests;

pub use error::{Error, Result};
pub use exit_code::ExitCode;

// coord keeps mutual exclusion with POSIX file semantics (hard links, inode identity,
// `O_NOFOLLOW`, renames, process groups, signals) that Windows lacks: one clear line instead.
#[cfg(windows)]
compile_error!(
    "coord runs on Linux and macOS, not on Windows: use it inside WSL (Windows Subsystem for Linux)"
);
