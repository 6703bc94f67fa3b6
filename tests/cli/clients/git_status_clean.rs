//! In a git repository nobody set up for coord (no `coord init`, no plugin), nothing of coord's
//! shows in `git status`, whichever command writes first (#10): its first write puts coord's
//! block into the repository's `info/exclude` and writes `.coord/.gitignore`, as a plugin's
//! hook does; the user's `.gitignore` is never written. Real `git init`, `git worktree add` and
//! `git submodule add`; `git status` itself is the judge.

use std::path::Path;

use crate::support::{Cmd, Env};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = crate::rigs::git(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The user's own ignore file, committed with the repository.
const USER_GITIGNORE: &str = "target/\n";

/// A repository with `a.txt`, `b.txt` and the user's `.gitignore`, committed; coord never ran
/// there.
fn repo() -> Env {
    let env = Env::new();
    git(env.root(), &["init", "-q", "-b", "trunk"]);
    env.write("a.txt", "one\n");
    env.write("b.txt", "one\n");
    env.write(".gitignore", USER_GITIGNORE);
    git(env.root(), &["add", "."]);
    git(env.root(), &["commit", "-qm", "start"]);
    env
}

/// What `git status` shows in `dir`, every untracked file listed, ignored ones not.
fn status(dir: &Path) -> Vec<String> {
    git(
        dir,
        &[
            "status",
            "--porcelain",
            "--ignored=no",
            "--untracked-files=all",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// A Claude hook payload: an edit of `file` by session `session` (no plugin: a hook the user
/// wired by hand).
fn edit_payload(env: &Env, session: &str, file: &str) -> String {
    serde_json::json!({
        "hook_event_name": "PreToolUse", "session_id": session, "cwd": env.root(),
        "tool_name": "Write",
        "tool_input": {"file_path": env.path(file), "content": "two\n"},
    })
    .to_string()
}

/// An MCP client's session: the handshake, then a `lock` of `a.txt`.
const MCP_LOCK: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lock","arguments":{"files":["a.txt"]}}}"#,
    "\n"
);

/// Each command that writes into the work tree, run as the first coord command of all, leaves
/// nothing of coord's in `git status`: neither then, nor once a lock and a presence exist. The
/// lines it may leave are the work products the command is asked for (a note in a tracked
/// file, the dialogue folder, the shared log), which `coord init` does not hide either.
#[test]
fn every_command_that_writes_first_leaves_nothing_of_coords_in_git_status() {
    type Case = (&'static str, fn(&Env) -> Cmd, &'static [&'static str]);
    let cases: &[Case] = &[
        ("lock", |e| e.agent("alice").args(["lock", "a.txt"]), &[]),
        (
            "presence",
            |e| e.agent("alice").args(["presence", ".", "Task_1"]),
            &[],
        ),
        (
            "note",
            |e| e.agent("alice").args(["note", "a.txt", "hello"]),
            &[" M a.txt"],
        ),
        ("handshake", |e| e.agent("alice").args(["handshake"]), &[]),
        (
            "msg send",
            |e| e.agent("alice").args(["msg", "send", "bob", "hi"]),
            &[],
        ),
        (
            "run",
            |e| e.agent("alice").args(["run", "a.txt", "--", "true"]),
            &[],
        ),
        ("startup", |e| e.agent("alice").args(["startup"]), &[]),
        (
            "session",
            |e| e.agent("alice").args(["session", "--", "true"]),
            &[],
        ),
        ("unlock", |e| e.agent("alice").args(["unlock"]), &[]),
        (
            "dialogue init",
            |e| e.agent("alice").args(["dialogue", "init", "--topic", "t"]),
            &[
                "?? agent-dialogue/conversation.md",
                "?? agent-dialogue/current-turn.txt",
                "?? agent-dialogue/status.json",
                "?? agent-dialogue/user-commands.txt",
            ],
        ),
        (
            "collab write",
            |e| e.agent("alice").args(["collab", "write", "hi"]),
            &["?? collaboration_file.txt"],
        ),
        (
            "hook",
            |e| {
                e.cmd()
                    .args(["hook", "claude", "--wait", "0"])
                    .stdin(edit_payload(e, "aaaa1111", "a.txt"))
            },
            &[],
        ),
        ("mcp", |e| e.agent("alice").arg("mcp").stdin(MCP_LOCK), &[]),
    ];
    let mut shown = Vec::new();
    for (name, first, products) in cases {
        let env = repo();
        first(&env).ok();
        let after_first = status(env.root());
        // A lock (with its backup) and a presence, taken afterwards: still nothing.
        env.agent("bob").args(["lock", "b.txt"]).ok();
        env.agent("carol").args(["presence", ".", "Task_2"]).ok();
        assert!(env.exists("b.txt.lock.bob") && env.exists(".carol_presence"));
        for (when, got) in [("first", after_first), ("then", status(env.root()))] {
            if got != *products {
                shown.push(format!("`coord {name}` ({when}): {got:?}"));
            }
        }
        assert_eq!(env.read(".gitignore"), USER_GITIGNORE, "{name}");
    }
    assert!(
        shown.is_empty(),
        "coord's files in `git status`:\n{}",
        shown.join("\n")
    );
}

/// A refused `coord write`, the first command of all, keeps the content in
/// `FILE.rejected.<agent>`: coord's file, hidden as the others.
#[test]
fn a_refused_write_as_the_first_command_keeps_its_content_out_of_git_status() {
    let env = repo();
    env.agent("alice")
        .args(["write", "a.txt"])
        .stdin("two\n")
        .code(3);
    assert_eq!(env.read("a.txt.rejected.alice"), "two\n");
    assert_eq!(status(env.root()), Vec::<String>::new());
    assert_eq!(env.read(".gitignore"), USER_GITIGNORE);
}

/// The exclude block goes into the repository's common git folder, which git reads for every
/// work tree: a lock taken first in a linked worktree (real `git worktree add`) shows in
/// neither tree, nor does one taken afterwards in the main tree.
#[test]
fn a_first_lock_in_a_linked_worktree_shows_in_no_work_tree() {
    let env = repo();
    let elsewhere = Env::new();
    let wt = elsewhere.path("wt");
    git(
        env.root(),
        &[
            "worktree",
            "add",
            "-q",
            &wt.to_string_lossy(),
            "-b",
            "feature",
        ],
    );
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&wt)
        .args(["lock", "a.txt"])
        .ok();
    assert!(wt.join("a.txt.lock.alice").exists());
    assert!(
        env.exists(".alice_presence"),
        "presences live in the main tree"
    );
    assert!(env.read(".git/info/exclude").contains("*.lock.*"));
    env.agent("bob")
        .env_remove("COORD_DIR")
        .args(["lock", "b.txt"])
        .ok();
    env.agent("bob")
        .env_remove("COORD_DIR")
        .args(["presence", ".", "Task_2"])
        .ok();
    assert_eq!(status(env.root()), Vec::<String>::new());
    assert_eq!(status(&wt), Vec::<String>::new());
    assert_eq!(env.read(".gitignore"), USER_GITIGNORE);
    assert_eq!(
        std::fs::read_to_string(wt.join(".gitignore")).unwrap(),
        USER_GITIGNORE
    );
}

/// A lock on a file inside a submodule lies in the submodule's work tree, which git reads with
/// the submodule's own exclude file: neither the submodule's `git status` nor the
/// superproject's (which would show the submodule as changed) shows it.
#[test]
fn a_first_lock_inside_a_submodule_shows_in_neither_repository() {
    let (env, sup) = crate::locks::submodules::superproject();
    crate::locks::submodules::from(&env, &sup.join("sub"), "alice")
        .args(["lock", "d/f.rs"])
        .ok();
    assert!(sup.join("sub/d/f.rs.lock.alice").exists());
    assert_eq!(status(&sup), Vec::<String>::new());
    assert_eq!(status(&sup.join("sub")), Vec::<String>::new());
    assert!(!sup.join(".gitignore").exists());
}

/// `git config coord.enabled false` keeps coord out of the repository's git files: a command
/// run there by hand does its work, and adopts nothing.
#[test]
fn a_repository_that_turns_coord_off_is_not_adopted() {
    let env = repo();
    git(env.root(), &["config", "coord.enabled", "false"]);
    let exclude = env.read(".git/info/exclude");
    env.agent("alice").args(["lock", "a.txt"]).ok();
    assert!(env.exists("a.txt.lock.alice"));
    assert_eq!(env.read(".git/info/exclude"), exclude);
    assert!(!env.exists(".coord/.gitignore"));
}

/// A repository `coord init` wired keeps coord's lines in its `.gitignore`: the first lock
/// after `init` adds nothing to `info/exclude`.
#[test]
fn a_repository_wired_by_init_is_left_to_its_gitignore() {
    let env = repo();
    let exclude = env.read(".git/info/exclude");
    env.cmd().args(["init", "--client", "claude"]).ok();
    env.agent("alice").args(["lock", "a.txt"]).ok();
    assert_eq!(env.read(".git/info/exclude"), exclude);
    assert!(!env.exists(".coord/.gitignore"));
    assert!(
        status(env.root())
            .iter()
            .all(|l| !l.contains("lock") && !l.contains(".coord")),
        "{:?}",
        status(env.root())
    );
}
