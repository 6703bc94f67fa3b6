//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder, `fixture` the
//! workspaces in a given state built with it.
#![allow(clippy::disallowed_methods)] // the tests plant files by hand, as an agent or a user would

mod e2e;
mod fixture;
mod scripted;
mod support;

mod claude_e2e;
mod codex_e2e;
mod collab;
mod concurrency;
mod conflicts;
mod conventions;
mod copilot_e2e;
mod crashes;
mod crashes_protocols;
mod defects;
mod dialogue;
mod docs;
mod edit;
mod faults;
mod gemini_e2e;
mod guard;
mod handoff;
mod handshake;
mod history;
mod hooks;
mod hostile;
mod hostile_state;
mod identity;
mod init;
mod json;
mod load;
mod mcp;
mod messages;
mod moreclients;
mod moreclients_e2e;
mod moreclients_editors;
mod mutants_edit;
mod mutants_lock;
mod nested;
mod netfs;
mod plugin;
mod refusals;
mod review;
mod sandbox;
mod scale;
mod schemas;
mod session;
mod shelledit;
mod stamp;
mod startup;
mod symlinks;
mod v3_core;
mod views;
mod wait_news;
mod workspace;
mod worktrees;
