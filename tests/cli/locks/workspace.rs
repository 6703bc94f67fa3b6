//! Where the workspace is: one root for everyone, whatever folder a command runs from.

use crate::planted::{ALL, Bed, Kind, expect, plant, tree};
use crate::support::{Env, eventually};

/// The README's first command, run from a subfolder of a workspace, must not start a second,
/// nested workspace that cannot see the first one's locks.
#[test]
fn a_dir_inside_a_workspace_means_that_workspace() {
    let env = Env::new();
    env.write("src/a/z.rs", "fn z() {}\n");
    env.agent("gemini").args(["presence", ".", "Task_456"]).ok();
    env.agent("gemini").args(["lock", "src/a/z.rs"]).ok();
    let sub = env.path("src/a");
    // From the subfolder, with no COORD_DIR: `presence .` names the enclosing workspace.
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(&sub)
        .args(["presence", ".", "Task_123"])
        .ok();
    assert!(!env.exists("src/a/.coord"), "no nested workspace");
    assert!(!env.exists("src/a/.claude_presence"));
    assert!(
        env.read(".claude_presence")
            .contains("working_on: Task_123\n")
    );
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(&sub)
        .args(["check", "."])
        .ok()
        .stdout_has("gemini");
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(&sub)
        .args(["lock", "z.rs", "--no-wait"])
        .code(3)
        .stderr_has("gemini");
    // `--dir` pointing inside means the same workspace too.
    env.agent("claude")
        .env("COORD_DIR", &sub)
        .args(["status", "--json"])
        .ok()
        .stdout_has(&format!("\"root\": \"{}\"", env.root().display()));
    assert!(!env.exists("src/a/.coord"));
    assert!(env.exists("src/a/z.rs.lock.gemini"));
    assert!(!env.exists("src/a/z.rs.lock.claude"));
}

/// Without any `.coord/`, the git work tree's top level is the root, not the subfolder.
#[test]
fn without_a_workspace_the_git_top_level_is_the_root() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".git")).unwrap();
    env.write("src/a/z.rs", "x");
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(env.path("src/a"))
        .args(["lock", "z.rs"])
        .ok()
        .stdout_has("src/a/z.rs");
    assert!(env.exists(".coord"));
    assert!(env.exists(".claude_presence"));
    assert!(!env.exists("src/a/.coord"));
}

/// A nested workspace that was made on purpose (its own `.coord/`) is its own root.
#[test]
fn a_deliberate_nested_workspace_is_its_own_root() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".coord")).unwrap();
    std::fs::create_dir_all(env.path("inner/.coord")).unwrap();
    env.write("inner/x.md", "x");
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(env.path("inner"))
        .args(["lock", "x.md"])
        .ok()
        .stdout_has("Lock acquired: x.md");
    assert!(env.exists("inner/.claude_presence"));
}

/// `-C DIR` is "change directory first", as in git, make and cargo: FILEs are read from DIR.
#[test]
fn dash_c_changes_directory_first() {
    let env = Env::new();
    env.write("src/a/z.rs", "x");
    std::fs::create_dir_all(env.path(".coord")).unwrap();
    env.agent("gemini").args(["lock", "src/a/z.rs"]).ok();
    // From the root, `-C src/a lock z.rs` means src/a/z.rs: held by gemini.
    env.agent("claude")
        .env_remove("COORD_DIR")
        .args(["-C", "src/a", "lock", "z.rs", "--no-wait"])
        .code(3)
        .stderr_has("gemini");
    // Given after the subcommand, and as `--dir=`, it is the same.
    env.agent("claude")
        .env_remove("COORD_DIR")
        .args(["lock", "z.rs", "--no-wait", "--dir=src/a"])
        .code(3);
    env.agent("claude")
        .env_remove("COORD_DIR")
        .args(["-C", "src", "lock", "a/y.rs"])
        .ok()
        .stdout_has("Lock acquired: src/a/y.rs");
    assert!(env.exists("src/a/y.rs.lock.claude"));
    assert!(!env.exists("z.rs.lock.claude"));
    // COORD_DIR names the root only: FILEs stay relative to the current directory.
    env.agent("claude")
        .env("COORD_DIR", env.path("src"))
        .cwd(env.path("src/a"))
        .args(["lock", "w.rs"])
        .ok()
        .stdout_has("Lock acquired: src/a/w.rs");
    // A -C that is not a folder: exit 2, nothing written.
    env.agent("claude")
        .args(["-C", "nope", "lock", "x"])
        .code(2)
        .stderr_has("nope");
    let help = env.cmd().args(["lock", "--help"]).ok().stdout;
    assert!(help.contains("Run as if started in DIR"), "{help}");
}

/// The `.gitignore` lines the docs give keep every file coord makes out of `git status`, and
/// nothing else.
#[test]
fn the_documented_gitignore_lines_hide_coords_files() {
    let git_ok = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !git_ok {
        eprintln!("skipped: no `git` on this machine");
        return;
    }
    let env = Env::new();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(env.root())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    // The block in docs/protocol.md, as printed.
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md"),
    )
    .unwrap();
    let block = doc
        .split("<!-- gitignore -->\n```gitignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/protocol.md has the gitignore block");
    assert_eq!(
        block
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        coord::layout::GITIGNORE_LINES,
        "the docs and coord init write the same lines"
    );
    env.write(".gitignore", block);
    env.write("SHARED.txt", "v1\n");
    env.write("src/a.rs", "fn a() {}\n");
    env.agent("claude").args(["presence", ".", "T"]).ok();
    env.agent("gemini").args(["presence", ".", "T"]).ok();
    env.agent("claude").args(["handshake"]).ok();
    env.agent("claude")
        .args(["lock", "SHARED.txt", "src/a.rs"])
        .ok();
    env.agent("gemini")
        .args(["write", "SHARED.txt"])
        .stdin("v2\n")
        .code(3);
    env.agent("claude")
        .args(["msg", "send", "gemini", "hi"])
        .ok();
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    let mut listed: Vec<&str> = status.lines().map(|l| &l[3..]).collect();
    listed.sort();
    assert_eq!(listed, [".gitignore", "SHARED.txt", "src/a.rs"], "{status}");
}

/// A workspace removed while an agent waits in it stays removed: the waiter ends with an error
/// instead of making the folder again and reporting a lock in it.
#[test]
fn a_workspace_removed_under_a_waiter_is_not_brought_back() {
    let env = Env::new();
    env.write("a.md", "a");
    env.agent("claude").args(["lock", "a.md"]).ok();
    let waiter = env
        .agent("gemini")
        .args(["lock", "a.md", "--wait", "20s"])
        .spawn();
    let presence = env.path(".gemini_presence");
    eventually("the waiter waits", || {
        std::fs::read_to_string(&presence).is_ok_and(|t| t.contains("WAITING"))
    });
    // Gone at once: moved away (then removed), as a tidy-up or a `git worktree remove` would.
    let moved = env.root().with_extension("gone");
    std::fs::rename(env.root(), &moved).unwrap();
    let out = waiter.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&moved);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Gone while it slept (it cannot make `.coord/` again) or while it wrote (it cannot write
    // beside the file): an error either way.
    assert!(
        (stderr.contains("error: cannot create folder")
            && stderr.contains("the workspace folder is gone"))
            || stderr.contains("error: cannot create a temporary file in"),
        "{stderr}"
    );
    assert!(!env.root().exists(), "the removed workspace was made again");
}

#[test]
fn a_hostile_state_folder_is_refused_and_nothing_is_written_through_it() {
    for kind in ALL {
        let bed = Bed::new();
        let state = bed.at(".coord");
        // A symlinked `.coord` points at a real folder outside, which must stay empty.
        if kind == Kind::Symlink {
            std::os::unix::fs::symlink(bed.env.path("outside"), &state).unwrap();
        } else if kind == Kind::Dir {
            continue; // a folder is what `.coord` should be
        } else {
            plant(&state, kind, &bed.victim());
        }
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md"]);
        expect(&out, 1);
        assert!(out.stderr.contains(".coord"), "{kind:?}: {}", out.stderr);
        assert!(out.stderr.contains("hint: "), "{kind:?}: {}", out.stderr);
        assert!(!bed.at("a.md.lock.claude").exists());
        expect(&bed.run(Some("claude"), &["presence", "x"]), 1);
        expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 1);
        expect(&bed.run(None, &["status"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        assert!(tree(&bed.env.path("outside")).is_empty());
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_mutex_is_refused_with_its_name() {
    for kind in ALL {
        let bed = Bed::new();
        let mutex = bed.at(".coord/mutex");
        plant(&mutex, kind, &bed.victim());
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md"]);
        if kind.readable() || kind == Kind::Huge {
            // Its content does not matter: only the kernel lock on it does.
            expect(&out, 0);
            expect(&bed.run(Some("claude"), &["unlock"]), 0);
        } else {
            expect(&out, 1);
            assert!(
                out.stderr.contains(".coord/mutex"),
                "{kind:?}: {}",
                out.stderr
            );
            assert!(!bed.at("a.md.lock.claude").exists());
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 1);
        }
        expect(&bed.run(None, &["status"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn an_unusable_state_folder_is_an_io_failure() {
    let env = Env::new();
    env.write(".coord", "not a folder");
    env.agent("claude")
        .args(["lock", "a.md"])
        .code(1)
        .stderr_has("error: cannot create folder");
}

#[test]
fn root_is_found_from_a_subfolder() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".coord")).unwrap();
    std::fs::create_dir_all(env.path("src/deep")).unwrap();
    env.agent("claude")
        .env_remove("COORD_DIR")
        .cwd(env.path("src/deep"))
        .args(["lock", "../lib.rs"])
        .ok()
        .stdout_has("Lock acquired: src/lib.rs");
    assert!(env.exists("src/lib.rs.lock.claude"));
    assert!(env.exists(".claude_presence"), "presence lives at the root");
}
