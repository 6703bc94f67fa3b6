//! The scenarios every real client goes through (each client's `*_e2e.rs` runs them with its
//! own [`Client`]): a denied edit then allowed, two sessions, the session's start and end, the
//! MCP lock, shell commands, a killed client.

use serde_json::Value;

use super::{
    Client, FakeModel, Finished, Repo, Run, conversation_of, release, results, results_containing,
    session_holder, setup, setup_committed, start, start_calls, until,
};

/// The text of `rel`, if it exists.
fn content(repo: &Repo, rel: &str) -> Option<String> {
    std::fs::read_to_string(repo.env.path(rel)).ok()
}

/// An edit is denied while another agent holds the file (the file untouched, the reason naming the
/// holder in the model's next request); allowed once released; the session's lock released at
/// the end of its turn. The turn's end is told from the session's: a message waits for the
/// session, so its Stop hook, having released the turn's locks, holds the stop once and the
/// client goes on (still running, its SessionEnd not yet run) with the message listed.
pub fn denied_then_allowed(client: &dyn Client) {
    let (repo, model) = setup(client);
    let env = &repo.env;
    env.write("target.txt", "original\n");
    env.agent("alice").args(["lock", "target.txt", "-q"]).ok();
    let (go, stop, end) = (repo.flag("go"), repo.flag("stop"), repo.flag("end"));
    let target = repo.abs("target.txt");
    let mut run = start(
        client,
        &repo,
        &model,
        "session",
        serde_json::json!([
            {"write": [target, "from the session"]},
            {"hold": go},
            {"write": [target, "from the session"]},
            {"hold": stop},
            {"say": "the turn is over"},
            {"hold": end},
        ]),
    );
    until(
        &mut run,
        "the first edit's result reached the model",
        || !results(client, &model).is_empty(),
    );
    let denied = &results(client, &model)[0].0;
    assert!(
        denied.contains("alice") && denied.contains("target.txt"),
        "the model's next request carries the reason, naming the holder: {denied}"
    );
    assert_eq!(
        env.read("target.txt"),
        "original\n",
        "the denied edit did not happen"
    );
    assert_eq!(repo.holders("target.txt"), ["alice"]);

    env.agent("alice").args(["unlock", "target.txt", "-q"]).ok();
    release(&go);
    until(
        &mut run,
        "the second edit's result reached the model",
        || results(client, &model).len() >= 2,
    );
    assert_eq!(env.read("target.txt").trim_end(), "from the session");
    let Some(agent) = session_holder(client, &repo, "target.txt") else {
        panic!(
            "the session holds the file it edited: {:?}",
            repo.holders("target.txt")
        )
    };

    env.agent("alice")
        .args(["msg", "send", &agent, "target.txt is yours now", "-q"])
        .ok();
    release(&stop);
    until(&mut run, "the client went on after its Stop hook", || {
        model
            .turns()
            .iter()
            .filter(|t| t["results"].as_array().is_some_and(|r| r.len() >= 2))
            .count()
            >= 2
    });
    assert!(run.running());
    assert!(
        repo.holders("target.txt").is_empty(),
        "the lock is released at the turn's end: {:?}",
        repo.holders("target.txt")
    );
    let last = model.turns().last().unwrap()["body"].to_string();
    assert!(
        last.contains("target.txt is yours now"),
        "the Stop hook lists the unread message for the model"
    );

    release(&end);
    run.ok();
    assert!(repo.holders("target.txt").is_empty());
}

/// Two concurrent sessions of one client are two agents: the second one's edit of the file the
/// first holds is denied, naming the first; the first's turn's end releases it. Returns both
/// runs' outputs.
pub fn two_sessions_exclude_each_other(client: &dyn Client) -> (Finished, Finished) {
    let (repo, model) = setup(client);
    client.before_concurrent_sessions();
    let env = &repo.env;
    let end = repo.flag("end-a");
    let shared = repo.abs("shared.txt");
    let mut a = start(
        client,
        &repo,
        &model,
        "session-a",
        serde_json::json!([{"write": [shared, "from A"]}, {"hold": end}]),
    );
    until(&mut a, "session A's edit", || {
        env.exists("shared.txt") && session_holder(client, &repo, "shared.txt").is_some()
    });
    let agent_a = session_holder(client, &repo, "shared.txt").unwrap();

    let b = start(
        client,
        &repo,
        &model,
        "session-b",
        serde_json::json!([{"write": [shared, "from B"]}]),
    )
    .wait();
    assert_eq!(b.code, Some(0), "{b:?}");
    assert_eq!(
        env.read("shared.txt").trim_end(),
        "from A",
        "session B (another agent) did not overwrite A's file"
    );
    assert_eq!(repo.holders("shared.txt"), std::slice::from_ref(&agent_a));
    let reasons = results_containing(client, &model, &agent_a);
    assert!(
        reasons.iter().any(|r| r.contains("shared.txt")),
        "B's model learns that {agent_a} holds the file: {reasons:?}"
    );
    let told_b = results(client, &model);
    assert!(
        told_b.last().is_some_and(|(r, _)| r.contains(&agent_a)),
        "B is told A holds it, in answer to its write: {told_b:?}"
    );
    let agents = repo.agents_of(&format!("{}-", client.name()));
    assert_eq!(agents.len(), 2, "two sessions, two agents: {agents:?}");

    release(&end);
    let a = a.wait();
    assert_eq!(a.code, Some(0), "{a:?}");
    assert!(repo.holders("shared.txt").is_empty());
    (a, b)
}

/// The SessionStart hook's context reaches the model: its first request tells the session its
/// agent's name and names another agent's lock.
pub fn session_start_context_reaches_the_model(client: &dyn Client) {
    let (repo, model) = setup(client);
    repo.env
        .agent("alice")
        .args(["lock", "notes.md", "-q", "--reason", "rewriting the intro"])
        .ok();
    start(client, &repo, &model, "session", serde_json::json!([])).ok();
    let requests = model.requests();
    let Some(first) = requests.iter().find(|r| client.is_turn(r)) else {
        panic!("the session asked the model: {requests:#?}")
    };
    let body = first["body"].to_string();
    let agents = repo.agents_of(&format!("{}-", client.name()));
    assert_eq!(agents.len(), 1, "{agents:?}");
    let me = &agents[0].0;
    assert!(
        body.contains(&format!("you are agent `{me}`")),
        "the model is told its coord name: {body}"
    );
    assert!(
        body.contains("notes.md (held by alice"),
        "the model's first request holds coord's context naming alice's lock on notes.md: {body}"
    );
}

/// SessionEnd finishes the session's presence: ACTIVE while it runs, FINISHED after.
pub fn session_end_finishes_the_presence(client: &dyn Client) {
    let (repo, model) = setup(client);
    let end = repo.flag("end");
    let prefix = format!("{}-", client.name());
    let mut run = start(
        client,
        &repo,
        &model,
        "session",
        serde_json::json!([{"write": [repo.abs("a.txt"), "a"]}, {"hold": end}]),
    );
    until(&mut run, "the session's edit", || {
        repo.env.exists("a.txt") && !repo.agents_of(&prefix).is_empty()
    });
    let during = repo.agents_of(&prefix);
    assert!(
        during.iter().all(|(_, s)| s == "ACTIVE"),
        "the session is ACTIVE while it runs: {during:?}"
    );
    release(&end);
    run.ok();
    assert_eq!(repo.env.read("a.txt").trim_end(), "a");
    let mine = repo.agents_of(&prefix);
    assert_eq!(mine.len(), 1, "one session, one agent: {:?}", repo.agents());
    assert_eq!(
        mine[0].1, "FINISHED",
        "the session's presence is FINISHED once it ended: {mine:?}"
    );
}

/// The session's MCP `lock` and its own edit do not block each other (one session, one agent).
pub fn mcp_lock_and_own_edit(client: &dyn Client) {
    let (repo, model) = setup(client);
    let end = repo.flag("end");
    let mut run = start(
        client,
        &repo,
        &model,
        "session",
        serde_json::json!([
            {"mcp": ["lock", {"files": ["mcp.txt"]}]},
            {"write": [repo.abs("mcp.txt"), "after the MCP lock"]},
            {"hold": end},
        ]),
    );
    until(&mut run, "the edit's result reached the model", || {
        results(client, &model).len() >= 2
    });
    let results = results(client, &model);
    assert!(
        results[0].0.contains("mcp.txt") && !results[0].1,
        "the MCP lock was granted: {results:?}"
    );
    assert!(
        results.iter().all(|(_, error)| !error),
        "neither call was refused: {results:?}"
    );
    assert_eq!(
        content(&repo, "mcp.txt").as_deref().map(str::trim_end),
        Some("after the MCP lock"),
        "the session's own edit went through: {results:?}"
    );
    assert!(
        session_holder(client, &repo, "mcp.txt").is_some(),
        "one agent, the session's, holds mcp.txt: {:?}",
        repo.holders("mcp.txt")
    );
    release(&end);
    run.ok();
}

/// `coord lock`, `coord whoami` and (with `commit`) `git commit` through the guard, run from the
/// agent's shell tool, act as the session.
pub fn shell_commands_act_as_the_session(client: &dyn Client, commit: bool) {
    let (repo, model) = setup(client);
    repo.env.cmd().args(["guard", "install", "-q"]).ok();
    let end = repo.flag("end");
    let mut steps = vec![
        serde_json::json!({"shell": "coord lock shell.txt"}),
        serde_json::json!({"write": [repo.abs("shell.txt"), "from the session"]}),
        serde_json::json!({"shell": "coord whoami"}),
    ];
    if commit {
        steps.push(serde_json::json!(
            {"shell": "git add shell.txt && git commit -q -m 'shell.txt from the session'"}
        ));
    }
    let tools = steps.len();
    steps.push(serde_json::json!({"hold": end}));
    let mut run = start(client, &repo, &model, "session", Value::from(steps));
    until(
        &mut run,
        "the last command's result reached the model",
        || results(client, &model).len() >= tools,
    );
    let results = results(client, &model);
    assert!(
        results[0].0.contains("Lock acquired"),
        "`coord lock` ran in the shell: {results:?}"
    );
    assert_eq!(
        content(&repo, "shell.txt").as_deref().map(str::trim_end),
        Some("from the session"),
        "the edit of a file the session locked from its shell went through: {results:?}"
    );
    let holder = session_holder(client, &repo, "shell.txt");
    let Some(holder) = holder else {
        panic!(
            "one agent, the session's, holds shell.txt: {:?}; {results:?}",
            repo.holders("shell.txt")
        )
    };
    assert!(
        results[2].0.contains(&holder),
        "`coord whoami` in the shell names the session's agent {holder}: {results:?}"
    );
    if commit {
        let log = repo.git(&["log", "--format=%s"]);
        assert!(
            log.contains("shell.txt from the session"),
            "the guard let the session commit its own file: {log:?}; {results:?}"
        );
    }
    release(&end);
    run.ok();
    assert!(
        repo.holders("shell.txt").is_empty(),
        "{:?}",
        repo.holders("shell.txt")
    );
}

/// `kill -9` of the client frees its files within seconds: another agent's lock with a short
/// wait gets them. The session took its file by an edit, or (`by_shell`) with `coord lock` from
/// its shell tool.
pub fn killed_client_frees_its_files(client: &dyn Client, by_shell: bool) {
    let (repo, model) = setup(client);
    let never = repo.flag("never");
    let take = if by_shell {
        serde_json::json!({"shell": "coord lock k.txt"})
    } else {
        serde_json::json!({"write": [repo.abs("k.txt"), "x"]})
    };
    let mut run = start(
        client,
        &repo,
        &model,
        "session",
        serde_json::json!([take, {"hold": never}]),
    );
    until(&mut run, "the result of the session's lock", || {
        results(client, &model).len() == 1
    });
    assert!(
        session_holder(client, &repo, "k.txt").is_some(),
        "the session holds k.txt: {:?}; {:?}",
        repo.holders("k.txt"),
        results(client, &model)
    );
    repo.env
        .agent("bob")
        .args(["lock", "k.txt", "--no-wait", "-q"])
        .code(3);
    client.kill9(&mut run);
    repo.env
        .agent("bob")
        .args(["lock", "k.txt", "--wait", "20s", "-q"])
        .ok();
    assert_eq!(repo.holders("k.txt"), ["bob"]);
}

/// A shell command that changes a file another agent holds: the post-tool hook of the shell
/// tool tells the model at once (its next request holds coord's notice naming file and holder).
pub fn shell_edit_is_told_to_the_model(client: &dyn Client) {
    let (repo, model) = setup(client);
    repo.env.write("held.md", "alice's draft\n");
    repo.env
        .agent("alice")
        .args(["lock", "held.md", "-q", "--reason", "rewriting it"])
        .ok();
    let done = start(
        client,
        &repo,
        &model,
        "session",
        serde_json::json!([{"shell": "echo more >> held.md"}, {"say": "ok"}]),
    )
    .wait();
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(
        repo.env.read("held.md").contains("more"),
        "the shell command ran"
    );
    let told = model.requests().iter().any(|r| {
        let body = r["body"].to_string();
        body.contains("coord-e2e:")
            && body.contains("your shell command changed")
            && body.contains("held.md")
            && body.contains("alice")
    });
    assert!(
        told,
        "the model's request after the shell call holds coord's notice naming file and holder: \
         {:?}",
        results(client, &model)
    );
}

/// `git commit` through the agent's shell tool is refused while another agent holds a staged
/// file (the reason, naming holder and file, reaches the model; no commit), and goes through once
/// the file is free.
pub fn commit_of_a_held_staged_file_is_refused(client: &dyn Client) {
    let (repo, model) = setup_committed(client);
    repo.env.cmd().args(["guard", "install", "-q"]).ok();
    repo.env.write("target.txt", "staged change\n");
    repo.git(&["add", "target.txt"]);
    repo.env.agent("claude-x").args(["lock", "target.txt"]).ok();
    let head = repo.git(&["rev-parse", "HEAD"]);
    let commit = serde_json::json!([{"shell": format!("git commit -am 'from {}'", client.name())}]);

    start(client, &repo, &model, "held", commit.clone()).ok();
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head, "no commit was made");
    let results = results(client, &model);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].0.contains("claude-x") && results[0].0.contains("target.txt"),
        "the reason names the holder and the file: {results:#?}"
    );

    repo.env
        .agent("claude-x")
        .args(["unlock", "target.txt"])
        .ok();
    start(client, &repo, &model, "free", commit).ok();
    assert_ne!(
        repo.git(&["rev-parse", "HEAD"]),
        head,
        "the commit went through"
    );
}

/// `git commit` through the agent's shell tool of the file the session holds (by its edit) goes
/// through: a session's own lock does not stop its commit.
pub fn commit_of_its_own_file_goes_through(client: &dyn Client) {
    let (repo, model) = setup_committed(client);
    repo.env.cmd().args(["guard", "install", "-q"]).ok();
    let head = repo.git(&["rev-parse", "HEAD"]);
    let end = repo.flag("end");
    let content = format!("from {}\n", client.name());
    let mut run = start(
        client,
        &repo,
        &model,
        "own",
        serde_json::json!([
            {"write": [repo.abs("target.txt"), content]},
            {"shell": format!("git commit -qam 'from {}'", client.name())},
            {"hold": end},
        ]),
    );
    until(&mut run, "both tool calls answered", || {
        results(client, &model).len() == 2
    });
    assert!(
        session_holder(client, &repo, "target.txt").is_some(),
        "the session holds the file it wrote: {:?}",
        repo.holders("target.txt")
    );
    let results = results(client, &model);
    assert_ne!(
        repo.git(&["rev-parse", "HEAD"]),
        head,
        "a session's own lock does not stop its commit: {results:#?}"
    );
    assert_eq!(repo.git(&["show", "HEAD:target.txt"]), content);
    release(&end);
    run.ok();
}

/// The files of `rel` locked by a session of `client`: its `<client>-…` holders.
fn session_holders(client: &dyn Client, repo: &Repo, rel: &str) -> Vec<String> {
    let prefix = format!("{}-", client.name());
    repo.holders(rel)
        .into_iter()
        .filter(|h| h.starts_with(&prefix))
        .collect()
}

/// One session writes `held.txt`, which the agent "holder" holds, then `free.txt`: the first
/// is denied (the file stays untouched, the reason naming the holder reaches the model), the
/// second goes through and its lock is released at the end of the turn.
fn held_denied_free_written(client: &dyn Client, repo: &Repo, model: &FakeModel) {
    let env = &repo.env;
    env.agent("holder")
        .args(["lock", "held.txt", "--reason", "rewriting it"])
        .ok();
    start(
        client,
        repo,
        model,
        "the first session",
        serde_json::json!([
            {"write": [repo.abs("held.txt"), "from the client"]},
            {"write": [repo.abs("free.txt"), "from the client"]},
        ]),
    )
    .ok();
    assert!(!env.exists("held.txt"), "a held file stays untouched");
    assert!(
        model.log().contains("is locked by holder"),
        "the deny reason, naming the holder, reaches the model"
    );
    assert_eq!(env.read("free.txt"), "from the client");
    assert!(
        repo.holders("free.txt").is_empty(),
        "locked and released at the end of the turn: {:?}",
        repo.holders("free.txt")
    );
}

/// One session: an edit of a file another agent holds is denied (the file stays untouched, the
/// reason naming the holder reaches the model), an edit of a free file goes through and its
/// lock is released at the end of the turn. Then two sessions: a second one is denied a file
/// the first holds inside its turn, the reason naming the first.
pub fn denied_then_allowed_and_two_sessions(client: &dyn Client) {
    let (repo, model) = setup(client);
    let env = &repo.env;
    held_denied_free_written(client, &repo, &model);
    env.agent("holder").args(["unlock", "held.txt"]).ok();

    // Two sessions: the first stays inside its turn holding shared.txt.
    let flag = repo.flag("release");
    let mut first = start(
        client,
        &repo,
        &model,
        "the first of two sessions",
        serde_json::json!([{"write": [repo.abs("shared.txt"), "from the first"]}, {"hold": flag}]),
    );
    until(&mut first, "the first session wrote shared.txt", || {
        !session_holders(client, &repo, "shared.txt").is_empty() && env.exists("shared.txt")
    });
    let first_agent = session_holders(client, &repo, "shared.txt").remove(0);
    start(
        client,
        &repo,
        &model,
        "the second session",
        serde_json::json!([{"write": [repo.abs("shared.txt"), "from the second"]}]),
    )
    .ok();
    release(&flag);
    first.ok();
    assert_eq!(env.read("shared.txt"), "from the first");
    assert!(
        model.log().contains(&format!("is locked by {first_agent}")),
        "the second session is another agent, denied naming the first ({first_agent})"
    );
    assert!(session_holders(client, &repo, "shared.txt").is_empty());
}

/// With only the plugin installed (no `coord init`, a repository nobody set up): an edit of a
/// file another agent holds is denied (untouched, the reason naming the holder reaches the
/// model), a free file is written and released at the end of the turn, the plugin gives the
/// agent coord's instructions, the file is written once free; with `mcp`, the plugin's MCP
/// server is the session's agent (its lock does not block the session's own edit, and goes at
/// the turn's end); nothing of coord's shows in `git status`. Returns the repository and model
/// for what a client checks more.
pub fn plugin_alone_denies_then_allows(client: &dyn Client, mcp: bool) -> (Repo, FakeModel) {
    let (repo, model) = setup(client);
    let env = &repo.env;
    held_denied_free_written(client, &repo, &model);
    assert!(
        model
            .log()
            .contains("Working with other agents in this folder"),
        "the plugin gives the agent coord's instructions"
    );
    // Then allowed: the holder lets go, and the next session writes it.
    env.agent("holder").args(["unlock", "held.txt"]).ok();
    start(
        client,
        &repo,
        &model,
        "the session once the file is free",
        serde_json::json!([{"write": [repo.abs("held.txt"), "now mine"]}]),
    )
    .ok();
    assert_eq!(env.read("held.txt"), "now mine");
    let mut untracked = "?? free.txt\n?? held.txt\n".to_string();
    if mcp {
        start(
            client,
            &repo,
            &model,
            "a session locking through MCP, then editing",
            serde_json::json!([
                {"mcp": ["lock", {"files": ["mcp.txt"]}]},
                {"write": [repo.abs("mcp.txt"), "after the MCP lock"]},
            ]),
        )
        .ok();
        assert!(
            model.log().contains("Lock acquired: mcp.txt"),
            "the MCP lock was taken"
        );
        assert_eq!(env.read("mcp.txt"), "after the MCP lock");
        assert!(
            repo.holders("mcp.txt").is_empty(),
            "released at the end of the turn"
        );
        untracked.push_str("?? mcp.txt\n");
    }
    assert_eq!(
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        untracked,
        "nothing of coord's in `git status`"
    );
    (repo, model)
}

/// Every edit tool of `denied` (calls on `target.txt`, which the agent "claude-x" holds) is
/// denied: the file stays as it was, each result is the hook's deny (starting `deny`), naming
/// holder and file. Once the file is free, `allowed` makes it read `edited`; the session holds it
/// for the rest of its turn (another agent is refused, naming it), and the turn's end releases it.
pub fn edits_denied_then_allowed(
    client: &dyn Client,
    denied: impl Fn(&Repo) -> Value,
    allowed: impl Fn(&Repo) -> Value,
    edited: &str,
    deny: &str,
) {
    let (repo, model) = setup_committed(client);
    let env = &repo.env;
    env.agent("claude-x").args(["lock", "target.txt"]).ok();
    let (run, prompt) = start_calls(client, &repo, &model, "denied", denied(&repo), &[]);
    run.ok();
    assert_eq!(env.read("target.txt"), "old line\n");
    assert_eq!(repo.holders("target.txt"), ["claude-x"]);
    let results = conversation_of(client, &model, &prompt);
    assert_eq!(
        results.len(),
        denied(&repo).as_array().unwrap().len(),
        "{results:#?}"
    );
    for (text, error) in &results {
        assert!(
            text.contains("claude-x") && text.contains("target.txt"),
            "{text}"
        );
        assert!(*error && text.starts_with(deny), "the hook's deny: {text}");
    }

    // Released: the edit goes through, its lock held for the rest of the turn, released at its end.
    env.agent("claude-x").args(["unlock", "target.txt"]).ok();
    let flag = repo.flag("turn-over");
    let calls = Value::from(vec![allowed(&repo)]);
    let (mut run, prompt) = start_calls(client, &repo, &model, "allowed", calls, &[&flag]);
    until(&mut run, "the edit inside the turn", || {
        env.read("target.txt") == edited && session_holder(client, &repo, "target.txt").is_some()
    });
    let holder = session_holder(client, &repo, "target.txt").unwrap();
    env.agent("claude-x")
        .args(["lock", "target.txt", "--no-wait"])
        .code(3)
        .stderr_has(&holder);
    release(&flag);
    run.ok();
    assert!(
        repo.holders("target.txt").is_empty(),
        "released at the turn's end: {:?}",
        repo.holders("target.txt")
    );
    let results = conversation_of(client, &model, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        !results[0].1 && !results[0].0.contains("claude-x"),
        "{results:#?}"
    );
}

/// The hook at the end of a turn (Gemini's AfterAgent, Copilot's agentStop), a message waiting
/// for the session: it releases the turn's locks and continues the session once, telling the
/// model about the message; the session is still ACTIVE then, FINISHED after. `edit` takes
/// `target.txt`.
pub fn turn_end_releases_the_locks_while_the_session_lives(
    client: &dyn Client,
    edit: impl Fn(&Repo) -> Value,
) {
    let (repo, model) = setup_committed(client);
    let (first, second) = (repo.flag("first-answer"), repo.flag("second-answer"));
    let calls = Value::from(vec![edit(&repo)]);
    let (mut run, _) = start_calls(client, &repo, &model, "turns", calls, &[&first, &second]);
    until(&mut run, "the edit inside the turn", || {
        session_holder(client, &repo, "target.txt").is_some()
    });
    let me = session_holder(client, &repo, "target.txt").unwrap();
    repo.env
        .agent("claude-x")
        .args(["msg", "send", &me, "target.txt is mine next"])
        .ok();
    release(&first);
    until(&mut run, "the continued turn reaches the model", || {
        model.requests().iter().any(|r| {
            client.is_turn(r)
                && r["body"]
                    .to_string()
                    .contains("unread message before you stop")
        })
    });
    assert!(
        repo.holders("target.txt").is_empty(),
        "released at the end of the turn, the session still running: {:?}",
        repo.holders("target.txt")
    );
    assert_eq!(repo.agents_of(&me), [(me.clone(), "ACTIVE".to_string())]);
    repo.env
        .agent("claude-x")
        .args(["lock", "target.txt", "--no-wait"])
        .ok();

    release(&second);
    run.ok();
    assert_eq!(repo.agents_of(&me), [(me.clone(), "FINISHED".to_string())]);
}

/// The user's prompt reaches coord through the client's own prompt event, as the client sends
/// it: `coord status` labels the session with its first line (`prompt`, cut at 40 characters).
pub fn first_prompt_labels_the_session(client: &dyn Client) {
    let (repo, model) = setup(client);
    let end = repo.flag("end");
    let prefix = format!("{}-", client.name());
    let script =
        client.script(serde_json::json!([{"write": [repo.abs("a.txt"), "a"]}, {"hold": end}]));
    let mut run = Run::spawn(
        client.session(&repo, &model, &script),
        "session",
        &repo.scratch(),
    );
    until(&mut run, "the session's edit", || {
        repo.env.exists("a.txt") && !repo.agents_of(&prefix).is_empty()
    });
    let status: serde_json::Value = repo.env.cmd().args(["status", "--json"]).ok().json();
    let agents = status["agents"].as_array().unwrap();
    let me = agents
        .iter()
        .find(|a| a["agent"].as_str().unwrap().starts_with(&prefix));
    let label = me
        .and_then(|a| a["prompt"].as_str())
        .unwrap_or_default()
        .to_string();
    release(&end);
    run.ok();
    let words = script.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = label.trim_end_matches('…');
    assert!(
        !shown.is_empty() && words.starts_with(shown),
        "the session's label is its prompt: {label:?} for {words:?}"
    );
}
