//! Temporary files left behind by a killed process, removed by the next coord in the folder.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::{host, layout};

/// Remove coord's temporary files in `dir` whose writer is gone: at once when their process
/// is known dead on this host, after an hour in any case. Returns how many were removed.
pub fn sweep_temps(dir: &Path) -> usize {
    let mut swept = 0;
    let _ = super::for_each_name(dir, |name| {
        if let Ok(name) = std::str::from_utf8(name)
            && sweep_name(dir, name)
        {
            swept += 1;
        }
    });
    swept
}

/// [`sweep_temps`] for one entry of a folder being listed anyway: removes it when it is one of
/// coord's temporary files whose writer is gone. Returns whether it was removed.
pub fn sweep_entry(entry: &fs::DirEntry) -> bool {
    let path = entry.path();
    match (path.parent(), entry.file_name().to_str()) {
        (Some(dir), Some(name)) => sweep_name(dir, name),
        _ => false,
    }
}

/// Remove `dir/name` when it is one of coord's temporary files whose writer is gone (or a FUSE
/// leftover); whether it was removed.
fn sweep_name(dir: &Path, name: &str) -> bool {
    if layout::is_fuse_hidden(name) {
        return sweep_fuse_hidden(&dir.join(name));
    }
    let Some((tag, pid)) = layout::parse_temp_name(name) else {
        return false;
    };
    let path = dir.join(name);
    let old = fs::symlink_metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(3600));
    let gone = tag == host::host_tag() && pid != host::pid() && !host::pid_alive(pid);
    (gone || old) && fs::remove_file(&path).is_ok()
}

/// A `.fuse_hidden…` file: a record removed while a process on the same FUSE mount still had it
/// open, kept by FUSE until that process closes it.
fn sweep_fuse_hidden(path: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > Duration::from_secs(60));
    old && meta.is_file() && fs::remove_file(path).is_ok()
}
