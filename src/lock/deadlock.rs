//! The wait-for graph: which agent waits for which file, held by whom, and the cycles in it.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use crate::clock::Timestamp;
use crate::error::WaitStep;
use crate::lock::queue::Waiter;
use crate::lock::{LockEntry, LockState, claim, classify, locks_of};
use crate::pattern::Pattern;
use crate::presence::StateCache;
use crate::workspace::Workspace;

/// One edge of the graph: `agent` waits for `file`, which `holder` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitEdge {
    /// The waiter's id.
    pub agent: String,
    /// The waiter's display name.
    pub name: String,
    /// The file waited for, relative to the root.
    pub file: String,
    /// The holder's id.
    pub holder: String,
    /// The holder's display name.
    pub holder_name: String,
}

impl WaitEdge {
    /// The edge as a step of a deadlock report.
    pub fn step(&self) -> WaitStep {
        WaitStep {
            agent: self.name.clone(),
            file: self.file.clone(),
            holder: self.holder_name.clone(),
        }
    }
}

/// The agents holding a non-stale lock on `file` (relative to the root), or a non-stale claim
/// matching it: id and display name.
pub fn holders(
    ws: &Workspace,
    file: &str,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Vec<(String, String)> {
    let Ok(target) = ws.target_from_rel(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    add_live(&mut out, ws, &target, cache, now);
    let claims = claim::judged_patterns(ws.root(), cache, now);
    add(
        &mut out,
        claims
            .iter()
            .filter(|c| c.pattern.matches(file))
            .map(|c| &c.entry),
    );
    out
}

/// The agents holding what claim `pattern` would: a non-stale claim overlapping it, or a
/// non-stale lock (one coord made: in the index) on a path it matches.
pub fn claim_holders(
    ws: &Workspace,
    pattern: &Pattern,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let claims = claim::judged_patterns(ws.root(), cache, now);
    add(
        &mut out,
        claims
            .iter()
            .filter(|c| c.pattern.overlaps(pattern))
            .map(|c| &c.entry),
    );
    for rel in crate::lock::indexed_files(ws.root()) {
        if let Some(target) = (pattern.matches(&rel))
            .then(|| ws.target_from_rel(&rel).ok())
            .flatten()
        {
            add_live(&mut out, ws, &target, cache, now);
        }
    }
    out
}

/// Add the holders of the non-stale locks on `target` to `out`.
fn add_live(
    out: &mut Vec<(String, String)>,
    ws: &Workspace,
    target: &crate::workspace::Target,
    cache: &mut StateCache,
    now: &Timestamp,
) {
    let mut entries = locks_of(target);
    classify(ws.root(), &mut entries, cache, now);
    add(out, entries.iter());
}

/// Add the holders of the non-stale `entries` to `out`, each once.
fn add<'e>(out: &mut Vec<(String, String)>, entries: impl Iterator<Item = &'e LockEntry>) {
    for e in entries.filter(|e| e.state != LockState::Stale) {
        let h = (e.agent.clone(), e.holder().to_string());
        if !out.contains(&h) {
            out.push(h);
        }
    }
}

/// The edges of `waiters`: one per waiter, file and holder other than the waiter itself.
pub fn edges(
    ws: &Workspace,
    waiters: &[Waiter],
    cache: &mut StateCache,
    now: &Timestamp,
) -> Vec<WaitEdge> {
    let mut held: HashMap<&str, Vec<(String, String)>> = HashMap::new();
    let mut out = Vec::new();
    for w in waiters {
        let holders = held.entry(w.file.as_str()).or_insert_with(|| {
            if w.claim {
                Pattern::parse(&w.file)
                    .map(|p| claim_holders(ws, &p, cache, now))
                    .unwrap_or_default()
            } else {
                holders(ws, &w.file, cache, now)
            }
        });
        for (id, name) in holders.iter() {
            if *id == w.agent {
                continue;
            }
            let edge = WaitEdge {
                agent: w.agent.clone(),
                name: w.name.clone(),
                file: w.file.clone(),
                holder: id.clone(),
                holder_name: name.clone(),
            };
            if !out.contains(&edge) {
                out.push(edge);
            }
        }
    }
    out
}

/// The shortest cycle of `edges` that runs through agent `me`, starting with an edge of `me`:
/// each step's holder is the next step's waiter, and the last step's holder is `me`.
pub fn cycle_through(me: &str, edges: &[WaitEdge]) -> Option<Vec<WaitEdge>> {
    // Breadth first from `me`; `via[agent]` is the edge that first reached it.
    let mut via: HashMap<&str, &WaitEdge> = HashMap::new();
    let mut queue = VecDeque::from([me]);
    while let Some(agent) = queue.pop_front() {
        for e in edges.iter().filter(|e| e.agent == agent) {
            if e.holder == me {
                let mut cycle = vec![e.clone()];
                let mut at = e.agent.as_str();
                while at != me {
                    let step = via.get(at)?;
                    cycle.push((*step).clone());
                    at = step.agent.as_str();
                }
                cycle.reverse();
                return Some(cycle);
            }
            if !via.contains_key(e.holder.as_str()) {
                via.insert(e.holder.as_str(), e);
                queue.push_back(e.holder.as_str());
            }
        }
    }
    None
}

/// Every cycle of the graph, each once, each starting with its smallest agent id.
pub fn cycles(edges: &[WaitEdge]) -> Vec<Vec<WaitEdge>> {
    let mut agents: Vec<&str> = edges.iter().map(|e| e.agent.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let mut found: Vec<Vec<WaitEdge>> = Vec::new();
    for agent in agents {
        let Some(cycle) = cycle_through(agent, edges) else {
            continue;
        };
        let seen = found.iter().any(|c| {
            c.len() == cycle.len() && cycle.iter().all(|e| c.iter().any(|f| f.agent == e.agent))
        });
        if !seen {
            found.push(cycle);
        }
    }
    found
}

/// A cycle of two or more is found from any of its agents, a chain is no cycle (tests/cli
/// `deadlock`); these pin what the CLI cannot set up: a cycle that does not run through us.
#[cfg(test)]
mod tests {
    use super::*;

    fn e(agent: &str, file: &str, holder: &str) -> WaitEdge {
        WaitEdge {
            agent: agent.into(),
            name: agent.into(),
            file: file.into(),
            holder: holder.into(),
            holder_name: holder.into(),
        }
    }

    #[test]
    fn a_cycle_elsewhere_is_not_ours() {
        let edges = vec![e("a", "y", "b"), e("b", "x", "c"), e("c", "z", "b")];
        assert_eq!(cycle_through("a", &edges), None);
        assert_eq!(cycles(&edges).len(), 1);
        // A cycle is listed once, not once per agent in it.
        assert_eq!(cycles(&[e("a", "y", "b"), e("b", "x", "a")]).len(), 1);
    }
}
