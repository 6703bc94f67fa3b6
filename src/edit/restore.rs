//! `coord restore FILE`: put `FILE.bak` back, under FILE's lock, as a swap.

use std::io;
use std::path::Path;

use serde::Serialize;
use tempfile::NamedTempFile;

use crate::clock::Wait;
use crate::error::{Error, IoResultExt, Refusal, Result};
use crate::fsutil;
use crate::layout;
use crate::lock::{self, Fence, LockEvent, backup};
use crate::workspace::{AgentId, Target, Workspace};

use super::{process_lock, with_own_lock};

/// The result of a restore.
#[derive(Debug, Clone, Serialize)]
pub struct Restored {
    /// The file, relative to the root.
    pub file: String,
    /// The backup it was restored from, relative to the root.
    pub backup: String,
    /// How many bytes the file now holds.
    pub bytes: u64,
    /// Whether the replaced content is now in the backup (false when FILE did not exist).
    pub swapped: bool,
    /// Whether restore took the lock itself (and released it after).
    pub took_lock: bool,
    /// The generation restored: 1 for `FILE.bak`, 2 for the backup it replaced, and so on.
    pub generation: usize,
}

/// Put `FILE.bak` back as `target`, the current content becoming the new backup.
pub fn restore(
    ws: &Workspace,
    agent: &AgentId,
    target: &Target,
    generation: usize,
    wait: Wait,
    on_event: &mut dyn FnMut(&LockEvent),
) -> Result<Restored> {
    target.regular_or_absent()?;
    let (source, source_rel) = if generation <= 1 {
        let bak = layout::backup(&target.abs);
        let rel = ws.rel(&bak).unwrap_or_else(|| bak.display().to_string());
        (bak, rel)
    } else {
        let all = backup::generations(ws.root(), target)?;
        let Some(g) = all.into_iter().find(|g| g.n == generation) else {
            let (rel, file) = (&target.rel, crate::shell::file(&target.rel));
            let why = format!(
                "there is no backup generation {generation} of `{rel}`; see `coord restore {file} --list`"
            );
            return Err(io::Error::new(io::ErrorKind::NotFound, why))
                .at("find the backup", &target.abs);
        };
        (g.abs, g.path)
    };
    match std::fs::symlink_metadata(&source) {
        Ok(meta) if meta.is_file() => {}
        Ok(meta) => {
            let what = if meta.is_symlink() {
                "it is a symlink, which coord never follows; replace it with a regular file"
            } else {
                "it is not a regular file"
            };
            return Err(io::Error::new(io::ErrorKind::InvalidData, what))
                .at("restore from", Path::new(&source_rel));
        }
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "there is nothing to restore (coord writes FILE.bak on `coord lock`, `coord write` and `coord run`)",
            ))
            .at("find the backup", Path::new(&source_rel));
        }
    }
    let targets = std::slice::from_ref(target);
    let lock = process_lock(agent, targets, wait, "restoring from its backup", false);
    let generation = generation.max(1);
    let swap = |fence: &Fence, took_lock: bool| -> Result<Restored> {
        let dir = fsutil::parent_of(&target.abs);
        fsutil::sweep_temps(dir);
        let (restored, bytes) = fsutil::copy_to_temp(&source, dir)?;
        let current = (target.regular_or_absent()?)
            .then(|| fsutil::copy_to_temp(&target.abs, dir).map(|(tmp, _)| tmp))
            .transpose()?;
        let swapped = current.is_some();
        {
            let _mutex = ws.lock_mutex()?;
            if !lock::holds_fence(target, agent, fence) {
                let (rel, file) = (&target.rel, crate::shell::file(&target.rel));
                let why = format!(
                    "your lock on `{rel}` was taken over before the restore: nothing was changed"
                );
                let hint = format!("see `coord status`, then lock again with `coord lock {file}`");
                return Err(Error::refused(Refusal::LockTakenOver, why, Some(hint)));
            }
            put_back(ws, target, restored, current, generation)?;
        }
        fsutil::sync_dir(dir)?;
        Ok(Restored {
            file: target.rel.clone(),
            backup: source_rel,
            bytes,
            swapped,
            took_lock,
            generation,
        })
    };
    with_own_lock(ws, &lock, on_event, swap).map(|(restored, _)| restored)
}

/// Publish `restored` at `target` and the `current` content it replaces (if any) at `FILE.bak`.
/// Every content stays under a name of its own at each step, a temporary file never being the
/// only copy of one (the next command sweeps those of a killed process): FILE.bak is first kept
/// as a generation, then takes the current content, which FILE still has, and only then does
/// FILE take the content restored.
fn put_back(
    ws: &Workspace,
    target: &Target,
    restored: NamedTempFile,
    current: Option<NamedTempFile>,
    generation: usize,
) -> Result<()> {
    let Some(current) = current else {
        return fsutil::persist(restored, &target.abs);
    };
    let bak = layout::backup(&target.abs);
    let kept = backup::keep_generation_unpruned(ws.root(), target);
    if generation <= 1 && kept.is_none() {
        // FILE.bak could not be kept aside: it is the content restored, put in FILE first.
        fsutil::persist(restored, &target.abs)?;
        return fsutil::persist(current, &bak);
    }
    if let Err(e) = fsutil::persist(current, &bak) {
        // Nothing changed: the copy kept of FILE.bak, still in place, goes.
        forget(kept);
        return Err(e);
    }
    fsutil::persist(restored, &target.abs)?;
    if generation <= 1 {
        // FILE.bak was the content restored, now in FILE: not an older generation.
        forget(kept);
    } else {
        backup::prune_generations(ws.root(), target);
    }
    Ok(())
}

/// Remove a generation just kept, and the folders made for it.
fn forget(kept: Option<backup::Kept>) {
    let Some(kept) = kept else { return };
    let _ = fsutil::remove(&kept.path);
    for made in &kept.made {
        fsutil::raw::remove_empty_dir(made);
    }
}
