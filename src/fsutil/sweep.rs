//! Temporary files left behind by a killed process, removed by the next coord in the folder.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::{host, layout};

/// Remove coord's temporary files in `dir` whose writer is gone: at once when their process
/// is known dead on this host, after an hour in any case. Returns how many were removed.
pub fn sweep_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries.flatten().filter(sweep_entry).count()
}

/// [`sweep_temps`] for one entry of a folder being listed anyway: removes it when it is one of
/// coord's temporary files whose writer is gone. Returns whether it was removed.
pub fn sweep_entry(entry: &fs::DirEntry) -> bool {
    let name = entry.file_name();
    if name.to_str().is_some_and(layout::is_fuse_hidden) {
        return sweep_fuse_hidden(entry);
    }
    let Some((tag, pid)) = name.to_str().and_then(layout::parse_temp_name) else {
        return false;
    };
    let old = entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(3600));
    let gone = tag == host::host_tag() && pid != host::pid() && !host::pid_alive(pid);
    (gone || old) && fs::remove_file(entry.path()).is_ok()
}

/// A `.fuse_hidden…` file: a record removed while a process on the same FUSE mount still had it
/// open, kept by FUSE until that process closes it. coord opens records for milliseconds, so one
/// older than a minute is a leftover (its process was killed, or the mount went away).
fn sweep_fuse_hidden(entry: &fs::DirEntry) -> bool {
    let old = entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(60));
    old && entry.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(entry.path()).is_ok()
}
