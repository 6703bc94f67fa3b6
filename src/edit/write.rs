//! `coord write FILE`: replace a file's content, only while holding its lock (fenced commit).

use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Refusal, Result};
use crate::fsutil;
use crate::layout;
use crate::lock::{self, backup};
use crate::workspace::{AgentId, Target, Workspace};

/// The result of a committed write.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The file, relative to the root.
    pub file: String,
    /// How many bytes it now holds.
    pub bytes: u64,
    /// The backup written (relative to the root), when the file existed before.
    pub backup: Option<String>,
}

/// Replace `target`'s content with everything read from `input` (named `input_name` in
/// errors), only if `agent` holds its lock from start to commit.
pub fn write(
    ws: &Workspace,
    agent: &AgentId,
    target: &Target,
    input: &mut dyn Read,
    input_name: &Path,
) -> Result<Written> {
    let fence = lock::own_fence(target, agent);
    target.regular_or_absent()?;
    let dir = fsutil::parent_of(&target.abs);
    fsutil::sweep_temps(dir);
    let (tmp, bytes) = fsutil::spool(dir, input, input_name, &target.abs)?;
    let Some(fence) = fence else {
        return Err(reject(ws, agent, target, tmp, Refusal::NotLocked));
    };
    let staged = backup::stage(ws.root(), target)?;
    let mutex = ws.lock_mutex()?;
    if !lock::holds_fence(target, agent, &fence) {
        drop(mutex);
        return Err(reject(ws, agent, target, tmp, Refusal::LockTakenOver));
    }
    // Something else put in FILE's place while the content was read (a folder, a FIFO): it
    // cannot be replaced, and the content must not be lost with the refusal.
    if let Err(Error::BadPath { path, why }) = target.regular_or_absent() {
        drop(mutex);
        let rel = keep(ws, agent, target, tmp)?;
        let why = format!("{why}; it was not written, your content is kept in `{rel}`");
        return Err(Error::bad_path(path, why));
    }
    let backup = staged.map(backup::Staged::commit).transpose()?;
    fsutil::persist(tmp, &target.abs)?;
    drop(mutex);
    fsutil::sync_dir(dir)?;
    Ok(Written {
        file: target.rel.clone(),
        bytes,
        backup,
    })
}

/// Keep content that was not written in `FILE.rejected.<agent>`; its path relative to the root.
fn keep(
    ws: &Workspace,
    agent: &AgentId,
    target: &Target,
    tmp: tempfile::NamedTempFile,
) -> Result<String> {
    let mut path = layout::rejected(&target.abs, agent.id());
    // A regular file or a symlink at the usual name is replaced (never followed); anything else
    // there (a folder, a FIFO) cannot be, and the content must not be lost with it: keep it
    // beside, under the first numbered name that is free.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file() && !m.is_symlink())
        && let Some(free) = (1..=99)
            .map(|n| layout::rejected_numbered(&target.abs, agent.id(), n))
            .find(|p| std::fs::symlink_metadata(p).is_err())
    {
        path = free;
    }
    let rel = ws.rel(&path).unwrap_or_else(|| path.display().to_string());
    // Coord's file in the work tree, maybe its first: kept out of `git status` as the others.
    let _ = ws.adopt();
    fsutil::persist_durable(tmp, &path)?;
    Ok(rel)
}

/// Keep refused content in `FILE.rejected.<agent>` and say why the write was refused.
fn reject(
    ws: &Workspace,
    agent: &AgentId,
    target: &Target,
    tmp: tempfile::NamedTempFile,
    why: Refusal,
) -> Error {
    let rel = match keep(ws, agent, target, tmp) {
        Ok(rel) => rel,
        Err(e) => return e,
    };
    let file = &target.rel;
    // Control characters dropped: the holder's name ends up on a terminal.
    let holder = lock::locks_of(target)
        .into_iter()
        .find(|e| e.agent != agent.id())
        .map(|e| e.holder().replace(char::is_control, ""))
        // Not locked: a claim may hold it (here, or another clone's as last synced).
        .or_else(|| {
            let held = (why == Refusal::NotLocked)
                .then(|| lock::seen_holder(ws, agent, std::slice::from_ref(target)));
            held.flatten()
                .map(|b| b.holder.replace(char::is_control, ""))
        });
    let kept = format!("`{file}` was not written; your content is kept in `{rel}`");
    let message = match (why, holder) {
        (Refusal::NotLocked, Some(h)) => {
            format!("`{file}` is locked by {h}, not by {}: {kept}", agent.id())
        }
        (Refusal::NotLocked, None) => format!("`{file}` is not locked by {}: {kept}", agent.id()),
        (_, Some(h)) => format!(
            "your lock on `{file}` was taken over by {h} while you wrote (it had gone STALE): {kept}"
        ),
        (_, None) => {
            format!("your lock on `{file}` was released or taken over while you wrote: {kept}")
        }
    };
    let (file, rel) = (crate::shell::file(file), crate::shell::arg(&rel));
    let hint = match why {
        Refusal::NotLocked => format!(
            "take the lock first: `coord lock {file}`, then `coord write {file} --from {rel}`"
        ),
        _ => format!(
            "see what changed (`coord status`, `diff {file} {rel}`), lock again with `coord lock {file}`, then `coord write {file} --from {rel}`"
        ),
    };
    Error::refused(why, message, Some(hint))
}
