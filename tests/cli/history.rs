//! The workspace's history (contract §11): `coord log`, `coord log --timeline`, `coord watch`
//! fed from it, who needs a human, and `coord prune`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin, eventually, finish};

const LOG: &str = ".coord/history/events.jsonl";
const ROTATED: &str = ".coord/history/events.1.jsonl";

/// Every line of the history file, each parsed; panics on a line that is not a JSON event.
#[track_caller]
fn lines(env: &Env, rel: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(env.path(rel)).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    text.lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("a torn line {l:?}: {e}"));
            for key in ["at", "event", "agent"] {
                assert!(v[key].is_string(), "no `{key}` in {l}");
            }
            v
        })
        .collect()
}

/// `coord log --json`, parsed.
fn log_json(env: &Env, args: &[&str]) -> Vec<serde_json::Value> {
    let out = env.cmd().args(["log", "--json"]).args(args).ok();
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events_of<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// 64 processes take and release a lock each at once: 128 events, every one whole, none lost.
#[test]
fn sixty_four_concurrent_writers_lose_and_tear_nothing() {
    let env = Env::new();
    env.cmd().args(["log"]).ok();
    let children: Vec<_> = (0..64)
        .map(|i| {
            env.agent(&format!("w{i}"))
                .args(["run", &format!("f{i}"), "--", "true"])
                .spawn()
        })
        .collect();
    for c in children {
        let out = finish(c);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    let all = lines(&env, LOG);
    for kind in ["lock_taken", "lock_released"] {
        let mut who: Vec<String> = events_of(&all, kind)
            .iter()
            .map(|e| format!("{}:{}", e["agent"], e["file"]))
            .collect();
        who.sort();
        who.dedup();
        assert_eq!(who.len(), 64, "{kind}: {who:?}");
    }
    // Oldest first, and each agent's release after its lock.
    let log = log_json(&env, &[]);
    assert_eq!(log.len(), all.len());
    for i in 0..64 {
        let agent = format!("w{i}");
        let pos = |kind: &str| {
            log.iter()
                .position(|e| e["event"] == kind && e["agent"] == agent.as_str())
                .unwrap()
        };
        assert!(pos("lock_taken") < pos("lock_released"), "{agent}");
    }
}

/// Writers killed with SIGKILL at random moments leave only whole lines; a line torn by hand
/// (a writer killed inside its write) stays on its own line, and the next event is whole.
#[test]
fn a_kill_mid_append_leaves_whole_lines() {
    let env = Env::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    for round in 0..6 {
        let children: Vec<_> = (0..12)
            .map(|i| {
                env.agent(&format!("k{i}"))
                    .args(["run", &format!("r{round}-{i}"), "--", "true"])
                    .spawn()
            })
            .collect();
        for mut c in children {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            std::thread::sleep(Duration::from_micros(rng % 4000));
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    let before = lines(&env, LOG).len();
    // A torn line, as a writer killed inside its write(2) would leave it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(env.path(LOG))
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        br#"{"at":"2026-01-28T01:00:00.000+01:00","event":"lock_ta"#,
    )
    .unwrap();
    drop(f);
    env.agent("after").args(["lock", "z"]).ok();
    let text = env.read(LOG);
    let last = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["agent"], "after");
    assert_eq!(v["file"], "z");
    // The torn line is skipped by readers; everything else is read.
    let log = log_json(&env, &[]);
    assert_eq!(log.len(), before + 1, "{text}");
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A full disk under the history never fails a lock or an unlock: both go through and say
/// once that the history was not written.
#[test]
fn a_full_disk_never_fails_the_lock() {
    if !is_root() {
        eprintln!("skipped: needs root to mount a small tmpfs");
        return;
    }
    let env = Env::new();
    env.write("a.txt", "v1\n");
    std::fs::create_dir_all(env.path(".coord/history")).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
        .arg(env.path(".coord/history"))
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let history = env.path(".coord/history");
    let _unmount = Unmount(&history);
    {
        use std::io::Write;
        let mut f = std::fs::File::create(history.join("filler")).unwrap();
        while f.write_all(&[b'x'; 512]).is_ok() {}
    }
    let out = env.agent("a").args(["lock", "a.txt"]).ok();
    assert!(out.stderr.contains("warning:"), "{}", out.stderr);
    assert!(out.stderr.contains("history"), "{}", out.stderr);
    assert!(env.exists("a.txt.lock.a"));
    env.agent("a").args(["unlock", "a.txt"]).ok();
    assert!(!env.exists("a.txt.lock.a"));
    env.agent("b").args(["lock", "a.txt", "--no-wait"]).ok();
    // Whole or absent: the log holds no torn line.
    let _ = lines(&env, LOG);
}

/// Past its size bound the history is rotated: the newest events are kept, the oldest go, and
/// the two generations together stay within the bound.
#[test]
fn rotation_keeps_the_newest() {
    let env = Env::new();
    for i in 0..40 {
        env.agent("rot")
            .env("COORD_HISTORY_MAX_SIZE", "4k")
            .args(["run", &format!("f{i:02}"), "--", "true"])
            .ok();
    }
    assert!(env.exists(ROTATED), "never rotated");
    let size = |rel: &str| std::fs::metadata(env.path(rel)).map_or(0, |m| m.len());
    assert!(size(LOG) + size(ROTATED) <= 4096 + 1024, "over the bound");
    let _ = lines(&env, ROTATED);
    let log = log_json(&env, &[]);
    let files: Vec<&str> = log.iter().filter_map(|e| e["file"].as_str()).collect();
    assert!(files.contains(&"f39"), "the newest is gone: {files:?}");
    assert!(!files.contains(&"f00"), "the oldest is kept: {files:?}");
    let times: Vec<&str> = log.iter().map(|e| e["at"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "not oldest first");
    // The bound also comes from `.coord/config`.
    let env = Env::new();
    env.write(".coord/config", "history_max_size: 2k\n");
    for i in 0..30 {
        env.agent("rot")
            .args(["run", &format!("g{i:02}"), "--", "true"])
            .ok();
    }
    assert!(env.exists(ROTATED), "the config's bound was not used");
}

/// `coord log` narrows by FILE (or folder), `--agent` and `--since`; `COORD_AGENT` alone does
/// not narrow it.
#[test]
fn log_filters_by_file_agent_and_time() {
    let env = Env::new();
    env.write("src/a.rs", "");
    env.agent("ann").args(["lock", "src/a.rs", "b.txt"]).ok();
    env.agent("ann").args(["unlock"]).ok();
    env.agent("bo").args(["lock", "b.txt"]).ok();
    env.agent("bo").args(["msg", "send", "ann", "hi"]).ok();
    let all = log_json(&env, &[]);
    assert_eq!(events_of(&all, "lock_taken").len(), 3);
    assert_eq!(events_of(&all, "message_sent").len(), 1);
    let src = log_json(&env, &["src/"]);
    assert!(
        !src.is_empty() && src.iter().all(|e| e["file"] == "src/a.rs"),
        "{src:?}"
    );
    let bo: Vec<serde_json::Value> = env
        .cmd()
        .args(["log", "--json", "--agent", "bo"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(bo.len(), 2);
    assert!(bo.iter().all(|e| e["agent"] == "bo"));
    let as_ann = env.agent("ann").args(["log", "--json"]).ok();
    assert_eq!(
        as_ann.stdout.lines().count(),
        all.len(),
        "COORD_AGENT narrowed the log"
    );
    assert!(log_json(&env, &["--since", "1h"]).len() == all.len());
    let future = log_json(&env, &["--since", "2999-01-01T00:00:00Z"]);
    assert!(future.is_empty());
    let human = env.cmd().args(["log", "b.txt"]).ok();
    human.stdout_has("ann locked `b.txt`");
    human.stdout_has("bo locked `b.txt`");
    env.cmd().args(["log", "--since", "soon"]).code(2);
}

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

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A history written with fixed times: alice holds a.txt 0–40 s, bob waits 10–40 s then holds
/// it 40–80 s, carol's edit is denied at 60 s; dave holds b.txt from 20 s until erin takes it
/// over at 70 s and releases it at 100 s.
fn fixed_history(env: &Env) {
    let t = |s: u32| format!("2026-01-28T10:{:02}:{:02}.000+00:00", s / 60, s % 60);
    let ev = |s: u32, event: &str, agent: &str, file: &str| {
        format!(
            r#"{{"at":"{}","event":"{event}","agent":"{agent}","file":"{file}"}}"#,
            t(s)
        )
    };
    let lines = [
        ev(0, "lock_taken", "alice", "a.txt"),
        ev(10, "lock_waiting", "bob", "a.txt"),
        ev(20, "lock_taken", "dave", "b.txt"),
        ev(40, "lock_released", "alice", "a.txt"),
        ev(40, "lock_taken", "bob", "a.txt"),
        ev(60, "edit_denied", "carol", "a.txt"),
        ev(70, "lock_taken_over", "erin", "b.txt"),
        ev(80, "lock_released", "bob", "a.txt"),
        ev(100, "lock_released", "erin", "b.txt"),
    ];
    env.write(LOG, lines.join("\n") + "\n");
}

/// The timeline drawn in a real terminal (tmux) at 80 and at 200 columns: the same rows, every
/// line within the width, the bars scaled to it (bob takes a.txt over from alice at 40% of the
/// way across), colour in a terminal and none with `NO_COLOR`.
#[test]
fn timeline_under_tmux_at_80_and_200_columns() {
    if !have("tmux") {
        eprintln!("skipped: tmux is not installed; the timeline was not drawn in a terminal");
        return;
    }
    let env = Env::new();
    fixed_history(&env);
    let screen = |width: u32, no_color: bool| -> String {
        let socket = env.path(&format!("tmux-{width}-{no_color}.sock"));
        let tmux = |args: &[&str]| {
            Command::new("tmux")
                .arg("-S")
                .arg(&socket)
                .args(args)
                .output()
                .unwrap()
        };
        let command = format!(
            "env -u COLUMNS -u NO_COLOR -u CLICOLOR_FORCE COORD_DIR='{}' {} TERM=xterm-256color COORD_HISTORY_MAX_AGE=100000d '{}' log --timeline; : > '{}'; sleep 60",
            env.root().display(),
            if no_color { "NO_COLOR=1" } else { "" },
            coord_bin(),
            env.path(&format!("done-{width}-{no_color}")).display(),
        );
        let out = tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            "30",
            &command,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eventually("the timeline drawn", || {
            env.exists(&format!("done-{width}-{no_color}"))
        });
        let shot = tmux(&["capture-pane", "-p", "-e"]);
        tmux(&["kill-server"]);
        String::from_utf8_lossy(&shot.stdout).into_owned()
    };
    let strip = |s: &str| -> String {
        let mut out = String::new();
        let mut esc = false;
        for ch in s.chars() {
            if esc {
                esc = !ch.is_ascii_alphabetic();
            } else if ch == '\x1b' {
                esc = true;
            } else {
                out.push(ch);
            }
        }
        out
    };
    let mut rows_at: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for width in [80u32, 200] {
        let coloured = screen(width, false);
        assert!(
            coloured.contains("\x1b["),
            "no colour in a terminal:\n{coloured}"
        );
        let plain = screen(width, true);
        assert!(
            !plain.contains("\x1b["),
            "colour despite NO_COLOR:\n{plain}"
        );
        let trimmed = |s: &str| -> Vec<String> {
            let mut v: Vec<String> = s.lines().map(|l| l.trim_end().to_string()).collect();
            while v.last().is_some_and(String::is_empty) {
                v.pop();
            }
            v
        };
        assert_eq!(trimmed(&strip(&coloured)), trimmed(&plain));
        for line in plain.lines() {
            assert!(line.chars().count() <= width as usize, "{width}: {line:?}");
        }
        let labels: Vec<String> = plain
            .lines()
            .filter(|l| l.contains('│'))
            .map(|l| l.split('│').next().unwrap().trim().to_string())
            .collect();
        rows_at.insert(width, labels);
        let bar = |label: &str| -> Vec<char> {
            let line = plain
                .lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("no row {label}:\n{plain}"));
            line.split('│').nth(1).unwrap().chars().collect()
        };
        let a = bar("a.txt");
        assert!(
            a.len() > width as usize / 2,
            "{width}: the bar does not use the width"
        );
        let first_b = a.iter().position(|c| *c == 'B').unwrap();
        let expected = (a.len() - 1) * 40 / 100;
        assert!(
            first_b.abs_diff(expected) <= 1,
            "{width}: B at {first_b}, not ~{expected}\n{plain}"
        );
        assert_eq!(a[0], 'A', "{plain}");
        assert!(a.contains(&'x'), "the denial is not drawn:\n{plain}");
        let b = bar("b.txt");
        assert!(b.contains(&'>'), "the takeover is not drawn:\n{plain}");
        assert!(plain.contains("waits"), "{plain}");
        let waits = bar("  waits");
        assert!(waits.contains(&'b'), "bob's wait is not drawn:\n{plain}");
        assert!(
            plain.contains("A alice") && plain.contains("E erin"),
            "{plain}"
        );
    }
    assert_eq!(
        rows_at[&80], rows_at[&200],
        "the rows differ between widths"
    );
    // Piped: plain text, no escapes.
    let piped = env
        .cmd()
        .env_remove("NO_COLOR")
        .env("COORD_HISTORY_MAX_AGE", "100000d")
        .args(["log", "--timeline"])
        .ok();
    assert!(!piped.stdout.contains('\x1b'));
    assert!(piped.stdout.contains("a.txt"));
}

/// The hook payloads of each client that mean "waiting for the user" (Claude Code's
/// `Notification` as its real client sends it, and the other clients' equivalents) show the
/// agent as needing its user, first in `status`, with since when and what it asks, until it
/// acts again.
#[test]
fn needs_user_from_each_clients_waiting_events() {
    let env = Env::new();
    env.agent("aaa").args(["presence", ".", "T"]).ok();
    let cwd = env.root().display().to_string();
    let hook = |client: &str, payload: serde_json::Value| {
        env.cmd()
            .args(["hook", client])
            .stdin(payload.to_string())
            .ok();
    };
    let status = || -> serde_json::Value {
        serde_json::from_str(&env.cmd().args(["status", "--json"]).ok().stdout).unwrap()
    };
    let needs = |agent: &str| -> serde_json::Value {
        let st = status();
        st["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent} in {st:#}"))["needs_user"]
            .clone()
    };
    let sid = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";
    let claude = "claude-7684f1ed";
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    assert!(needs(claude).is_null());
    // The payload Claude Code 2.1 writes for a permission prompt.
    hook(
        "claude",
        serde_json::json!({
            "session_id": sid,
            "transcript_path": "/home/dev/.claude/projects/p/x.jsonl",
            "cwd": cwd,
            "hook_event_name": "Notification",
            "message": "Claude needs your permission to use Bash",
            "notification_type": "permission_prompt"
        }),
    );
    let n = needs(claude);
    assert_eq!(n["what"], "Claude needs your permission to use Bash");
    assert!(n["since"].as_str().unwrap().starts_with("20"), "{n}");
    let st = status();
    assert_eq!(st["agents"][0]["agent"], claude, "not first: {st:#}");
    let human = env.cmd().arg("status").ok();
    let needs_at = human
        .stdout
        .find("Needs you")
        .expect("no Needs you section");
    assert!(needs_at < human.stdout.find("Agents").unwrap());
    human.stdout_has("Claude needs your permission to use Bash");
    // The user answered: the tool runs.
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    assert!(needs(claude).is_null());
    // The end of its turn.
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false}),
    );
    assert!(needs(claude)["what"].as_str().unwrap().contains("turn"));
    hook(
        "claude",
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}),
    );
    assert!(needs(claude).is_null());

    // The other clients' sessions start first, as they do.
    for (client, sid) in [
        ("gemini", "ab12cd34ef"),
        ("codex", "019a0000-0000-7000-8000-00000000beef"),
    ] {
        hook(
            client,
            serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart"}),
        );
    }
    env.cmd()
        .args(["-a", "copi", "hook", "copilot", "--event", "sessionStart"])
        .stdin(serde_json::json!({"cwd": cwd}).to_string())
        .ok();
    // Gemini CLI's Notification (a tool permission).
    hook(
        "gemini",
        serde_json::json!({"session_id": "ab12cd34ef", "cwd": cwd, "hook_event_name": "Notification",
            "notification_type": "ToolPermission", "message": "Allow run_shell_command?", "details": {}}),
    );
    assert_eq!(needs("gemini-ab12cd34")["what"], "Allow run_shell_command?");
    // Codex CLI's PermissionRequest.
    hook(
        "codex",
        serde_json::json!({"session_id": "019a0000-0000-7000-8000-00000000beef", "cwd": cwd,
            "hook_event_name": "PermissionRequest", "tool_name": "shell", "tool_input": {}}),
    );
    let codex = status()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"].as_str().unwrap().starts_with("codex-"))
        .unwrap()["needs_user"]
        .clone();
    assert_eq!(codex["what"], "permission to use shell");
    // Copilot CLI's notification.
    env.cmd()
        .args(["-a", "copi", "hook", "copilot", "--event", "notification"])
        .stdin(serde_json::json!({"cwd": cwd, "message": "Approve edit?"}).to_string())
        .ok();
    assert_eq!(needs("copi")["what"], "Approve edit?");
    // And in the history.
    let log = log_json(&env, &[]);
    assert!(events_of(&log, "needs_user").len() >= 4);
    assert!(!events_of(&log, "user_answered").is_empty());
    let first = events_of(&log, "needs_user")[0];
    assert_eq!(first["client"], "claude");
    assert_eq!(first["session"], sid);
}

/// `coord watch --notify` rings the terminal (bell and OSC 9) when an agent starts waiting
/// for its user.
#[test]
fn watch_notify_rings_when_an_agent_waits_for_its_user() {
    let env = Env::new();
    let mut child = env.cmd().args(["watch", "--json", "--notify"]).spawn();
    let stderr = child.stderr.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("started"), "{first}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 256];
        let mut r = stderr;
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    env.cmd()
        .args(["-a", "who", "hook", "claude"])
        .stdin(
            serde_json::json!({"session_id": "s1", "cwd": env.root(), "hook_event_name": "Notification",
                "message": "Claude is waiting for your input", "notification_type": "idle_prompt"})
            .to_string(),
        )
        .ok();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&got).contains("\x1b]9;") && Instant::now() < deadline {
        if let Ok(b) = rx.recv_timeout(Duration::from_millis(200)) {
            got.extend(b);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains('\x07'), "no bell: {text:?}");
    assert!(
        text.contains("\x1b]9;coord: who needs you: Claude is waiting for your input"),
        "{text:?}"
    );
}

/// `coord prune` removes what finished agents left and keeps everything of live ones, byte
/// for byte; `--dry-run` removes nothing. Finished agents fade from `status` (`--all` shows
/// them).
#[test]
fn prune_keeps_live_agents() {
    let env = Env::new();
    for a in ["live", "done", "holder"] {
        env.cmd().args(["startup", "--partner", a]).ok();
    }
    let id = env
        .agent("live")
        .args(["msg", "send", "all", "hello"])
        .ok()
        .stdout
        .trim()
        .to_string();
    env.agent("done").args(["msg", "read", &id]).ok();
    env.agent("done").arg("shutdown").ok();
    env.agent("holder").arg("shutdown").ok();
    env.agent("holder").args(["lock", "kept.txt"]).ok();
    env.agent("holder")
        .args(["presence", "--status", "finished"])
        .ok();
    let before = env.snapshot();
    let dry = env.cmd().args(["prune", "--dry-run"]).ok();
    dry.stdout_has("would remove .done_presence");
    assert_eq!(env.snapshot(), before, "--dry-run changed files");
    let out: serde_json::Value =
        serde_json::from_str(&env.cmd().args(["prune", "--json"]).ok().stdout).unwrap();
    assert_eq!(out["agents"], serde_json::json!(["done"]), "{out:#}");
    let after = env.snapshot();
    assert!(!env.exists(".done_presence"));
    assert!(!env.exists(".coord/messages/read/done"));
    let rows = |snap: &BTreeMap<String, Vec<u8>>, who: &str| -> usize {
        snap.iter()
            .filter(|(k, v)| {
                k.starts_with(".coord/partners/")
                    && String::from_utf8_lossy(v).contains(&format!("partner_name: {who}\n"))
            })
            .count()
    };
    assert_eq!(rows(&before, "done"), 1);
    assert_eq!(rows(&after, "done"), 0);
    // Everything else is as it was.
    for (path, bytes) in &before {
        if path.contains("done") || path.starts_with(".coord/partners/") && rows_of(bytes, "done") {
            continue;
        }
        if path.starts_with(".coord/history/") || path == ".coord/mutex" {
            continue;
        }
        assert_eq!(after.get(path), Some(bytes), "{path} changed");
    }
    assert!(env.exists(".live_presence") && env.exists(".holder_presence"));
    // Finished agents fade from status after an hour; --all still shows them.
    let later = "2999-01-01T00:00:00+00:00";
    let agents = |args: &[&str]| -> Vec<String> {
        let st: serde_json::Value = serde_json::from_str(
            &env.cmd()
                .env("COORD_NOW", later)
                .args(["status", "--json"])
                .args(args)
                .ok()
                .stdout,
        )
        .unwrap();
        st["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!agents(&[]).contains(&"holder".to_string()));
    assert!(agents(&["--all"]).contains(&"holder".to_string()));
}

fn rows_of(bytes: &[u8], who: &str) -> bool {
    String::from_utf8_lossy(bytes).contains(&format!("partner_name: {who}\n"))
}

/// Edits through a client's hook are in the history: a denied one naming the tool, a made one
/// with the file's hash before (its backup) and after; each names the client and session.
#[test]
fn hook_edits_denied_and_made_are_recorded_with_hashes() {
    let env = Env::new();
    env.write("a.txt", "old\n");
    let cwd = env.root().display().to_string();
    let path = env.path("a.txt").display().to_string();
    let payload = |sid: &str, event: &str| {
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": event,
            "tool_name": "Write", "tool_input": {"file_path": path, "content": "new\n"}})
        .to_string()
    };
    env.cmd()
        .args(["hook", "claude"])
        .stdin(payload("aaaa1111", "PreToolUse"))
        .ok();
    env.write("a.txt", "new\n");
    env.cmd()
        .args(["hook", "claude"])
        .stdin(payload("aaaa1111", "PostToolUse"))
        .ok();
    // Another session's edit of the file the first still holds is denied.
    env.cmd()
        .args(["hook", "claude", "--wait", "0"])
        .stdin(payload("bbbb2222", "PreToolUse"))
        .ok()
        .stdout_has("deny");
    let log = log_json(&env, &[]);
    let made = events_of(&log, "edit_made");
    assert_eq!(made.len(), 1, "{log:#?}");
    let m = made[0];
    assert_eq!(
        (
            &m["agent"],
            &m["file"],
            &m["tool"],
            &m["client"],
            &m["session"]
        ),
        (
            &"claude-aaaa1111".into(),
            &"a.txt".into(),
            &"Write".into(),
            &"claude".into(),
            &"aaaa1111".into()
        )
    );
    let (before, after) = (
        m["hash_before"].as_str().unwrap(),
        m["hash_after"].as_str().unwrap(),
    );
    assert_eq!(before.len(), 16);
    assert_ne!(before, after, "{m}");
    let denied = events_of(&log, "edit_denied");
    assert_eq!(denied.len(), 1, "{log:#?}");
    assert_eq!(denied[0]["agent"], "claude-bbbb2222");
    assert_eq!(denied[0]["file"], "a.txt");
    assert!(
        denied[0]["why"]
            .as_str()
            .unwrap()
            .contains("claude-aaaa1111")
    );
    let taken = events_of(&log, "lock_taken");
    assert_eq!(taken[0]["client"], "claude");
}
