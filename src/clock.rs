//! The one owner of "now", of timestamps as written in files, and of durations.

use std::time::Duration;

use chrono::{DateTime, FixedOffset, Local, NaiveDateTime, TimeZone};

use crate::error::{Error, Result};

/// A point in time with the offset it was written with.
pub type Timestamp = DateTime<FixedOffset>;

/// The environment variable that fixes the clock.
pub const NOW_ENV: &str = "COORD_NOW";

/// The current time in the local offset (or `COORD_NOW` when set and valid).
pub fn now() -> Timestamp {
    if let Ok(fixed) = std::env::var(NOW_ENV)
        && let Some(ts) = parse_timestamp(&fixed)
    {
        return ts;
    }
    Local::now().fixed_offset()
}

/// Format a time the way coord writes it into files: RFC 3339, seconds, local offset.
pub fn format_timestamp(ts: &Timestamp) -> String {
    ts.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// `now()` formatted for a file.
pub fn now_string() -> String {
    format_timestamp(&now())
}

/// Read a timestamp written by coord or by hand.
pub fn parse_timestamp(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    if text.is_empty() || text.len() > 64 {
        return None;
    }
    if let Ok(ts) = DateTime::parse_from_rfc3339(text) {
        return Some(ts);
    }
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|fmt| NaiveDateTime::parse_from_str(text, fmt).ok())?;
    Some(Local.from_local_datetime(&naive).earliest()?.fixed_offset())
}

/// Convert a file's modification time to a timestamp in the local offset.
pub fn from_system_time(t: std::time::SystemTime) -> Timestamp {
    // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, far enough from chrono's limits that no
    // local offset can push them over.
    const MAX_SECS: i64 = 253_402_300_799;
    let secs = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    };
    let utc = DateTime::from_timestamp(secs.clamp(FIRST_DAY, MAX_SECS), 0).unwrap_or_default();
    utc.with_timezone(&Local).fixed_offset()
}

/// The time `d` before `t`, or 0001-01-01 when that is further back than the calendar holds.
pub fn back_from(t: &Timestamp, d: Duration) -> Timestamp {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| t.checked_sub_signed(d))
        .filter(|b| b.timestamp() >= FIRST_DAY)
        .unwrap_or_else(|| {
            DateTime::from_timestamp(FIRST_DAY, 0)
                .unwrap_or_default()
                .fixed_offset()
        })
}

/// 0001-01-01T00:00:00Z in seconds since the epoch.
const FIRST_DAY: i64 = -62_135_596_800;

/// The units a duration is written in, largest first, with their size in seconds.
const UNITS: [(&str, u64); 4] = [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)];

/// How long ago `then` was, as seen from `now` (zero when `then` is in the future).
pub fn age(now: &Timestamp, then: &Timestamp) -> Duration {
    (*now - *then).to_std().unwrap_or(Duration::ZERO)
}

/// A short human age: `12s`, `3m`, `2h`, `4d`.
pub fn format_age(age: Duration) -> String {
    let secs = age.as_secs();
    let largest = UNITS.into_iter().find(|(_, size)| secs >= *size);
    let (unit, size) = largest.unwrap_or(("s", 1));
    format!("{}{unit}", secs / size)
}

/// A short human form of a duration given as an option: `500ms`, `30s`, `5m`, `1h30m`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    // Milliseconds alone while the number stays short enough for `parse_duration` to read back
    // (12 digits); past that, whole units first and the milliseconds last (`11574d1h46m40s1ms`).
    if !ms.is_multiple_of(1000) && ms < 1_000_000_000_000 {
        return format!("{ms}ms");
    }
    let mut secs = d.as_secs();
    let mut out = String::new();
    for (unit, size) in UNITS {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    match d.subsec_millis() {
        0 => out,
        ms => out + &format!("{ms}ms"),
    }
}

/// A wait bound: a duration, or `forever`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Wait at most this long (zero: do not wait).
    For(Duration),
    /// Wait until the condition holds.
    Forever,
}

impl Wait {
    /// Parse `forever` or a duration.
    pub fn parse(text: &str) -> Result<Wait> {
        if text.trim().eq_ignore_ascii_case("forever") {
            Ok(Wait::Forever)
        } else {
            parse_duration(text).map(Wait::For)
        }
    }

    /// The wait as a duration, `None` for forever.
    pub fn as_duration(self) -> Option<Duration> {
        match self {
            Wait::For(d) => Some(d),
            Wait::Forever => None,
        }
    }
}

/// Parse a duration: `0`, `500ms`, `30s`, `5m`, `2h`, `1d`, or a sum like `1m30s`.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let bad = |why: &str| Error::BadDuration {
        text: text.to_string(),
        why: why.to_string(),
    };
    let s = text.trim();
    if s.is_empty() {
        return Err(bad("it is empty"));
    }
    if s.bytes().all(|b| b == b'0') {
        return Ok(Duration::ZERO);
    }
    let mut total_ms: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad("expected a number"));
        }
        if digits > 12 {
            return Err(bad("the number is too large"));
        }
        // At most 12 ASCII digits: always a number.
        let n: u128 = rest[..digits].parse().unwrap_or_default();
        rest = rest[digits..].trim_start();
        let unit_len = rest.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
        let unit = rest[..unit_len].to_ascii_lowercase();
        rest = &rest[unit_len..];
        let scale: u128 = match unit.as_str() {
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1,
            "s" | "sec" | "secs" | "second" | "seconds" => 1000,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
            "d" | "day" | "days" => 86_400_000,
            "" => return Err(bad("a unit is missing (ms, s, m, h or d)")),
            _ => {
                return Err(bad(
                    "unknown unit (use ms, s, m, h or d, or seconds, minutes, hours, days)",
                ));
            }
        };
        total_ms += n * scale;
    }
    let ms = u64::try_from(total_ms).map_err(|_| bad("the duration is too long"))?;
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        for (text, ms) in [
            ("0", 0),
            ("500ms", 500),
            ("30s", 30_000),
            ("5m", 300_000),
            ("2h", 7_200_000),
            ("1m30s", 90_000),
            ("5 minutes", 300_000),
            ("1 hour 30 min", 5_400_000),
            (" 2 Secs ", 2000),
        ] {
            let want = Duration::from_millis(ms);
            assert_eq!(parse_duration(text).unwrap(), want, "{text}");
        }
        assert_eq!(Wait::parse("forever").unwrap(), Wait::Forever);
        let (huge, unknown) = ("99999999999999s", "5 fortnights");
        for bad in ["", "5", "5x", "m", "-1s", "1.5s", huge, unknown] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn durations_format_back() {
        for text in ["500ms", "30s", "5m", "2h", "1m30s"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
        // Long odd ones too.
        for ms in [1_000_000_000_001u64, u64::MAX, 86_400_001] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d, "{ms}");
        }
    }

    #[test]
    fn timestamps_with_and_without_offset() {
        let ts = parse_timestamp("2026-01-28T01:00:00+01:00").unwrap();
        assert_eq!(format_timestamp(&ts), "2026-01-28T01:00:00+01:00");
        let naive = parse_timestamp("2026-01-28T01:00:00").unwrap();
        assert_eq!(naive.format("%H:%M:%S").to_string(), "01:00:00");
        assert!(parse_timestamp("2026-01-28 01:00:00.250").is_some());
        for bad in ["", "yesterday", "2026-13-01T00:00:00", "\u{0}\u{1}"] {
            assert!(parse_timestamp(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn any_mtime_converts_without_panicking() {
        use std::time::{SystemTime, UNIX_EPOCH};
        let far = [u64::MAX / 2, 1 << 40, 253_402_300_800, 0];
        for secs in far {
            let d = Duration::from_secs(secs);
            let (ahead, behind) = (UNIX_EPOCH.checked_add(d), UNIX_EPOCH.checked_sub(d));
            for t in ahead.into_iter().chain(behind) {
                let ts = from_system_time(t);
                assert!(!format_timestamp(&ts).is_empty());
            }
        }
        let now = SystemTime::now();
        assert!(age(&from_system_time(now), &Local::now().fixed_offset()).as_secs() < 5);
    }

    #[test]
    fn ages_read_at_a_glance() {
        for (secs, want) in [(12, "12s"), (200, "3m"), (7300, "2h"), (200_000, "2d")] {
            assert_eq!(format_age(Duration::from_secs(secs)), want);
        }
    }
}
