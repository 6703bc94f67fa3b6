//! Safe editing under the lock: `coord write`, `coord run`, `coord restore`.

pub mod restore;
pub mod run;
pub mod write;

use crate::clock::Wait;
use crate::error::{Error, Result};
use crate::host;
use crate::lock::{self, DEFAULT_TTL, Fence, LockEvent, LockRequest, Owner};
use crate::workspace::{AgentId, Target, Workspace};

/// Locks on files for the life of this process, as an edit takes them when the agent holds
/// none: tied to this process, so a crash leaves them STALE at once.
pub(crate) fn process_lock(
    agent: &AgentId,
    targets: &[Target],
    wait: Wait,
    reason: &str,
    backup: bool,
) -> LockRequest {
    LockRequest {
        agent: agent.clone(),
        targets: targets.to_vec(),
        wait,
        ttl: DEFAULT_TTL,
        backup,
        reason: Some(reason.into()),
        owner: Some(Owner::process(host::pid(), None)),
        claims: Vec::new(),
    }
}

/// Run `op` fenced by the agent's lock on `req`'s file: one it holds is used and kept, else
/// `req` is acquired for `op` (told so) and released after; returns the backup written.
pub(crate) fn with_own_lock<T>(
    ws: &Workspace,
    req: &LockRequest,
    on_event: &mut dyn FnMut(&LockEvent),
    op: impl FnOnce(&Fence, bool) -> Result<T>,
) -> Result<(T, Option<String>)> {
    let target = &req.targets[0];
    if let Some(fence) = lock::own_fence(target, &req.agent) {
        return Ok((op(&fence, false)?, None));
    }
    let got = lock::acquire(ws, req, &lock::Reach::HERE, on_event)?;
    let Some(acquired) = got.acquired.into_iter().next() else {
        let message = format!("the lock on `{}` was not reported", target.rel);
        return Err(Error::failed(message));
    };
    let done = op(&Fence::Token(acquired.token.clone()), true);
    let released = lock::release_tokens(ws, &req.agent, &[(target.clone(), acquired.token)], true);
    let done = done?;
    released?;
    Ok((done, acquired.backup))
}
