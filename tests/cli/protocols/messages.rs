//! `coord msg` and `coord note`: delivery under many concurrent senders, per-reader read state,
//! waiting, hostile files, and notes under the file's lock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::planted::{
    Case, Kind, always, dir_ok, never, one, read, sweep, two_messages, write, zero,
};
use crate::support::Env;

#[derive(Debug, Deserialize)]
struct List {
    messages: Vec<Msg>,
}

#[derive(Debug, Deserialize)]
struct Msg {
    id: String,
    from: String,
    to: String,
    time: String,
    body: String,
    unread: bool,
}

fn inbox(env: &Env, agent: &str) -> Vec<Msg> {
    env.agent(agent)
        .args(["msg", "list", "--json"])
        .ok()
        .json::<List>()
        .messages
}

#[test]
fn concurrent_senders_deliver_every_message_exactly_once() {
    let env = Env::new();
    let senders: Vec<_> = (0..8)
        .map(|s| {
            let cmds: Vec<_> = (0..100)
                .map(|i| {
                    env.agent(&format!("sender-{s}")).args([
                        "msg",
                        "send",
                        "Reader",
                        &format!("sender {s} message {i}\nsecond line of {s}/{i}"),
                    ])
                })
                .collect();
            std::thread::spawn(move || {
                cmds.into_iter()
                    .map(|c| c.ok().stdout.trim().to_string())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let ids: Vec<String> = senders
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(ids.len(), 800);
    let got = inbox(&env, "reader");
    assert_eq!(got.len(), 800, "every message is in the inbox once");
    let mut bodies: BTreeMap<String, usize> = BTreeMap::new();
    for m in &got {
        assert_eq!(m.to, "reader");
        assert!(m.unread);
        assert!(!m.time.is_empty());
        *bodies.entry(m.body.clone()).or_default() += 1;
        let (s, i) = m
            .from
            .strip_prefix("sender-")
            .map(|s| (s, m.body.split_whitespace().nth(3).unwrap_or("?")))
            .unwrap();
        assert_eq!(
            m.body,
            format!("sender {s} message {i}\nsecond line of {s}/{i}"),
            "body intact"
        );
    }
    assert_eq!(bodies.len(), 800, "no body twice, none missing");
    let mut listed: Vec<&str> = got.iter().map(|m| m.id.as_str()).collect();
    let mut printed: Vec<&str> = ids.iter().map(String::as_str).collect();
    listed.sort_unstable();
    printed.sort_unstable();
    assert_eq!(
        listed, printed,
        "the ids printed by send are the ids listed"
    );
}

#[test]
fn a_broadcast_read_by_one_agent_stays_unread_for_another() {
    let env = Env::new();
    let id = env
        .agent("Claude")
        .args(["msg", "send", "all", "standup in 5"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let direct = env
        .agent("claude")
        .args(["msg", "send", "gemini", "just for you"])
        .ok()
        .stdout
        .trim()
        .to_string();
    assert_ne!(id, direct);

    let g = inbox(&env, "gemini");
    assert_eq!(g.len(), 2);
    assert!(g.iter().all(|m| m.unread && m.from == "claude"));
    assert_eq!(
        inbox(&env, "copilot").len(),
        1,
        "copilot sees only the broadcast"
    );
    let own = inbox(&env, "claude");
    assert_eq!(own.len(), 1);
    assert!(!own[0].unread, "a broadcast is not news to its sender");

    env.agent("gemini")
        .args(["msg", "read", &id])
        .ok()
        .stdout_has("from: Claude")
        .stdout_has("standup in 5");
    let g = inbox(&env, "gemini");
    assert!(!g.iter().find(|m| m.id == id).unwrap().unread);
    assert!(g.iter().find(|m| m.id == direct).unwrap().unread);
    assert!(inbox(&env, "copilot")[0].unread, "still unread for copilot");
    env.agent("copilot")
        .args(["msg", "list", "--unread"])
        .ok()
        .stdout_has(&id)
        .stdout_has("standup in 5");
    env.agent("gemini")
        .args(["msg", "list", "--unread"])
        .ok()
        .stdout_lacks(&id)
        .stdout_has(&direct);
}

#[test]
fn status_counts_unread_messages_per_agent() {
    let env = Env::new();
    for a in ["claude", "gemini"] {
        env.agent(a).args(["presence", "Task"]).ok();
    }
    env.agent("claude")
        .args(["msg", "send", "gemini", "a"])
        .ok();
    env.agent("claude").args(["msg", "send", "all", "b"]).ok();
    #[derive(Deserialize)]
    struct St {
        unread: BTreeMap<String, usize>,
    }
    let st: St = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st.unread.get("gemini"), Some(&2));
    assert_eq!(st.unread.get("claude"), Some(&0));
    env.cmd()
        .arg("status")
        .ok()
        .stdout_has("Unread messages")
        .stdout_has("gemini  2");
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let env = Env::new();
    let before = env.snapshot();
    for bad in ["../x", "a/b", "", "Ünï"] {
        env.agent("claude")
            .args(["msg", "send", bad, "hi"])
            .code(2)
            .stderr_has("error: invalid agent name");
    }
    env.agent("claude")
        .args(["msg", "send", "gemini", "  "])
        .code(2)
        .stderr_has("empty");
    env.cmd()
        .args(["msg", "send", "gemini", "hi"])
        .code(2)
        .stderr_has("COORD_AGENT");
    assert_eq!(env.snapshot(), before);

    env.agent("gemini")
        .args(["msg", "read", "0000000000000"])
        .code(2)
        .stderr_has("error: there is no message `0000000000000`")
        .stderr_has("coord msg list");
    env.agent("gemini")
        .args(["msg", "read", "../../etc/passwd"])
        .code(2)
        .stderr_has("no message");
}

#[test]
fn messages_to_oneself_and_from_stdin() {
    let env = Env::new();
    let id = env
        .agent("claude")
        .args(["msg", "send", "claude", "-"])
        .stdin("remember:\n  run the tests\n")
        .ok()
        .stdout
        .trim()
        .to_string();
    let got = inbox(&env, "claude");
    assert_eq!(got.len(), 1);
    assert!(got[0].unread);
    assert_eq!(got[0].body, "remember:\n  run the tests");
    env.agent("claude")
        .args(["msg", "read", &id])
        .ok()
        .stdout_has("remember:\n  run the tests");
    assert!(!inbox(&env, "claude")[0].unread);
    env.agent("claude")
        .args(["msg", "list"])
        .ok()
        .stdout_has("remember:");
}

#[test]
fn hostile_message_files_are_reported_and_skipped() {
    let env = Env::new();
    env.agent("claude")
        .args(["msg", "send", "all", "real"])
        .ok();
    env.write(".coord/messages/0zzzzzzzzzzzz.msg", "no header at all");
    env.write(
        ".coord/messages/1zzzzzzzzzzzz.msg",
        b"from: x\xff\nto: all\n\n\xfe",
    );
    env.write(
        ".coord/messages/NotAnId.msg",
        "from: claude\nto: all\n\nsneaky",
    );
    env.write(
        ".coord/messages/2zzzzzzzzzzzz.msg",
        vec![b'a'; 2 * 1024 * 1024],
    );
    std::os::unix::fs::symlink("/etc/passwd", env.path(".coord/messages/3zzzzzzzzzzzz.msg"))
        .unwrap();
    let fifo = env.path(".coord/messages/4zzzzzzzzzzzz.msg");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = env.agent("gemini").args(["msg", "list"]).ok();
    out.stdout_has("real");
    for name in [
        "0zzzzzzzzzzzz",
        "1zzzzzzzzzzzz",
        "NotAnId",
        "2zzzzzzzzzzzz",
        "3zzzzzzzzzzzz",
        "4zzzzzzzzzzzz",
    ] {
        out.stderr_has(&format!("warning: skipped `.coord/messages/{name}.msg`"));
    }
    assert_eq!(inbox(&env, "gemini").len(), 1);
    env.agent("gemini")
        .args(["msg", "read", "0zzzzzzzzzzzz"])
        .code(1)
        .stderr_has("corrupted");
    env.agent("gemini")
        .args(["msg", "read", "4zzzzzzzzzzzz"])
        .code(1)
        .stderr_has("4zzzzzzzzzzzz.msg");
    env.agent("gemini")
        .args(["msg", "wait", "--timeout", "1s"])
        .ok();
    env.cmd().args(["status"]).ok();
}

#[test]
fn wait_returns_soon_after_a_send() {
    let env = Env::new();
    let started = Instant::now();
    let waiter = env
        .agent("gemini")
        .args(["msg", "wait", "--timeout", "30s"])
        .spawn();
    std::thread::sleep(Duration::from_millis(500));
    env.agent("claude")
        .args(["msg", "send", "gemini", "wake up"])
        .ok();
    let out = waiter.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("wake up"), "{stdout}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "returned well before its 30 s timeout"
    );
}

#[test]
fn wait_times_out_with_exit_3_and_returns_at_once_with_unread_mail() {
    let env = Env::new();
    env.agent("gemini")
        .args(["msg", "wait", "--timeout", "300ms"])
        .code(3)
        .stderr_has("error: no unread message for gemini")
        .stderr_has("hint:");
    env.agent("claude")
        .args(["msg", "send", "all", "hello"])
        .ok();
    env.agent("claude")
        .args(["msg", "wait", "--timeout", "300ms"])
        .code(3);
    env.agent("gemini")
        .args(["msg", "wait", "--timeout", "0"])
        .ok()
        .stdout_has("hello");
    env.agent("gemini")
        .args(["msg", "wait", "--timeout", "soon"])
        .code(2);
}

#[test]
fn note_appends_the_seed_line_under_the_lock_and_releases_it() {
    let env = Env::new();
    env.write("SHARED.txt", "# Shared\nno trailing newline");
    env.agent("Claude")
        .env("COORD_NOW", "2026-01-28T09:05:00+01:00")
        .args(["note", "SHARED.txt", "Section 2 done"])
        .ok()
        .stdout_has("[09:05] [Claude] Section 2 done");
    assert_eq!(
        env.read("SHARED.txt"),
        "# Shared\nno trailing newline\n[09:05] [Claude] Section 2 done\n"
    );
    assert_eq!(env.read("SHARED.txt.bak"), "# Shared\nno trailing newline");
    assert!(env.files_ending(".lock.claude").is_empty(), "lock released");
    env.agent("gemini")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .ok();
}

#[test]
fn note_keeps_a_lock_already_held_and_waits_for_another_holder() {
    let env = Env::new();
    env.write("SHARED.txt", "");
    // One clock for every process: a lock dated far in another process's future expires.
    env.agent("claude")
        .env("COORD_NOW", "2026-01-28T09:59:00+01:00")
        .args(["lock", "SHARED.txt"])
        .ok();
    env.agent("claude")
        .env("COORD_NOW", "2026-01-28T10:00:00+01:00")
        .args(["note", "SHARED.txt", "mine"])
        .ok();
    assert!(
        env.exists("SHARED.txt.lock.claude"),
        "the held lock is kept"
    );

    env.agent("gemini")
        .env("COORD_NOW", "2026-01-28T10:00:30+01:00")
        .args(["note", "SHARED.txt", "--no-wait", "refused"])
        .code(3)
        .stderr_has("held by claude");
    let waiter = env
        .agent("Gemini")
        .env("COORD_NOW", "2026-01-28T10:01:00+01:00")
        .args(["note", "SHARED.txt", "--wait", "30s", "after you"])
        .spawn();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        env.read("SHARED.txt"),
        "[10:00] [claude] mine\n",
        "still waiting"
    );
    env.agent("claude")
        .env("COORD_NOW", "2026-01-28T10:01:00+01:00")
        .args(["unlock", "SHARED.txt"])
        .ok();
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("waiting for `SHARED.txt`"));
    assert_eq!(
        env.read("SHARED.txt"),
        "[10:00] [claude] mine\n[10:01] [Gemini] after you\n"
    );
    assert!(env.files_ending(".lock.gemini").is_empty());
}

#[test]
fn note_refuses_paths_outside_and_empty_text() {
    let env = Env::new();
    let before = env.snapshot();
    env.agent("claude")
        .args(["note", "../outside.txt", "x"])
        .code(2);
    env.agent("claude").args(["note", "a.txt", " \n "]).code(2);
    assert_eq!(env.snapshot(), before);
}

#[test]
fn hostile_message_files_and_read_marks() {
    sweep(&Case {
        target: ".coord/messages/aaaa.msg",
        setup: two_messages,
        age: 0,
        // Even a small one is not a message (no header): listed, and skipped.
        listed: always,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            read(Some("claude"), &["msg", "list", "--unread", "--json"], zero),
            write(Some("claude"), &["msg", "read", "aaaa"], one),
            read(Some("claude"), &["status"], zero),
            write(Some("gemini"), &["msg", "send", "claude", "again"], zero),
            // The good message is still there to be waited for.
            read(Some("claude"), &["msg", "wait", "--timeout", "300ms"], zero),
        ],
    });
    sweep(&Case {
        target: ".coord/messages/read/claude/aaaa",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            write(Some("claude"), &["msg", "read", "aaaa"], zero),
            read(Some("claude"), &["msg", "list", "--unread", "--json"], zero),
            read(Some("claude"), &["status"], zero),
        ],
    });
    sweep(&Case {
        target: ".coord/messages/read/claude/others.ids",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list", "--unread", "--json"], zero),
            read(Some("claude"), &["status"], zero),
            write(Some("gemini"), &["msg", "send", "claude", "again"], zero),
            read(Some("claude"), &["msg", "wait", "--timeout", "300ms"], zero),
        ],
    });
    sweep(&Case {
        target: ".coord/messages/read/claude",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            write(Some("claude"), &["msg", "read", "aaaa"], dir_ok),
            read(Some("claude"), &["status"], zero),
        ],
    });
}

#[test]
fn a_hostile_message_folder() {
    fn no_message(k: Kind) -> i32 {
        if k == Kind::Dir { 2 } else { 1 }
    }
    fn nothing_new(k: Kind) -> i32 {
        if k == Kind::Dir { 3 } else { 1 }
    }
    sweep(&Case {
        target: ".coord/messages",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            read(Some("claude"), &["msg", "read", "aaaa"], no_message),
            read(
                Some("claude"),
                &["msg", "wait", "--timeout", "300ms"],
                nothing_new,
            ),
            read(Some("claude"), &["status"], zero),
            write(Some("gemini"), &["msg", "send", "claude", "x"], dir_ok),
        ],
    });
}
