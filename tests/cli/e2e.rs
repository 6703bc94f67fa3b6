//! What the end-to-end tests with real agent clients share: the client executables (never
//! installed here: `.ci/run` installs them and names them in `COORD_TEST_<CLIENT>`), a scripted
//! model on 127.0.0.1 (`tests/e2e/fake_*.py`, see `tests/e2e/scripted.py` for the script a prompt
//! carries), a repository wired by `coord init`, a private HOME, and client runs bounded in time
//! whose every process is killed by process group when the run is dropped.
//!
//! A test whose client or python3 is missing prints why and returns (it skips).

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde_json::Value;

use crate::support::{Env, coord_bin};

/// How long one client run may take before it is killed and the test fails.
pub const CLIENT_LIMIT: Duration = Duration::from_secs(120);

/// The executable named by the environment variable `var` (e.g. `COORD_TEST_CODEX`), once it,
/// python3 (the scripted model) and git answer `--version`; `None`, with the reason printed, when
/// one does not.
pub fn client(var: &str, what: &str) -> Option<PathBuf> {
    let Some(bin) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
        eprintln!("skipped: {what} is not installed (set {var}; `.ci/run` installs it with npm)");
        return None;
    };
    let bin = PathBuf::from(bin);
    for (program, why) in [
        (bin.as_path(), format!("{what} (`{}`)", bin.display())),
        (
            Path::new("python3"),
            "python3 (for the scripted model)".into(),
        ),
        (Path::new("git"), "git".into()),
    ] {
        if let Err(e) = answers_version(program) {
            eprintln!("skipped: {why} does not run: {e}");
            return None;
        }
    }
    Some(bin)
}

/// `PROGRAM --version` succeeds within 30 s.
fn answers_version(program: &Path) -> Result<(), String> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) if s.success() => return Ok(()),
            Some(s) => return Err(format!("`--version` exited with {s}")),
            None if start.elapsed() > Duration::from_secs(30) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("`--version` did not answer within 30 s".into());
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A scripted model (`tests/e2e/SCRIPT`) listening on 127.0.0.1; killed (by pid) when dropped.
pub struct FakeModel {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl FakeModel {
    pub fn start(script: &str, dir: &Path) -> FakeModel {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/e2e")
            .join(script);
        let port_file = dir.join("model.port");
        let log = dir.join("model.log");
        let child = Command::new("python3")
            .arg(&script)
            .arg(&port_file)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
        let mut model = FakeModel {
            child,
            port: 0,
            log,
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                model.port = text.trim().parse().expect("the port file holds a port");
                return model;
            }
            if let Ok(Some(status)) = model.child.try_wait() {
                panic!("the scripted model exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the scripted model did not start within 20 s");
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request logged so far (see `tests/e2e/scripted.py`).
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The requests of a session's own turns (carrying a script and offering tools), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["script"] == true && r["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect()
    }

    /// The tool results of the latest turn (its whole conversation so far; with one session at a
    /// time): `(text, error)`.
    pub fn results(&self) -> Vec<(String, bool)> {
        self.turns()
            .last()
            .and_then(|r| r["results"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|res| {
                (
                    res["text"].as_str().unwrap_or_default().to_string(),
                    res["error"] == true,
                )
            })
            .collect()
    }

    /// Every tool result any turn carried that contains `needle`.
    pub fn results_containing(&self, needle: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.turns() {
            for res in r["results"].as_array().into_iter().flatten() {
                let text = res["text"].as_str().unwrap_or_default();
                if text.contains(needle) && !out.iter().any(|t| t == text) {
                    out.push(text.to_string());
                }
            }
        }
        out
    }

    /// The whole body of the session's first turn, as JSON text.
    pub fn first_turn_body(&self) -> String {
        self.turns()
            .first()
            .map(|r| r["body"].to_string())
            .unwrap_or_default()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A git repository wired by `coord init --client CLIENT`, with a private HOME beside it.
pub struct Repo {
    pub env: Env,
    scratch: tempfile::TempDir,
    pub home: PathBuf,
}

impl Repo {
    pub fn new(client: &str) -> Repo {
        let repo = Repo::fresh();
        repo.env.cmd().args(["init", "--client", client, "-q"]).ok();
        repo
    }

    /// A git repository nobody set up for coord (no `coord init`).
    pub fn fresh() -> Repo {
        let env = Env::new();
        let scratch = tempfile::Builder::new()
            .prefix("coord-e2e-")
            .tempdir()
            .unwrap();
        let home = std::fs::canonicalize(scratch.path()).unwrap().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let repo = Repo { env, scratch, home };
        repo.git(&["init", "-q"]);
        repo.git(&["config", "user.name", "coord e2e"]);
        repo.git(&["config", "user.email", "e2e@coord.invalid"]);
        repo
    }

    pub fn root(&self) -> &Path {
        self.env.root()
    }

    /// A path under the repository, as a string (the scripts name absolute paths).
    pub fn abs(&self, rel: &str) -> String {
        self.env.path(rel).to_string_lossy().into_owned()
    }

    /// A folder for the test's own files (the model's log, flags), outside the repository.
    pub fn scratch(&self) -> PathBuf {
        std::fs::canonicalize(self.scratch.path()).unwrap()
    }

    /// A flag file (not yet made) for a `hold` step.
    pub fn flag(&self, name: &str) -> PathBuf {
        self.scratch().join(name)
    }

    /// `git ARGS` in the repository; panics unless it succeeds; its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.root())
            .env("HOME", &self.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The agents holding a lock on `rel` (from its lock files).
    pub fn holders(&self, rel: &str) -> Vec<String> {
        let prefix = format!("{rel}.lock.");
        self.env
            .files_ending("")
            .into_iter()
            .filter_map(|f| f.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }

    /// A client command with the environment every run gets: coord's own build first on PATH,
    /// the private HOME, no `COORD_*` setting inherited, stdin closed.
    pub fn client_cmd(&self, bin: &Path) -> Command {
        let mut c = Command::new(bin);
        c.current_dir(self.root())
            .env("PATH", path_with_coord())
            .env("HOME", &self.home)
            .env("NO_COLOR", "1");
        // Nothing of a client session this test may itself run in (its session ids) leaks in.
        for (k, _) in std::env::vars_os() {
            let k_str = k.to_string_lossy();
            if [
                "COORD_",
                "CLAUDE",
                "CODEX_",
                "GEMINI_",
                "COPILOT_",
                "ANTHROPIC_",
                "OPENAI_",
            ]
            .iter()
            .any(|p| k_str.starts_with(p))
            {
                c.env_remove(k);
            }
        }
        // Offline: anything but the scripted model on 127.0.0.1 goes to a closed port.
        for proxy in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            c.env(proxy, "http://127.0.0.1:9");
        }
        c.env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost");
        c
    }

    /// `coord status --json`'s `agents`: (agent, status) pairs.
    pub fn agents(&self) -> Vec<(String, String)> {
        let status: Value = self.env.cmd().args(["status", "--json"]).ok().json();
        status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["agent"].as_str().unwrap().to_string(),
                    a["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

/// PATH with the coord under test first.
pub fn path_with_coord() -> OsString {
    let mut path = Path::new(coord_bin())
        .parent()
        .unwrap()
        .as_os_str()
        .to_owned();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

/// A client run in its own process group, bounded by [`CLIENT_LIMIT`]; its output goes to files.
/// Dropping it kills the whole group (the client, its hooks, its MCP servers, its shell tools).
pub struct Run {
    child: Option<Child>,
    pgid: i32,
    what: String,
    started: Instant,
    out: PathBuf,
    err: PathBuf,
}

/// A finished client run.
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn spawn(mut cmd: Command, what: &str, dir: &Path) -> Run {
        use std::os::unix::process::CommandExt;
        let out = dir.join(format!("{what}.stdout"));
        let err = dir.join(format!("{what}.stderr"));
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let pgid = child.id() as i32;
        Run {
            child: Some(child),
            pgid,
            what: what.to_string(),
            started: Instant::now(),
            out,
            err,
        }
    }

    /// The pid of the process started (the group's leader).
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// Wait for the client to exit; kills it and panics past [`CLIENT_LIMIT`].
    pub fn wait(mut self) -> Finished {
        let mut child = self.child.take().unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if self.started.elapsed() > CLIENT_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                self.kill_group();
                panic!(
                    "{} did not finish within {CLIENT_LIMIT:?}\n--- stdout\n{}\n--- stderr\n{}",
                    self.what,
                    self.read(&self.out),
                    self.read(&self.err)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        eprintln!("{} ran {:.1?}", self.what, self.started.elapsed());
        Finished {
            code: status.code(),
            stdout: self.read(&self.out),
            stderr: self.read(&self.err),
        }
    }

    /// Whether the client is still running.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// The output so far (for a failure message).
    pub fn output_so_far(&self) -> String {
        format!(
            "--- stdout\n{}\n--- stderr\n{}",
            self.read(&self.out),
            self.read(&self.err)
        )
    }

    /// SIGKILL to one process (the client itself, not its group), as a crash would; reaped when
    /// it is the process started here, as a shell reaps the client it started.
    pub fn kill9(&mut self, pid: i32) {
        kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL).unwrap();
        if let Some(child) = self.child.as_mut().filter(|c| c.id() as i32 == pid) {
            let _ = child.wait();
        }
    }

    fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    fn kill_group(&self) {
        if let Some(pgid) = Pid::from_raw(self.pgid) {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Whatever the client left running (hooks, MCP servers, shell tools) dies with it.
        self.kill_group();
    }
}

/// The client process itself under `pid`: an npm launcher (`node …/codex.js`) starts the real
/// client as its one child; follow such launchers down to the process that is not `node`.
pub fn client_process(pid: i32) -> i32 {
    let mut pid = pid;
    for _ in 0..4 {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "node" {
            return pid;
        }
        match children(pid).as_slice() {
            [only] => pid = *only,
            _ => return pid,
        }
    }
    pid
}

/// The children of `pid` (from /proc).
pub fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        if after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// Wait (bounded by [`CLIENT_LIMIT`]) until `cond` holds while `run` is alive; panics with `what`
/// and the client's output when it never does or the client exits first.
#[track_caller]
pub fn until(run: &mut Run, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < CLIENT_LIMIT {
        if cond() {
            return;
        }
        if !run.running() {
            if cond() {
                return;
            }
            panic!("{} exited before {what}\n{}", run.what, run.output_so_far());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}\n{}", run.output_so_far());
}

/// A prompt carrying a script (see `tests/e2e/scripted.py`).
pub fn script(steps: Value) -> String {
    format!("coord-e2e: {steps}")
}

/// Make a flag file (a `hold` step goes on).
pub fn release(flag: &Path) {
    std::fs::write(flag, "").unwrap();
}

/// One real client, as the scenarios below drive it.
pub trait Client {
    /// coord's name for it (`coord init --client NAME`, the agents' prefix).
    fn name(&self) -> &'static str;
    /// The scripted model it talks to (a file in `tests/e2e/`).
    fn model(&self) -> &'static str;
    /// The client's command for one session of `prompt`, in `repo`, against `model` (the user's
    /// configuration it needs is written into the repo's private HOME).
    fn session(&self, repo: &Repo, model: &FakeModel, prompt: &str) -> Command;
    /// Called before two concurrent sessions start (e.g. to start them in one clock window).
    fn before_concurrent_sessions(&self) {}
}

/// A repository wired for `client` and its scripted model.
pub fn setup(client: &dyn Client) -> (Repo, FakeModel) {
    let repo = Repo::new(client.name());
    let model = FakeModel::start(client.model(), &repo.scratch());
    (repo, model)
}

fn start(client: &dyn Client, repo: &Repo, model: &FakeModel, what: &str, steps: Value) -> Run {
    let cmd = client.session(repo, model, &script(steps));
    Run::spawn(cmd, what, &repo.scratch())
}

/// The text of `rel`, if it exists.
fn content(repo: &Repo, rel: &str) -> Option<String> {
    std::fs::read_to_string(repo.env.path(rel)).ok()
}

/// The one agent of `client` holding `rel`, if exactly one holds it.
fn session_holder(client: &dyn Client, repo: &Repo, rel: &str) -> Option<String> {
    match repo.holders(rel).as_slice() {
        [one] if one.starts_with(&format!("{}-", client.name())) => Some(one.clone()),
        _ => None,
    }
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
        || !model.results().is_empty(),
    );
    let denied = &model.results()[0].0;
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
        || model.results().len() >= 2,
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
    let done = run.wait();
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(repo.holders("target.txt").is_empty());
}

/// Two concurrent sessions of one client are two agents: the second one's edit of the file the
/// first holds is denied, naming the first. Returns both runs' outputs.
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
    let reasons = model.results_containing(&agent_a);
    assert!(
        reasons.iter().any(|r| r.contains("shared.txt")),
        "B's model learns that {agent_a} holds the file: {reasons:?}"
    );

    release(&end);
    let a = a.wait();
    assert_eq!(a.code, Some(0), "{a:?}");
    assert!(repo.holders("shared.txt").is_empty());
    (a, b)
}

/// The SessionStart hook's context reaches the model: its first request names another agent's lock.
pub fn session_start_context_reaches_the_model(client: &dyn Client) {
    let (repo, model) = setup(client);
    repo.env
        .agent("alice")
        .args(["lock", "notes.md", "-q", "--reason", "rewriting the intro"])
        .ok();
    let done = start(client, &repo, &model, "session", serde_json::json!([])).wait();
    assert_eq!(done.code, Some(0), "{done:?}");
    let body = model.first_turn_body();
    assert!(
        !body.is_empty(),
        "the session asked the model: {:?}",
        model.requests().len()
    );
    assert!(
        body.contains("alice") && body.contains("notes.md"),
        "the model's first request holds coord's context naming alice's lock on notes.md"
    );
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
    let told = model.turns().iter().any(|r| {
        let body = r["body"].to_string();
        body.contains("your shell command changed") && body.contains("held.md")
    });
    assert!(
        told,
        "the model's request after the shell call holds coord's notice: {:?}",
        model.turns().last().map(|r| r["results"].to_string())
    );
}

/// SessionEnd finishes the session's presence.
pub fn session_end_finishes_the_presence(client: &dyn Client) {
    let (repo, model) = setup(client);
    let done = start(
        client,
        &repo,
        &model,
        "session",
        serde_json::json!([{"write": [repo.abs("a.txt"), "a"]}]),
    )
    .wait();
    assert_eq!(done.code, Some(0), "{done:?}");
    assert_eq!(repo.env.read("a.txt").trim_end(), "a");
    let prefix = format!("{}-", client.name());
    let mine: Vec<_> = repo
        .agents()
        .into_iter()
        .filter(|(a, _)| a.starts_with(&prefix))
        .collect();
    assert!(
        !mine.is_empty(),
        "the session was present: {:?}",
        repo.agents()
    );
    assert!(
        mine.iter().all(|(_, s)| s == "FINISHED"),
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
        model.results().len() >= 2
    });
    let results = model.results();
    assert!(
        results[0].0.contains("mcp.txt") && !results[0].1,
        "the MCP lock was granted: {results:?}"
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
    let done = run.wait();
    assert_eq!(done.code, Some(0), "{done:?}");
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
        || model.results().len() >= tools,
    );
    let results = model.results();
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
    let done = run.wait();
    assert_eq!(done.code, Some(0), "{done:?}");
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
        model.results().len() == 1
    });
    assert!(
        session_holder(client, &repo, "k.txt").is_some(),
        "the session holds k.txt: {:?}; {:?}",
        repo.holders("k.txt"),
        model.results()
    );
    let pid = client_process(run.pid());
    run.kill9(pid);
    repo.env
        .agent("bob")
        .args(["lock", "k.txt", "--wait", "20s", "-q"])
        .ok();
    assert_eq!(repo.holders("k.txt"), ["bob"]);
}
