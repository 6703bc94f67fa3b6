//! Conflicts before the merge (issue 27): for the work trees of one repository, the files that
//! two or more of their branches changed since they parted, and whether those changes merge
//! cleanly, so that a human sees a conflict while the agents still work, not at merge time.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::workspace::Workspace;
use crate::worktree;

/// How long the whole view may take.
pub const BUDGET: Duration = Duration::from_secs(5);

/// A work tree and its branch: one side of a file two branches changed, or one of the trees
/// sharing a workspace (`coord status`'s `worktrees`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Side {
    /// The work tree's top level.
    pub worktree: String,
    /// The branch checked out there (null: a detached HEAD).
    pub branch: Option<String>,
}

impl Side {
    /// The work tree `t` and its branch.
    pub fn of(t: &worktree::Tree) -> Side {
        let (worktree, branch) = (t.top.display().to_string(), t.branch());
        Side { worktree, branch }
    }
}

/// A file that two or more branches changed since their merge base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The file, relative to the top level.
    pub file: String,
    /// `CONFLICT` (some two of the changes do not merge), `CLEAN` (they merge) or `UNKNOWN`
    /// (git cannot tell: older than 2.38, or out of time).
    pub state: &'static str,
    /// The work trees whose branches changed it.
    pub trees: Vec<Side>,
}

/// For the repository of the workspace `ws`: the files changed on two or more branches, sorted,
/// and why that list is incomplete (an old git, out of time), when it is. A single work tree
/// (or no git): empty, and no git process is started. Git gives up at `deadline`.
pub fn view(ws: &Workspace, deadline: Instant) -> (Vec<Conflict>, Option<String>) {
    let trees = worktree::trees(ws.root());
    if trees.len() < 2 {
        return (Vec::new(), None);
    }
    let mut git = Git::new(deadline);
    let top = trees[0].top.clone();
    let Some(version) = git.line(&top, &["version"]) else {
        let note = "git cannot be run: the branches of the work trees are not compared";
        return (Vec::new(), Some(note.into()));
    };
    let scratch = Scratch::new(&top, &version);
    let why_unknown = scratch.as_ref().err().copied();
    // The work trees at each commit (two trees on one commit changed the same).
    let mut at: BTreeMap<String, Vec<Side>> = BTreeMap::new();
    for t in &trees {
        if let Some(commit) = git.line(&t.top, &["rev-parse", "--verify", "-q", "HEAD"]) {
            at.entry(commit).or_default().push(Side::of(t));
        }
    }
    let commits: Vec<&String> = at.keys().collect();
    // file → (sides, any conflict, any unknown)
    let mut files: BTreeMap<String, (BTreeSet<Side>, bool, bool)> = BTreeMap::new();
    let mut skipped = 0usize;
    for (i, a) in commits.iter().enumerate() {
        for b in &commits[i + 1..] {
            let Some((both, conflicted)) = git.both_changed(&top, scratch.as_ref().ok(), a, b)
            else {
                skipped += usize::from(git.timed_out);
                continue;
            };
            for f in both {
                let entry = files.entry(f.clone()).or_default();
                entry.0.extend(at[*a].iter().chain(&at[*b]).cloned());
                match &conflicted {
                    Some(c) => entry.1 |= c.contains(&f),
                    None => entry.2 = true,
                }
            }
        }
    }
    let conflicts: Vec<Conflict> = files
        .into_iter()
        .map(|(file, (sides, conflict, unknown))| Conflict {
            file,
            state: match (conflict, unknown) {
                (true, _) => "CONFLICT",
                (_, true) => "UNKNOWN",
                _ => "CLEAN",
            },
            trees: sides.into_iter().collect(),
        })
        .collect();
    let mut notes = Vec::new();
    if let Some(why) = why_unknown
        && conflicts.iter().any(|c| c.state == "UNKNOWN")
    {
        notes.push(why.to_string());
    }
    if git.timed_out {
        let (secs, n) = (BUDGET.as_secs(), skipped.max(1));
        let s = if skipped == 1 { "" } else { "s" };
        notes.push(format!(
            "stopped after {secs}s: {n} pair{s} of branches not compared"
        ));
    }
    (conflicts, (!notes.is_empty()).then(|| notes.join("; ")))
}

/// A branch of the remote (as last fetched) that changed files this work tree's branch
/// changed too, since their merge base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteBranch {
    /// Its name as git shows it (`origin/copilot/fix`).
    pub branch: String,
    /// `CONFLICT` (one of `files` does not merge), `CLEAN` or `UNKNOWN`.
    pub state: &'static str,
    /// The files both changed, sorted.
    pub files: Vec<String>,
}

/// At most this many remote branches are compared, the most recent first.
pub const REMOTE_BRANCHES: usize = 20;

/// Remote branches whose tip is older than this are not compared.
pub const REMOTE_RECENT: Duration = Duration::from_secs(30 * 24 * 3600);

/// The branches of `remote` as last fetched (no fetch) that changed the same files as the
/// work tree at `top` since their merge base: not its `HEAD`, not the branch its branch tracks,
/// not one at the same commit; only the [`REMOTE_BRANCHES`] most recent whose tip is newer than
/// [`REMOTE_RECENT`]. Git gives up at `deadline` (what was compared by then is kept).
pub fn remote_branches(top: &Path, remote: &str, deadline: Instant) -> Vec<RemoteBranch> {
    let mut git = Git::new(deadline);
    let Some(head) = git.line(top, &["rev-parse", "--verify", "-q", "HEAD"]) else {
        return Vec::new();
    };
    let tracked = git.line(top, &["rev-parse", "--symbolic-full-name", "@{u}"]);
    let format = "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(symref)";
    let prefix = format!("refs/remotes/{remote}/");
    let args = ["for-each-ref", "--sort=-committerdate", format, &prefix];
    let Some(listed) = git.line(top, &args) else {
        return Vec::new();
    };
    let now = std::time::UNIX_EPOCH.elapsed().unwrap_or_default();
    let since = now.saturating_sub(REMOTE_RECENT).as_secs();
    let tips: Vec<(&str, &str)> = listed
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\0');
            let (name, tip, date, symref) = (f.next()?, f.next()?, f.next()?, f.next()?);
            let recent = date.parse::<u64>().is_ok_and(|d| d >= since);
            (recent && symref.is_empty() && tracked.as_deref() != Some(name) && tip != head)
                .then(|| (name.strip_prefix("refs/remotes/").unwrap_or(name), tip))
        })
        .take(REMOTE_BRANCHES)
        .collect();
    if tips.is_empty() {
        return Vec::new();
    }
    let version = git.line(top, &["version"]);
    let scratch = version.and_then(|v| Scratch::new(top, &v).ok());
    let mut out = Vec::new();
    for (name, tip) in tips {
        let Some((files, conflicted)) = git.both_changed(top, scratch.as_ref(), &head, tip) else {
            continue;
        };
        let state = match conflicted {
            _ if files.is_empty() => continue,
            Some(c) if files.iter().any(|f| c.contains(f)) => "CONFLICT",
            Some(_) => "CLEAN",
            None => "UNKNOWN",
        };
        out.push(RemoteBranch {
            branch: name.to_string(),
            state,
            files,
        });
    }
    out
}

/// Git run with a deadline; the diffs it read, by (base, commit).
struct Git {
    deadline: Instant,
    timed_out: bool,
    diffs: HashMap<(String, String), BTreeSet<String>>,
}

impl Git {
    fn new(deadline: Instant) -> Git {
        Git {
            deadline,
            timed_out: false,
            diffs: HashMap::new(),
        }
    }

    /// Git's exit code and stdout; `None` when it cannot run or runs out of time.
    fn run(
        &mut self,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &Path)],
    ) -> Option<(Option<i32>, Vec<u8>)> {
        if self.timed_out || Instant::now() >= self.deadline {
            self.timed_out = true;
            return None;
        }
        match crate::remote::git::run_with(dir, args, env, None, self.deadline) {
            Ok(ran) => Some((ran.code, ran.stdout)),
            Err(crate::remote::git::Failed::Timeout) => {
                self.timed_out = true;
                None
            }
            Err(crate::remote::git::Failed::Spawn(_)) => None,
        }
    }

    fn line(&mut self, dir: &Path, args: &[&str]) -> Option<String> {
        let (code, out) = self.run(dir, args, &[])?;
        (code == Some(0)).then(|| String::from_utf8_lossy(&out).trim().to_string())
    }

    /// The files `to` changed since `base`.
    fn changed(&mut self, top: &Path, base: &str, to: &str) -> Option<BTreeSet<String>> {
        let key = (base.to_string(), to.to_string());
        if let Some(found) = self.diffs.get(&key) {
            return Some(found.clone());
        }
        let args = ["diff", "--name-only", "--no-renames", "-z", base, to, "--"];
        let (code, out) = self.run(top, &args, &[])?;
        let found = (code == Some(0)).then(|| names(&out))?;
        self.diffs.insert(key, found.clone());
        Some(found)
    }

    /// The files both `a` and `b` changed since their merge base, sorted, and those of the
    /// whole merge that do not merge (`None`: not known); `None` when git cannot tell.
    fn both_changed(
        &mut self,
        top: &Path,
        scratch: Option<&Scratch>,
        a: &str,
        b: &str,
    ) -> Option<(Vec<String>, Option<BTreeSet<String>>)> {
        let base = self.line(top, &["merge-base", a, b])?;
        let (da, db) = (self.changed(top, &base, a)?, self.changed(top, &base, b)?);
        let both: Vec<String> = da.intersection(&db).cloned().collect();
        if both.is_empty() {
            return Some((both, None));
        }
        Some((both, scratch.and_then(|s| s.conflicted(self, top, a, b))))
    }
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().nth(2)?;
    let mut parts = v.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// NUL-separated names.
fn names(out: &[u8]) -> BTreeSet<String> {
    out.split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

/// Where `git merge-tree --write-tree` writes the merged trees: a folder of our own that
/// borrows the repository's objects, so that the repository is left as it was.
struct Scratch {
    dir: tempfile::TempDir,
    objects: std::path::PathBuf,
}

impl Scratch {
    fn new(top: &Path, version: &str) -> Result<Scratch, &'static str> {
        if parse_version(version).is_none_or(|v| v < (2, 38)) {
            return Err(
                "git is older than 2.38: whether the changes merge cleanly is not known (`git merge-tree --write-tree` needs 2.38)",
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("coord-merge-tree-")
            .tempdir()
            .ok();
        let objects = worktree::common_dir(top).map(|c| c.join("objects"));
        match (dir, objects) {
            (Some(dir), Some(objects)) => Ok(Scratch { dir, objects }),
            _ => Err(
                "no scratch folder for `git merge-tree`: whether the changes merge cleanly is not known",
            ),
        }
    }

    fn conflicted(&self, git: &mut Git, top: &Path, a: &str, b: &str) -> Option<BTreeSet<String>> {
        let isolate = [
            ("GIT_OBJECT_DIRECTORY", self.dir.path()),
            ("GIT_ALTERNATE_OBJECT_DIRECTORIES", self.objects.as_path()),
        ];
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            a,
            b,
        ];
        let (code, out) = git.run(top, &args, &isolate)?;
        match code {
            Some(0) => Some(BTreeSet::new()),
            // The tree's id first, then the conflicted files.
            Some(1) => Some(names(&out).into_iter().skip(1).collect()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("git version 2.47.3"), Some((2, 47)));
        assert_eq!(
            parse_version("git version 2.39.5 (Apple Git-154)"),
            Some((2, 39))
        );
        assert_eq!(parse_version("nonsense"), None);
    }
}
