//! Integration tests: the real `coord` binary in temporary folders.
//!
//! One test binary, one module per behaviour (named for what its tests pin, as cargo's
//! `tests/testsuite/<command>.rs`); `support` holds the builder, `fixture` the workspaces in a
//! given state built with it, `planted` the bed for files in hostile shapes, `rigs` root, another
//! user and a full disk, `e2e` the bench of the real agent clients.
#![allow(clippy::disallowed_methods)] // the tests plant files by hand, as an agent or a user would

mod e2e;
mod fixture;
mod gitserve;
mod planted;
mod rigs;
mod support;

mod clients;
mod locks;
mod protocols;
mod robustness;
mod views;
