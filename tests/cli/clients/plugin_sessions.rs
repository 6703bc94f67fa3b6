//! Sessions of the real clients coordinated by the installed plugin alone (no `coord init`): a
//! scripted model drives each client, and the plugin's hooks and MCP server do the rest.

use std::process::Command;

use serde_json::{Value, json};

use crate::clients::plugin::{client, fresh_repo, git, write_plugins};
use crate::e2e::{Client, FakeModel, Repo, Run, calls_script};

/// Two real Claude Code sessions (scripted model on 127.0.0.1) in a fresh git repository with
/// no `coord init`, coordinated by the installed plugin alone: the second session's Write is
/// denied naming the first, the reason reaches the model, the first one's Stop releases the
/// lock, `git status` shows nothing of coord's; then the plugin is removed with Claude's own
/// commands.
#[test]
fn two_claude_sessions_coordinate_through_the_installed_plugin_alone() {
    use crate::e2e::{release, script};
    use std::time::{Duration, Instant};
    let Some(bin) = client("COORD_TEST_CLAUDE") else {
        return;
    };
    let env = fresh_repo();
    let scratch = tempfile::tempdir().unwrap();
    let model = FakeModel::start("fake_anthropic.py", scratch.path());
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let plugins = scratch.path().join("plugins");
    write_plugins(&env, &plugins, Some("claude"));
    let claude_cmd = |args: &[&str]| {
        let out = Command::new(&bin)
            .args(args)
            .current_dir(scratch.path())
            .env("HOME", &home)
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "claude {args:?}: {out:?}");
    };
    claude_cmd(&[
        "plugin",
        "marketplace",
        "add",
        &plugins.join("claude").to_string_lossy(),
    ]);
    claude_cmd(&["plugin", "install", "coord@coord"]);

    let proj = env.root();
    // `claude -p PROMPT` as one session, offline against the scripted model.
    let session = |prompt: &str, id: &str| {
        let mut c = Command::new(&bin);
        c.current_dir(proj)
            .args(["-p", prompt, "--session-id", id, "--allowedTools"])
            .args(["Read", "Write", "Edit", "Bash", "mcp__coord"])
            .env("HOME", &home)
            .env("PATH", crate::e2e::path_with_coord())
            .env("ANTHROPIC_BASE_URL", model.url())
            .env("ANTHROPIC_API_KEY", "sk-ant-coord-e2e")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env_remove("COORD_AGENT")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env_remove("CLAUDECODE")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c
    };
    let out = proj.join("out.txt");
    let out_s = out.to_string_lossy().to_string();
    let flag = scratch.path().join("release-a");
    let prompt_a = script(serde_json::json!([
        {"write": [out_s, "from A"]},
        {"hold": flag.to_string_lossy()},
    ]));
    let a = session(&prompt_a, "a1a1a1a1-0000-4000-8000-000000000011")
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(env.exists("out.txt.lock.claude-a1a1a1a1") && env.exists("out.txt")) {
        assert!(
            Instant::now() < deadline,
            "session A never wrote out.txt through the plugin's hook"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let prompt_b = script(serde_json::json!([{"write": [out_s, "from B"]}]));
    let b = session(&prompt_b, "b2b2b2b2-0000-4000-8000-000000000022")
        .output()
        .unwrap();
    assert!(b.status.success(), "session B: {b:?}");
    assert_eq!(
        env.read("out.txt"),
        "from A",
        "the denied Write did not happen"
    );
    assert!(
        !model.results_containing("claude-a1a1a1a1").is_empty(),
        "no denial naming the holder reached the model: {:?}",
        model.requests()
    );
    release(&flag);
    let a = a.wait_with_output().unwrap();
    assert!(a.status.success(), "session A: {a:?}");
    assert!(
        !env.exists("out.txt.lock.claude-a1a1a1a1"),
        "A's Stop released its lock"
    );
    // Nothing of coord's in `git status`: only the file the sessions wrote.
    assert_eq!(
        git(proj, &["status", "--porcelain", "--untracked-files=all"]),
        "?? out.txt\n"
    );
    claude_cmd(&["plugin", "uninstall", "coord@coord"]);
    claude_cmd(&["plugin", "marketplace", "remove", "coord"]);
    let settings = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap_or_default();
    assert!(!settings.contains("coord@coord"), "{settings}");
}

/// A repository nobody set up (a committed `target.txt`), the scripted model, `c` configured,
/// and the folder of its plugin as `coord plugin write` made it.
fn plugin_bench(c: &dyn Client) -> (Repo, FakeModel, String) {
    let repo = Repo::fresh();
    repo.env.write("target.txt", "old line\n");
    repo.commit_all("start");
    let model = FakeModel::start(c.model(), &repo.scratch());
    c.configure(&repo, &model);
    let plugins = repo.scratch().join("plugins");
    write_plugins(&repo.env, &plugins, Some(c.name()));
    let folder = plugins.join(c.name()).display().to_string();
    (repo, model, folder)
}

/// With the plugin installed: a session's `call` of `target.txt`, which another agent holds
/// (taken by hand, before any hook ran here), is denied and the reason (`deny`) reaches the
/// model; `git status` shows nothing of coord's.
fn denied_through_the_plugin(
    c: &dyn Client,
    repo: &Repo,
    model: &FakeModel,
    call: Value,
    deny: &str,
) {
    repo.env.agent("claude-x").args(["lock", "target.txt"]).ok();
    let prompt = calls_script(Value::from(vec![call]), &[]);
    Run::spawn(c.session(repo, model, &prompt), "denied", &repo.scratch()).ok();
    assert_eq!(
        repo.env.read("target.txt"),
        "old line\n",
        "the edit was denied"
    );
    let seen = model
        .requests_with(&prompt)
        .iter()
        .any(|r| r.to_string().contains(deny));
    assert!(seen, "the deny reached the model");
    repo.env
        .agent("claude-x")
        .args(["unlock", "target.txt"])
        .ok();
    assert_eq!(
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

/// A real Gemini CLI session (scripted model on 127.0.0.1) in a repository nobody set up, with
/// coord only as an installed extension: its edit of a file another agent holds is denied, the
/// reason reaches the model, `git status` shows nothing of coord's; then the extension is
/// removed with Gemini's own command.
#[test]
fn a_gemini_session_is_coordinated_by_the_installed_extension_alone() {
    let Some(bin) = client("COORD_TEST_GEMINI") else {
        return;
    };
    let c = crate::clients::gemini_e2e::Gemini(bin);
    let (repo, model, folder) = plugin_bench(&c);
    let gem = |args: &[&str]| {
        let out = repo
            .client_cmd(&c.0)
            .args(args)
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .output()
            .unwrap();
        assert!(out.status.success(), "gemini {args:?}: {out:?}");
    };
    gem(&["extensions", "install", &folder, "--consent"]);
    let write =
        json!(["write_file", {"file_path": repo.abs("target.txt"), "content": "from gemini\n"}]);
    denied_through_the_plugin(&c, &repo, &model, write, "Tool execution blocked: coord:");
    gem(&["extensions", "uninstall", "coord"]);
    assert!(!repo.home.join(".gemini/extensions/coord").exists());
}

/// A real Copilot CLI session (scripted model on 127.0.0.1) in a repository nobody set up, with
/// coord only as an installed plugin: its `create` of a file another agent holds is denied, the
/// reason reaches the model, `git status` shows nothing of coord's; then the plugin is removed
/// with Copilot's own commands.
#[test]
fn a_copilot_session_is_coordinated_by_the_installed_plugin_alone() {
    let Some(bin) = client("COORD_TEST_COPILOT") else {
        return;
    };
    let c = crate::clients::copilot_e2e::Copilot {
        bin,
        model: "gpt-4.1",
    };
    let (repo, model, folder) = plugin_bench(&c);
    let cop = |args: &[&str]| {
        let out = repo
            .client_cmd(&c.bin)
            .args(args)
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_AUTO_UPDATE", "false")
            .env(
                "COPILOT_PKG_CACHE_HOME",
                crate::clients::copilot_e2e::package_cache(),
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "copilot {args:?}: {out:?}");
    };
    cop(&["plugin", "marketplace", "add", &folder]);
    cop(&["plugin", "install", "coord@coord"]);
    let create = json!(["create", {"path": repo.abs("target.txt"), "file_text": "from copilot\n"}]);
    denied_through_the_plugin(
        &c,
        &repo,
        &model,
        create,
        "Denied by preToolUse hook: coord:",
    );
    cop(&["plugin", "uninstall", "coord@coord"]);
    cop(&["plugin", "marketplace", "remove", "coord"]);
}
