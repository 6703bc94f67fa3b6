//! Each clone's advisory `working_on`: one ref a clone (`refs/coord/clones/<hash of its id>`),
//! pointing to a commit without parent whose message is the clone's record. Only that clone
//! writes its ref, so it is replaced by a forced push, never contended; nothing is decided on
//! it (an edit of a file another clone's agent edits is allowed with a warning).

use std::time::Duration;

use super::git::{self, Expect, RefStatus, Update};
use super::record::{self, AgentWork, CloneRecord};
use super::state::{self, OwnWork};
use super::{Remote, time_text};
use crate::clock;
use crate::error::{Error, Result};
use crate::layout;
use crate::workspace::Workspace;

/// Publish `agents` as this clone's `working_on` with a lease of `lease`; unchanged and
/// published less than a third of its lease ago, nothing is pushed (`Ok(false)`). No agent
/// left: the clone's ref is deleted.
///
/// # Errors
///
/// [`Error::Remote`] when the remote cannot be reached or refuses the push.
pub(crate) fn publish(
    ws: &Workspace,
    r: &Remote,
    agents: &[AgentWork],
    lease: Duration,
) -> Result<bool> {
    let now = clock::now();
    let lease_s = lease.as_secs().clamp(1, record::MAX_LEASE_S);
    let rec = CloneRecord {
        v: record::VERSION,
        clone: r.me.clone.clone(),
        host: r.me.host.clone(),
        updated: clock::format_timestamp(&now),
        lease_s,
        nonce: format!("{:016x}", crate::host::random_u64()),
        agents: agents.to_vec(),
    };
    // Written as strictly as it is read: what the other clones would ignore is refused here.
    rec.check()
        .map_err(|why| Error::bad_input(format!("cannot publish what this clone edits: {why}")))?;
    let last = state::read(ws.root(), &r.name).and_then(|s| s.own_work);
    let unchanged = last.as_ref().is_some_and(|w| {
        w.agents == agents
            && clock::parse_timestamp(&w.at)
                .is_some_and(|at| clock::age(&now, &at) < Duration::from_secs(w.lease_s / 3))
    });
    if unchanged || (agents.is_empty() && last.as_ref().is_none_or(|w| w.agents.is_empty())) {
        return Ok(false);
    }
    let dst = layout::remote_clone_ref(&record::clone_key(&r.me.clone));
    let oid = if agents.is_empty() {
        None
    } else {
        let message = serde_json::to_string(&rec).unwrap_or_default() + "\n";
        let scratch = r.scratch_ref();
        let stream = format!(
            "commit {scratch}\nmark :1\ncommitter coord <coord@localhost> {} +0000\ndata {}\n{message}\nget-mark :1\nreset {scratch}\nfrom {}\n\ndone\n",
            now.timestamp(),
            message.len(),
            r.null_oid()
        );
        let commit = git::fast_import(r.dir(), stream.into_bytes(), r.deadline).map_err(|why| {
            Error::Failed {
                message: format!("cannot write this clone's record for `{}`: {why}", r.name),
            }
        })?;
        Some(commit)
    };
    let status = git::push(
        r.dir(),
        &r.name,
        &[Update {
            oid,
            dst: dst.clone(),
            expect: Expect::Any,
        }],
        r.deadline,
    )
    .map_err(|f| r.fault(&f))?;
    let why = match status.first() {
        Some(RefStatus::Done) => None,
        Some(RefStatus::Rejected(why)) => Some(why.clone()),
        Some(RefStatus::Stale) | None => Some("it changed meanwhile".to_string()),
    };
    if let Some(why) = why {
        return Err(Error::Remote {
            remote: r.name.clone(),
            message: format!("remote `{}` refused the update of `{dst}`: {why}", r.name),
            credentials: false,
        });
    }
    state::update(ws, &r.name, |s| {
        s.own_work = Some(OwnWork {
            agents: agents.to_vec(),
            at: time_text(&now),
            lease_s,
        });
    })?;
    Ok(true)
}
