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

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// Whether `program` can be run here.
fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Check `script` with `shell ARGS... FILE`, or skip (saying why) when the shell is missing.
fn shell_accepts(env: &Env, shell: &str, check: &[&str], script: &str) {
    if !have(shell) {
        eprintln!("skipped: `{shell}` is not installed; its completion script was not checked");
        return;
    }
    let file = env.path(&format!("completion.{shell}"));
    std::fs::write(&file, script).unwrap();
    let out = std::process::Command::new(shell)
        .args(check)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shell} rejects the script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completion_scripts_are_valid_for_each_shell() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.cmd().args(["completions", shell]).ok();
        assert!(
            out.stdout.contains("lock") && out.stdout.contains("unlock"),
            "{shell}: {}",
            out.stdout
        );
        assert!(out.stdout.contains("completions"), "{shell} lists itself");
    }
    let bash = env.cmd().args(["completions", "bash"]).ok().stdout.clone();
    assert!(bash.contains("complete -F _coord"), "{bash}");
    shell_accepts(&env, "bash", &["-n"], &bash);
    let zsh = env.cmd().args(["completions", "zsh"]).ok().stdout.clone();
    assert!(zsh.starts_with("#compdef coord"));
    shell_accepts(&env, "zsh", &["-n"], &zsh);
    let fish = env.cmd().args(["completions", "fish"]).ok().stdout.clone();
    shell_accepts(&env, "fish", &["--no-execute"], &fish);
    env.cmd()
        .args(["completions", "tcsh"])
        .code(2)
        .stderr_has("tcsh");
}

#[test]
fn bash_completion_really_completes_commands_and_options() {
    if !have("bash") {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let env = Env::new();
    let script = env.cmd().args(["completions", "bash"]).ok().stdout.clone();
    let file = env.path("coord.bash");
    std::fs::write(&file, script).unwrap();
    // Load the script and ask it what follows `coord unl` and `coord lock --no-`.
    let probe = format!(
        "source {}\n\
         COMP_WORDS=(coord unl); COMP_CWORD=1; _coord coord unl coord; echo \"1:${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(coord lock --no-); COMP_CWORD=2; _coord coord --no- lock; echo \"2:${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1:unlock"), "{text}");
    assert!(
        text.contains("--no-wait") && text.contains("--no-backup"),
        "{text}"
    );
}

#[test]
fn the_man_page_renders() {
    let env = Env::new();
    let page = env.cmd().arg("man").ok().stdout.clone();
    assert!(page.contains(".TH coord 1"), "{page}");
    assert!(page.contains(".SH SYNOPSIS") && page.contains("lock"));
    let sub = env.cmd().args(["man", "msg", "send"]).ok().stdout.clone();
    assert!(sub.contains(".TH coord-msg-send 1"), "{sub}");
    env.cmd()
        .args(["man", "nosuch"])
        .code(2)
        .stderr_has("error: `coord` has no command `nosuch`");
    if !have("groff") {
        eprintln!("skipped: groff is not installed; the man page was not rendered");
        return;
    }
    for (name, roff) in [("coord", &page), ("coord-msg-send", &sub)] {
        let file = env.path(&format!("{name}.1"));
        std::fs::write(&file, roff).unwrap();
        let out = std::process::Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .arg(&file)
            .env("GROFF_NO_SGR", "1")
            .output()
            .unwrap();
        // Overstruck bold (`S\x08S`) and underline (`_\x08x`) back to plain letters.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\x08' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "groff warns: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("SYNOPSIS") && text.contains("OPTIONS"),
            "{text}"
        );
    }
}

/// `coord watch` running in the background: its stdout, line by line.
struct Watcher {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Watcher {
    fn start(env: &Env, args: &[&str]) -> Watcher {
        let mut child = env.cmd().arg("watch").args(args).spawn();
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
