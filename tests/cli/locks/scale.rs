//! Big trees: the views find locks without walking ignored folders (coord's index of its own
//! locks, `.coord/held/`, and a walk of the folders git does not ignore), the index stays a
//! superset of the lock files through a kill -9, and lock/unlock of thousands of files of one
//! folder stay correct.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::support::*;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A hand-made lock in the seed's form, as an agent following the protocol by hand writes it.
fn hand_lock(env: &Env, rel: &str, agent: &str, locked_at: &str) {
    env.write(
        &format!("{rel}.lock.{agent}"),
        crate::rigs::seed_lock(rel, agent, locked_at),
    );
}

/// (file, agent) of every lock `coord status --json` lists.
fn listed(env: &Env) -> BTreeSet<(String, String)> {
    locks_in(env.cmd())
}

/// (file, agent) of every lock `status --json` lists, run as `cmd`.
fn locks_in(cmd: Cmd) -> BTreeSet<(String, String)> {
    let v: serde_json::Value = cmd.args(["status", "--json"]).ok().json();
    v["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["file"].as_str().unwrap().to_string(),
                l["agent"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `coord` in `env` reading git's config as a user whose home is `home` would: `HOME`,
/// `XDG_CONFIG_HOME` at `home/xdg`, no system config, no `GIT_CONFIG_GLOBAL`.
fn with_home(env: &Env, home: &Path) -> Cmd {
    env.cmd()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("xdg"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_CONFIG_GLOBAL")
}

/// (file, agent) of every lock file under `dir` (relative to the root).
fn lock_files_under(env: &Env, dir: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut stack = vec![env.path(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if let Some((base, agent)) = name.rsplit_once(".lock.") {
                let rel = e.path().parent().unwrap().join(base);
                let rel = rel.strip_prefix(env.root()).unwrap().to_string_lossy();
                out.insert((rel.into_owned(), agent.to_string()));
            }
        }
    }
    out
}

/// How many entries the index of locks (`.coord/held/`) has.
fn held_entries(env: &Env) -> usize {
    std::fs::read_dir(env.path(".coord/held")).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".held."))
            .count()
    })
}

fn pair(file: &str, agent: &str) -> (String, String) {
    (file.to_string(), agent.to_string())
}

const OLD: &str = "2026-01-28T01:00:00+00:00";

#[test]
fn views_find_hand_made_locks_where_git_looks_and_coord_locks_in_ignored_folders() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    env.write(".gitignore", "node_modules/\nbuild/\n*.lock.*\n*.bak\n");
    env.write("README.md", "read me\n");
    env.write("src/app.js", "app\n");
    env.write("node_modules/pkg/lib/index.js", "module.exports = 1;\n");
    env.write("node_modules/pkg/lib/other.js", "module.exports = 2;\n");
    git(env.root(), &["init", "-q"]);
    git(env.root(), &["add", "-A"]);
    git(env.root(), &["commit", "-qm", "start"]);
    env.cmd().arg("init").ok();

    // Made by hand where git looks: tracked folders, an untracked one, the root. Their names are
    // ignored (`*.lock.*`), their folders are not: they are found.
    hand_lock(&env, "README.md", "carol", &chrono_now());
    hand_lock(&env, "src/app.js", "bob", OLD);
    env.write("src/new/draft.js", "draft\n");
    hand_lock(&env, "src/new/draft.js", "dave", &chrono_now());
    // coord's own lock inside an ignored folder: found through the index.
    env.agent("alice")
        .args(["lock", "node_modules/pkg/lib/index.js", "--no-backup"])
        .ok();
    // A lock made by hand inside an ignored folder is not walked to (every acquire of that file
    // still sees it, as the last step of this test shows).
    hand_lock(&env, "node_modules/pkg/lib/other.js", "erin", &chrono_now());

    let want: BTreeSet<_> = [
        pair("README.md", "carol"),
        pair("src/app.js", "bob"),
        pair("src/new/draft.js", "dave"),
        pair("node_modules/pkg/lib/index.js", "alice"),
    ]
    .into_iter()
    .collect();
    assert_eq!(listed(&env), want);

    // check --strict sees the stale hand-made lock in a walked folder.
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("src/app.js");

    // The session-start context of another agent names alice's lock in the ignored folder.
    let payload = serde_json::json!({
        "session_id": "0197f1ed-55e2-7a19-be34-6aa5a64f4b50",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": env.root(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let out = env
        .cmd()
        .args(["hook", "claude"])
        .env_remove("COORD_DIR")
        .stdin(payload.to_string())
        .ok();
    let text = &out.stdout;
    assert!(text.contains("node_modules/pkg/lib/index.js"), "{text}");

    // The hand-made lock in the ignored folder still excludes.
    env.agent("frank")
        .args(["lock", "node_modules/pkg/lib/other.js", "--no-wait"])
        .code(3)
        .stderr_has("erin");

    // Outside a git work tree every folder is walked, as before.
    std::fs::remove_dir_all(env.path(".git")).unwrap();
    assert!(listed(&env).contains(&pair("node_modules/pkg/lib/other.js", "erin")));
}

/// The user's own ignore rules count as git counts them: `core.excludesFile` from the global
/// config (a quoted value with `~/`), the repository's config over the global one, and
/// `$XDG_CONFIG_HOME/git/ignore` when none is set. A hand-made lock in a folder they ignore is
/// not walked to; one in a folder they leave alone is found.
#[test]
fn the_users_own_ignore_file_is_honoured_as_git_honours_it() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let xdg = home.path().join("xdg");
    std::fs::create_dir_all(xdg.join("git")).unwrap();
    env.write("README.md", "read me\n");
    git(env.root(), &["init", "-q"]);
    for dir in ["vendor", "cache", "dist", "src"] {
        env.write(&format!("{dir}/a.js"), "a\n");
        hand_lock(&env, &format!("{dir}/a.js"), "carol", &chrono_now());
    }
    let listed_with = |extra: &[(&str, &std::ffi::OsStr)]| {
        let mut cmd = with_home(&env, home.path());
        for (k, v) in extra {
            cmd = cmd.env(k, v);
        }
        locks_in(cmd)
    };
    let all = |dirs: &[&str]| -> BTreeSet<(String, String)> {
        dirs.iter()
            .map(|d| pair(&format!("{d}/a.js"), "carol"))
            .collect()
    };

    // No rule anywhere: every folder is walked.
    assert_eq!(listed_with(&[]), all(&["vendor", "cache", "dist", "src"]));
    // The default file under XDG_CONFIG_HOME.
    std::fs::write(xdg.join("git/ignore"), "dist/\n").unwrap();
    assert_eq!(listed_with(&[]), all(&["vendor", "cache", "src"]));
    // core.excludesFile in the global config replaces it.
    std::fs::write(home.path().join("my-ignore"), "vendor/\n# not a rule\n").unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[user]\n\tname = t\n[Core]\n\texcludesFile = \"~/my-ignore\" ; mine\n",
    )
    .unwrap();
    assert_eq!(listed_with(&[]), all(&["cache", "dist", "src"]));
    // The repository's own config wins over the global one.
    std::fs::write(home.path().join("repo-ignore"), "cache/\n").unwrap();
    git(
        env.root(),
        &[
            "config",
            "core.excludesFile",
            &home.path().join("repo-ignore").to_string_lossy(),
        ],
    );
    assert_eq!(listed_with(&[]), all(&["vendor", "dist", "src"]));
    // An empty GIT_CONFIG_GLOBAL means no global config; the repository's still counts.
    assert_eq!(
        listed_with(&[("GIT_CONFIG_GLOBAL", std::ffi::OsStr::new(""))]),
        all(&["vendor", "dist", "src"])
    );
    // git agrees on every folder.
    let out = Command::new("git")
        .args([
            "check-ignore",
            "vendor/a.js",
            "cache/a.js",
            "dist/a.js",
            "src/a.js",
        ])
        .current_dir(env.root())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", &xdg)
        .env_remove("GIT_CONFIG_GLOBAL")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "cache/a.js\n");
}

/// A tree of more folders than the walk takes in one thread is walked again in parallel: every
/// hand-made lock in it is found either way, in a git work tree and outside one.
#[test]
fn a_tree_of_many_folders_still_shows_every_hand_made_lock() {
    let env = Env::new();
    let mut want = BTreeSet::new();
    // 350 folders, each with a subfolder holding a locked file: a walk cut short misses some.
    for i in 0..350 {
        let rel = format!("pkg{i:03}/src/mod.rs");
        env.write(&rel, "x\n");
        hand_lock(&env, &rel, "carol", &chrono_now());
        want.insert(pair(&rel, "carol"));
    }
    assert_eq!(listed(&env), want);
    if crate::rigs::git_or_skip() {
        git(env.root(), &["init", "-q"]);
        env.write(".gitignore", "pkg349/\n");
        want.remove(&pair("pkg349/src/mod.rs", "carol"));
        assert_eq!(listed(&env), want);
    }
}

/// Every change to the tree and to the ignore rules shows in the next view: a lock made by
/// hand, removed, in a new folder; a `.gitignore` edited or made, `info/exclude`, the user's own
/// ignore file, `core.excludesFile`; a folder removed.
#[test]
fn views_follow_every_change_of_the_tree_and_the_ignore_rules() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    env.write(".gitignore", "node_modules/\nbuild/\n");
    for f in ["src/app.js", "src/lib/util.js", "docs/readme.md"] {
        env.write(f, "x\n");
    }
    git(env.root(), &["init", "-q"]);
    let locks = || locks_in(with_home(&env, home.path()));
    hand_lock(&env, "src/app.js", "carol", &chrono_now());
    assert_eq!(locks(), [pair("src/app.js", "carol")].into_iter().collect());
    hand_lock(&env, "src/lib/util.js", "bob", &chrono_now());
    assert!(locks().contains(&pair("src/lib/util.js", "bob")));
    std::fs::remove_file(env.path("src/app.js.lock.carol")).unwrap();
    assert!(!locks().contains(&pair("src/app.js", "carol")));
    env.write("src/new/mod.js", "x\n");
    hand_lock(&env, "src/new/mod.js", "dave", &chrono_now());
    assert!(locks().contains(&pair("src/new/mod.js", "dave")));
    std::fs::write(env.path(".gitignore"), "node_modules/\nbuild/\nsrc/lib/\n").unwrap();
    assert!(
        !locks().contains(&pair("src/lib/util.js", "bob")),
        ".gitignore edited"
    );
    env.write("src/.gitignore", "new/\n");
    assert!(
        !locks().contains(&pair("src/new/mod.js", "dave")),
        "a .gitignore made"
    );
    hand_lock(&env, "docs/readme.md", "frank", &chrono_now());
    assert!(locks().contains(&pair("docs/readme.md", "frank")));
    std::fs::write(env.path(".git/info/exclude"), "docs/\n").unwrap();
    assert!(
        !locks().contains(&pair("docs/readme.md", "frank")),
        "info/exclude"
    );
    std::fs::write(env.path(".git/info/exclude"), "").unwrap();
    std::fs::create_dir_all(home.path().join("xdg/git")).unwrap();
    std::fs::write(home.path().join("xdg/git/ignore"), "docs/\n").unwrap();
    assert!(
        !locks().contains(&pair("docs/readme.md", "frank")),
        "the user's ignore file"
    );
    std::fs::write(home.path().join("other-ignore"), "src/\n").unwrap();
    git(
        env.root(),
        &[
            "config",
            "core.excludesFile",
            &home.path().join("other-ignore").to_string_lossy(),
        ],
    );
    let now = locks();
    assert!(now.iter().all(|(f, _)| !f.starts_with("src/")), "{now:?}");
    std::fs::remove_dir_all(env.path("docs")).unwrap();
    assert!(locks().is_empty(), "a folder removed");
}

fn chrono_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Spawn `coord ARGS` as alice and kill it with SIGKILL as soon as `started` holds (or when it
/// ends first).
fn kill_midway(env: &Env, args: &[&str], started: impl Fn() -> bool) {
    let mut child = env.agent("alice").args(args).spawn();
    loop {
        if started() || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::yield_now();
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_index_of_locks_survives_a_kill_9_and_the_lock_files_stay_the_truth() {
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    env.write(".gitignore", "node_modules/\n*.lock.*\n");
    let n = 600;
    let files: Vec<String> = (0..n)
        .map(|i| format!("node_modules/pkg/m{i:04}.js"))
        .collect();
    for f in &files {
        env.write(f, "x\n");
    }
    git(env.root(), &["init", "-q"]);
    env.cmd().arg("init").ok();
    let mut lock = vec!["lock", "--no-backup"];
    lock.extend(files.iter().map(String::as_str));

    // Killed while locking: every lock file it left is in the views.
    kill_midway(&env, &lock, || env.exists(".coord/held"));
    let on_disk = lock_files_under(&env, "node_modules");
    assert_eq!(listed(&env), on_disk);
    assert!(held_entries(&env) >= on_disk.len());

    // All of them, then killed while unlocking: what is left is still in the views.
    env.agent("alice").args(&lock).ok();
    assert_eq!(held_entries(&env), n);
    assert_eq!(listed(&env).len(), n);
    let mut unlock = vec!["unlock"];
    unlock.extend(files.iter().map(String::as_str));
    kill_midway(&env, &unlock, || {
        !env.exists(&format!("{}.lock.alice", files[0]))
    });
    let on_disk = lock_files_under(&env, "node_modules");
    assert_eq!(listed(&env), on_disk);
    assert!(held_entries(&env) >= on_disk.len());

    // Unlocking all of alice's locks finds the rest and leaves the index empty.
    env.agent("alice").arg("unlock").ok();
    assert!(lock_files_under(&env, "node_modules").is_empty());
    assert!(listed(&env).is_empty());
    assert_eq!(held_entries(&env), 0);
}

#[test]
fn lock_and_unlock_of_thousands_of_files_in_one_folder_stay_all_or_nothing() {
    let env = Env::new();
    let n = 3000;
    let files: Vec<String> = (0..n).map(|i| format!("big/f{i:05}.txt")).collect();
    for f in &files {
        env.write(f, "x\n");
    }
    env.agent("bob").args(["lock", "big/f01234.txt"]).ok();
    let mut lock = vec!["lock", "--no-backup", "--no-wait"];
    lock.extend(files.iter().map(String::as_str));
    // One file held by bob: none is taken.
    env.agent("alice").args(&lock).code(3).stderr_has("bob");
    assert_eq!(env.files_ending(".lock.alice").len(), 0);
    assert_eq!(held_entries(&env), 1);

    env.agent("bob").args(["unlock", "big/f01234.txt"]).ok();
    env.agent("alice").args(&lock).ok();
    assert_eq!(env.files_ending(".lock.alice").len(), n);
    assert_eq!(held_entries(&env), n);
    assert_eq!(listed(&env).len(), n);

    // Unlock every file, one named twice and one that is not locked: each is reported once as
    // released, the index follows, the presence says FREE.
    env.write("big/free.txt", "x\n");
    let mut unlock = vec!["unlock", "--json", "big/f00000.txt", "big/free.txt"];
    unlock.extend(files.iter().map(String::as_str));
    let v: serde_json::Value = env.agent("alice").args(&unlock).ok().json();
    let results = v["results"].as_array().unwrap();
    let outcome = |file: &str| -> Vec<&str> {
        results
            .iter()
            .filter(|r| r["file"] == file)
            .map(|r| r["outcome"].as_str().unwrap())
            .collect()
    };
    let released = results
        .iter()
        .filter(|r| r["outcome"] == "released")
        .count();
    assert_eq!(released, n);
    assert!(outcome("big/f00000.txt").contains(&"released"));
    assert_eq!(outcome("big/free.txt"), ["not_locked"]);
    assert_eq!(env.files_ending(".lock.alice").len(), 0);
    assert_eq!(held_entries(&env), 0);
    assert!(listed(&env).is_empty());
    let presence = env.read(".alice_presence");
    assert!(presence.contains("lock_status: FREE"), "{presence}");
}

/// How many inotify watches process `pid` holds (`inotify wd:` lines of its descriptors).
fn inotify_watches(pid: u32) -> Option<usize> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fdinfo")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|f| std::fs::read_to_string(f.path()).ok())
            .map(|text| {
                text.lines()
                    .filter(|l| l.starts_with("inotify wd:"))
                    .count()
            })
            .sum(),
    )
}

#[test]
fn watch_subscribes_to_a_few_folders_and_still_sees_a_lock_deep_in_the_tree() {
    if inotify_watches(std::process::id()).is_none() {
        eprintln!("skipped: no /proc/PID/fdinfo to count inotify watches");
        return;
    }
    let env = Env::new();
    for i in 0..300 {
        env.write(&format!("deps/p{i:03}/index.js"), "x\n");
    }
    env.cmd().arg("init").ok();
    let mut child = KillOnDrop(env.cmd().args(["watch", "--json"]).spawn());
    let stdout = child.0.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("watch never printed {what}"));
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    assert_eq!(next("started")["event"], "started");
    let watches = inotify_watches(child.0.id()).unwrap_or_default();
    assert!(
        watches < 50,
        "{watches} inotify watches for a tree of 300 folders"
    );
    env.agent("alice")
        .args(["lock", "deps/p123/index.js", "--no-backup"])
        .ok();
    let mut e = next("lock_taken");
    while e["event"] != "lock_taken" {
        e = next("lock_taken");
    }
    assert_eq!(e["file"], "deps/p123/index.js");
}

/// A child process killed (ours, by pid) when the test ends, failed or not.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
