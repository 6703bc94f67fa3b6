//! `coord hook CLIENT` on shell tool calls: a commit or a push through any client's shell tool
//! is checked like the git guard.

use crate::clients::hooks::{CLAUDE, denied, fixture_json, hook};
use crate::support::Env;

/// `git` in `env`'s root.
fn git(env: &Env, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(env.root())
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Issue 35: a commit made through a client's shell tool is checked before it runs, as the
/// pre-commit guard would (a client may run git with its hooks off: Gemini CLI empties
/// `core.hooksPath`). Denied in the client's format naming the holder and the file; a
/// session's own lock does not block its own commit; other commands are allowed.
#[test]
fn a_commit_through_each_clients_shell_tool_is_checked_like_the_guard() {
    let env = Env::new();
    if !crate::rigs::git_or_skip() {
        return;
    }
    let root = env.root().display().to_string();
    git(&env, &["init", "-q"]);
    env.write("a.txt", "one\n");
    env.write("sub/b.txt", "one\n");
    git(&env, &["add", "a.txt", "sub/b.txt"]);
    git(&env, &["commit", "-q", "-m", "first"]);
    env.write("a.txt", "two\n");

    let claude = |cmd: &str| {
        let mut v = fixture_json(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
        v["tool_name"] = "Bash".into();
        v["tool_input"] = serde_json::json!({"command": cmd, "description": "commit"});
        v.to_string()
    };
    let codex = |cmd: &str| {
        let mut v = fixture_json(&env, "codex/PreToolUse.shell.json");
        v["tool_input"]["command"] = cmd.into();
        v.to_string()
    };
    // Codex's shell call as an argv (`["bash", "-lc", SCRIPT]`): the script is what runs.
    let codex_argv = |cmd: &str| {
        let mut v = fixture_json(&env, "codex/PreToolUse.shell.json");
        v["tool_input"]["command"] = serde_json::json!(["bash", "-lc", cmd]);
        v.to_string()
    };
    let gemini = |cmd: &str| {
        let mut v = fixture_json(&env, "gemini-0.61.0/deny.BeforeTool.json");
        v["tool_name"] = "run_shell_command".into();
        v["tool_input"] = serde_json::json!({"command": cmd, "description": "commit"});
        v.to_string()
    };
    let copilot = |cmd: &str| {
        let mut v = fixture_json(&env, "copilot-1.0.102/deny.preToolUse.json");
        v["toolName"] = "bash".into();
        v["toolArgs"] = serde_json::json!({"command": cmd, "description": "commit"});
        v.to_string()
    };
    let cases: [(&str, String); 5] = [
        ("claude", claude("git add a.txt && git commit -m wip")),
        ("codex", codex("git commit -am wip")),
        ("codex", codex_argv("git commit -q -a -m wip")),
        (
            "gemini",
            gemini(&format!("cd {root} && git -C . commit -a -m wip")),
        ),
        ("copilot", copilot("git add -A; git commit -m 'wip'")),
    ];
    env.agent("holder")
        .args(["lock", "a.txt", "--reason", "rewriting a"])
        .ok();
    for (client, payload) in &cases {
        let event: &[&str] = if *client == "copilot" {
            &["--event", "preToolUse"]
        } else {
            &[]
        };
        let out = hook(&env, client, payload, event);
        let reason = denied(client, &out)
            .unwrap_or_else(|| panic!("{client}: a commit of a held file must be denied: {out:?}"));
        assert!(
            reason.contains("holder") && reason.contains("`a.txt`") && reason.contains("git guard"),
            "{client}: {reason}"
        );
        // A command that neither commits nor pushes is the shell's business.
        let status = payload.replace("commit", "status");
        assert_eq!(
            denied(client, &hook(&env, client, &status, event)),
            None,
            "{client}"
        );
    }
    // COORD_GUARD=warn lets it through, as it does the git hook.
    let out = env
        .cmd()
        .env_remove("COORD_DIR")
        .env("COORD_GUARD", "warn")
        .args(["hook", "claude"])
        .stdin(cases[0].1.clone())
        .ok();
    assert_eq!(denied("claude", &out), None);
    // The session's own lock does not block its own commit.
    env.agent("holder").args(["unlock", "a.txt"]).ok();
    env.agent("claude-10bf7680").args(["lock", "a.txt"]).ok();
    assert_eq!(
        denied("claude", &hook(&env, "claude", &cases[0].1, &[])),
        None
    );
    // Another session of the same client is refused.
    let rival = claude("git commit -am wip").replace("10bf7680", "77777777");
    let reason = denied("claude", &hook(&env, "claude", &rival, &[])).unwrap();
    assert!(reason.contains("claude-10bf7680"), "{reason}");
    // Unheld files commit freely.
    env.agent("claude-10bf7680").args(["unlock", "a.txt"]).ok();
    assert_eq!(denied("claude", &hook(&env, "claude", &rival, &[])), None);
}

/// Issue 35: a `git push` through the shell tool is checked like the pre-push guard: the
/// commits not yet on the remote touch a held file, so it is denied.
#[test]
fn a_push_through_the_shell_tool_of_unpushed_commits_touching_a_held_file_is_denied() {
    let env = Env::new();
    if !crate::rigs::git_or_skip() {
        return;
    }
    let remote = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(remote.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    git(&env, &["init", "-q", "-b", "main"]);
    env.write("a.txt", "one\n");
    env.write("b.txt", "one\n");
    git(&env, &["add", "."]);
    git(&env, &["commit", "-q", "-m", "first"]);
    git(
        &env,
        &[
            "remote",
            "add",
            "origin",
            &remote.path().display().to_string(),
        ],
    );
    git(&env, &["push", "-q", "-u", "origin", "main"]);
    env.write("a.txt", "two\n");
    git(&env, &["commit", "-q", "-am", "second"]);
    env.agent("holder").args(["lock", "a.txt"]).ok();
    env.agent("other").args(["lock", "b.txt"]).ok();

    let mut v = fixture_json(&env, "gemini-0.61.0/deny.BeforeTool.json");
    v["tool_name"] = "run_shell_command".into();
    v["tool_input"] = serde_json::json!({"command": "git push origin main", "dir_path": "."});
    let reason = denied("gemini", &hook(&env, "gemini", &v.to_string(), &[]))
        .expect("a push of a commit touching a held file is denied");
    assert!(
        reason.contains("pushes `a.txt`") && reason.contains("holder"),
        "{reason}"
    );
    // b.txt is held too, but no unpushed commit touches it.
    assert!(!reason.contains("b.txt"), "{reason}");
    env.agent("holder").args(["unlock", "a.txt"]).ok();
    assert_eq!(
        denied("gemini", &hook(&env, "gemini", &v.to_string(), &[])),
        None
    );
}

/// A shell command that commits several held files (in one git call or several) is denied
/// naming each of them once.
#[test]
fn a_shell_commit_of_several_held_files_names_each_once() {
    let env = Env::new();
    if !crate::rigs::git_or_skip() {
        return;
    }
    git(&env, &["init", "-q"]);
    env.write("a.txt", "one\n");
    env.write("sub/b.txt", "one\n");
    git(&env, &["add", "a.txt", "sub/b.txt"]);
    git(&env, &["commit", "-q", "-m", "first"]);
    env.write("a.txt", "two\n");
    env.write("sub/b.txt", "two\n");
    env.agent("holder").args(["lock", "a.txt"]).ok();
    env.agent("other").args(["lock", "sub/b.txt"]).ok();
    let mut v = fixture_json(&env, &format!("{CLAUDE}/write_deny.PreToolUse.json"));
    v["tool_name"] = "Bash".into();
    v["tool_input"] = serde_json::json!({
        "command": "git commit -am one && git commit -am two",
        "description": "commit"
    });
    let reason = denied("claude", &hook(&env, "claude", &v.to_string(), &[]))
        .expect("a commit of held files is denied");
    for (file, holder) in [("`a.txt`", "holder"), ("`sub/b.txt`", "other")] {
        assert_eq!(reason.matches(file).count(), 1, "{file} once: {reason}");
        assert!(reason.contains(holder), "{reason}");
    }
}
