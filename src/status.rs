//! Everything at once, for `coord status`: agents, locks, handshakes (and whether Protocol V3 is
//! active), online stamp-card sessions, unread messages, the open dialogue, open reviews, and the
//! state files that could not be read. Reading only: building a status never writes a byte.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::client::Client;
use crate::clock::{self, Timestamp};
use crate::conflicts::Side;
use crate::dialogue::{self, DialogueSummary};
use crate::handshake;
use crate::lock::deadlock::{self, WaitEdge};
use crate::lock::queue::{self, Waiter};
use crate::lock::{self, LockEntry, LockState};
use crate::message::{self, Message};
use crate::presence::{self, LockStatus, Presence, StateCache, Unreadable};
use crate::review::{self, rules::ReviewSummary};
use crate::stamp::{self, RowStatus};
use crate::workspace::Workspace;
use crate::worktree::{Tree, shared_root};

/// One agent, as `status` shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentView {
    /// The id.
    pub agent: String,
    /// The display name.
    pub name: String,
    /// ACTIVE, INACTIVE or FINISHED.
    pub status: String,
    /// The heartbeat as written (or the file's mtime when unreadable).
    pub heartbeat: Option<String>,
    /// Seconds since the heartbeat.
    pub heartbeat_age_s: Option<u64>,
    /// When the agent started.
    pub started: Option<String>,
    /// What it works on.
    pub working_on: Option<String>,
    /// The file it works on.
    pub current_file: Option<String>,
    /// FREE, LOCKED or WAITING.
    pub lock_status: Option<String>,
    /// Its client waits for its user: since when and what it asks (null when not).
    pub needs_user: Option<crate::history::NeedsUser>,
    /// The top level of the work tree it last acted in.
    pub worktree: Option<String>,
    /// The branch checked out there (null: detached, or not in git).
    pub branch: Option<String>,
    /// The agent client whose session this agent is (`claude`, `codex`, ...), when known.
    pub client: Option<String>,
    /// The session's first prompt, one short line, when its client said it.
    pub prompt: Option<String>,
    /// What it holds: the files it locked and the patterns it claimed.
    pub holds: Vec<String>,
    /// One line mapping the agent to a terminal: client, work tree and branch, prompt or task.
    pub label: String,
}

/// One lock, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LockView {
    /// The locked file, relative to the root.
    pub file: String,
    /// The holder's id.
    pub agent: String,
    /// The holder's display name.
    pub name: String,
    /// `locked_at` as written, or the file's mtime.
    pub locked_at: Option<String>,
    /// Seconds since then.
    pub age_s: Option<u64>,
    /// LIVE, STALE or CONFLICT.
    pub state: LockState,
    /// Why it is stale.
    pub stale_reason: Option<String>,
    /// The reason given by the holder.
    pub reason: Option<String>,
    /// The process the lock follows.
    pub pid: Option<u32>,
    /// The session it was taken in.
    pub session: Option<String>,
    /// The lock file, relative to the root (absolute when it lies in another work tree).
    pub lock_file: String,
    /// The agent client whose hook took it (`claude`, `codex`, ...), if one did.
    pub client: Option<String>,
    /// The top level of the work tree holding the lock file.
    pub worktree: Option<String>,
    /// The branch checked out there (null: detached, or not in git).
    pub branch: Option<String>,
}

/// One claim on a folder or pattern, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimView {
    /// The pattern, relative to the root (a folder is `dir/**`).
    pub pattern: String,
    /// The holder's id.
    pub agent: String,
    /// The holder's display name.
    pub name: String,
    /// When it was claimed, as written.
    pub since: Option<String>,
    /// Seconds since then.
    pub age_s: Option<u64>,
    /// The reason given by the holder.
    pub reason: Option<String>,
    /// LIVE, STALE or CONFLICT.
    pub state: LockState,
    /// Why it is stale.
    pub stale_reason: Option<String>,
    /// The top level of the work tree it was claimed in.
    pub worktree: Option<String>,
    /// The branch checked out there.
    pub branch: Option<String>,
    /// The process the claim follows.
    pub pid: Option<u32>,
}

fn claim_view(e: &LockEntry, now: &Timestamp) -> ClaimView {
    let field = |k: &str| e.record.as_ref()?.get_nonempty(k).map(str::to_string);
    ClaimView {
        pattern: e.file.clone(),
        agent: e.agent.clone(),
        name: e.holder().to_string(),
        since: e.locked_at().map(str::to_string),
        age_s: e.since.as_ref().map(|t| clock::age(now, t).as_secs()),
        reason: e.reason().map(str::to_string),
        state: e.state,
        stale_reason: e.stale_why.clone(),
        worktree: field("worktree"),
        branch: field("branch"),
        pid: e.process().map(|(p, _)| p),
    }
}

/// One online session of the stamp card.
#[derive(Debug, Clone, Serialize)]
pub struct PartnerView {
    /// The row id.
    pub id: u64,
    /// The partner.
    pub partner_name: String,
    /// The session id.
    pub session_id: String,
    /// When it clocked in.
    pub clocked_in: String,
    /// Its last heartbeat.
    pub last_heartbeat: Option<String>,
    /// Seconds since then.
    pub heartbeat_age_s: Option<u64>,
    /// What it works on.
    pub current_task: Option<String>,
}

/// One waiter, as `status` shows it: who waits for which file, held by whom.
#[derive(Debug, Clone, Serialize)]
pub struct WaitView {
    /// The waiter's id.
    pub agent: String,
    /// The waiter's display name.
    pub name: String,
    /// The file it waits for.
    pub file: String,
    /// The ids of the agents holding that file (empty: it is free, earlier waiters go first).
    pub waits_for: Vec<String>,
    /// Its place in that file's queue, 1 for the first.
    pub position: usize,
    /// When it started waiting, as written in its ticket.
    pub since: Option<String>,
}

/// The whole workspace at a glance.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    /// The workspace root: the top level of the work tree this view was asked in.
    pub root: String,
    /// Where the state lives: the main work tree's top level, shared by every work tree.
    pub shared_root: String,
    /// The branch checked out in `root` (null: detached, or not in git).
    pub branch: Option<String>,
    /// The work trees sharing the workspace, `root`'s own first.
    pub worktrees: Vec<Side>,
    /// Agents with a presence file.
    pub agents: Vec<AgentView>,
    /// Every lock file.
    pub locks: Vec<LockView>,
    /// Every claim on a folder or pattern.
    pub claims: Vec<ClaimView>,
    /// Who waits for which file, in queue order (the wait queue's live tickets).
    pub waits: Vec<WaitView>,
    /// Cycles of agents waiting for each other (each one a deadlock), as wait-for edges.
    pub deadlocks: Vec<Vec<WaitEdge>>,
    /// Handshake files, one entry per block.
    pub handshakes: Vec<handshake::Block>,
    /// At least one pair of agents has exchanged a handshake with an ACCEPTED.
    pub protocol_v3_active: bool,
    /// Stamp-card sessions that are `online`.
    pub partners: Vec<PartnerView>,
    /// Unread messages per agent with a presence (every such agent is listed, zero included).
    pub unread: BTreeMap<String, usize>,
    /// Open reviews (seed 003 trackers under `.metadata/reviews/active/`).
    pub reviews: Vec<ReviewSummary>,
    /// State files that could not be read.
    pub unreadable: Vec<Unreadable>,
    /// The dialogue in `agent-dialogue/`, null when there is none.
    pub dialogue: Option<DialogueSummary>,
    /// Workspaces inside this one (their own agents, locks and messages).
    pub nested: Vec<Nested>,
    /// Files two or more work trees' branches changed (filled by [`document`] only).
    pub conflicts: Vec<crate::conflicts::Conflict>,
    /// Why `conflicts` is incomplete, when it is.
    pub conflicts_note: Option<String>,
    /// The other clones' claims and agents as last synced (contract §13); filled by
    /// [`document`] only, null where claims are not shared through a remote.
    pub remote: Option<RemoteStatus>,
}

/// The remote's part of [`Status`]: `coord remote status --json`'s document, its warnings,
/// and the remote branches that changed this branch's files.
#[derive(Debug, Clone)]
pub struct RemoteStatus {
    /// The state as last synced (no network).
    pub view: crate::remote::View,
    /// The remote's URL, when git knows it.
    pub url: Option<String>,
    /// The remote's branches (as last fetched) that changed this work tree's branch's files.
    pub branches: Vec<crate::conflicts::RemoteBranch>,
}

impl Serialize for RemoteStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut doc = self.view.to_json(self.url.as_deref());
        doc["warnings"] = serde_json::json!(self.view.warnings);
        doc["branches"] = serde_json::json!(self.branches);
        doc.serialize(s)
    }
}

/// What a session's start tells its agent: agents, locks (no walk of the tree: coord's from its
/// index, those made by hand at hand), claims, reviews and dialogue.
pub fn glance(ws: &Workspace) -> Status {
    Status {
        reviews: review::rules::open_reviews(ws).0,
        ..look(ws, &clock::now(), false).0
    }
}

/// What both views start from: agents, locks (those made by hand found by a `walk`, or at hand),
/// claims, dialogue and unreadable files; the agents' states; every lock judged; and the work
/// trees when there is a lock to place (each reads its branch once, for locks and agents alike).
fn look(
    ws: &Workspace,
    now: &Timestamp,
    walk: bool,
) -> (Status, StateCache, Vec<LockEntry>, Option<Vec<Tree>>) {
    let (presences, mut unreadable) = presence::scan(ws.root());
    let mut cache = StateCache::from_presences(&presences, now);
    let hand = match walk {
        true => lock::HandMade::Walk,
        false => lock::HandMade::AtHand(&presences),
    };
    let entries = lock::scan_judged(ws, &mut cache, now, hand);
    // Read only for locks to place (a session's start has no other use for them).
    let trees = (!entries.is_empty()).then(|| crate::worktree::trees(ws.root()));
    let locks = entries
        .iter()
        .map(|e| lock_view(e, ws, now, trees.as_deref().unwrap_or_default()));
    let (claims, claims_unread) = lock::claim::judged_or_unreadable(ws.root(), &mut cache, now);
    unreadable.extend(lock::unreadable(&entries, ws));
    unreadable.extend(claims_unread);
    let st = Status {
        root: ws.root().display().to_string(),
        agents: presences.iter().map(|p| agent_view(p, now)).collect(),
        locks: locks.chain(gone_tree_locks(&presences, now)).collect(),
        claims: claims.iter().map(|c| claim_view(&c.entry, now)).collect(),
        unreadable,
        dialogue: dialogue::summary(ws),
        ..Status::default()
    };
    (st, cache, entries, trees)
}

/// How long a FINISHED agent stays in the view.
const FADE_AFTER_S: u64 = 3600;

/// The document `coord status` shows: [`collect`] with the conflicts and the remote (as last
/// synced; never the network, within [`crate::conflicts::BUDGET`]), without agents finished
/// over `FADE_AFTER_S` ago unless `all`.
pub fn document(ws: &Workspace, all: bool) -> Status {
    let mut st = collect(ws, None);
    let deadline = std::time::Instant::now() + crate::conflicts::BUDGET;
    (st.conflicts, st.conflicts_note) = crate::conflicts::view(ws, deadline);
    st.remote = crate::remote::view(ws).map(|mut view| RemoteStatus {
        url: crate::remote::remote_url(ws.root(), &view.remote),
        branches: crate::conflicts::remote_branches(ws.root(), &view.remote, deadline),
        view: {
            // This clone's own claims and agents are in the view already.
            view.claims.retain(|c| !c.mine);
            view.agents.retain(|a| !a.mine);
            view
        },
    });
    if !all {
        st.agents.retain(|a| {
            a.status != "FINISHED" || a.heartbeat_age_s.is_none_or(|age| age <= FADE_AFTER_S)
        });
    }
    st
}

/// Build an [`AgentView`] from a presence.
pub fn agent_view(p: &Presence, now: &Timestamp) -> AgentView {
    let hb = p.heartbeat();
    let field = |k: &str| p.field(k).map(str::to_string);
    let mut view = AgentView {
        agent: p.id.clone(),
        name: p.name().to_string(),
        status: p.state(now).as_str().to_string(),
        heartbeat: field("heartbeat").or_else(|| hb.as_ref().map(clock::format_timestamp)),
        heartbeat_age_s: hb.map(|h| clock::age(now, &h).as_secs()),
        started: field("started"),
        working_on: field("working_on"),
        current_file: field("current_file"),
        lock_status: field("lock_status"),
        worktree: field(crate::worktree::PRESENCE_KEY),
        // Else the client a session agent's id names (`claude-3f2a9c1b` → `claude`).
        client: field("client")
            .or_else(|| Client::parse(p.id.split_once('-')?.0).map(|c| c.as_str().to_string())),
        prompt: field("prompt"),
        holds: p.locks(),
        ..AgentView::default()
    };
    view.label = agent_label(&view, false);
    view
}

/// The label of an agent (see [`AgentView::label`]); `several`: name its tree and branch.
fn agent_label(a: &AgentView, several: bool) -> String {
    let own = |c: &String| !a.agent.starts_with(&format!("{c}-"));
    let mut parts: Vec<String> = a.client.clone().into_iter().filter(own).collect();
    if several {
        let tree = a.worktree.as_deref().map(crate::worktree::short_name);
        parts.extend(tree.map(str::to_string));
        parts.extend(a.branch.clone());
    }
    parts.extend(a.task());
    parts.join(" · ")
}

impl AgentView {
    /// What it works on, as people read it: its prompt quoted, else its task.
    pub fn task(&self) -> Option<String> {
        match (&self.prompt, self.working_on.as_deref()) {
            (Some(p), _) => Some(format!("\"{p}\"")),
            (None, Some(w)) if w != "-" => Some(w.to_string()),
            _ => None,
        }
    }
}

/// Correct each agent's `lock_status` where its presence is wrong (its writer killed, its locks
/// taken over): `holding` have a lock or claim in any state, `waiters` hold a live ticket.
pub fn settle_lock_status<'a>(
    agents: &mut [AgentView],
    holding: impl IntoIterator<Item = &'a str>,
    waiters: &[Waiter],
) {
    let holding: HashSet<&str> = holding.into_iter().collect();
    for a in agents {
        let holds = holding.contains(a.agent.as_str());
        let waits = waiters.iter().any(|w| w.agent == a.agent);
        let true_now = match a.lock_status.as_deref() {
            Some(s) if s.eq_ignore_ascii_case(LockStatus::Locked.as_str()) => holds,
            Some(s) if s.eq_ignore_ascii_case(LockStatus::Waiting.as_str()) => waits,
            _ => !holds && !waits,
        };
        if true_now {
            continue;
        }
        let now = match (holds, waits) {
            (true, _) => LockStatus::Locked,
            (_, true) => LockStatus::Waiting,
            _ => LockStatus::Free,
        };
        if now == LockStatus::Free {
            a.current_file = None;
        }
        a.lock_status = Some(now.as_str().to_string());
    }
}

/// The locks an agent's presence lists in a work tree that is gone (`git worktree remove` while
/// it held them): shown STALE, never silently dropped.
fn gone_tree_locks(presences: &[Presence], now: &Timestamp) -> Vec<LockView> {
    let mut out = Vec::new();
    for p in presences {
        let gone = |t: &&str| crate::worktree::is_gone(std::path::Path::new(t));
        let Some(tree) = p.field(crate::worktree::PRESENCE_KEY).filter(gone) else {
            continue;
        };
        let top = std::path::Path::new(tree);
        for file in p.locks() {
            let lock_path = crate::layout::lock_file(&top.join(&file), &p.id);
            out.push(LockView {
                file,
                agent: p.id.clone(),
                name: p.name().to_string(),
                locked_at: p.field("heartbeat").map(str::to_string),
                age_s: p.heartbeat().map(|h| clock::age(now, &h).as_secs()),
                state: LockState::Stale,
                stale_reason: Some(format!(
                    "its work tree `{tree}` is gone (removed while the lock was held)"
                )),
                reason: None,
                pid: None,
                session: None,
                lock_file: lock_path.display().to_string(),
                client: None,
                worktree: Some(tree.to_string()),
                branch: None,
            });
        }
    }
    out
}

/// Build a [`LockView`] from a judged lock entry, placed among the workspace's `trees`.
pub fn lock_view(e: &LockEntry, ws: &Workspace, now: &Timestamp, trees: &[Tree]) -> LockView {
    let tree = crate::worktree::tree_of(trees, &e.lock_path);
    LockView {
        file: e.file.clone(),
        agent: e.agent.clone(),
        name: e.holder().to_string(),
        locked_at: e
            .locked_at()
            .map(str::to_string)
            .or_else(|| e.since.as_ref().map(clock::format_timestamp)),
        age_s: e.since.as_ref().map(|s| clock::age(now, s).as_secs()),
        state: e.state,
        stale_reason: e.stale_why.clone(),
        reason: e.reason().map(str::to_string),
        pid: e.process().map(|(pid, _)| pid),
        session: e.session().map(str::to_string),
        lock_file: ws
            .rel(&e.lock_path)
            .unwrap_or_else(|| e.lock_path.display().to_string()),
        client: e.client_session().map(|(c, _)| c.to_string()),
        worktree: tree.as_ref().map(|t| t.top.display().to_string()),
        branch: tree.and_then(|t| t.branch()),
    }
}

/// Who holds one file or claim (`coord who`): its locks with their holders' tasks, and claims.
#[derive(Debug, Clone, Serialize)]
pub struct FileHolders {
    /// The file, relative to the root (a claim: its pattern).
    pub file: String,
    /// Whether `file` is a claim's pattern.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub claim: bool,
    /// Its locks (none when it is free), each as `status` shows it plus `working_on`.
    pub locks: Vec<Holder>,
    /// The claims whose pattern matches it (a claim: overlaps it).
    pub claims: Vec<ClaimView>,
}

/// One lock on a file, with what its holder works on.
#[derive(Debug, Clone, Serialize)]
pub struct Holder {
    /// The lock.
    #[serde(flatten)]
    pub lock: LockView,
    /// The holder's task, from its presence.
    pub working_on: Option<String>,
}

/// Who holds each of `args` (files and claims, see [`Workspace::file_arg`]), as of now, and the
/// claims file when it cannot be read (its claims still hold but cannot be shown).
pub fn who(
    ws: &Workspace,
    args: &[crate::workspace::FileArg],
) -> (Vec<FileHolders>, Option<Unreadable>) {
    use crate::workspace::FileArg;
    let now = clock::now();
    let mut cache = StateCache::default();
    let (all_claims, unreadable) = lock::claim::judged_or_unreadable(ws.root(), &mut cache, &now);
    let trees = crate::worktree::trees(ws.root());
    let holder = |e: &LockEntry| Holder {
        lock: lock_view(e, ws, &now, &trees),
        working_on: presence::read(ws.root(), &e.agent)
            .ok()
            .flatten()
            .and_then(|p| p.field("working_on").map(str::to_string)),
    };
    let targets: Vec<crate::workspace::Target> = args
        .iter()
        .filter_map(|a| match a {
            FileArg::File(t) => Some(t.clone()),
            FileArg::Claim(_) => None,
        })
        .collect();
    let mut of_files = lock::locks_of_each(&targets).into_iter();
    // Every lock, only when a claim is asked about.
    let every: Vec<LockEntry> = if args.iter().any(|a| matches!(a, FileArg::Claim(_))) {
        lock::scan_judged(ws, &mut cache, &now, lock::HandMade::Walk)
    } else {
        Vec::new()
    };
    let files = args
        .iter()
        .map(|a| {
            // A file is asked about as the pattern that matches it alone.
            let (pattern, locks) = match a {
                FileArg::File(t) => {
                    let mut entries = of_files.next().unwrap_or_default();
                    lock::classify(ws.root(), &mut entries, &mut cache, &now);
                    let locks = entries.iter().map(holder).collect();
                    (crate::pattern::Pattern::literal(&t.rel), locks)
                }
                FileArg::Claim(p) => {
                    let hits = every.iter().filter(|e| p.matches(&e.file));
                    (p.clone(), hits.map(holder).collect())
                }
            };
            let claims = all_claims.iter().filter(|c| c.pattern.overlaps(&pattern));
            FileHolders {
                file: pattern.as_str().to_string(),
                claim: matches!(a, FileArg::Claim(_)),
                claims: claims.map(|c| claim_view(&c.entry, &now)).collect(),
                locks,
            }
        })
        .collect();
    (files, unreadable)
}

/// Read the whole workspace (`sent`: every message and the message files that cannot be read,
/// when a live view keeps them already).
pub fn collect(ws: &Workspace, sent: Option<&(Vec<Message>, Vec<Unreadable>)>) -> Status {
    let now = clock::now();
    let (mut st, mut cache, entries, trees) = look(ws, &now, true);
    // No lock to place: the trees are read for the agents.
    let trees = trees.unwrap_or_else(|| crate::worktree::trees(ws.root()));
    let waiters = queue::waiters(ws.root());
    let edges = deadlock::edges(ws, &waiters, &mut cache, &now);
    st.waits = (waiters.iter().enumerate())
        .map(|(i, w)| WaitView {
            agent: w.agent.clone(),
            name: w.name.clone(),
            file: w.file.clone(),
            waits_for: edges
                .iter()
                .filter(|e| e.agent == w.agent && e.file == w.file)
                .map(|e| e.holder.clone())
                .collect(),
            // The waiters of its file up to it, itself included.
            position: waiters[..=i].iter().filter(|x| x.file == w.file).count(),
            since: w.since.clone(),
        })
        .collect();
    st.deadlocks = deadlock::cycles(&edges);
    let (blocks, bad_handshakes) = handshake::scan(ws.root());
    st.unreadable.extend(bad_handshakes);
    st.protocol_v3_active = handshake::v3_active(&blocks);
    st.handshakes = blocks;
    // The online rows only: the card keeps every session ever.
    let (rows, bad_rows) = stamp::open_rows(ws.root());
    st.unreadable.extend(bad_rows);
    st.partners = (rows.into_iter())
        .filter(|r| r.status == RowStatus::Online)
        .map(|r| PartnerView {
            heartbeat_age_s: r.heartbeat_age(&now).map(|a| a.as_secs()),
            id: r.id,
            partner_name: r.partner_name,
            session_id: r.session_id,
            clocked_in: r.clocked_in,
            last_heartbeat: r.last_heartbeat,
            current_task: r.current_task,
        })
        .collect();
    let (reviews, bad_trackers) = review::rules::open_reviews(ws);
    st.unreadable.extend(bad_trackers);
    st.reviews = reviews;
    let ids: Vec<String> = st.agents.iter().map(|a| a.agent.clone()).collect();
    let (unread, bad_messages) = match sent {
        Some((all, bad)) => (message::unread_counts_among(ws, &ids, all), bad.clone()),
        None => message::unread_counts(ws, &ids),
    };
    st.unreadable.extend(bad_messages);
    st.unread = unread;
    let holding = st.locks.iter().map(|l| l.agent.as_str());
    let holding = holding.chain(st.claims.iter().map(|c| c.agent.as_str()));
    settle_lock_status(&mut st.agents, holding, &waiters);
    let several = trees.len() > 1;
    st.shared_root = shared_root(ws.root()).display().to_string();
    let mut waiting = crate::history::waiting(ws.root());
    for a in &mut st.agents {
        // An agent that clocked out waits for no one, whatever a file left behind says.
        a.needs_user = (waiting.remove(&a.agent))
            .filter(|_| a.status != presence::AgentState::Finished.as_str());
        let top = a.worktree.clone().unwrap_or_else(|| st.shared_root.clone());
        let tree = trees.iter().find(|t| t.top.as_os_str() == top.as_str());
        a.branch = tree.and_then(crate::worktree::Tree::branch);
        a.worktree = Some(top);
        let locked = (st.locks.iter())
            .filter(|l| l.agent == a.agent)
            .map(|l| l.file.clone());
        let claimed = st.claims.iter().filter(|c| c.agent == a.agent);
        a.holds = locked.chain(claimed.map(|c| c.pattern.clone())).collect();
        a.holds.dedup();
        a.label = agent_label(a, several);
    }
    st.worktrees = trees.iter().map(Side::of).collect();
    st.branch = st.worktrees.first().and_then(|t| t.branch.clone());
    // Those waiting for their user first, in the order they started waiting (a stable sort).
    st.agents
        .sort_by(|a, b| match (&a.needs_user, &b.needs_user) {
            (Some(x), Some(y)) => x.since.cmp(&y.since),
            (x, y) => y.is_some().cmp(&x.is_some()),
        });
    let files: Vec<&str> = entries.iter().map(|e| e.file.as_str()).collect();
    st.nested = nested(ws, &files);
    st
}

/// A workspace inside this one (see [`crate::workspace::nested`]).
#[derive(Debug, Clone, Serialize)]
pub struct Nested {
    /// Its root, relative to this root, with `/` separators.
    pub root: String,
    /// The agents with a presence there.
    pub agents: Vec<NestedAgent>,
}

/// An agent of a nested workspace, as its presence says.
#[derive(Debug, Clone, Serialize)]
pub struct NestedAgent {
    /// The agent's id.
    pub agent: String,
    /// Its display name.
    pub name: String,
    /// `ACTIVE`, `INACTIVE` or `FINISHED`.
    pub status: String,
    /// What it works on.
    pub working_on: Option<String>,
}

/// The workspaces inside `ws` (registered, or holding one of `files`), with their agents.
pub fn nested(ws: &Workspace, files: &[&str]) -> Vec<Nested> {
    let now = clock::now();
    crate::workspace::nested::roots(ws.root(), files)
        .into_iter()
        .map(|rel| Nested {
            agents: presence::scan(&ws.root().join(&rel))
                .0
                .iter()
                .map(|p| NestedAgent {
                    agent: p.id.clone(),
                    name: p.name().to_string(),
                    status: p.state(&now).as_str().to_string(),
                    working_on: p.field("working_on").map(str::to_string),
                })
                .collect(),
            root: rel,
        })
        .collect()
}

/// The nested workspace where `agent` has a presence, when it has none in `ws` itself (a
/// message sent here would wait in an inbox it never reads).
pub fn nested_home(ws: &Workspace, agent: &str) -> Option<Nested> {
    let shared = shared_root(ws.root());
    if std::fs::symlink_metadata(crate::layout::presence(&shared, agent)).is_ok() {
        return None;
    }
    let locks = lock::scan_tree(ws);
    let files: Vec<&str> = locks.iter().map(|l| l.file.as_str()).collect();
    nested(ws, &files)
        .into_iter()
        .find(|n| n.agents.iter().any(|a| a.agent == agent))
}
