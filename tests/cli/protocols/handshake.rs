//! `coord handshake`: the seed's files, several peers, waiting, and the status view.

use serde::Deserialize;

use crate::planted::{Bed, Case, Kind, read, small_ok, sweep, three, write, zero};
use crate::support::Env;

const T: &str = "2026-01-28T01:00:00+01:00";

#[derive(Debug, Deserialize)]
struct Status {
    handshakes: Vec<Handshake>,
    protocol_v3_active: bool,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Handshake {
    from: String,
    to: String,
    status: String,
    time: Option<String>,
}

/// Everyone acts at the fixed time `T`, so files are byte-for-byte predictable.
fn at(env: &Env, agent: &str) -> crate::support::Cmd {
    env.agent(agent).env("COORD_NOW", T)
}

fn status(env: &Env) -> Status {
    env.cmd()
        .env("COORD_NOW", T)
        .args(["status", "--json"])
        .ok()
        .json()
}

fn block(from: &str, to: &str, status: &str) -> String {
    format!("from: {from}\nto: {to}\ntime: {T}\nstatus: {status}\nprotocol: V3\n")
}

#[test]
fn two_agents_write_exactly_the_seed_files() {
    let env = Env::new();
    at(&env, "claude").args(["presence", ".", "Task_123"]).ok();
    at(&env, "gemini").args(["presence", ".", "Task_456"]).ok();

    at(&env, "claude")
        .args(["handshake"])
        .ok()
        .stdout_has("gemini")
        .stdout_has("REQUESTED");
    assert_eq!(
        env.read(".handshake_claude"),
        block("claude", "gemini", "REQUESTED")
    );
    let st = status(&env);
    assert!(!st.protocol_v3_active, "one direction only");
    assert_eq!(
        st.handshakes,
        [Handshake {
            from: "claude".into(),
            to: "gemini".into(),
            status: "REQUESTED".into(),
            time: Some(T.into())
        }]
    );

    at(&env, "gemini")
        .args(["handshake"])
        .ok()
        .stdout_has("ESTABLISHED");
    assert_eq!(
        env.read(".handshake_gemini"),
        block("gemini", "claude", "ACCEPTED")
    );
    let st = status(&env);
    assert!(st.protocol_v3_active);
    assert_eq!(st.handshakes.len(), 2);
    assert_eq!(st.handshakes[1].from, "gemini");
    assert_eq!(st.handshakes[1].status, "ACCEPTED");
    env.cmd()
        .env("COORD_NOW", T)
        .args(["status"])
        .ok()
        .stdout_has("Protocol V3 active");

    // A second round changes nothing it need not change.
    at(&env, "gemini").args(["handshake"]).ok();
    assert_eq!(
        env.read(".handshake_gemini"),
        block("gemini", "claude", "ACCEPTED")
    );
}

#[test]
fn three_agents_one_block_per_peer_all_accepted_after_a_second_round() {
    let env = Env::new();
    for a in ["claude", "gemini", "copilot"] {
        at(&env, a).args(["presence", ".", "work"]).ok();
    }
    for a in ["claude", "gemini", "copilot"] {
        at(&env, a).args(["handshake"]).ok();
    }
    assert_eq!(
        env.read(".handshake_claude"),
        format!(
            "{}\n{}",
            block("claude", "copilot", "REQUESTED"),
            block("claude", "gemini", "REQUESTED")
        )
    );
    assert_eq!(
        env.read(".handshake_gemini"),
        format!(
            "{}\n{}",
            block("gemini", "claude", "ACCEPTED"),
            block("gemini", "copilot", "REQUESTED")
        )
    );
    assert_eq!(
        env.read(".handshake_copilot"),
        format!(
            "{}\n{}",
            block("copilot", "claude", "ACCEPTED"),
            block("copilot", "gemini", "ACCEPTED")
        )
    );
    for a in ["claude", "gemini", "copilot"] {
        at(&env, a).args(["handshake"]).ok();
    }
    let st = status(&env);
    assert_eq!(st.handshakes.len(), 6, "{st:?}");
    assert!(
        st.handshakes.iter().all(|h| h.status == "ACCEPTED"),
        "{st:?}"
    );
    assert!(st.protocol_v3_active);
}

#[test]
fn three_agents_waiting_at_once_all_get_accepted() {
    let env = Env::new();
    let agents = ["claude", "gemini", "copilot"];
    for a in agents {
        env.agent(a).args(["presence", ".", "work"]).ok();
    }
    let children: Vec<_> = agents
        .iter()
        .map(|a| env.agent(a).args(["handshake", "--wait", "30s"]).spawn())
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Protocol V3 active with every peer")
        );
    }
    let st: Status = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st.handshakes.len(), 6, "{st:?}");
    for a in agents {
        let text = env.read(&format!(".handshake_{a}"));
        assert_eq!(text.matches("from: ").count(), 2, "{text}");
        assert_eq!(text.matches("status: ACCEPTED").count(), 2, "{text}");
    }
}

#[test]
fn a_hand_written_seed_request_is_accepted() {
    let env = Env::new();
    // gemini follows the seed text by hand: offset-less times, its own spelling.
    env.write(
        ".gemini_presence",
        "Agent: Gemini\nstatus: ACTIVE\nstarted: 2026-01-28T00:59:00\nheartbeat: 2026-01-28T01:00:00\nworking_on: Task_456\n",
    );
    env.write(
        ".handshake_gemini",
        "from: gemini\nto: claude\ntime: 2026-01-28T01:00:00\nstatus: REQUESTED\nprotocol: V3\n",
    );
    at(&env, "claude")
        .args(["handshake", "--wait", "5s"])
        .ok()
        .stdout_has("ESTABLISHED");
    assert_eq!(
        env.read(".handshake_claude"),
        block("claude", "gemini", "ACCEPTED")
    );
    let st = status(&env);
    assert!(st.protocol_v3_active);
    let theirs = &st.handshakes[1];
    assert_eq!(
        (theirs.from.as_str(), theirs.time.as_deref()),
        ("gemini", Some("2026-01-28T01:00:00"))
    );
}

#[test]
fn a_wait_nobody_answers_ends_with_exit_3() {
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "x"]).ok();
    env.agent("gemini").args(["presence", ".", "y"]).ok();
    env.agent("claude")
        .args(["handshake", "--wait", "300ms"])
        .code(3)
        .stderr_has("not answered by gemini")
        .stderr_has("hint:");
    assert!(env.read(".handshake_claude").contains("status: REQUESTED"));
}

#[test]
fn alone_there_is_nobody_to_greet() {
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "x"]).ok();
    env.agent("claude")
        .args(["handshake", "--wait", "1s"])
        .ok()
        .stdout_has("No other active agents");
    assert!(!env.exists(".handshake_claude"));
    env.cmd().args(["handshake"]).code(2);
    env.agent("claude")
        .args(["handshake", "--wait", "soon"])
        .code(2);
}

#[test]
fn an_unreadable_handshake_file_is_reported_by_status() {
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "x"]).ok();
    std::fs::create_dir(env.path(".handshake_gemini")).unwrap();
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st["unreadable"][0]["path"], ".handshake_gemini");
    env.agent("claude").args(["handshake"]).ok();
}

fn unless_small(k: Kind) -> bool {
    !k.readable()
}

// --- handshakes ---

fn two_agents_one_request(bed: &Bed) {
    bed.run(Some("claude"), &["presence", ".", "x"]);
    bed.run(Some("gemini"), &["presence", ".", "y"]);
    bed.run(Some("gemini"), &["handshake"]);
}

#[test]
fn hostile_handshake_files() {
    sweep(&Case {
        target: ".handshake_gemini",
        setup: two_agents_one_request,
        age: 0,
        listed: unless_small,
        steps: &[
            read(None, &["status"], zero),
            write(Some("claude"), &["handshake"], zero),
            write(Some("claude"), &["handshake", "--wait", "300ms"], three),
            // Its own file: replaced when a small file, refused otherwise.
            write(Some("gemini"), &["handshake"], small_ok),
        ],
    });
    sweep(&Case {
        target: ".handshake_claude",
        setup: two_agents_one_request,
        age: 0,
        listed: unless_small,
        steps: &[
            read(None, &["status"], zero),
            write(Some("claude"), &["handshake"], small_ok),
            write(Some("claude"), &["handshake", "--wait", "300ms"], small_ok),
            write(Some("gemini"), &["handshake"], zero),
        ],
    });
}
