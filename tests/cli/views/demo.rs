//! `coord demo`, the README's first command: a live session of real coord processes in a fresh
//! folder, ending in `coord status` and where the folder is.

use crate::support::Env;

#[test]
fn the_demo_shows_a_client_denied_then_allowed_and_ends_in_status() {
    let env = Env::new();
    let tmp = env.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = env.cmd().env("TMPDIR", &tmp).args(["demo"]).ok();
    // The main promise, as the agent would read it: the second client is denied naming the
    // holder, then allowed once the first one's turn ends.
    out.stdout_has("Claude Code: Edit src/app.rs -> allowed")
        .stdout_has("Codex: apply_patch src/app.rs -> denied; its agent reads:")
        .stdout_has("`src/app.rs` is locked by claude")
        .stdout_has("Codex: apply_patch src/app.rs -> allowed");
    // Waits and hand-overs from the shell, no update lost under `coord run`.
    out.stdout_has("waiting for `SHARED.txt`: held by claude")
        .stdout_has("SHARED.txt now holds 3 sections")
        .stdout_has("COUNTER.txt = 3");
    // A handshake seen after every agent answered: no pair half-way.
    out.stdout_has("ESTABLISHED")
        .stdout_lacks("REQUESTED")
        .stdout_lacks("Protocol V3 recommended");
    out.stdout_has("says: Then we are done here.")
        .stdout_has("Step 01 done by claude; step 02 planned for codex");
    // The humans' view, then where the folder is and how to remove it.
    out.stdout_has("$ coord status")
        .stdout_has("NOTES.md  codex");
    let last = out.stdout.lines().last().unwrap();
    let folder = last
        .strip_prefix("The demo folder is ")
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("{last}"));
    assert!(
        last.ends_with(&format!("remove it with: rm -rf {folder}")),
        "{last}"
    );
    let folder = std::path::Path::new(folder);
    assert!(
        folder.starts_with(std::fs::canonicalize(&tmp).unwrap()),
        "{last}"
    );
    let app = std::fs::read_to_string(folder.join("src/app.rs")).unwrap();
    assert_eq!(
        app.trim(),
        "fn main() {}",
        "the demo's hooks lock; they do not edit"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("COUNTER.txt"))
            .unwrap()
            .trim(),
        "3"
    );
}

#[test]
fn the_demo_runs_in_a_new_folder_and_refuses_a_folder_with_files() {
    let env = Env::new();
    let dir = env.path("new/demo");
    env.cmd()
        .args(["demo", "--agents", "2", "-C"])
        .arg(&dir)
        .ok()
        .stdout_has("coord demo: 2 agents share")
        .stdout_has("COUNTER.txt = 2");
    assert!(dir.join("SHARED.txt").is_file());
    env.write("busy/file.txt", "x");
    env.cmd()
        .args(["demo", "-C"])
        .arg(env.path("busy"))
        .code(2)
        .stderr_has("the demo needs an empty or new folder");
    assert_eq!(env.read("busy/file.txt"), "x");
}
