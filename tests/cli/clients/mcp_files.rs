//! `coord mcp`'s files: no temporary file left between requests, a state folder removed
//! meanwhile.

use std::time::Duration;

use serde_json::json;

use crate::clients::mcp::{Client, assert_ok};
use crate::support::{Env, temps_in};

#[test]
fn no_temporary_file_is_left_between_requests() {
    let env = Env::new();
    env.write("a.md", "v0");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    for round in 1..=5 {
        assert_ok(&c.call("lock", json!({"files": ["a.md"]})));
        // The backup holds what was there before this lock; the presence says LOCKED.
        assert_eq!(env.read("a.md.bak"), format!("v{}", round - 1));
        assert!(
            env.read(".claude_presence")
                .contains("lock_status: LOCKED\n")
        );
        env.write("a.md", format!("v{round}"));
        assert_ok(&c.call("unlock", json!({"files": ["a.md"]})));
        assert!(env.read(".claude_presence").contains("lock_status: FREE\n"));
        assert!(!env.exists("a.md.lock.claude"));
        // Nothing in the root but the files of the protocol: no temporary file, ever.
        assert_eq!(temps_in(env.root()), Vec::<String>::new());
        assert_eq!(temps_in(&env.path(".coord")), Vec::<String>::new());
    }
    let (code, _) = c.finish();
    assert_eq!(code, 0);
    assert_eq!(temps_in(env.root()), Vec::<String>::new());
    assert_eq!(temps_in(&env.path(".coord")), Vec::<String>::new());
}

#[test]
fn the_state_folder_removed_between_requests_is_made_again_and_still_excludes() {
    let env = Env::new();
    env.write("a.md", "a");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    assert_ok(&c.call("lock", json!({"files": ["a.md"]})));
    assert_ok(&c.call("unlock", json!({"files": ["a.md"]})));
    std::fs::remove_dir_all(env.path(".coord")).unwrap();
    assert_ok(&c.call("lock", json!({"files": ["a.md"]})));
    assert!(env.exists(".coord/mutex"));
    env.agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .code(3)
        .stderr_has("held by claude");
    assert_ok(&c.call("unlock", json!({"files": ["a.md"]})));
    env.agent("gemini").args(["lock", "a.md", "--no-wait"]).ok();
    let (code, _) = c.finish();
    assert_eq!(code, 0);
}

#[test]
fn an_idle_server_does_not_gather_replaced_files_between_heartbeats() {
    let env = Env::new();
    let mut c = Client::start_with(
        &env,
        Some("claude"),
        &[("COORD_HEARTBEAT_INTERVAL", "50ms")],
    );
    c.initialize("2025-06-18");
    // An agent (and heartbeating) from the first tool call on.
    assert_ok(&c.call("status", json!({})));
    // Twenty heartbeats or so, each replacing the presence and the stamp-card row.
    std::thread::sleep(Duration::from_millis(1000));
    let all = || {
        let mut v = temps_in(env.root());
        v.extend(temps_in(&env.path(".coord")));
        v.extend(temps_in(&env.path(".coord/partners")));
        v
    };
    // A replace under way shows its temporary file for a moment (each has a name of its own):
    // what gathers is what is still there a moment later.
    let lasting = |look: &dyn Fn() -> Vec<String>| {
        let first = look();
        std::thread::sleep(Duration::from_millis(300));
        let again = look();
        first
            .into_iter()
            .filter(|t| again.contains(t))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        lasting(&|| temps_in(env.root())),
        Vec::<String>::new(),
        "none in the root"
    );
    assert_eq!(lasting(&all), Vec::<String>::new());
    let (code, _) = c.finish();
    assert_eq!(code, 0);
    assert_eq!(all(), Vec::<String>::new());
}
