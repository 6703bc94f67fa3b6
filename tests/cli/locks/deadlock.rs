//! Deadlock refusal and the wait-for graph: cycles refused at once with the whole cycle named,
//! chains that still wait, and only real waiters counted.

use crate::support::{Env, eventually, finish};
use crate::views::status::now;

/// `--no-wait` never waits, so it can close no cycle: a held file is reported as held, even
/// when its holder waits for a file the asker holds.
#[test]
fn a_no_wait_lock_reports_the_holder_not_a_deadlock() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write("g.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("gemini").args(["lock", "g.txt"]).ok();
    let waiter = env
        .agent("claude")
        .args(["lock", "g.txt", "--wait", "30s"])
        .spawn();
    crate::support::eventually("claude waits", || {
        env.read(".claude_presence").contains("WAITING")
    });
    let out = env
        .agent("gemini")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3);
    out.stderr_has("is held by claude");
    assert!(
        !out.stderr.to_lowercase().contains("deadlock"),
        "{}",
        out.stderr
    );
    env.agent("gemini").args(["unlock", "g.txt"]).ok();
    let got = crate::support::finish(waiter);
    assert_eq!(got.code, Some(0), "{}", got.stderr);
}

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
    let mut a = env.agent("a1").args(["lock", "y", "--wait", "60s"]).spawn();
    eventually("a1 waits", || waiting(&env, "a1"));
    let mut b = env.agent("b2").args(["lock", "x", "--wait", "60s"]).spawn();
    eventually("b2 waits", || waiting(&env, "b2"));
    // No cycle yet: a1 waits for c3, b2 for a1. Now b2 takes y by hand, c3 lets go of it.
    env.write(
        "y.lock.b2",
        format!("Agent: b2\nlocked_at: {}\nfile: y\n", now()),
    );
    std::fs::remove_file(env.path("y.lock.c3")).unwrap();
    // Both wake up on the change; the first to look again sees the cycle and gives up at
    // once (leaving the queue, so the other one no longer sees a cycle and keeps waiting).
    let mut first = None;
    eventually("one of the cycle gives up", || {
        if a.try_wait().unwrap().is_some() {
            first = Some("a1");
        } else if b.try_wait().unwrap().is_some() {
            first = Some("b2");
        }
        first.is_some()
    });
    let (quitter, stayer, cycle) = match first {
        Some("a1") => (
            a,
            b,
            "a1 waits for `y` held by b2, b2 waits for `x` held by a1",
        ),
        _ => (
            b,
            a,
            "b2 waits for `x` held by a1, a1 waits for `y` held by b2",
        ),
    };
    let out = finish(quitter);
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.stderr.contains(cycle), "{out:?}");
    // The other one still waits, and gets its file once it is let go.
    std::thread::sleep(std::time::Duration::from_millis(700));
    if first == Some("a1") {
        assert!(waiting(&env, "b2"));
        env.agent("a1").args(["unlock", "x"]).ok();
    } else {
        assert!(waiting(&env, "a1"));
        std::fs::remove_file(env.path("y.lock.b2")).unwrap();
    }
    let out = finish(stayer);
    assert_eq!(out.code, Some(0), "{out:?}");
}

#[test]
fn forged_and_broken_queue_tickets_are_not_waiters() {
    let env = Env::new();
    setup(&env, &["alpha", "beta"], &["a.md"]);
    env.agent("alpha").args(["lock", "a.md"]).ok();
    let waiter = env
        .agent("beta")
        .args(["lock", "a.md", "--wait", "60s"])
        .spawn();
    eventually("beta waits", || waiting(&env, "beta"));
    let ticket = env
        .snapshot()
        .into_keys()
        .find(|k| k.starts_with(".coord/queue/q-") && k.ends_with(".beta"))
        .expect("beta's ticket");
    let folder = std::path::Path::new(&ticket)
        .parent()
        .unwrap()
        .to_path_buf();
    let text = env.read(&ticket);
    // A live-looking ticket whose `file:` is not the file of its folder, one without a
    // process, a symlink to a real ticket, and a FIFO.
    env.write(
        &folder
            .join("00000000000000099999.mallory")
            .to_string_lossy(),
        text.replace("file: a.md", "file: ../outside"),
    );
    env.write(
        &folder.join("00000000000000000002.eve").to_string_lossy(),
        "\x00\x01garbage",
    );
    std::os::unix::fs::symlink(
        env.path(&ticket),
        env.path(&folder.join("00000000000000000003.link").to_string_lossy()),
    )
    .unwrap();
    let fifo = env.path(&folder.join("00000000000000000004.pipe").to_string_lossy());
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let st: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    let waits = st["waits"].as_array().unwrap();
    assert_eq!(waits.len(), 1, "only beta waits: {st}");
    assert_eq!(waits[0]["agent"], "beta");
    // A forged ticket of alpha's does not make alpha's own requests deadlock.
    env.agent("alpha")
        .args(["lock", "a.md", "--wait", "1s"])
        .ok()
        .stdout_has("Lock refreshed");
    env.agent("alpha").args(["unlock", "a.md"]).ok();
    assert_eq!(finish(waiter).code, Some(0));
}
