//! Another clone's claims hold here as a claim of another worktree holds (contract §13, #47): a
//! lock, write, run, note, MCP lock or client hook edit of a path another clone claims is
//! refused (exit 3) or denied naming the holder and its host, judged by the claims as last
//! synced, read again when older than `remote_max_age`; a remote that cannot be read never
//! wedges a hook. Real git served by `git daemon`, real `coord` processes, each clone in its own
//! folder sharing nothing but the remote.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::clients::mcp::Client;
use crate::locks::remote::{Team, Transport, coord, hostname, remote};
use crate::support::{Cmd, Output};

/// A clone `name` holding `src/a.rs`.
fn clone_with_file(t: &Team, name: &str) -> PathBuf {
    let dir = t.clone(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/a.rs"), "a\n").unwrap();
    dir
}

/// `coord lock PATTERN --reason x` as alice in clone `a`: a claim published to the remote.
fn alice_claims(t: &Team, a: &Path, pattern: &str) {
    coord(&t.env, a, "alice")
        .args(["lock", pattern, "--reason", "x"])
        .ok();
}

/// A claude `Write` of `src/a.rs` in clone `dir`, as its `PreToolUse` hook gets it.
fn write_payload(dir: &Path) -> String {
    json!({
        "session_id": "0b5c7e6a-2222-4a19-be34-6aa5a64f4b50",
        "cwd": dir,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": dir.join("src/a.rs"), "content": "b\n"},
        "tool_use_id": "toolu_1",
    })
    .to_string()
}

/// `coord hook claude` fed the `Write` payload in `dir`: the deny reason, `None` when allowed.
fn hook_edit(bob: Cmd, dir: &Path) -> (Option<String>, Output) {
    let out = bob
        .args(["hook", "claude", "--wait", "0"])
        .stdin(write_payload(dir))
        .ok();
    (crate::clients::hooks::denied("claude", &out), out)
}

/// The MCP `lock` tool's answer for `src/a.rs`, from a `coord mcp` run as `bob` in `dir`.
fn mcp_lock(bob: Cmd) -> Value {
    let mut c = Client::spawn(bob.arg("mcp").command(), Stdio::piped());
    c.initialize("2025-06-18");
    let got = c.call("lock", json!({"files": ["src/a.rs"]}));
    let _ = c.call("unlock", json!({"files": ["src/a.rs"]}));
    c.finish();
    got
}

#[track_caller]
fn names_alice(text: &str) {
    for says in [
        format!("alice on {}", hostname()),
        "claim `src/**` through remote `origin`".to_string(),
    ] {
        assert!(text.contains(&says), "{says:?} in {text}");
    }
}

/// Clone A claims `src/**`; in clone B every door to `src/a.rs` is refused (exit 3) or denied,
/// naming alice and A's host: `coord lock` of the file, `write`, `run`, `note`, a `--local`
/// claim that overlaps, the MCP `lock` tool and a claude hook's `Write`. Released in A and read
/// again in B, each is allowed.
#[test]
fn another_clones_claim_refuses_every_door_until_released() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_file(&t, "a");
    let b = clone_with_file(&t, "b");
    alice_claims(&t, &a, "src/**");
    remote(&t.env, &b, "x", &["sync"]).ok();
    let bob = || coord(&t.env, &b, "bob");

    let lock = bob().args(["lock", "src/a.rs", "--no-wait"]).code(3);
    names_alice(&lock.stderr);
    assert!(lock.stderr.contains("(working on x)"), "{}", lock.stderr);
    let write = bob().args(["write", "src/a.rs"]).stdin("evil\n").code(3);
    names_alice(&write.stderr);
    assert_eq!(std::fs::read_to_string(b.join("src/a.rs")).unwrap(), "a\n");
    let run = bob().args(["run", "src/a.rs", "--no-wait", "--"]);
    names_alice(&run.args(["sh", "-c", ": > ran"]).code(3).stderr);
    assert!(!b.join("ran").exists());
    let note = bob()
        .args(["note", "src/n.md", "hello", "--no-wait"])
        .code(3);
    names_alice(&note.stderr);
    assert!(!b.join("src/n.md").exists());
    let local = bob()
        .args(["lock", "src/x/", "--local", "--no-wait"])
        .code(3);
    names_alice(&local.stderr);
    let mcp = mcp_lock(bob());
    assert_eq!(mcp["isError"], true, "{mcp}");
    names_alice(mcp["content"][0]["text"].as_str().unwrap());
    let (denied, _) = hook_edit(bob(), &b);
    let denied = denied.expect("the hook's edit is denied");
    names_alice(&denied);
    // alice is on another machine: `coord msg` cannot reach her, her person can.
    assert!(
        !denied.contains("msg send") && denied.contains("ask whoever runs alice on "),
        "{denied}"
    );
    assert!(!b.join("src/a.rs.lock.bob").exists());

    coord(&t.env, &a, "alice").args(["unlock", "src/**"]).ok();
    remote(&t.env, &b, "x", &["sync"]).ok();
    bob().args(["lock", "src/a.rs", "--no-wait"]).ok();
    bob().args(["write", "src/a.rs"]).stdin("b\n").ok();
    bob().args(["unlock", "src/a.rs"]).ok();
    bob()
        .args(["run", "src/a.rs", "--no-wait", "--", "true"])
        .ok();
    bob().args(["note", "src/n.md", "hello", "--no-wait"]).ok();
    bob().args(["lock", "src/x/", "--local", "--no-wait"]).ok();
    bob().args(["unlock", "src/x/"]).ok();
    let mcp = mcp_lock(bob());
    assert_ne!(mcp["isError"], true, "{mcp}");
    let (denied, _) = hook_edit(bob(), &b);
    assert_eq!(denied, None);
}

/// A claim made in clone A reaches B's hook within B's `remote_max_age` without anyone running
/// `coord remote sync` in B: the hook reads the remote again once what it has is older.
#[test]
fn a_new_claim_reaches_another_clones_hook_within_the_max_age() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_file(&t, "a");
    let b = clone_with_file(&t, "b");
    remote(&t.env, &b, "x", &["sync"]).ok();
    alice_claims(&t, &a, "src/**");
    // What B read is now older than its max age.
    std::thread::sleep(Duration::from_millis(1500));
    let bob = coord(&t.env, &b, "bob").env("COORD_REMOTE_MAX_AGE", "1s");
    let (denied, _) = hook_edit(bob, &b);
    names_alice(&denied.expect("the new claim denies the edit"));
}

/// The remote unreachable (its daemon stopped): a hook reads what it has, allows an edit nobody
/// claims with a warning naming the remote, and answers; a `coord lock` judges by the claims
/// last read and says how old they are.
#[test]
fn an_unreachable_remote_never_wedges_a_hook_and_old_claims_still_hold() {
    let Some(mut t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_file(&t, "a");
    let b = clone_with_file(&t, "b");
    let c = clone_with_file(&t, "c");
    alice_claims(&t, &a, "src/**");
    // B read the remote after the claim; C before it.
    remote(&t.env, &b, "x", &["sync"]).ok();
    drop(t.daemon.take());

    let carol = coord(&t.env, &c, "carol").env("COORD_REMOTE_MAX_AGE", "0");
    let (denied, out) = hook_edit(carol, &c);
    assert_eq!(denied, None, "{out:?}");
    assert!(
        out.stderr
            .contains("warning: remote `origin` could not be read within 1s"),
        "{}",
        out.stderr
    );

    let bob = coord(&t.env, &b, "bob").env("COORD_REMOTE_MAX_AGE", "0");
    let lock = bob.args(["lock", "src/a.rs", "--no-wait"]).code(3);
    names_alice(&lock.stderr);
    assert!(
        lock.stderr.contains("claims are judged as read "),
        "{}",
        lock.stderr
    );
}

/// The paths another clone claims are the repository's: a linked worktree of this clone is held
/// as its main tree is, and a workspace of its own in a subfolder judges its files by where they
/// lie in the repository (`x.rs` in `sub/` is `sub/x.rs`).
#[test]
fn another_clones_claim_holds_in_a_linked_worktree_and_a_subfolder_workspace() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    std::fs::create_dir_all(b.join("sub/.coord")).unwrap();
    std::fs::write(b.join("sub/x.rs"), "x\n").unwrap();
    crate::locks::remote::run_git(&b, &["add", "sub/x.rs"]);
    crate::locks::remote::run_git(&b, &["commit", "-qm", "x"]);
    crate::locks::remote::run_git(&b, &["worktree", "add", "-q", "../b-wt", "-b", "wt"]);
    let wt = t.env.path("b-wt");
    alice_claims(&t, &a, "sub/**");
    remote(&t.env, &b, "x", &["sync"]).ok();
    for (dir, file) in [(&wt, "sub/x.rs"), (&b.join("sub"), "x.rs")] {
        let refused = coord(&t.env, dir, "bob")
            .args(["lock", file, "--no-wait"])
            .code(3);
        let text = &refused.stderr;
        assert!(text.contains(&format!("alice on {}", hostname())), "{text}");
        assert!(text.contains("claim `sub/**`"), "{text}");
    }
}

/// Another clone's claim whose lease lapsed (its holder stopped renewing) is takeable: a plain
/// lock here is not held back by it, and is told whose STALE claim it went past.
#[test]
fn a_stale_claim_of_another_clone_lets_a_lock_through_with_a_warning() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = clone_with_file(&t, "b");
    remote(&t.env, &a, "alice", &["claim", "src/**", "--ttl", "1s"]).ok();
    remote(&t.env, &b, "x", &["sync"]).ok();
    // Its lease, from when B first saw it, has lapsed.
    std::thread::sleep(Duration::from_millis(1500));
    let got = coord(&t.env, &b, "bob")
        .args(["lock", "src/a.rs", "--no-wait"])
        .ok();
    assert!(
        got.stderr.contains(&format!(
            "warning: `src/a.rs` is in the claim `src/**` of alice on {} through remote `origin`, STALE since",
            hostname()
        )),
        "{}",
        got.stderr
    );
}

/// `.coord/remote/claims` (the other clones' claims as last synced, what a check reads) with
/// a lease that does not parse, or cut short: the claim is not taken as lapsed (STALE since
/// 1970) nor lost, the state it was made from still says it holds, and bob's lock is refused.
#[test]
fn a_corrupted_index_of_another_clones_claims_does_not_free_them() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = t.clone("a");
    let b = clone_with_file(&t, "b");
    alice_claims(&t, &a, "src/**");
    remote(&t.env, &b, "x", &["sync"]).ok();
    let index = b.join(".coord/remote/claims");
    let good = std::fs::read_to_string(&index).unwrap();
    let (head, lines) = good.split_once('\n').unwrap();
    let (_, rest) = lines.split_once('\t').unwrap();
    for bad in [
        format!("{head}\nsoon\t{rest}"),
        format!("{head}\n{}", &lines[..lines.len() / 2]),
    ] {
        std::fs::write(&index, &bad).unwrap();
        let out = coord(&t.env, &b, "bob")
            .args(["lock", "src/a.rs", "--no-wait"])
            .run();
        assert_eq!(out.code, Some(3), "{bad}\n{}\n{}", out.stdout, out.stderr);
        names_alice(&out.stderr);
    }
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// A lock here that waits (`--wait`) for another clone's claim reads the remote again while it
/// waits, and takes the file once the claim is released there, with no `coord remote sync`.
#[test]
fn a_wait_for_another_clones_claim_ends_when_it_is_released_there() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_file(&t, "a");
    let b = clone_with_file(&t, "b");
    alice_claims(&t, &a, "src/**");
    remote(&t.env, &b, "x", &["sync"]).ok();
    let waiter = coord(&t.env, &b, "bob")
        .args(["--json", "lock", "src/a.rs", "--wait", "60s"])
        .spawn();
    crate::support::eventually("bob waits for alice's claim", || {
        let log = coord(&t.env, &b, "x").args(["log", "--json"]).ok();
        log.stdout.contains("\"lock_waiting\"") && log.stdout.contains("alice on ")
    });
    coord(&t.env, &a, "alice").args(["unlock", "src/**"]).ok();
    let got = crate::support::finish(waiter);
    assert_eq!(got.code, Some(0), "{got:?}");
    assert!(b.join("src/a.rs.lock.bob").exists());
}
