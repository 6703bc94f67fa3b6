//! Edits the edit tools did not make: a shell tool call that changes a file another agent holds
//! is reported to the agent right after it ran, in its client's own format, and logged.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{Env, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A fixture as JSON with its project and home paths moved into `env`'s root.
fn fixture(env: &Env, rel: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(rel)).unwrap();
    let root = env.root().to_str().unwrap();
    serde_json::from_str(
        &text
            .replace("/home/dev/proj", root)
            .replace("/home/dev", "/nonexistent-home"),
    )
    .unwrap()
}

/// One client's shell tool: the payloads before and after a call running `command`, and the
/// `--event` flags each needs.
struct Client {
    name: &'static str,
    before: Value,
    after: Value,
    flags: (&'static [&'static str], &'static [&'static str]),
}

fn clients(env: &Env, command: &str) -> Vec<Client> {
    let with = |mut v: Value, event: &str, tool: &str, input: Value| {
        if v.get("hook_event_name").is_some() {
            v["hook_event_name"] = event.into();
        }
        if v.get("toolName").is_some() {
            v["toolName"] = tool.into();
            v["toolArgs"] = input.to_string().into();
        } else {
            v["tool_name"] = tool.into();
            v["tool_input"] = input;
        }
        v
    };
    let pair = |name, file: &str, events: (&str, &str), tool: &str, input: Value| {
        let base = fixture(env, file);
        let mut after = with(base.clone(), events.1, tool, input.clone());
        after["tool_response"] = json!("ok");
        (name, with(base, events.0, tool, input), after)
    };
    let cmd = json!({"command": command, "description": "edit through the shell"});
    let mut out = Vec::new();
    for (name, before, after) in [
        pair(
            "claude",
            "claude-code-2.1.328/write_deny.PreToolUse.json",
            ("PreToolUse", "PostToolUse"),
            "Bash",
            cmd.clone(),
        ),
        pair(
            "codex",
            "codex/PreToolUse.shell.json",
            ("PreToolUse", "PostToolUse"),
            "Bash",
            json!({"command": command}),
        ),
        pair(
            "gemini",
            "gemini-0.61.0/deny.BeforeTool.json",
            ("BeforeTool", "AfterTool"),
            "run_shell_command",
            cmd.clone(),
        ),
        pair(
            "copilot",
            "copilot/preToolUse.bash.json",
            ("preToolUse", "postToolUse"),
            "bash",
            cmd.clone(),
        ),
        pair(
            "qwen",
            "qwen-code-0.15.10/allow.PreToolUse.json",
            ("PreToolUse", "PostToolUse"),
            "run_shell_command",
            cmd.clone(),
        ),
        pair(
            "opencode",
            "opencode-1.18.33/allow.tool.execute.before.json",
            ("tool.execute.before", "tool.execute.after"),
            "bash",
            json!({"command": command, "description": "edit through the shell"}),
        ),
        pair(
            "cline",
            "cline-3.0.65/shell.beforeTool.json",
            ("beforeTool", "afterTool"),
            "run_commands",
            json!({"commands": [command]}),
        ),
    ] {
        let flags: (&[&str], &[&str]) = if name == "copilot" {
            (&["--event", "preToolUse"], &["--event", "postToolUse"])
        } else {
            (&[], &[])
        };
        out.push(Client {
            name,
            before,
            after,
            flags,
        });
    }
    out
}

/// `coord hook CLIENT` fed `payload` (Copilot's payload names no session: its agent is set).
fn hook(env: &Env, client: &str, payload: &Value, flags: &[&str]) -> Output {
    let mut cmd = env
        .cmd()
        .env_remove("COORD_DIR")
        .cwd(crate::support::outside());
    if client == "copilot" {
        cmd = cmd.env("COORD_AGENT", "copilot-shell");
    }
    cmd.args(["hook", client])
        .args(flags)
        .stdin(payload.to_string())
        .ok()
}

/// The notice the agent gets, whatever the client's format; `None` when nothing was said.
fn notice(client: &str, out: &Output) -> Option<String> {
    let text = out.stdout.trim();
    if text.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let said = match client {
        "claude" | "codex" | "qwen" => {
            assert_eq!(
                v["hookSpecificOutput"]["hookEventName"], "PostToolUse",
                "{v}"
            );
            assert_eq!(
                v["systemMessage"],
                v["hookSpecificOutput"]["additionalContext"]
            );
            &v["hookSpecificOutput"]["additionalContext"]
        }
        "gemini" => {
            assert_eq!(v["hookSpecificOutput"]["hookEventName"], "AfterTool", "{v}");
            &v["hookSpecificOutput"]["additionalContext"]
        }
        "copilot" => &v["additionalContext"],
        // Their plugins hand `context` to the session.
        "opencode" | "cline" => &v["context"],
        _ => unreachable!(),
    };
    Some(said.as_str().unwrap_or_else(|| panic!("{v}")).to_string())
}

/// The `shell_edit` events of the history, oldest first.
pub(crate) fn shell_edits(env: &Env) -> Vec<Value> {
    env.cmd()
        .args(["log", "--json"])
        .ok()
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "shell_edit")
        .collect()
}

/// Every client: a shell call that changes a held file is told so right after it ran, naming
/// the file and its holder, in the client's context channel; a file nobody else holds, and a
/// call that changes nothing, are not mentioned; each report is in the history.
#[test]
fn each_clients_shell_call_that_changes_a_held_file_is_told_at_once() {
    let env = Env::new();
    env.write("held.txt", "the holder's\n");
    env.write("free.txt", "anyone's\n");
    env.agent("holder")
        .args(["lock", "held.txt", "--reason", "rewriting it"])
        .ok();
    for (i, c) in clients(&env, "sed -i s/x/y/ held.txt free.txt")
        .into_iter()
        .enumerate()
    {
        // A call that changes nothing held: nothing said.
        assert_eq!(
            notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
            None
        );
        env.write("free.txt", format!("changed by {}\n", c.name));
        let quiet = hook(&env, c.name, &c.after, c.flags.1);
        assert_eq!(notice(c.name, &quiet), None, "{}: {quiet:?}", c.name);

        // The same call, now changing the held file too.
        assert_eq!(
            notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
            None
        );
        env.write("held.txt", format!("changed by {}\n", c.name));
        env.write("free.txt", format!("changed again by {}\n", c.name));
        let out = hook(&env, c.name, &c.after, c.flags.1);
        let said = notice(c.name, &out)
            .unwrap_or_else(|| panic!("{}: nothing said after a shell edit: {out:?}", c.name));
        assert!(
            said.contains("`held.txt`") && said.contains("holder") && said.contains("modified"),
            "{}: {said}",
            c.name
        );
        assert!(!said.contains("free.txt"), "{}: {said}", c.name);
        let logged = shell_edits(&env);
        assert_eq!(logged.len(), i + 1, "{}: {logged:?}", c.name);
        assert_eq!(logged[i]["file"], "held.txt");
        assert_eq!(logged[i]["holder"], "holder");
        // Said once: the next call starts afresh.
        assert_eq!(
            notice(c.name, &hook(&env, c.name, &c.after, c.flags.1)),
            None
        );
    }
}

/// A held file the command deletes, one it creates (a lock on a file not there yet), and one
/// locked while the command ran are all reported; the agent's own locks never are.
#[test]
fn deleted_created_and_newly_locked_files_are_reported_but_not_my_own() {
    let env = Env::new();
    env.write("gone.txt", "x\n");
    env.write("late.txt", "x\n");
    env.write("mine.txt", "x\n");
    env.agent("holder")
        .args(["lock", "gone.txt", "new.txt"])
        .ok();
    let c = clients(&env, "make").remove(0);
    let me = "claude-10bf7680";
    env.agent(me).args(["lock", "mine.txt"]).ok();
    assert_eq!(
        notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
        None
    );
    // Someone locks late.txt while the command runs; the command then changes it.
    env.agent("other").args(["lock", "late.txt"]).ok();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::remove_file(env.path("gone.txt")).unwrap();
    env.write("new.txt", "made by a generator\n");
    env.write("late.txt", "y\n");
    env.write("mine.txt", "y\n");
    let said = notice(c.name, &hook(&env, c.name, &c.after, c.flags.1)).expect("a notice");
    for part in [
        "`gone.txt` (deleted",
        "`new.txt` (created",
        "`late.txt` (modified",
    ] {
        assert!(said.contains(part), "{part}: {said}");
    }
    assert!(!said.contains("mine.txt"), "{said}");
}

/// A record is used once: a second post-tool hook without a pre-tool hook says nothing. A
/// second call whose record says the same as the first (nobody held anything at either start)
/// still starts at its own time: a file locked after it and changed by its command is reported,
/// one changed before it is not.
#[test]
fn each_shell_call_starts_at_its_own_time_and_its_record_is_used_once() {
    let env = Env::new();
    env.write("early.txt", "x\n");
    env.write("late.txt", "x\n");
    let c = clients(&env, "make").remove(0);
    let call = |before: bool| {
        if before {
            assert_eq!(
                notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
                None
            );
        }
        notice(c.name, &hook(&env, c.name, &c.after, c.flags.1))
    };
    // The first call: nobody holds anything; a file is locked and changed while it runs.
    assert_eq!(
        notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
        None
    );
    env.agent("other").args(["lock", "late.txt"]).ok();
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.write("late.txt", "y\n");
    let said = notice(c.name, &hook(&env, c.name, &c.after, c.flags.1)).expect("a notice");
    assert!(said.contains("`late.txt` (modified"), "{said}");
    // Used: the same post-tool hook again, the file changed again, says nothing.
    env.write("late.txt", "z\n");
    assert_eq!(call(false), None);
    env.agent("other").args(["unlock", "late.txt"]).ok();

    // early.txt changes before the second call starts, and is locked while it runs without
    // being changed; late.txt is locked and changed while it runs.
    env.write("early.txt", "y\n");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
        None
    );
    env.agent("other")
        .args(["lock", "early.txt", "late.txt"])
        .ok();
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.write("late.txt", "w\n");
    let said = call(false).expect("a notice");
    assert!(said.contains("`late.txt` (modified"), "{said}");
    assert!(!said.contains("early.txt"), "{said}");
}

/// No pre-tool record (the hook was not wired for the shell before): nothing is claimed.
#[test]
fn without_the_start_of_the_call_nothing_is_said() {
    let env = Env::new();
    env.write("held.txt", "x\n");
    env.agent("holder").args(["lock", "held.txt"]).ok();
    let c = clients(&env, "true").remove(0);
    env.write("held.txt", "y\n");
    assert_eq!(
        notice(c.name, &hook(&env, c.name, &c.after, c.flags.1)),
        None
    );
}

/// Across worktrees: a file locked in one work tree of a repository, changed by a shell command
/// in another, is reported to the agent there, naming the holder.
#[test]
fn a_shell_edit_in_one_worktree_of_a_file_held_in_another_is_reported() {
    let git = |dir: &std::path::Path, args: &[&str]| {
        let out = crate::rigs::git(dir).args(args).output();
        match out {
            Ok(o) => assert!(o.status.success(), "git {args:?}: {o:?}"),
            Err(e) => panic!("git: {e}"),
        }
    };
    if !crate::rigs::git_or_skip() {
        return;
    }
    let env = Env::new();
    let main = env.path("main");
    std::fs::create_dir_all(main.join("src")).unwrap();
    git(&main, &["init", "-q", "-b", "trunk"]);
    std::fs::write(main.join("src/x.rs"), "x\n").unwrap();
    git(&main, &["add", "."]);
    git(&main, &["commit", "-qm", "start"]);
    git(
        &main,
        &["worktree", "add", "-q", ".claude/worktrees/b", "-b", "b"],
    );
    let b = std::fs::canonicalize(main.join(".claude/worktrees/b")).unwrap();
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&main)
        .args(["lock", "src/x.rs", "--reason", "parser"])
        .ok();
    // A Claude Code session in worktree b runs `sed -i` on its own copy of src/x.rs.
    let mut c = clients(&env, "sed -i s/x/y/ src/x.rs").remove(0);
    for v in [&mut c.before, &mut c.after] {
        v["cwd"] = b.display().to_string().into();
    }
    assert_eq!(
        notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
        None
    );
    std::fs::write(b.join("src/x.rs"), "y\n").unwrap();
    let said = notice(c.name, &hook(&env, c.name, &c.after, c.flags.1)).expect("a notice");
    assert!(
        said.contains("`src/x.rs`") && said.contains("alice"),
        "{said}"
    );
}

/// A shell command that failed after it changed a held file (`sed -i … && make`, make failing):
/// Claude Code (and Qwen Code) send `PostToolUseFailure` instead (where it is registered), and
/// are told the same, under that event's name.
#[test]
fn a_failed_shell_call_is_checked_too() {
    let env = Env::new();
    env.write("held.txt", "x\n");
    env.agent("holder").args(["lock", "held.txt"]).ok();
    for c in clients(&env, "sed -i s/x/y/ held.txt && false")
        .into_iter()
        .filter(|c| c.name == "claude" || c.name == "qwen")
    {
        let mut failed = c.after.clone();
        failed["hook_event_name"] = "PostToolUseFailure".into();
        failed["error"] = "Exit code 1".into();
        assert_eq!(
            notice(c.name, &hook(&env, c.name, &c.before, c.flags.0)),
            None
        );
        env.write("held.txt", format!("{}\n", c.name));
        let out = hook(&env, c.name, &failed, c.flags.1);
        let v: Value = serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("{}: {e}: {out:?}", c.name));
        assert_eq!(
            v["hookSpecificOutput"]["hookEventName"], "PostToolUseFailure",
            "{v}"
        );
        let said = v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap();
        assert!(said.contains("`held.txt`"), "{said}");
    }
}
