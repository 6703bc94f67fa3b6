//! What `coord doctor` reports about a workspace: the filesystem, whether kernel locks and
//! events reach every machine, the arbitration, the re-check interval, the clock skew, and
//! whether a sync tool (which gives no atomicity at all) manages the folder.

use std::fs;
use std::path::Path;

use serde::Serialize;

use super::{Arbitration, FsClass, Policy, lease};
use crate::error::Result;
use crate::layout;

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// The workspace root.
    pub root: String,
    /// The filesystem's name (`ext4`, `nfs4`, `fuse.sshfs`, …).
    pub filesystem: String,
    /// Its class: `local`, `nfs`, `smb`, `fuse` or `other`.
    pub class: FsClass,
    /// The `statfs` magic number, in hex.
    pub magic: String,
    /// Whether a kernel lock taken here excludes processes on other machines.
    pub kernel_locks_cross_machines: bool,
    /// Whether filesystem events report changes made on other machines.
    pub events_cross_machines: bool,
    /// `kernel`, `link`, or `none` where no arbitration holds.
    pub arbitration: Arbitration,
    /// `detected`, or the variable that chose it.
    pub arbitration_source: String,
    /// The lease of the `link` arbitration, in milliseconds.
    pub lease_ms: Option<u64>,
    /// How often a waiter looks again without an event, in milliseconds.
    pub recheck_ms: u64,
    /// Whether lock files are also looked up by exact name (listings may lag).
    pub exact_lookups: bool,
    /// Whether coord reads records as the file server has them, past this machine's cache of
    /// their contents (else a live holder's rewritten record could read as the one before).
    pub reads_past_cache: bool,
    /// How far this clock runs ahead of the folder's, in milliseconds (negative: behind).
    pub clock_skew_ms: Option<i64>,
    /// A sync tool managing the folder, when one is detected.
    pub sync_tool: Option<SyncTool>,
    /// Conflict copies a sync tool left in the root or `.coord/`.
    pub conflict_copies: Vec<String>,
    /// What the user should know.
    pub warnings: Vec<String>,
}

/// A sync tool found by its marker.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SyncTool {
    /// `Syncthing`, `Dropbox`, `OneDrive`, `Google Drive`.
    pub tool: String,
    /// The marker found.
    pub marker: String,
}

/// Diagnose the workspace at `root` (a probe file in its `.coord/`, `state_dir`, measures skew).
pub fn diagnose(root: &Path, state_dir: &Path) -> Result<Diagnosis> {
    let policy = super::policy(root)?;
    let skew = super::measure_skew(state_dir).ok();
    let past_cache = policy.fs.class == FsClass::Local || reads_past_cache(state_dir);
    let copies = conflict_copies(root, state_dir);
    Ok(diagnosis(root, copies, &policy, skew, past_cache))
}

/// Whether this system reads a file in `dir` past this machine's cache of its contents.
fn reads_past_cache(dir: &Path) -> bool {
    crate::fsutil::temp_in(dir)
        .is_ok_and(|probe| crate::fsutil::forget_cached_pages(probe.as_file()).unwrap_or(false))
}

fn diagnosis(
    root: &Path,
    conflict_copies: Vec<String>,
    policy: &Policy,
    skew_s: Option<f64>,
    past_cache: bool,
) -> Diagnosis {
    let (sync_tool, fs) = (sync_tool(root), &policy.fs.name);
    let mut warnings: Vec<String> = sync_tool.iter().map(sync_warning).collect();
    if let n @ 1.. = conflict_copies.len() {
        let ending = if n == 1 { "y" } else { "ies" };
        warnings.push(format!(
            "{n} conflict cop{ending} of a sync tool found: two machines wrote the same file"
        ));
    }
    if policy.overridden && policy.arbitration == Arbitration::Kernel && !policy.fs.served_locally()
    {
        let env = super::ENV_ARBITRATION;
        warnings.push(format!(
            "{env} forces the kernel arbitration on {fs}, where kernel locks do not cross machines"
        ));
    }
    if policy.arbitration == Arbitration::None {
        warnings.push(format!(
            "no arbitration holds on {fs}: it offers neither hard links nor an exclusive create that holds across mounts, so coord cannot keep two agents off one file; every command that takes a lock refuses (exit 1). Share the folder over NFS, SMB or sshfs instead"
        ));
    }
    if !past_cache && policy.arbitration != Arbitration::None {
        warnings.push(format!(
            "coord cannot read files on {fs} past this machine's cache of their contents: through a mount that keeps contents across opens (FUSE `kernel_cache` or `auto_cache`, NFS `nocto`), a lock re-taken within the same second reads as the one before, and its running holder could be judged gone and taken over; mount every side without those options"
        ));
    }
    if let Some(s) = skew_s
        && s.abs() > 2.0
    {
        let (by, side) = (s.abs(), if s > 0.0 { "ahead of" } else { "behind" });
        warnings.push(format!(
            "this clock is {by:.1} s {side} the folder's; lock ages are corrected for it"
        ));
    }
    let source = if policy.overridden {
        super::ENV_ARBITRATION
    } else {
        "detected"
    };
    Diagnosis {
        root: root.display().to_string(),
        filesystem: policy.fs.name.clone(),
        class: policy.fs.class,
        magic: format!("{:#x}", policy.fs.magic),
        kernel_locks_cross_machines: policy.fs.served_locally(),
        events_cross_machines: policy.fs.served_locally(),
        arbitration: policy.arbitration,
        arbitration_source: source.to_string(),
        lease_ms: (policy.arbitration == Arbitration::Link)
            .then(|| lease::LEASE.as_millis() as u64),
        recheck_ms: policy.recheck.as_millis() as u64,
        exact_lookups: policy.exact_lookups,
        reads_past_cache: past_cache,
        clock_skew_ms: skew_s.map(|s| (s * 1000.0).round() as i64),
        sync_tool,
        conflict_copies,
        warnings,
    }
}

fn sync_warning(s: &SyncTool) -> String {
    format!(
        "this folder is synced by {} (`{}`): a sync tool copies files between machines with no atomicity, so locks cannot exclude agents on different machines; share the folder over NFS, SMB or sshfs instead",
        s.tool, s.marker
    )
}

/// A sync tool managing `root`, found by its marker in `root` or a folder above it.
fn sync_tool(root: &Path) -> Option<SyncTool> {
    const MARKERS: [(&str, &str); 5] = [
        (".stfolder", "Syncthing"),
        (".dropbox", "Dropbox"),
        (".dropbox.cache", "Dropbox"),
        (".tmp.drivedownload", "Google Drive"),
        (".849C9593-D756-4E56-8D6E-42412F2A707B", "Google Drive"),
    ];
    root.ancestors().find_map(|dir| {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let onedrive = name == "OneDrive" || name.starts_with("OneDrive - ");
        let (marker, tool) = MARKERS
            .iter()
            .map(|(marker, tool)| (dir.join(marker), *tool))
            .find(|(p, _)| crate::fsutil::real_entry(p).is_some())
            .or_else(|| onedrive.then(|| (dir.to_path_buf(), "OneDrive")))?;
        let (tool, marker) = (tool.to_string(), marker.display().to_string());
        Some(SyncTool { tool, marker })
    })
}

fn is_conflict_copy(name: &str) -> bool {
    const MARKS: [&str; 4] = [
        ".sync-conflict-",
        "conflicted copy",
        "Conflicted copy",
        "(Case Conflict",
    ];
    MARKS.iter().any(|m| name.contains(m))
}

fn conflict_copies(root: &Path, state_dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let listed = [root, state_dir].map(crate::fsutil::read_dir);
    for entries in listed.into_iter().flatten() {
        for p in entries.flatten().map(|e| e.path()) {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if is_conflict_copy(name) {
                let rel = p.strip_prefix(root).unwrap_or(&p);
                found.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// The warning about a sync tool managing `root`, once per workspace (`.coord/sync-warned`).
pub fn sync_warning_once(root: &Path, shared: &Path) -> Option<String> {
    let marker = layout::sync_warned(shared);
    let state_dir = fs::symlink_metadata(layout::state_dir(shared)).is_ok_and(|m| m.is_dir());
    if !state_dir || fs::symlink_metadata(&marker).is_ok() {
        return None;
    }
    let tool = sync_tool(root)?;
    let text = sync_warning(&tool);
    let created = crate::fsutil::create_new(&marker, format!("{text}\n").as_bytes());
    created.is_ok_and(|made| made).then_some(text)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn sync_tools_are_found_by_their_markers() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("project");
        fs::create_dir_all(ws.join(".coord")).unwrap();
        assert_eq!(sync_tool(&ws), None);
        assert_eq!(sync_warning_once(&ws, &ws), None);
        fs::create_dir(dir.path().join(".stfolder")).unwrap();
        let found = sync_tool(&ws).unwrap();
        assert_eq!(found.tool, "Syncthing");
        let first = sync_warning_once(&ws, &ws).expect("warned the first time");
        assert!(first.contains("Syncthing"), "{first}");
        assert_eq!(sync_warning_once(&ws, &ws), None, "and only once");
    }

    /// #45: where this system cannot read a network folder's files past its own cache of
    /// their contents, `doctor` says so (a mount keeping contents across opens could show a
    /// re-taken lock as the one before); where it can, or on a local disk, it says nothing.
    #[test]
    fn doctor_says_when_records_cannot_be_read_past_the_cache() {
        use super::super::{FUSE, FsInfo};
        let dir = tempfile::tempdir().unwrap();
        let sshfs = Policy::choose(FsInfo::from_magic(FUSE, Some("fuse.sshfs")), None).unwrap();
        let blind = diagnosis(dir.path(), Vec::new(), &sshfs, None, false);
        assert!(!blind.reads_past_cache);
        let says =
            |w: &String| w.contains("past this machine's cache") && w.contains("kernel_cache");
        assert!(blind.warnings.iter().any(says), "{:?}", blind.warnings);
        let fresh = diagnosis(dir.path(), Vec::new(), &sshfs, None, true);
        let quiet = fresh.reads_past_cache && fresh.warnings.is_empty();
        assert!(quiet, "{fresh:?}");
        // This machine can: its temporary folder's files are read past the cache.
        assert!(cfg!(not(target_os = "linux")) || reads_past_cache(dir.path()));
    }

    #[test]
    fn conflict_copies_are_recognised() {
        assert!(is_conflict_copy(
            "notes.sync-conflict-20260101-120000-ABCDEF.txt"
        ));
        assert!(is_conflict_copy(
            "notes (Bob's conflicted copy 2026-01-01).txt"
        ));
        assert!(!is_conflict_copy("notes.txt.lock.claude"));
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.sync-conflict-1-2-X.txt"), "x").unwrap();
        fs::write(dir.path().join("a.txt"), "x").unwrap();
        let found = conflict_copies(dir.path(), &dir.path().join(".coord"));
        assert_eq!(found, vec!["a.sync-conflict-1-2-X.txt"]);
    }
}
