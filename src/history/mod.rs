//! The workspace's history: one append-only log of every transition (contract §11).
//!
//! Invariants: a line is whole or absent (one `write(2)` under the log's kernel lock, at most
//! [`LINE_CAP`] bytes); recording never fails the command it records (it says so once on
//! stderr); the log is bounded (rotated at half of `history_max_size`, see docs/protocol.md).

pub mod ending;
mod needs;
mod read;

pub use needs::{NeedsUser, set_needs_user, waiting};
pub use read::{Filter, Position, Tail, read, since, trim};

use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock;
use crate::fsutil;
use crate::layout;
use crate::record::Record;

/// The largest line written: below the 4 KiB a single `write(2)` of a pipe keeps whole, and a
/// page, so that even a writer that does not lock cannot split it on a local disk.
pub const LINE_CAP: usize = 4000;

/// The default bounds: size on disk (both generations), age after which events are dropped.
const DEFAULT_MAX_SIZE: u64 = 8 * 1024 * 1024;
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 86_400);

crate::record::names! {
    /// What happened; its `event` field is the variant's name in snake case.
    Kind {
        LockTaken = "lock_taken": "A lock was taken.",
        LockReleased = "lock_released": "A lock was released (by its holder, or a STALE one with \
            `--force`).",
        LockTakenOver = "lock_taken_over": "A STALE lock was taken over.",
        LockWaiting = "lock_waiting": "An agent started waiting for a lock another holds.",
        LockRefused = "lock_refused": "A lock was refused (held by another, a wait that timed out, \
            a deadlock).",
        ClaimTaken = "claim_taken": "A claim on a folder or pattern was taken.",
        ClaimReleased = "claim_released": "A claim was released.",
        ClaimLost = "claim_lost": "A claim published on the remote was found taken over there (its \
            lease lapsed): given back.",
        LockLost = "lock_lost": "A lock shared on the remote (`--share`) was found taken over \
            there: given back here.",
        EditDenied = "edit_denied": "A client's hook denied an edit (the file is held by another \
            agent).",
        EditMade = "edit_made": "A client's hook saw an edit made.",
        ShellEdit = "shell_edit": "A shell command changed a file another agent holds (seen by the \
            post-tool hook).",
        MessageSent = "message_sent": "A message was sent.",
        DialogueTurn = "dialogue_turn": "A dialogue turn was said.",
        ReviewStep = "review_step": "A review step was finished.",
        AgentArrived = "agent_arrived": "An agent clocked in.",
        AgentLeft = "agent_left": "An agent clocked out.",
        AgentCrashed = "agent_crashed": "An earlier session of an agent was found crashed.",
        NeedsUser = "needs_user": "An agent's client waits for its user.",
        UserAnswered = "user_answered": "An agent's client no longer waits for its user.",
    }
}

/// One event, as one line of the log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When, RFC 3339 with milliseconds and the local offset.
    pub at: String,
    /// What (`lock_taken`, `lock_released`, ...: see [`Kind`]).
    pub event: String,
    /// Who.
    pub agent: String,
    /// The file, relative to the root with `/` separators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The pattern of a claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The agent client (`claude`, `codex`, `gemini`, `copilot`) when through its hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The client's or `coord session`'s session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The work tree's top level, when it is not the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// Whatever else the event says (`from`, `why`, `hash_before`, `what`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Event {
    /// An event of `kind` by `agent`, now.
    pub fn new(kind: Kind, agent: &str) -> Event {
        Event {
            at: now_ms(),
            event: kind.as_str().to_string(),
            agent: agent.to_string(),
            ..Event::default()
        }
    }

    /// About `file` (relative to the root).
    pub fn file(mut self, file: &str) -> Event {
        self.file = Some(file.to_string());
        self
    }

    /// About the claim on `pattern`.
    pub fn pattern(mut self, pattern: &str) -> Event {
        self.pattern = Some(pattern.to_string());
        self
    }

    /// With `key: value` (a `None` value is left out).
    pub fn with(self, key: &str, value: impl Into<Value>) -> Event {
        match value.into() {
            Value::Null => self,
            value => self.with_null(key, value),
        }
    }

    /// With `key: value`, a `None` value written as `null` (a field readers expect always).
    pub fn with_null(mut self, key: &str, value: impl Into<Value>) -> Event {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// The time as a timestamp.
    pub fn time(&self) -> Option<clock::Timestamp> {
        clock::parse_timestamp(&self.at)
    }

    /// An extra string field.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.extra.get(key).and_then(Value::as_str)
    }

    fn line(&self) -> Option<Vec<u8>> {
        let mut text = serde_json::to_vec(self).ok()?;
        if text.len() >= LINE_CAP {
            // Too long: cut every long text, then leave the extras out if still too long.
            let mut short = self.clone();
            for value in short.extra.values_mut() {
                if let Value::String(s) = value
                    && s.len() > 200
                {
                    s.truncate(s.floor_char_boundary(200));
                    s.push('…');
                }
            }
            text = serde_json::to_vec(&short).ok()?;
            if text.len() >= LINE_CAP {
                short.extra.clear();
                short.file = short.file.map(|f| f.chars().take(1000).collect());
                short.pattern = short.pattern.map(|f| f.chars().take(1000).collect());
                text = serde_json::to_vec(&short).ok()?;
            }
        }
        (text.len() < LINE_CAP).then(|| {
            text.push(b'\n');
            text
        })
    }
}

fn now_ms() -> String {
    clock::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
}

static CONTEXT: OnceLock<(Option<String>, Option<String>)> = OnceLock::new();

static WARNING: Mutex<Option<String>> = Mutex::new(None);

/// Name the client and session every event of this process comes from (a hook call).
pub fn set_context(client: &str, session: Option<&str>) {
    let _ = CONTEXT.set((Some(client.to_string()), session.map(str::to_string)));
}

/// The warning to print, once, when the history could not be written.
pub fn take_warning() -> Option<String> {
    WARNING.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The bounds set for the workspace at `root` (bytes on disk of both generations, the age
/// after which events are dropped): the environment, else `.coord/config`, else the defaults.
/// A value that cannot be read is ignored (the default holds).
fn bounds(root: &Path) -> (u64, Duration) {
    let path = layout::config(&crate::worktree::shared_root(root));
    let config = fsutil::read_text_capped(&path, 64 * 1024).ok();
    let config = config.map(|(t, _)| Record::parse(&t));
    let setting = |env: &str, key: &str| {
        std::env::var(env)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| config.as_ref()?.get_nonempty(key).map(str::to_string))
    };
    let max_size = setting("COORD_HISTORY_MAX_SIZE", "history_max_size")
        .and_then(|v| parse_size(&v))
        .filter(|n| *n >= 1024)
        .unwrap_or(DEFAULT_MAX_SIZE);
    let max_age = setting("COORD_HISTORY_MAX_AGE", "history_max_age")
        .and_then(|v| clock::parse_duration(&v).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_MAX_AGE);
    (max_size, max_age)
}

/// `4096`, `64k`, `8M`, `1G` (powers of 1024).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits.parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1024,
        "m" | "mb" | "mib" => 1024 * 1024,
        "g" | "gb" | "gib" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Append `event` to the history at `root`, naming the process's client and session unless it
/// names its own. Best effort: a failure is kept for [`take_warning`], never returned.
pub fn record(root: &Path, mut event: Event) {
    // The agent acted, so it no longer waits for its user: not by the waits themselves, a crash
    // found by another session, nor a release (a turn's end releases, then waits).
    if !matches!(
        event.event.as_str(),
        "needs_user" | "user_answered" | "agent_crashed" | "lock_released" | "claim_released"
    ) {
        let _ = needs::forget(root, &event.agent);
    }
    if std::env::var("COORD_HISTORY").is_ok_and(|v| v.eq_ignore_ascii_case("off")) {
        return;
    }
    let (client, session) = CONTEXT.get_or_init(|| {
        let session = std::env::var("COORD_SESSION").ok();
        (None, session.filter(|s| !s.is_empty()))
    });
    event.client = event.client.or_else(|| client.clone());
    event.session = event.session.or_else(|| session.clone());
    // In a linked worktree sharing the main tree's state, the event names its tree: `file` is
    // relative to that tree's top level.
    if event.worktree.is_none() && crate::worktree::shared_root(root) != root {
        event.worktree = Some(root.to_string_lossy().into_owned());
    }
    if let Some(line) = event.line()
        && let Err(e) = append(root, &line)
    {
        let mut w = WARNING.lock().unwrap_or_else(|e| e.into_inner());
        w.get_or_insert_with(|| {
            format!("the history was not written (the command itself went through): {e}")
        });
    }
}

fn append(root: &Path, line: &[u8]) -> crate::Result<()> {
    let shared = crate::worktree::shared_root(root);
    let log = layout::history_log(&shared);
    let rotate_at = bounds(root).0 / 2;
    let rotated = layout::history_rotated(&shared);
    match fsutil::append_line_rotating(&log, line, rotate_at, &rotated) {
        Err(crate::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            fsutil::ensure_dir(&layout::history_dir(&shared))?;
            fsutil::append_line_rotating(&log, line, rotate_at, &rotated)
        }
        other => other,
    }
}

/// A 64-bit FNV-1a hash of a file's bytes, as 16 hex digits; `None` for a file that is missing,
/// not regular, or over 8 MiB (where a hash is not cheap).
pub fn file_hash(path: &Path) -> Option<String> {
    let bytes = fsutil::read_capped(path, 8 * 1024 * 1024).ok()?;
    Some(format!("{:016x}", crate::host::fnv1a64(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_named_in_snake_case() {
        for (kind, name) in [
            (Kind::LockTakenOver, "lock_taken_over"),
            (Kind::EditDenied, "edit_denied"),
            (Kind::NeedsUser, "needs_user"),
            (Kind::AgentCrashed, "agent_crashed"),
        ] {
            assert_eq!(Event::new(kind, "a").event, name);
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64k"), Some(65536));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("3 parsecs"), None);
    }

    #[test]
    fn long_lines_are_cut_below_the_cap() {
        let e = Event::new(Kind::MessageSent, "a").with("what", "x".repeat(10_000));
        let line = e.line().unwrap();
        assert!(line.len() <= LINE_CAP);
        assert!(line.ends_with(b"\n"));
        let back: Event = serde_json::from_slice(&line).unwrap();
        assert_eq!(back.event, "message_sent");
    }
}
