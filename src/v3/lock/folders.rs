//! The folders of a work tree that the walk for hand-made locks reads, kept between processes
//! (`.coord/folders`), so that a view finds those locks with a `stat` of each folder instead of
//! a walk: the walk builds the repository's ignore rules into matchers anew in every process,
//! which costs more than everything else a Stop hook, a SessionStart or a `coord status` does in
//! a small tree.
//!
//! What is kept, per work tree: the stat data of the files the ignore rules come from (git's
//! config files, the user's own ignore file, `info/exclude`, those of the folders above), and
//! of every folder the walk entered, with the names of its subfolders (entered or not), the
//! stat data of its `.gitignore`, and the names in it that read as lock files. Used as git uses its untracked
//! cache: while a rule file is as kept, a folder whose stat data are as kept holds the same
//! names; a folder that changed is listed again, and only a new or removed subfolder, or a
//! changed `.gitignore`, needs the walk. Stat data that changed shortly before the file was
//! kept (its own mtime, the filesystem's clock) are not trusted, as a change within the same
//! tick of a coarse clock would not show: two seconds before, or a tenth of a second on a local
//! filesystem whose times have fractions of a second.
//!
//! Not kept: a tree with more than [`MAX_FOLDERS`] folders to enter, one holding another git
//! repository (its own rules), one with a name that is not UTF-8. A damaged or foreign file is
//! read as none. The file is a cache: deleting it costs one walk.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::fsutil::{self, Stat};
use crate::layout;

/// Trees with more folders than this to enter are walked every time.
pub const MAX_FOLDERS: usize = 20_000;

/// The largest `.coord/folders` read.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Stat data changed less than this before the file was written are not trusted: the
/// coarsest clock of a filesystem (FAT keeps two-second times; a network filesystem's are the
/// server's).
const RACY_NS: i128 = 2_000_000_000;

/// [`RACY_NS`] on a local filesystem whose times have fractions of a second: their clock is
/// the kernel's coarse one, which moves every tick (10 ms at most).
const RACY_FINE_NS: i128 = 100_000_000;

/// Work trees kept at most (the last ones walked).
const MAX_TREES: usize = 32;

const VERSION: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    version: u32,
    trees: Vec<Tree>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tree {
    /// The work tree's top level.
    top: String,
    /// The files the ignore rules come from, and their stat data (`None`: not there).
    rules: Vec<(String, Option<Stat>)>,
    folders: Vec<Folder>,
    /// Its folders took longer to read than [`RACY_FINE_NS`]: their stat data are judged with
    /// the two-second margin, whatever the filesystem.
    #[serde(default)]
    slow: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Folder {
    /// Relative to the top level (`""`: the top level itself).
    rel: String,
    stat: Stat,
    /// Every subfolder, entered or not.
    dirs: Vec<String>,
    /// Its `.gitignore`, when it has one.
    gitignore: Option<Stat>,
    /// The names in it that read as lock files.
    locks: Vec<String>,
}

/// A folder's listing, as far as the cache is concerned (the fields of a [`Folder`] that a
/// listing gives; kept flat in the file, whose stat data serde cannot buffer through a
/// flattened struct).
struct Listing {
    /// Every subfolder, entered or not.
    dirs: Vec<String>,
    /// Its `.gitignore`, when it has one.
    gitignore: Option<Stat>,
    /// The names in it that read as lock files.
    locks: Vec<String>,
}

/// The lock-named paths in the folders the walk of the tree at `top` (whose rules are `rules`)
/// would enter, from what `state` (a `.coord/` folder) keeps; `None` when the walk is needed.
pub fn lock_paths(state: &Path, top: &Path, rules: &Rules) -> Option<Vec<PathBuf>> {
    let file = layout::folders_cache(state);
    let (bytes, Some(written)) = fsutil::read_capped_with_mtime(&file, MAX_BYTES).ok()? else {
        return None;
    };
    let saved: Saved = serde_json::from_slice(&bytes).ok()?;
    if saved.version != VERSION {
        return None;
    }
    let key = top.to_str()?;
    let tree = saved.trees.into_iter().find(|t| t.top == key)?;
    let written = fsutil::ns_since_epoch(written);
    let fine = written % 1_000_000_000 != 0
        && crate::arbiter::policy(top).is_ok_and(|p| p.fs.class == crate::arbiter::FsClass::Local);
    let trusted_before = written
        - if fine && !tree.slow {
            RACY_FINE_NS
        } else {
            RACY_NS
        };
    let trusted = |now: Option<Stat>, kept: &Option<Stat>| {
        now == *kept
            && kept.is_none_or(|s| s.ctime_ns < trusted_before && s.mtime_ns < trusted_before)
    };
    if rules.files.len() != tree.rules.len()
        || rules
            .files
            .iter()
            .zip(&tree.rules)
            .any(|((path, now), (kept, stat))| path.to_str() != Some(kept) || !trusted(*now, stat))
    {
        return None;
    }
    let mut out = Vec::new();
    for folder in &tree.folders {
        let dir = top.join(&folder.rel);
        let now = fs::symlink_metadata(&dir)
            .ok()
            .filter(fs::Metadata::is_dir)?;
        if !trusted(Stat::read(&dir.join(".gitignore")), &folder.gitignore) {
            return None;
        }
        let names = if trusted(Some(Stat::of(&now)), &Some(folder.stat)) {
            folder.locks.clone()
        } else {
            let listing = list(&dir)?;
            if listing.dirs != folder.dirs || listing.gitignore != folder.gitignore {
                return None;
            }
            listing.locks
        };
        out.extend(names.iter().map(|name| dir.join(name)));
    }
    Some(out)
}

/// Whether this process keeps what its walks entered (see [`keep`]).
static KEEP: AtomicBool = AtomicBool::new(false);

/// From now on, keep the folders each walk of this process enters in `.coord/folders`. For
/// commands that write to the workspace anyway (a client's hooks, `unlock`, `startup`,
/// `shutdown`, the MCP server); views (`status`, `check`, `watch`) only read what those kept:
/// they never write a byte.
pub fn keep() {
    KEEP.store(true, Ordering::Relaxed);
}

/// Keep, in `state` (a `.coord/` folder that exists), the folders a walk of the tree at `top`
/// (under `rules`, as found before it) entered (`entered`, absolute, the top level among
/// them), for [`lock_paths`] to use; only in a process that asked to ([`keep`]).
pub fn store(state: &Path, top: &Path, rules: &Rules, entered: &[PathBuf]) {
    if !KEEP.load(Ordering::Relaxed)
        || entered.len() > MAX_FOLDERS
        || !fs::symlink_metadata(state).is_ok_and(|m| m.is_dir())
    {
        return;
    }
    // The rules as they are now, just before the file is written (its time is what their
    // stat data are judged against): a rule file changed during the walk leaves nothing kept.
    if rules
        .files
        .iter()
        .any(|(path, stat)| rule_stat(path) != *stat)
    {
        return;
    }
    // Stat data are judged against the file's own time: a folder read long before it was
    // written (a big tree) gets the wide margin.
    let reading = std::time::Instant::now();
    let Some(mut tree) = record(top, rules, entered) else {
        return;
    };
    tree.slow = reading.elapsed().as_nanos() > RACY_FINE_NS as u128 / 2;
    let file = layout::folders_cache(state);
    let mut saved = fsutil::read_capped(&file, MAX_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice::<Saved>(&b).ok())
        .filter(|s| s.version == VERSION)
        .unwrap_or_default();
    saved.version = VERSION;
    saved.trees.retain(|t| t.top != tree.top);
    saved.trees.push(tree);
    let excess = saved.trees.len().saturating_sub(MAX_TREES);
    saved.trees.drain(..excess);
    if let Ok(bytes) = serde_json::to_vec(&saved) {
        // A cache: a failed write costs a walk next time.
        let _ = fsutil::replace(&file, &bytes);
    }
}

/// What is kept of the tree at `top` whose walk entered `entered`; `None` when it cannot be
/// kept (a name that is not UTF-8, a nested repository, a folder gone meanwhile).
fn record(top: &Path, rules: &Rules, entered: &[PathBuf]) -> Option<Tree> {
    let rules = rules
        .files
        .iter()
        .map(|(path, stat)| Some((path.to_str()?.to_string(), *stat)))
        .collect::<Option<Vec<_>>>()?;
    let mut folders = Vec::with_capacity(entered.len());
    let mut seen = BTreeSet::new();
    for dir in entered {
        let rel = dir.strip_prefix(top).ok()?.to_str()?.to_string();
        if !seen.insert(rel.clone()) {
            continue;
        }
        // Stat data first: a change while the folder is listed then shows next time.
        let stat = Stat::read(dir)?;
        let listing = list(dir)?;
        if !rel.is_empty() && listing.dirs.iter().any(|d| d == ".git") {
            return None;
        }
        folders.push(Folder {
            rel,
            stat,
            dirs: listing.dirs,
            gitignore: listing.gitignore,
            locks: listing.locks,
        });
    }
    // The top level is always entered.
    seen.contains("").then_some(())?;
    Some(Tree {
        top: top.to_str()?.to_string(),
        rules,
        folders,
        slow: false,
    })
}

/// The names of `dir` the cache keeps; `None` when it cannot be listed or holds a name that is
/// not UTF-8.
fn list(dir: &Path) -> Option<Listing> {
    let mut out = Listing {
        dirs: Vec::new(),
        gitignore: None,
        locks: Vec::new(),
    };
    let mut whole = true;
    fsutil::for_each_entry(dir, |name, is_dir| {
        let Ok(name) = std::str::from_utf8(name) else {
            whole = false;
            return;
        };
        let is_dir = is_dir
            .unwrap_or_else(|| fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_dir()));
        if layout::parse_lock_name(name).is_some() {
            out.locks.push(name.to_string());
        }
        if is_dir {
            out.dirs.push(name.to_string());
        } else if name == ".gitignore" {
            out.gitignore = Stat::read(&dir.join(name));
        }
    })
    .ok()?;
    if !whole {
        return None;
    }
    out.dirs.sort();
    out.locks.sort();
    Some(out)
}

/// Where the ignore rules of a work tree come from, outside its folders, looked up once per
/// walk: the user's own ignore file, for the walker, and every file the rules depend on, with
/// its stat data as found before the walk, for the kept folders.
pub struct Rules {
    /// The user's own ignore file (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`),
    /// in a git work tree; it may not exist.
    pub excludes: Option<PathBuf>,
    /// Git's config files (they name that file), that file, the repository's `info/exclude`,
    /// and in every folder above the top its `.gitignore` and `.git` (a repository there makes
    /// its rules apply); each with its stat data as `rule_stat` reads them.
    files: Vec<(PathBuf, Option<Stat>)>,
}

impl Rules {
    /// The rules of the work tree at `top`.
    pub fn of(top: &Path) -> Rules {
        let common = crate::worktree::enclosing_common_dir(top);
        let excludes = crate::gitconfig::excludes_file(common.as_deref());
        let mut files = crate::gitconfig::config_files(common.as_deref());
        files.extend(excludes.clone());
        if let Some(common) = &common {
            files.push(common.join("info").join("exclude"));
        }
        for above in top.ancestors().skip(1) {
            files.push(above.join(".gitignore"));
            files.push(above.join(".git"));
        }
        Rules {
            excludes: excludes.filter(|_| common.is_some()),
            files: files
                .into_iter()
                .map(|path| {
                    let stat = rule_stat(&path);
                    (path, stat)
                })
                .collect(),
        }
    }
}

/// The stat data the cache compares for a rule file: for a `.git` (whose own times change with
/// every git command) only what it is, by its inode; for any other file all of them.
fn rule_stat(path: &Path) -> Option<Stat> {
    let stat = Stat::read_followed(path)?;
    Some(if path.file_name().is_some_and(|n| n == ".git") {
        Stat {
            ino: stat.ino,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
        }
    } else {
        stat
    })
}
