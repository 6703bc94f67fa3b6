//! `coord watch`: the live view, as JSON lines, piped text and a full-screen redraw, and its
//! replay of the history (`--since`).

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::{Env, eventually, finish};
use crate::views::completions::have;

/// Lines of `coord watch --json`, read in the background.
struct Watch {
    child: std::process::Child,
    rx: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Watch {
    fn start(env: &Env, args: &[&str]) -> Watch {
        let mut child = env.cmd().args(["watch", "--json"]).args(args).spawn();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut w = Watch {
            child,
            rx,
            seen: Vec::new(),
        };
        w.until("started", |v| v["event"] == "started");
        w
    }

    #[track_caller]
    fn until(&mut self, what: &str, f: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what}; saw {:#?}", self.seen));
            self.seen.push(line.clone());
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if f(&v) {
                return v;
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A lock held for a millisecond (a `coord run` of `true`) is still seen by `coord watch
/// --json`, taken and released, every one of twenty.
#[test]
fn watch_json_sees_a_lock_held_for_a_millisecond() {
    let env = Env::new();
    let mut w = Watch::start(&env, &[]);
    for i in 0..20 {
        env.agent("quick")
            .args(["run", &format!("q{i}"), "--", "true"])
            .ok();
    }
    for i in 0..20 {
        let file = format!("q{i}");
        w.until(&format!("{file} taken"), |v| {
            v["event"] == "lock_taken" && v["file"] == file.as_str()
        });
        w.until(&format!("{file} released"), |v| {
            v["event"] == "lock_released" && v["file"] == file.as_str()
        });
    }
    // Said once: the look at the folder does not repeat what the history said.
    let taken = w
        .seen
        .iter()
        .filter(|l| l.contains("\"lock_taken\"") && l.contains("\"q0\""))
        .count();
    assert_eq!(taken, 1, "{:#?}", w.seen);
}

/// `coord watch --since` replays the history first.
#[test]
fn watch_since_replays() {
    let env = Env::new();
    env.agent("early").args(["lock", "old.txt"]).ok();
    env.agent("early").args(["unlock"]).ok();
    let mut w = Watch::start(&env, &["--since", "1h"]);
    w.until("the replayed lock", |v| {
        v["event"] == "lock_taken" && v["file"] == "old.txt"
    });
    w.until("the replayed release", |v| {
        v["event"] == "lock_released" && v["file"] == "old.txt"
    });
}

/// `coord watch` running in the background: its stdout, line by line.
struct Watcher {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Watcher {
    fn start(env: &Env, args: &[&str]) -> Watcher {
        Watcher::spawn(env.cmd().arg("watch").args(args))
    }

    fn spawn(cmd: crate::support::Cmd) -> Watcher {
        let mut child = cmd.spawn();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watcher {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line that satisfies `pred`, within 20 s.
    #[track_caller]
    fn expect(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) => panic!("watch never printed {what}; it printed:\n{:#?}", self.seen),
            }
        }
    }

    /// The next JSON event named `event`.
    #[track_caller]
    fn event(&mut self, event: &str) -> serde_json::Value {
        let line = self.expect(event, |l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["event"] == event)
        });
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Ours, by pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_json_streams_one_line_per_change_while_agents_act() {
    let env = Env::new();
    env.write("a.md", "v1\n");
    let mut w = Watcher::start(&env, &["--json"]);
    let started = w.event("started");
    assert_eq!(started["root"], env.root().display().to_string());

    env.agent("alpha").args(["presence", ".", "Task_1"]).ok();
    let e = w.event("agent_arrived");
    assert_eq!(e["agent"], "alpha");
    assert_eq!(e["working_on"], "Task_1");
    assert!(e["at"].as_str().is_some_and(|t| t.contains('T')));

    env.agent("alpha")
        .args(["lock", "a.md", "--reason", "fixing"])
        .ok();
    let e = w.event("lock_taken");
    assert_eq!(
        (&e["file"], &e["agent"], &e["reason"]),
        (&"a.md".into(), &"alpha".into(), &"fixing".into())
    );

    // beta waits for alpha: the queue shows up.
    env.agent("beta").args(["presence", ".", "Task_2"]).ok();
    let waiter = env
        .agent("beta")
        .args(["lock", "a.md", "--wait", "60s"])
        .spawn();
    let e = w.event("waiting");
    assert_eq!(e["agent"], "beta");
    assert_eq!(e["waits_for"], serde_json::json!(["alpha"]));

    env.agent("alpha")
        .args(["msg", "send", "beta", "done soon"])
        .ok();
    let e = w.event("message_sent");
    assert_eq!((&e["from"], &e["to"]), (&"alpha".into(), &"beta".into()));

    // alpha lets go, beta gets it: seen as one lock passing, and the wait ending.
    env.agent("alpha").args(["unlock", "a.md"]).ok();
    assert_eq!(finish(waiter).code, Some(0));
    let e = w.expect("the lock passing to beta", |l| {
        serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| {
            v["agent"] == "beta" && (v["event"] == "lock_taken" || v["event"] == "lock_taken_over")
        })
    });
    assert!(e.contains("a.md"), "{e}");
    w.event("wait_ended");

    env.agent("beta").args(["unlock", "a.md"]).ok();
    let e = w.event("lock_released");
    assert_eq!(e["agent"], "beta");

    env.agent("beta").arg("shutdown").ok();
    let e = w.event("agent_finished");
    assert_eq!(e["agent"], "beta");

    env.cmd()
        .args(["dialogue", "init", "--topic", "Cache"])
        .ok();
    let e = w.event("turn_passed");
    assert_eq!(e["to"], "AGENT-1");
    env.cmd()
        .args(["dialogue", "say", "--as", "AGENT-1", "Proposal"])
        .ok();
    let e = w.event("turn_passed");
    assert_eq!(
        (&e["from"], &e["to"]),
        (&"AGENT-1".into(), &"AGENT-2".into())
    );

    // Every line is one JSON object.
    for line in &w.seen {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["event"].is_string() && v["at"].is_string(), "{line}");
    }
}

#[test]
fn watch_piped_prints_the_view_then_one_line_per_change() {
    let env = Env::new();
    env.write("a.md", "v1\n");
    let mut w = Watcher::start(&env, &[]);
    w.expect("the view", |l| l.starts_with("Agents"));
    env.agent("alpha").args(["lock", "a.md"]).ok();
    let line = w.expect("the lock", |l| l.contains("alpha locked `a.md`"));
    assert!(!line.contains('\x1b'), "no escapes when piped: {line:?}");
    env.agent("alpha").args(["unlock", "a.md"]).ok();
    w.expect("the release", |l| l.contains("alpha released `a.md`"));
}

#[test]
fn watch_redraws_full_screen_in_a_terminal() {
    if !have("tmux") {
        eprintln!("skipped: tmux is not installed; `coord watch` was not run in a terminal");
        return;
    }
    let env = Env::new();
    env.write("a.md", "v1\n");
    let socket = env.path("tmux.sock");
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(args)
            .output()
            .unwrap()
    };
    let command = format!(
        "env COORD_DIR='{}' NO_COLOR=1 '{}' watch",
        env.root().display(),
        crate::support::coord_bin()
    );
    let out = tmux(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-x",
        "120",
        "-y",
        "40",
        &command,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    struct Server<'a>(&'a dyn Fn(&[&str]) -> std::process::Output);
    impl Drop for Server<'_> {
        fn drop(&mut self) {
            (self.0)(&["kill-server"]);
        }
    }
    let _server = Server(&tmux);
    let screen = || String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
    eventually("the view on screen", || {
        let s = screen();
        s.starts_with("coord watch") && s.contains("No locks")
    });
    env.agent("alpha").args(["presence", ".", "Task_1"]).ok();
    env.agent("alpha").args(["lock", "a.md"]).ok();
    eventually("the lock on screen", || {
        let s = screen();
        // Redrawn in place: the title stays on the first line, the lock appears in the table
        // and among the latest changes.
        s.starts_with("coord watch")
            && s.contains("Latest changes")
            && s.contains("alpha locked `a.md`")
            && !s.contains("No locks")
            && s.matches("coord watch").count() == 1
    });
}

/// #48: the lines `coord watch` prints for people say a wait once (not once from the history
/// and again, in other words, from a look at the queue), read an ending as one line (locks
/// released and the agent gone, not `left` and `FINISHED` besides), and wrap at word
/// boundaries to the terminal's width, never inside a word.
#[test]
fn watch_says_a_wait_once_an_ending_in_one_line_and_wraps_at_words() {
    let env = Env::new();
    let long = "a/rather/long/folder/name/for/the/file/locked.rs";
    env.write(long, "x\n");
    env.write("a.md", "x\n");
    let mut w = Watcher::spawn(env.cmd().env("COLUMNS", "70").arg("watch"));
    w.expect("the view", |l| l.starts_with("Agents"));
    env.agent("alpha").args(["lock", "a.md", long]).ok();
    let waiter = env
        .agent("beta")
        .args(["lock", "a.md", "--wait", "60s"])
        .spawn();
    w.expect("the wait", |l| l.contains("beta waits for `a.md`"));
    env.agent("alpha").arg("unlock").ok();
    assert_eq!(finish(waiter).code, Some(0));
    env.agent("beta").arg("shutdown").ok();
    w.expect("beta's ending", |l| {
        l.contains("beta finished: released `a.md`")
    });
    // A change only a look sees is held as long as any look's change waits for the history to
    // say it: once it is shown, a wait or a finish said twice would have been shown before it.
    env.write(
        ".zed_presence",
        "Agent: zed\nstatus: ACTIVE\nheartbeat: 2099-01-01T00:00:00+00:00\n",
    );
    w.expect("a change only a look sees", |l| l.contains("zed arrived"));
    let waits = w.seen.iter().filter(|l| l.contains("beta waits")).count();
    assert_eq!(waits, 1, "{:#?}", w.seen);
    assert!(
        !w.seen
            .iter()
            .any(|l| l.contains("FINISHED") || l.ends_with("beta left")),
        "{:#?}",
        w.seen
    );
    // Wrapped: each line within 70 columns, the long name whole on one line, the lines that
    // go on indented under the text.
    assert!(
        w.seen.iter().all(|l| l.chars().count() <= 70),
        "{:#?}",
        w.seen
    );
    let joined = w.seen.join("\n").replace("\n         ", " ");
    assert!(
        joined.contains("alpha released `")
            && w.seen.iter().any(|l| l.contains(&format!("`{long}`"))),
        "{:#?}",
        w.seen
    );
    let ending = joined
        .lines()
        .find(|l| l.contains("alpha released"))
        .unwrap();
    assert!(
        ending.contains("`a.md`") && ending.contains(&format!("`{long}`")),
        "{ending}"
    );
}
