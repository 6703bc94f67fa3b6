//! Waiting: sleeping until a condition on disk holds, without polling every few seconds.

use std::time::{Duration, Instant};

pub mod folder;
pub mod handoff;
mod signals;

pub use folder::FolderWatch;
pub use signals::{finishing, request_stop, stop_on_signals, stop_requested, stopped};

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
    let until = Deadline::after(Some(d));
    while !until.passed() && stop_requested().is_none() {
        std::thread::sleep(until.next_sleep(Duration::from_millis(100)));
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
