//! Every refusal exits 3 and names its rule: `--json`'s `kind` is the rule, so a script, hook or
//! MCP client can branch on it; the hint is its own field, never inside the message.

use crate::fixture::Review;
use crate::support::{Cmd, Env};

/// Run `cmd` with `--json`, expect exit `code`: the error object, checked for its shape.
#[track_caller]
fn refusal(cmd: Cmd, code: i32) -> serde_json::Value {
    let out = cmd.arg("--json").code(code);
    let doc: serde_json::Value = out.json();
    let err = doc["error"].clone();
    assert_eq!(err["exit_code"], code, "{doc}");
    let message = err["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("hint:"),
        "the hint is not in the message: {doc}"
    );
    assert!(!message.is_empty(), "{doc}");
    // With `--json` the error is said once, in the document: not again on stderr.
    assert!(
        !out.stderr.contains("error: ") && !out.stderr.contains("hint: "),
        "said twice: {}",
        out.stderr
    );
    err
}

#[track_caller]
fn kind(cmd: Cmd) -> String {
    refusal(cmd, 3)["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn say(env: &Env, id: &str, text: &str) -> Cmd {
    env.cmd().args(["dialogue", "say", "--as", id, text])
}

fn command(env: &Env, what: &str) {
    env.cmd().args(["dialogue", "command", what]).ok();
}

#[test]
fn each_dialogue_refusal_has_its_own_kind() {
    let env = Env::new();
    assert_eq!(kind(env.cmd().args(["dialogue", "turn"])), "no_dialogue");
    assert_eq!(kind(say(&env, "AGENT-1", "hello")), "no_dialogue");
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    assert_eq!(
        kind(env.cmd().args(["dialogue", "init", "--topic", "T"])),
        "dialogue_exists"
    );
    let conversation = env.read("agent-dialogue/conversation.md");
    assert_eq!(kind(say(&env, "AGENT-2", "me first")), "not_your_turn");
    assert_eq!(
        kind(
            env.cmd()
                .args(["dialogue", "wait", "--as", "AGENT-2", "--timeout", "100ms"])
        ),
        "turn_wait_timed_out"
    );
    command(&env, "AGENT-2-ONLY");
    assert_eq!(kind(say(&env, "AGENT-1", "mine?")), "reserved_for_other");
    command(&env, "PAUSE");
    assert_eq!(kind(say(&env, "AGENT-2", "now?")), "dialogue_paused");
    command(&env, "END-SESSION");
    assert_eq!(kind(say(&env, "AGENT-2", "still?")), "dialogue_ended");
    assert_eq!(
        env.read("agent-dialogue/conversation.md"),
        conversation,
        "refusals write nothing"
    );
}

#[test]
fn an_unreadable_turn_file_is_turn_unknown() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    std::fs::remove_file(env.path("agent-dialogue/current-turn.txt")).unwrap();
    let err = refusal(say(&env, "AGENT-1", "x"), 3);
    assert_eq!(err["kind"], "turn_unknown");
    assert!(err["hint"].is_string(), "{err}");
}

#[test]
fn each_lock_and_message_refusal_has_its_own_kind() {
    let env = Env::new();
    env.write("f.txt", "original\n");
    let write = |agent: &str| env.agent(agent).args(["write", "f.txt"]).stdin("mine\n");
    assert_eq!(kind(write("claude")), "not_locked");
    env.agent("gemini").args(["lock", "f.txt"]).ok();
    assert_eq!(
        kind(env.agent("claude").args(["lock", "f.txt", "--no-wait"])),
        "lock_held"
    );
    assert_eq!(env.read("f.txt"), "original\n");
    assert_eq!(
        kind(
            env.agent("claude")
                .args(["msg", "wait", "--timeout", "100ms"])
        ),
        "no_message"
    );
}

#[test]
fn each_review_refusal_has_its_own_kind() {
    let env = Env::new();
    env.write("docs/api.md", "# API\n");
    let api = Review::new(&env, "api");
    api.start("docs/api.md", "Claude", "Codex").ok();
    assert_eq!(
        kind(api.start("docs/api.md", "Claude", "Codex")),
        "review_exists"
    );
    env.write(
        "out.md",
        "# Review\n\nFindings.\n\n## Handoff Prompt for Next Actor\n\nCodex: go on.\n",
    );
    let tracker = env.snapshot();
    assert_eq!(
        kind(api.step("codex", "review", "out.md", "x", "codex")),
        "not_step_actor"
    );
    assert_eq!(env.snapshot(), tracker, "refusals write nothing");
}

#[test]
fn a_corrupted_conversation_is_its_own_failure_and_then_the_dialogue_is_stopped() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    say(&env, "AGENT-1", "one").ok();
    let path = "agent-dialogue/conversation.md";
    env.write(path, env.read(path).replace("Message #1 ", "Message #7 "));
    let err = refusal(say(&env, "AGENT-2", "two"), 1);
    assert_eq!(err["kind"], "dialogue_corrupted");
    assert!(
        err["hint"]
            .as_str()
            .unwrap_or_default()
            .starts_with("fix conversation.md"),
        "{err}"
    );
    assert_eq!(kind(say(&env, "AGENT-2", "two")), "dialogue_stopped");
}
