//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder.

mod support;

mod collab;
mod concurrency;
mod crashes;
mod crashes_protocols;
mod defects;
mod dialogue;
mod edit;
mod handshake;
mod hostile;
mod hostile_state;
mod load;
mod messages;
mod review;
mod session;
mod stamp;
mod symlinks;
mod v3_core;
