//! The command line itself: usage errors, global options, agent names and file arguments that are
//! refused before anything is written.

use crate::support::Env;

#[test]
fn bad_agent_names_are_refused_before_anything_is_written() {
    let env = Env::new();
    env.write("a.md", "x\n");
    let before = env.snapshot();
    for bad in ["../x", "a/b", ".", "x y", "ünï", &"a".repeat(33), "-dash"] {
        env.agent(bad)
            .args(["lock", "a.md"])
            .code(2)
            .stderr_has("error: invalid agent name");
        env.agent(bad).args(["presence", ".", "t"]).code(2);
    }
    // Empty (`COORD_AGENT=`): refused the same way, reported as the missing name it is.
    env.agent("")
        .args(["lock", "a.md"])
        .code(2)
        .stderr_has("error: no agent given");
    env.agent("").args(["presence", ".", "t"]).code(2);
    env.cmd()
        .args(["lock", "a.md"])
        .code(2)
        .stderr_has("error: no agent given")
        .stderr_has("--agent NAME")
        .stderr_has("COORD_AGENT");
    assert_eq!(env.snapshot(), before, "nothing may be written");
}

#[test]
fn paths_outside_the_root_are_refused_before_anything_is_written() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(env.path(".coord")).unwrap();
    std::fs::write(outside.path().join("victim"), "v").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim"), env.path("flink")).unwrap();
    let before = env.snapshot();
    let victim = outside.path().join("victim").display().to_string();
    for bad in [
        "../x",
        "/etc/passwd",
        &victim,
        "link/victim",
        "flink",
        "sub/../../x",
    ] {
        env.agent("claude")
            .args(["lock", bad])
            .code(2)
            .stderr_has("error:");
    }
    env.agent("claude")
        .args(["lock", ".coord/mutex"])
        .code(2)
        .stderr_has("belong to coord itself");
    assert_eq!(env.snapshot(), before, "nothing may be written");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    env.cmd().arg("frobnicate").code(2);
    env.agent("claude").args(["lock"]).code(2);
    env.agent("claude")
        .args(["lock", "a.md", "--wait", "5 fortnights"])
        .code(2)
        .stderr_has("invalid duration");
    env.agent("claude")
        .args(["lock", "a.md", "--ttl", "0"])
        .code(2);
    // A lock's lifetime is a duration: `forever` is a wait's bound only, as the hint says.
    env.agent("claude")
        .args(["lock", "a.md", "--ttl", "forever"])
        .code(2)
        .stderr_has("or `forever` where a wait is meant");
    env.cmd().args(["status", "/nonexistent/folder"]).code(2);
    env.cmd().arg("--help").ok().stdout_has("Usage");
}

#[test]
fn global_options_go_before_or_after_the_command() {
    let env = Env::new();
    env.cmd()
        .args(["lock", "a.md", "-a", "claude", "--json"])
        .ok();
    let out = env
        .cmd()
        .args(["--agent", "gemini", "--json", "lock", "a.md", "--no-wait"])
        .code(3);
    let err: serde_json::Value = out.json();
    assert_eq!(err["error"]["kind"], "lock_held");
    assert_eq!(err["error"]["exit_code"], 3);
    env.cmd()
        .args(["-q", "-a", "claude", "unlock", "a.md"])
        .ok();
}

#[test]
fn a_lone_plain_word_is_the_task_even_if_a_folder_has_that_name() {
    let env = Env::new();
    std::fs::create_dir(env.path("bench")).unwrap();
    env.agent("claude").args(["presence", "bench"]).ok();
    assert!(env.read(".claude_presence").contains("working_on: bench\n"));
    env.agent("claude").args(["presence", "."]).ok();
    assert!(env.read(".claude_presence").contains("working_on: bench\n"));
    assert!(!env.exists("bench/.claude_presence"));
    // `bench/` is a DIR; inside this workspace it means this workspace (no nested one)...
    env.agent("claude").args(["presence", "bench/", "t"]).ok();
    assert!(!env.exists("bench/.claude_presence"));
    assert!(env.read(".claude_presence").contains("working_on: t\n"));
    // ... unless it was made a workspace of its own.
    std::fs::create_dir(env.path("bench/.coord")).unwrap();
    env.agent("claude").args(["presence", "bench/", "t"]).ok();
    assert!(env.exists("bench/.claude_presence"));
}
