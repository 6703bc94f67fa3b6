//! `git push` through coord's guard in clones that share their claims through the repository's
//! remote (contract §13, #47): the pre-push check reads the remote's claims and refuses a push
//! whose commits change a path another clone's agent claims. Real git served by `git daemon`,
//! real `coord` processes, each clone in its own folder sharing nothing but the remote.

use std::path::Path;

use crate::locks::remote::{Team, Transport, coord, hostname, run_git};

/// `git ARGS` in `dir` as `agent` (the hooks run coord as that agent).
fn git_as(dir: &Path, agent: &str, args: &[&str]) -> std::process::Output {
    crate::rigs::git(dir)
        .args(args)
        .env("COORD_AGENT", agent)
        .output()
        .unwrap()
}

/// Commit `file` with `text` in `dir`.
pub(crate) fn commit(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    run_git(dir, &["add", "--", file]);
    let out = git_as(dir, "x", &["commit", "-qm", &format!("edit {file}")]);
    assert!(out.status.success(), "{out:?}");
}

/// A claims `src/**`; B (guard installed) commits a change to `src/a.rs`: its push is refused
/// naming the agent, its host, the pattern and the remote, and the remote branch is unchanged.
/// A push changing only `docs/` goes through; after A's unlock, B's push goes through.
#[test]
fn a_push_changing_a_path_another_clone_claims_is_refused() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    run_git(&a, &["checkout", "-qb", "main"]);
    commit(&a, "src/a.rs", "fn a() {}\n");
    commit(&a, "docs/a.md", "# a\n");
    run_git(&a, &["push", "-q", "origin", "main"]);
    run_git(&b, &["fetch", "-q", "origin"]);
    run_git(
        &b,
        &["checkout", "-q", "-b", "main", "--track", "origin/main"],
    );
    coord(&t.env, &b, "bob")
        .args(["guard", "install"])
        .ok()
        .stdout_has("pre-push installed");

    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--reason", "refactor"])
        .ok();
    commit(&b, "src/a.rs", "fn a() { b() }\n");
    let before = run_git(&t.bare, &["rev-parse", "main"]);
    let out = git_as(&b, "bob", &["push", "-q", "origin", "main"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    for says in [
        format!("src/a.rs: locked by alice on {}", hostname()),
        "claim `src/**` through remote `origin`".to_string(),
    ] {
        assert!(said.contains(&says), "{says:?} in {said}");
    }
    assert_eq!(run_git(&t.bare, &["rev-parse", "main"]), before);

    // A push that changes only docs/ goes through.
    run_git(&b, &["checkout", "-q", "-b", "docs", "origin/main"]);
    commit(&b, "docs/a.md", "# a, better\n");
    let out = git_as(&b, "bob", &["push", "-q", "origin", "docs"]);
    assert!(out.status.success(), "{out:?}");

    // Released by A: B's push goes through.
    coord(&t.env, &a, "alice").args(["unlock", "src/**"]).ok();
    run_git(&b, &["checkout", "-q", "main"]);
    let out = git_as(&b, "bob", &["push", "-q", "origin", "main"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        run_git(&t.bare, &["rev-parse", "main"]),
        run_git(&b, &["rev-parse", "main"])
    );
}

/// The remote unreachable when B pushes: the guard judges by the claims as last read, says so
/// in a warning, and still refuses the change to a path A claims; so does a client's hook
/// asked to run `git push` (it never reads the network).
#[test]
fn an_unreachable_remote_is_judged_by_the_claims_last_read() {
    let Some(mut t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    run_git(&a, &["checkout", "-qb", "main"]);
    commit(&a, "src/a.rs", "fn a() {}\n");
    run_git(&a, &["push", "-q", "origin", "main"]);
    run_git(&b, &["fetch", "-q", "origin"]);
    run_git(
        &b,
        &["checkout", "-q", "-b", "main", "--track", "origin/main"],
    );
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--reason", "refactor"])
        .ok();
    crate::locks::remote::remote(&t.env, &b, "bob", &["sync"]).ok();
    commit(&b, "src/a.rs", "fn a() { b() }\n");
    drop(t.daemon.take());
    // A client's hook refuses the `git push` shell command from the claims last synced.
    let mut v = crate::clients::hooks::fixture_json(&t.env, "gemini-0.61.0/deny.BeforeTool.json");
    v["cwd"] = b.display().to_string().into();
    v["tool_name"] = "run_shell_command".into();
    v["tool_input"] = serde_json::json!({"command": "git push origin main", "dir_path": "."});
    let out = coord(&t.env, &b, "bob")
        .env_remove("COORD_AGENT")
        .args(["hook", "gemini"])
        .stdin(v.to_string())
        .ok();
    let reason = crate::clients::hooks::denied("gemini", &out).expect("the push is denied");
    assert!(
        reason.contains("pushes `src/a.rs`") && reason.contains("alice on "),
        "{reason}"
    );
    coord(&t.env, &b, "bob")
        .args(["guard", "check", "origin/main..HEAD"])
        .code(4)
        .stderr_has("warning: cannot reach remote `origin`")
        .stderr_has("judging the push by the remote's claims as last read")
        .stderr_has("src/a.rs: locked by alice on ")
        .stderr_has("claim `src/**` through remote `origin`");
}
