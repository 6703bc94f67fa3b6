//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder.

mod support;

mod concurrency;
mod crashes;
mod hostile;
mod load;
mod symlinks;
mod v3_core;
