//! coord: coordinate several AI coding agents (and the humans watching them) in one shared folder.
//!
//! The library implements the seed protocols as plain files. It never prints and never exits:
//! every operation returns data or a typed [`Error`], and the `coord` binary renders both.
//!
//! Layers, from the bottom up:
//!
//! - foundation: [`arbiter`] (what the folder is on, and the workspace mutex that holds there), [`clock`] (now, timestamps, durations), [`layout`] (every name on disk),
//!   [`record`] (the seed's `key: value` text), [`fsutil`] (every write to disk, capped reads, the
//!   workspace mutex), [`host`] (this machine and its processes), [`wait`] (waiting for a condition on
//!   disk: folder events, the `flock` hand-off, deadlines, signals),
//!   [`workspace`] (root discovery, agent ids, path confinement, nested workspaces), [`shell`] (commands in hints),
//!   [`gitconfig`] (the settings coord reads from git's config files), [`textblock`] (coord's
//!   marked block in a user's text file), [`adopt`] (coord's files kept out of `git status` in
//!   a repository nobody set up);
//! - protocols, seed 001: [`lock`] (locks and claims, backups, the wait queue, deadlocks),
//!   [`presence`], [`stamp`] (the stamp card of partners), [`session`], [`handshake`],
//!   [`message`], [`note`];
//!   [`collab`] (seed 000: the shared collaboration file); [`dialogue`] (seed 002: the
//!   turn-based dialogue); [`review`] (seed 003: the review tracker); [`edit`] (safe editing
//!   under the lock: write, run, restore); [`remote`] (claims shared by clones on other
//!   machines through the repository's remote, decided by compare-and-swap);
//! - views: [`status`] (everything at once, for `coord status`, workspaces inside this one
//!   included); [`shelledit`] (held files a shell command changed); [`conflicts`] (what
//!   the branches of the work trees changed alike, before the merge); [`history`] (what
//!   happened: the event log behind `coord log` and `coord watch`); [`watch`] (the live view:
//!   what changed between two looks, for `coord watch`);
//! - front doors: [`mcp`] (the Model Context Protocol server's framing and tool catalogue);
//!   [`ui`] (the page for the humans watching: a small HTTP server of the status and the history).

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
pub mod demo;
pub mod dialogue;
pub mod edit;
pub mod error;
pub mod exit_code;
pub mod fsutil;
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

// coord keeps mutual exclusion with POSIX file semantics (hard links and link counts, inode
// identity, `O_NOFOLLOW`, renames over a name, process groups and signals); Windows has none of
// them in that form. One clear line instead of a screen of missing `std::os::unix` items.
#[cfg(windows)]
compile_error!(
    "coord runs on Linux and macOS, not on Windows: use it inside WSL (Windows Subsystem for Linux)"
);
