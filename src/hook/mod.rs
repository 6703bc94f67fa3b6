//! Agent clients lock by themselves: one hook call of a client onto the same protocol calls as
//! the command line.

pub mod act;
mod gitcmd;
pub mod trail;

pub use crate::client::{Client, HookCall, Kind, PAYLOAD_CAP, Reply, parse, render};
/// The agent of a session (see [`crate::identity::agent_for`]: the rule lives there).
pub use crate::identity::agent_for;
use crate::workspace::AgentId;

/// The agent of a client whose payload carries no session id: the client process that ran the
/// hook stands for the session (`copilot-p4242`; past the `sh -c` it may run hooks through).
pub fn agent_for_parent(client: Client) -> Option<AgentId> {
    let pid = crate::identity::hook_client_process().map_or_else(crate::host::invoker, |p| p.pid);
    AgentId::parse(&format!("{}-p{pid}", client.as_str())).ok()
}
