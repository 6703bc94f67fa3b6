//! Conflicts before the merge (issue 27): for the work trees of one repository, the files that
//! two or more of their branches changed since they parted, and whether those changes merge
//! cleanly, so that a human sees a conflict while the agents still work, not at merge time.
//!
//! Each work tree's `HEAD` commit is compared with each other one: the files each changed since
//! their merge base (`git diff --name-only BASE COMMIT`) that both changed are listed, and
//! `git merge-tree --write-tree` (git 2.38 or later) says which of them would conflict. With an
//! older git the files are listed with the state `UNKNOWN` and a note says why. Commits only:
//! what an agent has not committed yet is covered by its locks (and the shell-edit notice).
//!
//! git runs only where the repository has two work trees or more, each call within what is
//! left of [`BUDGET`]; past it, the pairs not compared are left out and a note says so.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::workspace::Workspace;
use crate::worktree::{self, Tree};

/// How long the whole view may take.
pub const BUDGET: Duration = Duration::from_secs(5);

/// One side of a file changed by two or more branches: a work tree and its branch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Side {
    /// The work tree's top level.
    pub worktree: String,
    /// The branch checked out there (null: a detached HEAD).
    pub branch: Option<String>,
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

/// The view: the files, and a note when it is incomplete.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct View {
    /// The files changed on two or more branches, sorted.
    pub conflicts: Vec<Conflict>,
    /// Why the view is incomplete (an old git, out of time), when it is.
    pub note: Option<String>,
}

/// The view for the repository of the workspace `ws`. A single work tree (or no git): empty,
/// and no git process is started.
pub fn view(ws: &Workspace) -> View {
    let trees = worktree::trees(ws.root());
    if trees.len() < 2 {
        return View::default();
    }
    compare(&trees, Instant::now() + BUDGET)
}

/// A git command run within a deadline.
struct Git {
    deadline: Instant,
    timed_out: bool,
}

/// What a git call gave: its exit code and stdout.
struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
}

impl Git {
    fn run(&mut self, dir: &Path, args: &[&str]) -> Option<Ran> {
        self.run_with(dir, args, &[])
    }

    fn run_with(&mut self, dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Option<Ran> {
        if self.timed_out || Instant::now() >= self.deadline {
            self.timed_out = true;
            return None;
        }
        let mut child = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut out = child.stdout.take()?;
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            buf
        });
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < self.deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    self.timed_out = true;
                    break None;
                }
            }
        };
        // Out of time: the reader is left behind (a child of git may still hold the pipe).
        let status = status?;
        let stdout = reader.join().unwrap_or_default();
        Some(Ran {
            code: status.code(),
            stdout,
        })
    }

    /// stdout of a call that succeeded, trimmed.
    fn line(&mut self, dir: &Path, args: &[&str]) -> Option<String> {
        let ran = self.run(dir, args)?;
        (ran.code == Some(0)).then(|| String::from_utf8_lossy(&ran.stdout).trim().to_string())
    }
}

/// `(major, minor)` of `git version 2.47.3`.
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

fn compare(trees: &[Tree], deadline: Instant) -> View {
    let mut git = Git {
        deadline,
        timed_out: false,
    };
    let top = trees[0].top.clone();
    let Some(version) = git.line(&top, &["version"]) else {
        return View {
            conflicts: Vec::new(),
            note: Some("git cannot be run: the branches of the work trees are not compared".into()),
        };
    };
    let new_enough = parse_version(&version).is_some_and(|v| v >= (2, 38));
    // `merge-tree --write-tree` writes the merged trees as objects: into a folder of our own
    // that borrows the repository's objects, so that the repository is left as it was.
    let scratch = tempfile::Builder::new()
        .prefix("coord-merge-tree-")
        .tempdir()
        .ok();
    let objects = worktree::common_dir(&top).map(|c| c.join("objects"));
    let isolate: Vec<(&str, &Path)> = match (&scratch, &objects) {
        (Some(s), Some(o)) => vec![
            ("GIT_OBJECT_DIRECTORY", s.path()),
            ("GIT_ALTERNATE_OBJECT_DIRECTORIES", o.as_path()),
        ],
        _ => Vec::new(),
    };
    let why_unknown = if !new_enough {
        Some(
            "git is older than 2.38: whether the changes merge cleanly is not known (`git merge-tree --write-tree` needs 2.38)",
        )
    } else if isolate.is_empty() {
        Some(
            "no scratch folder for `git merge-tree`: whether the changes merge cleanly is not known",
        )
    } else {
        None
    };
    let merge_tree = why_unknown.is_none();
    // The work trees at each commit (two trees on one commit changed the same).
    let mut at: BTreeMap<String, Vec<Side>> = BTreeMap::new();
    for t in trees {
        let Some(commit) = git.line(&t.top, &["rev-parse", "--verify", "-q", "HEAD"]) else {
            continue;
        };
        at.entry(commit).or_default().push(Side {
            worktree: t.top.display().to_string(),
            branch: t.branch(),
        });
    }
    let commits: Vec<String> = at.keys().cloned().collect();
    let mut changed: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
    // file → (sides, any conflict, any unknown)
    let mut files: BTreeMap<String, (BTreeSet<Side>, bool, bool)> = BTreeMap::new();
    let mut skipped = 0usize;
    for (i, a) in commits.iter().enumerate() {
        for b in &commits[i + 1..] {
            let Some(base) = git.line(&top, &["merge-base", a, b]) else {
                skipped += usize::from(git.timed_out);
                continue;
            };
            let mut diff = |git: &mut Git, c: &String| -> Option<BTreeSet<String>> {
                if let Some(found) = changed.get(&(base.clone(), c.clone())) {
                    return Some(found.clone());
                }
                let ran = git.run(
                    &top,
                    &["diff", "--name-only", "--no-renames", "-z", &base, c, "--"],
                )?;
                let found = (ran.code == Some(0)).then(|| names(&ran.stdout))?;
                changed.insert((base.clone(), c.clone()), found.clone());
                Some(found)
            };
            let (Some(da), Some(db)) = (diff(&mut git, a), diff(&mut git, b)) else {
                skipped += usize::from(git.timed_out);
                continue;
            };
            let both: Vec<&String> = da.intersection(&db).collect();
            if both.is_empty() {
                continue;
            }
            // The files that do not merge, or None when git cannot tell.
            let conflicted: Option<BTreeSet<String>> = if merge_tree {
                git.run_with(
                    &top,
                    &[
                        "merge-tree",
                        "--write-tree",
                        "--name-only",
                        "--no-messages",
                        "-z",
                        a,
                        b,
                    ],
                    &isolate,
                )
                .and_then(|ran| match ran.code {
                    Some(0) => Some(BTreeSet::new()),
                    // The tree's id first, then the conflicted files.
                    Some(1) => Some(names(&ran.stdout).into_iter().skip(1).collect()),
                    _ => None,
                })
            } else {
                None
            };
            for f in both {
                let entry = files.entry(f.clone()).or_default();
                entry.0.extend(at[a].iter().cloned());
                entry.0.extend(at[b].iter().cloned());
                match &conflicted {
                    Some(c) => entry.1 |= c.contains(f),
                    None => entry.2 = true,
                }
            }
        }
    }
    let conflicts: Vec<Conflict> = files
        .into_iter()
        .map(|(file, (sides, conflict, unknown))| Conflict {
            file,
            state: if conflict {
                "CONFLICT"
            } else if unknown {
                "UNKNOWN"
            } else {
                "CLEAN"
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
        notes.push(format!(
            "stopped after {}s: {} pair{} of branches not compared",
            BUDGET.as_secs(),
            skipped.max(1),
            if skipped == 1 { "" } else { "s" }
        ));
    }
    View {
        conflicts,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
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
