//! Crashes in `dialogue say`: a say killed at any point leaves a conversation the next say
//! continues.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::robustness::crashes_protocols::{Rng, fire, maybe, no_temps, report};
use crate::support::Env;

// ---------------------------------------------------------------------------------------------
// dialogue say

const SAY_KILLS: usize = 80;

/// `(number, speaker, text)` of every message of `conversation.md`; panics on a torn or
/// misnumbered block.
#[track_caller]
fn conversation(text: &str) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    let mut blocks = text.split("\n## Message #");
    blocks.next(); // the header
    for (i, block) in blocks.enumerate() {
        let (head, rest) = block
            .split_once('\n')
            .unwrap_or_else(|| panic!("torn message block: {block:?}"));
        let (n, rest_head) = head.split_once(' ').unwrap();
        let speaker = rest_head
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(s, _)| s.to_string())
            .unwrap_or_else(|| panic!("bad header: {head:?}"));
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("bad number: {head:?}"));
        assert_eq!(n, i as u64 + 1, "messages not numbered 1..N:\n{text}");
        assert!(
            rest.ends_with("\n---\n\n") || rest.ends_with("\n---\n"),
            "message #{n} is torn: {rest:?}"
        );
        let body = rest.trim().trim_end_matches("---").trim().to_string();
        out.push((n, speaker, body));
    }
    out
}

/// The dialogue's state, checked between writes (no `say` runs meanwhile): numbering 1..N,
/// no text twice, `status.json` counting N (or N-1 while a killed writer's `lock.txt` stands,
/// which the next `say` repairs), a valid turn file, `lock.txt` of a dead process only.
#[track_caller]
fn check_dialogue(env: &Env) -> (usize, bool) {
    let conv = conversation(&env.read("agent-dialogue/conversation.md"));
    let mut texts = BTreeSet::new();
    for (n, _, body) in &conv {
        assert!(
            texts.insert(body.clone()),
            "message #{n} is there twice: {body:?}"
        );
    }
    let status: Value = serde_json::from_str(&env.read("agent-dialogue/status.json"))
        .unwrap_or_else(|e| panic!("status.json does not parse: {e}"));
    let count = status["message_count"].as_u64().unwrap() as usize;
    let turn = env.read("agent-dialogue/current-turn.txt");
    assert!(
        ["AGENT-1\n", "AGENT-2\n"].contains(&turn.as_str()),
        "turn file: {turn:?}"
    );
    let lock = env.exists("agent-dialogue/lock.txt");
    if lock {
        let text = env.read("agent-dialogue/lock.txt");
        let turn: Value = env.cmd().args(["dialogue", "turn", "--json"]).ok().json();
        assert!(
            turn.to_string().contains("stale") || text.contains("pid"),
            "lock.txt is neither stale nor a process's: {text:?}"
        );
    }
    let pending = count + 1 == conv.len() && lock;
    assert!(
        count == conv.len() || pending,
        "status.json counts {count}, conversation.md holds {} (lock.txt: {lock})",
        conv.len()
    );
    (conv.len(), pending)
}

#[test]
fn killed_says_leave_a_conversation_the_next_say_continues() {
    let env = Env::new();
    env.cmd()
        .args(["dialogue", "init", "--topic", "crash sweep"])
        .ok();
    let started = Instant::now();
    let kills = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let repaired = Arc::new(AtomicUsize::new(0));
    // Held while a `say` runs and while the files are checked after it: the two agents
    // alternate anyway; this keeps the checks from reading a write in progress.
    let turn_gate = Arc::new(Mutex::new(()));
    let env = Arc::new(env);
    let agents: Vec<_> = ["AGENT-1", "AGENT-2"]
        .into_iter()
        .enumerate()
        .map(|(k, me)| {
            let (env, kills, runs, repaired, gate) = (
                Arc::clone(&env),
                Arc::clone(&kills),
                Arc::clone(&runs),
                Arc::clone(&repaired),
                Arc::clone(&turn_gate),
            );
            std::thread::spawn(move || {
                let mut rng = Rng::new(10 + k as u64);
                let mut attempt = 0;
                loop {
                    let waited = env
                        .cmd()
                        .args(["dialogue", "wait", "--as", me, "--timeout", "30s"])
                        .run();
                    assert_eq!(
                        waited.code,
                        Some(0),
                        "{me} waited in vain: {}{}",
                        waited.stderr,
                        env.read("agent-dialogue/current-turn.txt")
                    );
                    let _g = gate.lock().unwrap();
                    let done = kills.load(Ordering::SeqCst) >= SAY_KILLS;
                    attempt += 1;
                    let text = format!("{me} says #{attempt}, attempt {attempt}");
                    let cmd = env
                        .cmd()
                        .args(["dialogue", "say", "--as", me, "--json", &text])
                        .command();
                    // The last say of each agent is let through, so the other's wait ends.
                    let delay = if done {
                        None
                    } else {
                        maybe(&mut rng, 80, 10_000)
                    };
                    let shot = fire(vec![(cmd, delay)]).pop().unwrap();
                    runs.fetch_add(1, Ordering::SeqCst);
                    if shot.killed {
                        kills.fetch_add(1, Ordering::SeqCst);
                    } else {
                        // Refused (3) only when an interrupted write was completed and the
                        // turn passed: the message is in already.
                        assert!(
                            shot.code == Some(0) || shot.code == Some(3),
                            "say failed: {}",
                            shot.stderr
                        );
                        if shot.code == Some(3) || shot.stderr.contains("completed the interrupted")
                        {
                            repaired.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    check_dialogue(&env);
                    if done && !shot.killed {
                        return;
                    }
                }
            })
        })
        .collect();
    for a in agents {
        a.join().unwrap();
    }
    let (n, pending) = check_dialogue(&env);
    assert!(!pending, "the last says left an interrupted write");
    assert!(!env.exists("agent-dialogue/lock.txt"), "lock.txt left");
    no_temps(&env.path("agent-dialogue"), "the last say");
    report(
        &format!(
            "dialogue say ({n} messages, {} interrupted writes completed or refused after completing)",
            repaired.load(Ordering::SeqCst)
        ),
        kills.load(Ordering::SeqCst),
        runs.load(Ordering::SeqCst),
        started,
    );
}
