//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder.

mod support;

mod concurrency;
mod collab;
mod messages;
mod handshake;
mod session;
mod stamp;
mod v3_core;
