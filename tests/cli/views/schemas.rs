//! Every `--json` document has a JSON Schema under `docs/schemas/`; here each command's real
//! output, in a workspace where agents really act, is validated against its schema.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::support::{Cmd, Env, eventually, finish};

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schemas")
}

/// Validates documents against the schemas, remembering which schemas were used.
struct Checker {
    used: BTreeSet<String>,
    count: usize,
}

impl Checker {
    /// Validate `doc` against `docs/schemas/NAME.schema.json`.
    #[track_caller]
    fn doc(&mut self, name: &str, doc: &serde_json::Value) {
        if let Ok(dump) = std::env::var("COORD_SCHEMA_DUMP") {
            let dir = PathBuf::from(dump).join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let n = std::fs::read_dir(&dir).unwrap().count();
            std::fs::write(dir.join(format!("{n}.json")), doc.to_string()).unwrap();
            self.used.insert(name.to_string());
            return;
        }
        validate(name, doc);
        self.used.insert(name.to_string());
        self.count += 1;
    }

    /// Run `cmd` (with `--json`), expect exit `code`, validate its stdout against `name`.
    #[track_caller]
    fn run(&mut self, name: &str, cmd: Cmd, code: i32) -> serde_json::Value {
        let out = cmd.arg("--json").code(code);
        let doc: serde_json::Value = out.json();
        self.doc(name, &doc);
        doc
    }
}

/// Panic unless `doc` matches `docs/schemas/NAME.schema.json`.
#[track_caller]
pub(crate) fn validate(name: &str, doc: &serde_json::Value) {
    let path = schema_dir().join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no schema {}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("{} is not a valid schema: {e}", path.display()));
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "output does not match {name}.schema.json:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

const DAY: &str = "2026-01-21T09:00:00+01:00";

#[test]
fn every_json_document_matches_its_schema() {
    let env = Env::new();
    let mut c = Checker {
        used: BTreeSet::new(),
        count: 0,
    };
    env.write("a.md", "v1\n");
    env.write("b.md", "v1\n");

    // Presence, the stamp card, handshakes.
    c.run(
        "startup",
        env.cmd()
            .args(["startup", "--partner", "claude", "--task", "T1"]),
        0,
    );
    c.run("partners", env.cmd().arg("partners"), 0);
    c.run(
        "presence",
        env.agent("alpha").args(["presence", ".", "Task_1"]),
        0,
    );
    c.run(
        "presence",
        env.agent("beta").args(["presence", ".", "Task_2"]),
        0,
    );
    c.run("check", env.agent("alpha").arg("check"), 0);
    c.run("handshake", env.agent("alpha").args(["handshake"]), 0);
    c.run("handshake", env.agent("beta").args(["handshake"]), 0);
    c.run("status", env.cmd().arg("status"), 0);

    // Locks, a waiter, a refusal, writing through a lock.
    c.run(
        "lock",
        env.agent("alpha")
            .args(["lock", "a.md", "b.md", "--reason", "fixing"]),
        0,
    );
    c.run(
        "who",
        env.cmd().args(["who", "a.md", "b.md", "nolock.md"]),
        0,
    );
    c.run("version", env.cmd().arg("version"), 0);
    c.run("docs", env.cmd().arg("docs"), 0);
    // Claims shared through a remote (`file://`), with a claim and what an agent edits.
    // In a folder of its own: inside this workspace, the clone would be part of it.
    let apart = Env::new();
    if crate::rigs::git_or_skip() {
        let bare = apart.path("remote-srv/r.git");
        let clone = apart.path("remote-clone");
        std::fs::create_dir_all(&clone).unwrap();
        let git = |dir: &std::path::Path, args: &[&str]| {
            assert!(crate::rigs::git(dir).args(args).status().unwrap().success());
        };
        git(apart.root(), &["init", "-q", "--bare", "remote-srv/r.git"]);
        git(&clone, &["init", "-q"]);
        let url = format!("file://{}", bare.display());
        git(&clone, &["remote", "add", "origin", &url]);
        let in_clone = || {
            apart
                .agent("alpha")
                .env_remove("COORD_DIR")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .cwd(&clone)
        };
        c.run("remote-status", in_clone().args(["remote", "status"]), 0);
        c.run("remote-status", in_clone().args(["remote", "enable"]), 0);
        in_clone()
            .args(["remote", "claim", "src/", "--reason", "schemas"])
            .ok();
        // What an agent edits is published from its locks by `remote sync`.
        std::fs::create_dir_all(clone.join("src")).unwrap();
        in_clone().args(["lock", "src/a.rs"]).ok();
        c.run("remote-status", in_clone().args(["remote", "sync"]), 0);
        let st = c.run("remote-status", in_clone().args(["remote", "status"]), 0);
        assert_eq!(st["claims"][0]["pattern"], "src/**");
        assert_eq!(st["agents"][0]["working_on"][0], "src/a.rs");
        c.run("remote-status", in_clone().args(["remote", "disable"]), 0);
    }
    c.run(
        "plugin-write",
        env.cmd().args(["plugin", "write", "plugins-out"]),
        0,
    );
    c.run(
        "error",
        env.agent("beta").args(["lock", "a.md", "--no-wait"]),
        3,
    );
    c.run(
        "error",
        env.agent("beta").arg("unlock").arg("nosuch/../../x"),
        2,
    );
    let waiter = env
        .agent("beta")
        .args(["lock", "a.md", "--wait", "60s"])
        .spawn();
    eventually("beta waits", || {
        env.read(".beta_presence").contains("lock_status: WAITING")
    });
    let st = c.run("status", env.cmd().arg("status"), 0);
    assert_eq!(st["waits"].as_array().map(Vec::len), Some(1), "{st}");
    c.run("check", env.agent("beta").arg("check"), 0);
    c.run(
        "write",
        env.agent("alpha").args(["write", "b.md"]).stdin("v2\n"),
        0,
    );
    c.run("restore", env.agent("alpha").args(["restore", "b.md"]), 0);
    c.run(
        "restore-list",
        env.cmd().args(["restore", "b.md", "--list"]),
        0,
    );
    c.run(
        "note",
        env.agent("alpha").args(["note", "a.md", "looked at it"]),
        0,
    );
    c.run(
        "unlock",
        env.agent("alpha").args(["unlock", "a.md", "b.md"]),
        0,
    );
    assert_eq!(finish(waiter).code, Some(0));
    c.run("unlock", env.agent("beta").args(["unlock"]), 0);

    // Messages and the collaboration file.
    let sent = c.run(
        "msg-send",
        env.agent("alpha")
            .args(["msg", "send", "beta", "hello\nsecond line"]),
        0,
    );
    c.run(
        "msg-send",
        env.agent("alpha")
            .args(["msg", "send", "all", "to everyone"]),
        0,
    );
    c.run("msg-list", env.agent("beta").args(["msg", "list"]), 0);
    let id = sent["id"].as_str().unwrap().to_string();
    c.run("msg-read", env.agent("beta").args(["msg", "read", &id]), 0);
    c.run(
        "collab-write",
        env.agent("alpha").args(["collab", "write", "hi"]),
        0,
    );
    c.run("collab-read", env.cmd().args(["collab", "read"]), 0);

    // The dialogue.
    c.run(
        "dialogue-turn",
        env.cmd().args(["dialogue", "init", "--topic", "Cache"]),
        0,
    );
    c.run("dialogue-turn", env.cmd().args(["dialogue", "turn"]), 0);
    c.run(
        "dialogue-say",
        env.cmd()
            .args(["dialogue", "say", "--as", "AGENT-1", "Proposal"]),
        0,
    );
    c.run(
        "dialogue-turn",
        env.cmd()
            .args(["dialogue", "wait", "--as", "AGENT-2", "--timeout", "5s"]),
        0,
    );
    c.run("dialogue-show", env.cmd().args(["dialogue", "show"]), 0);
    c.run(
        "dialogue-command",
        env.cmd().args(["dialogue", "command", "PAUSE"]),
        0,
    );
    c.run("status", env.cmd().arg("status"), 0);
    c.run(
        "dialogue-archive",
        env.cmd().args(["dialogue", "archive"]),
        0,
    );

    // A review.
    env.write("docs/api.md", "# API\n");
    c.run(
        "review-new",
        env.cmd().env("COORD_NOW", DAY).args([
            "review",
            "new",
            "api",
            "--target",
            "docs/api.md",
            "--reviewer",
            "Claude",
            "--implementer",
            "Codex",
        ]),
        0,
    );
    c.run("review-show", env.cmd().args(["review", "show", "api"]), 0);
    c.run("review-next", env.cmd().args(["review", "next", "api"]), 0);
    let path = c.run(
        "review-path",
        env.cmd().env("COORD_NOW", DAY).args([
            "review", "path", "api", "--kind", "review", "--llm", "claude",
        ]),
        0,
    );
    let out = path["path"].as_str().unwrap().to_string();
    env.write(
        &out,
        "# Review\n\nFindings.\n\n## Handoff Prompt for Next Actor\n\nCodex: answer.\n",
    );
    c.run(
        "review-issue",
        env.cmd().env("COORD_NOW", DAY).args([
            "review",
            "issue",
            "api",
            "add",
            "--severity",
            "high",
            "--title",
            "Pagination",
        ]),
        0,
    );
    c.run(
        "review-issue",
        env.cmd().env("COORD_NOW", DAY).args([
            "review", "issue", "api", "set", "ISSUE-01", "--status", "resolved",
        ]),
        0,
    );
    c.run(
        "review-agree",
        env.cmd().env("COORD_NOW", DAY).args([
            "review",
            "agree",
            "api",
            "Use cursors",
            "--adopted",
            "Claude",
        ]),
        0,
    );
    c.run(
        "review-step",
        env.cmd().env("COORD_NOW", DAY).args([
            "review",
            "step",
            "api",
            "--as",
            "claude",
            "--action",
            "review",
            "--output",
            &out,
            "--summary",
            "findings",
            "--next",
            "codex",
        ]),
        0,
    );
    c.run("status", env.cmd().arg("status"), 0);
    c.run("review-show", env.cmd().args(["review", "show", "api"]), 0);
    c.run("error", env.cmd().args(["review", "close", "api"]), 4);

    c.run(
        "shutdown",
        env.cmd().args(["shutdown", "--partner", "claude"]),
        0,
    );
    c.run("shutdown", env.agent("alpha").arg("shutdown"), 0);
    c.run("status", env.cmd().arg("status"), 0);
    c.run("whoami", env.agent("alpha").arg("whoami"), 0);
    c.run("whoami", env.cmd().arg("whoami"), 0);
    c.run(
        "whoami",
        env.cmd()
            .env(
                "CLAUDE_CODE_SESSION_ID",
                "3f2a9c1b-0000-4000-8000-000000000000",
            )
            .arg("whoami"),
        0,
    );

    // The schemas are not vacuous: a missing field, a wrong type or an unknown field fails.
    let st = c.run("status", env.cmd().arg("status"), 0);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(schema_dir().join("status.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let mut bad = st.clone();
    bad.as_object_mut().unwrap().remove("locks");
    assert!(!v.is_valid(&bad), "a missing field fails");
    let mut bad = st.clone();
    bad["agents"][0]["status"] = serde_json::json!(3);
    assert!(!v.is_valid(&bad), "a wrong type fails");
    let mut bad = st.clone();
    bad["surprise"] = serde_json::json!(true);
    assert!(!v.is_valid(&bad), "an unknown field fails");
    let mut ok = st.clone();
    ok["schema_version"] = serde_json::json!(1);
    assert!(v.is_valid(&ok), "schema_version is allowed");

    // Every schema was used by a real document.
    let schemas: BTreeSet<String> = std::fs::read_dir(schema_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".schema.json")
                .map(str::to_string)
        })
        .collect();
    let mut untested: Vec<_> = schemas.difference(&c.used).collect();
    untested.retain(|s| *s != "watch-event");
    assert!(untested.is_empty(), "schemas without a test: {untested:?}");
    assert!(c.count > 40);
}

#[test]
fn a_deadlock_refusal_and_every_watch_event_match_their_schemas() {
    let env = Env::new();
    let mut c = Checker {
        used: BTreeSet::new(),
        count: 0,
    };
    env.write("x", "v1\n");
    env.write("y", "v1\n");
    let mut watcher = env.cmd().args(["watch", "--json"]).spawn();
    let stdout = watcher.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut events = Vec::new();
    let mut expect = |event: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no `{event}` event; got {events:#?}"));
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            events.push(v.clone());
            if v["event"] == event {
                return;
            }
        }
    };
    expect("started");
    env.agent("a1").args(["presence", ".", "t"]).ok();
    env.agent("b2").args(["presence", ".", "t"]).ok();
    env.agent("a1").args(["lock", "x"]).ok();
    env.agent("b2").args(["lock", "y"]).ok();
    let a = env.agent("a1").args(["lock", "y", "--wait", "60s"]).spawn();
    expect("waiting");
    c.run(
        "error",
        env.agent("b2").args(["lock", "x", "--wait", "60s"]),
        3,
    );
    env.agent("b2").args(["msg", "send", "a1", "sorry"]).ok();
    expect("message_sent");
    env.agent("b2").args(["unlock", "y"]).ok();
    assert_eq!(finish(a).code, Some(0));
    expect("wait_ended");
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    expect("turn_passed");
    env.agent("b2").arg("shutdown").ok();
    expect("agent_finished");
    std::fs::remove_file(env.path(".b2_presence")).unwrap();
    expect("agent_left");
    let _ = watcher.kill();
    let _ = watcher.wait();
    for e in &events {
        c.doc("watch-event", e);
    }
}
