//! Views for people and scripts: deadlock refusal and the wait-for graph in `status`.

use crate::support::{Env, eventually, finish};

fn waiting(env: &Env, agent: &str) -> bool {
    std::fs::read_to_string(env.path(&format!(".{agent}_presence")))
        .is_ok_and(|p| p.contains("lock_status: WAITING"))
}

fn setup(env: &Env, agents: &[&str], files: &[&str]) {
    for a in agents {
        env.agent(a).args(["presence", ".", "work"]).ok();
    }
    for f in files {
        env.write(f, "v1\n");
    }
}

#[test]
fn two_agents_in_a_cycle_the_second_is_refused_at_once() {
    let env = Env::new();
    setup(&env, &["alpha", "beta"], &["x.md", "y.md"]);
    env.agent("alpha").args(["lock", "x.md"]).ok();
    env.agent("beta").args(["lock", "y.md"]).ok();
    let a = env
        .agent("alpha")
        .args(["lock", "y.md", "--wait", "60s"])
        .spawn();
    eventually("alpha waits for y.md", || waiting(&env, "alpha"));

    // status shows who waits for whom.
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    let waits = st["waits"].as_array().unwrap();
    assert_eq!(waits.len(), 1, "{st}");
    assert_eq!(waits[0]["agent"], "alpha");
    assert_eq!(waits[0]["file"], "y.md");
    assert_eq!(waits[0]["waits_for"], serde_json::json!(["beta"]));
    assert_eq!(st["deadlocks"], serde_json::json!([]));
    env.cmd()
        .arg("status")
        .ok()
        .stdout_has("Waiting")
        .stdout_has("alpha  y.md  beta");

    // beta closing the cycle is refused with exit 3 instead of sitting out its 60 s.
    let out = env
        .agent("beta")
        .args(["lock", "x.md", "--wait", "60s"])
        .code(3);
    out.stderr_has("error: waiting for `x.md` would deadlock: beta waits for `x.md` held by alpha, alpha waits for `y.md` held by beta")
        .stderr_has("hint:");
    assert!(!env.exists("x.md.lock.beta"));
    assert!(!waiting(&env, "beta"), "beta left the queue");
    assert!(
        !env.read(".beta_presence").contains("WAITING"),
        "beta's presence says it no longer waits"
    );

    // The JSON error names the kind.
    let out = env
        .agent("beta")
        .args(["--json", "lock", "x.md", "--wait", "60s"])
        .code(3);
    let err: serde_json::Value = out.json();
    assert_eq!(err["error"]["kind"], "deadlock");
    assert_eq!(err["error"]["exit_code"], 3);

    // alpha still waits, and gets y.md as soon as beta lets go of it.
    assert!(waiting(&env, "alpha"));
    env.agent("beta").args(["unlock", "y.md"]).ok();
    let out = finish(a);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(env.exists("y.md.lock.alpha"));
}

#[test]
fn three_agents_in_a_cycle_the_one_closing_it_is_named_with_the_whole_cycle() {
    let env = Env::new();
    setup(&env, &["a1", "b2", "c3"], &["x", "y", "z"]);
    env.agent("a1").args(["lock", "x"]).ok();
    env.agent("b2").args(["lock", "y"]).ok();
    env.agent("c3").args(["lock", "z"]).ok();
    let a = env.agent("a1").args(["lock", "y", "--wait", "60s"]).spawn();
    eventually("a1 waits", || waiting(&env, "a1"));
    let b = env.agent("b2").args(["lock", "z", "--wait", "60s"]).spawn();
    eventually("b2 waits", || waiting(&env, "b2"));
    env.agent("c3")
        .args(["lock", "x", "--wait", "60s"])
        .code(3)
        .stderr_has(
            "c3 waits for `x` held by a1, a1 waits for `y` held by b2, b2 waits for `z` held by c3",
        );
    // Unwind: c3 lets z go, b2 gets it and lets y go, a1 gets y.
    env.agent("c3").args(["unlock", "z"]).ok();
    assert_eq!(finish(b).code, Some(0));
    env.agent("b2").args(["unlock", "y"]).ok();
    assert_eq!(finish(a).code, Some(0));
}

#[test]
fn a_chain_without_a_cycle_still_waits() {
    let env = Env::new();
    setup(&env, &["a1", "b2", "c3"], &["x", "y"]);
    env.agent("a1").args(["lock", "x"]).ok();
    env.agent("b2").args(["lock", "y"]).ok();
    // b2 waits for a1; c3 waits for b2: a chain, not a cycle.
    let b = env.agent("b2").args(["lock", "x", "--wait", "60s"]).spawn();
    eventually("b2 waits", || waiting(&env, "b2"));
    let c = env.agent("c3").args(["lock", "y", "--wait", "60s"]).spawn();
    eventually("c3 waits", || waiting(&env, "c3"));
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    assert_eq!(st["waits"].as_array().unwrap().len(), 2, "{st}");
    assert_eq!(st["deadlocks"], serde_json::json!([]));
    env.agent("a1").args(["unlock", "x"]).ok();
    assert_eq!(finish(b).code, Some(0));
    env.agent("b2").args(["unlock", "y"]).ok();
    let out = finish(c);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stderr.contains("deadlock"));
}

#[test]
fn a_hand_made_lock_counts_as_holding() {
    let env = Env::new();
    setup(&env, &["hand", "tool"], &["x", "y"]);
    // `hand` follows the seed by hand: it writes its lock file itself.
    env.write(
        "x.lock.hand",
        format!("Agent: hand\nlocked_at: {}\nfile: x\n", now()),
    );
    env.agent("tool").args(["lock", "y"]).ok();
    let h = env
        .agent("hand")
        .args(["lock", "y", "--wait", "60s"])
        .spawn();
    eventually("hand waits", || waiting(&env, "hand"));
    env.agent("tool")
        .args(["lock", "x", "--wait", "60s"])
        .code(3)
        .stderr_has("tool waits for `x` held by hand, hand waits for `y` held by tool");
    env.agent("tool").args(["unlock", "y"]).ok();
    assert_eq!(finish(h).code, Some(0));
}

#[test]
fn a_cycle_that_closes_while_both_wait_is_refused_on_the_next_look() {
    let env = Env::new();
    setup(&env, &["a1", "b2", "c3"], &["x", "y"]);
    env.agent("a1").args(["lock", "x"]).ok();
    env.write(
        "y.lock.c3",
        format!("Agent: c3\nlocked_at: {}\nfile: y\n", now()),
    );
    let a = env.agent("a1").args(["lock", "y", "--wait", "60s"]).spawn();
    eventually("a1 waits", || waiting(&env, "a1"));
    let b = env.agent("b2").args(["lock", "x", "--wait", "60s"]).spawn();
    eventually("b2 waits", || waiting(&env, "b2"));
    // No cycle yet: a1 waits for c3, b2 for a1. Now b2 takes y by hand, c3 lets go of it.
    env.write(
        "y.lock.b2",
        format!("Agent: b2\nlocked_at: {}\nfile: y\n", now()),
    );
    std::fs::remove_file(env.path("y.lock.c3")).unwrap();
    // a1 wakes up on the change, sees a1 → b2 → a1, and gives up at once.
    let out = finish(a);
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(
        out.stderr
            .contains("a1 waits for `y` held by b2, b2 waits for `x` held by a1"),
        "{out:?}"
    );
    // b2 still waits for x; a1 lets it go.
    assert!(waiting(&env, "b2"));
    env.agent("a1").args(["unlock", "x"]).ok();
    assert_eq!(finish(b).code, Some(0));
}

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}
