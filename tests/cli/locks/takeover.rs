//! Stale locks and takeover: when a lock counts as stale (its holder's presence, its age, its
//! process, dates out of any calendar), how exactly one agent takes it over whatever shape the
//! lock file has, and how the old holder is fenced off.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::Signal;

use crate::locks::lock_unlock::status;
use crate::planted::{ALL, Bed, Kind, LIMIT, StatusDoc, age_entry, bounded, expect, plant};
use crate::protocols::edit::{signal, temps, wait_until};
use crate::rigs::now_stamp;
use crate::support::Env;

/// A writer whose stale lock was taken over can never overwrite the new holder.
#[test]
fn a_taken_over_writer_is_fenced_off() {
    let env = Env::new();
    env.write("f.txt", "original\n");
    env.agent("a").args(["lock", "f.txt", "--ttl", "1s"]).ok();
    let mut writer = env
        .agent("a")
        .args(["write", "f.txt"])
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The temporary file appears once A has read its token and is reading stdin.
    wait_until("A is reading its input", || !temps(&env).is_empty());
    signal(&writer, Signal::STOP);

    // A looks gone: its heartbeat is old, and its 1 s TTL passes.
    let presence = env.read(".a_presence");
    let old: String = presence
        .lines()
        .map(|l| {
            if l.starts_with("heartbeat:") {
                "heartbeat: 2020-01-01T00:00:00+00:00".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    env.write(".a_presence", old + "\n");
    std::thread::sleep(Duration::from_millis(2200));

    env.agent("b")
        .args(["lock", "f.txt", "--wait", "0"])
        .ok()
        .stderr_has("took over the stale lock of a");
    env.agent("b")
        .args(["write", "f.txt"])
        .stdin("B's work\n")
        .ok();

    signal(&writer, Signal::CONT);
    {
        let mut stdin = writer.stdin.take().unwrap();
        stdin.write_all(b"A's late work\n").unwrap();
    }
    let out = writer.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {stderr}");
    assert!(stderr.contains("taken over by b"), "stderr: {stderr}");
    assert!(stderr.contains("f.txt.rejected.a"), "stderr: {stderr}");
    assert_eq!(env.read("f.txt"), "B's work\n");
    assert_eq!(env.read("f.txt.rejected.a"), "A's late work\n");
    assert_eq!(env.read("f.txt.bak"), "original\n");
}

#[test]
fn a_foreign_lock_file_of_any_kind_is_a_lock_and_a_stale_one_is_taken_over() {
    for kind in ALL {
        let bed = Bed::new();
        let lock = bed.at("a.md.lock.ghost");
        plant(&lock, kind, &bed.victim());
        let outside = bed.outside();

        // Fresh: a lock, whatever it is.
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        expect(&out, 3);
        assert!(out.stderr.contains("held by"), "{kind:?}: {}", out.stderr);
        let doc: StatusDoc = bed.run(None, &["status", "--json"]).json();
        assert!(
            doc.locks
                .iter()
                .any(|l| l.file == "a.md" && l.agent == "ghost" && l.state == "LIVE"),
            "{kind:?}: {doc:?}"
        );
        assert_eq!(
            doc.unreadable.iter().any(|u| u.path == "a.md.lock.ghost"),
            !kind.readable(),
            "{kind:?}: {doc:?}"
        );
        let check = bed.run(None, &["check", "--strict"]);
        expect(&check, 0);

        // An hour old, its holder without presence: stale.
        age_entry(&lock, 3600);
        let check = bed.run(None, &["check", "--strict"]);
        expect(&check, 4);
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        if kind == Kind::Dir {
            // A folder posing as a stale lock is a state coord cannot handle (exit 1): it is
            // neither taken over nor removed, and nothing is written.
            expect(&out, 1);
            assert!(out.stderr.contains("is a folder"), "{}", out.stderr);
            assert!(!bed.at("a.md.lock.claude").exists());
            let force = bed.run(Some("claude"), &["unlock", "a.md", "--force"]);
            expect(&force, 1);
            assert!(bed.at("a.md.lock.ghost").is_dir());
        } else {
            expect(&out, 0);
            assert!(
                out.stderr.contains("took over the stale lock"),
                "{kind:?}: {}",
                out.stderr
            );
            assert!(std::fs::symlink_metadata(&lock).is_err(), "{kind:?}");
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
        }
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
        let temps: Vec<String> = bed
            .inside()
            .into_keys()
            .filter(|k| k.ends_with(".tmp"))
            .collect();
        assert!(temps.is_empty(), "{kind:?}: {temps:?}");
    }
}

#[test]
fn unlock_force_removes_a_stale_hostile_lock_but_never_its_target() {
    for kind in [
        Kind::Empty,
        Kind::Binary,
        Kind::Fifo,
        Kind::Socket,
        Kind::Symlink,
    ] {
        let bed = Bed::new();
        let lock = bed.at("a.md.lock.ghost");
        plant(&lock, kind, &bed.victim());
        age_entry(&lock, 3600);
        let out = bed.run(Some("claude"), &["unlock", "a.md", "--force"]);
        expect(&out, 0);
        assert!(
            out.stdout.contains("Stale lock of"),
            "{kind:?}: {}",
            out.stdout
        );
        assert!(std::fs::symlink_metadata(&lock).is_err());
        bed.assert_victim_untouched();
    }
}

#[test]
fn dates_far_in_the_future_do_not_make_a_lock_eternal() {
    let bed = Bed::new();
    std::fs::write(
        bed.at("a.md.lock.ghost"),
        "Agent: Ghost\nlocked_at: 2999-01-01T00:00:00+00:00\nfile: a.md\n",
    )
    .unwrap();
    std::fs::write(
        bed.at(".ghost_presence"),
        "Agent: Ghost\nstatus: ACTIVE\nheartbeat: 2999-01-01T00:00:00+00:00\n",
    )
    .unwrap();
    let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
    expect(&out, 0);
    assert!(out.stderr.contains("in the future"), "{}", out.stderr);
}

#[test]
fn an_mtime_beyond_any_calendar_is_not_a_crash() {
    // tmpfs keeps any 64-bit mtime; ext4 clamps it. Use /dev/shm when it is there.
    let Ok(dir) = tempfile::Builder::new()
        .prefix("coord-test-")
        .tempdir_in("/dev/shm")
    else {
        return;
    };
    let root = dir.path();
    std::fs::write(root.join("a.md.lock.ghost"), "no date here\n").unwrap();
    std::fs::write(root.join(".ghost_presence"), "Agent: Ghost\n").unwrap();
    for name in ["a.md.lock.ghost", ".ghost_presence"] {
        let f = std::fs::File::options()
            .write(true)
            .open(root.join(name))
            .unwrap();
        let far = std::time::UNIX_EPOCH + Duration::from_secs(1 << 60);
        if f.set_modified(far).is_err() {
            return;
        }
    }
    let env = Env::new();
    for args in [
        &["status"][..],
        &["check", "--strict"],
        &["lock", "a.md", "--no-wait"],
    ] {
        let out = bounded(
            env.agent("claude")
                .env("COORD_DIR", root)
                .cwd(root)
                .args(args),
            LIMIT,
        );
        assert!(
            !out.stderr.contains("panicked") && out.code != Some(101),
            "{}: {}",
            out.shown,
            out.stderr
        );
    }
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
    let out = crate::planted::bounded(
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

#[test]
fn a_hand_made_stale_lock_is_taken_over() {
    let env = Env::new();
    env.write("SHARED.txt", "x\n");
    // Written by an agent following the seed by hand, 10 minutes ago, offset-less time.
    let old = (chrono::Local::now() - chrono::Duration::minutes(10))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    env.write(
        "SHARED.txt.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {old}\nfile: SHARED.txt\n"),
    );
    let st = status(&env);
    assert_eq!(st.locks.len(), 1);
    assert_eq!(st.locks[0].state, "STALE");
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .ok()
        .stdout_has("Lock acquired: SHARED.txt")
        .stderr_has("took over the stale lock of Gemini");
    assert!(!env.exists("SHARED.txt.lock.gemini"));
    assert!(env.exists("SHARED.txt.lock.claude"));
}

#[test]
fn an_old_lock_is_kept_while_its_holder_heartbeats() {
    let env = Env::new();
    let old = (chrono::Local::now() - chrono::Duration::minutes(10)).to_rfc3339();
    env.write(
        "SHARED.txt.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {old}\nfile: SHARED.txt\n"),
    );
    env.agent("gemini")
        .args(["presence", ".", "long task"])
        .ok();
    assert_eq!(status(&env).locks[0].state, "LIVE");
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .code(3)
        .stderr_has("held by Gemini")
        .stderr_has("working on long task");
    env.agent("claude").args(["check", "--strict"]).ok();
    // Once the heartbeat is older than two minutes, the lock is stale.
    let hb = (chrono::Local::now() - chrono::Duration::minutes(3)).to_rfc3339();
    let p = env.read(".gemini_presence");
    let p: String = p
        .lines()
        .map(|l| {
            if l.starts_with("heartbeat:") {
                format!("heartbeat: {hb}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    env.write(".gemini_presence", p);
    assert_eq!(status(&env).locks[0].state, "STALE");
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .ok();
}

#[test]
fn a_forged_session_pid_does_not_tie_a_lock_to_a_stranger() {
    let env = Env::new();
    env.agent("alice")
        .env("COORD_SESSION_PID", "999999")
        .env("COORD_SESSION", "forged")
        .args(["lock", "a.md"])
        .ok();
    let record = env.read("a.md.lock.alice");
    assert!(!record.contains("pid:"), "{record}");
    env.agent("bob").args(["lock", "a.md", "--no-wait"]).code(3);
}
