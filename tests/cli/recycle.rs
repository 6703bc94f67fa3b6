//! Files kept for reuse (`.coord/recycled/`): what replaces swap out of coord's records is kept
//! and used again, cut to its new content; nothing planted there is used or followed; a user's
//! file is never kept; a command that publishes nothing leaves the folder as it found it.

use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::support::{Env, outside, temps_in};

/// The inode numbers of the files kept for reuse.
fn kept(env: &Env) -> BTreeSet<u64> {
    std::fs::read_dir(env.path(".coord/recycled"))
        .map(|list| {
            list.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.ino())
                .collect()
        })
        .unwrap_or_default()
}

/// One turn of claude's: a presence saying `round N`, then `file` locked and unlocked (each
/// replaces or removes records, so files are kept and taken).
fn turn(env: &Env, round: usize, file: &str) {
    env.agent("claude")
        .args(["presence", ".", &format!("round {round}")])
        .ok();
    env.agent("claude").args(["lock", file]).ok();
    env.agent("claude").args(["unlock", file]).ok();
}

fn ino(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).unwrap().ino()
}

#[test]
fn a_replaced_presence_is_kept_and_used_again_cut_to_its_new_content() {
    let env = Env::new();
    let long = "a task with a long description ".repeat(20);
    env.agent("claude").args(["presence", ".", &long]).ok();
    let first = ino(&env.path(".claude_presence"));
    env.agent("claude").args(["presence", ".", "short"]).ok();
    let before = kept(&env);
    assert!(
        before.contains(&first),
        "the presence swapped out is kept: {before:?}"
    );
    // The next files published take them, whatever they are, and hold only what they say.
    env.write("a.md", "one\n");
    env.agent("gemini").args(["presence", ".", "next"]).ok();
    env.agent("gemini").args(["lock", "a.md"]).ok();
    let records = [
        ".gemini_presence",
        "a.md.lock.gemini",
        "a.md.bak",
        ".claude_presence",
    ];
    let reused: Vec<&str> = records
        .into_iter()
        .filter(|f| before.contains(&ino(&env.path(f))))
        .collect();
    assert!(
        !reused.is_empty(),
        "some of {records:?} are kept files: {before:?}, now {:?}",
        kept(&env)
    );
    for f in records {
        let text = env.read(f);
        assert!(!text.contains("long description"), "{f}: {text}");
        assert!(text.ends_with('\n'), "{f}: {text:?}");
    }
    env.agent("gemini")
        .args(["status", "--json"])
        .ok()
        .json::<serde_json::Value>();
    assert!(env.read(".gemini_presence").contains("working_on: next\n"));
    assert!(env.read("a.md.lock.gemini").starts_with("Agent: gemini\n"));
    assert_eq!(env.read("a.md.bak"), "one\n");
    assert_eq!(temps_in(env.root()), Vec::<String>::new());
    assert_eq!(temps_in(&env.path(".coord")), Vec::<String>::new());
}

#[test]
fn nothing_planted_among_the_kept_files_is_used_followed_or_removed() {
    let env = Env::new();
    env.write("a.md", "mine\n");
    let victim = outside().join(format!("recycle-victim-{}", std::process::id()));
    std::fs::write(&victim, "outside\n").unwrap();
    std::fs::create_dir_all(env.path(".coord/recycled/2")).unwrap();
    std::fs::write(env.path(".coord/recycled/2/inner"), "kept\n").unwrap();
    std::os::unix::fs::symlink(&victim, env.path(".coord/recycled/0")).unwrap();
    std::fs::hard_link(env.path("a.md"), env.path(".coord/recycled/1")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(env.path(".coord/recycled/3"))
        .status()
        .unwrap();
    assert!(fifo.success());
    for round in 0..3 {
        turn(&env, round, "b.md");
        env.agent("gemini").args(["lock", "b.md"]).ok();
        env.agent("gemini").args(["unlock", "b.md"]).ok();
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "outside\n");
    assert_eq!(env.read("a.md"), "mine\n");
    assert_eq!(std::fs::metadata(env.path("a.md")).unwrap().nlink(), 2);
    assert_eq!(env.read(".coord/recycled/2/inner"), "kept\n");
    assert!(
        std::fs::symlink_metadata(env.path(".coord/recycled/0"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(env.path(".coord/recycled/3"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(
        env.read(".claude_presence")
            .contains("working_on: round 2\n")
    );
    std::fs::remove_file(&victim).unwrap();
}

#[test]
fn a_users_file_that_coord_replaces_is_not_kept() {
    let env = Env::new();
    env.write("a.md", "one\n");
    env.agent("claude").args(["lock", "a.md"]).ok();
    let before = ino(&env.path("a.md"));
    env.agent("claude")
        .args(["write", "a.md"])
        .stdin("two\n")
        .ok();
    env.agent("claude").args(["note", "a.md", "done"]).ok();
    assert_eq!(env.read("a.md").lines().next(), Some("two"));
    assert!(!kept(&env).contains(&before), "{:?}", kept(&env));
}

#[test]
fn a_refused_lock_leaves_the_state_folder_as_it_was() {
    let env = Env::new();
    env.write("a.md", "one\n");
    env.agent("claude").args(["lock", "a.md"]).ok();
    // Some files kept already, and none.
    for with_kept in [false, true] {
        if with_kept {
            env.agent("claude").args(["presence", ".", "x"]).ok();
            assert!(!kept(&env).is_empty());
        }
        let before = env.snapshot();
        env.agent("gemini")
            .args(["lock", "a.md", "--no-wait"])
            .code(3);
        let mut after = env.snapshot();
        let mut was = before.clone();
        // A refusal is an event of the history: the log alone may change.
        let log = ".coord/history/events.jsonl";
        after.remove(log);
        was.remove(log);
        assert_eq!(
            after.keys().collect::<Vec<_>>(),
            was.keys().collect::<Vec<_>>()
        );
        assert_eq!(after, was);
    }
}

#[test]
fn a_link_in_place_of_the_folder_of_kept_files_is_not_followed() {
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "first"]).ok();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("0"), "precious\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), env.path(".coord/recycled")).unwrap();
    env.write("a.md", "one\n");
    for round in 0..3 {
        turn(&env, round, "a.md");
    }
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("0")).unwrap(),
        "precious\n"
    );
    let names: Vec<_> = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["0"], "nothing written through the link");
    assert!(
        env.read(".claude_presence")
            .contains("working_on: round 2\n")
    );
}

#[test]
fn a_reused_file_gets_the_mode_of_a_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "first"]).ok();
    // A kept file with a narrower mode than a new file gets (ours, one name, small).
    std::fs::create_dir_all(env.path(".coord/recycled")).unwrap();
    let kept = env.path(".coord/recycled/0");
    std::fs::write(&kept, "old\n").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
    let planted = ino(&kept);
    env.agent("gemini").args(["presence", ".", "here"]).ok();
    let probe = env.path("probe");
    std::fs::write(&probe, "").unwrap();
    let new_mode = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o7777;
    for f in [".gemini_presence", ".claude_presence"] {
        let mode = std::fs::metadata(env.path(f)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, new_mode, "{f}");
    }
    assert!(
        [".gemini_presence", ".claude_presence"]
            .iter()
            .any(|f| ino(&env.path(f)) == planted)
            || !kept.exists(),
        "the kept file was used"
    );
}
