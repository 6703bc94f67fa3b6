//! The protocol side of `coord session`: the child's environment and how often the session
//! beats. Supervising the child is the binary's job.

use std::time::Duration;

use crate::clock;
use crate::error::Result;
use crate::workspace::{AgentId, Workspace};

/// The session id, exported to the child.
pub const SESSION_ENV: &str = "COORD_SESSION";

/// The supervising process's id, exported to the child.
pub const SESSION_PID_ENV: &str = "COORD_SESSION_PID";

/// The agent, exported to the child.
pub const AGENT_ENV: &str = "COORD_AGENT";

/// The workspace root, exported to the child.
pub const DIR_ENV: &str = "COORD_DIR";

/// Overrides [`HEARTBEAT_EVERY`] (a duration such as `200ms`), for tests and slow links.
pub const HEARTBEAT_ENV: &str = "COORD_HEARTBEAT_INTERVAL";

/// How often a session refreshes its presence and stamp-card heartbeat.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(30);

/// After forwarding a signal, how long the child gets before it is killed.
pub const KILL_GRACE: Duration = Duration::from_secs(10);

/// The heartbeat interval: [`HEARTBEAT_ENV`] when set, else [`HEARTBEAT_EVERY`].
pub fn heartbeat_interval() -> Result<Duration> {
    let text = match std::env::var(HEARTBEAT_ENV) {
        Ok(text) if !text.trim().is_empty() => text,
        _ => return Ok(HEARTBEAT_EVERY),
    };
    let why = match clock::parse_duration(&text) {
        Ok(d) if !d.is_zero() => return Ok(d),
        Ok(_) => "the interval must be above zero".to_string(),
        Err(crate::Error::BadDuration { why, .. }) => why,
        Err(e) => return Err(e),
    };
    let why = format!("{why} (in `{HEARTBEAT_ENV}`)");
    Err(crate::Error::BadDuration { text, why })
}

/// The environment a session's child gets: agent, workspace, session id and session pid.
pub fn child_env(
    ws: &Workspace,
    agent: &AgentId,
    session_id: &str,
    pid: u32,
) -> Vec<(&'static str, String)> {
    vec![
        (AGENT_ENV, agent.name().to_string()),
        (DIR_ENV, ws.root().display().to_string()),
        (SESSION_ENV, session_id.to_string()),
        (SESSION_PID_ENV, pid.to_string()),
    ]
}
