//! Handshakes: `<root>/.handshake_<agent>`, one block per peer, in the seed's `key: value` form.
//! A round ([`step`]) runs under the workspace mutex and keeps a block's `time` while its status
//! stays, so repeating it changes nothing. Reading is lenient: the files are also written by hand.

use std::path::Path;

use serde::Serialize;

use crate::clock::{self, Wait};
use crate::error::{Error, Refusal, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::layout;
use crate::presence::{self, Unreadable};
use crate::record::Record;
use crate::wait::{Deadline, FolderWatch, RECHECK};
use crate::workspace::{AgentId, Workspace, is_valid_agent_id};
use crate::worktree::shared_root;

use HandshakeStatus::{Accepted, Requested};

/// The protocol named in every block.
pub const PROTOCOL: &str = "V3";

crate::record::names! {
    /// A block's `status`.
    HandshakeStatus {
        Requested = "REQUESTED": "`from` asks `to`.",
        Accepted = "ACCEPTED": "`from` accepts `to`.",
    }
}

/// One block of a handshake file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Block {
    /// Whose file it is in (an agent id).
    pub from: String,
    /// The peer (an agent id).
    pub to: String,
    /// REQUESTED or ACCEPTED.
    pub status: HandshakeStatus,
    pub(crate) time: Option<String>,
}

/// Parse the handshake file of `owner`. Never fails; unusable blocks are skipped.
pub fn parse(owner: &str, text: &str) -> Vec<Block> {
    // A block ends at a blank line, or where a second `from:` starts the next one.
    let mut groups: Vec<Vec<&str>> = Vec::new();
    let mut fresh = true;
    let from = |l: &str| {
        l.split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("from"))
    };
    for line in text.lines() {
        let blank = line.trim().is_empty();
        let again = |g: &Vec<&str>| from(line) && g.iter().any(|l| from(l));
        match groups.last_mut() {
            _ if blank => {}
            Some(g) if !(fresh || again(g)) => g.push(line),
            _ => groups.push(vec![line]),
        }
        fresh = blank;
    }
    let mut blocks: Vec<Block> = Vec::new();
    for g in groups {
        let rec = Record::parse(&g.join("\n"));
        let to = rec.get_nonempty("to").map(str::to_ascii_lowercase);
        let Some(to) = to.filter(|t| is_valid_agent_id(t) && t != owner) else {
            continue;
        };
        if blocks.iter().any(|b| b.to == to) {
            continue;
        }
        let time = rec.get_nonempty("time").filter(|t| *t != "-");
        blocks.push(Block {
            from: owner.to_string(),
            to,
            status: HandshakeStatus::parse(rec.get("status").unwrap_or("")).unwrap_or(Requested),
            time: time.map(str::to_string),
        });
    }
    blocks
}

/// The file text: the seed's five lines per block, blocks sorted by peer, a blank line between.
pub fn render(blocks: &[Block]) -> String {
    let render = |b: &&Block| {
        let mut rec = Record::new();
        rec.set("from", &b.from);
        rec.set("to", &b.to);
        rec.set("time", b.time.as_deref().unwrap_or("-"));
        rec.set("status", b.status.as_str());
        rec.set("protocol", PROTOCOL);
        rec.render()
    };
    let mut sorted: Vec<&Block> = blocks.iter().collect();
    sorted.sort_by(|a, b| a.to.cmp(&b.to));
    sorted.iter().map(render).collect::<Vec<_>>().join("\n")
}

/// Agent `id`'s handshake blocks; `Ok(None)` when it has no file.
pub fn read(root: &Path, id: &str) -> std::result::Result<Option<Vec<Block>>, Unreadable> {
    let found = presence::read_agent_file(&layout::handshake(&shared_root(root), id))?;
    Ok(found.map(|(text, _)| parse(id, &text)))
}

/// Every block of every handshake file in the root, sorted by `from` then `to`.
pub fn scan(root: &Path) -> (Vec<Block>, Vec<Unreadable>) {
    let (files, bad) = presence::scan_root(root, layout::handshake_agent, |id| read(root, id));
    let mut blocks: Vec<Block> = files.into_iter().flatten().collect();
    blocks.sort_by(|a, b| a.from.cmp(&b.from).then(a.to.cmp(&b.to)));
    (blocks, bad)
}

/// Whether Protocol V3 is active: some pair has blocks both ways, one of them ACCEPTED.
pub fn v3_active(blocks: &[Block]) -> bool {
    let back = |b: &Block| blocks.iter().find(|x| x.from == b.to && x.to == b.from);
    let accepted = |b: &Block| b.status == Accepted;
    let established = |b: &Block| back(b).is_some_and(|r| accepted(b) || accepted(r));
    blocks.iter().any(established)
}

/// One peer, after a round.
#[derive(Debug, Clone, Serialize)]
pub struct Peer {
    /// The peer's id.
    pub peer: String,
    /// What this agent's file says to it.
    pub mine: HandshakeStatus,
    /// What its file says to this agent, if anything.
    pub theirs: Option<HandshakeStatus>,
    /// Both directions exist and one is ACCEPTED.
    pub established: bool,
}

/// The result of a round (or of a wait).
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// Who.
    pub agent: String,
    /// The peers of this round: the other ACTIVE agents and whoever asked this one.
    pub peers: Vec<Peer>,
    pub(crate) changed: bool,
}

impl Round {
    /// The peers not yet established.
    pub fn pending(&self) -> Vec<&str> {
        let pending = self.peers.iter().filter(|p| !p.established);
        pending.map(|p| p.peer.as_str()).collect()
    }
}

/// One round for `agent`: request every other ACTIVE agent, accept every block addressed to it.
/// `also` names peers to keep in the round even if they went inactive (a wait's first peers).
pub fn step(ws: &Workspace, agent: &AgentId, also: &[String]) -> Result<Round> {
    let root = ws.root();
    let me = agent.id();
    let _mutex = ws.lock_mutex()?;
    let path = layout::handshake(&shared_root(root), me);
    let corrupt = |u: Unreadable| Error::corrupt(&path, None, u.why);
    let old = read(root, me).map_err(corrupt)?.unwrap_or_default();
    let (all, _) = scan(root);
    let now = clock::now();
    let peers: std::collections::BTreeSet<String> = crate::stamp::active_agents(root, &now)
        .into_iter()
        .chain(all.iter().filter(|b| b.to == me).map(|b| b.from.clone()))
        .chain(also.iter().cloned())
        .filter(|p| p != me)
        .collect();

    let mut blocks = old.clone();
    blocks.retain(|b| !peers.contains(&b.to));
    let mut round = Vec::new();
    for peer in peers {
        let theirs = all.iter().find(|b| b.from == peer && b.to == me);
        let theirs = theirs.map(|b| b.status);
        let before = old.iter().find(|b| b.to == peer);
        // Asked by the peer, or accepted before: accepted. A pair is then established.
        let accepted = theirs.is_some() || before.is_some_and(|b| b.status == Accepted);
        let mine = if accepted { Accepted } else { Requested };
        let time = match before {
            Some(b) if b.status == mine && b.time.is_some() => b.time.clone(),
            _ => Some(clock::format_timestamp(&now)),
        };
        blocks.push(Block {
            from: me.to_string(),
            to: peer.clone(),
            status: mine,
            time,
        });
        round.push(Peer {
            peer,
            mine,
            theirs,
            established: theirs.is_some(),
        });
    }
    let text = render(&blocks);
    let changed = !blocks.is_empty()
        && fsutil::read_capped(&path, RECORD_CAP).ok().as_deref() != Some(text.as_bytes());
    if changed {
        fsutil::replace(&path, text.as_bytes())?;
    }
    Ok(Round {
        agent: me.to_string(),
        peers: round,
        changed,
    })
}

/// Rounds until every peer of the first round is established, woken by changes in the root.
pub fn wait(ws: &Workspace, agent: &AgentId, wait: Wait) -> Result<Round> {
    let mut watch = FolderWatch::new(&[ws.root().to_path_buf()]);
    let deadline = Deadline::after(wait.as_duration());
    let mut round = step(ws, agent, &[])?;
    let wanted: Vec<String> = round.peers.iter().map(|p| p.peer.clone()).collect();
    while !round.pending().is_empty() {
        if deadline.passed() {
            let (me, pending) = (agent.id(), round.pending().join(", "));
            let waited = wait.as_duration().map(clock::format_duration);
            let waited = waited.unwrap_or_else(|| "forever".into());
            let why = format!("handshake of {me} not answered by {pending} after {waited}");
            let hint = Some(format!(
                "ask them to run `coord handshake` (or wait longer with `--wait 5m`); `.handshake_{me}` keeps the request"
            ));
            return Err(Error::refused(Refusal::HandshakeUnanswered, why, hint));
        }
        watch.wait(deadline.next_sleep(RECHECK));
        round = step(ws, agent, &wanted)?;
    }
    Ok(round)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-written files: any key case, several blank lines, a repeated `from:` starting the
    /// next block; a bad `to`, a second block to the same peer, one to the owner: skipped.
    #[test]
    fn several_blocks_with_or_without_blank_lines() {
        let text = "From: Claude\nTo: Gemini\nstatus: requested\n\n\nfrom: claude\nto: copilot\nstatus: ACCEPTED\nfrom: claude\nto: ../x\nfrom: claude\nto: gemini\nfrom: claude\nto: claude\n";
        let blocks = parse("claude", text);
        let tos: Vec<_> = blocks.iter().map(|b| (b.to.as_str(), b.status)).collect();
        assert_eq!(tos, [("gemini", Requested), ("copilot", Accepted)]);
        let rendered = render(&blocks);
        assert!(rendered.starts_with("from: claude\nto: copilot\n"));
        assert!(rendered.contains("protocol: V3\n\nfrom: claude\nto: gemini\n"));
        let mut sorted = blocks.clone();
        sorted.sort_by(|x, y| x.to.cmp(&y.to));
        assert_eq!(parse("claude", &rendered), sorted);
        assert!(parse("claude", "\u{0}\u{1}\u{2}").is_empty());
    }

    #[test]
    fn establishment_needs_both_directions_and_one_acceptance() {
        let b = |from: &str, to: &str, s| Block {
            from: from.into(),
            to: to.into(),
            status: s,
            time: None,
        };
        assert!(!v3_active(&[b("a", "b", Requested)]));
        assert!(!v3_active(&[b("a", "b", Accepted)]));
        let (ab, ba) = (b("a", "b", Requested), b("b", "a", Requested));
        assert!(!v3_active(&[ab.clone(), ba]));
        assert!(v3_active(&[ab, b("b", "a", Accepted)]));
    }
}
