//! Waiting: sleeping until a condition on disk holds, without polling every few seconds.
//!
//! Every wait in coord (a lock behind its holder, a turn in the dialogue, a message, a handshake
//! answer) is the same loop: subscribe, test the condition, sleep until something may have
//! changed or the [`Deadline`] passes, test again. This room holds the ways to sleep and wake:
//!
//! - [`folder`]: folder events ([`FolderWatch`]; inotify on Linux), bounded by a re-check
//!   interval ([`RECHECK`], `arbiter::recheck_for`) because network filesystems send no events;
//! - [`handoff`]: the waiter just behind a ticket or lock that its owner keeps `flock`ed is woken
//!   by the kernel the moment that file is gone (local folders only);
//! - [`stop_on_signals`] / [`stop_requested`]: `SIGINT`, `SIGTERM` and `SIGHUP` end a wait
//!   cleanly instead of killing the waiter mid-wait.
//!
//! Waiting decides nothing: whether the condition holds is the caller's protocol's question.
//! (`coord watch`, the live view of the workspace, is [`crate::wait`], not this room.)

use std::time::{Duration, Instant};

pub mod folder;
pub mod handoff;
mod signals;

pub use folder::FolderWatch;
pub use signals::{finishing, request_stop, stop_on_signals, stop_requested};

/// How often a waiter re-checks even without an event (network filesystems send none).
pub const RECHECK: Duration = Duration::from_millis(500);

/// A point in time by which a wait ends, or none.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// A deadline `d` from now, or never for `None`.
    pub fn after(d: Option<Duration>) -> Deadline {
        Deadline(d.map(|d| Instant::now() + d))
    }

    /// Whether it has passed.
    pub fn passed(&self) -> bool {
        self.0.is_some_and(|t| Instant::now() >= t)
    }

    /// How long to sleep next: at most `step`, never past the deadline.
    pub fn next_sleep(&self, step: Duration) -> Duration {
        match self.0 {
            Some(t) => t.saturating_duration_since(Instant::now()).min(step),
            None => step,
        }
    }
}

/// Sleep `d`, waking early (within 100 ms) when the process is asked to stop
/// ([`stop_requested`]).
pub fn pause(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until && stop_requested().is_none() {
        std::thread::sleep(
            until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines() {
        let d = Deadline::after(Some(Duration::ZERO));
        assert!(d.passed());
        let never = Deadline::after(None);
        assert!(!never.passed());
        assert_eq!(never.next_sleep(RECHECK), RECHECK);
    }
}
