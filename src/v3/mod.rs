//! Protocol V3 (seed 001): presence files with heartbeats, `FILE.lock.<agent>` locks that can
//! never be double-held, `.bak` backups, and the wait queue that serves waiters in order.

pub mod backup;
pub mod lock;
pub mod message;
pub mod note;
pub mod presence;
pub mod queue;
