//! Claims on folders and patterns (contract §10): `coord lock src/auth/` and
//! `coord lock 'src/**/*.sql'` hold every path they match, against locks and other claims in
//! every direction, through every door, across worktrees.

use std::path::{Path, PathBuf};
use std::process::Child;

use crate::support::{Env, eventually, finish};

fn waiting(env: &Env, agent: &str) -> bool {
    std::fs::read_to_string(env.path(&format!(".{agent}_presence")))
        .is_ok_and(|p| p.contains("lock_status: WAITING"))
}

fn claims_json(env: &Env) -> Vec<serde_json::Value> {
    let v: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    v["claims"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_claim_holds_every_path_it_matches_against_locks_and_claims_in_every_direction() {
    let env = Env::new();
    env.write("src/auth/a.rs", "a\n");
    env.write("src/db/q.sql", "select 1;\n");
    env.write("src/other.rs", "o\n");
    env.agent("alice")
        .args(["lock", "src/auth/", "--reason", "auth refactor"])
        .ok()
        .stdout_has("Claim acquired: src/auth/**");
    // A claim against a lock: an existing file and one not made yet, at any depth.
    env.write("src/auth/deep/d.rs", "d\n");
    for file in ["src/auth/a.rs", "src/auth/new.rs", "src/auth/deep/d.rs"] {
        env.agent("bob")
            .args(["lock", file, "--no-wait"])
            .code(3)
            .stderr_has("alice")
            .stderr_has("`src/auth/**`")
            .stderr_has("auth refactor");
    }
    assert!(!env.exists("src/auth/a.rs.lock.bob"));
    env.agent("bob").args(["lock", "src/other.rs"]).ok();
    // A lock against a claim: bob's lock stands in the way of a pattern that matches it.
    env.agent("bob").args(["lock", "src/db/q.sql"]).ok();
    env.agent("carol")
        .args(["lock", "src/db/*.sql", "--no-wait"])
        .code(3)
        .stderr_has("src/db/q.sql")
        .stderr_has("bob");
    // A claim against a claim, pattern against pattern: `src/*/` overlaps `src/auth/**`.
    env.agent("carol")
        .args(["lock", "src/*/", "--no-wait"])
        .code(3)
        .stderr_has("alice")
        .stderr_has("`src/auth/**`");
    // ... even where no file exists that both match.
    std::fs::create_dir_all(env.path("lib")).unwrap();
    env.agent("dave").args(["lock", "lib/*.rs"]).ok();
    env.agent("erin")
        .args(["lock", "lib/a*", "--no-wait"])
        .code(3)
        .stderr_has("dave")
        .stderr_has("`lib/*.rs`");
    env.agent("erin").args(["lock", "lib/*.sql"]).ok();
    // And the other way round: a lock asked inside another's claim, by the claim's pattern.
    env.agent("dave")
        .args(["lock", "lib/x.sql", "--no-wait"])
        .code(3)
        .stderr_has("erin")
        .stderr_has("`lib/*.sql`");
    // The holder itself is not blocked by its own claim.
    env.agent("alice").args(["lock", "src/auth/a.rs"]).ok();
    // write, run and note by another agent are refused too.
    env.agent("bob")
        .args(["write", "src/auth/a.rs"])
        .stdin("evil\n")
        .code(3);
    assert_eq!(env.read("src/auth/a.rs"), "a\n");
    env.agent("bob")
        .args([
            "run",
            "src/auth/b.rs",
            "--no-wait",
            "--",
            "/bin/sh",
            "-c",
            ": > ran",
        ])
        .code(3);
    assert!(!env.exists("ran"));
    env.agent("bob")
        .args(["note", "src/auth/notes.md", "hello", "--no-wait"])
        .code(3);
    assert!(!env.exists("src/auth/notes.md"));
    // Releasing the claim frees the paths.
    env.agent("alice")
        .args(["unlock", "src/auth/"])
        .ok()
        .stdout_has("Claim released: src/auth/**");
    env.agent("alice").args(["unlock", "src/auth/a.rs"]).ok();
    env.agent("bob").args(["lock", "src/auth/a.rs"]).ok();
}

#[test]
fn a_pattern_that_cannot_be_parsed_is_refused_and_nothing_is_written() {
    let env = Env::new();
    env.agent("alice").args(["lock", "docs/"]).ok();
    let before = env.snapshot();
    for bad in ["src/[a", "../*", "src/**/x\\"] {
        env.agent("bob")
            .args(["lock", bad])
            .code(2)
            .stderr_has("error: cannot claim")
            .stderr_has("hint:");
    }
    assert_eq!(env.snapshot(), before);
}

#[test]
fn claims_and_locks_of_one_call_are_all_or_nothing() {
    let env = Env::new();
    env.write("src/x.rs", "x\n");
    env.write("src/free.rs", "f\n");
    env.agent("alice").args(["lock", "src/x.rs"]).ok();
    // A free file with a claim that overlaps alice's lock: neither is taken.
    env.agent("bob")
        .args(["lock", "src/free.rs", "src/*.rs", "--no-wait"])
        .code(3);
    assert!(!env.exists("src/free.rs.lock.bob"));
    assert!(claims_json(&env).is_empty());
    // A free claim with a held file: the claim is not taken.
    env.agent("bob")
        .args(["lock", "docs/", "src/x.rs", "--no-wait"])
        .code(3);
    assert!(claims_json(&env).is_empty());
    // Once free, both at once.
    env.agent("alice").args(["unlock"]).ok();
    env.agent("bob")
        .args(["lock", "src/free.rs", "src/*.rs", "docs/"])
        .ok();
    let claims = claims_json(&env);
    let patterns: Vec<&str> = claims
        .iter()
        .map(|c| c["pattern"].as_str().unwrap())
        .collect();
    assert_eq!(patterns, ["docs/**", "src/*.rs"]);
    // Unlock without arguments gives claims back too.
    env.agent("bob").args(["unlock"]).ok();
    assert!(claims_json(&env).is_empty());
    assert!(!env.exists("src/free.rs.lock.bob"));
}

#[test]
fn status_lists_claims_with_pattern_agent_since_reason_state_and_worktree() {
    let env = Env::new();
    env.write("src/db/q.sql", "select 1;\n");
    env.agent("alice")
        .args(["lock", "src/**/*.sql", "--reason", "schema"])
        .ok();
    let claims = claims_json(&env);
    assert_eq!(claims.len(), 1, "{claims:?}");
    let c = &claims[0];
    assert_eq!(c["pattern"], "src/**/*.sql");
    assert_eq!(c["agent"], "alice");
    assert_eq!(c["reason"], "schema");
    assert_eq!(c["state"], "LIVE");
    assert!(c["since"].as_str().is_some_and(|s| !s.is_empty()), "{c}");
    assert_eq!(c["worktree"], env.root().display().to_string());
    env.cmd()
        .args(["status"])
        .ok()
        .stdout_has("Claims")
        .stdout_has("src/**/*.sql");
    env.agent("bob")
        .args(["who", "src/db/q.sql"])
        .ok()
        .stdout_has("claimed by alice with `src/**/*.sql`");
    // The history says it, with the pattern.
    let log = env.cmd().args(["log", "--json"]).ok();
    let taken = log
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "claim_taken")
        .unwrap_or_else(|| panic!("no claim_taken in {}", log.stdout));
    assert_eq!(taken["pattern"], "src/**/*.sql");
    assert_eq!(taken["agent"], "alice");
    // A session starting sees it.
    let payload = serde_json::json!({
        "session_id": "5e55a0b1-2222-4a19-be34-6aa5a64f4b50",
        "cwd": env.root(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    })
    .to_string();
    env.cmd()
        .args(["hook", "claude"])
        .stdin(payload)
        .ok()
        .stdout_has("src/**/*.sql");
    env.agent("alice").args(["unlock", "src/**/*.sql"]).ok();
    let log = env.cmd().args(["log", "--json"]).ok();
    assert!(log.stdout.contains("\"claim_released\""), "{}", log.stdout);
}

#[test]
fn a_hook_edit_of_a_claimed_path_is_denied_naming_the_holder_and_the_pattern() {
    let env = Env::new();
    env.write("src/db/q.sql", "select 1;\n");
    env.agent("alice")
        .args(["lock", "src/**/*.sql", "--reason", "schema"])
        .ok();
    let payload = serde_json::json!({
        "session_id": "0b5c7e6a-1111-4a19-be34-6aa5a64f4b50",
        "cwd": env.root(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": env.path("src/db/q.sql"), "old_string": "1", "new_string": "2"},
        "tool_use_id": "toolu_1",
    })
    .to_string();
    let out = env
        .cmd()
        .args(["hook", "claude", "--wait", "0"])
        .stdin(payload)
        .ok();
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", out.stdout));
    let h = &v["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "deny", "{v}");
    let reason = h["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("alice"), "{reason}");
    assert!(reason.contains("`src/**/*.sql`"), "{reason}");
    assert!(reason.contains("msg send alice "), "{reason}");
    assert!(!env.exists("src/db/q.sql.lock.claude-0b5c7e6a"));
}

/// #45: a client's tool that creates a file together with its folder (`Write`, a patch's
/// `Add File`) asks for a path nothing can be locked at yet; a claim holds it all the same,
/// and so does a lock on that path in another worktree, where the folder exists.
#[test]
fn a_hook_edit_of_a_file_whose_folder_is_not_made_yet_is_denied_when_held() {
    let (env, main, b) = repo();
    let main = std::fs::canonicalize(main).unwrap();
    let write = |dir: &Path, file: &str| {
        let payload = serde_json::json!({
            "session_id": "0b5c7e6a-3333-4a19-be34-6aa5a64f4b50",
            "cwd": dir,
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": dir.join(file), "content": "new\n"},
            "tool_use_id": "toolu_1",
        })
        .to_string();
        let out = env
            .cmd()
            .env_remove("COORD_DIR")
            .cwd(dir)
            .args(["hook", "claude", "--wait", "0"])
            .stdin(payload)
            .ok();
        crate::clients::hooks::denied("claude", &out)
    };
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["lock", "src/new/", "--reason", "new module"])
        .ok();
    let reason = write(&b, "src/new/deep/mod.rs").expect("a claimed path is denied");
    assert!(
        reason.contains("`src/new/**`") && reason.contains("alice"),
        "{reason}"
    );
    assert!(!b.join("src/new").exists());
    // Outside the claim, an unmade folder is no reason to deny.
    assert_eq!(write(&b, "src/other/mod.rs"), None);
    // A lock in the main tree, on a path whose folder only exists there.
    std::fs::create_dir_all(main.join("gen")).unwrap();
    env.agent("carol")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["lock", "gen/out.rs"])
        .ok();
    let reason = write(&b, "gen/out.rs").expect("a path locked in another tree is denied");
    assert!(reason.contains("carol"), "{reason}");
    // The history names the denied file.
    let log = env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&b)
        .args(["log", "--json"])
        .ok();
    assert!(
        log.stdout.contains("\"file\":\"src/new/deep/mod.rs\""),
        "{}",
        log.stdout
    );
}

/// `alice` claims `src/`; `first` then waits for what `first_args` asks, `second` for what
/// `second_args` asks (both inside the claim, overlapping each other). Released, the claim
/// goes to the first waiter, and the second keeps waiting until the first lets go.
fn first_come_first_served(first_args: &[&str], second_args: &[&str]) {
    let env = Env::new();
    env.write("src/b.rs", "b\n");
    env.agent("alice").args(["lock", "src/"]).ok();
    let mut a = vec!["lock"];
    a.extend(first_args);
    a.extend(["--wait", "1m"]);
    let first: Child = env.agent("bob").args(&a).spawn();
    eventually("bob waits", || waiting(&env, "bob"));
    let mut a = vec!["lock"];
    a.extend(second_args);
    a.extend(["--wait", "1m"]);
    let mut second: Child = env.agent("carol").args(&a).spawn();
    eventually("carol waits", || waiting(&env, "carol"));
    env.agent("alice").args(["unlock", "src/"]).ok();
    let out = finish(first);
    assert_eq!(out.code, Some(0), "bob: {}", out.stderr);
    // bob holds what carol wants: carol still waits, behind him.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        second.try_wait().unwrap().is_none(),
        "carol got it before bob"
    );
    assert!(waiting(&env, "carol"));
    env.agent("bob").args(["unlock"]).ok();
    let out = finish(second);
    assert_eq!(out.code, Some(0), "carol: {}", out.stderr);
}

#[test]
fn a_claim_waiter_is_served_before_a_later_lock_waiter_for_a_path_it_matches() {
    first_come_first_served(&["src/**/*.rs"], &["src/b.rs"]);
}

#[test]
fn a_lock_waiter_is_served_before_a_later_claim_waiter_whose_pattern_matches_it() {
    first_come_first_served(&["src/b.rs"], &["src/**/*.rs"]);
}

#[test]
fn a_wait_that_closes_a_cycle_across_a_claim_and_a_lock_is_refused_at_once() {
    for claimer_closes in [false, true] {
        let env = Env::new();
        env.write("src/auth/a.rs", "a\n");
        env.write("docs/x.md", "x\n");
        env.agent("alice").args(["lock", "src/auth/"]).ok();
        env.agent("bob").args(["lock", "docs/x.md"]).ok();
        let (waiter, waiter_args, closer, closer_args) = if claimer_closes {
            (
                "bob",
                ["lock", "src/auth/a.rs"],
                "alice",
                ["lock", "docs/x.md"],
            )
        } else {
            (
                "alice",
                ["lock", "docs/x.md"],
                "bob",
                ["lock", "src/auth/a.rs"],
            )
        };
        let w: Child = env
            .agent(waiter)
            .args(waiter_args)
            .args(["--wait", "1m"])
            .spawn();
        eventually("the first waits", || waiting(&env, waiter));
        env.agent(closer)
            .args(closer_args)
            .args(["--wait", "1m"])
            .code(3)
            .stderr_has("deadlock");
        // The closer lets go: the first waiter gets what it waited for.
        env.agent(closer).args(["unlock"]).ok();
        let out = finish(w);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    crate::rigs::git(dir).args(args).output().unwrap()
}

/// A repository in `<env>/main` (branch `trunk`) with `src/x.rs`, and a linked worktree
/// `<env>/b` on branch `feature`.
pub(crate) fn repo() -> (Env, PathBuf, PathBuf) {
    let env = Env::new();
    let main = env.path("main");
    std::fs::create_dir_all(main.join("src")).unwrap();
    assert!(git(&main, &["init", "-q", "-b", "trunk"]).status.success());
    std::fs::write(main.join("src/x.rs"), "x\n").unwrap();
    assert!(git(&main, &["add", "."]).status.success());
    assert!(git(&main, &["commit", "-qm", "start"]).status.success());
    let added = git(&main, &["worktree", "add", "-q", "../b", "-b", "feature"]);
    assert!(added.status.success(), "{added:?}");
    let b = std::fs::canonicalize(env.path("b")).unwrap();
    (env, main, b)
}

#[test]
fn a_claim_in_one_worktree_holds_its_paths_in_every_other() {
    let (env, main, b) = repo();
    let main = std::fs::canonicalize(main).unwrap();
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["lock", "src/", "--reason", "parser"])
        .ok();
    env.agent("bob")
        .env_remove("COORD_DIR")
        .cwd(&b)
        .args(["lock", "src/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("alice")
        .stderr_has("`src/**`")
        .stderr_has(&format!("worktree {}", main.display()))
        .stderr_has("branch trunk");
    // status from the other tree lists the claim, with its tree and branch.
    let v: serde_json::Value = env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&b)
        .args(["status", "--json"])
        .ok()
        .json();
    let c = &v["claims"][0];
    assert_eq!(c["pattern"], "src/**", "{v}");
    assert_eq!(c["worktree"], main.display().to_string());
    assert_eq!(c["branch"], "trunk");
    // A hook edit there is denied, naming the pattern.
    let payload = serde_json::json!({
        "session_id": "0b5c7e6a-1111-4a19-be34-6aa5a64f4b50",
        "cwd": b,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": b.join("src/y.rs"), "content": "y\n"},
        "tool_use_id": "toolu_1",
    })
    .to_string();
    let out = env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&b)
        .args(["hook", "claude", "--wait", "0"])
        .stdin(payload)
        .ok();
    assert!(out.stdout.contains("\"deny\""), "{}", out.stdout);
    assert!(out.stdout.contains("`src/**`"), "{}", out.stdout);
}

#[test]
fn the_guard_refuses_a_commit_in_one_worktree_of_a_file_claimed_in_another() {
    let (env, main, b) = repo();
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["guard", "install"])
        .ok();
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["lock", "src/**/*.rs"])
        .ok();
    let commit = |dir: &Path, agent: &str, file: &str, text: &str| {
        std::fs::write(dir.join(file), text).unwrap();
        assert!(git(dir, &["add", file]).status.success());
        crate::rigs::git(dir)
            .args(["commit", "-qm", text])
            .env("COORD_AGENT", agent)
            .output()
            .unwrap()
    };
    // What the claim does not match commits as before, and so does the claim's own holder.
    let out = commit(&b, "bob", "notes.md", "outside the claim\n");
    assert!(out.status.success(), "{out:?}");
    let out = commit(&main, "alice", "src/x.rs", "alice's own claim\n");
    assert!(out.status.success(), "{out:?}");
    std::fs::write(b.join("src/x.rs"), "changed in b\n").unwrap();
    assert!(git(&b, &["add", "src/x.rs"]).status.success());
    let out = crate::rigs::git(&b)
        .args(["commit", "-qm", "sneaky"])
        .env("COORD_AGENT", "bob")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("src/x.rs"), "{err}");
    assert!(err.contains("alice"), "{err}");
    assert!(err.contains("`src/**/*.rs`"), "{err}");
    // Released, the same commit goes through.
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["unlock", "src/**/*.rs"])
        .ok();
    let out = crate::rigs::git(&b)
        .args(["commit", "-qm", "now"])
        .env("COORD_AGENT", "bob")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_claim_waiter_does_not_stand_in_line_before_the_holder_it_waits_for() {
    let env = Env::new();
    env.write("src/x.rs", "x\n");
    env.write("src/y.rs", "y\n");
    env.agent("alice").args(["lock", "src/x.rs"]).ok();
    let w: Child = env
        .agent("bob")
        .args(["lock", "src/**", "--wait", "1m"])
        .spawn();
    eventually("bob waits", || waiting(&env, "bob"));
    // bob waits for alice: alice is not behind him for another path his pattern matches.
    env.agent("alice")
        .args(["lock", "src/y.rs", "--no-wait"])
        .ok();
    // carol, who holds nothing, is.
    env.agent("carol")
        .args(["lock", "src/z.rs", "--no-wait"])
        .code(3)
        .stderr_has("bob");
    env.agent("alice").args(["unlock"]).ok();
    let out = finish(w);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

#[test]
fn a_release_keeps_the_records_of_the_claims_file_it_cannot_read() {
    let env = Env::new();
    env.agent("alice").args(["lock", "src/**"]).ok();
    env.agent("bob").args(["lock", "docs/**"]).ok();
    // A record without a pattern (written by hand, or by a later version of coord).
    let path = env.path(".coord/claims");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\nAgent: zed\nnote: kept as it is\n");
    std::fs::write(&path, &text).unwrap();
    env.agent("alice").args(["unlock", "src/**"]).ok();
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.contains("note: kept as it is"), "{after}");
    assert!(after.contains("pattern: docs/**") && !after.contains("pattern: src/**"));
    env.agent("bob").args(["unlock"]).ok();
    let after = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(after.contains("note: kept as it is"), "{after}");
}

#[test]
fn a_claims_file_that_cannot_be_read_refuses_locks_and_is_never_rewritten() {
    let env = Env::new();
    std::fs::create_dir(env.path("src")).unwrap();
    env.agent("alice").args(["lock", "src/**"]).ok();
    // Grown past what coord reads (4 MiB): alice's claim is still in it.
    let path = env.path(".coord/claims");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("\nnote: {}\n", "x".repeat(5 * 1024 * 1024)));
    std::fs::write(&path, &text).unwrap();
    let before = env.snapshot();
    for args in [
        &["lock", "src/a.rs"][..],
        &["lock", "docs/**"],
        &["unlock", "src/**"],
    ] {
        let who = if args[0] == "unlock" { "alice" } else { "bob" };
        env.agent(who)
            .args(args)
            .code(1)
            .stderr_has("error: cannot read")
            .stderr_has(".coord/claims");
    }
    assert_eq!(env.snapshot(), before);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Releasing all of alice's, as the end of a turn does: her locks go, the claims refuse.
    (env.agent("alice").args(["unlock"]).code(1)).stderr_has("error: cannot read");
    let refused: serde_json::Value = env.agent("alice").args(["unlock", "--json"]).code(1).json();
    assert_eq!(refused["error"]["kind"], "io", "{refused}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // `who` says what it cannot show.
    (env.agent("bob").args(["who", "src/a.rs"]).ok())
        .stdout_has("src/a.rs: not locked")
        .stderr_has("warning: cannot read `.coord/claims`")
        .stderr_has("still hold");
    // `check` warns of it as of any file it cannot read; `status` names it among them.
    (env.agent("bob").args(["check", "--strict"]).ok())
        .stderr_has("warning: cannot read `.coord/claims`");
    let check: serde_json::Value = env.agent("bob").args(["check", "--json"]).ok().json();
    assert_eq!(check["unreadable"][0]["path"], ".coord/claims", "{check}");
    let st: serde_json::Value = env.agent("bob").args(["status", "--json"]).ok().json();
    let bad = st["unreadable"].as_array().unwrap();
    assert!(
        bad.iter()
            .any(|u| u["path"] == ".coord/claims"
                && u["why"].as_str().unwrap().contains("larger than")),
        "{bad:?}"
    );
}
