//! `coord lock`, `coord unlock` and `coord check`: taking, refreshing and releasing locks, all or
//! nothing, with the seed's records beside the files; an own lock file found in another shape is
//! replaced or refused, never followed.

use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::planted::{ALL, Bed, expect, plant};
use crate::rigs::{lock_names, mkfifo};
use crate::support::Env;

#[test]
fn a_hostile_own_lock_file_is_replaced_or_refused() {
    for kind in ALL {
        let bed = Bed::new();
        let lock = bed.at("a.md.lock.claude");
        plant(&lock, kind, &bed.victim());
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        if kind.replaceable() {
            expect(&out, 0);
            let meta = std::fs::symlink_metadata(&lock).unwrap();
            assert!(meta.is_file(), "{kind:?}");
            let text = std::fs::read_to_string(&lock).unwrap();
            assert!(text.starts_with("Agent: claude\nlocked_at: "), "{text}");
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
            assert!(std::fs::symlink_metadata(&lock).is_err());
        } else {
            expect(&out, 1);
            assert!(out.stderr.contains("a.md.lock.claude"), "{}", out.stderr);
            let out = bed.run(Some("claude"), &["unlock", "a.md"]);
            expect(&out, 1);
            assert!(out.stderr.contains("a.md.lock.claude"), "{}", out.stderr);
        }
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

/// `lock` (and `run`, which locks first) refuses a FILE that is a FIFO, a folder, or a symlink
/// to one, as `write` and `restore` do: exit 2 naming the file, and nothing written (no lock,
/// no backup, no presence), all or nothing with the regular files named beside it.
#[test]
fn lock_and_run_refuse_a_fifo_or_a_folder() {
    use std::os::unix::fs::FileTypeExt;
    let env = Env::new();
    if !mkfifo(&env, "pipe") {
        return;
    }
    std::fs::create_dir(env.path("dir")).unwrap();
    std::os::unix::fs::symlink("pipe", env.path("link")).unwrap();
    env.write("f.txt", "x\n");
    for (arg, shown) in [("pipe", "pipe"), ("dir", "dir"), ("link", "pipe")] {
        env.agent("claude")
            .args(["lock", "f.txt", arg])
            .code(2)
            .stderr_has(&format!(
                "error: invalid path `{shown}`: it is not a regular file"
            ));
        env.agent("claude")
            .args(["run", arg, "--", "touch", "ran"])
            .code(2)
            .stderr_has(&format!("`{shown}`: it is not a regular file"));
    }
    assert!(!env.exists("ran"), "the command ran without its lock");
    assert!(lock_names(&env).is_empty(), "{:?}", lock_names(&env));
    assert!(!env.exists(".claude_presence"));
    assert!(!env.exists("f.txt.bak") && !env.exists("pipe.bak") && !env.exists("dir.bak"));
    let kind = std::fs::symlink_metadata(env.path("pipe")).unwrap();
    assert!(kind.file_type().is_fifo(), "the FIFO was replaced");
    assert!(env.path("dir").is_dir());
    // The regular file alone is still free to lock.
    env.agent("claude").args(["lock", "f.txt"]).ok();
}

/// A pid that no process has now.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// Temporary files that a killed coord left beside a file are removed by the next `lock` or
/// `unlock` of a file in that folder; a command that only reads (`who`, `status`, `check`)
/// leaves every file as it is.
#[test]
fn a_lock_sweeps_the_temporary_files_of_a_killed_process_and_a_read_leaves_them() {
    let env = Env::new();
    env.write("sub/f.txt", "x\n");
    let temp = format!(
        "sub/{}half{}",
        coord::layout::temp_prefix(coord::host::host_tag(), dead_pid()),
        coord::layout::TEMP_SUFFIX
    );
    env.write(&temp, "half-written\n");
    let before = env.snapshot();
    env.cmd().args(["who", "sub/f.txt"]).ok();
    env.cmd().args(["status"]).ok();
    env.cmd().args(["check", "--strict"]).ok();
    assert_eq!(env.snapshot(), before, "a read changed the workspace");

    env.agent("claude")
        .args(["lock", "sub/f.txt", "--no-backup"])
        .ok();
    assert!(!env.exists(&temp), "`lock` left {temp}");
    env.write(&temp, "half-written\n");
    env.agent("claude").args(["unlock", "sub/f.txt"]).ok();
    assert!(!env.exists(&temp), "`unlock` left {temp}");
    assert_eq!(env.read("sub/f.txt"), "x\n");
}

pub(crate) const T0: &str = "2026-01-28T01:00:00+01:00";

#[derive(Debug, Deserialize)]
pub(crate) struct StatusJson {
    pub(crate) root: String,
    pub(crate) agents: Vec<AgentJson>,
    pub(crate) locks: Vec<LockJson>,
    pub(crate) handshakes: Vec<serde_json::Value>,
    pub(crate) unread: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AgentJson {
    pub(crate) agent: String,
    pub(crate) name: String,
    pub(crate) status: String,
    pub(crate) heartbeat: Option<String>,
    pub(crate) working_on: Option<String>,
    pub(crate) current_file: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LockJson {
    pub(crate) file: String,
    pub(crate) agent: String,
    pub(crate) locked_at: Option<String>,
    pub(crate) state: String,
}

pub(crate) fn status(env: &Env) -> StatusJson {
    env.cmd().args(["status", "--json"]).ok().json()
}

/// Wait (bounded) until `cond` holds; panics with `what` when it never does.
#[track_caller]
pub(crate) fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for: {what}");
}

#[test]
fn lock_writes_a_backup_and_unlock_removes_only_the_lock() {
    let env = Env::new();
    env.write("docs/PROTOKOL.md", "original\n");
    env.agent("claude")
        .args(["lock", "docs/PROTOKOL.md"])
        .ok()
        .stdout_has("(backup docs/PROTOKOL.md.bak)");
    assert_eq!(env.read("docs/PROTOKOL.md.bak"), "original\n");
    env.write("docs/PROTOKOL.md", "edited\n");
    env.agent("claude")
        .args(["unlock", "docs/PROTOKOL.md"])
        .ok()
        .stdout_has("Lock released: docs/PROTOKOL.md");
    assert!(!env.exists("docs/PROTOKOL.md.lock.claude"));
    assert_eq!(env.read("docs/PROTOKOL.md.bak"), "original\n");
    assert_eq!(env.read("docs/PROTOKOL.md"), "edited\n");
    // --no-backup leaves the old backup alone; a file that does not exist yet gets none.
    env.agent("claude")
        .args(["lock", "docs/PROTOKOL.md", "--no-backup"])
        .ok();
    assert_eq!(env.read("docs/PROTOKOL.md.bak"), "original\n");
    env.agent("claude").args(["lock", "new.md"]).ok();
    assert!(!env.exists("new.md.bak"));
}

#[test]
fn a_backup_never_follows_a_planted_symlink() {
    let env = Env::new();
    env.write("victim.txt", "precious\n");
    env.write("a.md", "content\n");
    std::os::unix::fs::symlink(env.path("victim.txt"), env.path("a.md.bak")).unwrap();
    env.agent("claude").args(["lock", "a.md"]).ok();
    assert_eq!(env.read("victim.txt"), "precious\n");
    assert_eq!(env.read("a.md.bak"), "content\n");
    assert!(
        !std::fs::symlink_metadata(env.path("a.md.bak"))
            .unwrap()
            .is_symlink()
    );
}

#[test]
fn check_strict_fails_on_stale_and_conflicting_locks() {
    let env = Env::new();
    env.agent("claude").args(["check", "--strict"]).ok();
    let old = (chrono::Local::now() - chrono::Duration::minutes(30)).to_rfc3339();
    env.write(
        "a.md.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {old}\nfile: a.md\n"),
    );
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("error: 1 lock problem")
        .stderr_has("`a.md` has a STALE lock of Gemini");
    // Without --strict the problem is a warning, not a failure.
    env.cmd()
        .arg("check")
        .ok()
        .stderr_has("warning: `a.md` has a STALE lock");
    std::fs::remove_file(env.path("a.md.lock.gemini")).unwrap();
    // Two live locks on one file: somebody bypassed the protocol.
    let now = chrono::Local::now().to_rfc3339();
    for who in ["gemini", "copilot"] {
        env.write(
            &format!("b.md.lock.{who}"),
            format!("Agent: {who}\nlocked_at: {now}\nfile: b.md\n"),
        );
    }
    let st = status(&env);
    assert!(st.locks.iter().all(|l| l.state == "CONFLICT"), "{st:?}");
    let out = env.cmd().args(["check", "--strict", "--json"]).code(4);
    let report: serde_json::Value = out.json();
    assert_eq!(report["ok"], false);
    assert_eq!(report["problems"].as_array().unwrap().len(), 2);
    out.stderr_has("CONFLICT");
}

#[test]
fn unlock_never_removes_someone_elses_live_lock() {
    let env = Env::new();
    env.agent("gemini").args(["lock", "a.md"]).ok();
    env.agent("claude")
        .args(["unlock", "a.md"])
        .code(3)
        .stderr_has("error: `a.md` is locked by gemini, not by claude");
    env.agent("claude")
        .args(["unlock", "a.md", "--force"])
        .code(3);
    assert!(env.exists("a.md.lock.gemini"));
    env.agent("claude")
        .args(["unlock", "b.md"])
        .ok()
        .stdout_has("b.md: not locked");
    // --force removes a STALE one, and says whose it was.
    let old = (chrono::Local::now() - chrono::Duration::minutes(30)).to_rfc3339();
    env.write(
        "c.md.lock.ollama",
        format!("Agent: Ollama\nlocked_at: {old}\nfile: c.md\n"),
    );
    env.agent("claude")
        .args(["unlock", "c.md"])
        .code(3)
        .stderr_has("hint: remove it with `coord unlock c.md --force`");
    env.agent("claude")
        .args(["unlock", "c.md", "--force"])
        .ok()
        .stdout_has("Stale lock of Ollama on c.md removed");
    assert!(!env.exists("c.md.lock.ollama"));
}

#[test]
fn unlock_without_files_releases_everything_held() {
    let env = Env::new();
    env.write("sub/x.md", "");
    env.agent("claude")
        .args(["lock", "a.md", "b.md", "sub/x.md"])
        .ok();
    env.agent("gemini").args(["lock", "c.md"]).ok();
    let out = env.agent("claude").arg("unlock").ok();
    for f in ["a.md", "b.md", "sub/x.md"] {
        out.stdout_has(&format!("Lock released: {f}"));
        assert!(!env.exists(&format!("{f}.lock.claude")));
    }
    assert!(env.exists("c.md.lock.gemini"));
    env.agent("claude")
        .arg("unlock")
        .ok()
        .stdout_has("No locks held");
    assert!(env.read(".claude_presence").contains("lock_status: FREE"));
}

#[test]
fn locking_again_refreshes_and_keeps_the_token() {
    let env = Env::new();
    env.agent("claude")
        .env("COORD_NOW", T0)
        .args(["lock", "a.md"])
        .ok();
    let first = env.read("a.md.lock.claude");
    env.agent("claude")
        .env("COORD_NOW", "2026-01-28T01:03:00+01:00")
        .args(["lock", "a.md"])
        .ok()
        .stdout_has("Lock refreshed: a.md");
    let second = env.read("a.md.lock.claude");
    let token = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("token:"))
            .unwrap()
            .to_string()
    };
    assert_eq!(token(&first), token(&second));
    assert!(second.contains("locked_at: 2026-01-28T01:03:00+01:00"));
}

#[test]
fn all_or_nothing_when_one_file_is_held() {
    let env = Env::new();
    env.agent("gemini").args(["lock", "b.md"]).ok();
    env.agent("claude")
        .args(["lock", "a.md", "b.md", "c.md", "--no-wait"])
        .code(3);
    assert!(!env.exists("a.md.lock.claude"));
    assert!(!env.exists("c.md.lock.claude"));
}

#[test]
fn lock_json_reports_what_was_taken() {
    let env = Env::new();
    env.write("a.md", "x");
    let got: serde_json::Value = env
        .agent("claude")
        .args(["lock", "a.md", "b.md", "--json"])
        .ok()
        .json();
    let acquired = got["acquired"].as_array().unwrap();
    assert_eq!(acquired.len(), 2);
    assert_eq!(acquired[0]["file"], "a.md");
    assert_eq!(acquired[0]["lock_file"], "a.md.lock.claude");
    assert_eq!(acquired[0]["backup"], "a.md.bak");
    assert!(acquired[1]["backup"].is_null());
    let rel: serde_json::Value = env
        .agent("claude")
        .args(["unlock", "--json", "a.md", "z.md"])
        .ok()
        .json();
    assert_eq!(rel["results"][0]["outcome"], "released");
    assert_eq!(rel["results"][1]["outcome"], "not_locked");
}

#[test]
fn a_lock_held_by_another_process_of_the_same_agent_is_not_shared() {
    let env = Env::new();
    env.write("f.txt", "x");
    let runner = env
        .agent("claude")
        .args([
            "run",
            "f.txt",
            "--",
            "sh",
            "-c",
            "touch started; exec sleep 30",
        ])
        .spawn();
    eventually("the run holds the lock", || env.exists("started"));
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("(process ");
    // SIGTERM: `coord run` passes it to its command and releases the lock.
    let status = std::process::Command::new("kill")
        .arg(runner.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let out = runner.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .ok();
}

/// A lock and a claim that follow another live process of the same agent (a `coord run` here)
/// are not that name's to give back from elsewhere: `unlock FILE` and `unlock PATTERN` are
/// refused (exit 3), and `unlock` of everything and the end of a client's turn (`Stop`) under
/// that name leave them, so that nobody takes the files while the run's command still edits them.
#[test]
fn a_lock_of_another_live_process_of_the_same_agent_is_not_released_from_elsewhere() {
    let env = Env::new();
    env.write("f.txt", "x");
    env.write("src/a.rs", "a");
    let script =
        ": > started; i=0; while [ ! -e stop ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done";
    let runner = (env.agent("claude"))
        .args(["run", "f.txt", "src/", "--", "/bin/sh", "-c", script])
        .spawn();
    eventually("the run holds its lock and claim", || env.exists("started"));
    let held = |env: &Env| {
        env.agent("bob")
            .args(["lock", "f.txt", "--no-wait"])
            .code(3);
        env.agent("bob")
            .args(["lock", "src/a.rs", "--no-wait"])
            .code(3);
        assert!(env.exists("f.txt.lock.claude"));
    };
    env.agent("claude")
        .args(["unlock", "f.txt"])
        .code(3)
        .stderr_has("(process ");
    env.agent("claude")
        .args(["unlock", "src/"])
        .code(3)
        .stderr_has("(process ");
    held(&env);
    env.agent("claude").args(["unlock"]).ok();
    held(&env);
    let cwd = env.root().display().to_string();
    let stop = serde_json::json!({"session_id": "5e55a0b1-0000", "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false});
    (env.agent("claude"))
        .args(["hook", "claude"])
        .stdin(stop.to_string())
        .ok();
    held(&env);
    // The run ends: it releases both, and they are free.
    env.write("stop", "");
    let out = runner.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("taken over"));
    env.agent("bob")
        .args(["lock", "f.txt", "src/a.rs", "--no-wait"])
        .ok();
}

/// Nor is such a lock another process's to edit under: `write`, `note` and `restore` of the same
/// agent from elsewhere are refused (exit 3) and change nothing while the run's command edits
/// the file; once the run is over, they go through.
#[test]
fn write_note_and_restore_do_not_edit_under_another_live_process_of_the_same_agent() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let script = ": > started; i=0; while [ ! -e stop ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo run >> f.txt";
    let runner = (env.agent("claude"))
        .args(["run", "f.txt", "--", "/bin/sh", "-c", script])
        .spawn();
    eventually("the run holds its lock", || env.exists("f.txt.lock.claude"));
    eventually("the run's command started", || env.exists("started"));
    env.write("f.txt.bak", "old\n");
    (env.agent("claude").args(["write", "f.txt"]))
        .stdin("new\n")
        .code(3);
    (env.agent("claude")
        .args(["note", "f.txt", "hello", "--no-wait"]))
    .code(3)
    .stderr_has("(process ");
    (env.agent("claude").args(["restore", "f.txt", "--no-wait"]))
        .code(3)
        .stderr_has("(process ");
    assert_eq!(env.read("f.txt"), "x\n");
    env.write("stop", "");
    let out = runner.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("f.txt"), "x\nrun\n");
    env.agent("claude")
        .args(["note", "f.txt", "hello", "--no-wait"])
        .ok();
}

/// One agent name used from two shells excludes nothing: the second `lock` refreshes the lock,
/// and says so on stderr; the same shell refreshing its own lock is quiet.
#[test]
fn a_lock_refreshed_from_another_shell_is_warned_about() {
    let env = Env::new();
    env.write("G", "x");
    env.agent("claude").args(["lock", "G"]).ok();
    assert!(env.read("G.lock.claude").contains("\norigin: "));
    let same = env.agent("claude").args(["lock", "G", "--no-wait"]).ok();
    same.stdout_has("Lock refreshed: G");
    assert!(!same.stderr.contains("another session"), "{}", same.stderr);
    // Another terminal: a new POSIX session (`setsid`), as a second shell window is.
    if std::process::Command::new("setsid")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success())
    {
        let out = env
            .agent("claude")
            .args(["lock", "G", "--no-wait"])
            .command();
        let mut other = std::process::Command::new("setsid");
        other.arg("-w").arg(out.get_program()).args(out.get_args());
        for (k, v) in out.get_envs() {
            match v {
                Some(v) => other.env(k, v),
                None => other.env_remove(k),
            };
        }
        let got = other.current_dir(env.root()).output().unwrap();
        assert_eq!(got.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert!(
            stderr.contains("warning: claude already holds `G` from another session"),
            "{stderr}"
        );
    } else {
        eprintln!("skipped the setsid half: no `setsid` on this machine");
    }
    // Another coord session (COORD_SESSION) is another origin too.
    env.agent("claude")
        .env("COORD_SESSION", "s-other")
        .args(["lock", "G", "--no-wait"])
        .ok()
        .stdout_has("Lock refreshed: G")
        .stderr_has("claude already holds `G` from another session");
}
