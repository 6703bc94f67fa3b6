//! `coord mcp`'s tools reach the same files as the CLI: locks refused and recorded, errors as
//! tool results with the CLI's error line, messages between two servers.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::clients::mcp::{Client, assert_ok};
use crate::support::{Env, coord_bin, temps_in};

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[track_caller]
fn assert_refused(result: &Value) {
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(result).starts_with("error: "), "{result}");
}

#[test]
fn a_lock_through_mcp_refuses_a_cli_agent_and_records_the_server() {
    let env = Env::new();
    env.write("a.md", "v1");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    let got = c.call("lock", json!({"files": ["a.md"], "reason": "rewriting"}));
    assert_ok(&got);
    assert_eq!(text(&got), "Lock acquired: a.md (backup a.md.bak)");
    assert_eq!(got["structuredContent"]["acquired"][0]["file"], "a.md");
    let lock = env.read("a.md.lock.claude");
    assert!(lock.contains(&format!("pid: {}\n", c.pid())), "{lock}");
    assert!(lock.contains("session: claude-"), "{lock}");
    assert_eq!(env.read("a.md.bak"), "v1");

    env.agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .code(3)
        .stderr_has("error: lock on `a.md` is held by claude since");
    assert!(!env.exists("a.md.lock.gemini"));

    // Locking again refreshes; unlock releases; the CLI agent gets it then.
    let again = c.call("lock", json!({"files": "a.md"}));
    assert_eq!(text(&again), "Lock refreshed: a.md (backup a.md.bak)");
    let released = c.call("unlock", json!({"files": ["a.md"]}));
    assert_eq!(text(&released), "Lock released: a.md");
    assert_eq!(released["structuredContent"]["results"][0]["file"], "a.md");
    env.agent("gemini").args(["lock", "a.md", "--no-wait"]).ok();
    let (code, _) = c.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_file_on_another_filesystem_inside_the_workspace_is_locked_and_backed_up() {
    // Spares live in `.coord/`; a file on another mount cannot be renamed into from there.
    let env = Env::new();
    std::fs::create_dir(env.path("mnt")).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(env.path("mnt"))
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a tmpfs needs root (and `mount`)");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(env.path("mnt"));
    env.write("mnt/a.md", "v1");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    for _ in 0..2 {
        assert_ok(&c.call("lock", json!({"files": ["mnt/a.md"]})));
        assert!(
            env.read("mnt/a.md.lock.claude")
                .contains("file: mnt/a.md\n")
        );
        assert_eq!(env.read("mnt/a.md.bak"), "v1");
        env.agent("gemini")
            .args(["lock", "mnt/a.md", "--no-wait"])
            .code(3);
        env.write("mnt/a.md", "v2");
        assert_ok(&c.call("unlock", json!({"files": ["mnt/a.md"]})));
        env.write("mnt/a.md", "v1");
    }
    assert_eq!(temps_in(&env.path("mnt")), Vec::<String>::new());
    let (code, _) = c.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_held_lock_is_an_error_result_with_the_clis_error_line() {
    let env = Env::new();
    env.write("a.md", "x");
    env.agent("gemini").args(["presence", "Task_456"]).ok();
    env.agent("gemini").args(["lock", "a.md"]).ok();
    let cli = env
        .agent("claude")
        .args(["lock", "a.md", "--no-wait"])
        .code(3);
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-11-25");
    let refused = c.call("lock", json!({"files": ["a.md"]}));
    assert_refused(&refused);
    assert_eq!(
        text(&refused),
        cli.stderr.trim_end(),
        "the text is the CLI's error: and hint: lines"
    );
    assert!(text(&refused).contains("held by gemini since"), "{refused}");
    assert!(
        text(&refused).contains("(working on Task_456)"),
        "{refused}"
    );
    let err = &refused["structuredContent"]["error"];
    assert_eq!(err["kind"], "lock_held");
    assert_eq!(err["exit_code"], 3);
    assert!(!env.exists("a.md.lock.claude"));

    // A bounded wait ends the same way, later; one that outlasts the holder gets the lock.
    let timed = c.call("lock", json!({"files": ["a.md"], "wait_s": 0.2}));
    assert_refused(&timed);
    assert!(
        text(&timed).contains("gave up waiting for `a.md`"),
        "{timed}"
    );
    let unlocker = std::thread::spawn({
        let root = env.root().to_path_buf();
        move || {
            std::thread::sleep(Duration::from_millis(300));
            Command::new(coord_bin())
                .current_dir(&root)
                .env("COORD_DIR", &root)
                .env("COORD_AGENT", "gemini")
                .args(["unlock", "a.md"])
                .stdout(Stdio::null())
                .status()
                .unwrap()
        }
    });
    let got = c.call("lock", json!({"files": ["a.md"], "wait_s": "30s"}));
    assert!(unlocker.join().unwrap().success());
    assert_ok(&got);
    assert!(env.exists("a.md.lock.claude"));
}

#[test]
fn bad_arguments_and_paths_are_error_results_and_change_nothing() {
    let env = Env::new();
    env.write("a.md", "x");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    let before = env.snapshot();
    for (tool, args, needle) in [
        ("lock", json!({}), "needs the argument `files`"),
        ("lock", json!({"files": []}), "empty list"),
        ("lock", json!({"files": [1]}), "must be an array of strings"),
        (
            "lock",
            json!({"files": ["a.md"], "wait_s": -1}),
            "from 0 up",
        ),
        (
            "lock",
            json!({"files": ["a.md"], "wait_s": "soon"}),
            "invalid duration `soon`",
        ),
        (
            "lock",
            json!({"files": ["a.md"], "ttl_s": 0}),
            "TTL above zero",
        ),
        (
            "lock",
            json!({"files": ["../outside.md"]}),
            "is outside the workspace",
        ),
        (
            "write",
            json!({"file": "a.md"}),
            "needs the argument `content`",
        ),
        (
            "msg_send",
            json!({"to": "../x", "text": "hi"}),
            "invalid agent name",
        ),
        ("msg_read", json!({"id": "nope"}), "nope"),
        (
            "msg_list",
            json!({"unread_only": "yes"}),
            "must be true or false",
        ),
        (
            "status",
            json!({"verbose": true}),
            "has no argument `verbose`",
        ),
        (
            "dialogue_say",
            json!({"as": "AGENT-1", "text": "hi", "markers": ["LOUD"]}),
            "LOUD",
        ),
        ("review_next", json!({"topic": "missing"}), "missing"),
    ] {
        let r = c.call(tool, args.clone());
        assert_refused(&r);
        assert!(text(&r).contains(needle), "{tool} {args}: {}", text(&r));
    }
    let path_err = env
        .agent("claude")
        .args(["lock", "../outside.md", "--no-wait"])
        .code(2);
    let r = c.call("lock", json!({"files": ["../outside.md"]}));
    assert_eq!(text(&r), path_err.stderr.trim_end());
    assert_eq!(r["structuredContent"]["error"]["exit_code"], 2);
    let after = env.snapshot();
    let changed: Vec<_> = after
        .keys()
        .filter(|k| !k.starts_with(".coord") && !k.ends_with("_presence"))
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
}

#[test]
fn messages_go_between_two_servers() {
    let env = Env::new();
    let mut alice = Client::start(&env, Some("alice"));
    let mut bob = Client::start(&env, Some("bob"));
    alice.initialize("2025-06-18");
    bob.initialize("2024-11-05");
    let sent = alice.call(
        "msg_send",
        json!({"to": "bob", "text": "a.md is free\nsecond line"}),
    );
    assert_ok(&sent);
    let id = sent["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text(&sent).contains(&id));

    let listed = bob.call("msg_list", json!({"unread_only": true}));
    assert_ok(&listed);
    let msgs = listed["structuredContent"]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["id"], id.as_str());
    assert_eq!(msgs[0]["from"], "alice");
    assert_eq!(msgs[0]["unread"], true);
    assert!(text(&listed).contains("a.md is free"), "{listed}");
    // The same object the CLI prints with --json.
    let cli: Value = env
        .agent("bob")
        .args(["msg", "list", "--unread", "--json"])
        .ok()
        .json();
    assert_eq!(listed["structuredContent"], cli);

    let read = bob.call("msg_read", json!({"id": id}));
    assert_ok(&read);
    assert!(text(&read).contains("from: alice"), "{read}");
    assert!(text(&read).ends_with("a.md is free\nsecond line"), "{read}");
    // As `msg read --json` says it: read now, and marked read by this call.
    assert_eq!(read["structuredContent"]["unread"], false, "{read}");
    assert_eq!(read["structuredContent"]["marked_read"], true, "{read}");
    let none = bob.call("msg_list", json!({"unread_only": true}));
    assert_eq!(text(&none), "No unread messages");
    let all = bob.call("msg_list", json!({}));
    assert_eq!(all["structuredContent"]["messages"][0]["unread"], false);

    // A CLI agent and the MCP agent see each other's messages too.
    env.agent("carol")
        .args(["msg", "send", "alice", "hello from the CLI"])
        .ok();
    let inbox = alice.call("msg_list", json!({}));
    assert!(text(&inbox).contains("hello from the CLI"), "{inbox}");
    env.agent("carol")
        .args(["msg", "send", "bob", "-"])
        .stdin("ping")
        .ok();
    let status = alice.call("status", json!({}));
    assert_eq!(status["structuredContent"]["unread"]["bob"], 1);
}

#[test]
fn the_other_tools_reach_the_same_files_as_the_cli() {
    let env = Env::new();
    env.write("notes.md", "");
    env.write("doc.md", "old\n");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");

    let p = c.call("presence", json!({"task": "Task_9", "file": "doc.md"}));
    assert_ok(&p);
    assert_eq!(p["structuredContent"]["working_on"], "Task_9");
    let presence = env.read(".claude_presence");
    assert!(presence.contains("working_on: Task_9\n"), "{presence}");
    assert!(presence.contains("current_file: doc.md\n"), "{presence}");

    // write: refused without the lock (content kept aside), done with it.
    let w = c.call("write", json!({"file": "doc.md", "content": "new\n"}));
    assert_refused(&w);
    assert_eq!(env.read("doc.md"), "old\n");
    assert_eq!(env.read("doc.md.rejected.claude"), "new\n");
    assert_ok(&c.call("lock", json!({"files": ["doc.md"]})));
    let w = c.call("write", json!({"file": "doc.md", "content": "new\n"}));
    assert_ok(&w);
    assert_eq!(env.read("doc.md"), "new\n");
    assert_eq!(w["structuredContent"]["bytes"], 4);

    let n = c.call(
        "note",
        json!({"file": "notes.md", "text": "section 2 done"}),
    );
    assert_ok(&n);
    assert!(
        env.read("notes.md").contains("[claude] section 2 done"),
        "{}",
        env.read("notes.md")
    );

    env.agent("gemini").args(["presence", "Task_1"]).ok();
    let chk = c.call("check", json!({}));
    assert_ok(&chk);
    assert!(
        text(&chk).starts_with("gemini: ACTIVE (working on Task_1"),
        "{chk}"
    );
    assert_eq!(chk["structuredContent"]["ok"], true);

    // The dialogue: turn, say, refusal out of turn.
    let t = c.call("dialogue_turn", json!({}));
    assert_refused(&t);
    assert_eq!(
        t["structuredContent"]["error"]["kind"], "no_dialogue",
        "{t}"
    );
    env.cmd()
        .args(["dialogue", "init", "--topic", "Caching"])
        .ok();
    let t = c.call("dialogue_turn", json!({}));
    assert_ok(&t);
    assert_eq!(t["structuredContent"]["next"], "AGENT-1");
    let s = c.call(
        "dialogue_say",
        json!({"as": "AGENT-1", "text": "I propose an LRU cache", "markers": ["QUESTION-CRITICAL"]}),
    );
    assert_ok(&s);
    assert_eq!(
        text(&s),
        "Message #1 written by AGENT-1. The turn is now with AGENT-2."
    );
    let again = c.call("dialogue_say", json!({"as": "AGENT-1", "text": "more"}));
    assert_refused(&again);
    assert_eq!(again["structuredContent"]["error"]["kind"], "not_your_turn");
    assert_eq!(again["structuredContent"]["error"]["exit_code"], 3);
    let conv = env.read("agent-dialogue/conversation.md");
    assert!(conv.contains("I propose an LRU cache"), "{conv}");
    assert!(!conv.contains("more"), "{conv}");

    // The review tracker.
    env.write("src.rs", "fn main() {}\n");
    env.cmd()
        .args([
            "review",
            "new",
            "cache",
            "--target",
            "src.rs",
            "--reviewer",
            "claude",
            "--implementer",
            "gemini",
        ])
        .ok();
    let r = c.call("review_next", json!({"topic": "cache"}));
    assert_ok(&r);
    assert!(text(&r).starts_with("Next actor:  claude"), "{r}");
    assert_eq!(r["structuredContent"]["next_actor"], "claude");
}

#[test]
fn the_lock_tool_takes_patterns_as_claims_and_a_claim_refuses_the_tool() {
    let env = Env::new();
    env.write("src/db/q.sql", "select 1;\n");
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-06-18");
    let got = c.call(
        "lock",
        json!({"files": ["src/**/*.sql"], "reason": "schema"}),
    );
    assert_ok(&got);
    assert_eq!(text(&got), "Claim acquired: src/**/*.sql");
    assert_eq!(got["structuredContent"]["acquired"][0]["claim"], true);
    env.agent("gemini")
        .args(["lock", "src/db/q.sql", "--no-wait"])
        .code(3)
        .stderr_has("claude (claim `src/**/*.sql`)");
    // Another agent's claim refuses the tool, naming the pattern.
    let released = c.call("unlock", json!({"files": ["src/**/*.sql"]}));
    assert_eq!(text(&released), "Claim released: src/**/*.sql");
    env.agent("gemini").args(["lock", "src/db/"]).ok();
    let refused = c.call("lock", json!({"files": ["src/db/q.sql"]}));
    assert_refused(&refused);
    assert!(text(&refused).contains("`src/db/**`"), "{}", text(&refused));
    let (code, _) = c.finish();
    assert_eq!(code, 0);
}
