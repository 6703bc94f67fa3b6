//! Presence files: `<root>/.<agent>_presence`, one per agent, in the seed's `key: value` form.
//! Writers hold the workspace mutex, so two coord processes of one agent never lose an update.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil::{self, RECORD_CAP};
use crate::layout;
use crate::record::Record;
use crate::workspace::AgentId;
use crate::worktree::shared_root;

/// A heartbeat older than this makes an agent `INACTIVE`.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(120);

/// The seed's keys, in the seed's order.
pub const SEED_KEYS: [&str; 7] = [
    "Agent",
    "status",
    "started",
    "heartbeat",
    "working_on",
    "current_file",
    "lock_status",
];

/// The extra key listing the files locked through coord.
const LOCKS_KEY: &str = "locks";

crate::record::names! {
    /// What an agent's presence says about it now.
    AgentState {
        Active = "ACTIVE": "Heartbeat at most two minutes old.",
        Inactive = "INACTIVE": "Heartbeat older than that (or missing).",
        Finished = "FINISHED": "The agent said it is done.",
    }
}

crate::record::names! {
    /// `lock_status` in a presence file.
    LockStatus {
        Free = "FREE": "Holds no lock.",
        Locked = "LOCKED": "Holds at least one lock.",
        Waiting = "WAITING": "Waits for a lock.",
    }
}

/// One agent's presence file, as read.
#[derive(Debug, Clone)]
pub struct Presence {
    /// The agent id (from the file name).
    pub id: String,
    /// Everything in the file.
    pub record: Record,
    /// The file's modification time, the fallback for an unreadable heartbeat.
    pub mtime: Option<Timestamp>,
}

impl Presence {
    /// Parse presence text for agent `id`.
    pub fn parse(id: &str, text: &str, mtime: Option<Timestamp>) -> Presence {
        Presence {
            id: id.to_string(),
            record: Record::parse(text),
            mtime,
        }
    }

    /// The display name (`Agent:`), or the id when missing.
    pub fn name(&self) -> &str {
        self.record.get_nonempty("Agent").unwrap_or(&self.id)
    }

    /// A seed field, when present and meaningful (`-` means none).
    pub fn field(&self, key: &str) -> Option<&str> {
        self.record.get_nonempty(key).filter(|v| *v != "-")
    }

    /// The heartbeat: the `heartbeat` line when readable, else the file's mtime.
    pub fn heartbeat(&self) -> Option<Timestamp> {
        self.field("heartbeat")
            .and_then(clock::parse_timestamp)
            .or(self.mtime)
    }

    fn finished(&self) -> bool {
        self.field("status").and_then(AgentState::parse) == Some(AgentState::Finished)
    }

    /// ACTIVE, INACTIVE or FINISHED, as of `now`.
    pub fn state(&self, now: &Timestamp) -> AgentState {
        // A heartbeat further in the future than the timeout is not believed either: clocks
        // that far apart (or a hand-edited date) must not keep an agent ACTIVE forever.
        let fresh = |hb| clock::age(now, &hb).max(clock::age(&hb, now)) <= HEARTBEAT_TIMEOUT;
        if self.finished() {
            AgentState::Finished
        } else if self.heartbeat().is_some_and(fresh) {
            AgentState::Active
        } else {
            AgentState::Inactive
        }
    }

    /// The files this agent locked through coord (relative to the root).
    pub fn locks(&self) -> Vec<String> {
        self.record
            .get(LOCKS_KEY)
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default()
    }
}

/// A state file that could not be read, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Unreadable {
    /// The file, relative to the root.
    pub path: String,
    /// Why it could not be read.
    pub why: String,
}

/// Read agent `id`'s presence. `Ok(None)` when there is none.
pub fn read(root: &Path, id: &str) -> std::result::Result<Option<Presence>, Unreadable> {
    let found = read_agent_file(&layout::presence(&shared_root(root), id))?;
    Ok(found.map(|(text, mtime)| Presence::parse(id, &text, mtime.map(clock::from_system_time))))
}

/// The text and mtime of one agent's file in the shared root (`Ok(None)`: there is none).
pub(crate) fn read_agent_file(
    path: &Path,
) -> std::result::Result<Option<(String, Option<std::time::SystemTime>)>, Unreadable> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    fsutil::if_found(fsutil::read_text_capped(path, RECORD_CAP)).map_err(|e| Unreadable {
        path: name.into_owned(),
        why: e.to_string(),
    })
}

/// Every presence in the root, sorted by agent id, and those that could not be read.
pub fn scan(root: &Path) -> (Vec<Presence>, Vec<Unreadable>) {
    let (mut found, bad) = scan_root(root, layout::presence_agent, |id| read(root, id));
    found.sort_by(|a, b| a.id.cmp(&b.id));
    (found, bad)
}

/// The agents' files in the shared root whose names `agent_of` reads an agent id from, each
/// read by `read` (`Ok(None)`: gone meanwhile), and those that could not be read.
pub(crate) fn scan_root<T>(
    root: &Path,
    agent_of: fn(&str) -> Option<&str>,
    mut read: impl FnMut(&str) -> std::result::Result<Option<T>, Unreadable>,
) -> (Vec<T>, Vec<Unreadable>) {
    let (mut found, mut bad) = (Vec::new(), Vec::new());
    let entries = fsutil::read_dir(shared_root(root)).into_iter().flatten();
    for entry in entries.flatten() {
        let name = entry.file_name();
        match name.to_str().and_then(agent_of).map(&mut read) {
            Some(Ok(Some(t))) => found.push(t),
            Some(Err(u)) => bad.push(u),
            _ => {}
        }
    }
    (found, bad)
}

/// Agents' states looked up once each (for classifying many locks).
#[derive(Debug, Default)]
pub struct StateCache {
    states: HashMap<String, Option<AgentState>>,
}

impl StateCache {
    /// A cache pre-filled from presences already read.
    pub fn from_presences(presences: &[Presence], now: &Timestamp) -> StateCache {
        let states = presences.iter().map(|p| (p.id.clone(), Some(p.state(now))));
        StateCache {
            states: states.collect(),
        }
    }

    /// Agent `id`'s state, reading its presence on first use (`None`: no presence at all).
    pub fn state(&mut self, root: &Path, id: &str, now: &Timestamp) -> Option<AgentState> {
        let judge = || match read(root, id) {
            Ok(found) => found.map(|p| p.state(now)),
            // A presence that exists but cannot be read (another user's file, mode 0600; a FIFO;
            // a folder) is still a presence: it is judged by its mtime, as one whose heartbeat
            // cannot be parsed is. Treating it as absent would let anyone take over a live
            // holder's lock.
            Err(_) => {
                let mtime = fsutil::mtime(&layout::presence(&shared_root(root), id))
                    .map(clock::from_system_time);
                Some(Presence::parse(id, "", mtime).state(now))
            }
        };
        *self.states.entry(id.to_string()).or_insert_with(judge)
    }
}

/// A change to an agent's own presence. `None` fields keep what the file says.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// `status`: ACTIVE or FINISHED.
    pub finished: Option<bool>,
    /// `working_on`.
    pub working_on: Option<String>,
    /// `current_file`.
    pub current_file: Option<String>,
    /// `lock_status`.
    pub lock_status: Option<LockStatus>,
    /// The files locked through coord.
    pub locks: Option<Vec<String>>,
    /// A release: on a full disk, where there is no room for a new copy, the presence is
    /// rewritten in place (releasing needs no space, and must not leave it saying LOCKED).
    pub releasing: bool,
    /// Keys of coord's own to set besides the seed's (the session's `client` and `prompt`).
    pub extras: Vec<(&'static str, String)>,
}

/// Create or refresh `agent`'s presence (heartbeat now); the caller holds the mutex.
pub fn write(root: &Path, agent: &AgentId, update: &Update) -> Result<Presence> {
    let old = read(root, agent.id()).ok().flatten();
    write_over(root, agent, old.as_ref(), update)
}

/// [`write()`] for a caller that has just read the presence (`old`) under the mutex it holds.
pub fn write_over(
    root: &Path,
    agent: &AgentId,
    old: Option<&Presence>,
    update: &Update,
) -> Result<Presence> {
    let now = clock::now_string();
    let old_field = |key: &str| Some(old?.record.get_nonempty(key)?.to_string());
    let finished = (update.finished).unwrap_or_else(|| old.is_some_and(Presence::finished));
    let started = old_field("started")
        .filter(|s| clock::parse_timestamp(s).is_some())
        .unwrap_or_else(|| now.clone());
    let pick = |new: Option<String>, key: &str, none: &str| {
        new.or_else(|| old_field(key))
            .unwrap_or_else(|| none.to_string())
    };
    // Releasing every lock or finishing ends work on a file: no `current_file` is left over.
    let done_with_file =
        update.finished == Some(true) || matches!(update.lock_status, Some(LockStatus::Free));
    let current_file = match (&update.current_file, done_with_file) {
        (None, true) => "-".to_string(),
        (new, _) => pick(new.clone(), "current_file", "-"),
    };

    // A name given in lower case does not replace a display name of the same id (`Claude`).
    let kept =
        |shown: &String| agent.name() == agent.id() && shown.eq_ignore_ascii_case(agent.id());
    let name = old_field("Agent").filter(kept);
    let name = name.unwrap_or_else(|| agent.name().to_string());
    let mut rec = Record::new();
    rec.set("Agent", name);
    rec.set("status", if finished { "FINISHED" } else { "ACTIVE" });
    rec.set("started", started);
    rec.set("heartbeat", &now);
    let working_on = pick(update.working_on.clone(), "working_on", "-");
    rec.set("working_on", working_on);
    rec.set("current_file", current_file);
    let lock_status = update.lock_status.map(|s| s.as_str().to_string());
    rec.set("lock_status", pick(lock_status, "lock_status", "FREE"));
    let seed_key = |k: &str| SEED_KEYS.iter().any(|n| n.eq_ignore_ascii_case(k));
    for (k, v) in old.iter().flat_map(|p| p.record.entries()) {
        if !seed_key(k) {
            rec.set(k, v);
        }
    }
    for (k, v) in &update.extras {
        rec.set(k, crate::record::one_line(v));
    }
    // Among the worktrees of one repository: which one this agent acts in.
    if shared_root(root) != root || !crate::worktree::others(root).is_empty() {
        rec.set(crate::worktree::PRESENCE_KEY, root.display().to_string());
    }
    match &update.locks {
        Some(locks) if locks.is_empty() => rec.remove(LOCKS_KEY),
        Some(locks) => rec.set(
            LOCKS_KEY,
            serde_json::to_string(locks).unwrap_or_else(|_| "[]".into()),
        ),
        None => {}
    }
    let path = layout::presence(&shared_root(root), agent.id());
    let bytes = rec.render();
    match fsutil::replace(&path, bytes.as_bytes()) {
        Ok(()) => {}
        Err(e)
            if update.releasing
                && e.is_no_space()
                && fsutil::rewrite_in_place(&path, bytes.as_bytes())? => {}
        Err(e) => return Err(e),
    }
    Ok(Presence {
        id: agent.id().to_string(),
        record: rec,
        // Written just now (no `stat` to ask: a round trip on a network filesystem).
        mtime: clock::parse_timestamp(&now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_follows_the_status_and_the_heartbeat() {
        use AgentState::{Active, Finished, Inactive};
        let seed = "Agent: Claude\nstatus: ACTIVE\nstarted: 2026-01-28T01:00:00\nheartbeat: 2026-01-28T01:05:00\nworking_on: Task_123\ncurrent_file: file.txt\nlock_status: FREE\n";
        assert_eq!(Presence::parse("claude", seed, None).name(), "Claude");
        let t = |s: &str| clock::parse_timestamp(s).unwrap();
        let hb = "heartbeat: 2026-01-28T01:00:00+00:00\n";
        let (soon, future) = (
            "heartbeat: soon\n",
            "heartbeat: 2999-01-01T00:00:00+00:00\n",
        );
        let mtime = Some(t("2026-01-28T01:06:00+00:00"));
        for (text, mtime, now, want) in [
            (seed, None, t("2026-01-28T01:06:00"), Active),
            (seed, None, t("2026-01-28T01:07:01"), Inactive),
            (
                "status: FINISHED\n",
                None,
                t("2026-01-28T01:06:00"),
                Finished,
            ),
            // An unreadable heartbeat falls back to the mtime.
            (soon, mtime, t("2026-01-28T01:06:00+00:00"), Active),
            (soon, None, t("2026-01-28T01:06:00+00:00"), Inactive),
            // Two minutes old is active, one second more is not; the same bound ahead.
            (hb, None, t("2026-01-28T01:02:00+00:00"), Active),
            (hb, None, t("2026-01-28T01:02:01+00:00"), Inactive),
            (hb, None, t("2026-01-28T00:58:00+00:00"), Active),
            (hb, None, t("2026-01-28T00:57:59+00:00"), Inactive),
            // A heartbeat far in the future is not believed.
            (future, None, clock::now(), Inactive),
        ] {
            let p = Presence::parse("claude", text, mtime);
            assert_eq!(p.state(&now), want, "{text} at {now}");
        }
    }
}
