//! What changed between two looks at a workspace, as events: the feed of `coord watch`.

use serde::Serialize;

use super::Snapshot;
use crate::lock::deadlock::WaitEdge;
use crate::status::Status;

/// One change, as `coord watch --json` prints it (`event` names the kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Change {
    /// A presence appeared.
    AgentArrived {
        /// The agent's id.
        agent: String,
        /// Its status.
        status: String,
        /// What it works on.
        working_on: Option<String>,
    },
    /// An agent's heartbeat went older than the limit.
    AgentInactive {
        /// The agent's id.
        agent: String,
    },
    /// An agent said it is done.
    AgentFinished {
        /// The agent's id.
        agent: String,
    },
    /// An inactive or finished agent is active again.
    AgentActive {
        /// The agent's id.
        agent: String,
    },
    /// A presence file was removed.
    AgentLeft {
        /// The agent's id.
        agent: String,
    },
    /// A lock appeared.
    LockTaken {
        /// The locked file.
        file: String,
        /// The holder's id.
        agent: String,
        /// `locked_at` as written.
        locked_at: Option<String>,
        /// The reason given.
        reason: Option<String>,
    },
    /// A lock went away with no new holder.
    LockReleased {
        /// The file.
        file: String,
        /// The holder it had.
        agent: String,
    },
    /// A lock passed from one holder to another between two looks (a stale lock taken over, or
    /// released and taken at once).
    LockTakenOver {
        /// The file.
        file: String,
        /// The new holder's id.
        agent: String,
        /// The holder before.
        from: String,
    },
    /// A lock became STALE (it may be taken over).
    LockStale {
        /// The file.
        file: String,
        /// The holder's id.
        agent: String,
        /// Why it is stale.
        why: Option<String>,
    },
    /// An agent started waiting for a file.
    Waiting {
        /// The waiter's id.
        agent: String,
        /// The file.
        file: String,
        /// The holders it waits for.
        waits_for: Vec<String>,
    },
    /// An agent stopped waiting for a file (it got it, gave up, or was refused).
    WaitEnded {
        /// The waiter's id.
        agent: String,
        /// The file.
        file: String,
    },
    /// Agents wait for each other in a cycle.
    Deadlock {
        /// The cycle.
        cycle: Vec<WaitEdge>,
    },
    /// A message was sent.
    MessageSent {
        /// Its id.
        id: String,
        /// The sender's id.
        from: String,
        /// The recipient's id, or `all`.
        to: String,
    },
    /// The dialogue's turn passed (or the dialogue began or ended).
    TurnPassed {
        /// The dialogue folder.
        folder: String,
        /// Whose turn it was.
        from: Option<String>,
        /// Whose turn it is.
        to: Option<String>,
        /// The dialogue's state.
        state: Option<String>,
    },
    /// A review waits for someone (newly open, or its next step changed).
    ReviewWaiting {
        /// The topic.
        topic: String,
        /// Who acts next.
        next_actor: String,
        /// What they do next.
        next_action: Option<String>,
    },
    /// A review is no longer open.
    ReviewClosed {
        /// The topic.
        topic: String,
    },
}

/// The changes from `before` to `after`, in a stable order: agents, locks, waits, messages,
/// the dialogue, reviews.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    let (b, a) = (&before.status, &after.status);

    agents(b, a, &mut out);
    locks(b, a, &mut out);
    waits(b, a, &mut out);
    messages(before, after, &mut out);
    dialogue(b, a, &mut out);
    reviews(b, a, &mut out);
    out
}

/// Agents arrived, changed status, left.
fn agents(b: &Status, a: &Status, out: &mut Vec<Change>) {
    for agent in &a.agents {
        match b.agents.iter().find(|p| p.agent == agent.agent) {
            None => out.push(Change::AgentArrived {
                agent: agent.agent.clone(),
                status: agent.status.clone(),
                working_on: agent.working_on.clone(),
            }),
            Some(was) if was.status != agent.status => {
                let who = agent.agent.clone();
                out.push(match agent.status.as_str() {
                    "INACTIVE" => Change::AgentInactive { agent: who },
                    "FINISHED" => Change::AgentFinished { agent: who },
                    _ => Change::AgentActive { agent: who },
                });
            }
            Some(_) => {}
        }
    }
    for was in &b.agents {
        if !a.agents.iter().any(|p| p.agent == was.agent) {
            out.push(Change::AgentLeft {
                agent: was.agent.clone(),
            });
        }
    }
}

/// Locks taken, taken over, gone stale, released.
fn locks(b: &Status, a: &Status, out: &mut Vec<Change>) {
    let held = |s: &Status, file: &str, agent: &str| {
        s.locks.iter().any(|l| l.file == file && l.agent == agent)
    };
    for lock in &a.locks {
        match b
            .locks
            .iter()
            .find(|l| l.file == lock.file && l.agent == lock.agent)
        {
            Some(was) => {
                if was.state != lock.state && lock.state == crate::lock::LockState::Stale {
                    out.push(Change::LockStale {
                        file: lock.file.clone(),
                        agent: lock.agent.clone(),
                        why: lock.stale_reason.clone(),
                    });
                }
            }
            None => {
                let gone = b
                    .locks
                    .iter()
                    .find(|l| l.file == lock.file && !held(a, &l.file, &l.agent));
                out.push(match gone {
                    Some(old) => Change::LockTakenOver {
                        file: lock.file.clone(),
                        agent: lock.agent.clone(),
                        from: old.agent.clone(),
                    },
                    None => Change::LockTaken {
                        file: lock.file.clone(),
                        agent: lock.agent.clone(),
                        locked_at: lock.locked_at.clone(),
                        reason: lock.reason.clone(),
                    },
                });
            }
        }
    }
    for was in &b.locks {
        let replaced = a
            .locks
            .iter()
            .any(|l| l.file == was.file && !held(b, &l.file, &l.agent));
        if !held(a, &was.file, &was.agent) && !replaced {
            out.push(Change::LockReleased {
                file: was.file.clone(),
                agent: was.agent.clone(),
            });
        }
    }
}

/// Waits begun and ended; new deadlocks.
fn waits(b: &Status, a: &Status, out: &mut Vec<Change>) {
    for w in &a.waits {
        if !b
            .waits
            .iter()
            .any(|x| x.agent == w.agent && x.file == w.file)
        {
            out.push(Change::Waiting {
                agent: w.agent.clone(),
                file: w.file.clone(),
                waits_for: w.waits_for.clone(),
            });
        }
    }
    for w in &b.waits {
        if !a
            .waits
            .iter()
            .any(|x| x.agent == w.agent && x.file == w.file)
        {
            out.push(Change::WaitEnded {
                agent: w.agent.clone(),
                file: w.file.clone(),
            });
        }
    }
    for cycle in &a.deadlocks {
        if !b.deadlocks.contains(cycle) {
            out.push(Change::Deadlock {
                cycle: cycle.clone(),
            });
        }
    }
}

/// Messages sent.
fn messages(before: &Snapshot, after: &Snapshot, out: &mut Vec<Change>) {
    for m in &after.messages {
        if !before.messages.iter().any(|x| x.id == m.id) {
            out.push(Change::MessageSent {
                id: m.id.clone(),
                from: m.from.clone(),
                to: m.to.clone(),
            });
        }
    }
}

/// The dialogue's turn passed.
fn dialogue(b: &Status, a: &Status, out: &mut Vec<Change>) {
    let turn = |s: &Status| {
        s.dialogue
            .as_ref()
            .map(|d| (d.folder.clone(), d.turn.clone()))
    };
    if turn(b) != turn(a) {
        let folder = a
            .dialogue
            .as_ref()
            .or(b.dialogue.as_ref())
            .map(|d| d.folder.clone())
            .unwrap_or_default();
        out.push(Change::TurnPassed {
            folder,
            from: b.dialogue.as_ref().and_then(|d| d.turn.clone()),
            to: a.dialogue.as_ref().and_then(|d| d.turn.clone()),
            state: a.dialogue.as_ref().map(|d| d.state.clone()),
        });
    }
}

/// Reviews waiting for their next actor, and closed.
fn reviews(b: &Status, a: &Status, out: &mut Vec<Change>) {
    for r in &a.reviews {
        let same = b.reviews.iter().any(|x| {
            x.topic == r.topic && x.next_actor == r.next_actor && x.next_action == r.next_action
        });
        if !same {
            out.push(Change::ReviewWaiting {
                topic: r.topic.clone(),
                next_actor: r.next_actor.clone(),
                next_action: r.next_action.clone(),
            });
        }
    }
    for r in &b.reviews {
        if !a.reviews.iter().any(|x| x.topic == r.topic) {
            out.push(Change::ReviewClosed {
                topic: r.topic.clone(),
            });
        }
    }
}
