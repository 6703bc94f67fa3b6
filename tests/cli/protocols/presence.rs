//! Presence: the `.<agent>_presence` record, how it is judged (active, inactive, finished),
//! kept up to date by the commands an agent runs, and read in any shape (empty, binary, huge, a
//! FIFO, a folder, a symlink) without hanging, following or panicking.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::planted::{ALL, Bed, StatusDoc, expect, plant};
use crate::rigs::{as_nobody, open_to_all};
use crate::support::Env;

// ---------------------------------------------------------------------------------------------
// Exclusion

/// A presence another user cannot read is judged by its mtime, never as "no presence": a live
/// holder with a short TTL keeps its lock; once the file is old, the lock can be taken over.
#[test]
fn an_unreadable_presence_is_judged_by_its_mtime_not_as_absent() {
    let env = Env::new();
    env.write("F", "a's work\n");
    env.agent("a").args(["lock", "F", "--ttl", "1s"]).ok();
    let Some(_) = as_nobody(&env, "b") else {
        return;
    };
    open_to_all(env.root());
    // a's presence: fresh, but only a may read it.
    std::fs::set_permissions(
        env.path(".a_presence"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1300)); // older than its TTL of 1s
    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["lock", "F", "--no-wait"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "b took a live lock over: {stderr}"
    );
    assert!(stderr.contains("held by a"), "{stderr}");
    assert!(env.exists("F.lock.a") && !env.exists("F.lock.b"));

    // Ten minutes without a touch: INACTIVE by its mtime, and the stale lock goes.
    env.age(".a_presence", 600);
    let out = as_nobody(&env, "b")
        .unwrap()
        .args(["lock", "F", "--no-wait"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("a is INACTIVE"), "{stderr}");
    assert!(env.exists("F.lock.b") && !env.exists("F.lock.a"));
}

/// After a release, the presence lists exactly the locks still held, and names one of them as
/// the current file.
#[test]
fn unlock_brings_the_presence_up_to_date() {
    let env = Env::new();
    env.agent("a")
        .args(["lock", "x.md", "y.md", "--no-backup"])
        .ok();
    env.agent("a").args(["unlock", "x.md"]).ok();
    let p = env.read(".a_presence");
    assert!(p.contains("current_file: y.md"), "{p}");
    assert!(p.contains("locks: [\"y.md\"]"), "{p}");
    assert!(p.contains("lock_status: LOCKED"), "{p}");
    env.agent("a").args(["unlock", "y.md"]).ok();
    let p = env.read(".a_presence");
    assert!(
        p.contains("lock_status: FREE") && !p.contains("locks:"),
        "{p}"
    );
}

#[test]
fn status_and_check_report_hostile_presences_and_go_on() {
    for kind in ALL {
        let bed = Bed::new();
        bed.run(Some("good"), &["presence", "fine"]);
        plant(&bed.at(".evil_presence"), kind, &bed.victim());
        let before = (bed.inside(), bed.outside());

        let out = bed.run(None, &["status", "--json"]);
        expect(&out, 0);
        let doc: StatusDoc = out.json();
        assert!(doc.agents.iter().any(|a| a.agent == "good"), "{kind:?}");
        let listed = doc.unreadable.iter().find(|u| u.path == ".evil_presence");
        if kind.readable() {
            assert!(listed.is_none(), "{kind:?}: {:?}", doc.unreadable);
            assert!(doc.agents.iter().any(|a| a.agent == "evil"), "{kind:?}");
        } else {
            let u = listed.unwrap_or_else(|| panic!("{kind:?} not listed: {:?}", doc.unreadable));
            assert!(!u.why.is_empty());
        }
        let human = bed.run(None, &["status"]);
        expect(&human, 0);
        let check = bed.run(Some("good"), &["check", "--json"]);
        expect(&check, 0);
        assert!(!check.stdout.contains("panicked"));
        assert_eq!(
            (bed.inside(), bed.outside()),
            before,
            "{kind:?}: status wrote"
        );
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_own_presence_is_replaced_or_refused_never_followed() {
    for kind in ALL {
        let bed = Bed::new();
        plant(&bed.at(".claude_presence"), kind, &bed.victim());
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md"]);
        if kind.replaceable() {
            expect(&out, 0);
            let text = std::fs::read_to_string(bed.at(".claude_presence")).unwrap();
            assert!(
                text.starts_with("Agent: claude\nstatus: ACTIVE\n"),
                "{kind:?}: {text}"
            );
            assert!(text.contains("lock_status: LOCKED"), "{kind:?}: {text}");
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
        } else {
            // A folder stands where the presence belongs: refused, and all or nothing.
            expect(&out, 1);
            assert!(out.stderr.contains("error: "), "{}", out.stderr);
            assert!(out.stderr.contains(".claude_presence"), "{}", out.stderr);
            assert!(!bed.at("a.md.lock.claude").exists(), "lock left behind");
            let presence = bed.run(Some("claude"), &["presence", "x"]);
            expect(&presence, 1);
            assert!(presence.stderr.contains(".claude_presence"));
        }
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

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
