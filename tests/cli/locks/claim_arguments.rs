//! A folder (`src/`) or a pattern (`'src/**'`) given to a command that takes FILEs: the claim,
//! on every command and door where a claim makes sense (`lock`, `unlock`, `run`, `who`, `log`,
//! the MCP `lock` and `unlock`), refused with exit 2 where it does not (`write`, `note`,
//! `restore`, `presence --file`, `collab --file`, the MCP `write` and `note`); a file whose name
//! holds a wildcard is named with a `\` before it, and a client's tool path is always a file.

use std::path::Path;

use serde_json::json;

use crate::clients::hooks::{denied, hook};
use crate::clients::mcp::Client;
use crate::locks::claims::repo;
use crate::support::{Env, coord_bin, eventually, finish, hold_with_run};

/// `coord` as `agent` started in `dir`, finding its workspace as a user's shell would.
fn coord(env: &Env, dir: &Path, agent: &str) -> crate::support::Cmd {
    env.agent(agent).env_remove("COORD_DIR").cwd(dir)
}

/// `coord status --json`'s claims, seen from `dir`.
fn claims(env: &Env, dir: &Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value = env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(dir)
        .args(["status", "--json"])
        .ok()
        .json();
    v["claims"].as_array().cloned().unwrap_or_default()
}

fn waiting(dir: &Path, agent: &str) -> bool {
    std::fs::read_to_string(dir.join(format!(".{agent}_presence")))
        .is_ok_and(|p| p.contains("lock_status: WAITING"))
}

/// #45: `coord run 'src/**' -- CMD` in one worktree, while another agent holds `src/x.rs` in
/// another, neither locks a file named `src/**` nor runs CMD: it is refused when its wait
/// ends, and when the file is released within the wait, CMD runs then and only then.
#[test]
fn run_of_a_pattern_waits_for_a_file_held_in_another_worktree_before_it_runs_cmd() {
    let (env, main, b) = repo();
    coord(&env, &main, "alice").args(["lock", "src/x.rs"]).ok();
    let before = env.snapshot();
    coord(&env, &b, "bob")
        .args(["run", "src/**", "--wait", "300ms", "--"])
        .args(["/bin/sh", "-c", ": > witness"])
        .code(3)
        .stderr_has("src/x.rs")
        .stderr_has("alice");
    assert!(!b.join("witness").exists(), "CMD ran");
    assert!(claims(&env, &b).is_empty());
    // Nothing named after the pattern, no lock of bob's: the trees are as they were (bar the
    // history and bob's presence under the main tree).
    let changed: Vec<String> = env
        .snapshot()
        .into_iter()
        .filter(|(k, v)| before.get(k) != Some(v))
        .map(|(k, _)| k)
        .filter(|k| !k.starts_with("main/.coord/") && k != "main/.bob_presence")
        .collect();
    assert_eq!(changed, Vec::<String>::new());

    // Within its wait: CMD runs once alice lets go, and not before.
    let run = coord(&env, &b, "bob")
        .args(["run", "src/**", "--wait", "1m", "--"])
        .args(["/bin/sh", "-c", ": > witness"])
        .spawn();
    eventually("bob waits", || waiting(&main, "bob"));
    assert!(
        !b.join("witness").exists(),
        "CMD ran while src/x.rs was held"
    );
    coord(&env, &main, "alice").args(["unlock"]).ok();
    let out = finish(run);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(b.join("witness").exists());
    assert!(!b.join("src/**").exists());
    // Released at exit.
    assert!(claims(&env, &b).is_empty());
}

/// #45: the claim of `coord run DIR/ -- CMD` holds every path below DIR in every worktree
/// while CMD runs (a lock there is refused, all or nothing with the run's files), and is gone
/// when CMD ends.
#[test]
fn run_of_a_folder_holds_the_claim_while_cmd_runs_and_releases_it_after() {
    let (env, main, b) = repo();
    std::fs::write(b.join("notes.md"), "n\n").unwrap();
    // CMD asks, as carol, for a path the claim holds (in the other tree), and for one it does
    // not; it writes what each got.
    let script = r#""$0" -a carol lock src/new.rs --no-wait 2>/dev/null; echo $? > in_claim
"$0" -a carol lock README.md --no-wait >/dev/null 2>&1; echo $? > outside"#;
    coord(&env, &b, "bob")
        .args(["run", "notes.md", "src/", "--"])
        .args(["/bin/sh", "-c", script, coord_bin()])
        .ok();
    assert_eq!(std::fs::read_to_string(b.join("in_claim")).unwrap(), "3\n");
    assert_eq!(std::fs::read_to_string(b.join("outside")).unwrap(), "0\n");
    assert!(claims(&env, &main).is_empty());
    assert!(!b.join("notes.md.lock.bob").exists());
    coord(&env, &main, "carol")
        .args(["lock", "src/new.rs", "--no-wait"])
        .ok();
    // And the other way: the run's claim is refused, with its file, while carol holds a path it
    // matches; CMD does not run.
    coord(&env, &b, "bob")
        .args(["run", "notes.md", "src/", "--no-wait", "--"])
        .args(["/bin/sh", "-c", ": > witness"])
        .code(3)
        .stderr_has("carol");
    assert!(!b.join("witness").exists());
    assert!(!b.join("notes.md.lock.bob").exists());
}

/// #45: a `coord run` killed outright leaves its claim STALE at once (it records the run's
/// process), as it leaves its locks.
#[test]
fn a_killed_runs_claim_is_stale_at_once() {
    let env = Env::new();
    let mut run = hold_with_run(&env, "bob", "docs/");
    assert_eq!(claims(&env, env.root())[0]["state"], "LIVE");
    run.kill().unwrap();
    run.wait().unwrap();
    let c = claims(&env, env.root());
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["pattern"], "docs/**");
    assert_eq!(c[0]["state"], "STALE");
    // The command itself outlives a `coord run` killed outright: it is told to end.
    env.write("stop", "");
}

/// #45: a folder or a pattern given to a command that acts on one file's content is refused
/// with exit 2 and a clear `error:` line; nothing is created (no file named `src/*`, no
/// `.rejected`, no lock), through the CLI and through `coord mcp` alike.
#[test]
fn write_note_restore_and_presence_of_a_folder_or_pattern_are_refused_leaving_the_tree_as_it_was() {
    let env = Env::new();
    env.write("src/a.rs", "a\n");
    env.write("src/a.rs.bak", "old\n");
    env.agent("alice").args(["presence", "work"]).ok();
    let before = env.snapshot();
    for arg in ["src/*", "src/", "src/**/*.rs", "src/[ab].rs", "src/[a"] {
        let refused = |out: &crate::support::Output| {
            out.stderr_has("error:")
                .stderr_has(&format!("`{arg}` is a folder or a pattern"))
                .stderr_has("takes one file")
                .stderr_has("hint:");
        };
        refused(&env.agent("alice").args(["note", arg, "hello"]).code(2));
        refused(
            &env.agent("alice")
                .args(["write", arg])
                .stdin("new\n")
                .code(2),
        );
        refused(&env.agent("alice").args(["restore", arg]).code(2));
        refused(&env.agent("alice").args(["restore", arg, "--list"]).code(2));
        refused(&env.agent("alice").args(["presence", "--file", arg]).code(2));
        refused(
            &env.agent("alice")
                .args(["collab", "write", "hi", "--file", arg])
                .code(2),
        );
        assert_eq!(env.snapshot(), before, "{arg}");
    }
    let mut c = Client::start(&env, Some("alice"));
    c.initialize("2025-06-18");
    for (tool, args) in [
        ("write", json!({"file": "src/*", "content": "new\n"})),
        ("note", json!({"file": "src/", "text": "hello"})),
        ("presence", json!({"file": "src/**"})),
    ] {
        let r = c.call(tool, args);
        assert_eq!(r["isError"], true, "{tool}: {r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("is a folder or a pattern"), "{tool}: {text}");
    }
    drop(c);
    let after = env.snapshot();
    let made: Vec<&String> = after
        .keys()
        .filter(|k| !before.contains_key(*k) && k.starts_with("src"))
        .collect();
    assert_eq!(made, Vec::<&String>::new());
    assert_eq!(after["src/a.rs"], b"a\n");
}

/// #45: a file whose name holds a wildcard is named on the command line with a `\` before it
/// (as in a pattern), and is then the very file a client's tool names: a hook's path is always
/// one file, taken as it is. Without the `\`, the same text is a pattern.
#[test]
fn a_file_named_with_wildcards_is_one_file_with_backslashes_and_always_one_file_to_a_hook() {
    let env = Env::new();
    env.write("a[1].md", "one\n");
    env.write("a1.md", "plain\n");
    env.agent("alice")
        .args(["lock", r"a\[1\].md"])
        .ok()
        .stdout_has("Lock acquired: a[1].md");
    assert!(env.exists("a[1].md.lock.alice"));
    // A client's edit of that file, in another session, is denied naming alice.
    let root = env.root().display();
    let edit = |file: &str, session: &str| {
        format!(
            r#"{{"session_id":"{session}","cwd":"{root}","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"{root}/{file}","content":"x"}}}}"#
        )
    };
    let out = hook(
        &env,
        "claude",
        &edit("a[1].md", "5a5a5a5a-1"),
        &["--wait", "0"],
    );
    let reason = denied("claude", &out).expect("the edit of a[1].md is denied");
    assert!(reason.contains("alice"), "{reason}");
    // The plain file is free: the hook locked the literal `a1.md`, not a pattern.
    let out = hook(
        &env,
        "claude",
        &edit("a1.md", "5a5a5a5a-1"),
        &["--wait", "0"],
    );
    assert_eq!(denied("claude", &out), None);
    assert!(env.exists("a1.md.lock.claude-5a5a5a5a"));
    // alice writes, notes and restores the file by the same name.
    env.agent("alice")
        .args(["write", r"a\[1\].md"])
        .stdin("two\n")
        .ok();
    assert_eq!(env.read("a[1].md"), "two\n");
    env.agent("alice").args(["note", r"a\[1\].md", "hi"]).ok();
    env.agent("alice").args(["restore", r"a\[1\].md"]).ok();
    env.agent("alice")
        .args(["unlock", r"a\[1\].md"])
        .ok()
        .stdout_has("Lock released: a[1].md");
    assert!(!env.exists("a[1].md.lock.alice"));
    // Without the `\`: a claim on what the pattern matches (`a1.md`, held by the hook's
    // session), not the file `a[1].md`.
    env.agent("alice")
        .args(["lock", "a[1].md", "--no-wait"])
        .code(3)
        .stderr_has("claude-5a5a5a5a");
}

/// #45: `coord who` and `coord log` of a folder or a pattern are about what it holds: the locks
/// on the files it matches, the claims it overlaps, their events.
#[test]
fn who_and_log_of_a_pattern_show_what_it_holds() {
    let (env, main, b) = repo();
    coord(&env, &main, "alice").args(["lock", "src/x.rs"]).ok();
    coord(&env, &main, "carol").args(["lock", "src/db/"]).ok();
    coord(&env, &b, "bob")
        .args(["who", "src/**"])
        .ok()
        .stdout_has("src/x.rs: held by alice")
        .stdout_has("claimed by carol with `src/db/**`");
    let v: serde_json::Value = coord(&env, &b, "bob")
        .args(["who", "src/*.rs", "--json"])
        .ok()
        .json();
    let f = &v["files"][0];
    assert_eq!(f["file"], "src/*.rs", "{v}");
    assert_eq!(f["claim"], true, "{v}");
    assert_eq!(f["locks"][0]["file"], "src/x.rs", "{v}");
    assert_eq!(f["claims"], json!([]), "{v}");
    let log = coord(&env, &b, "bob").args(["log", "src/*/"]).ok();
    assert!(
        log.stdout.contains("alice (main, trunk) locked `src/x.rs`"),
        "{}",
        log.stdout
    );
    assert!(log.stdout.contains("carol"), "{}", log.stdout);
    let log = coord(&env, &b, "bob").args(["log", "docs/"]).ok();
    assert!(!log.stdout.contains("alice"), "{}", log.stdout);
}
