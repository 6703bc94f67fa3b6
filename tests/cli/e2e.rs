//! What the end-to-end tests with real agent clients share: the client executables (never
//! installed here: `.ci/run` installs them and names them in `COORD_TEST_<CLIENT>`), a scripted
//! model on 127.0.0.1 (`tests/e2e/fake_*.py`, see `tests/e2e/scripted.py` for the script a prompt
//! carries), a repository wired by `coord init`, a private HOME, and client runs bounded in time
//! whose every process is killed by process group when the run is dropped.
//!
//! Every test of a real client is ignored by plain `cargo test`; run with `--ignored`, it fails,
//! saying why, when its client, python3 or git is missing (see [`require`]).
//!
//! The scenarios each client goes through are in `e2e/scenarios.rs`.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde_json::Value;

use crate::support::{Env, coord_bin};

mod scenarios;

pub use scenarios::*;

/// One test per scenario of `e2e/scenarios.rs` a client runs: the client's constructor and the
/// ignore reason once, then `TEST_NAME => scenario(extra arguments)` per line (the test's name
/// says client and scenario). Scenarios whose client checks more are written out in its file.
macro_rules! scenario_tests {
    (client: $client:expr, ignore: $why:literal;
     $($(#[$doc:meta])* $test:ident => $scenario:ident($($arg:expr),*);)*) => {
        $(
            $(#[$doc])*
            #[test]
            #[ignore = $why]
            fn $test() {
                let client = $client;
                crate::e2e::$scenario(&client $(, $arg)*);
            }
        )*
    };
}
pub(crate) use scenario_tests;

/// How long one client run may take before it is killed and the test fails.
pub const CLIENT_LIMIT: Duration = Duration::from_secs(180);

/// One real agent client the end-to-end tests drive: coord's name for it, the variable naming
/// its executable, what it is, and the scripted model's wire protocol it talks. How each one is
/// set up and started is its [`Client`] implementation (`claude_e2e.rs`, `codex_e2e.rs`,
/// `gemini_e2e.rs`, `copilot_e2e.rs`, `moreclients_e2e.rs`).
pub struct RealClient {
    pub name: &'static str,
    pub var: &'static str,
    pub what: &'static str,
    pub model: &'static str,
}

/// Every real client, in the order `.ci/run` installs them. Each of their tests is
/// `#[ignore = "needs the real client: set COORD_TEST_<CLIENT> (see .ci/run)"]`: plain `cargo test`
/// counts it as ignored; `cargo test --test cli -- --ignored NAME` runs it, and fails when the
/// client cannot run.
pub const CLIENTS: &[RealClient] = &[
    RealClient {
        name: "claude",
        var: "COORD_TEST_CLAUDE",
        what: "Claude Code",
        model: "fake_anthropic.py (Anthropic Messages API)",
    },
    RealClient {
        name: "codex",
        var: "COORD_TEST_CODEX",
        what: "Codex CLI",
        model: "fake_responses.py (OpenAI Responses API)",
    },
    RealClient {
        name: "gemini",
        var: "COORD_TEST_GEMINI",
        what: "Gemini CLI",
        model: "fake_gemini.py (Gemini streamGenerateContent)",
    },
    RealClient {
        name: "copilot",
        var: "COORD_TEST_COPILOT",
        what: "Copilot CLI",
        model: "fake_openai_chat.py (OpenAI chat completions)",
    },
    RealClient {
        name: "qwen",
        var: "COORD_TEST_QWEN",
        what: "Qwen Code",
        model: "fake_openai_compat.py (OpenAI chat completions)",
    },
    RealClient {
        name: "opencode",
        var: "COORD_TEST_OPENCODE",
        what: "OpenCode",
        model: "fake_openai_compat.py (OpenAI chat completions)",
    },
    RealClient {
        name: "cline",
        var: "COORD_TEST_CLINE",
        what: "Cline CLI",
        model: "fake_openai_compat.py (OpenAI chat completions)",
    },
];

/// The executable of the real client `name` (one of [`CLIENTS`]), once it is a file and python3
/// (the scripted model) and git answer `--version` (checked once per run). A test that needs it
/// is ignored by plain `cargo test`; run with `--ignored`, it fails here, saying why, when one of
/// them is missing: a test that did not run never reads as passed. (The client itself is not
/// asked `--version`: a loaded machine may take more than 30 s to start one, and a client that
/// does not run fails the test anyway.)
#[track_caller]
pub fn require(name: &str) -> PathBuf {
    let c = CLIENTS
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no real client named {name}"));
    let Some(bin) = std::env::var_os(c.var).filter(|v| !v.is_empty()) else {
        panic!(
            "{} is not set: this test needs the real {} (`.ci/run` installs it with npm and sets \
             the variable; see tests/e2e/README.md)",
            c.var, c.what
        );
    };
    let bin = PathBuf::from(bin);
    assert!(
        bin.is_file(),
        "{}={} is not a file: the real {} is not there",
        c.var,
        bin.display(),
        c.what
    );
    static TOOLS: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let tools = TOOLS.get_or_init(|| {
        answers_version(Path::new("python3"))
            .map_err(|e| format!("python3 (for the scripted model) does not run: {e}"))?;
        answers_version(Path::new("git")).map_err(|e| format!("git does not run: {e}"))
    });
    if let Err(why) = tools {
        panic!("{why}");
    }
    bin
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

    /// The whole log, as text.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The requests whose body holds `needle` (as JSON text: a prompt's quotes escaped).
    pub fn requests_with(&self, needle: &str) -> Vec<Value> {
        let needle = serde_json::to_string(needle).unwrap();
        let needle = &needle[1..needle.len() - 1];
        self.requests()
            .into_iter()
            .filter(|r| r["body"].to_string().contains(needle))
            .collect()
    }

    /// The requests of a session's own turns (carrying a script and offering tools), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["script"] == true && r["tools"].as_array().is_some_and(|t| !t.is_empty()))
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
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", path_with_coord())
            .env_remove("COORD_AGENT")
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
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("NO_COLOR", "1");
        for var in [
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
            "GIT_DIR",
            "GIT_WORK_TREE",
        ] {
            c.env_remove(var);
        }
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
                "GOOGLE_",
            ]
            .iter()
            .any(|p| k_str.starts_with(p))
                || k_str == "GH_TOKEN"
                || k_str == "GITHUB_TOKEN"
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

impl Repo {
    /// The agents in `coord status` whose id starts with `prefix`, with their status.
    pub fn agents_of(&self, prefix: &str) -> Vec<(String, String)> {
        self.agents()
            .into_iter()
            .filter(|(a, _)| a.starts_with(prefix))
            .collect()
    }

    /// Commit everything in the work tree (the wiring, the files the test wrote).
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", message]);
    }

    /// `coord doctor --json`'s word on `client` (`hooks_run`: `yes`, `no`, `unknown`, and why),
    /// as the user of the private HOME sees it.
    pub fn doctor_says(&self, client: &str) -> (String, String) {
        let out = self
            .client_cmd(Path::new(coord_bin()))
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        let doctor: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("coord doctor --json: {e}: {out:?}"));
        let entry = doctor["clients"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["client"] == client)
            .unwrap_or_else(|| panic!("doctor names no {client}: {doctor}"));
        (
            entry["hooks_run"].as_str().unwrap_or("").to_string(),
            entry["why"].as_str().unwrap_or("").to_string(),
        )
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

    /// [`Run::wait`], asserting the client exited 0.
    #[track_caller]
    pub fn ok(self) -> Finished {
        let done = self.wait();
        assert_eq!(done.code, Some(0), "the client failed: {done:#?}");
        done
    }

    /// SIGKILL the client: the process started and its descendants that are the client itself
    /// (a node that relaunches itself, a loader and its native binary: [`is_client_process`]),
    /// not the hooks, shells or MCP servers it started; the deepest first.
    pub fn kill9_chain(&mut self) {
        let mut chain = vec![self.pgid];
        while let Some(next) = children(*chain.last().unwrap())
            .into_iter()
            .find(|&c| is_client_process(&comm(c)))
        {
            chain.push(next);
        }
        for pid in chain.into_iter().rev() {
            let _ = kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL);
        }
        if let Some(child) = self.child.as_mut() {
            let _ = child.wait();
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

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The client's own processes: node (Gemini CLI, Copilot's loader) and Copilot's native binary,
/// whose main thread names itself `MainThread`.
fn is_client_process(comm: &str) -> bool {
    matches!(comm, "node" | "MainThread" | "copilot" | "gemini")
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

/// A prompt for the models that take a list of tool calls in their client's own names (Gemini,
/// Copilot, the OpenAI-compatible one: `tests/e2e/fake_gemini.py` etc.): the calls
/// (`[name, args]`; name `mcp:NAME` for the tool coord's MCP server offers as NAME) in order,
/// then the text "done", the K-th "done" of the conversation (a turn continued by a hook) held
/// back until `holds[K]` exists (the session stays inside its turn; one hold is `hold`, which
/// every one of those models reads).
pub fn calls_script(calls: Value, holds: &[&Path]) -> String {
    let holds: Vec<String> = holds.iter().map(|p| p.display().to_string()).collect();
    let script = match holds.as_slice() {
        [one] => serde_json::json!({ "calls": calls, "hold": one }),
        _ => serde_json::json!({ "calls": calls, "holds": holds }),
    };
    format!("coord-e2e: {script}")
}

/// The steps of a `tests/e2e/scripted.py` script as [`calls_script`] takes them, each acting
/// step made a call by `call` (`write`, `shell`, `mcp` steps); the holds after the last call are
/// the turn's, a `say` at the end is the model's "done". A hold or a `say` before a call has no
/// form there: it panics.
pub fn steps_as_calls(steps: &Value, call: impl Fn(&str, &Value) -> Value) -> String {
    let mut calls = Vec::new();
    let mut holds: Vec<PathBuf> = Vec::new();
    for step in steps.as_array().unwrap() {
        let (kind, arg) = step.as_object().unwrap().iter().next().unwrap();
        match kind.as_str() {
            "hold" => holds.push(PathBuf::from(arg.as_str().unwrap())),
            "say" => holds.push(PathBuf::new()),
            _ => {
                assert!(
                    holds.is_empty(),
                    "this client's model holds or answers only after its last call: {steps}"
                );
                calls.push(call(kind, arg));
            }
        }
    }
    let holds: Vec<&Path> = holds
        .iter()
        .filter(|h| !h.as_os_str().is_empty())
        .map(PathBuf::as_path)
        .collect();
    assert!(holds.len() <= 1, "one hold at the turn's end: {steps}");
    calls_script(Value::from(calls), &holds)
}

/// One real client, as the scenarios drive it: what differs between clients is here, the
/// scenarios (`e2e/scenarios.rs`) are written once.
pub trait Client {
    /// coord's name for it (`coord init --client NAME`, the agents' prefix).
    fn name(&self) -> &'static str;
    /// The scripted model it talks to (a file in `tests/e2e/`).
    fn model(&self) -> &'static str;
    /// The repository its sessions run in: wired by `coord init --client NAME`, unless coord
    /// reaches the client another way (its plugin).
    fn repo(&self) -> Repo {
        Repo::new(self.name())
    }
    /// The user's settings the client needs, written into the repo's private HOME once the
    /// repository is wired and the model listens.
    fn configure(&self, _repo: &Repo, _model: &FakeModel) {}
    /// The client's command for one session of `prompt`, in `repo`, against `model`.
    fn session(&self, repo: &Repo, model: &FakeModel, prompt: &str) -> Command;
    /// The prompt carrying `steps` (a `tests/e2e/scripted.py` script) in its model's terms.
    fn script(&self, steps: Value) -> String {
        script(steps)
    }
    /// Whether `request` (as the model logged it) is one of a session's turns: it carries a
    /// script and offers tools.
    fn is_turn(&self, request: &Value) -> bool {
        request["script"] == true && request["tools"].as_array().is_some_and(|t| !t.is_empty())
    }
    /// The tool results a turn's `request` carried (its conversation so far), as the client
    /// told its model: `(text, error)`.
    fn tool_results(&self, request: &Value) -> Vec<(String, bool)> {
        request["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|res| {
                let text = res["text"].as_str().unwrap_or_default().to_string();
                (text, res["error"] == true)
            })
            .collect()
    }
    /// SIGKILL of the client itself (as a crash would), not of what it started.
    fn kill9(&self, run: &mut Run) {
        run.kill9(client_process(run.pid()));
    }
    /// Called before two concurrent sessions start (e.g. to start them in one clock window).
    fn before_concurrent_sessions(&self) {}
}

/// The tool results each of the session turns' requests carried, in order.
pub fn conversations(client: &dyn Client, model: &FakeModel) -> Vec<Vec<(String, bool)>> {
    model
        .requests()
        .iter()
        .filter(|r| client.is_turn(r))
        .map(|r| client.tool_results(r))
        .collect()
}

/// The tool results of the latest turn (its whole conversation so far; with one session at a
/// time): `(text, error)`.
pub fn results(client: &dyn Client, model: &FakeModel) -> Vec<(String, bool)> {
    conversations(client, model).pop().unwrap_or_default()
}

/// The tool results of the longest conversation whose prompt is `prompt`: what the client told
/// the model each tool call of that session did.
pub fn conversation_of(
    client: &dyn Client,
    model: &FakeModel,
    prompt: &str,
) -> Vec<(String, bool)> {
    model
        .requests_with(prompt)
        .iter()
        .filter(|r| client.is_turn(r))
        .map(|r| client.tool_results(r))
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

/// Every tool result any turn carried that contains `needle`.
pub fn results_containing(client: &dyn Client, model: &FakeModel, needle: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (text, _) in conversations(client, model).into_iter().flatten() {
        if text.contains(needle) && !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

/// A session of `calls` (see [`calls_script`]), started; and its prompt.
pub fn start_calls(
    client: &dyn Client,
    repo: &Repo,
    model: &FakeModel,
    what: &str,
    calls: Value,
    holds: &[&Path],
) -> (Run, String) {
    let prompt = calls_script(calls, holds);
    let run = Run::spawn(client.session(repo, model, &prompt), what, &repo.scratch());
    (run, prompt)
}

/// The one agent of `client` holding `rel`, if exactly one holds it.
pub fn session_holder(client: &dyn Client, repo: &Repo, rel: &str) -> Option<String> {
    match repo.holders(rel).as_slice() {
        [one] if one.starts_with(&format!("{}-", client.name())) => Some(one.clone()),
        _ => None,
    }
}

/// A repository with `target.txt` ("old line\n") committed with the wiring, its scripted model,
/// and the client configured.
pub fn setup_committed(client: &dyn Client) -> (Repo, FakeModel) {
    let (repo, model) = setup(client);
    repo.env.write("target.txt", "old line\n");
    repo.commit_all("start");
    (repo, model)
}

/// A repository wired for `client`, its scripted model, and the client configured.
pub fn setup(client: &dyn Client) -> (Repo, FakeModel) {
    let repo = client.repo();
    let model = FakeModel::start(client.model(), &repo.scratch());
    client.configure(&repo, &model);
    (repo, model)
}

/// A session of `steps` (see [`Client::script`]), started.
pub(crate) fn start(
    client: &dyn Client,
    repo: &Repo,
    model: &FakeModel,
    what: &str,
    steps: Value,
) -> Run {
    let cmd = client.session(repo, model, &client.script(steps));
    Run::spawn(cmd, what, &repo.scratch())
}
