//! The real Qwen Code, OpenCode and Cline CLI with coord installed as their plugin alone (no
//! `coord init`), offline against the scripted model: an edit of a held file is denied, then
//! allowed, and `git status` shows nothing of coord's.

use serde_json::json;

use crate::moreclients_e2e::{Client, Door, Rig, cline_turn, git, run};

/// With only the plugin installed (no `coord init`, a repository nobody set up): an edit of a
/// file another agent holds is denied (untouched, the reason naming the holder reaches the
/// model), a free file is written and released at the end of the turn, and nothing of coord's
/// shows in `git status`.
fn plugin_alone_denies_then_allows(client: Client) {
    let rig = Rig::with(client, Door::Plugin);
    let env = &rig.env;
    env.agent("holder")
        .args(["lock", "held.txt", "--reason", "rewriting it"])
        .ok();
    run(
        &rig,
        "a session with the plugin alone",
        rig.session(
            &[
                client.write(&env.path("held.txt"), "from the client"),
                client.write(&env.path("free.txt"), "from the client"),
            ],
            None,
        ),
    );
    assert!(!env.exists("held.txt"), "a held file stays untouched");
    assert!(
        rig.api.requests().contains("is locked by holder"),
        "the deny reason, naming the holder, reaches the model"
    );
    assert_eq!(env.read("free.txt"), "from the client");
    assert!(
        !env.files_ending("")
            .iter()
            .any(|f| f.starts_with("free.txt.lock.")),
        "the plugin locked free.txt and released it at the end of the turn"
    );
    assert!(
        rig.api
            .requests()
            .contains("Working with other agents in this folder"),
        "the plugin gives the agent coord's instructions"
    );
    // Then allowed: the holder lets go, and the next session writes it.
    env.agent("holder").args(["unlock", "held.txt"]).ok();
    run(
        &rig,
        "the session once the file is free",
        rig.session(&[client.write(&env.path("held.txt"), "now mine")], None),
    );
    assert_eq!(env.read("held.txt"), "now mine");
    let mut untracked = "?? free.txt\n?? held.txt\n".to_string();
    // The plugin's MCP server is the session's agent: its lock does not block the session's
    // own edit, and goes at the turn's end with the session's locks.
    if let Some(lock) = client.mcp_lock("mcp.txt") {
        run(
            &rig,
            "a session locking through MCP, then editing",
            rig.session(
                &[
                    lock,
                    client.write(&env.path("mcp.txt"), "after the MCP lock"),
                ],
                None,
            ),
        );
        assert!(
            rig.api.requests().contains("Lock acquired: mcp.txt"),
            "the MCP lock was taken"
        );
        assert_eq!(env.read("mcp.txt"), "after the MCP lock");
        assert!(
            !env.files_ending("")
                .iter()
                .any(|f| f.starts_with("mcp.txt.lock.")),
            "released at the end of the turn"
        );
        untracked.push_str("?? mcp.txt\n");
    }
    assert_eq!(
        git(
            env.root(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        untracked,
        "nothing of coord's in `git status`"
    );
    if let Client::Cline = client {
        cline_commit_of_a_held_file_is_refused(&rig);
    }
}

/// Issue 35 for Cline, with the real client: a `git commit` through `run_commands` that would
/// commit a file another agent holds is skipped, the reason reaching the model; nothing is
/// committed.
fn cline_commit_of_a_held_file_is_refused(rig: &Rig) {
    let env = &rig.env;
    env.write("README.md", "changed\n");
    env.agent("holder")
        .args(["lock", "README.md", "--reason", "rewriting it"])
        .ok();
    let head = git(env.root(), &["rev-parse", "HEAD"]);
    run(
        rig,
        "a session committing a held file",
        rig.session(
            &[json!(["run_commands", {"commands": ["git status --short", "git commit -qam 'from cline'"]}])],
            None,
        ),
    );
    assert_eq!(
        git(env.root(), &["rev-parse", "HEAD"]),
        head,
        "nothing committed"
    );
    assert!(
        rig.api.requests().contains("git guard"),
        "the refusal, from the guard's check, reaches the model"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_QWEN (see .ci/run)"]
fn real_qwen_code_with_the_extension_alone_is_denied_then_allowed() {
    plugin_alone_denies_then_allows(Client::Qwen);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_OPENCODE (see .ci/run)"]
fn real_opencode_with_the_plugin_alone_is_denied_then_allowed() {
    plugin_alone_denies_then_allows(Client::Opencode);
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_CLINE (see .ci/run)"]
fn real_cline_with_the_plugin_alone_is_denied_then_allowed() {
    let _turn = cline_turn();
    plugin_alone_denies_then_allows(Client::Cline);
}
