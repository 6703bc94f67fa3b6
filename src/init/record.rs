//! What `coord init` wrote, kept in `.coord/init.json` so that `coord init --remove` can put a
//! file it did not change since back byte for byte: each file's content before the first init
//! that changed it and after the last, the folders init created, and whether it made `.coord/`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fsutil;
use crate::layout;

/// The record (an unreadable one reads as empty: removal then works from the files alone).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Record {
    /// `coord init` created `.coord/`.
    pub state_dir: bool,
    /// Folders `coord init` created, relative to the root, parents first.
    pub dirs: Vec<String>,
    /// Per file (relative to the root): its content before and after.
    pub files: BTreeMap<String, Entry>,
}

/// One file's content before coord wrote it (`None`: it did not exist) and after.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Entry {
    pub before: Option<String>,
    pub after: String,
}

impl Record {
    pub fn load(root: &Path) -> Record {
        let path = layout::init_record(&crate::worktree::shared_root(root));
        let bytes = fsutil::read_capped(&path, 64 * 1024 * 1024).ok();
        bytes
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Note the folders from `dir` up to the root that do not exist yet.
    pub fn note_dirs(&mut self, root: &Path, dir: &Path) {
        let missing: Vec<String> = dir
            .ancestors()
            .take_while(|d| *d != root && d.starts_with(root))
            .filter(|d| std::fs::symlink_metadata(d).is_err())
            .map(|d| super::rel_of(root, d))
            .collect();
        for d in missing.into_iter().rev() {
            if !self.dirs.contains(&d) {
                self.dirs.push(d);
            }
        }
    }

    /// Note that `file` was written with `after`, having held `before`. A file coord already
    /// wrote and nobody changed since keeps its first `before`.
    pub fn note_write(&mut self, file: &str, before: Option<Vec<u8>>, after: &[u8]) {
        let before = match (self.files.get(file), before) {
            (Some(e), Some(b)) if e.after.as_bytes() == b.as_slice() => Ok(e.before.clone()),
            (_, b) => b.map(String::from_utf8).transpose(),
        };
        // A file that is not text is not recorded: removal then works from the file alone.
        match (String::from_utf8(after.to_vec()), before) {
            (Ok(after), Ok(before)) => self.files.insert(file.to_string(), Entry { before, after }),
            _ => self.files.remove(file),
        };
    }

    /// Write the record (`.coord/` exists by then), unless it already says this.
    pub fn save(&self, root: &Path) -> Result<()> {
        let text = super::pretty_json(self);
        let path = layout::init_record(&crate::worktree::shared_root(root));
        if fsutil::read_capped(&path, text.len() as u64 + 1).is_ok_and(|now| now == text) {
            return Ok(());
        }
        fsutil::replace_durable(&path, &text)
    }
}
