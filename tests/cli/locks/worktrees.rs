//! One repository, many worktrees (contract §10): real `git worktree add`, a lock in one work
//! tree holds the same path in every other.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use crate::support::{Env, coord_bin, eventually};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = crate::rigs::git(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository in `<env>/main` with `a.txt`, a linked worktree `<env>/b` on branch `feature`,
/// and one inside the main checkout, `main/.claude/worktrees/c` on branch `c`.
pub(crate) struct Repo {
    pub(crate) env: Env,
    pub(crate) main: PathBuf,
    pub(crate) b: PathBuf,
    pub(crate) c: PathBuf,
}

pub(crate) fn repo() -> Repo {
    let env = Env::new();
    let main = env.path("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q", "-b", "trunk"]);
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    std::fs::create_dir_all(main.join("src")).unwrap();
    std::fs::write(main.join("src/x.rs"), "x\n").unwrap();
    git(&main, &["add", "."]);
    git(&main, &["commit", "-qm", "start"]);
    git(&main, &["worktree", "add", "-q", "../b", "-b", "feature"]);
    git(
        &main,
        &["worktree", "add", "-q", ".claude/worktrees/c", "-b", "c"],
    );
    let b = env.path("b");
    let c = main.join(".claude/worktrees/c");
    Repo { env, main, b, c }
}

/// `coord` as `agent` started in `dir`, finding its workspace as a user's shell would.
pub(crate) fn coord(repo: &Repo, dir: &Path, agent: &str) -> crate::support::Cmd {
    repo.env.agent(agent).env_remove("COORD_DIR").cwd(dir)
}

#[test]
fn a_lock_in_one_worktree_refuses_the_same_path_in_every_other_naming_tree_and_branch() {
    let r = repo();
    coord(&r, &r.b, "alice")
        .args(["lock", "src/x.rs", "--reason", "parser"])
        .ok();
    // The lock file stays beside the file in the holder's tree (seed format).
    assert!(r.b.join("src/x.rs.lock.alice").exists());
    let b = std::fs::canonicalize(&r.b).unwrap();
    for dir in [&r.main, &r.c] {
        let out = coord(&r, dir, "bob")
            .args(["lock", "src/x.rs", "--no-wait"])
            .code(3);
        out.stderr_has("held by alice")
            .stderr_has(&format!("worktree {}", b.display()))
            .stderr_has("branch feature");
    }
    // From inside a subfolder of the nested worktree too.
    coord(&r, &r.c.join("src"), "bob")
        .args(["lock", "x.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice");
    // Another path is free everywhere.
    coord(&r, &r.c, "bob").args(["lock", "a.txt"]).ok();
    assert!(r.c.join("a.txt.lock.bob").exists());
    coord(&r, &r.main, "carol")
        .args(["lock", "a.txt", "--no-wait"])
        .code(3)
        .stderr_has("branch c");
    // Released in its tree, the path is free in the others.
    coord(&r, &r.b, "alice").args(["unlock", "src/x.rs"]).ok();
    coord(&r, &r.main, "bob").args(["lock", "src/x.rs"]).ok();
}

#[test]
fn an_unlock_from_another_worktree_finds_the_lock_where_it_lies() {
    let r = repo();
    coord(&r, &r.b, "alice").args(["lock", "src/x.rs"]).ok();
    // Another agent's lock in another tree is still reported as held, not "not locked".
    coord(&r, &r.main, "bob")
        .args(["unlock", "src/x.rs"])
        .code(3)
        .stderr_has("alice");
    assert!(r.b.join("src/x.rs.lock.alice").exists());
    // The holder's own lock is released from any tree of the repository.
    coord(&r, &r.c, "alice").args(["unlock", "src/x.rs"]).ok();
    assert!(!r.b.join("src/x.rs.lock.alice").exists());
    coord(&r, &r.main, "bob")
        .args(["lock", "src/x.rs", "--no-wait"])
        .ok();
}

#[test]
fn status_from_any_worktree_lists_every_trees_locks_with_worktree_and_branch() {
    let r = repo();
    coord(&r, &r.b, "alice").args(["lock", "a.txt"]).ok();
    coord(&r, &r.c, "bob").args(["lock", "src/x.rs"]).ok();
    for dir in [&r.main, &r.b, &r.c] {
        let out = coord(&r, dir, "carol").args(["status", "--json"]).ok();
        let v: serde_json::Value = out.json();
        let locks = v["locks"].as_array().unwrap();
        let files: Vec<(&str, &str, &str)> = locks
            .iter()
            .map(|l| {
                (
                    l["file"].as_str().unwrap(),
                    l["agent"].as_str().unwrap(),
                    l["branch"].as_str().unwrap_or("?"),
                )
            })
            .collect();
        assert_eq!(
            files,
            vec![("a.txt", "alice", "feature"), ("src/x.rs", "bob", "c")],
            "{v}"
        );
        for l in locks {
            assert!(l["worktree"].as_str().is_some(), "{l}");
        }
        let agents: Vec<&str> = v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent"].as_str().unwrap())
            .collect();
        assert!(agents.contains(&"alice") && agents.contains(&"bob"), "{v}");
    }
}

#[test]
fn a_hook_edit_in_one_worktree_is_denied_while_another_tree_holds_the_file() {
    let r = repo();
    coord(&r, &r.main, "alice").args(["lock", "a.txt"]).ok();
    let b = std::fs::canonicalize(&r.b).unwrap();
    let payload = serde_json::json!({
        "session_id": "0b5c7e6a-1111-4a19-be34-6aa5a64f4b50",
        "cwd": b,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": b.join("a.txt"), "content": "x\n"},
        "tool_use_id": "toolu_1",
    })
    .to_string();
    let out = r
        .env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&b)
        .args(["hook", "claude"])
        .stdin(payload)
        .ok();
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", out.stdout));
    let h = &v["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "deny", "{v}");
    let reason = h["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("alice"), "{reason}");
    assert!(reason.contains("branch trunk"), "{reason}");
    assert!(!b.join("a.txt.lock.claude-0b5c7e6a").exists());
}

/// Whether every `(` in `text` is closed once, in order.
fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// The holder's place in a refusal reads as words in one pair of parentheses, a detached
/// HEAD included (#9: `branch (detached))` closed the holder's parenthesis twice), through a
/// client's hook, the CLI, and a claim's refusal.
#[test]
fn a_refusal_names_a_detached_worktree_in_one_pair_of_parentheses() {
    let r = repo();
    git(&r.main, &["worktree", "add", "-q", "--detach", "../d"]);
    let d = std::fs::canonicalize(r.env.path("d")).unwrap();
    coord(&r, &d, "alice").args(["lock", "a.txt"]).ok();
    coord(&r, &d, "alice").args(["lock", "src/"]).ok();
    let place = format!("(worktree {}, detached HEAD)", d.display());
    let payload = serde_json::json!({
        "session_id": "0b5c7e6a-2222-4a19-be34-6aa5a64f4b50", "cwd": r.main,
        "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": r.main.join("a.txt"), "content": "x\n"},
    })
    .to_string();
    let out = r
        .env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&r.main)
        .args(["hook", "claude", "--wait", "0"])
        .stdin(payload)
        .ok();
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains(&format!("locked by alice {place}")),
        "{reason}"
    );
    assert!(balanced(reason), "{reason}");
    let cli = coord(&r, &r.main, "bob")
        .args(["lock", "a.txt", "--no-wait"])
        .code(3);
    cli.stderr_has(&format!("held by alice {place}"));
    assert!(balanced(&cli.stderr), "{}", cli.stderr);
    let claim = coord(&r, &r.main, "bob")
        .args(["lock", "src/x.rs", "--no-wait"])
        .code(3);
    claim.stderr_has(&format!(
        "alice (claim `src/**`, worktree {}, detached HEAD)",
        d.display()
    ));
    assert!(balanced(&claim.stderr), "{}", claim.stderr);
}

/// A client session's lock goes when its turn ends, wherever it lies: a rival's hook and the
/// git guard say so for a holder in another worktree too (#9: the holder, named with its
/// tree, was not recognised, and the deny said it lasts until unlocked; the guard said so of
/// every holder).
#[test]
fn a_client_sessions_lock_in_another_worktree_is_said_to_go_when_its_turn_ends() {
    let r = repo();
    let b = std::fs::canonicalize(&r.b).unwrap();
    let edit = |session: &str, cwd: &Path| {
        let payload = serde_json::json!({
            "session_id": session, "cwd": cwd,
            "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": cwd.join("a.txt"), "content": "x\n"},
        })
        .to_string();
        r.env
            .cmd()
            .env_remove("COORD_DIR")
            .cwd(cwd)
            .args(["hook", "claude", "--wait", "0"])
            .stdin(payload)
            .ok()
    };
    edit("0b5c7e6a-4444-4a19-be34-6aa5a64f4b50", &b).stdout_lacks("deny");
    let lock = std::fs::read_to_string(b.join("a.txt.lock.claude-0b5c7e6a")).unwrap();
    assert!(lock.contains("client_session:"), "{lock}");
    let out = edit("1c6d8f7b-5555-4a19-be34-6aa5a64f4b50", &r.main);
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("it is released when its holder's turn ends"),
        "{reason}"
    );
    assert!(!reason.contains("unlocks"), "{reason}");
    std::fs::write(r.main.join("a.txt"), "changed\n").unwrap();
    git(&r.main, &["add", "a.txt"]);
    let guard = coord(&r, &r.main, "bob")
        .args(["guard", "check", "--staged"])
        .code(4);
    guard.stderr_has("a.txt: locked by claude-0b5c7e6a");
    guard.stderr_has("released when its holder's turn ends");
    assert!(!guard.stderr.contains("unlocks"), "{}", guard.stderr);
}

#[test]
fn a_waiter_in_one_worktree_is_woken_by_a_release_in_another() {
    let r = repo();
    coord(&r, &r.main, "alice").args(["lock", "a.txt"]).ok();
    let waiter: Child = coord(&r, &r.b, "bob")
        .args(["lock", "a.txt", "--wait", "1m"])
        .spawn();
    eventually("bob waits", || {
        std::fs::read_to_string(r.main.join(".bob_presence"))
            .is_ok_and(|p| p.contains("lock_status: WAITING"))
    });
    coord(&r, &r.main, "alice").args(["unlock", "a.txt"]).ok();
    let out = crate::support::finish(waiter);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(r.b.join("a.txt.lock.bob").exists());
    assert!(!r.main.join("a.txt.lock.alice").exists());
}

#[test]
fn processes_racing_from_three_worktrees_never_hold_one_path_together() {
    let r = repo();
    let shared = r.env.path("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("counter"), "0\n").unwrap();
    // The witness lies outside every tree, created with O_EXCL (`set -C`) while holding.
    let script = format!(
        r#"
        i=0
        while [ $i -lt 25 ]; do
            "$COORD" lock a.txt --wait 2m --no-backup -q || exit 10
            if ! ( set -C; : > {s}/witness ) 2>/dev/null; then echo "$COORD_AGENT" >> {s}/collisions; fi
            n=$(cat {s}/counter)
            echo $((n + 1)) > {s}/counter
            rm -f {s}/witness
            "$COORD" unlock a.txt -q || exit 11
            i=$((i + 1))
        done
    "#,
        s = shared.display()
    );
    let children: Vec<Child> = [&r.main, &r.b, &r.c, &r.b, &r.main, &r.c]
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            Command::new("sh")
                .arg("-c")
                .arg(&script)
                .current_dir(dir)
                .env_remove("COORD_DIR")
                .env_remove("COORD_SESSION")
                .env_remove("COORD_SESSION_PID")
                .env("COORD_AGENT", format!("racer-{i}"))
                .env("COORD", coord_bin())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert!(
        !shared.join("collisions").exists(),
        "two holders at once: {}",
        std::fs::read_to_string(shared.join("collisions")).unwrap_or_default()
    );
    assert_eq!(
        std::fs::read_to_string(shared.join("counter"))
            .unwrap()
            .trim(),
        "150"
    );
}

#[test]
fn a_worktree_with_its_own_coord_folder_and_a_folder_outside_git_stay_apart() {
    let r = repo();
    std::fs::create_dir_all(r.b.join(".coord")).unwrap();
    coord(&r, &r.main, "alice").args(["lock", "a.txt"]).ok();
    coord(&r, &r.b, "bob")
        .args(["lock", "a.txt", "--no-wait"])
        .ok();
    let lone = r.env.path("lone");
    std::fs::create_dir_all(&lone).unwrap();
    std::fs::write(lone.join("a.txt"), "a\n").unwrap();
    coord(&r, &lone, "carol")
        .args(["lock", "a.txt", "--no-wait"])
        .ok();
}

#[test]
fn the_guard_refuses_a_commit_in_one_worktree_of_a_file_locked_in_another() {
    let r = repo();
    coord(&r, &r.main, "alice").args(["guard", "install"]).ok();
    coord(&r, &r.main, "alice").args(["lock", "a.txt"]).ok();
    std::fs::write(r.b.join("a.txt"), "changed in b\n").unwrap();
    git(&r.b, &["add", "a.txt"]);
    let out = crate::rigs::git(&r.b)
        .args(["commit", "-qm", "sneaky"])
        .env("COORD_AGENT", "bob")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a.txt: locked by alice"), "{err}");
}

/// Worktrees are read from git's own files at each call: a tree added after a lock was taken,
/// or moved (`git worktree move` rewrites its `gitdir`), is seen at once by the next lock, and
/// the list of worktrees earlier versions of coord kept (`.coord/worktrees`) is never read.
#[test]
fn a_worktree_added_or_moved_is_seen_at_once() {
    let r = repo();
    // What an earlier version kept, naming none of these trees.
    std::fs::create_dir_all(r.main.join(".coord")).unwrap();
    std::fs::write(
        r.main.join(".coord/worktrees"),
        b"{\"worktrees\": {\"ino\": 1, \"size\": 0, \"mtime_ns\": 0, \"ctime_ns\": 0}, \"trees\": []}",
    )
    .unwrap();
    coord(&r, &r.b, "alice")
        .args(["lock", "src/x.rs", "--reason", "parser"])
        .ok();
    coord(&r, &r.main, "bob")
        .args(["lock", "src/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice");

    git(&r.main, &["worktree", "add", "-q", "../d", "-b", "d"]);
    coord(&r, &r.env.path("d"), "carol")
        .args(["lock", "a.txt"])
        .ok();
    coord(&r, &r.main, "bob")
        .args(["lock", "a.txt", "--no-wait"])
        .code(3)
        .stderr_has("held by carol");

    git(&r.main, &["worktree", "move", "../b", "../moved"]);
    let moved = std::fs::canonicalize(r.env.path("moved")).unwrap();
    for dir in [&r.main, &r.c] {
        coord(&r, dir, "bob")
            .args(["lock", "src/x.rs", "--no-wait"])
            .code(3)
            .stderr_has("held by alice")
            .stderr_has(&format!("worktree {}", moved.display()));
    }
}

/// The entries of the index of locks (`.coord/held/`, shared by every tree), but its anchor.
fn indexed(r: &Repo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(r.main.join(".coord/held"))
        .map(|list| {
            list.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "anchor")
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// #45: the index of locks names only locks that exist: a lock released from another work
/// tree than the one it lies in, or taken over from there after its holder was killed with
/// SIGKILL, leaves no entry behind (`a.txt.held.alice` stayed); nor does a lock file removed by
/// hand, once its agent unlocks the file.
#[test]
fn the_index_forgets_locks_released_or_taken_over_from_another_worktree() {
    let r = repo();
    coord(&r, &r.b, "alice").args(["lock", "src/x.rs"]).ok();
    assert_eq!(indexed(&r), ["src%2Fx.rs.held.alice"]);
    coord(&r, &r.main, "alice")
        .args(["unlock", "src/x.rs"])
        .ok();
    assert_eq!(indexed(&r), Vec::<String>::new(), "released from main");

    // A holder killed with SIGKILL; its lock taken over from another tree.
    let mut run = coord(&r, &r.b, "alice")
        .args(["run", "a.txt", "--", "sh", "-c", "sleep 3"])
        .spawn();
    eventually("alice's run holds a.txt", || {
        r.b.join("a.txt.lock.alice").exists()
    });
    run.kill().unwrap();
    run.wait().unwrap();
    coord(&r, &r.c, "bob").args(["lock", "a.txt"]).ok();
    assert_eq!(indexed(&r), ["a.txt.held.bob"], "taken over from c");
    coord(&r, &r.main, "bob").args(["unlock"]).ok();
    assert_eq!(indexed(&r), Vec::<String>::new());

    // A lock file removed by hand: its agent's unlock of the file says so and forgets it.
    coord(&r, &r.c, "carol").args(["lock", "src/x.rs"]).ok();
    std::fs::remove_file(r.c.join("src/x.rs.lock.carol")).unwrap();
    coord(&r, &r.c, "carol")
        .args(["unlock", "src/x.rs"])
        .ok()
        .stdout_has("not locked");
    assert_eq!(indexed(&r), Vec::<String>::new(), "removed by hand");

    // Unlocking all from any tree keeps the entries of the locks other trees still hold.
    coord(&r, &r.b, "dave").args(["lock", "a.txt"]).ok();
    coord(&r, &r.c, "erin").args(["lock", "src/x.rs"]).ok();
    coord(&r, &r.main, "erin").args(["unlock"]).ok();
    assert_eq!(indexed(&r), ["a.txt.held.dave"]);
    let v: serde_json::Value = coord(&r, &r.main, "erin")
        .args(["status", "--json"])
        .ok()
        .json();
    assert_eq!(v["locks"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn locks_held_in_a_removed_worktree_are_shown_stale_not_dropped() {
    let r = repo();
    coord(&r, &r.b, "dave").args(["lock", "a.txt"]).ok();
    git(&r.main, &["worktree", "remove", "--force", "../b"]);
    let v: serde_json::Value = coord(&r, &r.main, "carol")
        .args(["status", "--json"])
        .ok()
        .json();
    let locks = v["locks"].as_array().unwrap();
    assert_eq!(locks.len(), 1, "{v}");
    assert_eq!(locks[0]["file"], "a.txt", "{v}");
    assert_eq!(locks[0]["agent"], "dave", "{v}");
    assert_eq!(locks[0]["state"], "STALE", "{v}");
    assert!(
        locks[0]["stale_reason"].as_str().unwrap().contains("gone"),
        "{v}"
    );
    // The path is free in the remaining trees.
    coord(&r, &r.c, "carol")
        .args(["lock", "a.txt", "--no-wait"])
        .ok();
}

/// Claims taken in a removed worktree stop holding as its locks do (#45): STALE at once, whoever
/// holds them, and taken over by the next lock or claim that passes over them.
#[test]
fn claims_taken_in_a_removed_worktree_are_stale_and_taken_over_as_its_locks_are() {
    let r = repo();
    coord(&r, &r.b, "dave").args(["lock", "src/", "a.txt"]).ok();
    coord(&r, &r.c, "erin").args(["lock", "*.md"]).ok();
    git(&r.main, &["worktree", "remove", "--force", "../b"]);
    // dave is still ACTIVE (his heartbeat is fresh) and his claim well within its TTL.
    let v: serde_json::Value = coord(&r, &r.main, "carol")
        .args(["status", "--json"])
        .ok()
        .json();
    let claims = v["claims"].as_array().unwrap();
    let state = |pattern: &str| {
        let c = claims.iter().find(|c| c["pattern"] == pattern).unwrap();
        (
            c["state"].as_str().unwrap().to_string(),
            c["stale_reason"].clone(),
        )
    };
    let (dave, why) = state("src/**");
    assert_eq!(dave, "STALE", "{v}");
    assert!(why.as_str().unwrap().contains("is gone"), "{v}");
    // The claim of a tree still there holds.
    assert_eq!(state("*.md").0, "LIVE", "{v}");
    // The lock of the removed tree shows STALE the same way.
    assert_eq!(v["locks"][0]["file"], "a.txt", "{v}");
    assert_eq!(v["locks"][0]["state"], "STALE", "{v}");
    coord(&r, &r.c, "carol")
        .args(["lock", "src/x.rs", "--no-wait"])
        .ok()
        .stderr_has("took over the stale claim of dave on `src/**`");
    coord(&r, &r.main, "carol")
        .args(["lock", "notes.md", "--no-wait"])
        .code(3)
        .stderr_has("erin");
}

/// A worktree moved (`git worktree move`) is not gone: the claims taken there still hold, as its
/// locks do (they moved with it), and nobody takes the paths they match until they are given back.
#[test]
fn claims_of_a_moved_worktree_still_hold() {
    let r = repo();
    coord(&r, &r.b, "dave").args(["lock", "src/"]).ok();
    git(&r.main, &["worktree", "move", "../b", "../b2"]);
    let b2 = r.env.path("b2");
    coord(&r, &b2, "dave").args(["presence", "still here"]).ok();
    coord(&r, &r.main, "carol")
        .args(["lock", "src/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("dave");
    coord(&r, &b2, "dave")
        .args(["unlock", "src/"])
        .ok()
        .stdout_has("Claim released: src/**");
    coord(&r, &r.main, "carol")
        .args(["lock", "src/x.rs", "--no-wait"])
        .ok();
}

#[test]
fn a_worktree_inside_the_main_checkout_is_not_a_nested_workspace() {
    let r = repo();
    // The first coord command of the repository runs inside the nested worktree.
    coord(&r, &r.c, "bob").args(["presence", "task"]).ok();
    coord(&r, &r.c, "bob").args(["lock", "a.txt"]).ok();
    assert!(!r.c.join(".coord").exists());
    assert!(r.main.join(".coord").is_dir());
    let v: serde_json::Value = coord(&r, &r.main, "carol")
        .args(["status", "--json"])
        .ok()
        .json();
    assert_eq!(v["nested"], serde_json::json!([]), "{v}");
    assert_eq!(v["locks"][0]["file"], "a.txt", "{v}");
}

/// The history is the repository's: `coord log` in any tree shows a lock taken in another, and
/// an event from a linked worktree names that tree (its `file` is relative to that tree): by
/// its path in `--json`, by its folder's name and branch for a human (#9, #48).
#[test]
fn the_history_names_the_worktree_an_event_came_from() {
    let r = repo();
    coord(&r, &r.b, "alice").args(["lock", "a.txt"]).ok();
    coord(&r, &r.main, "bob").args(["lock", "src/x.rs"]).ok();
    let out = coord(&r, &r.c, "carol").args(["log", "--json"]).ok();
    let events: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["event"] == "lock_taken")
        .collect();
    let tree = |agent: &str| {
        let e = events
            .iter()
            .find(|e| e["agent"] == agent)
            .unwrap_or_else(|| panic!("no lock_taken by {agent}: {}", out.stdout));
        e["worktree"].as_str().map(str::to_string)
    };
    let b = std::fs::canonicalize(&r.b).unwrap();
    assert_eq!(tree("alice").as_deref(), Some(b.to_str().unwrap()));
    assert_eq!(
        tree("bob"),
        None,
        "the main tree is the root: {}",
        out.stdout
    );
    let human = coord(&r, &r.c, "carol").args(["log"]).ok();
    human
        .stdout_has("alice (b, feature) locked `a.txt`\n")
        .stdout_has("bob (main, trunk) locked `src/x.rs`\n");
}

#[test]
fn a_claim_in_one_worktree_sees_a_lock_made_by_hand_in_another() {
    let r = repo();
    std::fs::create_dir_all(r.b.join("src/deep")).unwrap();
    std::fs::write(
        r.b.join("src/deep/y.rs.lock.Bob"),
        crate::rigs::seed_lock("src/deep/y.rs", "Bob", &crate::rigs::local_stamp()),
    )
    .unwrap();
    coord(&r, &r.c, "alice")
        .args(["lock", "src/", "--no-wait"])
        .code(3)
        .stderr_has("Bob");
    std::fs::remove_file(r.b.join("src/deep/y.rs.lock.Bob")).unwrap();
    coord(&r, &r.c, "alice").args(["lock", "src/"]).ok();
}

/// #48: the index of locks keeps no entry for a lock already released — taken and released in
/// one tree, taken in a linked worktree and released from the main one, taken by a client's
/// hook and released at the end of its turn — and `coord prune` forgets the entry of a lock
/// file removed by hand (the seed's way to unlock), which no `coord unlock` of its agent may
/// ever come to clear (`held/README.md.held.alice` stayed).
#[test]
fn no_entry_of_the_index_outlives_its_lock() {
    let r = repo();
    std::fs::write(r.main.join("README.md"), "hi\n").unwrap();
    coord(&r, &r.main, "alice").args(["lock", "README.md"]).ok();
    assert_eq!(indexed(&r), ["README.md.held.alice"]);
    coord(&r, &r.main, "alice")
        .args(["unlock", "README.md"])
        .ok();
    assert_eq!(indexed(&r), Vec::<String>::new(), "released where taken");

    coord(&r, &r.b, "alice").args(["lock", "a.txt"]).ok();
    coord(&r, &r.main, "alice").args(["unlock"]).ok();
    assert_eq!(
        indexed(&r),
        Vec::<String>::new(),
        "released from another tree"
    );

    let call = |event: &str, tool: Option<&str>| {
        let mut payload = serde_json::json!({
            "session_id": "cedd012c-f1ba-4d70-ad6d-1c65c16ba070",
            "cwd": r.b,
            "hook_event_name": event,
        });
        if let Some(tool) = tool {
            payload["tool_name"] = tool.into();
            payload["tool_input"] = serde_json::json!({
                "file_path": r.b.join("a.txt"), "old_string": "a", "new_string": "b"
            });
        }
        r.env
            .cmd()
            .env_remove("COORD_DIR")
            .cwd(&r.b)
            .args(["hook", "claude"])
            .stdin(payload.to_string())
            .ok();
    };
    call("PreToolUse", Some("Edit"));
    assert_eq!(indexed(&r), ["a.txt.held.claude-cedd012c"]);
    call("PostToolUse", Some("Edit"));
    call("Stop", None);
    assert!(!r.b.join("a.txt.lock.claude-cedd012c").exists());
    assert_eq!(
        indexed(&r),
        Vec::<String>::new(),
        "released at the turn's end"
    );

    // Unlocked by hand, as the seed does it: the lock file deleted.
    coord(&r, &r.b, "alice").args(["lock", "src/x.rs"]).ok();
    std::fs::remove_file(r.b.join("src/x.rs.lock.alice")).unwrap();
    coord(&r, &r.main, "bob")
        .args(["prune", "--dry-run"])
        .ok()
        .stdout_has("would remove .coord/held/src%2Fx.rs.held.alice");
    assert_eq!(indexed(&r), ["src%2Fx.rs.held.alice"], "a dry run");
    coord(&r, &r.main, "bob").args(["prune"]).ok();
    assert_eq!(indexed(&r), Vec::<String>::new(), "pruned");
}

/// #48: a worktree made after `coord init` gets the hook files only through a commit; `init`
/// says so where there are worktrees to make, and is silent in a folder outside git.
#[test]
fn init_says_worktrees_made_later_get_its_files_only_once_committed() {
    let r = repo();
    let note = "Worktrees made from now on get these files only once they are committed";
    coord(&r, &r.main, "alice")
        .args(["init", "--client", "claude"])
        .ok()
        .stdout_has(note)
        .stdout_has("install the plugin instead");
    // What the note says: a worktree made now has no hook file of Claude Code's …
    git(
        &r.main,
        &["worktree", "add", "-q", "../later", "-b", "later"],
    );
    assert!(!r.env.path("later/.claude/settings.json").exists());
    // … until the files are committed on the branch it starts from.
    git(&r.main, &["add", "-A"]);
    git(&r.main, &["commit", "-qm", "coord init"]);
    git(
        &r.main,
        &["worktree", "add", "-q", "../after", "-b", "after"],
    );
    assert!(r.env.path("after/.claude/settings.json").exists());
    // A second run changes nothing and says nothing of worktrees; a folder outside git never.
    coord(&r, &r.main, "alice")
        .args(["init", "--client", "claude"])
        .ok()
        .stdout_lacks(note);
    let plain = Env::new();
    plain
        .cmd()
        .args(["init", "--client", "claude"])
        .ok()
        .stdout_lacks(note);
}

/// A session starting in the main checkout is told of the locks coord took in every linked
/// worktree, deep in the tree included, read from coord's index (a session's start does not walk
/// the repository), and of none that were released.
#[test]
fn a_session_start_names_the_locks_taken_in_every_worktree() {
    let r = repo();
    let deep = r.b.join("src/deep/er");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("y.rs"), "y\n").unwrap();
    coord(&r, &r.b, "alice")
        .args(["lock", "src/deep/er/y.rs"])
        .ok();
    coord(&r, &r.c, "bob").args(["lock", "a.txt"]).ok();
    coord(&r, &r.c, "bob").args(["lock", "src/x.rs"]).ok();
    coord(&r, &r.c, "bob").args(["unlock", "src/x.rs"]).ok();
    let payload = serde_json::json!({
        "hook_event_name": "SessionStart",
        "session_id": "5e55a0b1-0000-0000-0000-000000000000",
        "cwd": r.main,
        "source": "startup",
    });
    let out = r
        .env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&r.main)
        .args(["hook", "claude"])
        .stdin(payload.to_string())
        .ok();
    let reply: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let text = reply["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"));
    assert!(text.contains("src/deep/er/y.rs (held by alice"), "{text}");
    assert!(text.contains("a.txt (held by bob"), "{text}");
    assert!(
        !text.contains("src/x.rs"),
        "a released lock is gone: {text}"
    );
}
