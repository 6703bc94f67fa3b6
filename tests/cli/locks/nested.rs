//! Workspaces inside workspaces, outside git: a folder below the root with its own `.coord/`
//! keeps its own agents and messages. The workspace around it says it holds it, and a message to
//! an agent living in it is refused, never left in an inbox nobody reads. (Issue 30, item 9.)

use crate::support::{Cmd, Env};

/// `coord` as `agent`, started in `sub/` (the workspace found from there).
fn in_sub(env: &Env, agent: &str) -> Cmd {
    env.agent(agent)
        .cwd(env.path("sub"))
        .env_remove("COORD_DIR")
}

/// `sub/` became a workspace first (agent b worked there alone), the folder around it later.
fn nested_pair() -> Env {
    let env = Env::new();
    env.write("sub/f.md", "f\n");
    in_sub(&env, "b").args(["presence", ".", "tb"]).ok();
    assert!(env.path("sub/.coord").is_dir());
    env.agent("a").args(["presence", ".", "ta"]).ok();
    assert!(env.path(".coord").is_dir());
    env
}

#[test]
fn status_says_it_holds_a_nested_workspace_and_its_agents() {
    let env = nested_pair();
    in_sub(&env, "b").args(["lock", "f.md"]).ok();
    // From the top, b's lock is seen (and refused to a) ...
    env.agent("a")
        .args(["lock", "sub/f.md", "--no-wait"])
        .code(3);
    // ... and status says where b lives.
    let out = env.cmd().arg("status").ok();
    out.stdout_has("Nested workspaces")
        .stdout_has("sub/")
        .stdout_has("b ACTIVE")
        .stdout_has("coord -C sub status");
    let doc: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(doc["nested"][0]["root"], "sub", "{doc}");
    assert_eq!(doc["nested"][0]["agents"][0]["agent"], "b", "{doc}");
    assert_eq!(doc["nested"][0]["agents"][0]["working_on"], "tb", "{doc}");
}

#[test]
fn a_nested_agent_without_locks_is_found_once_it_says_it_is_here() {
    let env = nested_pair();
    // b holds nothing; its next presence refresh tells the workspace around it.
    env.cmd()
        .arg("status")
        .ok()
        .stdout_lacks("Nested workspaces");
    in_sub(&env, "b").args(["presence", ".", "tb"]).ok();
    env.cmd()
        .arg("status")
        .ok()
        .stdout_has("Nested workspaces")
        .stdout_has("b ACTIVE");
    // A workspace that is gone is no longer listed.
    std::fs::remove_dir_all(env.path("sub/.coord")).unwrap();
    env.cmd()
        .arg("status")
        .ok()
        .stdout_lacks("Nested workspaces");
}

#[test]
fn a_message_to_an_agent_in_a_nested_workspace_is_refused_not_lost() {
    let env = nested_pair();
    in_sub(&env, "b").args(["lock", "f.md"]).ok();
    let before = env.snapshot();
    let out = env.agent("a").args(["msg", "send", "b", "hello"]).code(3);
    out.stderr_has("error: `b` works in the nested workspace `sub/`")
        .stderr_has("hint: send it there: `coord -C sub msg send b");
    assert_eq!(env.snapshot(), before, "a refused message wrote something");
    let doc: serde_json::Value = env
        .agent("a")
        .args(["msg", "send", "b", "hello", "--json"])
        .code(3)
        .json();
    assert_eq!(doc["error"]["kind"], "agent_elsewhere");
    // Sent where the hint says, b reads it.
    env.agent("a")
        .args(["-C", "sub", "msg", "send", "b", "hello"])
        .ok();
    in_sub(&env, "b")
        .args(["msg", "list", "--unread"])
        .ok()
        .stdout_has("hello");
    // An agent of this workspace, or one nobody knows yet, still gets its message here.
    env.agent("b").args(["msg", "send", "a", "hi a"]).ok();
    env.agent("a")
        .args(["msg", "send", "newcomer", "welcome"])
        .ok();
}

#[test]
fn the_mcp_msg_send_refuses_an_agent_in_a_nested_workspace_as_the_cli_does() {
    let env = nested_pair();
    in_sub(&env, "b").args(["lock", "f.md"]).ok();
    let mut a = crate::clients::mcp::Client::start(&env, Some("a"));
    let out = a.call("msg_send", serde_json::json!({"to": "b", "text": "hello"}));
    assert_eq!(out["isError"], true, "{out}");
    assert_eq!(out["structuredContent"]["error"]["kind"], "agent_elsewhere");
    let messages = |dir: &str| std::fs::read_dir(env.path(dir)).map_or(0, |d| d.count());
    assert_eq!(
        messages(".coord/messages"),
        0,
        "a refused message was written"
    );
    assert_eq!(messages("sub/.coord/messages"), 0);
}
