//! The live view behind `coord watch`: look at the workspace, wait for a change, say what changed
//! between two looks, as events.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::dialogue::DialogueSummary;
use crate::layout;
use crate::lock::deadlock::WaitEdge;
use crate::message::{self, Message};
use crate::status::{self, Status, WaitView};
use crate::workspace::Workspace;

/// The workspace at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Everything `coord status` shows.
    pub status: Status,
    /// The messages sent so far (bodies left out).
    pub messages: Vec<Message>,
}

/// Look at the workspace now (`before`: the last look). A message never changes once sent: one
/// seen before is not read again while it is there.
pub fn snapshot(ws: &Workspace, before: Option<&Snapshot>) -> Snapshot {
    let seen: HashMap<&str, &Message> = (before.iter().flat_map(|b| &b.messages))
        .map(|m| (m.id.as_str(), m))
        .collect();
    let still = RefCell::new(Vec::new());
    let known = |id: &str| {
        seen.get(id)
            .map(|m| still.borrow_mut().push((*m).clone()))
            .is_some()
    };
    let (new, skipped) = message::scan(ws.root(), known).unwrap_or_default();
    let mut messages: Vec<Message> = (new.into_iter())
        .map(|m| Message {
            body: String::new(),
            ..m
        })
        .chain(still.into_inner())
        .collect();
    messages.sort_by(|a, b| a.id.cmp(&b.id));
    let sent = (messages, skipped);
    Snapshot {
        status: status::collect(ws, Some(&sent)),
        messages: sent.0,
    }
}

/// The folders whose changes `coord watch` wakes on, for the workspace as `snap` saw it (`None`:
/// before a first look): the root, coord's state folders, the wait queues, the dialogue, the
/// open reviews, and the folders of the locks seen (a lock made by hand going away).
pub fn watched_folders(ws: &Workspace, snap: Option<&Snapshot>) -> Vec<PathBuf> {
    let root = ws.root();
    let shared = crate::worktree::shared_root(root);
    let queues = layout::queue_root(&shared);
    let mut dirs = vec![
        root.to_path_buf(),
        layout::state_dir(&shared),
        layout::held_dir(&shared),
        layout::messages_dir(&shared),
        layout::partners_dir(&shared),
        layout::review_active_dir(&root.join(layout::REVIEW_METADATA_DIR)),
    ];
    if let Ok(entries) = crate::fsutil::read_dir(&queues) {
        dirs.extend(entries.flatten().map(|q| q.path()));
    }
    dirs.push(queues);
    let status = snap.map(|s| &s.status);
    let dialogue = status.and_then(|s| s.dialogue.as_ref());
    dirs.extend(dialogue.map(|d| root.join(&d.folder)));
    for lock in status.iter().flat_map(|s| &s.locks) {
        dirs.extend(root.join(&lock.lock_file).parent().map(Path::to_path_buf));
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// One change, as `coord watch --json` prints it (`event` names the kind). The fields of each
/// are listed in docs/protocol.md (`coord watch`).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Change {
    /// A presence appeared.
    AgentArrived {
        agent: String,
        status: String,
        working_on: Option<String>,
    },
    /// An agent's heartbeat went older than the limit.
    AgentInactive { agent: String },
    /// An agent said it is done.
    AgentFinished { agent: String },
    /// An inactive or finished agent is active again.
    AgentActive { agent: String },
    /// A presence file was removed.
    AgentLeft { agent: String },
    /// A lock appeared.
    LockTaken {
        file: String,
        agent: String,
        locked_at: Option<String>,
        reason: Option<String>,
    },
    /// A lock went away with no new holder.
    LockReleased { file: String, agent: String },
    /// A lock passed from one holder to another between two looks (a stale lock taken over, or
    /// released and taken at once).
    LockTakenOver {
        file: String,
        agent: String,
        from: String,
    },
    /// A lock became STALE (it may be taken over).
    LockStale {
        file: String,
        agent: String,
        why: Option<String>,
    },
    /// An agent started waiting for a file.
    Waiting {
        agent: String,
        file: String,
        waits_for: Vec<String>,
    },
    /// An agent stopped waiting for a file (it got it, gave up, or was refused).
    WaitEnded { agent: String, file: String },
    /// Agents wait for each other in a cycle.
    Deadlock { cycle: Vec<WaitEdge> },
    /// A message was sent.
    MessageSent {
        id: String,
        from: String,
        to: String,
    },
    /// The dialogue's turn passed (or the dialogue began or ended).
    TurnPassed {
        folder: String,
        from: Option<String>,
        to: Option<String>,
        state: Option<String>,
    },
    /// A review waits for someone (newly open, or its next step changed).
    ReviewWaiting {
        topic: String,
        next_actor: String,
        next_action: Option<String>,
    },
    /// A review is no longer open.
    ReviewClosed { topic: String },
}

/// The changes from `before` to `after`, in a stable order: agents, locks, waits, messages,
/// the dialogue, reviews.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    let (b, a) = (&before.status, &after.status);
    agents(b, a, &mut out);
    locks(b, a, &mut out);
    // Waits begun and ended; new deadlocks.
    let same = |x: &WaitView, y: &WaitView| x.agent == y.agent && x.file == y.file;
    out.extend(only_in(&a.waits, &b.waits, same).map(|w| Change::Waiting {
        agent: w.agent.clone(),
        file: w.file.clone(),
        waits_for: w.waits_for.clone(),
    }));
    let ended = only_in(&b.waits, &a.waits, same);
    out.extend(ended.map(|w| Change::WaitEnded {
        agent: w.agent.clone(),
        file: w.file.clone(),
    }));
    let cycles = only_in(&a.deadlocks, &b.deadlocks, |x, y| x == y).cloned();
    out.extend(cycles.map(|cycle| Change::Deadlock { cycle }));
    let sent = only_in(&after.messages, &before.messages, |x, y| x.id == y.id);
    out.extend(sent.map(|m| Change::MessageSent {
        id: m.id.clone(),
        from: m.from.clone(),
        to: m.to.clone(),
    }));
    // The dialogue's turn passed.
    let (bd, ad) = (b.dialogue.as_ref(), a.dialogue.as_ref());
    let turn = |d: &DialogueSummary| (d.folder.clone(), d.turn.clone());
    if bd.map(turn) != ad.map(turn) {
        out.push(Change::TurnPassed {
            folder: ad.or(bd).map(|d| d.folder.clone()).unwrap_or_default(),
            from: bd.and_then(|d| d.turn.clone()),
            to: ad.and_then(|d| d.turn.clone()),
            state: ad.map(|d| d.state.clone()),
        });
    }
    // Reviews waiting for their next actor, and closed.
    let waiting = only_in(&a.reviews, &b.reviews, |x, y| {
        x.topic == y.topic && x.next_actor == y.next_actor && x.next_action == y.next_action
    });
    out.extend(waiting.map(|r| Change::ReviewWaiting {
        topic: r.topic.clone(),
        next_actor: r.next_actor.clone(),
        next_action: r.next_action.clone(),
    }));
    let closed = only_in(&b.reviews, &a.reviews, |x, y| x.topic == y.topic);
    out.extend(closed.map(|r| Change::ReviewClosed {
        topic: r.topic.clone(),
    }));
    out
}

/// The items of `these` that `same` finds in none of `others`.
fn only_in<'a, T>(
    these: &'a [T],
    others: &'a [T],
    same: impl Fn(&T, &T) -> bool + 'a,
) -> impl Iterator<Item = &'a T> + 'a {
    these
        .iter()
        .filter(move |x| !others.iter().any(|y| same(x, y)))
}

/// Agents arrived, changed status, left.
fn agents(b: &Status, a: &Status, out: &mut Vec<Change>) {
    for agent in &a.agents {
        let who = agent.agent.clone();
        match b.agents.iter().find(|p| p.agent == agent.agent) {
            None => out.push(Change::AgentArrived {
                agent: who,
                status: agent.status.clone(),
                working_on: agent.working_on.clone(),
            }),
            Some(was) if was.status != agent.status => out.push(match agent.status.as_str() {
                "INACTIVE" => Change::AgentInactive { agent: who },
                "FINISHED" => Change::AgentFinished { agent: who },
                _ => Change::AgentActive { agent: who },
            }),
            Some(_) => {}
        }
    }
    let left = only_in(&b.agents, &a.agents, |x, y| x.agent == y.agent);
    out.extend(left.map(|was| Change::AgentLeft {
        agent: was.agent.clone(),
    }));
}

/// Locks taken, taken over, gone stale, released.
fn locks(b: &Status, a: &Status, out: &mut Vec<Change>) {
    fn held<'a>(s: &'a Status, file: &str, agent: &str) -> Option<&'a status::LockView> {
        (s.locks.iter()).find(|l| l.file == file && l.agent == agent)
    }
    for lock in &a.locks {
        let (file, agent) = (lock.file.clone(), lock.agent.clone());
        if let Some(was) = held(b, &lock.file, &lock.agent) {
            if was.state != lock.state && lock.state == crate::lock::LockState::Stale {
                let why = lock.stale_reason.clone();
                out.push(Change::LockStale { file, agent, why });
            }
            continue;
        }
        let gone = b
            .locks
            .iter()
            .find(|l| l.file == lock.file && held(a, &l.file, &l.agent).is_none());
        out.push(match gone {
            Some(old) => Change::LockTakenOver {
                file,
                agent,
                from: old.agent.clone(),
            },
            None => Change::LockTaken {
                file,
                agent,
                locked_at: lock.locked_at.clone(),
                reason: lock.reason.clone(),
            },
        });
    }
    for was in &b.locks {
        let replaced = a
            .locks
            .iter()
            .any(|l| l.file == was.file && held(b, &l.file, &l.agent).is_none());
        if held(a, &was.file, &was.agent).is_none() && !replaced {
            let (file, agent) = (was.file.clone(), was.agent.clone());
            out.push(Change::LockReleased { file, agent });
        }
    }
}
