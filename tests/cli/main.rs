//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder, `fixture` the
//! workspaces in a given state built with it.

mod fixture;
mod support;

mod collab;
mod concurrency;
mod crashes;
mod crashes_protocols;
mod defects;
mod dialogue;
mod docs;
mod edit;
mod handshake;
mod hostile;
mod hostile_state;
mod json;
mod load;
mod mcp;
mod messages;
mod review;
mod session;
mod stamp;
mod symlinks;
mod v3_core;
mod workspace;
