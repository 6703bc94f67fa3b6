//! Conflicts before the merge: `coord status` lists the files that two or more branches of the
//! repository's work trees changed, and whether their changes merge (real `git worktree add`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::Env;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = crate::rigs::git(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(dir: &Path, rel: &str, text: &str) {
    std::fs::write(dir.join(rel), text).unwrap();
}

const LINES: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

/// A repository `<env>/main` on `trunk` with `same.txt`, `apart.txt` and `own.txt`.
fn repo(env: &Env) -> PathBuf {
    let main = env.path("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q", "-b", "trunk"]);
    for f in ["same.txt", "apart.txt", "own.txt"] {
        write(&main, f, LINES);
    }
    git(&main, &["add", "."]);
    git(&main, &["commit", "-qm", "start"]);
    main
}

/// A fake `git` first on the PATH that leaves a mark each time it runs, then runs git.
fn counting_git(env: &Env) -> (PathBuf, PathBuf) {
    fake_git(env, "")
}

/// A fake `git` first on the PATH: leaves a mark each time it runs, runs the shell text
/// `before` (which may answer in git's stead and exit), then runs git.
fn fake_git(env: &Env, before: &str) -> (PathBuf, PathBuf) {
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = env.path("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let mark = env.path("git-ran");
    let script = bin.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\n{before}\nexec '{}' \"$@\"\n",
            mark.display(),
            real.trim()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    (PathBuf::from(path), mark)
}

fn status(env: &Env, dir: &Path, path: Option<&Path>) -> Value {
    let mut cmd = env.cmd().env_remove("COORD_DIR").cwd(dir);
    if let Some(p) = path {
        cmd = cmd.env("PATH", p);
    }
    cmd.args(["status", "--json"]).ok().json()
}

/// Two branches changing one line differently: CONFLICT; changing different parts of one
/// file: CLEAN; a file only one branch changed: not listed. Each with its work tree and branch,
/// seen from every work tree (one inside the main checkout too), and in the human view.
#[test]
fn files_changed_on_two_branches_are_listed_with_whether_they_merge() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let main = repo(&env);
    git(&main, &["worktree", "add", "-q", "../a", "-b", "alpha"]);
    git(
        &main,
        &["worktree", "add", "-q", ".claude/worktrees/b", "-b", "beta"],
    );
    let a = env.path("a");
    let b = main.join(".claude/worktrees/b");
    write(&a, "same.txt", &LINES.replace("1\n", "one from alpha\n"));
    write(&b, "same.txt", &LINES.replace("1\n", "one from beta\n"));
    write(&a, "apart.txt", &LINES.replace("2\n", "two from alpha\n"));
    write(&b, "apart.txt", &LINES.replace("9\n", "nine from beta\n"));
    write(&a, "own.txt", "only alpha\n");
    git(&a, &["commit", "-qam", "alpha"]);
    git(&b, &["commit", "-qam", "beta"]);

    let objects = || -> Vec<PathBuf> {
        let mut all = Vec::new();
        let mut dirs = vec![main.join(".git/objects")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    dirs.push(e.path());
                } else {
                    all.push(e.path());
                }
            }
        }
        all.sort();
        all
    };
    let before = objects();
    let a_top = std::fs::canonicalize(&a).unwrap().display().to_string();
    let b_top = std::fs::canonicalize(&b).unwrap().display().to_string();
    for dir in [&main, &a, &b] {
        let v = status(&env, dir, None);
        let c = v["conflicts"].as_array().unwrap();
        assert_eq!(c.len(), 2, "{dir:?}: {v:#}");
        let of = |f: &str| c.iter().find(|x| x["file"] == f).unwrap().clone();
        assert_eq!(of("same.txt")["state"], "CONFLICT", "{c:?}");
        assert_eq!(of("apart.txt")["state"], "CLEAN", "{c:?}");
        let trees = of("same.txt")["trees"].clone();
        assert!(
            trees
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["worktree"] == a_top.as_str() && t["branch"] == "alpha"),
            "{trees}"
        );
        assert!(
            trees
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["worktree"] == b_top.as_str() && t["branch"] == "beta"),
            "{trees}"
        );
        assert_eq!(v["conflicts_note"], Value::Null);
    }
    let human = env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&main)
        .arg("status")
        .ok();
    human
        .stdout_has("Changed on two or more branches")
        .stdout_has("same.txt")
        .stdout_has("CONFLICT")
        .stdout_has("alpha");
    // The merges were tried without writing to the repository.
    assert_eq!(objects(), before);
    // Merged away: once beta holds alpha's changes and resolves, nothing is left to show.
    git(&b, &["merge", "-q", "alpha", "-X", "ours", "-m", "merge"]);
    let v = status(&env, &main, None);
    assert_eq!(v["conflicts"], Value::Array(vec![]), "{v:#}");
}

/// Two worktrees whose branches changed different files: nothing listed, git did run; a lone
/// work tree: nothing listed and no git process at all.
#[test]
fn apart_branches_show_nothing_and_a_single_tree_runs_no_git() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let main = repo(&env);
    let (path, mark) = counting_git(&env);
    let v = status(&env, &main, Some(&path));
    assert_eq!(v["conflicts"], Value::Array(vec![]));
    assert_eq!(v["conflicts_note"], Value::Null);
    assert!(
        !mark.exists(),
        "git ran for a single work tree: {}",
        std::fs::read_to_string(&mark).unwrap_or_default()
    );

    git(&main, &["worktree", "add", "-q", "../a", "-b", "alpha"]);
    let a = env.path("a");
    write(&a, "own.txt", "only alpha\n");
    git(&a, &["commit", "-qam", "alpha"]);
    write(&main, "apart.txt", "only trunk\n");
    git(&main, &["commit", "-qam", "trunk"]);
    let v = status(&env, &main, Some(&path));
    assert_eq!(v["conflicts"], Value::Array(vec![]), "{v:#}");
    assert!(mark.exists(), "two work trees are compared with git");
}

/// Two work trees whose branches changed one file: a repository with both branches changed.
fn two_branches_on_one_file(env: &Env) -> PathBuf {
    let main = repo(env);
    git(&main, &["worktree", "add", "-q", "../a", "-b", "alpha"]);
    let a = env.path("a");
    write(&a, "same.txt", &LINES.replace("1\n", "one from alpha\n"));
    git(&a, &["commit", "-qam", "alpha"]);
    write(&main, "same.txt", &LINES.replace("1\n", "one from trunk\n"));
    git(&main, &["commit", "-qam", "trunk"]);
    main
}

/// git older than 2.38 cannot say whether changes merge: the files are listed `UNKNOWN`, and
/// the note says why.
#[test]
fn an_old_git_lists_the_files_as_unknown_and_says_why() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let main = two_branches_on_one_file(&env);
    let (path, _) = fake_git(
        &env,
        r#"[ "$1" = version ] && { echo 'git version 2.30.2'; exit 0; }
[ "$1" = merge-tree ] && exit 129"#,
    );
    let v = status(&env, &main, Some(&path));
    let c = v["conflicts"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{v:#}");
    assert_eq!(c[0]["file"], "same.txt");
    assert_eq!(c[0]["state"], "UNKNOWN");
    assert!(
        v["conflicts_note"].as_str().unwrap().contains("2.38"),
        "{v:#}"
    );
}

/// A git that does not answer is killed at the end of the budget: the view says what it left
/// out instead of waiting.
#[test]
fn a_git_that_hangs_is_cut_off_and_the_note_says_so() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let main = two_branches_on_one_file(&env);
    let (path, _) = fake_git(&env, r#"[ "$1" = merge-base ] && exec sleep 60"#);
    let v = status(&env, &main, Some(&path));
    assert_eq!(v["conflicts"], Value::Array(vec![]), "{v:#}");
    assert!(
        v["conflicts_note"]
            .as_str()
            .unwrap()
            .contains("pair of branches not compared"),
        "{v:#}"
    );
}
