//! Locks coord did not make: a `FILE.lock.<agent>` written by hand or by an older tool, in any
//! spelling, size or name, is a lock like coord's own, for every command.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::locks::lock_unlock::status;
use crate::rigs::{as_nobody, local_stamp, now_stamp, open_to_all, seed_lock};
use crate::support::Env;

/// A lock in the seed's form, written by hand (no token), dated now.
fn hand_made_lock(env: &Env, file: &str, name: &str) -> String {
    let lock = format!("{file}.lock.{name}");
    env.write(&lock, seed_lock(file, name, &local_stamp()));
    lock
}

/// `note` and `restore` use an agent's hand-made lock as they find it, and leave it: a lock the
/// command did not take itself is never released by it.
#[test]
fn note_and_restore_keep_a_hand_made_lock() {
    let env = Env::new();
    env.write("F", "first\n");
    env.write("F.bak", "older\n");
    let lock = hand_made_lock(&env, "F", "Claude");
    let before = env.read(&lock);

    env.agent("claude").args(["note", "F", "hi"]).ok();
    assert!(
        env.read("F").ends_with("[claude] hi\n"),
        "{}",
        env.read("F")
    );
    assert_eq!(env.read(&lock), before, "the hand-made lock was touched");
    env.agent("gemini")
        .args(["lock", "F", "--no-wait"])
        .code(3)
        .stderr_has("held by Claude");

    env.agent("claude").args(["restore", "F"]).ok();
    assert_eq!(env.read("F"), "older\n");
    assert_eq!(env.read(&lock), before, "the hand-made lock was touched");
    env.agent("gemini")
        .args(["lock", "F", "--no-wait"])
        .code(3)
        .stderr_has("held by Claude");
    assert!(!env.exists("F.lock.gemini") && !env.exists("F.lock.claude"));
}

/// `write` honours the agent's own hand-made lock, fenced on that lock file: the write commits
/// while it stands, and is refused (content kept) once it was released and taken by another.
#[test]
fn write_honours_a_hand_made_own_lock_and_fences_on_it() {
    let env = Env::new();
    env.write("F", "old\n");
    let lock = hand_made_lock(&env, "F", "Claude");
    env.agent("claude").args(["write", "F"]).stdin("x\n").ok();
    assert_eq!(env.read("F"), "x\n");
    assert!(env.exists(&lock));

    // The lock goes and gemini takes F while claude's content still streams in.
    let mut child = env
        .agent("claude")
        .args(["write", "F"])
        .command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"late ").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(env.path(&lock)).unwrap();
    env.agent("gemini").args(["lock", "F", "--no-wait"]).ok();
    env.agent("gemini")
        .args(["write", "F"])
        .stdin("gemini's\n")
        .ok();
    std::io::Write::write_all(&mut stdin, b"claude\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("F"), "gemini's\n");
    assert_eq!(env.read("F.rejected.claude"), "late claude\n");
}

/// A lock made by hand (no token) fences a `coord write` on the lock file itself: rewritten
/// in place, or replaced by another file with the same text, it is no longer the lock the
/// write started under, and the content goes to `FILE.rejected.<agent>`.
#[test]
fn a_hand_made_lock_rewritten_or_replaced_mid_write_fences_the_write() {
    use std::io::Write;
    for how in ["rewritten in place", "replaced by a copy"] {
        let env = Env::new();
        env.write("F", "old\n");
        let text = format!(
            "Agent: Claude\nlocked_at: {}\nfile: F\n",
            chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
        );
        env.write("F.lock.Claude", &text);
        let mut child = env
            .agent("claude")
            .args(["write", "F"])
            .command()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"new ").unwrap();
        stdin.flush().unwrap();
        // The fence is read before the content is spooled: wait for the spool file.
        crate::support::eventually("the write to spool its input", || {
            std::fs::read_dir(env.root()).unwrap().flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(".coord-") && name.ends_with(".tmp")
            })
        });
        let lock = env.path("F.lock.Claude");
        if how == "rewritten in place" {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&lock)
                .unwrap();
            f.write_all(format!("{text}reason: again\n").as_bytes())
                .unwrap();
        } else {
            // A new file (made while the old one still exists, so not on its inode) with the
            // same text, renamed over the lock.
            let copy = env.path("lock-copy");
            std::fs::write(&copy, &text).unwrap();
            std::fs::rename(&copy, &lock).unwrap();
        }
        stdin.write_all(b"content\n").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "lock {how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(env.read("F"), "old\n", "lock {how}");
        assert_eq!(env.read("F.rejected.claude"), "new content\n", "lock {how}");
    }
}

/// Lock records are read up to a cap of 64 KiB: a hand-made lock of exactly that size is read
/// whole, so it is the agent's lock and fences its `write` like any other.
#[test]
fn a_hand_made_lock_of_exactly_64_kib_is_the_agents_lock() {
    let env = Env::new();
    env.write("F", "old\n");
    let mut text = format!(
        "Agent: Claude\nlocked_at: {}\nfile: F\nnote: ",
        chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
    );
    text.push_str(&"x".repeat(64 * 1024 - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), 64 * 1024);
    env.write("F.lock.Claude", &text);
    env.agent("claude")
        .args(["write", "F"])
        .stdin("new\n")
        .ok()
        .stdout_has("Written: F");
    assert_eq!(env.read("F"), "new\n");
    assert_eq!(env.read("F.lock.Claude"), text, "the lock was changed");
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

#[test]
fn a_fresh_hand_made_lock_is_honoured() {
    let env = Env::new();
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    env.write(
        "SHARED.txt.lock.gemini",
        format!("Agent: Gemini\nlocked_at: {now}\nfile: SHARED.txt\n"),
    );
    let before = env.snapshot();
    env.agent("claude")
        .args(["lock", "SHARED.txt", "--no-wait"])
        .code(3)
        .stderr_has("error: lock on `SHARED.txt` is held by Gemini since")
        .stderr_has("hint: wait with `coord lock SHARED.txt --wait 5m`");
    let after = env.snapshot();
    let new: Vec<_> = after
        .keys()
        .filter(|k| !before.contains_key(*k) && !k.starts_with(".coord"))
        .collect();
    assert!(
        new.iter().all(|k| k.as_str() == ".claude_presence"),
        "{new:?}"
    );
    assert!(!env.exists("SHARED.txt.lock.claude"));
}

#[test]
fn a_hand_made_lock_spelled_with_capitals_is_honoured() {
    let env = Env::new();
    let now = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    env.write(
        "X.md.lock.Claude",
        format!("Agent: Claude\nlocked_at: {now}\nfile: X.md\n"),
    );
    env.agent("gemini")
        .args(["lock", "X.md", "--no-wait"])
        .code(3)
        .stderr_has("held by Claude");
    let st = status(&env);
    assert_eq!(st.locks.len(), 1);
    assert_eq!(
        (st.locks[0].agent.as_str(), st.locks[0].state.as_str()),
        ("claude", "LIVE")
    );
    // Its owner, using coord, takes it up under the canonical name; no second lock stays beside.
    env.agent("claude")
        .args(["lock", "X.md"])
        .ok()
        .stdout_has("Lock refreshed");
    assert!(env.exists("X.md.lock.claude"));
    assert!(!env.exists("X.md.lock.Claude"));
}

/// A claim is not taken over a lock made by hand in a folder it claims (such a lock is in no
/// index: the claimed folder is looked through), and a stale one does not stand in its way.
#[test]
fn a_claim_sees_locks_made_by_hand_in_the_folders_it_claims() {
    let env = Env::new();
    env.write("src/auth/deep/x.rs", "x\n");
    env.write("src/auth/old.rs", "o\n");
    let lock = hand_made_lock(&env, "src/auth/deep/x.rs", "Bob");
    for pattern in ["src/auth/", "src/**/*.rs", "**/x.rs"] {
        env.agent("alice")
            .args(["lock", pattern, "--no-wait"])
            .code(3)
            .stderr_has("Bob")
            .stderr_has("src/auth/deep/x.rs");
    }
    assert!(!env.exists(".coord/claims") || !env.read(".coord/claims").contains("alice"));
    // A pattern that does not match the hand-made lock's file is free.
    env.agent("alice").args(["lock", "src/**/*.sql"]).ok();
    // Once the lock made by hand is old enough to be stale, the claim is taken and takes the
    // stale lock over, saying from whom (left in place, it would be LIVE again under the claim
    // once its holder came back: two holders of one file, #45).
    env.write(
        &lock,
        seed_lock("src/auth/deep/x.rs", "Bob", "2020-01-01T00:00:00"),
    );
    env.agent("alice")
        .args(["lock", "src/auth/"])
        .ok()
        .stderr_has("note: took over the stale lock of Bob on `src/auth/deep/x.rs`");
    assert!(!env.exists(&lock));
}
