//! What people and scripts see: status, watch, the history and timeline, conflicts, who needs a
//! human, the live page, JSON and its schemas, help, completions, the demo and the docs' runnable
//! examples.

pub(crate) mod completions;
mod conflicts;
mod conventions;
mod demo;
pub(crate) mod docs;
mod help_text;
pub(crate) mod history;
mod json;
pub(crate) mod needs_user;
pub(crate) mod schemas;
pub(crate) mod status;
mod timeline;
mod ui;
mod watch;
