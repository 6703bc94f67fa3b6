//! A stale claim is taken over like a stale lock (#45): a lock or claim that passes over it
//! removes it (saying from whom, recorded in the history), and a claim passing over stale locks
//! takes them over. Its holder coming back afterwards holds nothing: `status` never shows two
//! LIVE holders of one path, its `unlock` removes nothing of the new holder's, its `write` is
//! refused.
//!
//! The clock is fixed through `COORD_NOW`: the holder claims at `T0` and is silent at `T1`, ten
//! minutes later (past its TTL of 1 s, its heartbeat past the two minutes of ACTIVE).

use serde_json::{Value, json};

use crate::clients::mcp::{Client, assert_ok};
use crate::support::{Cmd, Env};

const T0: &str = "2030-01-01T10:00:00+00:00";
const T1: &str = "2030-01-01T10:10:00+00:00";

/// `coord` as `agent`, at time `at`.
fn at(env: &Env, agent: &str, at: &str) -> Cmd {
    env.agent(agent).env("COORD_NOW", at)
}

/// The LIVE holders `status` shows at `T1`: `(agent, file or pattern)`, sorted.
fn live(env: &Env) -> Vec<(String, String)> {
    let v: Value = env
        .cmd()
        .env("COORD_NOW", T1)
        .args(["status", "--json"])
        .ok()
        .json();
    let mut out: Vec<(String, String)> = Vec::new();
    for (list, key) in [("locks", "file"), ("claims", "pattern")] {
        for e in v[list].as_array().into_iter().flatten() {
            if e["state"] == "LIVE" {
                out.push((
                    e["agent"].as_str().unwrap().into(),
                    e[key].as_str().unwrap().into(),
                ));
            }
        }
    }
    out.sort();
    out
}

fn pair(agent: &str, what: &str) -> (String, String) {
    (agent.to_string(), what.to_string())
}

/// The history's events of kind `event`.
fn events(env: &Env, event: &str) -> Vec<Value> {
    env.cmd()
        .args(["log", "--json"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == event)
        .collect()
}

#[test]
fn a_lock_over_a_stale_claim_takes_it_over_and_its_holder_coming_back_holds_nothing() {
    let env = Env::new();
    env.write("src/a.rs", "a\n");
    at(&env, "alice", T0)
        .args(["lock", "src/**", "--ttl", "1s"])
        .ok();
    at(&env, "bob", T1)
        .args(["lock", "src/a.rs", "--no-wait"])
        .ok()
        .stderr_has("note: took over the stale claim of alice on `src/**` (older than its TTL");
    // alice comes back: her heartbeat revives nothing.
    at(&env, "alice", T1).args(["presence", "back"]).ok();
    assert_eq!(live(&env), [pair("bob", "src/a.rs")]);
    // Her unlock of the claim finds none, and leaves bob's lock where it is.
    at(&env, "alice", T1)
        .args(["unlock", "src/**"])
        .ok()
        .stdout_has("src/**: not locked");
    assert!(env.exists("src/a.rs.lock.bob"));
    // Her write is refused; the file is as bob's lock found it.
    at(&env, "alice", T1)
        .args(["write", "src/a.rs"])
        .stdin("alice's late edit\n")
        .code(3)
        .stderr_has("bob");
    assert_eq!(env.read("src/a.rs"), "a\n");
    assert_eq!(live(&env), [pair("bob", "src/a.rs")]);
    // The history says who took what from whom.
    let over = events(&env, "lock_taken_over");
    assert_eq!(over.len(), 1, "{over:?}");
    assert_eq!(over[0]["agent"], "bob");
    assert_eq!(over[0]["file"], "src/a.rs");
    assert_eq!(over[0]["from"], "alice");
    assert_eq!(over[0]["claims"], "src/**");
}

#[test]
fn a_claim_over_stale_locks_takes_them_over_made_by_coord_or_by_hand() {
    let env = Env::new();
    env.write("src/a.rs", "a\n");
    env.write("src/deep/b.rs", "b\n");
    at(&env, "alice", T0)
        .args(["lock", "src/a.rs", "--ttl", "1s"])
        .ok();
    // A lock made by hand, dated T0, by an agent with no presence.
    env.write(
        "src/deep/b.rs.lock.Carol",
        crate::rigs::seed_lock("src/deep/b.rs", "Carol", "2030-01-01T10:00:00+00:00"),
    );
    let out = at(&env, "bob", T1).args(["lock", "src/", "--no-wait"]).ok();
    out.stderr_has("note: took over the stale lock of alice on `src/a.rs`")
        .stderr_has("note: took over the stale lock of Carol on `src/deep/b.rs`");
    assert!(!env.exists("src/a.rs.lock.alice"));
    assert!(!env.exists("src/deep/b.rs.lock.Carol"));
    at(&env, "alice", T1).args(["presence", "back"]).ok();
    assert_eq!(live(&env), [pair("bob", "src/**")]);
    at(&env, "alice", T1)
        .args(["lock", "src/a.rs", "--no-wait"])
        .code(3)
        .stderr_has("bob (claim `src/**`)");
    let taken = events(&env, "claim_taken");
    let bobs = taken.iter().find(|e| e["agent"] == "bob").unwrap();
    assert_eq!(bobs["from"], "alice, Carol", "{bobs}");
    assert_eq!(bobs["files"], "src/a.rs, src/deep/b.rs", "{bobs}");
}

#[test]
fn a_claim_over_an_overlapping_stale_claim_takes_it_over_naming_its_pattern() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("src/auth")).unwrap();
    at(&env, "alice", T0)
        .args(["lock", "src/*/", "--ttl", "1s"])
        .ok();
    at(&env, "bob", T1)
        .args(["lock", "src/auth/**", "--no-wait"])
        .ok()
        .stderr_has("note: took over the stale claim of alice on `src/*/**`");
    at(&env, "alice", T1).args(["presence", "back"]).ok();
    assert_eq!(live(&env), [pair("bob", "src/auth/**")]);
    at(&env, "alice", T1)
        .args(["lock", "src/auth/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("bob");
}

#[test]
fn a_lock_in_another_worktree_takes_over_a_stale_claim() {
    let (env, main, b) = crate::locks::claims::repo();
    let here =
        |agent: &str, dir: &std::path::Path| at(&env, agent, T1).env_remove("COORD_DIR").cwd(dir);
    env.agent("alice")
        .env("COORD_NOW", T0)
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["lock", "src/", "--ttl", "1s"])
        .ok();
    here("bob", &b)
        .args(["lock", "src/x.rs", "--no-wait"])
        .ok()
        .stderr_has("took over the stale claim of alice on `src/**`");
    here("alice", &main).args(["presence", "back"]).ok();
    let v: Value = here("carol", &b).args(["status", "--json"]).ok().json();
    assert_eq!(v["claims"], json!([]), "{v}");
    assert_eq!(v["locks"][0]["agent"], "bob", "{v}");
    here("alice", &main)
        .args(["lock", "src/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("bob");
}

#[test]
fn an_edit_through_a_hook_or_the_mcp_lock_tool_takes_a_stale_claim_over() {
    let env = Env::new();
    env.write("src/a.rs", "a\n");
    env.write("lib/b.rs", "b\n");
    at(&env, "alice", T0)
        .args(["lock", "src/", "lib/", "--ttl", "1s"])
        .ok();
    let payload = json!({
        "session_id": "0b5c7e6a-1111-4a19-be34-6aa5a64f4b50",
        "cwd": env.root(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": env.path("src/a.rs"), "old_string": "a", "new_string": "c"},
        "tool_use_id": "toolu_1",
    });
    let out = env
        .cmd()
        .env("COORD_NOW", T1)
        .args(["hook", "claude", "--wait", "0"])
        .stdin(payload.to_string())
        .ok();
    assert!(!out.stdout.contains("\"deny\""), "{}", out.stdout);
    assert!(env.exists("src/a.rs.lock.claude-0b5c7e6a"));
    let mut c = Client::start_with(&env, Some("gemini"), &[("COORD_NOW", T1)]);
    c.initialize("2025-06-18");
    assert_ok(&c.call("lock", json!({"files": ["lib/b.rs"]})));
    at(&env, "alice", T1).args(["presence", "back"]).ok();
    let mut holders: Vec<String> = live(&env).into_iter().map(|(a, _)| a).collect();
    holders.sort();
    assert_eq!(holders, ["claude-0b5c7e6a", "gemini"]);
    let (code, _) = c.finish();
    assert_eq!(code, 0);
}
