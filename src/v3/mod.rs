//! Protocol V3 (seed 001): presence files with heartbeats, `FILE.lock.<agent>` locks that can
//! never be double-held, `.bak` backups, the wait queue that serves waiters in order, messages
//! between agents and in-file notes.

pub mod backup;
pub mod lock;
pub mod message;
pub mod note;
pub mod presence;
pub mod queue;
