//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per command group; `support` holds the builder.

mod support;

mod edit;
mod v3_core;
