//! `coord init --remove --all` (contract §11): coord out of a repository, every worktree of
//! it, as `git status` saw it before coord.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::clients::init_remove::repo_with_worktree;
use crate::support::{Env, eventually, finish};

/// `git status` of the work tree `dir`, ignored and untracked files each listed.
fn status(dir: &Path) -> Vec<String> {
    let out = crate::rigs::git(dir)
        .args([
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignored",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// What git keeps that coord may touch: the exclude file and the hooks (name, mode, bytes).
fn git_files(main: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let exclude = main.join(".git/info/exclude");
    out.insert(
        "info/exclude".into(),
        (0, std::fs::read(&exclude).unwrap_or_default()),
    );
    for e in std::fs::read_dir(main.join(".git/hooks"))
        .unwrap()
        .flatten()
    {
        let meta = e.metadata().unwrap();
        out.insert(
            format!("hooks/{}", e.file_name().to_string_lossy()),
            (meta.permissions().mode(), std::fs::read(e.path()).unwrap()),
        );
    }
    out
}

/// Every file of both work trees (`.git` aside) and what git keeps: what a refused or dry run
/// must leave as it was.
fn everything(env: &Env, main: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all: BTreeMap<String, Vec<u8>> = env
        .snapshot()
        .into_iter()
        .filter(|(k, _)| !k.contains(".git/") && !k.ends_with("/.git"))
        .collect();
    for (k, (mode, bytes)) in git_files(main) {
        all.insert(format!("{k} {mode:o}"), bytes);
    }
    all
}

/// `coord` started in `dir` as `agent`, finding its workspace as a user's shell would.
fn coord(env: &Env, dir: &Path, agent: Option<&str>) -> crate::support::Cmd {
    let cmd = env.cmd().env_remove("COORD_DIR").cwd(dir);
    match agent {
        Some(a) => cmd.agent(a),
        None => cmd,
    }
}

/// #48 item 11: `init --remove --all` takes coord out of a repository and every worktree of it
/// — each tree's wiring, Claude Code's answer about coord's MCP server (the user's own local
/// settings kept), the guard's hooks (the user's own hook back in its place), `.coord/`, locks,
/// presences, handshakes, temporaries, backups equal to their file, and coord's block in
/// `.git/info/exclude` — so that `git status` in each tree and the exclude file are as before
/// coord. A live lock of another agent (a running process holds it) refuses it all (exit 3,
/// naming the holder and the file) before anything is removed; `--dry-run` names everything
/// and writes nothing; a backup and a refused write that differ from their file are kept and
/// named, unless `--yes`.
#[test]
fn remove_all_leaves_every_worktree_as_git_status_saw_it_before_coord() {
    let (env, main, b) = repo_with_worktree();
    // The user's own: a pre-commit hook, and Claude Code's local settings in one tree.
    let hook = main.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho mine\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let users_local = "{\"permissions\": {\"allow\": [\"Bash(npm test)\"]}}\n";
    env.write("b/.claude/settings.local.json", users_local);
    let before = (status(&main), status(&b), git_files(&main));
    assert!(
        before.0.is_empty() && before.1 == ["?? .claude/settings.local.json"],
        "{before:?}"
    );

    // coord everywhere: a plugin's hook in a repository nobody set up (the exclude block),
    // `init` in both trees, the guard, locks, presences, a handshake, a refused write.
    let start = serde_json::json!({
        "session_id": "cedd012c-f1ba-4d70-ad6d-1c65c16ba070",
        "cwd": main,
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    coord(&env, &main, None)
        .args(["hook", "claude", "--plugin"])
        .stdin(start.to_string())
        .ok();
    assert!(
        std::fs::read_to_string(main.join(".git/info/exclude"))
            .unwrap()
            .contains("# coord:begin")
    );
    for dir in [&main, &b] {
        coord(&env, dir, None)
            .args(["init", "--client", "claude"])
            .ok();
    }
    coord(&env, &main, None).args(["guard", "install"]).ok();
    // What Claude Code writes when its user lets the project's `coord` server run.
    env.write(
        "main/.claude/settings.local.json",
        "{\n  \"enabledMcpjsonServers\": [\n    \"coord\"\n  ]\n}",
    );
    env.write(
        "b/.claude/settings.local.json",
        "{\"permissions\": {\"allow\": [\"Bash(npm test)\", \"mcp__coord__lock\"]}, \"enabledMcpjsonServers\": [\"coord\"]}\n",
    );
    coord(&env, &main, Some("alice"))
        .args(["lock", "README.md"])
        .ok();
    coord(&env, &b, Some("alice"))
        .args(["lock", "AGENTS.md"])
        .ok();
    coord(&env, &main, Some("bob")).args(["presence"]).ok();
    coord(&env, &main, Some("alice")).args(["handshake"]).ok();
    coord(&env, &main, Some("dave"))
        .args(["write", "README.md"])
        .stdin("not dave's to write\n")
        .code(3);
    env.write("main/.gitignore.bak", "an older draft\n");
    env.write("b/.coord-0badcafe-4242-Ab12Cd.tmp", "");
    for name in [
        "main/.alice_presence",
        "main/.handshake_alice",
        "main/README.md.bak",
        "main/README.md.lock.alice",
        "main/README.md.rejected.dave",
        "main/.coord",
        "b/AGENTS.md.lock.alice",
        "b/AGENTS.md.bak",
    ] {
        assert!(env.exists(name), "{name}");
    }

    // carol holds a lock while her command runs: nothing is removed, she is named.
    let run = coord(&env, &b, Some("carol"))
        .args([
            "run",
            "notes.txt",
            "--",
            "/bin/sh",
            "-c",
            ": > started; i=0; while [ ! -e stop ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done",
        ])
        .spawn();
    eventually("carol's command started", || b.join("started").exists());
    let held = everything(&env, &main);
    let refused = coord(&env, &main, Some("alice"))
        .args(["init", "--remove", "--all", "--yes"])
        .code(3);
    refused.stderr_has("carol");
    refused.stderr_has("notes.txt");
    // Nothing removed, nothing of the user's or coord's changed, but what carol's running
    // command itself keeps writing meanwhile (her presence's heartbeat, the history, her
    // session's records under `.coord/`).
    let now = everything(&env, &main);
    let gone: Vec<&String> = held.keys().filter(|k| !now.contains_key(*k)).collect();
    assert!(gone.is_empty(), "a refusal removes nothing: {gone:?} went");
    let carols = |k: &str| k.contains("/.coord/") || k.ends_with(".carol_presence");
    let changed: Vec<&String> = held
        .iter()
        .filter(|(k, v)| !carols(k) && now.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert!(changed.is_empty(), "a refusal changes nothing: {changed:?}");
    std::fs::write(b.join("stop"), "").unwrap();
    let out = finish(run);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for f in ["started", "stop"] {
        std::fs::remove_file(b.join(f)).unwrap();
    }

    // A dry run names everything and writes nothing; alice's own live locks stand in the way
    // of anyone but her.
    let wired = everything(&env, &main);
    coord(&env, &main, None)
        .args(["init", "--remove", "--all", "--dry-run"])
        .code(3)
        .stderr_has("`README.md` is locked by alice");
    let v: serde_json::Value = coord(&env, &main, Some("alice"))
        .args(["init", "--remove", "--all", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(v["dry_run"], true, "{v:#}");
    assert_eq!(v["trees"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(v["hooks"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(v["kept"].as_array().unwrap().len(), 2, "{v:#}");
    assert!(
        v["exclude"].as_str().unwrap().ends_with("info/exclude"),
        "{v:#}"
    );
    let dry = coord(&env, &main, Some("alice"))
        .args(["init", "--remove", "--all", "--dry-run"])
        .ok();
    for line in [
        "Would delete: .coord/",
        "Would delete: README.md.lock.alice",
        "Would delete: .handshake_alice",
        "Would delete: .claude/settings.local.json",
        "Would remove: coord's pre-commit hook",
        "Would remove: coord's block in",
        "Kept .gitignore.bak: it differs from .gitignore",
        "Kept README.md.rejected.dave: it differs from README.md",
    ] {
        dry.stdout_has(line);
    }
    dry.stdout_has(&format!("{}", b.join("AGENTS.md.lock.alice").display()));
    assert_eq!(everything(&env, &main), wired, "a dry run writes nothing");

    // Without --yes, the copies that differ stay, named; everything else goes.
    coord(&env, &main, Some("alice"))
        .args(["init", "--remove", "--all"])
        .ok()
        .stdout_has("Kept .gitignore.bak");
    let mut expected = before.0.clone();
    expected.extend([
        "?? .gitignore.bak".to_string(),
        "?? README.md.rejected.dave".into(),
    ]);
    expected.sort();
    assert_eq!(status(&main), expected);
    assert_eq!(status(&b), before.1);

    coord(&env, &main, Some("alice"))
        .args(["init", "--remove", "--all", "--yes"])
        .ok();
    assert_eq!(status(&main), before.0);
    assert_eq!(status(&b), before.1);
    assert_eq!(
        git_files(&main),
        before.2,
        "exclude file and hooks as before"
    );
    let local: serde_json::Value =
        serde_json::from_str(&env.read("b/.claude/settings.local.json")).unwrap();
    assert_eq!(
        local,
        serde_json::from_str::<serde_json::Value>(users_local).unwrap(),
        "the user's own local settings stay"
    );
    assert!(!main.join(".coord").exists() && !b.join(".coord").exists());
    coord(&env, &b, None)
        .args(["init", "--remove", "--all"])
        .ok()
        .stdout_has("Nothing to remove");
}

/// `init --remove --all` in a submodule's superproject takes coord's block out of the
/// submodule's own exclude file too (the first lock inside the submodule wrote it there):
/// every exclude file is as before coord.
#[test]
fn remove_all_takes_coords_block_out_of_each_submodules_exclude_file() {
    let (env, sup) = crate::locks::submodules::superproject();
    let excludes = || {
        let mut all: Vec<(String, String)> = Vec::new();
        for rel in [".git/info/exclude", ".git/modules/sub/info/exclude"] {
            all.push((
                rel.into(),
                std::fs::read_to_string(sup.join(rel)).unwrap_or_default(),
            ));
        }
        all
    };
    let before = excludes();
    crate::locks::submodules::from(&env, &sup.join("sub"), "alice")
        .args(["lock", "d/f.rs"])
        .ok();
    crate::locks::submodules::from(&env, &sup.join("sub"), "alice")
        .args(["unlock", "d/f.rs"])
        .ok();
    assert!(
        excludes()[1].1.contains("# coord:begin"),
        "{:?}",
        excludes()
    );
    coord(&env, &sup, None)
        .args(["init", "--remove", "--all"])
        .ok()
        .stdout_has("modules/sub/info/exclude");
    assert_eq!(excludes(), before);
    assert_eq!(status(&sup), Vec::<String>::new());
}

/// In a clone that shares its claims through its remote, `init --remove --all` stops that
/// first: its records there are released (another clone sees the claim gone), and the clone's
/// git config and its copy of the remote's refs are as before `coord remote enable`.
#[test]
fn remove_all_stops_sharing_claims_through_the_remote_and_leaves_no_config() {
    use crate::locks::remote::{Team, Transport, remote, run_git};
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    crate::locks::remote::coord(&t.env, &a, "alice")
        .args(["lock", "src/", "--reason", "auth"])
        .ok();
    remote(&t.env, &b, "x", &["sync"]).ok();
    assert_eq!(crate::locks::remote::status(&t.env, &b).claims.len(), 1);

    crate::locks::remote::coord(&t.env, &a, "alice")
        .args(["init", "--remove", "--all"])
        .ok()
        .stdout_has("Stopped: claims shared through remote `origin`");
    let config = std::fs::read_to_string(a.join(".git/config")).unwrap();
    assert!(!config.contains("[coord]"), "{config}");
    assert_eq!(run_git(&a, &["for-each-ref", "refs/coord-sync/"]), "");
    assert!(!a.join(".coord").exists());
    remote(&t.env, &b, "x", &["sync"]).ok();
    assert!(
        crate::locks::remote::status(&t.env, &b).claims.is_empty(),
        "alice's claim was released on the remote"
    );
}

/// A live lock inside a submodule (a folder of its superproject's workspace) stands in the way
/// of `init --remove --all` like one anywhere else: refused, the holder named, nothing removed.
#[test]
fn remove_all_refuses_a_live_lock_inside_a_submodule() {
    let (env, sup) = crate::locks::submodules::superproject();
    crate::locks::submodules::from(&env, &sup.join("sub"), "alice")
        .args(["lock", "d/f.rs"])
        .ok();
    let lock = sup.join("sub/d/f.rs.lock.alice");
    assert!(lock.exists());
    let before = std::fs::read(&lock).unwrap();
    let refused = coord(&env, &sup, Some("bob"))
        .args(["init", "--remove", "--all", "--yes"])
        .code(3);
    refused.stderr_has("alice");
    refused.stderr_has("d/f.rs");
    assert_eq!(std::fs::read(&lock).unwrap(), before);
    assert!(sup.join(".coord").is_dir());
    // Its holder may take coord out.
    coord(&env, &sup, Some("alice"))
        .args(["init", "--remove", "--all", "--yes"])
        .ok();
    assert!(!lock.exists());
}

/// A claims file that cannot be read may hold other agents' live claims (`coord lock` refuses it
/// for that): `init --remove --all` refuses too, naming it, and removes nothing.
#[test]
fn remove_all_refuses_a_claims_file_it_cannot_read() {
    let (env, main, _) = repo_with_worktree();
    coord(&env, &main, Some("alice"))
        .args(["lock", "src/**"])
        .ok();
    // Grown past what coord reads (4 MiB): alice's claim is still in it.
    let path = main.join(".coord/claims");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("\nnote: {}\n", "x".repeat(5 * 1024 * 1024)));
    std::fs::write(&path, &text).unwrap();
    let before = everything(&env, &main);
    coord(&env, &main, Some("bob"))
        .args(["init", "--remove", "--all", "--yes"])
        .code(1)
        .stderr_has("error: cannot read")
        .stderr_has(".coord/claims");
    assert_eq!(everything(&env, &main), before, "something was removed");
}
