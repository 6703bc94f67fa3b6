//! The records coord keeps under `refs/coord/` on a remote, and how a record read from there
//! is judged sound (see docs/protocol.md, "Remote claims").
//!
//! A claim record is one blob of JSON in the tree of `refs/coord/claims`, under a name that is
//! a hash of who holds what ([`entry_name`]); a clone record is the message of the one commit
//! `refs/coord/clones/<hash of the clone id>` points to. Writing is strict (every field, one
//! line, no control character); reading takes nothing on trust: anything another clone, a
//! person or a hostile party wrote is checked ([`ClaimRecord::check`], [`CloneRecord::check`])
//! and a record that fails is ignored with the reason, never followed (a pattern or path that
//! leaves the repository, a lease of years, a name that is not an agent id).

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::host::fnv1a64;
use crate::pattern::Pattern;

/// The longest lease a record may ask for; a record asking more is ignored (a week).
pub const MAX_LEASE_S: u64 = 7 * 24 * 3600;

/// The most bytes a claim record is read of (a record is a few hundred).
pub const CLAIM_CAP: usize = 8 * 1024;

/// The most bytes a clone record (a commit) is read of.
pub const CLONE_CAP: usize = 256 * 1024;

/// The format of the records written here.
pub const VERSION: u32 = 1;

/// What a claim record holds: a pattern (a claim on a folder or glob) or one path (a file
/// lock shared with `--share`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A folder or a glob (`pattern`).
    Claim,
    /// One file (`path`, taken literally).
    Lock,
}

impl Kind {
    /// Its word in records and messages: `claim` or `lock`.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Claim => "claim",
            Kind::Lock => "lock",
        }
    }
}

/// Who holds a record: an agent of one clone, on one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The agent id.
    pub agent: String,
    /// The host name of its clone's machine.
    pub host: String,
    /// Its clone's id (`coord.cloneId`).
    pub clone: String,
}

impl Holder {
    /// `alice on laptop-a`.
    pub fn describe(&self) -> String {
        format!("{} on {}", self.agent, self.host)
    }
}

/// One claim under `refs/coord/claims`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ClaimWire", into = "ClaimWire")]
pub struct ClaimRecord {
    /// The format (1).
    pub v: u32,
    /// A claim or a shared lock.
    pub kind: Kind,
    /// The pattern, relative to the repository's top level (a claim).
    pub pattern: Option<String>,
    /// The path, relative to the repository's top level (a lock).
    pub path: Option<String>,
    /// Who holds it (`agent`, `host` and `clone` in the record).
    pub holder: Holder,
    /// When the holder took it, on the holder's clock (shown, never used to judge the lease).
    pub since: String,
    /// What the holder works on.
    pub reason: Option<String>,
    /// How long the claim holds after a reader first sees this version of it, in seconds.
    pub lease_s: u64,
    /// Bumped by each renewal: a new version, seen anew.
    pub renewal: u64,
    /// A random token of this claim (the same across renewals).
    pub token: String,
    /// Whose stale claim this one took over, when it did.
    pub taken_from: Option<Holder>,
}

/// A claim record as written: one flat object (serde's `flatten` would read every record
/// through a buffer of its fields; a hook reads a hundred).
#[derive(Clone, Serialize, Deserialize)]
struct ClaimWire {
    v: u32,
    kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    agent: String,
    host: String,
    clone: String,
    since: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    lease_s: u64,
    renewal: u64,
    token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    taken_from: Option<Holder>,
}

impl From<ClaimWire> for ClaimRecord {
    fn from(w: ClaimWire) -> ClaimRecord {
        ClaimRecord {
            v: w.v,
            kind: w.kind,
            pattern: w.pattern,
            path: w.path,
            holder: Holder {
                agent: w.agent,
                host: w.host,
                clone: w.clone,
            },
            since: w.since,
            reason: w.reason,
            lease_s: w.lease_s,
            renewal: w.renewal,
            token: w.token,
            taken_from: w.taken_from,
        }
    }
}

impl From<ClaimRecord> for ClaimWire {
    fn from(r: ClaimRecord) -> ClaimWire {
        ClaimWire {
            v: r.v,
            kind: r.kind,
            pattern: r.pattern,
            path: r.path,
            agent: r.holder.agent,
            host: r.holder.host,
            clone: r.holder.clone,
            since: r.since,
            reason: r.reason,
            lease_s: r.lease_s,
            renewal: r.renewal,
            token: r.token,
            taken_from: r.taken_from,
        }
    }
}

impl ClaimRecord {
    /// The text it holds: its pattern, or its path.
    pub fn text(&self) -> &str {
        self.pattern
            .as_deref()
            .or(self.path.as_deref())
            .unwrap_or_default()
    }

    /// Parse a blob read from the remote and check it; `Err` says why it is ignored.
    ///
    /// # Errors
    ///
    /// Why the record cannot be honoured.
    pub fn read(bytes: &[u8]) -> Result<(ClaimRecord, Pattern), String> {
        let rec: ClaimRecord =
            serde_json::from_slice(bytes).map_err(|e| format!("it is not a claim record ({e})"))?;
        let pattern = rec.check()?;
        Ok((rec, pattern))
    }

    /// Whether the record is sound: the pattern it holds, else why it is not.
    ///
    /// # Errors
    ///
    /// Why the record cannot be honoured.
    pub fn check(&self) -> Result<Pattern, String> {
        if self.v == 0 {
            return Err("its format version is 0".into());
        }
        check_holder(&self.holder)?;
        if let Some(from) = &self.taken_from {
            check_holder(from)?;
        }
        if clock::parse_timestamp(&self.since).is_none() {
            return Err(format!("`since` is not a time: {:?}", short(&self.since)));
        }
        if self.lease_s == 0 || self.lease_s > MAX_LEASE_S {
            return Err(format!(
                "its lease of {}s is not between 1s and a week",
                self.lease_s
            ));
        }
        if let Some(r) = &self.reason {
            check_text("reason", r, 1000)?;
        }
        check_text("token", &self.token, 64)?;
        match (self.kind, &self.pattern, &self.path) {
            (Kind::Claim, Some(p), None) => {
                check_text("pattern", p, 4096)?;
                Pattern::parse(p).map_err(|why| format!("its pattern `{}`: {why}", short(p)))
            }
            (Kind::Lock, None, Some(p)) => {
                check_path(p)?;
                Ok(Pattern::literal(p))
            }
            _ => Err("it must hold a `pattern` (a claim) or a `path` (a lock)".into()),
        }
    }
}

/// What one agent of a clone is editing, as its clone publishes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentWork {
    /// The agent id.
    pub agent: String,
    /// The paths it holds locks on, relative to the repository's top level.
    pub working_on: Vec<String>,
}

/// One clone's record: the message of the commit `refs/coord/clones/<hash>` points to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloneRecord {
    /// The format (1).
    pub v: u32,
    /// The clone's id.
    pub clone: String,
    /// Its host.
    pub host: String,
    /// When it was written, on the writer's clock (shown, never judged).
    pub updated: String,
    /// How long the record counts after a reader first sees this version of it, in seconds.
    pub lease_s: u64,
    /// A random token of this version.
    pub nonce: String,
    /// Its agents and what they edit.
    pub agents: Vec<AgentWork>,
}

/// The most agents one clone record lists, and paths one agent.
const MAX_AGENTS: usize = 64;
pub(crate) const MAX_PATHS: usize = 256;

impl CloneRecord {
    /// Parse a commit message read from the remote and check it; `Err` says why it is ignored.
    ///
    /// # Errors
    ///
    /// Why the record cannot be honoured.
    pub fn read(message: &[u8]) -> Result<CloneRecord, String> {
        let rec: CloneRecord = serde_json::from_slice(message)
            .map_err(|e| format!("it is not a clone record ({e})"))?;
        rec.check()?;
        Ok(rec)
    }

    /// Whether the record is sound.
    ///
    /// # Errors
    ///
    /// Why the record cannot be honoured.
    pub fn check(&self) -> Result<(), String> {
        check_holder(&Holder {
            agent: "x".into(),
            host: self.host.clone(),
            clone: self.clone.clone(),
        })?;
        if self.lease_s == 0 || self.lease_s > MAX_LEASE_S {
            return Err(format!(
                "its lease of {}s is not between 1s and a week",
                self.lease_s
            ));
        }
        if self.agents.len() > MAX_AGENTS {
            return Err(format!("it lists {} agents", self.agents.len()));
        }
        for a in &self.agents {
            if !crate::workspace::is_valid_agent_id(&a.agent) {
                return Err(format!("`{}` is not an agent id", short(&a.agent)));
            }
            if a.working_on.len() > MAX_PATHS {
                return Err(format!("it lists {} paths", a.working_on.len()));
            }
            for p in &a.working_on {
                check_path(p)?;
            }
        }
        Ok(())
    }
}

fn check_holder(h: &Holder) -> Result<(), String> {
    if !crate::workspace::is_valid_agent_id(&h.agent) {
        return Err(format!("`{}` is not an agent id", short(&h.agent)));
    }
    check_text("host", &h.host, 255)?;
    if h.host.is_empty() {
        return Err("its host is empty".into());
    }
    let clone_ok = !h.clone.is_empty()
        && h.clone.len() <= 64
        && h.clone
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !clone_ok {
        return Err(format!("`{}` is not a clone id", short(&h.clone)));
    }
    Ok(())
}

fn check_text(what: &str, text: &str, max: usize) -> Result<(), String> {
    if text.len() > max {
        return Err(format!("its {what} is longer than {max} bytes"));
    }
    if text.chars().any(char::is_control) {
        return Err(format!("its {what} holds a control character"));
    }
    Ok(())
}

/// A path relative to the repository's top level that stays inside it.
fn check_path(p: &str) -> Result<(), String> {
    check_text("path", p, 4096)?;
    let inside = !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..");
    if inside {
        Ok(())
    } else {
        Err(format!(
            "the path `{}` is not inside the repository",
            short(p)
        ))
    }
}

/// At most 60 characters of `text`, control characters shown as `?`, for a warning.
pub fn short(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(60)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if text.chars().count() > 60 {
        out.push('…');
    }
    out
}

/// Text as a record writes it: one line, control characters as spaces.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// 32 hex digits naming `parts` (two FNV-1a hashes of them).
fn hash_name(parts: &[&str]) -> String {
    let mut bytes = Vec::new();
    for p in parts {
        bytes.extend_from_slice(p.as_bytes());
        bytes.push(0);
    }
    let a = fnv1a64(&bytes);
    bytes.insert(0, 0x5a);
    let b = fnv1a64(&bytes);
    format!("{a:016x}{b:016x}")
}

/// The tree entry of `holder`'s record on `text` (a pattern or path) of `kind`: a hash, so
/// that no name given by a user reaches a ref or a path.
pub fn entry_name(holder: &Holder, kind: Kind, text: &str) -> String {
    hash_name(&[kind.word(), &holder.clone, &holder.agent, text])
}

/// Whether `name` is a tree entry name coord writes (32 lower-case hex digits).
pub fn is_entry_name(name: &str) -> bool {
    name.len() == 32
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The last part of the ref holding the clone `clone`'s record (a hash of its id).
pub fn clone_key(clone: &str) -> String {
    hash_name(&["clone", clone])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> ClaimRecord {
        ClaimRecord {
            v: 1,
            kind: Kind::Claim,
            pattern: Some("src/auth/**".into()),
            path: None,
            holder: Holder {
                agent: "alice".into(),
                host: "laptop-a".into(),
                clone: "9f3c0a4e5d6b7c8a".into(),
            },
            since: "2026-01-28T01:00:00+01:00".into(),
            reason: Some("auth refactor".into()),
            lease_s: 900,
            renewal: 0,
            token: "0123456789abcdef".into(),
            taken_from: None,
        }
    }

    #[test]
    fn a_record_written_reads_back() {
        let r = rec();
        let bytes = serde_json::to_vec(&r).unwrap();
        let (back, pattern) = ClaimRecord::read(&bytes).unwrap();
        assert_eq!(back, r);
        assert!(pattern.matches("src/auth/x.rs"));
    }

    #[test]
    fn hostile_records_are_refused_with_a_reason() {
        let bad: Vec<(ClaimRecord, &str)> = vec![
            (
                ClaimRecord {
                    pattern: Some("../etc/**".into()),
                    ..rec()
                },
                "not allowed",
            ),
            (
                ClaimRecord {
                    pattern: Some("/etc/passwd".into()),
                    ..rec()
                },
                "relative",
            ),
            (
                ClaimRecord {
                    kind: Kind::Lock,
                    pattern: None,
                    path: Some("a/../../x".into()),
                    ..rec()
                },
                "not inside",
            ),
            (
                ClaimRecord {
                    lease_s: 0,
                    ..rec()
                },
                "lease",
            ),
            (
                ClaimRecord {
                    lease_s: 10 * 365 * 86_400,
                    ..rec()
                },
                "lease",
            ),
            (
                ClaimRecord {
                    holder: Holder {
                        agent: "Bad Name".into(),
                        ..rec().holder
                    },
                    ..rec()
                },
                "agent id",
            ),
            (
                ClaimRecord {
                    reason: Some("x\u{1b}[2J".into()),
                    ..rec()
                },
                "control",
            ),
            (
                ClaimRecord {
                    since: "yesterday".into(),
                    ..rec()
                },
                "not a time",
            ),
        ];
        for (r, why) in bad {
            let err = ClaimRecord::read(&serde_json::to_vec(&r).unwrap()).unwrap_err();
            assert!(err.contains(why), "{err} (wanted {why})");
        }
        assert!(ClaimRecord::read(b"\xff\xfe not json").is_err());
        assert!(ClaimRecord::read(b"{\"v\": 1}").is_err());
    }

    #[test]
    fn names_are_hashes_apart_for_each_holder_and_text() {
        let h = rec().holder;
        let a = entry_name(&h, Kind::Claim, "src/**");
        assert!(is_entry_name(&a));
        assert_ne!(a, entry_name(&h, Kind::Claim, "src/a/**"));
        assert_ne!(a, entry_name(&h, Kind::Lock, "src/**"));
        let other = Holder {
            host: "laptop-b".into(),
            clone: "00aa".into(),
            ..h.clone()
        };
        assert_ne!(a, entry_name(&other, Kind::Claim, "src/**"));
        assert!(!is_entry_name("src"));
        assert_eq!(clone_key("x").len(), 32);
    }
}
