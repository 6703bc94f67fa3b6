//! Reading the history back: whole (`coord log`), filtered, or followed as it grows
//! (`coord watch`). Reading never writes, except [`trim`] (`coord prune`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Event, bounds};
use crate::clock::{self, Timestamp};
use crate::error::{IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::pattern::Pattern;

/// Which events to show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only events about these files (relative to the root); a folder (`src/`) matches what
    /// lies below it. Empty (and no `patterns`): every event.
    pub files: Vec<String>,
    /// Only events about files these claims (folders, patterns) match, and about claims that
    /// overlap them (with `files`: either).
    pub patterns: Vec<Pattern>,
    /// Only events of this agent.
    pub agent: Option<String>,
    /// Only events at or after this time.
    pub since: Option<Timestamp>,
}

impl Filter {
    /// Whether `e` passes.
    pub fn keeps(&self, e: &Event) -> bool {
        let other_agent = |a: &String| !e.agent.eq_ignore_ascii_case(a);
        let older = |since| e.time().is_none_or(|t| t < since);
        if self.agent.as_ref().is_some_and(other_agent) || self.since.is_some_and(older) {
            return false;
        }
        if self.files.is_empty() && self.patterns.is_empty() {
            return true;
        }
        let about_file = e.file.as_deref().is_some_and(|file| {
            self.patterns.iter().any(|p| p.matches(file))
                || self.files.iter().any(|f| {
                    let dir = f.trim_end_matches('/');
                    file == dir || file.starts_with(&format!("{dir}/"))
                })
        });
        // A claim's event: its pattern against the claims asked about.
        about_file
            || (e.pattern.as_deref().and_then(|p| Pattern::parse(p).ok()))
                .is_some_and(|q| self.patterns.iter().any(|p| p.overlaps(&q)))
    }
}

/// A `--since` value: a duration back from now (`30m`), or a time (RFC 3339).
pub fn since(text: &str) -> Result<Timestamp> {
    if let Some(t) = clock::parse_timestamp(text) {
        return Ok(t);
    }
    let d = clock::parse_duration(text)?;
    Ok(clock::back_from(&clock::now(), d))
}

/// The events in `bytes`, one JSON object a line. A line that is not an event (torn by a
/// writer killed mid-append, or edited by hand) is skipped; a torn line that a whole one was
/// glued to is read from where the whole one starts.
fn parse_lines(bytes: &[u8]) -> Vec<Event> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(parse_line)
        .collect()
}

fn parse_line(line: &[u8]) -> Option<Event> {
    if let Ok(e) = serde_json::from_slice::<Event>(line) {
        return Some(e);
    }
    let start = line.windows(6).rposition(|w| w == b"{\"at\":")?;
    serde_json::from_slice::<Event>(&line[start..]).ok()
}

/// Both generations (the previous one first), the most read of each, and the oldest time kept.
fn generations(root: &Path) -> ([PathBuf; 2], u64, Timestamp) {
    let (max_size, max_age) = bounds(root);
    let shared = crate::worktree::shared_root(root);
    let oldest = clock::back_from(&clock::now(), max_age);
    // A generation is rotated at half the bound; one written by hand may be larger.
    let cap = max_size.max(1 << 20).saturating_mul(2);
    let paths = [
        layout::history_rotated(&shared),
        layout::history_log(&shared),
    ];
    (paths, cap, oldest)
}

/// The events of one generation: its newest `cap` bytes (a line cut in front is left out).
fn read_file(path: &Path, cap: u64) -> Vec<Event> {
    let Ok((bytes, cut)) = fsutil::read_tail(path, cap) else {
        return Vec::new();
    };
    let whole = bytes.iter().position(|b| *b == b'\n');
    parse_lines(&bytes[whole.filter(|_| cut).map_or(0, |at| at + 1)..])
}

/// The events kept that pass `filter`, oldest first (both generations, within the age bound).
pub fn read(root: &Path, filter: &Filter) -> Vec<Event> {
    let (paths, cap, oldest) = generations(root);
    let kept = |e: &Event| e.time().is_some_and(|t| t >= oldest) && filter.keeps(e);
    let events = paths.iter().flat_map(|p| read_file(p, cap));
    let mut events: Vec<Event> = events.filter(kept).collect();
    // Stable: events of one instant stay in the order they were written.
    events.sort_by_cached_key(Event::time);
    events
}

/// Drop events older than the age bound from disk: the previous generation is removed once
/// all of it is that old, and the log is rewritten without them (under its kernel lock).
/// Returns how many events were dropped.
pub fn trim(root: &Path, dry_run: bool) -> Result<usize> {
    let ([rotated, log], cap, oldest) = generations(root);
    let old = |e: &Event| e.time().is_none_or(|t| t < oldest);
    let mut dropped = 0;
    let older = read_file(&rotated, cap);
    if !older.is_empty() && older.iter().all(old) {
        dropped += older.len();
        if !dry_run {
            fsutil::remove(&rotated)?;
        }
    }
    let Ok(held) = fsutil::open_regular_nofollow(&log) else {
        return Ok(dropped);
    };
    // Under the log's kernel lock no line is appended meanwhile; a writer waiting for it
    // finds the log replaced and appends to the new one.
    held.lock().at("lock", &log)?;
    let (gone, kept): (Vec<Event>, Vec<Event>) = read_file(&log, cap).into_iter().partition(old);
    if !gone.is_empty() {
        dropped += gone.len();
        if !dry_run {
            let lines = kept.iter().filter_map(|e| serde_json::to_vec(e).ok());
            let bytes: Vec<u8> = lines.flat_map(|l| l.into_iter().chain([b'\n'])).collect();
            fsutil::replace(&log, &bytes)?;
        }
    }
    Ok(dropped)
}

/// Where an event lies in the history: the log file it was read from (device, inode: a
/// rotation renames the file, so the pair follows it) and the offset just past its line. Shown
/// as `DEV-INODE-OFFSET` (the id of a `coord ui` event, handed back on reconnection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The log file (device, inode).
    pub file: (u64, u64),
    /// The offset just past the event's line.
    pub offset: u64,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}", self.file.0, self.file.1, self.offset)
    }
}

impl std::str::FromStr for Position {
    type Err = ();

    fn from_str(text: &str) -> std::result::Result<Position, ()> {
        let parts = text.split('-').map(|p| p.parse::<u64>().map_err(|_| ()));
        match parts.collect::<std::result::Result<Vec<_>, ()>>()?[..] {
            [dev, inode, offset] => Ok(Position {
                file: (dev, inode),
                offset,
            }),
            _ => Err(()),
        }
    }
}

/// Following the log as it grows, across rotations: each event appended after the start, once.
#[derive(Debug)]
pub struct Tail {
    log: PathBuf,
    rotated: PathBuf,
    at: Option<Position>,
    partial: Vec<u8>,
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

impl Tail {
    /// Follow from the end of the log as it is now.
    pub fn from_end(root: &Path) -> Tail {
        let shared = crate::worktree::shared_root(root);
        let log = layout::history_log(&shared);
        let at = std::fs::symlink_metadata(&log).ok().map(|m| Position {
            file: (m.dev(), m.ino()),
            offset: m.len(),
        });
        Tail {
            log,
            rotated: layout::history_rotated(&shared),
            at,
            partial: Vec::new(),
        }
    }

    /// Follow from the oldest event kept: the previous generation first, then the log.
    pub fn from_oldest(root: &Path) -> Tail {
        let mut t = Tail::from_end(root);
        let oldest = file_id(&t.rotated).or(t.at.map(|at| at.file));
        t.at = oldest.map(|file| Position { file, offset: 0 });
        t
    }

    /// Follow from just after `pos`. When its file is no longer kept (rotated away twice, or
    /// rewritten by `coord prune`), from the oldest event kept: events may come twice, none
    /// is missed.
    pub fn from_position(root: &Path, pos: Position) -> Tail {
        let mut t = Tail::from_oldest(root);
        if [file_id(&t.log), file_id(&t.rotated)].contains(&Some(pos.file)) {
            t.at = Some(pos);
        }
        t
    }

    /// The events appended since the last call, each with its [`Position`].
    pub fn poll_positioned(&mut self) -> Vec<(Position, Event)> {
        let mut out = Vec::new();
        let now = file_id(&self.log);
        if let Some(at) = self.at
            && now != Some(at.file)
        {
            // Rotated: finish the generation we were reading, then start on the new log.
            if file_id(&self.rotated) == Some(at.file) {
                out.extend(self.read_from(&self.rotated.clone(), at).0);
            }
            self.partial.clear();
            self.at = None;
        }
        let Some(file) = now else {
            return out;
        };
        let offset = self.at.map_or(0, |at| at.offset);
        let (events, end) = self.read_from(&self.log.clone(), Position { file, offset });
        out.extend(events);
        self.at = Some(end);
        out
    }

    fn read_from(&mut self, path: &Path, at: Position) -> (Vec<(Position, Event)>, Position) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = fsutil::open_regular_nofollow(path) else {
            return (Vec::new(), at);
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let mut end = at;
        if len < at.offset {
            // Rewritten shorter (trimmed): start over.
            self.partial.clear();
            end.offset = 0;
        }
        if f.seek(SeekFrom::Start(end.offset)).is_err() {
            return (Vec::new(), end);
        }
        let mut buf = Vec::new();
        end.offset += f.take(64 * 1024 * 1024).read_to_end(&mut buf).unwrap_or(0) as u64;
        // Whole lines become events, each with the offset past it; the unfinished last one
        // waits for its end.
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend(buf);
        let mut offset = end.offset - bytes.len() as u64;
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        self.partial = bytes.split_off(whole);
        let mut out = Vec::new();
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            offset += line.len() as u64;
            if let Some(e) = parse_line(line.strip_suffix(b"\n").unwrap_or(line)) {
                out.push((Position { offset, ..at }, e));
            }
        }
        (out, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_line_is_skipped_and_a_glued_one_read() {
        let whole =
            r#"{"at":"2026-01-28T01:00:00.000+01:00","event":"lock_taken","agent":"a","file":"x"}"#;
        let text =
            format!("{whole}\n{{\"at\":\"2026-01-28T01:00:00.0\n{{\"at\":\"2026-01{whole}\n");
        let got = parse_lines(text.as_bytes());
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|e| e.event == "lock_taken"));
    }

    /// #45: a folder given to `coord log` keeps what lies below it; a pattern, the events of the
    /// files it matches and of the claims it overlaps.
    #[test]
    fn folders_and_patterns_match_files_and_overlapping_claims() {
        use super::super::{Event, Kind};
        let f = |files: &[&str], patterns: &[&str]| Filter {
            files: files.iter().map(|s| s.to_string()).collect(),
            patterns: (patterns.iter().map(|p| Pattern::parse(p).unwrap())).collect(),
            ..Default::default()
        };
        let e = Event::new(Kind::LockTaken, "a").file("src/x.rs");
        for (folder, keeps) in [
            ("src/", true),
            ("src", true),
            ("src/x.rs", true),
            ("sr", false),
        ] {
            assert_eq!(f(&[folder], &[]).keeps(&e), keeps, "{folder}");
        }
        let lock = Event::new(Kind::LockTaken, "a").file("src/auth/x.rs");
        let claim = Event::new(Kind::ClaimReleased, "a").pattern("src/auth/**");
        for (pattern, e, keeps) in [
            ("src/**", &lock, true),
            ("src/*/x.rs", &lock, true),
            ("src/*.rs", &lock, false),
            ("src/**", &claim, true),
            ("src/auth/*.rs", &claim, true),
            ("docs/", &claim, false),
        ] {
            assert_eq!(f(&[], &[pattern]).keeps(e), keeps, "{pattern}");
        }
    }
}
