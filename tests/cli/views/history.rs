//! The workspace's history (contract §11): `coord log`, `coord log --timeline`, `coord watch`
//! fed from it, who needs a human, and `coord prune`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{Env, finish};

pub(crate) const LOG: &str = ".coord/history/events.jsonl";

const ROTATED: &str = ".coord/history/events.1.jsonl";

/// Every line of the history file, each parsed; panics on a line that is not a JSON event.
#[track_caller]
pub(crate) fn lines(env: &Env, rel: &str) -> Vec<serde_json::Value> {
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
pub(crate) fn log_json(env: &Env, args: &[&str]) -> Vec<serde_json::Value> {
    let out = env.cmd().args(["log", "--json"]).args(args).ok();
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn events_of<'a>(
    events: &'a [serde_json::Value],
    kind: &str,
) -> Vec<&'a serde_json::Value> {
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

/// `coord run`s waiting for one file in turn: the history tells the holders one after the other
/// (each taken after the last was released, released by whoever took it), and a waiter's wait
/// before the lock it ended with, though `run` writes that line after its command started.
#[test]
fn contended_runs_are_told_in_the_order_they_held_the_file() {
    let env = Env::new();
    env.write("shared", "0\n");
    let children: Vec<_> = (0..6)
        .map(|i| {
            env.agent(&format!("r{i}"))
                .args(["run", "--wait", "60s", "shared", "--", "sh", "-c"])
                .arg("sleep 0.02")
                .spawn()
        })
        .collect();
    for c in children {
        let out = finish(c);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    // In the file's own order, as `coord watch` and a `tail -f` read it.
    let log: Vec<_> = lines(&env, LOG)
        .into_iter()
        .filter(|e| e["file"] == "shared")
        .collect();
    let mut holder: Option<String> = None;
    let mut waited = Vec::new();
    for e in &log {
        let agent = e["agent"].as_str().unwrap().to_string();
        match e["event"].as_str().unwrap() {
            "lock_waiting" => waited.push(agent),
            "lock_taken" => {
                assert_eq!(holder, None, "{agent} took it while held: {log:#?}");
                holder = Some(agent);
            }
            "lock_released" => {
                assert_eq!(holder.as_deref(), Some(agent.as_str()), "{log:#?}");
                holder = None;
            }
            _ => {}
        }
    }
    assert_eq!(holder, None);
    assert_eq!(events_of(&log, "lock_taken").len(), 6, "{log:#?}");
    assert!(!waited.is_empty(), "nobody waited: {log:#?}");
    for agent in waited {
        let at = |kind: &str| {
            log.iter()
                .position(|e| e["event"] == kind && e["agent"] == agent.as_str())
                .unwrap()
        };
        assert!(at("lock_waiting") < at("lock_taken"), "{agent}: {log:#?}");
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

/// Planted history lines `old-0` .. `old-{n-1}` (oldest first, all of today), `size` bytes or
/// more in all.
fn planted_history(size: usize) -> (Vec<u8>, usize) {
    let now = chrono::Local::now();
    let mut bytes = Vec::with_capacity(size + 200);
    let mut n = 0;
    while bytes.len() < size {
        let at = (now - chrono::Duration::milliseconds(1_000_000 - n as i64))
            .format("%Y-%m-%dT%H:%M:%S%.3f%:z");
        bytes.extend(
            format!(r#"{{"at":"{at}","event":"lock_taken","agent":"old","file":"old-{n}"}}"#)
                .as_bytes(),
        );
        bytes.push(b'\n');
        n += 1;
    }
    (bytes, n)
}

/// #45: a history already larger than its bound (planted, or a bound lowered since) is cut to
/// its newest events within the bound when it is rotated, rather than rotated whole (where
/// `coord log` could no longer read it: "no events (yet)"); the event being written is kept.
/// A previous generation that large is read from its newest events too.
#[test]
fn an_oversized_history_keeps_its_newest_events_and_the_new_one() {
    let env = Env::new();
    env.write(".coord/config", "history_max_size: 64k\n");
    let (bytes, n) = planted_history(3 << 20);
    env.write(LOG, &bytes);
    env.agent("new").args(["lock", "a.md"]).ok();
    let log = log_json(&env, &[]);
    let files: Vec<&str> = log.iter().filter_map(|e| e["file"].as_str()).collect();
    let newest_old = format!("old-{}", n - 1);
    assert!(files.contains(&"a.md"), "the new event is lost: {files:?}");
    assert!(
        files.contains(&newest_old.as_str()),
        "the newest old events are lost: {} events",
        files.len()
    );
    assert!(!files.contains(&"old-0"), "the oldest are kept");
    let size = |rel: &str| std::fs::metadata(env.path(rel)).map_or(0, |m| m.len());
    assert!(
        size(LOG) + size(ROTATED) <= 64 * 1024 + 4096,
        "over the bound: {} + {}",
        size(LOG),
        size(ROTATED)
    );
    let _ = lines(&env, ROTATED);
    let _ = lines(&env, LOG);
    // Oldest first, the new one last.
    assert_eq!(files.last(), Some(&"a.md"), "{files:?}");

    // A previous generation planted that large: its newest events are read.
    let env = Env::new();
    env.write(".coord/config", "history_max_size: 64k\n");
    env.write(ROTATED, &bytes);
    env.agent("new").args(["lock", "a.md"]).ok();
    let log = log_json(&env, &[]);
    let files: Vec<&str> = log.iter().filter_map(|e| e["file"].as_str()).collect();
    assert!(files.contains(&"a.md"), "{files:?}");
    assert!(
        files.contains(&newest_old.as_str()),
        "{} events",
        files.len()
    );
    env.cmd().args(["log"]).ok().stdout_lacks("no events");
}

/// The lines of the history file `rel`, each checked to be a whole event (as [`lines`] does,
/// without parsing: for large files).
#[track_caller]
fn whole_lines(env: &Env, rel: &str) -> Vec<String> {
    let text = std::fs::read_to_string(env.path(rel)).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    text.lines()
        .map(|l| {
            assert!(
                l.starts_with(r#"{"at":""#) && l.ends_with('}'),
                "a torn line {l:?}"
            );
            l.to_string()
        })
        .collect()
}

/// #45: writers killed with SIGKILL while they cut an oversized history leave whole lines, in
/// order, with no event twice and the newest planted one kept. Most writers are killed the
/// moment their cut's temporary file shows in the history folder, the others at points spread
/// over the time one uncut run takes.
#[test]
fn a_kill_while_an_oversized_history_is_cut_leaves_whole_lines() {
    let (bytes, n) = planted_history(1200 << 10);
    let newest_old = format!(r#""file":"old-{}""#, n - 1);
    let bed = |round: u64| {
        let env = Env::new();
        env.write(".coord/config", "history_max_size: 2M\n");
        env.write(LOG, &bytes);
        let child = env
            .agent("k")
            .args(["run", &format!("r{round}"), "--", "true"])
            .spawn();
        (env, child, std::time::Instant::now())
    };
    let (_env, child, started) = bed(99);
    let whole = finish(child);
    assert_eq!(whole.code, Some(0), "{}", whole.stderr);
    let span = started.elapsed();
    let mut inside = 0;
    for round in 0..18u32 {
        let (env, mut child, started) = bed(u64::from(round));
        let history = env.path(".coord/history");
        if round % 3 != 2 {
            // The moment the cut's temporary file shows (or the run ends without one).
            while crate::support::temps_in(&history).is_empty()
                && child.try_wait().unwrap().is_none()
                && started.elapsed() < span * 4
            {}
        } else {
            std::thread::sleep((span * round / 18).saturating_sub(started.elapsed()));
        }
        inside += usize::from(!crate::support::temps_in(&history).is_empty());
        let _ = child.kill();
        let _ = child.wait();
        whole_lines(&env, LOG);
        whole_lines(&env, ROTATED);
        env.agent("after").args(["lock", "z"]).ok();
        whole_lines(&env, LOG);
        whole_lines(&env, ROTATED);
        let log = env.cmd().args(["log", "--json"]).ok().stdout;
        assert!(
            log.contains(r#""file":"z""#),
            "round {round}: the new event is lost"
        );
        assert!(
            log.contains(&newest_old),
            "round {round}: the newest old event is lost"
        );
        let mut seen = std::collections::HashSet::new();
        for line in log.lines() {
            assert!(seen.insert(line), "round {round}: twice: {line}");
        }
        assert!(
            crate::support::temps_in(&history).is_empty(),
            "round {round}: a temporary file is left"
        );
    }
    eprintln!("{inside} of 18 kills came while a cut's temporary file stood");
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
    // The first session's edit tool writes `content`; its post-tool hook sees it.
    let edit = |content: &str| {
        env.write("a.txt", content);
        env.cmd()
            .args(["hook", "claude"])
            .stdin(payload("aaaa1111", "PostToolUse"))
            .ok();
    };
    edit("new\n");
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
    // A human reads no hash (#9): the hashes and the session stay in `--json`.
    let human = env.cmd().args(["log"]).ok();
    human.stdout_has("claude-aaaa1111 edited `a.txt` (Write in claude)\n");
    assert!(!has_hex_run(&human.stdout, 16), "{}", human.stdout);
    // Put back as it was when locked: said in words.
    edit("old\n");
    env.cmd()
        .args(["log"])
        .ok()
        .stdout_has("claude-aaaa1111 edited `a.txt` (Write in claude): as it was when locked\n");
}

/// Whether `text` holds `n` hex digits in a row.
fn has_hex_run(text: &str, n: usize) -> bool {
    let mut run = 0;
    for c in text.chars() {
        run = if c.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= n {
            return true;
        }
    }
    false
}

/// #48: in a repository with several work trees, each line of `coord log` names the work tree
/// its agent acted in and the branch checked out there (read from the tree's `HEAD`).
#[test]
fn log_lines_name_the_work_tree_and_branch() {
    use crate::locks::worktrees::{coord, repo};
    let r = repo();
    coord(&r, &r.b, "alice").args(["lock", "src/x.rs"]).ok();
    coord(&r, &r.main, "bob").args(["lock", "a.txt"]).ok();
    coord(&r, &r.c, "carol").args(["lock", "src/y.rs"]).ok();
    let out = r
        .env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(&r.b)
        .arg("log")
        .ok();
    out.stdout_has("alice (b, feature) locked `src/x.rs`")
        .stdout_has("bob (main, trunk) locked `a.txt`")
        .stdout_has("carol (c, c) locked `src/y.rs`");
    // A lone folder's lines are as they were.
    let env = Env::new();
    env.agent("alice").args(["lock", "f.txt"]).ok();
    env.cmd()
        .arg("log")
        .ok()
        .stdout_has(" alice locked `f.txt`\n");
}

/// #48: the events of one ending (a `claude -p` session's `Stop` and `SessionEnd`: its locks
/// released, its agent gone) read as one line in `coord log`; `--json` keeps one object per
/// event (a script filtering `coord log FILE --json` for `lock_released` still finds each), and
/// writes none that says nothing (no `needs_user` where nobody is asked, no `user_answered`
/// beside the agent leaving).
#[test]
fn a_sessions_ending_reads_as_one_line_and_its_json_keeps_each_event() {
    use crate::views::needs_user::FakeClient;
    let env = Env::new();
    env.write("a.rs", "a\n");
    env.write("b.rs", "b\n");
    let cwd = env.root().display().to_string();
    let call = |sid: &str, event: &str, file: Option<&str>| {
        let mut v = serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": event,
            "stop_hook_active": false, "reason": "other"});
        if let Some(f) = file {
            v["tool_name"] = "Write".into();
            v["tool_input"] = serde_json::json!({"file_path": env.path(f), "content": "x\n"});
        }
        v.to_string()
    };
    let claude = FakeClient::new("claude");
    let print = ["-p", "write a.rs and b.rs"];
    for (event, file) in [
        ("SessionStart", None),
        ("PreToolUse", Some("a.rs")),
        ("PreToolUse", Some("b.rs")),
        ("Stop", None),
        ("SessionEnd", None),
    ] {
        claude.hook(&env, &print, "claude", &call("cccc0001", event, file));
    }
    let out = env.cmd().arg("log").ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    assert!(
        lines[3].ends_with(" claude-cccc0001 finished: released `a.rs`, `b.rs`"),
        "{}",
        out.stdout
    );
    let log = log_json(&env, &[]);
    assert_eq!(events_of(&log, "lock_released").len(), 2, "{log:#?}");
    assert_eq!(events_of(&log, "agent_left").len(), 1, "{log:#?}");
    assert!(events_of(&log, "needs_user").is_empty(), "{log:#?}");
    assert!(events_of(&log, "user_answered").is_empty(), "{log:#?}");
    let of_a = log_json(&env, &["a.rs"]);
    assert_eq!(events_of(&of_a, "lock_released")[0]["file"], "a.rs");
    env.cmd()
        .args(["log", "a.rs"])
        .ok()
        .stdout_has(" claude-cccc0001 released `a.rs`\n");

    // At a terminal: the end of the turn waits for its user, in the same line; the session
    // ends later, and leaving says the wait is over.
    let at_terminal: [&str; 0] = [];
    for (event, file) in [
        ("SessionStart", None),
        ("PreToolUse", Some("a.rs")),
        ("Stop", None),
    ] {
        claude.hook(&env, &at_terminal, "claude", &call("dddd0001", event, file));
    }
    env.agent("other").args(["lock", "z.txt"]).ok();
    claude.hook(
        &env,
        &at_terminal,
        "claude",
        &call("dddd0001", "SessionEnd", None),
    );
    env.cmd()
        .arg("log")
        .ok()
        .stdout_has(" claude-dddd0001 released `a.rs`; NEEDS ITS USER: its turn is over: waiting for a prompt\n")
        .stdout_has(" claude-dddd0001 left\n");
    let log = log_json(&env, &[]);
    assert_eq!(events_of(&log, "needs_user").len(), 1, "{log:#?}");
    assert!(events_of(&log, "user_answered").is_empty(), "{log:#?}");
}
