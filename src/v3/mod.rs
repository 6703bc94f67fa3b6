//! Protocol V3 (seed 001): presence files with heartbeats, `FILE.lock.<agent>` locks that can
//! never be double-held, `.bak` backups, the wait queue that serves waiters in order, the
//! stamp card of partner sessions, sessions that run an agent under coord, handshakes,
//! messages between agents and in-file notes.

pub mod backup;
pub mod handshake;
pub mod lock;
pub mod message;
pub mod note;
pub mod presence;
pub mod queue;
pub mod session;
pub mod stamp;
pub mod waits;

#[cfg(test)]
mod tests;
