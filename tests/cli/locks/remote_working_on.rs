//! What each clone's agents are editing (their locks) reaches the other clones as advisory
//! `working_on` (contract §13, #47): an edit there of such a file is allowed with a warning
//! naming the agent and its host. Real git served by `git daemon` on 127.0.0.1, real `coord`
//! processes, each clone in its own folder sharing nothing but the remote.

use std::path::Path;

use serde_json::Value;

use crate::locks::remote::{Team, Transport, coord, hostname, remote, status};
use crate::support::{Env, eventually};

/// A Claude Code `PreToolUse` payload of a `Write` of `rel` in the clone `dir`.
fn write_payload(dir: &Path, rel: &str) -> String {
    serde_json::json!({
        "session_id": "7684f1ed-55e2-4a19-be34-6aa5a64f4b50",
        "cwd": dir,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": dir.join(rel), "content": "x\n"},
    })
    .to_string()
}

/// `coord hook claude` as `agent` in `dir` for a write of `rel`: the reply (`Null`: none).
fn hook_write(env: &Env, dir: &Path, agent: &str, rel: &str) -> Value {
    let out = coord(env, dir, agent)
        .args(["hook", "claude"])
        .stdin(write_payload(dir, rel))
        .ok();
    let text = out.stdout.trim();
    if text.is_empty() {
        return Value::Null;
    }
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// What `agent` edits, as the clone `dir` reads the remote now (`None`: not listed).
fn working_on_seen(t: &Team, dir: &Path, agent: &str) -> Option<Vec<String>> {
    remote(&t.env, dir, "x", &["sync"]).ok();
    (status(&t.env, dir).agents.into_iter())
        .find(|a| a.agent == agent)
        .map(|a| a.working_on)
}

/// A clone `name` with the folder the tests edit in.
fn clone_with_src(t: &Team, name: &str) -> std::path::PathBuf {
    let dir = t.clone(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    dir
}

/// Alice locks `src/a.rs` in clone A; once A and B read the remote, B lists her as editing it,
/// and an edit of it in B (a Claude hook, `coord lock`) is allowed with a warning naming her and
/// her host. Released in A, B's next edit has no warning.
#[test]
fn an_edit_of_a_file_another_clone_edits_is_allowed_with_a_warning() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    coord(&t.env, &a, "alice").args(["lock", "src/a.rs"]).ok();
    remote(&t.env, &a, "alice", &["sync"]).ok();
    assert_eq!(
        working_on_seen(&t, &b, "alice"),
        Some(vec!["src/a.rs".to_string()])
    );
    let who = format!("alice on {}", hostname());

    let reply = hook_write(&t.env, &b, "bob", "src/a.rs");
    let out = &reply["hookSpecificOutput"];
    assert_ne!(out["permissionDecision"], "deny", "{reply}");
    assert_eq!(out["hookEventName"], "PreToolUse", "{reply}");
    let context = out["additionalContext"].as_str().unwrap_or_default();
    assert!(
        context.contains(&format!("`src/a.rs` is being edited by {who}")),
        "{reply}"
    );
    assert!(
        b.join("src/a.rs.lock.bob").exists(),
        "the edit is allowed: bob holds it"
    );
    coord(&t.env, &b, "bob").args(["unlock", "src/a.rs"]).ok();

    coord(&t.env, &b, "carol")
        .args(["lock", "src/a.rs"])
        .ok()
        .stderr_has("warning: `src/a.rs` is being edited by")
        .stderr_has(&who);
    coord(&t.env, &b, "carol").args(["unlock", "src/a.rs"]).ok();

    coord(&t.env, &a, "alice").args(["unlock", "src/a.rs"]).ok();
    remote(&t.env, &a, "alice", &["sync"]).ok();
    assert_eq!(working_on_seen(&t, &b, "alice"), None);
    assert_eq!(hook_write(&t.env, &b, "bob", "src/a.rs"), Value::Null);
}

/// A lock a Claude hook takes in clone A reaches clone B with no `coord remote sync` run in A:
/// the hook starts one in the background (it never waits on the network itself).
#[test]
fn a_hooks_lock_is_published_without_a_sync_run_by_hand() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    let reply = hook_write(&t.env, &a, "alice", "src/a.rs");
    assert_eq!(reply, Value::Null, "nobody else edits it");
    assert!(a.join("src/a.rs.lock.alice").exists());
    eventually("B sees alice editing src/a.rs", || {
        working_on_seen(&t, &b, "alice") == Some(vec!["src/a.rs".to_string()])
    });
    // Released: the next background sync says so.
    coord(&t.env, &a, "alice").args(["unlock", "src/a.rs"]).ok();
    eventually("B sees alice editing nothing", || {
        working_on_seen(&t, &b, "alice").is_none()
    });
}
