//! The wait-for graph: which agent waits for which file, held by whom, and the cycles in it.

use std::collections::{BTreeSet, HashMap, VecDeque};

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

/// The live holders (id, name) in the way of `key`: locks then claims (a pattern: the reverse).
fn holders(
    ws: &Workspace,
    key: &str,
    claim: bool,
    cache: &mut StateCache,
    now: &Timestamp,
) -> Vec<(String, String)> {
    let root = ws.root();
    // A pattern is in the way of the indexed locks on paths it matches (each read); a file, of its.
    let (want, targets) = if claim {
        let Ok(want) = Pattern::parse(key) else {
            return Vec::new();
        };
        let files: BTreeSet<String> = (super::index::entries(root).into_iter())
            .filter_map(|(rel, _)| want.matches(&rel).then_some(rel))
            .collect();
        let targets = files.iter().filter_map(|rel| ws.target_from_rel(rel).ok());
        (Some(want), targets.collect())
    } else {
        let Ok(target) = ws.target_from_rel(key) else {
            return Vec::new();
        };
        (None, vec![target])
    };
    let mut locks: Vec<LockEntry> = targets.iter().flat_map(locks_of).collect();
    classify(root, &mut locks, cache, now);
    let in_way = |p: &Pattern| {
        want.as_ref()
            .map_or_else(|| p.matches(key), |w| p.overlaps(w))
    };
    let mut claims: Vec<LockEntry> = (claim::judged_patterns(root, cache, now).unwrap_or_default())
        .into_iter()
        .filter_map(|c| in_way(&c.pattern).then_some(c.entry))
        .collect();
    if claim {
        std::mem::swap(&mut locks, &mut claims);
    }
    let mut out = Vec::new();
    let all = locks.iter().chain(&claims);
    for e in all.filter(|e| e.state != LockState::Stale) {
        let h = (e.agent.clone(), e.holder().to_string());
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// The edges of `waiters`: one per waiter, file and holder other than the waiter itself.
pub fn edges(
    ws: &Workspace,
    waiters: &[Waiter],
    cache: &mut StateCache,
    now: &Timestamp,
) -> Vec<WaitEdge> {
    let mut held: HashMap<(&str, bool), Vec<(String, String)>> = HashMap::new();
    let mut out = Vec::new();
    for w in waiters {
        let holders = (held.entry((w.file.as_str(), w.claim)))
            .or_insert_with(|| holders(ws, &w.file, w.claim, cache, now));
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

/// The shortest cycle through `me`, from an edge of `me`: each holder waits in the next step.
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
    let agents: BTreeSet<&str> = edges.iter().map(|e| e.agent.as_str()).collect();
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

/// A cycle not through us, which the CLI cannot set up (tests/cli `deadlock` pins the rest).
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
