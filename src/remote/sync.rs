//! Reading the remote: one `git fetch` of `refs/coord/*` into `refs/coord-sync/*`, then the
//! records of what changed since the last read, through one `git for-each-ref` and one
//! `git cat-file --batch` (records already read are not read again: a version is its object
//! id), merged into `.coord/remote/state.json` with when each version was first seen.

use std::collections::HashMap;
use std::time::Instant;

use super::git::{self, Batch, NetFault};
use super::record::{self, ClaimRecord, CloneRecord, Holder};
use super::state::{self, Ignored, SeenClaim, SeenClone, State};
use super::{Remote, time_text};
use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::layout;
use crate::pattern::Pattern;

/// The most entries of the claims tree, and clone refs, that are read.
const MAX_ENTRIES: usize = 5000;

/// How many commits back a new claims commit is followed looking for the one last read.
const ANCESTRY_WALK: usize = 64;

/// A commit as `cat-file` gives it.
#[derive(Debug, Default)]
pub(crate) struct Commit {
    /// Its tree.
    pub tree: String,
    /// Its parents.
    pub parents: Vec<String>,
    /// Its message.
    pub message: Vec<u8>,
}

impl Commit {
    /// Parse a commit object's body.
    pub fn parse(body: &[u8]) -> Option<Commit> {
        let split = body.windows(2).position(|w| w == b"\n\n");
        let (head, message) = match split {
            Some(i) => (&body[..i], body[i + 2..].to_vec()),
            None => (body, Vec::new()),
        };
        let head = std::str::from_utf8(head).ok()?;
        let mut c = Commit {
            message,
            ..Commit::default()
        };
        for line in head.lines() {
            if let Some(t) = line.strip_prefix("tree ") {
                c.tree = t.trim().to_string();
            } else if let Some(p) = line.strip_prefix("parent ") {
                c.parents.push(p.trim().to_string());
            }
        }
        (!c.tree.is_empty()).then_some(c)
    }

    /// The value of trailer `key` in its message (`coord-generation: 12`).
    pub fn trailer(&self, key: &str) -> Option<String> {
        let text = String::from_utf8_lossy(&self.message);
        text.lines().rev().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    }
}

/// A claim as read, with its pattern.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    /// The record as kept in the state (with when its version was first seen).
    pub seen: SeenClaim,
    /// Its pattern (a lock's path, literally).
    pub pattern: Pattern,
}

impl Claim {
    /// Its holder.
    pub fn holder(&self) -> &Holder {
        &self.seen.record.holder
    }

    /// When its lease ends, on this clock.
    pub fn lease_until(&self) -> Timestamp {
        state::lease_until(&self.seen.seen, self.seen.record.lease_s).unwrap_or_else(clock::now)
    }
}

/// `refs/coord/claims` as read at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Claims {
    /// Its commit (`None`: the ref does not exist).
    pub commit: Option<String>,
    /// That commit's generation.
    pub generation: u64,
    /// The claims that could be read.
    pub claims: Vec<Claim>,
}

/// What one read of the remote found.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// When the fetch began (this clock).
    pub at: String,
    /// The claims.
    pub claims: Claims,
    /// The clones' records.
    pub clones: Vec<SeenClone>,
    /// What was ignored, and why.
    pub ignored: Vec<Ignored>,
    /// `refs/coord/claims` does not follow the commit last read (a forced push).
    pub rewritten: bool,
}

/// `git fetch` of the remote's `refs/coord/*`.
///
/// # Errors
///
/// [`Error::Remote`] when it cannot be reached or refused the credentials.
pub(crate) fn fetch(r: &Remote, deadline: Instant) -> Result<()> {
    let refspec = format!("+refs/coord/*:{}*", layout::SYNC_PREFIX);
    let args = [
        "-c",
        "gc.auto=0",
        "-c",
        "maintenance.auto=false",
        "-c",
        "fetch.writeCommitGraph=false",
        "fetch",
        "--quiet",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--no-tags",
        "--no-show-forced-updates",
        "--prune",
        "--",
        r.name.as_str(),
        refspec.as_str(),
    ];
    let mut tries = 0;
    loop {
        let ran = git::run(r.dir(), &args, None, deadline)
            .map_err(|f| r.fault(&NetFault::Unreachable(f.describe())))?;
        if ran.ok() {
            return Ok(());
        }
        // Another process of this clone updating the same local ref: go again.
        if git::ref_busy(&ran.stderr) && tries < 5 {
            tries += 1;
            super::backoff(tries);
            continue;
        }
        return Err(r.fault(&git::fault(&ran.stderr)));
    }
}

/// Read what the last fetch brought, reusing what `prev` already read.
pub(crate) fn read(r: &Remote, prev: &State, at: &Timestamp) -> Result<Snapshot> {
    let deadline = r.deadline;
    let failed = |what: &str| Error::Failed {
        message: format!(
            "cannot read the coord state fetched from `{}`: {what}",
            r.name
        ),
    };
    let listed = git::run(
        r.dir(),
        &[
            "for-each-ref",
            "--format=%(objectname) %(objecttype) %(refname)",
            layout::SYNC_PREFIX,
        ],
        None,
        deadline,
    )
    .map_err(|f| failed(&f.describe()))?;
    if !listed.ok() {
        return Err(failed(listed.stderr.trim()));
    }
    let now = time_text(&clock::now());
    let mut snap = Snapshot {
        at: time_text(at),
        ..Snapshot::default()
    };
    let claims_ref = layout::sync_ref(layout::REMOTE_CLAIMS_REF);
    let clones_prefix = layout::sync_ref(layout::REMOTE_CLONES_PREFIX);
    let mut claims_commit = None;
    let mut clone_refs = Vec::new();
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(oid), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if name == claims_ref {
            if kind == "commit" {
                claims_commit = Some(oid.to_string());
            } else {
                snap.ignored.push(Ignored {
                    source: CLAIMS.into(),
                    why: format!(
                        "ignored `refs/coord/claims` on `{}`: it is a {kind}, not a commit",
                        r.name
                    ),
                });
            }
        } else if let Some(key) = name.strip_prefix(&clones_prefix)
            && clone_refs.len() < MAX_ENTRIES
        {
            clone_refs.push((key.to_string(), oid.to_string(), kind.to_string()));
        }
    }
    let known_bad = |key: &str, oid: &str| {
        let source = clone_source(key, oid);
        prev.ignored.iter().find(|i| i.source == source).cloned()
    };
    let needs_batch = (claims_commit.is_some() && claims_commit != prev.claims_commit)
        || clone_refs.iter().any(|(key, oid, _)| {
            !prev
                .clones
                .iter()
                .any(|c| c.key == *key && c.commit == *oid)
                && known_bad(key, oid).is_none()
        });
    let mut batch = if needs_batch {
        Some(
            Batch::start(r.dir(), record::CLONE_CAP, deadline)
                .ok_or_else(|| failed("git cat-file cannot be started"))?,
        )
    } else {
        None
    };
    snap.claims = match (&claims_commit, batch.as_mut()) {
        (None, _) => Claims::default(),
        (Some(c), _) if Some(c) == prev.claims_commit.as_ref() => {
            snap.ignored
                .extend(prev.ignored.iter().filter(|i| i.source == CLAIMS).cloned());
            Claims {
                commit: Some(c.clone()),
                generation: prev.generation,
                claims: prev.claims.iter().filter_map(revive).collect(),
            }
        }
        (Some(c), Some(b)) => {
            let mut why = Vec::new();
            let (claims, rewritten) =
                read_claims(r, b, c, prev, &now, &mut why).map_err(|f| failed(&f.describe()))?;
            snap.ignored.extend(why.into_iter().map(|why| Ignored {
                source: CLAIMS.into(),
                why,
            }));
            snap.rewritten = rewritten;
            claims
        }
        (Some(_), None) => Claims::default(),
    };
    for (key, oid, kind) in clone_refs {
        if let Some(old) = prev.clones.iter().find(|c| c.key == key && c.commit == oid) {
            snap.clones.push(old.clone());
            continue;
        }
        if let Some(bad) = known_bad(&key, &oid) {
            snap.ignored.push(bad);
            continue;
        }
        let Some(b) = batch.as_mut() else { continue };
        let source = clone_source(&key, &oid);
        let mut ignore = |why: String| {
            snap.ignored.push(Ignored {
                source: source.clone(),
                why,
            })
        };
        let ignored = |why: String| {
            format!(
                "ignored `refs/coord/clones/{}` on `{}`: {why}",
                record::short(&key),
                r.name
            )
        };
        if kind != "commit" {
            ignore(ignored(format!("it is a {kind}, not a commit")));
            continue;
        }
        let obj = b.get(&oid).map_err(|f| failed(&f.describe()))?;
        let Some(commit) = obj
            .filter(|o| o.kind == "commit")
            .and_then(|o| o.body)
            .and_then(|b| Commit::parse(&b))
        else {
            ignore(ignored("its commit cannot be read".into()));
            continue;
        };
        match CloneRecord::read(&commit.message) {
            Ok(rec) if record::clone_key(&rec.clone) == key => snap.clones.push(SeenClone {
                key,
                commit: oid,
                seen: now.clone(),
                record: rec,
            }),
            Ok(_) => ignore(ignored("its name is not the hash of its clone id".into())),
            Err(why) => ignore(ignored(why)),
        }
    }
    Ok(snap)
}

/// The source of the warnings about the claims commit.
const CLAIMS: &str = "claims";

/// The source of the warnings about clone `key`'s record at commit `oid`.
fn clone_source(key: &str, oid: &str) -> String {
    format!("clone:{key}@{oid}")
}

/// A claim kept in the state, with its pattern parsed again (`None`: it does not parse). The
/// record was checked whole when it was read from the remote; the state is coord's own file.
pub(crate) fn revive(seen: &SeenClaim) -> Option<Claim> {
    let pattern = match (&seen.record.pattern, &seen.record.path) {
        (Some(p), None) => Pattern::parse(p).ok()?,
        (None, Some(p)) => Pattern::literal(p),
        _ => return None,
    };
    Some(Claim {
        seen: seen.clone(),
        pattern,
    })
}

/// Read the claims of commit `commit`, reusing the records `prev` read (same blob, same
/// version, same `seen`); also whether `commit` does not follow the commit `prev` read.
fn read_claims(
    r: &Remote,
    b: &mut Batch,
    commit: &str,
    prev: &State,
    now: &str,
    warnings: &mut Vec<String>,
) -> Result<(Claims, bool), git::Failed> {
    let mut out = Claims {
        commit: Some(commit.to_string()),
        ..Claims::default()
    };
    let ignored = |what: &str, why: String| {
        format!(
            "ignored {what} in `refs/coord/claims` on `{}`: {why}",
            r.name
        )
    };
    let Some(c) = b
        .get(commit)?
        .filter(|o| o.kind == "commit")
        .and_then(|o| o.body)
        .and_then(|b| Commit::parse(&b))
    else {
        warnings.push(ignored("everything", "its commit cannot be read".into()));
        return Ok((out, false));
    };
    out.generation = c
        .trailer("coord-generation")
        .and_then(|g| g.parse().ok())
        .unwrap_or(0);
    let rewritten = match &prev.claims_commit {
        Some(p) => !follows(b, commit, &c, p)?,
        None => false,
    };
    let Some(tree) = b
        .get(&c.tree)?
        .filter(|o| o.kind == "tree")
        .and_then(|o| o.body)
    else {
        warnings.push(ignored("everything", "its tree cannot be read".into()));
        return Ok((out, rewritten));
    };
    let raw_len = commit.len() / 2;
    // The clock that does not jump, read once: what each version is counted from (a version
    // first seen in another boot, or before it was counted, from now).
    let steady = super::steady::now();
    let known: HashMap<&str, &SeenClaim> =
        prev.claims.iter().map(|s| (s.blob.as_str(), s)).collect();
    for (mode, name, oid) in tree_entries(&tree, raw_len).into_iter().take(MAX_ENTRIES) {
        let what = format!("`{}`", record::short(&name));
        if !record::is_entry_name(&name) {
            warnings.push(ignored(&what, "it is not a name coord writes".into()));
            continue;
        }
        if mode != "100644" {
            warnings.push(ignored(&what, "it is not a file".into()));
            continue;
        }
        if let Some(old) = known.get(oid.as_str()) {
            let mut kept = (*old).clone();
            kept.name = name;
            kept.anchor(steady.as_ref());
            if let Some(c) = revive(&kept) {
                out.claims.push(c);
            }
            continue;
        }
        let Some(obj) = b.get(&oid)? else {
            warnings.push(ignored(&what, "its blob is missing".into()));
            continue;
        };
        if obj.kind != "blob" {
            warnings.push(ignored(&what, "it is not a file".into()));
            continue;
        }
        let body = match obj.body {
            Some(body) if body.len() <= record::CLAIM_CAP => body,
            _ => {
                warnings.push(ignored(&what, "it is too large".into()));
                continue;
            }
        };
        match ClaimRecord::read(&body) {
            Ok((rec, pattern)) => out.claims.push(Claim {
                seen: SeenClaim {
                    name,
                    blob: oid,
                    seen: now.to_string(),
                    steady: steady.clone(),
                    record: rec,
                },
                pattern,
            }),
            Err(why) => warnings.push(ignored(&what, why)),
        }
    }
    Ok((out, rewritten))
}

/// Whether commit `oid` (read as `c`) follows commit `prev`: `prev` is among its last
/// [`ANCESTRY_WALK`] ancestors, or the walk ends at a commit that squashed the history (or
/// goes further back than that). A root commit reached without either is a rewrite.
fn follows(b: &mut Batch, oid: &str, c: &Commit, prev: &str) -> Result<bool, git::Failed> {
    if oid == prev {
        return Ok(true);
    }
    let mut at = Commit {
        tree: c.tree.clone(),
        parents: c.parents.clone(),
        message: c.message.clone(),
    };
    for _ in 0..ANCESTRY_WALK {
        if at.parents.iter().any(|p| p == prev) {
            return Ok(true);
        }
        let Some(parent) = at.parents.first().cloned() else {
            return Ok(at.trailer("coord-squashed-from").is_some());
        };
        match b
            .get(&parent)?
            .and_then(|o| o.body)
            .and_then(|b| Commit::parse(&b))
        {
            Some(next) => at = next,
            None => return Ok(true),
        }
    }
    Ok(true)
}

/// The entries of a tree object: (mode, name, object id in hex); `raw_len` bytes an id.
fn tree_entries(tree: &[u8], raw_len: usize) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut rest = tree;
    while !rest.is_empty() {
        let Some(nul) = rest.iter().position(|b| *b == 0) else {
            break;
        };
        let head = String::from_utf8_lossy(&rest[..nul]).into_owned();
        let Some((mode, name)) = head.split_once(' ') else {
            break;
        };
        let Some(raw) = rest.get(nul + 1..nul + 1 + raw_len) else {
            break;
        };
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        out.push((mode.to_string(), name.to_string(), hex));
        rest = &rest[nul + 1 + raw_len..];
    }
    out
}

/// Take `snap` into `state` (unless the state already holds a newer read): the claims and
/// clones it read, what it ignored, and as news a rewrite of `refs/coord/claims` and each
/// claim of this clone gone from the remote without another taking it over.
pub(crate) fn absorb(state: &mut State, snap: &Snapshot, me: &str) {
    let newer = clock::parse_timestamp(&snap.at).is_none_or(|at| state.synced_by(&at));
    if !newer {
        return;
    }
    let mut news = Vec::new();
    if snap.rewritten {
        news.push(format!(
            "`refs/coord/claims` on `{}` was rewritten (forced to a commit that does not follow the one read before): its claims are now what it says",
            state.remote
        ));
    }
    let now: Vec<&str> = snap
        .claims
        .claims
        .iter()
        .map(|c| c.seen.name.as_str())
        .collect();
    for old in state.claims.iter().filter(|c| c.record.holder.clone == me) {
        if now.contains(&old.name.as_str()) {
            continue;
        }
        let taken = snap
            .claims
            .claims
            .iter()
            .any(|c| c.seen.record.taken_from.as_ref() == Some(&old.record.holder));
        if !taken {
            news.push(format!(
                "the claim on `{}` of {} (this clone) is gone from `{}` without a takeover: `refs/coord/claims` was rewritten or edited there",
                record::short(old.record.text()),
                old.record.holder.agent,
                state.remote
            ));
        }
    }
    set_claims(state, &snap.claims);
    state.clones = snap.clones.clone();
    state.ignored = snap.ignored.clone();
    state.news = news;
    state.synced_at = Some(snap.at.clone());
}

/// Set the state's claims to `claims`.
pub(crate) fn set_claims(state: &mut State, claims: &Claims) {
    state.claims_commit = claims.commit.clone();
    state.generation = claims.generation;
    state.claims = claims.claims.iter().map(|c| c.seen.clone()).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_object_is_split_into_its_entries() {
        let mut tree = Vec::new();
        tree.extend_from_slice(b"100644 0123456789abcdef0123456789abcdef\0");
        tree.extend_from_slice(&[0xab; 20]);
        tree.extend_from_slice(b"40000 sub\0");
        tree.extend_from_slice(&[0x01; 20]);
        let e = tree_entries(&tree, 20);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].0, "100644");
        assert_eq!(e[0].2, "ab".repeat(20));
        assert_eq!(e[1].1, "sub");
        // A truncated tree gives what it holds whole.
        assert_eq!(tree_entries(&tree[..70], 20).len(), 1);
    }

    #[test]
    fn a_commit_gives_its_tree_parents_and_trailers() {
        let body = b"tree aaaa\nparent bbbb\nauthor coord <coord> 1 +0000\n\nclaim `x`\n\ncoord-generation: 7\n";
        let c = Commit::parse(body).unwrap();
        assert_eq!(c.tree, "aaaa");
        assert_eq!(c.parents, vec!["bbbb".to_string()]);
        assert_eq!(c.trailer("coord-generation").as_deref(), Some("7"));
        assert!(Commit::parse(b"no tree here").is_none());
    }
}
