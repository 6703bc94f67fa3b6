//! `lock.txt`: the writer's id on the first line (all the seed asks); coord adds `since:`,
//! `pid:` and `host:` lines so a crashed writer is recognised at once. Stale after 60 seconds
//! ([`super::LOCK_STALE_AFTER`]), or at once when its process of this host is gone.

use serde::Serialize;

use super::{LOCK_STALE_AFTER, clip};
use crate::clock::{self, Timestamp};
use crate::host;

/// What `lock.txt` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockInfo {
    /// The writer's id (the first line).
    pub holder: String,
    /// When it was taken: the `since:` line, else the file's mtime.
    pub since: Option<String>,
    /// The writing process, when coord wrote it.
    pub pid: Option<u32>,
    /// The host of that process.
    pub host: Option<String>,
    /// Seconds since it was taken.
    pub age_s: Option<u64>,
    /// Whether it is stale (older than 60 s, or its process is gone).
    pub stale: bool,
    /// The writer whose interrupted write may still need completing: written by a `say` that
    /// took a stale `lock.txt` over, and dropped once it knows nothing is left to complete, so
    /// a `say` killed in between does not hide whose message the next one may complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl LockInfo {
    /// Read `lock.txt`'s text, judging staleness at `now` (`mtime` when there is no `since:`).
    pub fn parse(text: &str, mtime: Option<Timestamp>, now: &Timestamp) -> LockInfo {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or("");
        let holder = first
            .strip_prefix("Agent:")
            .or_else(|| first.strip_prefix("agent:"))
            .unwrap_or(first)
            .trim();
        let holder = if holder.is_empty() {
            "(unknown)".to_string()
        } else {
            clip(holder)
        };
        let rec = crate::record::Record::parse(text);
        let since_ts = rec.get("since").and_then(clock::parse_timestamp).or(mtime);
        let pid = rec.get("pid").and_then(|p| p.parse().ok());
        let host_name = rec.get_nonempty("host").map(str::to_string);
        let age = since_ts.as_ref().map(|s| clock::age(now, s));
        let gone = match (pid, &host_name) {
            (Some(pid), Some(h)) => host::recorded_process_gone(pid, h),
            _ => false,
        };
        LockInfo {
            holder,
            since: since_ts.as_ref().map(clock::format_timestamp),
            pid,
            host: host_name,
            age_s: age.map(|a| a.as_secs()),
            stale: gone || age.is_some_and(|a| a > LOCK_STALE_AFTER),
            interrupted: rec.get_nonempty("interrupted").map(clip),
        }
    }

    /// The text coord writes: the id first (as the seed asks), then who and since when, and
    /// the writer whose interrupted write may need completing (see [`LockInfo::interrupted`]).
    pub fn render(holder: &str, now: &Timestamp, interrupted: Option<&str>) -> String {
        let mut text = format!(
            "{holder}\nsince: {}\npid: {}\nhost: {}\n",
            clock::format_timestamp(now),
            host::pid(),
            host::hostname()
        );
        if let Some(w) = interrupted {
            text.push_str(&format!("interrupted: {w}\n"));
        }
        text
    }
}
