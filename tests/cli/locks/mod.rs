//! Exclusion: locks and claims, who holds what, waiting, deadlocks, takeovers, worktrees, nested
//! workspaces and clones sharing a remote.

mod claim_arguments;
mod claim_takeover;
pub(crate) mod claims;
mod concurrency;
mod deadlock;
mod hand_made_locks;
mod handoff;
mod load;
pub(crate) mod lock_unlock;
mod nested;
mod refusals;
pub(crate) mod remote;
mod remote_clocks;
pub(crate) mod remote_guard;
mod remote_honour;
mod remote_lock;
mod remote_status;
mod remote_working_on;
mod scale;
pub(crate) mod submodules;
mod takeover;
mod wait_news;
mod waiting;
mod workspace;
pub(crate) mod worktrees;
