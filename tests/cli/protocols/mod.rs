//! The protocols over plain files: presence, the stamp card, handshakes, messages, sessions, safe
//! editing and backups, the collaboration file, the dialogue, the review tracker, and byte
//! compatibility with the seeds.

mod backups;
mod collab;
pub(crate) mod dialogue;
mod dialogue_repair;
pub(crate) mod edit;
mod handshake;
mod messages;
mod presence;
mod records;
pub(crate) mod review;
mod review_close;
mod review_files;
mod run;
mod seed_compat;
pub(crate) mod session;
mod stamp;
