//! `.coord/remote/state.json`: what this clone last read of its remote's `refs/coord/`, kept
//! so that a hook (and any command) knows the other clones' claims without running git.
//!
//! Beside each record it keeps `seen`: when this clone first saw that version of the record
//! (a claim's blob, a clone's commit), on this machine's clock. Leases are judged from there,
//! never from a date another machine wrote: a reader's lease ends `lease_s` after it first saw
//! the version, so a holder that renews (a new version) in time is never judged STALE, whatever
//! the two clocks say; a reader that saw a version late judges it late, on the safe side. Beside
//! `seen` it keeps `steady`, the same moment on this machine's clock that does not jump
//! ([`super::steady`]): a lease lapses only once both clocks have passed its end ([`lapsed`]),
//! so a wall clock set forward here never ends another clone's lease.
//!
//! `.coord/remote/claims` holds the same claims in a few tab-separated lines, each with when
//! its lease ends: a hook reads that file, not the JSON, and parses only the patterns that can
//! match the paths it asks about.
//!
//! `.coord/remote/working_on` likewise holds what each clone's agents are editing (this clone's
//! as last read back from the remote): a hook's edit warning reads it, and so does the check
//! whether this clone's `working_on` changed since it was last published.
//!
//! The files are replaced whole (never half-written), under a kernel lock on `.coord/remote/lock`
//! so that two processes merging what they read do not lose each other's `seen` times; a file
//! that cannot be read counts as never synced.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::record::{ClaimRecord, CloneRecord};
use super::steady::{self, Steady};
use crate::clock::{self, Timestamp};
use crate::error::Result;
use crate::fsutil;
use crate::layout;
use crate::workspace::Workspace;

/// The most bytes `state.json` is read of.
const STATE_CAP: u64 = 16 * 1024 * 1024;

/// The most records ignored that are named one by one (the rest are counted).
pub const MAX_IGNORED: usize = 20;

/// A record found on the remote and ignored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignored {
    /// What it was read from: `claims` (the claims commit last read), or
    /// `clone:<key>@<commit>` (one clone's record), so that it is not read again unchanged.
    pub source: String,
    /// The warning.
    pub why: String,
}

/// One claim record as last read, with when this clone first saw its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenClaim {
    /// Its entry in the tree of `refs/coord/claims`.
    pub name: String,
    /// Its blob (the version).
    pub blob: String,
    /// When this clone first saw this blob there (this machine's clock).
    pub seen: String,
    /// When, by this machine's clock that does not jump ([`Steady`]): the anchor a lease is
    /// counted from beside `seen` (`None`: that clock cannot be read here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<Steady>,
    /// The record.
    pub record: ClaimRecord,
}

impl SeenClaim {
    /// Whether its lease has lapsed at `now` (`steady`: the clock that does not jump, now), as
    /// this clone judges it: [`lapsed`], counted from when this clone first saw the version.
    pub fn lapsed(&self, now: &Timestamp, steady: Option<&Steady>) -> bool {
        let wall = lease_until(&self.seen, self.record.lease_s).unwrap_or(*now);
        lapsed(&wall, self.steady_until().as_ref(), now, steady)
    }

    /// When its lease ends by the clock that does not jump (`None`: never counted here).
    pub fn steady_until(&self) -> Option<Steady> {
        let lease = Duration::from_secs(self.record.lease_s);
        self.steady.as_ref().map(|s| s.after(lease))
    }

    /// Count its lease from `now` (the clock that does not jump) when it was not counted by
    /// that clock yet, or was first seen in another boot: the count starts again (the safe
    /// side), as if this version had been first seen now.
    pub fn anchor(&mut self, now: Option<&Steady>) {
        if let Some(now) = now
            && self.steady.as_ref().is_none_or(|s| s.until(now).is_none())
        {
            self.steady = Some(now.clone());
        }
    }
}

/// Whether a lease has lapsed at `now`: past its end by the wall clock (`wall_until`) **and**
/// past its end by the clock that does not jump (`steady_until`, read now as `steady`). A
/// reader's wall clock set forward never ends a lease alone: the reader must also have seen
/// the same version for the lease's length by a clock that does not jump, and the holder's
/// renewer shows a new version well before that. Not counted by that clock (another boot, a
/// clock that cannot be read): not lapsed.
pub fn lapsed(
    wall_until: &Timestamp,
    steady_until: Option<&Steady>,
    now: &Timestamp,
    steady: Option<&Steady>,
) -> bool {
    let counted = steady_until
        .zip(steady)
        .is_some_and(|(end, now)| end.until(now).is_some());
    *wall_until <= *now && counted
}

/// One clone record as last read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenClone {
    /// The ref's last part (a hash of the clone id).
    pub key: String,
    /// The commit the ref pointed to (the version).
    pub commit: String,
    /// When this clone first saw that commit.
    pub seen: String,
    /// The record.
    pub record: CloneRecord,
}

/// What this clone last published as its own `working_on`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnWork {
    /// The agents and paths, as published.
    pub agents: Vec<super::record::AgentWork>,
    /// When (this clock).
    pub at: String,
    /// The lease it was published with, in seconds.
    pub lease_s: u64,
}

/// The synced state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The format (1).
    pub v: u32,
    /// The remote it was read from.
    pub remote: String,
    /// When the last complete read of the remote began (this clock); `None`: never.
    pub synced_at: Option<String>,
    /// The commit `refs/coord/claims` was at (`None`: it did not exist).
    pub claims_commit: Option<String>,
    /// That commit's generation (commits since the history was last squashed).
    #[serde(default)]
    pub generation: u64,
    /// The claims in it that could be read.
    pub claims: Vec<SeenClaim>,
    /// The clones' records that could be read.
    pub clones: Vec<SeenClone>,
    /// The records ignored there, and why.
    #[serde(default)]
    pub ignored: Vec<Ignored>,
    /// What the last read found had happened (a rewrite of `refs/coord/claims`, a claim of
    /// this clone gone without a takeover), said until the next read.
    #[serde(default)]
    pub news: Vec<String>,
    /// What this clone last published as its `working_on`.
    #[serde(default)]
    pub own_work: Option<OwnWork>,
}

impl State {
    /// An empty state for `remote`.
    pub fn new(remote: &str) -> State {
        State {
            v: 1,
            remote: remote.to_string(),
            ..State::default()
        }
    }

    /// Whether the last read here began no later than `t`, as far as this clock can tell: never
    /// read, read at or before `t`, or stamped later than this clock reads now (the clock was
    /// set back since, or the file was written elsewhere: that read is no later one, and a view
    /// that only a later read could replace would never be read again).
    pub fn synced_by(&self, t: &Timestamp) -> bool {
        self.synced_at
            .as_deref()
            .and_then(clock::parse_timestamp)
            .is_none_or(|at| at <= *t || at > clock::now())
    }

    /// How long ago the last read began, as of `now`.
    pub fn age(&self, now: &Timestamp) -> Option<Duration> {
        let at = clock::parse_timestamp(self.synced_at.as_deref()?)?;
        Some(clock::age(now, &at))
    }

    /// Every warning of the last read: the records ignored (at most [`MAX_IGNORED`] named),
    /// then the news.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .ignored
            .iter()
            .take(MAX_IGNORED)
            .map(|i| i.why.clone())
            .collect();
        if self.ignored.len() > MAX_IGNORED {
            out.push(format!(
                "and {} more records ignored on `{}`",
                self.ignored.len() - MAX_IGNORED,
                self.remote
            ));
        }
        out.extend(self.news.iter().cloned());
        out
    }

    /// When this clone first saw the claim version `blob` (none: not in this state).
    pub fn seen_claim(&self, blob: &str) -> Option<&str> {
        self.claims
            .iter()
            .find(|c| c.blob == blob)
            .map(|c| c.seen.as_str())
    }
}

/// The state of the workspace `root` as last written, when it is for `remote` and can be read.
pub fn read(root: &Path, remote: &str) -> Option<State> {
    let bytes = fsutil::read_capped(
        &layout::remote_state(&crate::worktree::shared_root(root)),
        STATE_CAP,
    )
    .ok()?;
    let state: State = serde_json::from_slice(&bytes).ok()?;
    (state.remote == remote).then_some(state)
}

/// Read, change with `f` and write back the state of `ws` for `remote`, under the state's
/// lock. `f` gets the state as last written (or a new one) and returns what it gives back.
pub fn update<T>(ws: &Workspace, remote: &str, f: impl FnOnce(&mut State) -> T) -> Result<T> {
    let root = ws.root();
    ws.ensure_state_dir()?;
    fsutil::ensure_dir(&layout::remote_dir(&crate::worktree::shared_root(root)))?;
    let lock = layout::remote_lock(&crate::worktree::shared_root(root));
    let _lock = crate::arbiter::lock_mutex_within(&lock, crate::arbiter::MUTEX_PATIENCE)?;
    let mut state = read(root, remote).unwrap_or_else(|| State::new(remote));
    let before = state.clone();
    let out = f(&mut state);
    if state != before {
        let steady = steady::now();
        let index = |s: &State| index_text(s, steady.as_ref());
        let text = serde_json::to_vec(&state).unwrap_or_default();
        fsutil::replace(
            &layout::remote_state(&crate::worktree::shared_root(root)),
            &text,
        )?;
        if index(&before) != index(&state) {
            fsutil::replace(
                &layout::remote_claims(&crate::worktree::shared_root(root)),
                index(&state).as_bytes(),
            )?;
        }
        if work_text(&before) != work_text(&state) {
            fsutil::replace(
                &layout::remote_working_on(&crate::worktree::shared_root(root)),
                work_text(&state).as_bytes(),
            )?;
        }
    }
    Ok(out)
}

/// The first line of `.coord/remote/claims`.
const INDEX_HEAD: &str = "# coord remote claims 2";

/// `.coord/remote/claims` for `state`, written at `steady` (the clock that does not jump): a
/// head line (`# coord remote claims 2`, the remote, when it was read in seconds since the
/// epoch, the boot's id), then one line per claim: when its lease ends (epoch seconds, this
/// clock), when it ends by the clock that does not jump (milliseconds since that boot; `-`:
/// not counted in this boot), `claim` or `lock`, agent, host, clone id, since (epoch seconds),
/// the pattern or path, the reason; separated by tabs (no field holds one: records with control
/// characters are never kept).
fn index_text(state: &State, steady: Option<&Steady>) -> String {
    let epoch = |t: Option<&str>| {
        t.and_then(clock::parse_timestamp)
            .map_or(0, |t| t.timestamp())
    };
    let boot = steady.map_or("", |s| s.boot.as_str());
    let mut out = format!(
        "{INDEX_HEAD}\t{}\t{}\t{boot}\n",
        state.remote,
        epoch(state.synced_at.as_deref())
    );
    for c in &state.claims {
        let r = &c.record;
        let Some(until) = lease_until(&c.seen, r.lease_s) else {
            continue;
        };
        let since = clock::parse_timestamp(&r.since)
            .filter(|s| Some(*s) <= clock::parse_timestamp(&c.seen))
            .or_else(|| clock::parse_timestamp(&c.seen))
            .map_or(0, |t| t.timestamp());
        let kind = r.kind.word();
        let counted = (c.steady_until())
            .filter(|end| steady.is_some_and(|now| now.boot == end.boot))
            .map_or("-".to_string(), |end| end.ms.to_string());
        out.push_str(&format!(
            "{}\t{counted}\t{kind}\t{}\t{}\t{}\t{since}\t{}\t{}\n",
            until.timestamp(),
            r.holder.agent,
            r.holder.host,
            r.holder.clone,
            r.text(),
            r.reason.as_deref().unwrap_or_default()
        ));
    }
    out
}

/// One line of `.coord/remote/claims`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedClaim {
    /// When its lease ends (epoch seconds, this clock).
    pub lease_until: i64,
    /// When it ends by the clock that does not jump (`None`: not counted in the boot the file
    /// was written in).
    pub steady_until: Option<Steady>,
    /// A claim or a lock.
    pub kind: super::record::Kind,
    /// Who holds it.
    pub holder: super::record::Holder,
    /// Since when (epoch seconds).
    pub since: i64,
    /// Its pattern, or a lock's path.
    pub text: String,
    /// Its reason (empty: none).
    pub reason: String,
}

/// `.coord/remote/claims` of the workspace `root` for `remote`: when it was read (epoch
/// seconds, 0: never) and the claims whose text `keep` accepts (`None`: not there, for another
/// remote, or with a line that does not parse: a claim whose lease cannot be read is never
/// taken as lapsed).
pub fn read_index(
    root: &Path,
    remote: &str,
    mut keep: impl FnMut(&str) -> bool,
) -> Option<(i64, Vec<IndexedClaim>)> {
    let bytes = fsutil::read_capped(
        &layout::remote_claims(&crate::worktree::shared_root(root)),
        STATE_CAP,
    )
    .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    let mut head = lines.next()?.split('\t');
    if head.next() != Some(INDEX_HEAD) || head.next() != Some(remote) {
        return None;
    }
    let synced = head.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let boot = head.next().unwrap_or_default();
    let mut out = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.splitn(9, '\t').collect();
        let [
            until,
            counted,
            kind,
            agent,
            host,
            clone,
            since,
            text,
            reason,
        ] = f.as_slice()
        else {
            return None;
        };
        let steady_until = match *counted {
            "-" => None,
            ms => Some(Steady {
                boot: boot.to_string(),
                ms: ms.parse().ok()?,
            }),
        };
        let kind = match *kind {
            "lock" => super::record::Kind::Lock,
            "claim" => super::record::Kind::Claim,
            _ => return None,
        };
        let (Ok(lease_until), Ok(since)) = (until.parse(), since.parse()) else {
            return None;
        };
        if !keep(text) {
            continue;
        }
        out.push(IndexedClaim {
            lease_until,
            steady_until,
            kind,
            holder: super::record::Holder {
                agent: agent.to_string(),
                host: host.to_string(),
                clone: clone.to_string(),
            },
            since,
            text: text.to_string(),
            reason: reason.to_string(),
        });
    }
    Some((synced, out))
}

/// The first line of `.coord/remote/working_on`.
const WORK_HEAD: &str = "# coord remote working_on 1";

/// `.coord/remote/working_on` for `state`: a head line (`# coord remote working_on 1`, the
/// remote), then one line per path an agent of a clone (this one's too) is editing, as last
/// read: when that clone's record's lease ends (epoch seconds, this clock), agent, host, clone
/// id, path; separated by tabs.
fn work_text(state: &State) -> String {
    let mut out = format!("{WORK_HEAD}\t{}\n", state.remote);
    for c in &state.clones {
        let Some(until) = lease_until(&c.seen, c.record.lease_s) else {
            continue;
        };
        for a in &c.record.agents {
            for path in &a.working_on {
                out.push_str(&format!(
                    "{}\t{}\t{}\t{}\t{path}\n",
                    until.timestamp(),
                    a.agent,
                    c.record.host,
                    c.record.clone
                ));
            }
        }
    }
    out
}

/// One line of `.coord/remote/working_on`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedWork {
    /// When its clone's record's lease ends (epoch seconds, this clock).
    pub lease_until: i64,
    /// The agent editing it, its host and clone (`agent` set).
    pub holder: super::record::Holder,
    /// The path, relative to the repository's top level.
    pub path: String,
}

/// `.coord/remote/working_on` of the workspace `root` for `remote`, every line (`None`: not
/// there, or for another remote).
pub fn read_work(root: &Path, remote: &str) -> Option<Vec<IndexedWork>> {
    let bytes = fsutil::read_capped(
        &layout::remote_working_on(&crate::worktree::shared_root(root)),
        STATE_CAP,
    )
    .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    if lines.next()? != format!("{WORK_HEAD}\t{remote}") {
        return None;
    }
    let out = lines.filter_map(|line| {
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        let [until, agent, host, clone, path] = f.as_slice() else {
            return None;
        };
        Some(IndexedWork {
            lease_until: until.parse().ok()?,
            holder: super::record::Holder {
                agent: agent.to_string(),
                host: host.to_string(),
                clone: clone.to_string(),
            },
            path: path.to_string(),
        })
    });
    Some(out.collect())
}

/// Remove the state (the remote was turned off here).
pub fn remove(root: &Path) -> Result<()> {
    fsutil::remove(&layout::remote_claims(&crate::worktree::shared_root(root)))?;
    fsutil::remove(&layout::remote_working_on(&crate::worktree::shared_root(
        root,
    )))?;
    fsutil::remove(&layout::remote_state(&crate::worktree::shared_root(root))).map(drop)
}

/// When a lease of `lease_s` seconds on a version first seen at `seen` ends (`None`: `seen` is
/// not a time).
pub fn lease_until(seen: &str, lease_s: u64) -> Option<Timestamp> {
    let seen = clock::parse_timestamp(seen)?;
    let lease = chrono::Duration::seconds(i64::try_from(lease_s).ok()?);
    seen.checked_add_signed(lease)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_ends_its_length_after_the_version_was_first_seen() {
        let until = lease_until("2026-01-28T01:00:00+01:00", 900).unwrap();
        assert_eq!(clock::format_timestamp(&until), "2026-01-28T01:15:00+01:00");
        assert!(lease_until("never", 900).is_none());
    }

    #[test]
    fn the_index_gives_back_the_claims_with_their_lease() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fsutil::ensure_dir(&root.join(".coord/remote")).unwrap();
        let mut s = State::new("origin");
        s.synced_at = Some("2026-01-28T10:00:00.250+00:00".into());
        let record: super::super::record::ClaimRecord = serde_json::from_str(
            r#"{"v":1,"kind":"claim","pattern":"src/**","agent":"alice","host":"a","clone":"c1","since":"2026-01-28T11:00:00+00:00","reason":"x y","lease_s":60,"renewal":0,"token":"t"}"#,
        )
        .unwrap();
        s.claims.push(SeenClaim {
            name: "n".into(),
            blob: "b".into(),
            seen: "2026-01-28T10:00:00+00:00".into(),
            steady: Some(at_boot("b1", 5_000)),
            record,
        });
        let written = at_boot("b1", 7_000);
        fsutil::replace(
            &layout::remote_claims(&crate::worktree::shared_root(root)),
            index_text(&s, Some(&written)).as_bytes(),
        )
        .unwrap();
        let (synced, claims) = read_index(root, "origin", |_| true).unwrap();
        assert_eq!(synced, 1_769_594_400);
        assert_eq!(claims.len(), 1);
        let c = &claims[0];
        assert_eq!(c.lease_until, 1_769_594_460);
        // Counted by the clock that does not jump: 60 s after it was first seen, in that boot.
        assert_eq!(c.steady_until, Some(at_boot("b1", 65_000)));
        // A `since` later than the claim was first seen (a clock ahead) is not believed.
        assert_eq!(c.since, 1_769_594_400);
        assert_eq!((c.text.as_str(), c.reason.as_str()), ("src/**", "x y"));
        assert!(read_index(root, "upstream", |_| true).is_none());
        // A line whose lease (or since, or kind) does not parse makes the whole index unread,
        // never a claim lapsed since 1970.
        let good = index_text(&s, Some(&written));
        for bad in [
            good.replacen("1769594460\t", "x\t", 1),
            good.replacen("\t65000\t", "\tx\t", 1),
            good.replacen("\tc1\t1769594400\t", "\tc1\t\t", 1),
            good.replacen("\tclaim\t", "\tclam\t", 1),
            format!("{good}1769594460\tclaim\n"),
        ] {
            assert_ne!(bad, good);
            fsutil::replace(
                &layout::remote_claims(&crate::worktree::shared_root(root)),
                bad.as_bytes(),
            )
            .unwrap();
            assert!(read_index(root, "origin", |_| true).is_none(), "{bad}");
        }
        fsutil::replace(
            &layout::remote_claims(&crate::worktree::shared_root(root)),
            good.as_bytes(),
        )
        .unwrap();
        assert!(
            read_index(root, "origin", |t| t != "src/**")
                .unwrap()
                .1
                .is_empty()
        );
        // Written in another boot than the one it was counted in: not counted there.
        fsutil::replace(
            &layout::remote_claims(&crate::worktree::shared_root(root)),
            index_text(&s, Some(&at_boot("b2", 1_000))).as_bytes(),
        )
        .unwrap();
        let (_, claims) = read_index(root, "origin", |_| true).unwrap();
        assert_eq!(claims[0].steady_until, None);
    }

    fn at_boot(boot: &str, ms: u64) -> Steady {
        Steady {
            boot: boot.into(),
            ms,
        }
    }

    fn seen_claim(seen: &str, lease_s: u64, steady: Option<Steady>) -> SeenClaim {
        let record: super::super::record::ClaimRecord = serde_json::from_str(&format!(
            r#"{{"v":1,"kind":"claim","pattern":"src/**","agent":"alice","host":"a","clone":"c1","since":"{seen}","lease_s":{lease_s},"renewal":0,"token":"t"}}"#
        ))
        .unwrap();
        SeenClaim {
            name: "n".into(),
            blob: "b".into(),
            seen: seen.into(),
            steady,
            record,
        }
    }

    #[test]
    fn a_lease_lapses_only_once_both_clocks_passed_its_end() {
        let t = |s: &str| clock::parse_timestamp(s).unwrap();
        let c = seen_claim("2026-01-28T10:00:00+00:00", 60, Some(at_boot("b1", 1_000)));
        let (before, after) = (
            t("2026-01-28T10:00:59+00:00"),
            t("2026-01-28T10:01:00+00:00"),
        );
        assert!(c.lapsed(&after, Some(&at_boot("b1", 61_000))));
        // The wall clock jumped an hour ahead; this clone has seen the version for 5 s.
        assert!(!c.lapsed(&t("2026-01-28T11:00:05+00:00"), Some(&at_boot("b1", 6_000))));
        // The wall clock was set back: it has not lapsed by it.
        assert!(!c.lapsed(&before, Some(&at_boot("b1", 600_000))));
        // Another boot, the clock unreadable, or a version never counted: not lapsed.
        assert!(!c.lapsed(&after, Some(&at_boot("b2", 600_000))));
        assert!(!c.lapsed(&after, None));
        let uncounted = seen_claim("2026-01-28T10:00:00+00:00", 60, None);
        assert!(!uncounted.lapsed(&after, Some(&at_boot("b1", 600_000))));
    }

    #[test]
    fn a_version_is_counted_again_from_now_after_a_reboot() {
        let mut c = seen_claim("2026-01-28T10:00:00+00:00", 60, None);
        c.anchor(None);
        assert_eq!(c.steady, None);
        c.anchor(Some(&at_boot("b1", 1_000)));
        assert_eq!(c.steady, Some(at_boot("b1", 1_000)));
        // Read again in the same boot: counted from when it was first seen.
        c.anchor(Some(&at_boot("b1", 9_000)));
        assert_eq!(c.steady, Some(at_boot("b1", 1_000)));
        c.anchor(Some(&at_boot("b2", 500)));
        assert_eq!(c.steady, Some(at_boot("b2", 500)));
    }

    #[test]
    fn warnings_name_a_bounded_number_of_records_then_the_news() {
        let mut s = State::new("origin");
        for i in 0..30 {
            s.ignored.push(Ignored {
                source: "claims".into(),
                why: format!("w{i}"),
            });
        }
        s.news.push("rewritten".into());
        let w = s.warnings();
        assert_eq!(w.len(), MAX_IGNORED + 2);
        assert_eq!(w[MAX_IGNORED], "and 10 more records ignored on `origin`");
        assert_eq!(w.last().unwrap(), "rewritten");
    }
}
