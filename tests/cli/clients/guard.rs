//! `coord guard`: real git repositories, real `git commit` and `git push` to a local bare remote.

use std::path::Path;

use crate::support::Env;

/// `git ARGS` in `dir`, as a person (or an agent's shell) would run it.
fn git(dir: &Path, args: &[&str], agent: Option<&str>) -> std::process::Output {
    let mut c = crate::rigs::git(dir);
    c.args(args);
    if let Some(a) = agent {
        c.env("COORD_AGENT", a);
    }
    c.output().unwrap()
}

#[track_caller]
fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir, args, None);
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo() -> Env {
    let env = Env::new();
    git_ok(env.root(), &["init", "-q", "-b", "main"]);
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    git_ok(env.root(), &["add", "a.txt", "b.txt"]);
    git_ok(env.root(), &["commit", "-qm", "start"]);
    env
}

#[test]
fn pre_commit_refuses_a_file_another_agent_holds_and_lets_the_holder_commit() {
    let env = repo();
    env.cmd()
        .args(["guard", "install"])
        .ok()
        .stdout_has("pre-commit installed");
    assert!(env.path(".git/hooks/pre-commit").exists());
    env.agent("gemini").args(["lock", "a.txt"]).ok();

    env.write("a.txt", "changed behind gemini's back\n");
    git_ok(env.root(), &["add", "a.txt"]);
    let out = git(env.root(), &["commit", "-qm", "sneaky"], Some("claude"));
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a.txt: locked by gemini (LIVE"), "{err}");
    assert_eq!(
        git_ok(env.root(), &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );

    // The check by itself: exit 4, naming path and holder.
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .code(4)
        .stderr_has("a.txt: locked by gemini");
    // warn lets it through, off skips.
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .env("COORD_GUARD", "warn")
        .ok()
        .stderr_has("warning:");
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .env("COORD_GUARD", "off")
        .ok();

    // The holder itself may commit.
    let out = git(
        env.root(),
        &["commit", "-qm", "gemini's change"],
        Some("gemini"),
    );
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_rename_of_a_held_file_is_refused_by_its_old_name() {
    let env = repo();
    env.cmd().args(["guard", "install"]).ok();
    env.agent("gemini").args(["lock", "b.txt"]).ok();
    git_ok(env.root(), &["mv", "b.txt", "c.txt"]);
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .code(4)
        .stderr_has("b.txt: locked by gemini");
    let out = git(env.root(), &["commit", "-qm", "rename"], Some("claude"));
    assert!(!out.status.success());
    // Once released, the rename may go.
    env.agent("gemini").args(["unlock", "b.txt"]).ok();
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .ok();
}

#[test]
fn pre_push_refuses_commits_touching_a_held_file() {
    let env = repo();
    let bare = tempfile::tempdir().unwrap();
    git_ok(bare.path(), &["init", "-q", "--bare", "-b", "main"]);
    git_ok(
        env.root(),
        &["remote", "add", "origin", bare.path().to_str().unwrap()],
    );
    git_ok(env.root(), &["push", "-q", "origin", "main"]);
    env.cmd()
        .args(["guard", "install"])
        .ok()
        .stdout_has("pre-push installed");

    env.write("a.txt", "new a\n");
    git_ok(env.root(), &["commit", "-qam", "edit a"]);
    env.agent("gemini").args(["lock", "a.txt"]).ok();
    let out = git(
        env.root(),
        &["push", "-q", "origin", "main"],
        Some("claude"),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a.txt: locked by gemini"),
        "{out:?}"
    );
    let remote_head = git_ok(bare.path(), &["rev-parse", "main"]);
    let local_head = git_ok(env.root(), &["rev-parse", "main"]);
    assert_ne!(remote_head, local_head);

    // A new branch is checked against what the remote has.
    git_ok(env.root(), &["checkout", "-qb", "feature"]);
    let out = git(
        env.root(),
        &["push", "-q", "origin", "feature"],
        Some("claude"),
    );
    assert!(!out.status.success(), "{out:?}");

    env.agent("gemini").args(["unlock", "a.txt"]).ok();
    let out = git(
        env.root(),
        &["push", "-q", "origin", "main"],
        Some("claude"),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(git_ok(bare.path(), &["rev-parse", "main"]), local_head);
}

#[test]
fn install_honours_core_hooks_path_and_chains_an_existing_hook() {
    let env = repo();
    git_ok(env.root(), &["config", "core.hooksPath", "githooks"]);
    env.write("githooks/pre-commit", "#!/bin/sh\necho \"earlier hook ran\" >&2\necho ran >> \"$(git rev-parse --show-toplevel)/hook.log\"\n");
    let mut p = std::fs::metadata(env.path("githooks/pre-commit"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    std::fs::set_permissions(env.path("githooks/pre-commit"), p).unwrap();

    env.cmd()
        .args(["guard", "install"])
        .ok()
        .stdout_has("githooks/pre-commit");
    assert!(env.exists("githooks/pre-commit.chained"));
    assert!(!env.exists(".git/hooks/pre-commit"));
    // Twice: nothing changes.
    let before = env.snapshot();
    env.cmd()
        .args(["guard", "install"])
        .ok()
        .stdout_has("already installed");
    assert_eq!(env.snapshot(), before);

    env.write("b.txt", "b2\n");
    git_ok(env.root(), &["add", "b.txt"]);
    let out = git(env.root(), &["commit", "-qm", "b2"], Some("claude"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(env.read("hook.log"), "ran\n", "the earlier hook still runs");

    env.agent("gemini").args(["lock", "b.txt"]).ok();
    env.write("b.txt", "b3\n");
    git_ok(env.root(), &["add", "b.txt"]);
    let out = git(env.root(), &["commit", "-qm", "b3"], Some("claude"));
    assert!(!out.status.success());
    assert_eq!(
        env.read("hook.log"),
        "ran\n",
        "a refused commit stops before the chained hook"
    );
}

#[test]
fn guard_outside_a_git_repository_is_a_clear_error() {
    let env = Env::new();
    let out = env.cmd().args(["guard", "install"]).code(1);
    assert!(
        out.stderr.contains("error:") && out.stderr.contains("git"),
        "{}",
        out.stderr
    );
}

/// Like git's own hooks, the guard says nothing when a commit or push goes through (issue 30:
/// it printed a line on every commit); an older coord hook is brought up to date by `install`.
#[test]
fn the_guard_is_silent_when_a_commit_goes_through() {
    let env = repo();
    env.cmd().args(["guard", "install"]).ok();
    env.write("a.txt", "changed\n");
    git_ok(env.root(), &["add", "a.txt"]);
    let out = git(env.root(), &["commit", "-qm", "free file"], Some("claude"));
    assert!(out.status.success(), "{out:?}");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said, "", "a commit through the guard printed something");
    // By hand, the check still says what it checked.
    env.cmd()
        .args(["guard", "check", "HEAD~1..HEAD"])
        .ok()
        .stdout_has("1 path checked");

    // A hook written by an earlier coord (it ran the check without `-q`) is updated in place.
    let hook = env.path(".git/hooks/pre-commit");
    let old = std::fs::read_to_string(&hook)
        .unwrap()
        .replace("\"$coord\" -q guard check", "\"$coord\" guard check");
    std::fs::write(&hook, old).unwrap();
    env.cmd()
        .args(["guard", "install"])
        .ok()
        .stdout_has("pre-commit updated");
    assert!(env.read(".git/hooks/pre-commit").contains("-q guard check"));
    env.cmd()
        .args(["guard", "install"])
        .ok()
        .stdout_has("pre-commit already installed");
}

/// The hooks folder: every entry's name, bytes and mode (links as their target).
fn hooks_state(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let bytes = if meta.is_symlink() {
                std::fs::read_link(e.path())
                    .unwrap()
                    .display()
                    .to_string()
                    .into_bytes()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (
                e.file_name().to_string_lossy().into_owned(),
                bytes,
                meta.permissions().mode(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Issue 29: `coord guard uninstall` takes coord's hooks out and puts a hook it had chained
/// back under its own name, byte for byte and with its mode; a hook that is not coord's is
/// left alone; a second run changes nothing.
#[test]
fn uninstall_removes_coords_hooks_and_restores_the_chained_one() {
    use std::os::unix::fs::PermissionsExt;
    let env = repo();
    let hooks = env.path(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let mine = "#!/bin/sh\n# my own pre-commit\nexit 0\n";
    std::fs::write(hooks.join("pre-commit"), mine).unwrap();
    std::fs::set_permissions(
        hooks.join("pre-commit"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    let before = hooks_state(&hooks);

    env.cmd().args(["guard", "install"]).ok();
    assert!(env.path(".git/hooks/pre-commit.chained").exists());
    assert_ne!(hooks_state(&hooks), before);
    env.cmd()
        .args(["guard", "uninstall"])
        .ok()
        .stdout_has("pre-commit removed; the earlier hook is back in its place")
        .stdout_has("pre-push removed");
    assert_eq!(hooks_state(&hooks), before);
    // Commits still run the user's own hook, and nothing of coord's.
    env.write("a.txt", "x\n");
    git_ok(env.root(), &["commit", "-qam", "after uninstall"]);

    env.cmd()
        .args(["guard", "uninstall"])
        .ok()
        .stdout_has("pre-commit not coord's, left alone")
        .stdout_has("pre-push not installed");
    assert_eq!(hooks_state(&hooks), before);

    // Where core.hooksPath points, too.
    let env = repo();
    git_ok(env.root(), &["config", "core.hooksPath", "githooks"]);
    std::fs::create_dir_all(env.path("githooks")).unwrap();
    std::fs::write(env.path("githooks/pre-push"), "#!/bin/sh\nexit 0\n").unwrap();
    let before = hooks_state(&env.path("githooks"));
    env.cmd().args(["guard", "install"]).ok();
    env.cmd().args(["guard", "uninstall"]).ok();
    assert_eq!(hooks_state(&env.path("githooks")), before);
}

/// Files in two nested workspaces of one repository are each checked against their own
/// workspace's locks: a held file in the second is refused even when the first comes first.
#[test]
fn each_nested_workspace_checks_its_own_locks() {
    let env = repo();
    for dir in ["one", "two"] {
        std::fs::create_dir_all(env.path(&format!("{dir}/.coord"))).unwrap();
    }
    env.write("one/o.txt", "o\n");
    env.write("two/t.txt", "t\n");
    env.cmd()
        .args(["-C", "two", "-a", "gemini", "lock", "t.txt"])
        .ok();
    git_ok(env.root(), &["add", "one/o.txt", "two/t.txt"]);
    let out = env
        .agent("claude")
        .args(["guard", "check", "--staged"])
        .code(4);
    out.stderr_has("t.txt: locked by gemini");
    assert!(!out.stderr.contains("o.txt"), "{}", out.stderr);
}

/// Claims that cannot be read still hold (taking a lock refuses them): the guard's check says
/// so, naming the file, instead of finding nothing held. Its git hook refuses only what it
/// finds held, so the commit goes through with the error shown to whoever commits.
#[test]
fn the_guard_says_when_the_claims_cannot_be_read() {
    let env = repo();
    env.cmd().args(["guard", "install"]).ok();
    env.agent("gemini").args(["lock", "*.txt"]).ok();
    std::fs::rename(env.path(".coord/claims"), env.path(".coord/claims.real")).unwrap();
    std::os::unix::fs::symlink("claims.real", env.path(".coord/claims")).unwrap();
    let claims = std::fs::read(env.path(".coord/claims.real")).unwrap();

    env.write("a.txt", "changed while gemini claims it\n");
    git_ok(env.root(), &["add", "a.txt"]);
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .code(1)
        .stderr_has("error: cannot read")
        .stderr_has(".coord/claims");
    env.agent("claude")
        .args(["guard", "check", "--staged"])
        .env("COORD_GUARD", "warn")
        .ok()
        .stderr_has("warning: cannot read");
    let out = git(
        env.root(),
        &["commit", "-qm", "while unreadable"],
        Some("claude"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: cannot read") && err.contains(".coord/claims"),
        "{out:?}"
    );
    // Nothing was changed: the claim and the link stand as they were.
    assert_eq!(
        std::fs::read(env.path(".coord/claims.real")).unwrap(),
        claims
    );
    assert!(
        std::fs::symlink_metadata(env.path(".coord/claims"))
            .unwrap()
            .is_symlink()
    );
}

/// A FIFO or a 100 MiB file where `pre-commit` is: `guard install` neither blocks on the FIFO
/// nor reads the file whole; it is not coord's hook, so it is chained as any other.
#[test]
fn install_chains_a_fifo_or_a_huge_hook_without_reading_it() {
    use crate::planted::{Kind, LIMIT, bounded, plant};
    for kind in [Kind::Fifo, Kind::Huge] {
        let env = repo();
        let hook = env.path(".git/hooks/pre-commit");
        let _ = std::fs::remove_file(&hook);
        plant(&hook, kind, &env.path("a.txt"));
        let out = bounded(env.cmd().args(["guard", "install"]), LIMIT);
        assert_eq!(out.code, Some(0), "{kind:?}: {}", out.stderr);
        let chained = std::fs::symlink_metadata(env.path(".git/hooks/pre-commit.chained")).unwrap();
        assert_eq!(chained.is_file(), kind == Kind::Huge, "{kind:?}");
        assert!(env.read(".git/hooks/pre-commit").contains("coord guard"));
    }
}
