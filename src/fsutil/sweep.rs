//! Temporary files left behind by a killed process, removed by the next coord in the folder.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::{host, layout};

/// Remove coord's temporary files in `dir` whose writer is dead here or an hour gone; how many.
pub fn sweep_temps(dir: &Path) -> usize {
    let entries = super::read_dir(dir).into_iter().flatten();
    let names = entries.map_while(Result::ok).map(|e| e.file_name());
    names
        .filter(|name| name.to_str().is_some_and(|name| sweep_name(dir, name)))
        .count()
}

/// [`sweep_temps`] for one entry of a folder being listed anyway; whether it was removed.
pub fn sweep_entry(entry: &fs::DirEntry) -> bool {
    let (path, name) = (entry.path(), entry.file_name());
    let found = path.parent().zip(name.to_str());
    found.is_some_and(|(dir, name)| sweep_name(dir, name))
}

/// Remove `dir/name` when it is one of coord's temporary files whose writer is gone, or a
/// FUSE leftover (`.fuse_hidden…`: a record removed while a process on the same FUSE mount
/// still had it open) unused for a minute; whether it was removed.
fn sweep_name(dir: &Path, name: &str) -> bool {
    let temp = layout::parse_temp_name(name);
    let fuse = layout::is_fuse_hidden(name);
    if temp.is_none() && !fuse {
        return false;
    }
    let path = dir.join(name);
    let meta = fs::symlink_metadata(&path).ok();
    let age = meta
        .as_ref()
        .and_then(|m| m.modified().ok()?.elapsed().ok());
    let older = |secs| age.is_some_and(|age| age > Duration::from_secs(secs));
    let gone = match temp {
        Some((tag, pid)) => {
            older(3600) || tag == host::host_tag() && pid != host::pid() && !host::pid_alive(pid)
        }
        None => older(60) && meta.is_some_and(|m| m.is_file()),
    };
    gone && fs::remove_file(&path).is_ok()
}
