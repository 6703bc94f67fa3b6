//! Safe editing under the lock: `coord write`, `coord run`, `coord restore`.
//!
//! Seed 001's workflow is "lock, back up, edit, unlock". These operations make each step safe:
//!
//! - [`write`](mod@write) replaces a file's content only while this agent still holds its lock, and
//!   commits with a **fenced** check: the lock's random token, read when the write starts, is
//!   compared again under the workspace mutex right before the rename. A stale takeover also
//!   runs under that mutex, so an agent whose lock was taken over can never overwrite the new
//!   holder's work; its content is kept in `FILE.rejected.<agent>` instead, never lost.
//!   The file is replaced whole (temporary file in the same folder, fsync, rename, fsync of the
//!   folder): a reader, or a crash, sees the old content or the new, never a mix or a hole.
//! - [`run`](mod@run) holds the locks for the life of a command, tied to this process (so a killed
//!   `coord run` leaves a lock that is stale at once), and releases them on every way out.
//! - [`restore`](mod@restore) swaps `FILE` and `FILE.bak` under the lock, so a restore can be undone.
//!
//! Every backup is published by rename: a symlink planted at `FILE.bak` is replaced, never
//! followed, and nothing but `FILE.bak` is touched.

pub mod restore;
pub mod run;
pub mod write;

use crate::workspace::Target;

/// The folder holding `target`.
fn folder(target: &Target) -> &std::path::Path {
    target.abs.parent().unwrap_or(std::path::Path::new("/"))
}
