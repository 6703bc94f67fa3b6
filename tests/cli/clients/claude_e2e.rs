//! End to end with the real Claude Code client (npm `@anthropic-ai/claude-code`, named by
//! `COORD_TEST_CLAUDE`), driven offline by a scripted Anthropic Messages API on 127.0.0.1
//! (`tests/e2e/fake_anthropic.py`), in repositories wired by `coord init --client claude`.
//! The scenarios are in `e2e/scenarios.rs`; each test is ignored by plain `cargo test` and, run
//! with `--ignored`, fails, saying why, without the client, python3 or git.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::e2e::{self, Client, FakeModel, Repo, Run};

struct Claude(PathBuf);

fn claude() -> Claude {
    Claude(e2e::require("claude"))
}

impl Client for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn model(&self) -> &'static str {
        "fake_anthropic.py"
    }

    /// `claude -p PROMPT` with the edit, shell and coord MCP tools allowed; the user's settings
    /// approve the project's `.mcp.json` servers (a user answers that prompt once).
    fn session(&self, repo: &Repo, model: &FakeModel, prompt: &str) -> Command {
        let mut c = repo.client_cmd(&self.0);
        c.args(["-p", prompt, "--allowedTools"]).args([
            "Read",
            "Write",
            "Edit",
            "Bash",
            "mcp__coord",
        ]);
        offline(&mut c, repo, model);
        c
    }
}

/// The settings and environment every session gets: the project's MCP servers approved, the
/// scripted model, nothing sent anywhere else.
fn offline(c: &mut Command, repo: &Repo, model: &FakeModel) {
    let settings = repo.home.join(".claude/settings.json");
    if !settings.exists() {
        write(&settings, r#"{"enableAllProjectMcpServers": true}"#);
    }
    c.env("ANTHROPIC_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}

const API_KEY: &str = "sk-ant-coord-e2e";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

e2e::scenario_tests! {
    client: claude(), ignore: "needs the real client: set COORD_TEST_CLAUDE (see .ci/run)";
    claude_edit_denied_while_another_agent_holds_then_allowed_and_released_at_turn_end =>
        denied_then_allowed();
    claude_two_concurrent_sessions_are_two_agents_that_exclude_each_other =>
        two_sessions_exclude_each_other();
    claude_session_start_context_reaches_the_model => session_start_context_reaches_the_model();
    claude_session_end_finishes_the_presence => session_end_finishes_the_presence();
    claude_mcp_lock_and_own_edit_do_not_block_each_other => mcp_lock_and_own_edit();
    claude_shell_coord_lock_and_git_commit_act_as_the_session =>
        shell_commands_act_as_the_session(true);
    claude_killed_client_frees_its_files_within_seconds => killed_client_frees_its_files(false);
    claude_shell_edit_of_a_held_file_is_told_to_the_model => shell_edit_is_told_to_the_model();
}

/// At a terminal, a shell command the user has not allowed stops the session at a permission
/// prompt. The real client's `Notification` hook (wired by `coord init`) marks the session's
/// agent as needing its user, with what it asks, in `status` and the history; the command has
/// not run.
#[test]
#[ignore = "needs the real client: set COORD_TEST_CLAUDE (see .ci/run)"]
fn claude_at_a_permission_prompt_needs_its_user() {
    let c = claude();
    let (repo, model) = e2e::setup(&c);
    // What a user at a terminal answers once: onboarding done, this folder trusted, the API
    // key in the environment approved.
    write(
        &repo.home.join(".claude.json"),
        &json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [API_KEY], "rejected": []},
            "projects": {repo.root().to_str().unwrap(): {
                "hasTrustDialogAccepted": true,
                "hasCompletedProjectOnboarding": true,
            }},
        })
        .to_string(),
    );
    let screen = repo.scratch().join("screen.log");
    let mut cmd = repo.client_cmd(Path::new("python3"));
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/in_pty.py"))
        .arg(&screen)
        .arg(&c.0)
        .arg(e2e::script(json!([{"shell": "echo asked > asked.txt"}])))
        .env("TERM", "xterm-256color");
    offline(&mut cmd, &repo, &model);
    let mut run = Run::spawn(cmd, "claude at a terminal", &repo.scratch());
    let needs = || -> Option<Value> {
        let status: Value = repo.env.cmd().args(["status", "--json"]).ok().json();
        status["agents"]
            .as_array()?
            .iter()
            .find(|a| a["needs_user"].is_object())
            .cloned()
    };
    e2e::until(&mut run, "the agent needs its user", || needs().is_some());
    let agent = needs().unwrap();
    let what = agent["needs_user"]["what"].as_str().unwrap_or_default();
    assert!(
        what.to_lowercase().contains("permission"),
        "{agent}\n{}",
        String::from_utf8_lossy(&std::fs::read(&screen).unwrap_or_default())
    );
    assert!(
        !repo.env.path("asked.txt").exists(),
        "the command ran unasked"
    );
    let log = repo.env.read(".coord/history/events.jsonl");
    assert!(
        log.lines()
            .any(|l| l.contains("\"needs_user\"") && l.contains(agent["agent"].as_str().unwrap())),
        "{log}"
    );
}

/// Two real Claude Code sessions in two worktrees of one repository: while the session in the
/// main work tree holds `shared.txt` inside its turn, the session in a linked worktree is
/// denied the same path there (the reason names the holder), and its copy is left alone; once
/// the first session's turn ends, the second one's next edit goes through.
#[test]
#[ignore = "needs the real client: set COORD_TEST_CLAUDE (see .ci/run)"]
fn claude_sessions_in_two_worktrees_of_one_repository_exclude_each_other() {
    let c = claude();
    let (repo, model) = e2e::setup(&c);
    // The wiring is committed, so the linked worktree has the hooks too.
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "coord init"]);
    let tree_b = repo.scratch().join("tree-b");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        tree_b.to_str().unwrap(),
        "-b",
        "feature",
    ]);
    let (end_a, go_b) = (repo.flag("end-a"), repo.flag("go-b"));
    let steps_a = json!([{"write": [repo.abs("shared.txt"), "from A"]}, {"hold": end_a}]);
    let mut a = Run::spawn(
        c.session(&repo, &model, &e2e::script(steps_a)),
        "session-a",
        &repo.scratch(),
    );
    e2e::until(&mut a, "session A holds shared.txt", || {
        repo.holders("shared.txt")
            .iter()
            .any(|h| h.starts_with("claude-"))
    });
    let holder = repo.holders("shared.txt")[0].clone();

    let shared_b = tree_b.join("shared.txt");
    let b_path = shared_b.to_str().unwrap();
    let steps_b = json!([
        {"write": [b_path, "from B"]},
        {"hold": go_b},
        {"write": [b_path, "from B"]},
    ]);
    let mut cmd = c.session(&repo, &model, &e2e::script(steps_b));
    cmd.current_dir(&tree_b);
    let mut b = Run::spawn(cmd, "session-b", &repo.scratch());
    e2e::until(&mut b, "B's model learns who holds the file", || {
        !model.results_containing(&holder).is_empty()
    });
    let reasons = model.results_containing(&holder);
    assert!(
        reasons.iter().any(|r| r.contains("shared.txt")),
        "{reasons:?}"
    );
    assert!(
        !shared_b.exists(),
        "the denied edit did not happen in tree B"
    );

    e2e::release(&end_a);
    let a = a.wait();
    assert_eq!(a.code, Some(0), "{a:?}");
    assert!(repo.holders("shared.txt").is_empty(), "A's turn ended");
    e2e::release(&go_b);
    e2e::until(&mut b, "B's second edit", || shared_b.exists());
    let b = b.wait();
    assert_eq!(b.code, Some(0), "{b:?}");
    assert_eq!(
        std::fs::read_to_string(&shared_b).unwrap().trim_end(),
        "from B"
    );
    assert_eq!(repo.env.read("shared.txt").trim_end(), "from A");
}

/// Two clones on "two machines", sharing nothing but their remote (a real `git daemon` on
/// 127.0.0.1), #47: while alice claims `src/` in clone A, a real Claude Code session in clone B
/// is denied an edit of `src/a.rs`, the reason naming alice and her host; once she releases,
/// the edit goes through and the session commits it; when she claims `src/` again, the
/// session's `git push` of that commit is refused and the remote's branch stays as it was.
#[test]
#[ignore = "needs the real client: set COORD_TEST_CLAUDE (see .ci/run)"]
fn claude_in_another_clone_is_denied_a_claimed_edit_then_allowed_and_its_push_refused() {
    let c = claude();
    let team = crate::locks::remote::Team::new(crate::locks::remote::Transport::Daemon)
        .expect("git and `git daemon` serve the remote on 127.0.0.1");
    let host = crate::locks::remote::hostname();

    // Clone A: the project's first commit, pushed; alice claims src/ through the remote.
    let a = e2e::Repo::fresh();
    a.git(&["remote", "add", "origin", &team.url]);
    a.env.write("src/a.rs", "fn a() {}\n");
    a.git(&["add", "-A"]);
    a.git(&["commit", "-qm", "first"]);
    a.git(&["push", "-q", "origin", "HEAD:refs/heads/main"]);
    let first = a.git(&["rev-parse", "HEAD"]);
    a.env.cmd().args(["remote", "enable"]).ok();
    let claim = || {
        a.env
            .agent("alice")
            .args(["lock", "src/", "--reason", "auth refactor"])
            .ok()
    };
    claim();

    // Clone B: the same project, wired for Claude Code, its guard installed, sharing claims
    // through the same remote.
    let b = e2e::Repo::fresh();
    b.git(&["remote", "add", "origin", &team.url]);
    b.git(&["fetch", "-q", "origin"]);
    b.git(&["checkout", "-q", "-B", "main", "origin/main"]);
    b.env.cmd().args(["init", "--client", "claude"]).ok();
    b.env.cmd().args(["guard", "install"]).ok();
    b.env.cmd().args(["remote", "enable"]).ok();
    let sync_b = || b.env.cmd().args(["remote", "sync"]).ok();
    sync_b();
    let model = e2e::FakeModel::start(c.model(), &b.scratch());

    let target = b.abs("src/a.rs");
    let (go, push, end) = (b.flag("go"), b.flag("push"), b.flag("end"));
    let steps = json!([
        {"write": [target, "from B"]},
        {"hold": go},
        {"write": [target, "from B"]},
        {"shell": "git commit -qam 'a from B' && echo committed"},
        {"hold": push},
        {"shell": "git push origin HEAD:main"},
        {"hold": end},
    ]);
    let mut run = Run::spawn(
        c.session(&b, &model, &e2e::script(steps)),
        "session in clone B",
        &b.scratch(),
    );
    e2e::until(
        &mut run,
        "the first edit's result reached the model",
        || !e2e::results(&c, &model).is_empty(),
    );
    let denied = e2e::results(&c, &model)[0].0.clone();
    assert!(
        denied.contains("alice") && denied.contains(&host),
        "the reason names the holder and her host: {denied}"
    );
    assert_eq!(
        b.env.read("src/a.rs"),
        "fn a() {}\n",
        "the denied edit did not happen"
    );

    // alice releases; B's view of the remote is read again; the edit goes through.
    a.env.agent("alice").args(["unlock", "src/"]).ok();
    sync_b();
    e2e::release(&go);
    e2e::until(&mut run, "the commit's result reached the model", || {
        e2e::results(&c, &model).len() >= 3
    });
    assert_eq!(b.env.read("src/a.rs").trim_end(), "from B");
    let results = e2e::results(&c, &model);
    assert!(results[2].0.contains("committed"), "{results:?}");

    // alice claims src/ again: the push of B's commit is refused, the remote left as it was.
    claim();
    sync_b();
    e2e::release(&push);
    e2e::until(&mut run, "the push's result reached the model", || {
        e2e::results(&c, &model).len() >= 4
    });
    let refused = e2e::results(&c, &model)[3].0.clone();
    assert!(
        refused.contains("alice") && refused.contains(&host),
        "the push is refused naming the claim's holder and her host: {refused}"
    );
    let on_remote = std::process::Command::new("git")
        .args(["rev-parse", "refs/heads/main"])
        .current_dir(&team.bare)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&on_remote.stdout),
        first,
        "the remote's main is still A's first commit"
    );

    e2e::release(&end);
    let done = run.wait();
    assert_eq!(done.code, Some(0), "{done:?}");
    a.env.agent("alice").args(["unlock", "src/"]).ok();
}
