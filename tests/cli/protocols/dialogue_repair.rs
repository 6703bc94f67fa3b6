//! The dialogue's files damaged or left behind: a corrupted conversation, an invalid
//! `status.json`, an unclear turn, a `lock.txt` of a dead process, hostile files, and a say
//! interrupted by a crash that the next one completes.

use std::process::Command;
use std::time::Duration;

use crate::fixture::dialogue_seed;
use crate::fixture::dialogue_seed::p;
use crate::planted::{
    ARCHIVE, Case, Kind, Step, TURN, dir_fails, dir_ok, never, one, one_said, read, small_ok,
    sweep, three, write, zero,
};
use crate::protocols::dialogue::{files, headers, init, say, status, turn};
use crate::support::Env;

// ---------------------------------------------------------------------------------------------
// Liveness and state

/// `dialogue turn` says `status.json needs repair` (the seed's phrase, which scripts grep for),
/// then the detail.
#[test]
fn dialogue_turn_says_status_json_needs_repair() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "t"]).ok();
    env.write("agent-dialogue/status.json", "{ not json");
    env.cmd()
        .args(["dialogue", "turn"])
        .ok()
        .stdout_has("status.json needs repair: ");
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

/// The user's own say interrupted: the turn goes on as that say would have passed it, to the
/// agent after the last agent who spoke, not to the first participant.
#[test]
fn an_interrupted_say_of_the_user_passes_the_turn_after_the_last_agent() {
    let env = Env::new();
    dialogue_seed::initial_state(&env);
    let mut conv = dialogue_seed::conversation(5);
    conv.push_str("## Message #6 [USER] - 2025-10-16 14:20:00\n\nOver to you.\n\n---\n\n");
    env.write(&p("conversation.md"), &conv);
    env.write(&p("current-turn.txt"), "USER\n");
    env.write(&p("lock.txt"), "USER\n");
    env.age(&p("lock.txt"), 90);
    // Message #5 is AGENT-1's: the turn is AGENT-2's.
    say(&env, "AGENT-2", "Picking up.")
        .code(0)
        .stderr_has("completed the interrupted write of message #6 by USER");
    let hs = headers(&env.read(&p("conversation.md")));
    assert_eq!(hs.last().unwrap(), &(7, "AGENT-2".to_string()));
    assert_eq!(status(&env).message_count, 7);
    assert_eq!(env.read(&p("current-turn.txt")), "AGENT-1\n");
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

const TURN_JSON: &[&str] = &["dialogue", "turn", "--json"];

const SHOW: &[&str] = &["dialogue", "show"];

const WAIT1: &[&str] = &["dialogue", "wait", "--as", "AGENT-1", "--timeout", "300ms"];

const SAY2: &[&str] = &[
    "dialogue",
    "say",
    "--as",
    "AGENT-2",
    "hello",
    "--lock-wait",
    "1s",
];

const PAUSE: &[&str] = &["dialogue", "command", "PAUSE"];

fn dialogue_case(target: &'static str, age: u64, steps: &[Step]) {
    sweep(&Case {
        target,
        setup: one_said,
        age,
        listed: never,
        steps,
    });
}

#[test]
fn hostile_dialogue_status_and_turn_files() {
    dialogue_case(
        "agent-dialogue/status.json",
        0,
        &[
            read(None, TURN, zero),
            read(None, TURN_JSON, zero),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, three),
            // Rebuilt from the conversation; a folder is refused before anything is written.
            write(None, SAY2, dir_fails),
            write(None, PAUSE, zero),
            write(None, ARCHIVE, zero),
        ],
    );
    dialogue_case(
        "agent-dialogue/current-turn.txt",
        0,
        &[
            read(None, TURN, zero),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, three),
            // Unsure whose turn it is: never writing.
            read(None, SAY2, three),
            write(None, PAUSE, zero),
            write(None, ARCHIVE, zero),
        ],
    );
}

#[test]
fn hostile_dialogue_conversation_and_commands() {
    fn wait_code(k: Kind) -> i32 {
        if k.readable() { 3 } else { 1 }
    }
    dialogue_case(
        "agent-dialogue/conversation.md",
        0,
        &[
            read(None, TURN, small_ok),
            read(None, TURN_JSON, small_ok),
            read(None, SHOW, small_ok),
            read(None, &["status"], zero),
            read(None, WAIT1, wait_code),
            // A short conversation disagrees with status.json: corrupted, nothing appended.
            write(None, SAY2, one),
            write(None, PAUSE, small_ok),
            write(None, ARCHIVE, zero),
        ],
    );
    dialogue_case(
        "agent-dialogue/user-commands.txt",
        0,
        &[
            read(None, TURN, small_ok),
            read(None, TURN_JSON, small_ok),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, wait_code),
            write(None, SAY2, small_ok),
            write(None, PAUSE, small_ok),
            write(None, ARCHIVE, zero),
        ],
    );
}

#[test]
fn hostile_dialogue_lock_and_archive() {
    // Fresh: whatever it is, a writer holds it.
    dialogue_case(
        "agent-dialogue/lock.txt",
        0,
        &[
            read(None, TURN, zero),
            read(None, TURN_JSON, zero),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, three),
            read(None, SAY2, three),
            write(None, PAUSE, zero),
        ],
    );
    // Two minutes old: stale, taken over (removed as an entry, never followed); a folder
    // cannot be, and is reported.
    dialogue_case(
        "agent-dialogue/lock.txt",
        120,
        &[
            read(None, TURN, zero),
            write(None, SAY2, dir_fails),
            write(None, ARCHIVE, dir_fails),
        ],
    );
    dialogue_case(
        "agent-dialogue/archive",
        0,
        &[
            read(None, TURN, zero),
            write(None, SAY2, zero),
            write(None, ARCHIVE, dir_ok),
        ],
    );
}
