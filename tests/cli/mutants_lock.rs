//! Locks and the presence judgement at the edges the other tests did not reach: each test here
//! fails on a realistic bug that `cargo mutants` showed the rest of the suite would let through
//! (see docs/reliability.md, "Mutation testing").

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use crate::defects::{as_nobody, open_to_all};
use crate::support::Env;

fn field(env: &Env, agent: &str, key: &str) -> Option<String> {
    env.read(&format!(".{agent}_presence"))
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{key}:"))
                .map(|v| v.trim().to_string())
        })
}

/// The display name follows the spelling last given, except that a name given in lower case
/// does not replace a capitalised one of the same id.
#[test]
fn the_display_name_follows_the_spelling_given() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("claude"));
    env.agent("Claude").args(["unlock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("Claude"));
    env.agent("claude").args(["lock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("Claude"));
    env.agent("CLAUDE").args(["unlock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "Agent").as_deref(), Some("CLAUDE"));
}

/// A lock names its first file as the agent's `current_file`; after its last unlock the
/// presence is back in the seed's form: no `locks` line.
#[test]
fn the_last_unlock_leaves_a_presence_in_the_seed_form() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    env.write("b.txt", "x\n");
    env.agent("claude").args(["lock", "a.txt", "b.txt"]).ok();
    assert!(field(&env, "claude", "locks").is_some());
    assert_eq!(
        field(&env, "claude", "current_file").as_deref(),
        Some("a.txt")
    );
    env.agent("claude").args(["unlock", "a.txt"]).ok();
    assert_eq!(
        field(&env, "claude", "locks").as_deref(),
        Some(r#"["b.txt"]"#)
    );
    env.agent("claude").args(["unlock", "b.txt"]).ok();
    let text = env.read(".claude_presence");
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        [
            "Agent",
            "status",
            "started",
            "heartbeat",
            "working_on",
            "current_file",
            "lock_status"
        ],
        "{text}"
    );
    assert_eq!(
        field(&env, "claude", "lock_status").as_deref(),
        Some("FREE")
    );
}

/// An agent that said it is done stays FINISHED through later commands that only update its
/// locks; `startup` makes it ACTIVE again.
#[test]
fn finished_stays_finished_until_startup() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("claude").args(["shutdown"]).ok();
    assert_eq!(field(&env, "claude", "status").as_deref(), Some("FINISHED"));
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    assert_eq!(field(&env, "claude", "status").as_deref(), Some("FINISHED"));
    env.agent("claude").args(["startup"]).ok();
    assert_eq!(field(&env, "claude", "status").as_deref(), Some("ACTIVE"));
}

/// "held by X since T": `HH:MM` for a lock taken today, the date too for an older one.
#[test]
fn held_since_shows_the_date_only_for_another_day() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("gemini")
        .env("TZ", "UTC")
        .env("COORD_NOW", "2026-01-27T23:50:00+00:00")
        .args(["lock", "f.txt", "--ttl", "1h"])
        .ok();
    env.agent("claude")
        .env("TZ", "UTC")
        .env("COORD_NOW", "2026-01-27T23:58:00+00:00")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("is held by gemini since 23:50");
    env.agent("claude")
        .env("TZ", "UTC")
        .env("COORD_NOW", "2026-01-28T00:10:00+00:00")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has("is held by gemini since 2026-01-27 23:50");
}

/// A wait that ran out is reported in whole seconds.
#[test]
fn a_wait_that_ran_out_is_reported_in_whole_seconds() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("gemini").args(["lock", "f.txt"]).ok();
    env.agent("claude")
        .args(["lock", "f.txt", "--wait", "1s"])
        .code(3)
        .stderr_has("gave up waiting for `f.txt` after 1s: held by gemini");
}

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

/// `status --json` shows a lock's `locked_at` as written (a hand-made one has no offset) and
/// the session it was taken in.
#[test]
fn status_json_shows_locked_at_and_session_as_written() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write(
        "f.txt.lock.claude",
        "Agent: Claude\nlocked_at: 2026-01-28T01:00:00\nfile: f.txt\nsession: s-123\nttl: 100000h\n",
    );
    let out = env.agent("gemini").args(["status", "--json"]).ok();
    let status: serde_json::Value = out.json();
    let lock = &status["locks"][0];
    assert_eq!(lock["file"], "f.txt");
    assert_eq!(lock["locked_at"], "2026-01-28T01:00:00");
    assert_eq!(lock["session"], "s-123");
    assert_eq!(lock["state"], "LIVE");
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

/// `status` and `check` never look inside `.git` or `.coord`: a file there named like a lock
/// (a branch or a ref named so, a file dropped in `.coord/`) is no lock on anything, and a
/// strict check in CI does not fail on it.
#[test]
fn lock_shaped_names_inside_git_and_coord_are_not_locks() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let old = "Agent: Gemini\nlocked_at: 2000-01-01T00:00:00+00:00\nfile: x\n";
    env.write(".git/refs/heads/f.txt.lock.gemini", old);
    env.write(".coord/f.txt.lock.gemini", old);
    env.write("docs/a.md.lock.gemini", old);
    let out = env.cmd().args(["status", "--json"]).ok();
    let status: serde_json::Value = out.json();
    let files: Vec<&str> = status["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["docs/a.md"], "{}", out.stdout);
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("`docs/a.md` has a STALE lock of Gemini")
        .stdout_lacks("refs");
    std::fs::remove_file(env.path("docs/a.md.lock.gemini")).unwrap();
    env.cmd().args(["check", "--strict"]).ok();
}

/// A LIVE lock whose file name is not valid UTF-8 is shown with the bad bytes replaced and
/// flagged, and fails a strict check though it is neither stale nor in conflict (no tool can
/// name it reliably); `lock` refuses such a FILE name outright (usage error, exit 2, nothing
/// written).
#[test]
fn a_live_lock_with_a_non_utf8_name_fails_a_strict_check() {
    let env = Env::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt.lock.gemini");
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%:z");
    std::fs::write(
        env.root().join(name),
        format!("Agent: Gemini\nlocked_at: {now}\nfile: caf.txt\n"),
    )
    .unwrap();
    let out = env.cmd().args(["status", "--json"]).ok();
    let status: serde_json::Value = out.json();
    assert_eq!(
        status["locks"][0]["file"], "caf\u{FFFD}.txt",
        "{}",
        out.stdout
    );
    assert_eq!(status["locks"][0]["state"], "LIVE", "{}", out.stdout);
    env.cmd()
        .args(["status"])
        .ok()
        .stdout_has("caf\u{FFFD}.txt")
        .stdout_has("not valid UTF-8");
    env.cmd()
        .args(["check", "--strict"])
        .code(4)
        .stderr_has("`caf\u{FFFD}.txt` is locked by Gemini; its name is not valid UTF-8");
    // Not strict: reported, not failed.
    env.cmd().args(["check"]).ok();

    let file = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(env.root().join(file), "x\n").unwrap();
    let before = env.snapshot();
    env.agent("claude")
        .arg("lock")
        .arg(file)
        .code(2)
        .stderr_has("error: invalid UTF-8");
    assert_eq!(env.snapshot(), before);
}

/// A lock file another user cannot read (written under umask 077) is still a lock: `status`
/// shows it LIVE (dated by its mtime) and lists it as unreadable with the reason, and another
/// agent is refused the file.
#[test]
fn a_lock_file_another_user_cannot_read_is_listed_and_still_holds() {
    let env = Env::new();
    env.write("F", "a's work\n");
    env.agent("a").args(["lock", "F"]).ok();
    let Some(_) = as_nobody(&env, "b") else {
        return;
    };
    open_to_all(env.root());
    std::fs::set_permissions(env.path("F.lock.a"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["locks"][0]["file"], "F", "{status}");
    assert_eq!(status["locks"][0]["state"], "LIVE", "{status}");
    let unreadable = status["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{status}");
    assert_eq!(unreadable[0]["path"], "F.lock.a");
    assert!(
        unreadable[0]["why"]
            .as_str()
            .unwrap()
            .contains("ermission denied"),
        "{status}"
    );
    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("F.lock.a"), "{text}");

    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["lock", "F", "--no-wait"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("held by a"), "{stderr}");
    assert!(!env.exists("F.lock.b"));
}

/// A presence file that cannot be read as a record (here: larger than any record) is written
/// anew by the release, so the agent shows as free again; the lock goes either way.
#[test]
fn a_release_rewrites_a_presence_it_cannot_read() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.write(".claude_presence", "junk ".repeat(20_000));
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    assert!(!env.exists("f.txt.lock.claude"));
    assert_eq!(
        field(&env, "claude", "lock_status").as_deref(),
        Some("FREE")
    );
    assert!(
        env.read(".claude_presence").len() < 1000,
        "the junk was replaced"
    );
}

/// A lock that turns stale by age while someone waits for it is taken over then, not when the
/// wait runs out: nothing changes on disk when a TTL passes, so the waiter must look again by
/// itself. (The holder left for good: its presence is ten minutes old.)
#[test]
fn a_lock_that_goes_stale_while_waited_for_is_taken_over_then() {
    let env = Env::new();
    env.write("F", "x\n");
    let now = chrono::Local::now();
    let then = (now - chrono::Duration::minutes(10)).format("%Y-%m-%dT%H:%M:%S%:z");
    env.write(
        ".gemini_presence",
        format!(
            "Agent: Gemini\nstatus: ACTIVE\nstarted: {then}\nheartbeat: {then}\nworking_on: -\ncurrent_file: F\nlock_status: LOCKED\n"
        ),
    );
    env.write(
        "F.lock.gemini",
        format!(
            "Agent: Gemini\nlocked_at: {}\nfile: F\nttl: 2s\n",
            now.format("%Y-%m-%dT%H:%M:%S%:z")
        ),
    );
    // The wait would last five minutes; the lock is stale after two seconds.
    let out = crate::hostile::bounded(
        env.agent("claude").args(["lock", "F", "--wait", "5m"]),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("took over the stale lock of Gemini on `F` (older than its TTL of 2s and gemini is INACTIVE)"),
        "{}",
        out.stderr
    );
    assert!(env.exists("F.lock.claude") && !env.exists("F.lock.gemini"));
}

/// The local time now, as coord writes `locked_at`.
fn now_stamp() -> String {
    chrono::Local::now()
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
}

/// An agent that made its lock by hand (the seed's way) takes it into coord with `coord lock`
/// even while another agent waits in line for the file: refreshing a lock one holds never
/// queues behind those who wait for it (they wait for us).
#[test]
fn a_hand_made_lock_is_refreshed_while_another_agent_waits_for_the_file() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write(
        "f.txt.lock.claude",
        format!("Agent: Claude\nlocked_at: {}\nfile: f.txt\n", now_stamp()),
    );
    let waiter = env
        .agent("gemini")
        .args(["lock", "f.txt", "--wait", "30s"])
        .spawn();
    crate::support::eventually("gemini waits", || {
        std::fs::read_to_string(env.path(".gemini_presence"))
            .is_ok_and(|p| p.contains("lock_status: WAITING"))
    });
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .ok()
        .stdout_has("Lock refreshed: f.txt");
    assert!(env.read("f.txt.lock.claude").contains("\ntoken: "));
    assert!(!env.exists("f.txt.lock.gemini"));
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    let got = crate::support::finish(waiter);
    assert_eq!(got.code, Some(0), "{}", got.stderr);
    assert!(env.exists("f.txt.lock.gemini") && !env.exists("f.txt.lock.claude"));
}

/// Two `coord run`s of one agent on one file exclude each other: the lock follows the first
/// run's process, and the second run, another process, is refused (exit 3) without running
/// its command.
#[test]
fn two_runs_of_one_agent_exclude_each_other() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    let run = crate::support::hold_with_run(&env, "claude", "f.txt");
    env.agent("claude")
        .args([
            "run",
            "f.txt",
            "--wait",
            "0",
            "--",
            "/bin/sh",
            "-c",
            ": > second",
        ])
        .code(3)
        .stderr_has("is held by claude (process ");
    assert!(!env.exists("second"), "the second run ran its command");
    crate::support::stop_run(&env, run);
    assert!(!env.exists("f.txt.lock.claude"));
}

/// A lock of ours that follows a process on another machine (a folder shared over the network,
/// one agent name on both) keeps us out here as one of another process here does: a process
/// of another machine is neither this one nor one of its ancestors, even when its number is
/// that of one of them or of our session (small process numbers repeat across containers).
#[test]
fn a_lock_that_follows_a_process_on_another_machine_keeps_the_same_name_out() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    // A number that is an ancestor of every coord this test starts: the test's own.
    let pid = std::process::id();
    let lock = format!(
        "Agent: Claude\nlocked_at: {}\nfile: f.txt\ntoken: 00000000000000aa\nttl: 1h\n\
         host: elsewhere.invalid\norigin: session 7\npid: {pid}\nsession: 7\n",
        now_stamp()
    );
    env.write("f.txt.lock.claude", &lock);
    let held = format!("is held by Claude (process {pid})");
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has(&held);
    // From inside a session whose process has that number here.
    env.agent("claude")
        .env("COORD_SESSION_PID", pid.to_string())
        .env("COORD_SESSION", "7")
        .args(["lock", "f.txt", "--no-wait"])
        .code(3)
        .stderr_has(&held);
    assert_eq!(env.read("f.txt.lock.claude"), lock);
}

/// Make `rel` with `text` unless it exists, in one step (a link to a finished temporary file),
/// as a careful agent following the seed makes its lock by hand.
fn create_whole(env: &Env, rel: &str, text: &str) -> bool {
    let tmp = env.path(".by-hand.tmp");
    std::fs::write(&tmp, text).unwrap();
    let made = std::fs::hard_link(&tmp, env.path(rel)).is_ok();
    std::fs::remove_file(&tmp).unwrap();
    made
}

/// A lock made by hand while `coord lock` takes many files at once is honoured: coord looks
/// once more after publishing its locks and, finding a live lock of another agent, withdraws
/// every lock of its own (all or nothing) rather than hold a file beside it. The agent making
/// its lock by hand does as the seed asks, and checks again after making it (withdrawing its
/// own if coord's is there), so whatever the timing one of the two ends up holding the file,
/// never both. A stale lock appearing meanwhile (a crashed agent's, brought back by a sync
/// tool) stops nothing.
#[test]
fn a_lock_made_by_hand_while_coord_takes_many_files_is_honoured() {
    // Enough files that coord is still publishing its locks when the hand-made one comes.
    let names: Vec<String> = (0..400).map(|i| format!("f{i:03}")).collect();
    let (first, last) = (&names[0], &names[names.len() - 1]);
    let (first_mine, last_mine) = (
        format!("{first}.lock.claude"),
        format!("{last}.lock.claude"),
    );
    let last_theirs = format!("{last}.lock.gemini");
    for stale in [false, true] {
        let env = Env::new();
        for n in &names {
            env.write(n, "x\n");
        }
        let locked_at = if stale {
            "2000-01-01T00:00:00+00:00".to_string()
        } else {
            now_stamp()
        };
        let theirs = format!("Agent: Gemini\nlocked_at: {locked_at}\nfile: {last}\n");
        let mut lock = env
            .agent("claude")
            .args(["lock", "--no-wait", "--no-backup"])
            .args(&names)
            .spawn();
        // As soon as coord's first lock appears, gemini looks at the last file and, finding
        // it free, makes its lock there; then looks again.
        while lock.try_wait().unwrap().is_none() {
            if env.exists(&first_mine) {
                if !env.exists(&last_mine)
                    && create_whole(&env, &last_theirs, &theirs)
                    && !stale
                    && env.exists(&last_mine)
                {
                    std::fs::remove_file(env.path(&last_theirs)).unwrap();
                }
                break;
            }
            std::thread::yield_now();
        }
        let out = crate::support::finish(lock);
        let mine = env.files_ending(".lock.claude");
        if stale {
            assert_eq!(out.code, Some(0), "{}", out.stderr);
            assert_eq!(mine.len(), names.len());
            continue;
        }
        assert!(
            !(env.exists(&last_mine) && env.exists(&last_theirs)),
            "claude and gemini both hold {last}: {}",
            out.stderr
        );
        match out.code {
            Some(0) => assert_eq!(mine.len(), names.len()),
            Some(3) => {
                out.stderr_has(&format!("`{last}` is held by Gemini"));
                assert!(mine.is_empty(), "{mine:?}");
            }
            other => panic!("exit {other:?}: {}", out.stderr),
        }
    }
}
