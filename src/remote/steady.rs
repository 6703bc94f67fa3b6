//! A clock that does not jump, shared by every process of one boot: what a reader counts a
//! lease by beside its wall clock, so that a wall clock set forward never makes a live claim of
//! another clone lapse (docs/protocol.md, "Remote claims").
//!
//! Linux: `CLOCK_BOOTTIME` (it goes on while the machine sleeps), with the boot's id from
//! `/proc/sys/kernel/random/boot_id` (empty where it cannot be read). macOS: `CLOCK_MONOTONIC`,
//! which counts from the boot and goes on while asleep there too; no boot id is read (empty). Either counts from its boot, so
//! two readings taken across a reboot differ by at most the time since the later boot, never
//! by more than really passed: a count never ends early. Elsewhere nothing is read, and a
//! reader that cannot count takes no claim as lapsed (the safe side).
//!
//! A reading is kept beside each claim version in `.coord/remote/state.json` (the anchor: when
//! this clone first saw that version, by this clock) and carried into `.coord/remote/claims`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One reading of the clock: the boot it belongs to and the milliseconds since that boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steady {
    /// The boot's id (empty where none is read).
    pub boot: String,
    /// Milliseconds since the boot.
    pub ms: u64,
}

impl Steady {
    /// The time from `self` to `later`, both of this clock: `None` when it cannot tell (another
    /// boot, or a reading that went back: counting starts again).
    pub fn until(&self, later: &Steady) -> Option<Duration> {
        if self.boot != later.boot {
            return None;
        }
        later.ms.checked_sub(self.ms).map(Duration::from_millis)
    }

    /// The reading `d` after this one.
    pub fn after(&self, d: Duration) -> Steady {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Steady {
            boot: self.boot.clone(),
            ms: self.ms.saturating_add(ms),
        }
    }
}

/// The clock now (`None`: it cannot be read here).
pub fn now() -> Option<Steady> {
    let (boot, t) = read()?;
    let ms = u64::try_from(t.tv_sec)
        .ok()?
        .checked_mul(1000)?
        .checked_add(u64::try_from(t.tv_nsec).ok()? / 1_000_000)?;
    Some(Steady { boot, ms })
}

#[cfg(target_os = "linux")]
fn read() -> Option<(String, rustix::time::Timespec)> {
    // Unreadable (a sandbox hiding it): empty, as on macOS; the clock counts from its boot all
    // the same.
    let id = crate::fsutil::read_capped(std::path::Path::new(BOOT_ID), 128)
        .ok()
        .and_then(|id| String::from_utf8(id).ok())
        .map(|id| id.trim().to_string())
        .unwrap_or_default();
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    Some((id, t))
}

/// Where Linux says which boot this is.
#[cfg(target_os = "linux")]
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

#[cfg(target_os = "macos")]
fn read() -> Option<(String, rustix::time::Timespec)> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Some((String::new(), t))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn read() -> Option<(String, rustix::time::Timespec)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(boot: &str, ms: u64) -> Steady {
        Steady {
            boot: boot.into(),
            ms,
        }
    }

    #[test]
    fn the_time_between_two_readings_of_one_boot_is_counted() {
        let a = at("b1", 1_000);
        assert_eq!(
            a.until(&at("b1", 4_500)),
            Some(Duration::from_millis(3_500))
        );
        assert_eq!(a.after(Duration::from_secs(2)), at("b1", 3_000));
        // Another boot, or a reading that went back: nothing is counted.
        assert_eq!(a.until(&at("b2", 9_000)), None);
        assert_eq!(a.until(&at("b1", 999)), None);
    }

    #[test]
    fn the_clock_reads_and_never_goes_back_here() {
        let Some(a) = now() else {
            return;
        };
        let b = now().unwrap();
        assert!(a.until(&b).is_some(), "{a:?} {b:?}");
    }
}
