//! Standing in line: the guard that leaves the queue (and resets `WAITING`) when an acquire ends
//! without the lock, and the deadlock check made every time a request would wait.

use super::super::own_locks_listed;
use super::Tries;
use super::wake::Waits;
use crate::clock;
use crate::error::Error;
use crate::lock::deadlock::{self, WaitEdge};
use crate::lock::queue::{self, Tickets, Waiter};
use crate::presence::{self, StateCache};
use crate::workspace::{AgentId, Workspace};

/// Leaves the queue and resets `WAITING` if an acquire ends without the lock.
impl Drop for Tries<'_> {
    fn drop(&mut self) {
        let Some(tickets) = self.tickets.take() else {
            return;
        };
        // How we sleep goes first (its watches and hand-off), then our place in line.
        self.waits = Waits::default();
        // A stop request ended the wait: cleaning up still takes the mutex, waiting a little.
        let mutex = crate::wait::finishing(|| self.ws.lock_mutex_within(CLEANUP_PATIENCE));
        match mutex {
            Ok(_mutex) => settle(self.ws, &self.req.agent, &tickets),
            // The tickets stay, dead once we are gone; their locks go now (`coord mcp` lives on).
            Err(_) => {
                for path in &tickets.paths {
                    crate::wait::handoff::let_go(path);
                }
            }
        }
    }
}

/// How long leaving the queue waits for the workspace mutex when the wait ended early.
const CLEANUP_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Leave the queue and say in the presence whether we still hold anything. Caller holds the mutex.
pub(super) fn settle(ws: &Workspace, agent: &AgentId, tickets: &Tickets) {
    queue::leave(tickets);
    let old = presence::read(ws.root(), agent.id()).ok().flatten();
    let held = own_locks_listed(ws, agent, old.as_ref());
    let update = presence::Update {
        lock_status: Some(super::super::release::holding(&held)),
        ..Default::default()
    };
    let _ = presence::write_over(ws.root(), agent, old.as_ref(), &update);
}

/// The deadlock waiting for `targets` would close, if any: who waits for whom leads back to us.
pub(super) fn deadlock(tries: &Tries) -> Option<Error> {
    let (ws, req, targets, tickets) = (tries.ws, tries.req, tries.targets, tries.tickets.as_ref());
    let me = req.agent.id();
    let now = clock::now();
    let mut cache = StateCache::default();
    let my_seq = tickets.map(|t| t.seq);
    // We wait as a waiter in line would, for every file and claim asked for.
    let keys = (targets.iter().map(|t| (t.rel.clone(), false)))
        .chain(req.claims.iter().map(|c| (c.as_str().to_string(), true)));
    let mine: Vec<Waiter> = (keys.map(|(file, claim)| Waiter {
        seq: my_seq.unwrap_or_default(),
        agent: me.to_string(),
        name: req.agent.name().to_string(),
        file,
        since: None,
        claim,
    }))
    .collect();
    let mut edges = deadlock::edges(ws, &mine, &mut cache, &now);
    if edges.is_empty() {
        return None;
    }
    let others: Vec<_> = (queue::waiters(ws.root()).into_iter())
        .filter(|w| Some(w.seq) != my_seq)
        .collect();
    edges.extend(deadlock::edges(ws, &others, &mut cache, &now));
    let cycle = deadlock::cycle_through(me, &edges)?;
    Some(Error::Deadlock {
        file: cycle[0].file.clone(),
        cycle: cycle.iter().map(WaitEdge::step).collect(),
    })
}
