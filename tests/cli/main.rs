//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder.

mod support;

mod collab;
mod concurrency;
mod dialogue;
mod edit;
mod handshake;
mod messages;
mod review;
mod session;
mod stamp;
mod crashes;
mod hostile;
mod load;
mod symlinks;
mod v3_core;
