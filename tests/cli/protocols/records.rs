//! Records coord publishes: each a fresh file holding exactly what it says, with the mode of a
//! new file; what earlier versions kept in `.coord/` (`recycled/`, `folders`, `worktrees`, `held/anchor`) is
//! swept and never read or followed; a command that publishes nothing leaves `.coord/` as it was.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::support::{Env, temps_in};

fn ino(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).unwrap().ino()
}

#[test]
fn a_replaced_presence_is_a_fresh_file_holding_only_its_new_content() {
    let env = Env::new();
    let long = "a task with a long description ".repeat(20);
    env.agent("claude").args(["presence", ".", &long]).ok();
    let first = ino(&env.path(".claude_presence"));
    env.agent("claude").args(["presence", ".", "short"]).ok();
    assert_ne!(ino(&env.path(".claude_presence")), first);
    let text = env.read(".claude_presence");
    assert!(text.contains("working_on: short\n"), "{text}");
    assert!(!text.contains("long description"), "{text}");
    assert_eq!(temps_in(env.root()), Vec::<String>::new());
    assert_eq!(temps_in(&env.path(".coord")), Vec::<String>::new());
}

#[test]
fn what_earlier_versions_kept_is_swept_never_read_nor_followed() {
    let env = Env::new();
    env.write("a.md", "mine\n");
    env.agent("claude").args(["presence", ".", "first"]).ok();
    // The pool of kept files: a link to a file outside, a hard link to a user's file.
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("0");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::create_dir_all(env.path(".coord/recycled")).unwrap();
    std::os::unix::fs::symlink(&victim, env.path(".coord/recycled/0")).unwrap();
    std::fs::hard_link(env.path("a.md"), env.path(".coord/recycled/1")).unwrap();
    std::fs::write(env.path(".coord/folders"), "a.md\n../../etc\n").unwrap();
    std::fs::write(
        env.path(".coord/worktrees"),
        "{\"trees\": [{\"top\": \"/\"}]}",
    )
    .unwrap();
    std::fs::create_dir_all(env.path(".coord/held")).unwrap();
    std::fs::write(env.path(".coord/held/anchor"), "").unwrap();
    for round in 0..3 {
        env.agent("claude")
            .args(["presence", ".", &format!("round {round}")])
            .ok();
        env.agent("claude").args(["lock", "a.md"]).ok();
        env.agent("claude").args(["unlock"]).ok();
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(env.read("a.md"), "mine\n");
    for gone in [
        ".coord/recycled",
        ".coord/folders",
        ".coord/worktrees",
        ".coord/held/anchor",
    ] {
        assert!(
            std::fs::symlink_metadata(env.path(gone)).is_err(),
            "{gone} is swept"
        );
    }
    assert!(
        env.read(".claude_presence")
            .contains("working_on: round 2\n")
    );
}

#[test]
fn a_link_in_place_of_the_old_pool_folder_is_removed_not_followed() {
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "first"]).ok();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("0"), "precious\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), env.path(".coord/recycled")).unwrap();
    env.write("a.md", "one\n");
    env.agent("claude").args(["lock", "a.md"]).ok();
    env.agent("claude").args(["unlock"]).ok();
    let names: Vec<_> = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["0"], "nothing written or removed through the link");
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("0")).unwrap(),
        "precious\n"
    );
}

#[test]
fn a_record_gets_the_mode_of_a_new_file_whatever_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.agent("claude").args(["presence", ".", "first"]).ok();
    let presence = env.path(".claude_presence");
    std::fs::set_permissions(&presence, std::fs::Permissions::from_mode(0o600)).unwrap();
    env.agent("claude").args(["presence", ".", "again"]).ok();
    let probe = env.path("probe");
    std::fs::write(&probe, "").unwrap();
    let new_mode = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o7777;
    let mode = std::fs::metadata(&presence).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, new_mode);
}

#[test]
fn a_refused_lock_leaves_the_state_folder_as_it_was() {
    let env = Env::new();
    env.write("a.md", "one\n");
    env.agent("claude").args(["lock", "a.md"]).ok();
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
    assert_eq!(after, was);
}
