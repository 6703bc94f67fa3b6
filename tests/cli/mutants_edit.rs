//! `coord write`, `run` and `restore` at the edges the other tests did not reach: each test here
//! fails on a realistic bug that `cargo mutants` showed the rest of the suite would let through
//! (see docs/reliability.md, "Mutation testing").

use std::os::unix::fs::PermissionsExt;

use crate::support::Env;

fn locks(env: &Env) -> Vec<String> {
    env.files_ending("")
        .into_iter()
        .filter(|f| f.contains(".lock."))
        .collect()
}

/// A file deleted by mistake comes back from its backup; there is nothing to swap it with.
#[test]
fn restore_brings_back_a_deleted_file() {
    let env = Env::new();
    env.write("f.txt", "precious\n");
    env.agent("claude").args(["lock", "f.txt"]).ok();
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    std::fs::remove_file(env.path("f.txt")).unwrap();
    let out = env.agent("claude").args(["restore", "f.txt"]).ok();
    out.stdout_has("Restored: f.txt from f.txt.bak")
        .stdout_lacks("now holds");
    assert_eq!(env.read("f.txt"), "precious\n");
    assert_eq!(env.read("f.txt.bak"), "precious\n");
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}

/// As shells do: 127 when CMD does not exist, 126 when it exists but cannot be executed.
#[test]
fn run_exits_126_for_a_command_that_cannot_be_executed() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write("not-executable.sh", "#!/bin/sh\ntouch ran\n");
    std::fs::set_permissions(
        env.path("not-executable.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    env.agent("claude")
        .args(["run", "f.txt", "--", "./not-executable.sh"])
        .code(126)
        .stderr_has("cannot run `./not-executable.sh`");
    assert!(!env.exists("ran"));
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
    env.agent("claude")
        .args(["run", "f.txt", "--", "./no-such-script.sh"])
        .code(127);
    assert!(locks(&env).is_empty(), "{:?}", locks(&env));
}
