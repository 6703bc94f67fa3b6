//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per behaviour (named for what its tests pin, as cargo's
//! `tests/testsuite/<command>.rs`); `support` holds the builder, `fixture` the workspaces in a
//! given state built with it, `planted` the bed for files in hostile shapes, `rigs` root, another
//! user and a full disk, `e2e` and `scripted` the benches of the real agent clients.
#![allow(clippy::disallowed_methods)] // the tests plant files by hand, as an agent or a user would

mod e2e;
mod fixture;
mod planted;
mod rigs;
mod scripted;
mod support;

mod arguments;
mod backups;
mod claims;
mod claude_e2e;
mod codex_e2e;
mod collab;
mod completions;
mod concurrency;
mod conflicts;
mod conventions;
mod copilot_e2e;
mod copilot_shell_e2e;
mod crashes;
mod crashes_dialogue;
mod crashes_messages;
mod crashes_protocols;
mod crashes_review;
mod deadlock;
mod dialogue;
mod dialogue_repair;
mod docs;
mod edit;
mod faults;
mod full_disk;
mod gemini_e2e;
mod guard;
mod hand_made_locks;
mod handoff;
mod handshake;
mod history;
mod hook_git;
mod hook_payloads;
mod hook_rivals;
mod hooks;
mod identity;
mod init;
mod init_checks;
mod init_remove;
mod json;
mod load;
mod locks;
mod mcp;
mod mcp_files;
mod mcp_lifetime;
mod mcp_tools;
mod messages;
mod moreclients;
mod moreclients_e2e;
mod moreclients_editors;
mod moreclients_plugins_e2e;
mod needs_user;
mod nested;
mod netfs;
mod plugin;
mod plugin_clients;
mod plugin_sessions;
mod presence;
mod records;
mod refusals;
mod review;
mod review_close;
mod review_files;
mod run;
mod sandbox;
mod scale;
mod schemas;
mod seed_compat;
mod session;
mod shelledit;
mod stamp;
mod startup;
mod status;
mod symlinks;
mod takeover;
mod timeline;
mod ui;
mod wait_news;
mod waiting;
mod watch;
mod workspace;
mod worktrees;
