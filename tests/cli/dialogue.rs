//! `coord dialogue`: seed 002's turn-based dialogue, with real processes and files written by
//! hand exactly as the seed tells an agent to.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::fixture::dialogue_seed::{self, DIR, p};
use crate::support::{Env, coord_bin};

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct TurnJson {
    topic: String,
    turn: Option<String>,
    next: Option<String>,
    state: String,
    paused: bool,
    ended: bool,
    only: Option<String>,
    error: Option<String>,
    message_count: u64,
    last_speaker: Option<String>,
    end_proposed: bool,
    needs_user: bool,
    participants: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct StatusJson {
    topic: String,
    message_count: u64,
    last_update: String,
    last_speaker: Option<String>,
    participants: Vec<String>,
}

/// Every file of the dialogue folder (coord's own `.coord/` left out).
fn files(env: &Env) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut all = env.snapshot();
    all.retain(|k, _| k.starts_with(DIR));
    all
}

fn status(env: &Env) -> StatusJson {
    serde_json::from_str(&env.read(&p("status.json"))).expect("status.json is valid JSON")
}

fn turn(env: &Env) -> TurnJson {
    env.cmd().args(["dialogue", "turn", "--json"]).ok().json()
}

fn init(env: &Env) {
    env.cmd()
        .args(["dialogue", "init", "--topic", "Cache design"])
        .ok()
        .stdout_has("AGENT-1 speaks first");
}

fn say(env: &Env, id: &str, text: &str) -> crate::support::Cmd {
    env.cmd().args(["dialogue", "say", "--as", id, text])
}

/// `(number, speaker)` of every `## Message #N [ID]` header, in file order.
fn headers(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("## Message #")?;
            let (n, rest) = rest.split_once(' ')?;
            let id = rest.strip_prefix('[')?.split_once(']')?.0;
            Some((n.parse().ok()?, id.to_string()))
        })
        .collect()
}

#[test]
fn the_seeds_example_turn_cycle() {
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    let before = env.read(&p("conversation.md"));

    say(&env, "AGENT-1", "Message six.")
        .code(0)
        .stdout_has("The turn is now with AGENT-2");
    let conv = env.read(&p("conversation.md"));
    assert!(conv.starts_with(&before), "existing messages are untouched");
    let hs = headers(&conv);
    assert_eq!(hs.len(), 6);
    assert_eq!(hs[5], (6, "AGENT-1".to_string()));
    assert!(conv.ends_with("Message six.\n\n---\n\n"), "{conv}");
    let st = status(&env);
    assert_eq!(
        (st.message_count, st.last_speaker.as_deref()),
        (6, Some("AGENT-1"))
    );
    assert_eq!(st.topic, "API caching");
    assert!(!st.last_update.is_empty());
    assert_eq!(st.participants, ["AGENT-1", "AGENT-2"]);
    assert_eq!(env.read(&p("current-turn.txt")), "AGENT-2\n");
    assert!(!env.exists(&p("lock.txt")));

    say(&env, "AGENT-2", "Message seven.")
        .code(0)
        .stdout_has("The turn is now with AGENT-1");
    let conv2 = env.read(&p("conversation.md"));
    assert!(conv2.starts_with(&conv));
    assert_eq!(headers(&conv2).last().unwrap(), &(7, "AGENT-2".to_string()));
    let st = status(&env);
    assert_eq!(
        (st.message_count, st.last_speaker.as_deref()),
        (7, Some("AGENT-2"))
    );
    assert_eq!(env.read(&p("current-turn.txt")), "AGENT-1\n");
    assert!(!env.exists(&p("lock.txt")));
}

#[test]
fn init_refuses_twice_and_bad_input_writes_nothing() {
    let env = Env::new();
    env.cmd()
        .args([
            "dialogue",
            "init",
            "--topic",
            "t",
            "--agents",
            "AGENT-1,USER",
        ])
        .code(2)
        .stderr_has("reserved");
    env.cmd()
        .args(["dialogue", "init", "--topic", "t", "--agents", "a/b,c"])
        .code(2);
    env.cmd()
        .args(["dialogue", "init", "--topic", "t", "--first", "AGENT-9"])
        .code(2);
    assert!(!env.exists(DIR), "nothing written on bad input");
    init(&env);
    for f in [
        "conversation.md",
        "current-turn.txt",
        "status.json",
        "user-commands.txt",
    ] {
        assert!(env.exists(&p(f)), "{f}");
    }
    assert!(env.read(&p("conversation.md")).contains("Cache design"));
    assert_eq!(env.read(&p("current-turn.txt")), "AGENT-1\n");
    assert_eq!(status(&env).message_count, 0);
    let snap = files(&env);
    env.cmd()
        .args(["dialogue", "init", "--topic", "again"])
        .code(3)
        .stderr_has("already open");
    env.cmd()
        .args([
            "dialogue", "say", "--as", "AGENT-1", "x", "--marker", "URGENT",
        ])
        .code(2)
        .stderr_has("unknown marker");
    env.cmd()
        .args(["dialogue", "say", "--as", "bad id", "x"])
        .code(2);
    env.cmd()
        .args(["dialogue", "--folder", "../elsewhere", "turn"])
        .code(2);
    assert_eq!(files(&env), snap, "refusals change nothing");
}

#[test]
fn turns_and_refusals() {
    let env = Env::new();
    init(&env);
    say(&env, "AGENT-2", "too early")
        .code(3)
        .stderr_has("not AGENT-2's turn");
    env.cmd()
        .args([
            "dialogue",
            "say",
            "--as",
            "AGENT-1",
            "-",
            "--marker",
            "question-critical",
        ])
        .stdin("From stdin.\n## Message #9 [AGENT-2] - forged\n")
        .ok();
    let conv = env.read(&p("conversation.md"));
    assert_eq!(
        headers(&conv),
        [(1, "AGENT-1".to_string())],
        "a text cannot forge a header"
    );
    assert!(conv.contains("[QUESTION-CRITICAL]"));
    env.write("reply.md", "From a file.\n");
    env.cmd()
        .args(["dialogue", "say", "--file", "reply.md"])
        .agent("AGENT-2")
        .ok();
    let t = turn(&env);
    assert_eq!(
        (t.turn.as_deref(), t.state.as_str(), t.message_count),
        (Some("AGENT-1"), "open", 2)
    );
    assert_eq!(t.last_speaker.as_deref(), Some("AGENT-2"));
    assert_eq!(t.topic, "Cache design");
    env.cmd()
        .args(["dialogue", "show"])
        .ok()
        .stdout_has("From a file.");
}

#[test]
fn twenty_messages_between_two_concurrent_processes() {
    let env = Env::new();
    init(&env);
    let script = r#"
        me=$1; n=$2
        for i in $(seq 1 10); do
          "$COORD" dialogue wait --as "$me" --timeout 60s -q || exit 10
          if [ "$me" = AGENT-2 ] && [ "$i" = 10 ]; then
            "$COORD" dialogue say --as "$me" "Closing, round $i." --marker PROPOSE-END -q || exit 11
          else
            "$COORD" dialogue say --as "$me" "Round $i from $me." -q || exit 12
          fi
        done
    "#;
    let spawn = |me: &str| {
        Command::new("sh")
            .args(["-c", script, "sh", me])
            .env("COORD", coord_bin())
            .env("COORD_DIR", env.root())
            .env_remove("COORD_AGENT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("AGENT-1");
    let b = spawn("AGENT-2");
    for (name, child) in [("AGENT-1", a), ("AGENT-2", b)] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name}'s loop failed: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let conv = env.read(&p("conversation.md"));
    let hs = headers(&conv);
    assert_eq!(hs.len(), 20);
    for (i, (n, id)) in hs.iter().enumerate() {
        assert_eq!(*n, i as u64 + 1);
        assert_eq!(id, if i % 2 == 0 { "AGENT-1" } else { "AGENT-2" });
    }
    assert!(conv.trim_end().ends_with("[PROPOSE-END]\n\n---"), "{conv}");
    assert_eq!(status(&env).message_count, 20);
    assert_eq!(env.read(&p("current-turn.txt")), "AGENT-1\n");
    assert!(!env.exists(&p("lock.txt")));
    let t = turn(&env);
    assert!(t.end_proposed);
    assert_eq!(t.state, "open");
}

#[test]
fn pause_and_resume() {
    let env = Env::new();
    init(&env);
    env.cmd().args(["dialogue", "command", "pause"]).ok();
    assert_eq!(env.read(&p("user-commands.txt")), "PAUSE\n");
    say(&env, "AGENT-1", "x").code(3).stderr_has("paused");
    assert!(turn(&env).paused);
    env.cmd()
        .args(["dialogue", "wait", "--as", "AGENT-1", "--timeout", "200ms"])
        .code(3)
        .stderr_has("gave up");
    let waiter = env
        .cmd()
        .args(["dialogue", "wait", "--as", "AGENT-1", "--timeout", "30s"])
        .spawn();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    env.cmd().args(["dialogue", "command", "RESUME"]).ok();
    let out = waiter.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "woke well before the timeout"
    );
    say(&env, "AGENT-1", "after resume").ok();
}

#[test]
fn agent_only_applies_to_the_next_message() {
    let env = Env::new();
    init(&env);
    env.cmd()
        .args(["dialogue", "command", "AGENT-3-ONLY"])
        .code(2);
    env.cmd().args(["dialogue", "command", "agent-2-only"]).ok();
    let t = turn(&env);
    assert_eq!(
        (t.state.as_str(), t.only.as_deref(), t.next.as_deref()),
        ("only-one-agent", Some("AGENT-2"), Some("AGENT-2"))
    );
    say(&env, "AGENT-1", "mine?")
        .code(3)
        .stderr_has("only AGENT-2");
    say(&env, "AGENT-2", "as asked")
        .ok()
        .stdout_has("now with AGENT-1");
    assert_eq!(turn(&env).only, None, "answered");
    say(&env, "AGENT-1", "back to normal").ok();
}

#[test]
fn end_session_stops_say_and_wait() {
    let env = Env::new();
    init(&env);
    let waiter = env
        .cmd()
        .args(["dialogue", "wait", "--as", "AGENT-2", "--timeout", "30s"])
        .spawn();
    std::thread::sleep(Duration::from_millis(300));
    env.cmd().args(["dialogue", "command", "END-SESSION"]).ok();
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ended"));
    say(&env, "AGENT-1", "x").code(3).stderr_has("ended");
    assert!(turn(&env).ended);
    env.cmd()
        .args(["dialogue", "command", "STOP"])
        .code(2)
        .stderr_has("unknown user command");
}

#[test]
fn needs_user_passes_the_turn_to_the_user() {
    let env = Env::new();
    init(&env);
    env.cmd()
        .args([
            "dialogue",
            "say",
            "--as",
            "AGENT-1",
            "Which database?",
            "--marker",
            "NEEDS-USER",
        ])
        .ok()
        .stdout_has("now with USER");
    assert_eq!(env.read(&p("current-turn.txt")), "USER\n");
    let t = turn(&env);
    assert!(t.needs_user);
    assert_eq!(t.state, "waiting-for-user");
    say(&env, "AGENT-2", "x").code(3);
    say(&env, "AGENT-1", "x").code(3);
    // The user answers by hand, as the seed says: edits the turn file.
    env.write(&p("current-turn.txt"), "AGENT-2\n");
    say(&env, "AGENT-2", "Postgres it is.")
        .ok()
        .stdout_has("now with AGENT-1");
    // Or through coord.
    env.cmd()
        .args([
            "dialogue",
            "say",
            "--as",
            "AGENT-1",
            "Ask the user again",
            "--to",
            "USER",
        ])
        .ok();
    say(&env, "USER", "Use SQLite.")
        .ok()
        .stdout_has("now with AGENT-2");
}

#[test]
fn a_fresh_lock_txt_is_waited_for_and_a_stale_one_taken_over() {
    let env = Env::new();
    init(&env);
    env.write(&p("lock.txt"), "AGENT-2\n");
    let snap = files(&env);
    env.cmd()
        .args([
            "dialogue",
            "say",
            "--as",
            "AGENT-1",
            "x",
            "--lock-wait",
            "300ms",
        ])
        .code(3)
        .stderr_has("held by AGENT-2");
    assert_eq!(files(&env), snap, "nothing written while lock.txt is held");

    // The hand writer finishes: coord proceeds as soon as lock.txt is gone.
    let child = env
        .cmd()
        .args([
            "dialogue",
            "say",
            "--as",
            "AGENT-1",
            "after the lock",
            "--lock-wait",
            "30s",
        ])
        .spawn();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(env.path(&p("lock.txt"))).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A lock.txt older than 60 s is stale (seed: "assume stale and remove it").
    env.write(&p("lock.txt"), "AGENT-1\n");
    env.age(&p("lock.txt"), 120);
    say(&env, "AGENT-2", "taking over")
        .code(0)
        .stderr_has("took over a stale lock.txt of AGENT-1");
    assert!(!env.exists(&p("lock.txt")));
    assert_eq!(status(&env).message_count, 2);
}

#[test]
fn a_corrupted_conversation_stops_the_dialogue() {
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    let broken = dialogue_seed::conversation(5).replace("Message #4 ", "Message #7 ");
    env.write(&p("conversation.md"), &broken);
    let status_before = env.read(&p("status.json"));
    say(&env, "AGENT-1", "x")
        .code(1)
        .stderr_has("appears corrupted");
    assert_eq!(
        env.read(&p("current-turn.txt")),
        "[ERROR] conversation.md appears corrupted\n"
    );
    assert_eq!(env.read(&p("conversation.md")), broken);
    assert_eq!(env.read(&p("status.json")), status_before);
    assert!(!env.exists(&p("lock.txt")));
    let t = turn(&env);
    assert_eq!(t.state, "error");
    assert!(t.error.is_some());
    say(&env, "AGENT-1", "x").code(3).stderr_has("stopped");

    // Out of step with status.json is corruption too.
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    env.write(&p("status.json"), dialogue_seed::status(4, "AGENT-1"));
    say(&env, "AGENT-1", "x")
        .code(1)
        .stderr_has("status.json` counts 4");
    assert_eq!(
        env.read(&p("current-turn.txt")),
        "[ERROR] conversation.md appears corrupted\n"
    );
    assert_eq!(
        env.read(&p("conversation.md")),
        dialogue_seed::conversation(5)
    );
}

#[test]
fn an_invalid_status_json_is_rebuilt_from_the_conversation() {
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    env.write(&p("status.json"), "{ this is not json");
    say(&env, "AGENT-1", "still going")
        .code(0)
        .stderr_has("status.json needs repair");
    let st = status(&env);
    assert_eq!(
        (st.message_count, st.last_speaker.as_deref()),
        (6, Some("AGENT-1"))
    );
    assert_eq!(
        st.topic, "API caching",
        "topic recovered from the conversation header"
    );
}

#[test]
fn an_unclear_turn_is_never_written_over() {
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    for garbled in ["", "AGENT-1\nAGENT-2\n", "it's whoever\n"] {
        env.write(&p("current-turn.txt"), garbled);
        let snap = files(&env);
        say(&env, "AGENT-1", "x")
            .code(3)
            .stderr_has("unsure whose turn");
        assert_eq!(files(&env), snap);
    }
}

#[test]
fn a_hand_following_agent_and_coord_alternate() {
    let env = Env::new();
    init(&env);
    say(&env, "AGENT-1", "Hello from coord.").ok();
    let mut waiter = Some(
        env.cmd()
            .args(["dialogue", "wait", "--as", "AGENT-1", "--timeout", "30s"])
            .spawn(),
    );
    for round in 0..2 {
        // AGENT-2 follows the seed by hand: steps 1-7.
        assert_eq!(env.read(&p("current-turn.txt")).trim(), "AGENT-2");
        assert!(!env.exists(&p("lock.txt")));
        env.write(&p("lock.txt"), "AGENT-2");
        let conv = env.read(&p("conversation.md"));
        let n = headers(&conv).len() + 1;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(env.path(&p("conversation.md")))
            .unwrap();
        use std::io::Write;
        write!(f, "## Message #{n} [AGENT-2] - 2026-01-28 01:0{round}:00\n\nBy hand, round {round}.\n\n---\n\n").unwrap();
        let mut st: serde_json::Value = serde_json::from_str(&env.read(&p("status.json"))).unwrap();
        st["message_count"] = serde_json::json!(n);
        st["last_speaker"] = serde_json::json!("AGENT-2");
        st["last_update"] = serde_json::json!("2026-01-28T01:00:00");
        env.write(
            &p("status.json"),
            serde_json::to_string_pretty(&st).unwrap(),
        );
        env.write(&p("current-turn.txt"), "AGENT-1");
        std::fs::remove_file(env.path(&p("lock.txt"))).unwrap();
        if let Some(w) = waiter.take() {
            let out = w.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "coord's wait woke on the hand-written turn"
            );
        }
        say(&env, "AGENT-1", &format!("coord answers round {round}.")).ok();
    }
    let hs = headers(&env.read(&p("conversation.md")));
    let ids: Vec<&str> = hs.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(ids, ["AGENT-1", "AGENT-2", "AGENT-1", "AGENT-2", "AGENT-1"]);
    assert_eq!(status(&env).message_count, 5);
}

#[test]
fn a_write_interrupted_by_a_crash_is_completed_by_the_next_say() {
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    // AGENT-1 appended message #6 and died before passing the turn and updating status.json.
    let mut conv = dialogue_seed::conversation(5);
    conv.push_str("## Message #6 [AGENT-1] - 2025-10-16 14:20:00\n\nInterrupted.\n\n---\n\n");
    env.write(&p("conversation.md"), &conv);
    env.write(&p("lock.txt"), "AGENT-1\n");
    env.age(&p("lock.txt"), 90);
    say(&env, "AGENT-2", "Picking up.")
        .code(0)
        .stderr_has("completed the interrupted write of message #6 by AGENT-1");
    let hs = headers(&env.read(&p("conversation.md")));
    assert_eq!(hs.last().unwrap(), &(7, "AGENT-2".to_string()));
    assert_eq!(status(&env).message_count, 7);
    assert_eq!(env.read(&p("current-turn.txt")), "AGENT-1\n");
}

#[test]
fn three_participants_take_turns_round_robin() {
    let env = Env::new();
    env.cmd()
        .args([
            "dialogue",
            "init",
            "--topic",
            "t",
            "--agents",
            "claude,gemini,copilot",
            "--first",
            "gemini",
        ])
        .ok();
    for (who, next) in [
        ("gemini", "copilot"),
        ("copilot", "claude"),
        ("claude", "gemini"),
    ] {
        env.cmd()
            .args(["dialogue", "say", "x"])
            .agent(who)
            .ok()
            .stdout_has(&format!("now with {next}"));
    }
    assert_eq!(turn(&env).participants, ["claude", "gemini", "copilot"]);
}

#[test]
fn reset_and_archive() {
    let env = Env::new();
    init(&env);
    say(&env, "AGENT-1", "one").ok();
    env.cmd()
        .args(["dialogue", "command", "SWITCH-TOPIC:", "Eviction"])
        .ok();
    assert_eq!(status(&env).topic, "Eviction");
    env.cmd()
        .args(["dialogue", "command", "RESET"])
        .ok()
        .stdout_has("Archived");
    let olds: Vec<String> = env
        .snapshot()
        .into_keys()
        .filter(|k| k.starts_with(&format!("{DIR}/archive/session-")))
        .collect();
    assert_eq!(olds.len(), 2, "{olds:?}");
    assert!(olds.iter().any(|k| k.ends_with("/conversation.md")));
    let t = turn(&env);
    assert_eq!(
        (t.message_count, t.topic.as_str(), t.turn.as_deref()),
        (0, "Eviction", Some("AGENT-1"))
    );
    say(&env, "AGENT-1", "fresh start")
        .ok()
        .stdout_has("Message #1");

    env.cmd().args(["dialogue", "archive"]).ok();
    assert!(!env.exists(&p("conversation.md")));
    assert!(!env.exists(&p("status.json")));
    env.cmd()
        .args(["dialogue", "turn"])
        .code(3)
        .stderr_has("no dialogue");
    env.cmd().args(["dialogue", "init", "--topic", "next"]).ok();
}

#[test]
fn status_shows_the_dialogue() {
    let env = Env::new();
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert!(st["dialogue"].is_null());
    init(&env);
    say(&env, "AGENT-1", "hi").ok();
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st["dialogue"]["message_count"], 1);
    assert_eq!(st["dialogue"]["turn"], "AGENT-2");
    assert_eq!(st["dialogue"]["state"], "open");
    env.cmd().args(["status"]).ok().stdout_has("Cache design");
}

#[test]
fn show_follow_prints_new_messages() {
    let env = Env::new();
    init(&env);
    let mut child = env.cmd().args(["dialogue", "show", "--follow"]).spawn();
    std::thread::sleep(Duration::from_millis(300));
    say(&env, "AGENT-1", "followed text").ok();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("followed text") {
                return true;
            }
        }
        false
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        reader.join().unwrap(),
        "show --follow printed the new message"
    );
}

#[test]
fn a_lock_txt_left_by_a_dead_coord_process_is_taken_over_at_once() {
    let env = Env::new();
    init(&env);
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    env.write(
        &p("lock.txt"),
        format!(
            "AGENT-2\nsince: 2999-01-01T00:00:00+00:00\npid: {dead}\nhost: {}\n",
            host.trim()
        ),
    );
    say(&env, "AGENT-1", "no need to wait a minute")
        .code(0)
        .stderr_has("took over a stale lock.txt of AGENT-2");
    assert!(!env.exists(&p("lock.txt")));
}

#[test]
fn wait_shows_the_users_priority() {
    let env = Env::new();
    init(&env);
    env.cmd()
        .args(["dialogue", "command", "PRIORITY:", "tests", "first"])
        .ok();
    assert_eq!(env.read(&p("user-commands.txt")), "PRIORITY: tests first\n");
    env.cmd()
        .args(["dialogue", "wait", "--as", "AGENT-1", "--timeout", "5s"])
        .ok()
        .stdout_has("PRIORITY from the user: tests first");
    let t = turn(&env);
    assert_eq!(t.state, "open");
}

/// `current-turn.txt` naming someone who is neither a participant nor the user is said to be
/// so (issue 30: `turn: garbage` alone looked like a name to wait for).
#[test]
fn turn_says_when_the_turn_file_names_no_participant() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    env.cmd()
        .args(["dialogue", "turn"])
        .ok()
        .stdout_has("turn: AGENT-1\n")
        .stdout_lacks("not a participant");
    env.write("agent-dialogue/current-turn.txt", "garbage\n");
    env.cmd()
        .args(["dialogue", "turn"])
        .ok()
        .stdout_has("turn: garbage (not a participant)")
        .stdout_has("not among the participants (AGENT-1, AGENT-2)");
    env.write("agent-dialogue/current-turn.txt", "USER\n");
    env.cmd()
        .args(["dialogue", "turn"])
        .ok()
        .stdout_lacks("not a participant");
}
