//! Safe editing under the lock: `coord write`, `coord run`, `coord restore`.
//!
//! Seed 001's workflow is "lock, back up, edit, unlock"; these make each step safe: a write
//! commits only while the lock's token is still this agent's ([`write`](mod@write)), a run holds
//! the locks for the life of a command ([`run`](mod@run)), a restore swaps `FILE` and `FILE.bak`
//! ([`restore`](mod@restore)). Every backup is published by rename: a symlink planted at
//! `FILE.bak` is replaced, never followed.

pub mod restore;
pub mod run;
pub mod write;

use crate::workspace::Target;

/// The folder holding `target`.
fn folder(target: &Target) -> &std::path::Path {
    target.abs.parent().unwrap_or(std::path::Path::new("/"))
}
