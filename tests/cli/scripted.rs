//! The bench of the Gemini CLI and Copilot CLI end-to-end tests: a real git repository wired by
//! `coord init --client X` only, a scripted model (`tests/e2e/fake_*.py`) on 127.0.0.1, a scratch
//! HOME, each client run under a deadline, and every process the test started (the model, the
//! clients, the hooks and MCP servers they start, anything left behind) killed by pid at the end.
//!
//! Every process is marked with `COORD_E2E_TAG=<unique>` in its environment, which the clients
//! pass on to what they start; the cleanup kills the processes that carry this test's mark.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Env, coord_bin};

/// How long one client run may take before the test kills it and fails.
pub const RUN_LIMIT: Duration = Duration::from_secs(90);

/// How long a client may take to reach a point of its script (it starts node and its hooks run
/// a debug build: seconds each on a loaded machine).
pub const STEP_LIMIT: Duration = Duration::from_secs(60);

/// Wait (at most [`STEP_LIMIT`]) until `cond` holds; panics with `what` when it never does.
#[track_caller]
pub fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < STEP_LIMIT {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for: {what}");
}

/// One line of a scripted model's prompt: the tool calls it makes in order (`[name, args]`; name
/// `mcp:NAME` for the tool coord's MCP server offers as NAME), then the text "done", held back
/// until `hold` exists when given (the session stays inside its turn).
pub fn script(calls: Value, hold: Option<&Path>) -> String {
    script_holds(calls, hold.into_iter().collect())
}

/// [`script`] where the K-th "done" of the conversation (a turn continued by a hook) is held back
/// until `holds[K]` exists.
pub fn script_holds(calls: Value, holds: Vec<&Path>) -> String {
    let holds: Vec<String> = holds.iter().map(|p| p.display().to_string()).collect();
    format!("coord-e2e: {}", json!({ "calls": calls, "holds": holds }))
}

/// The repository, the scratch HOME and the scripted model of one test.
pub struct Lab {
    pub env: Env,
    pub scratch: tempfile::TempDir,
    pub home: PathBuf,
    pub port: u16,
    tag: String,
    log: PathBuf,
    _model: Child,
}

impl Lab {
    /// A git repository with a committed `target.txt` ("old line\n"), wired by `coord init
    /// --client CLIENT` (committed too), and the model `tests/e2e/FAKE` listening.
    pub fn new(client: &str, fake: &str) -> Lab {
        let env = Env::new();
        let scratch = tempfile::Builder::new()
            .prefix("coord-e2e-")
            .tempdir()
            .unwrap();
        let home = scratch.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let tag = format!(
            "{}-{}-{}",
            std::process::id(),
            client,
            scratch
                .path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace('.', "")
        );
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(env.root())
                .env("HOME", &home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.email", "dev@example.com"]);
        git(&["config", "user.name", "dev"]);
        env.write("target.txt", "old line\n");
        env.cmd()
            .env("HOME", &home)
            .args(["init", "--client", client, "-q"])
            .ok();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "start"]);

        let port_file = scratch.path().join("port");
        let log = scratch.path().join("model.log");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/e2e")
            .join(fake);
        let mut model = Command::new("python3")
            .arg(&script)
            .arg(&port_file)
            .arg(&log)
            .env("COORD_E2E_TAG", &tag)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("python3");
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().parse().unwrap();
            }
            if let Ok(Some(status)) = model.try_wait() {
                panic!("the scripted model exited: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the scripted model did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Lab {
            env,
            scratch,
            home,
            port,
            tag,
            log,
            _model: model,
        }
    }

    pub fn root(&self) -> &Path {
        self.env.root()
    }

    /// A flag file in the scratch folder (not yet there).
    pub fn flag(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// PATH with the `coord` under test first, as a user who installed it.
    pub fn path_var(&self) -> std::ffi::OsString {
        let mut path = PathBuf::from(coord_bin())
            .parent()
            .unwrap()
            .as_os_str()
            .to_owned();
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        path
    }

    /// A command carrying this test's mark, in the repository, with the scratch HOME and nothing
    /// of the outer coord or client configuration.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.root())
            .env("PATH", self.path_var())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("COORD_E2E_TAG", &self.tag)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        for var in [
            "COORD_DIR",
            "COORD_AGENT",
            "COORD_GUARD",
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
            "GIT_DIR",
            "GIT_WORK_TREE",
        ] {
            c.env_remove(var);
        }
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().to_string();
            if key.starts_with("GEMINI_")
                || key.starts_with("GOOGLE_")
                || key.starts_with("COPILOT_")
                || key.starts_with("CLAUDE")
                || key.starts_with("CODEX_")
                || key == "GH_TOKEN"
                || key == "GITHUB_TOKEN"
            {
                c.env_remove(key);
            }
        }
        c
    }

    /// Start a client run; its output goes to files in the scratch folder.
    pub fn spawn(&self, mut cmd: Command, name: &str) -> Run {
        let out = self.scratch.path().join(format!("{name}.out"));
        let err = self.scratch.path().join(format!("{name}.err"));
        cmd.stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        let child = cmd.spawn().expect("the client starts");
        Run {
            child,
            out,
            err,
            started: Instant::now(),
            tag: self.tag.clone(),
        }
    }

    /// Every request the model received, as logged (`{"path", "body", ...}`).
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The requests whose text holds `needle` (the conversations of one session's script).
    pub fn requests_with(&self, needle: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["body"].to_string().contains(needle))
            .collect()
    }

    /// `coord status --json` of the repository.
    pub fn status(&self) -> Value {
        self.env
            .cmd()
            .env("HOME", &self.home)
            .args(["status", "--json"])
            .ok()
            .json()
    }

    /// `coord doctor --json`'s word on `client` (`hooks_run`: `yes`, `no`, `unknown`), as the user
    /// of the scratch HOME would see it.
    pub fn doctor_says(&self, client: &str) -> (String, String) {
        let out = self
            .command(Path::new(coord_bin()))
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

    /// The agents in `coord status` whose id starts with `prefix`, with their status.
    pub fn agents(&self, prefix: &str) -> Vec<(String, String)> {
        self.status()["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| {
                let id = a["agent"].as_str()?;
                id.starts_with(prefix).then(|| {
                    (
                        id.to_string(),
                        a["status"].as_str().unwrap_or("").to_string(),
                    )
                })
            })
            .collect()
    }

    /// The lock files of `file` (relative), as `FILE.lock.<agent>` names.
    pub fn locks_of(&self, file: &str) -> Vec<String> {
        let prefix = format!("{file}.lock.");
        let dir = self
            .root()
            .join(Path::new(file).parent().unwrap_or(Path::new("")));
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        out.sort();
        out
    }

    /// `git` in the repository, its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.root())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", self.path_var())
            .env_remove("COORD_AGENT")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        kill_tagged(&self.tag);
    }
}

/// One client run.
pub struct Run {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
    tag: String,
}

/// A finished client run (its output shown when an assertion on it fails).
#[derive(Debug)]
#[allow(dead_code)]
pub struct Done {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
}

impl Run {
    /// Wait for the client to exit (at most [`RUN_LIMIT`]; past it every process of the test is
    /// killed and the test fails).
    pub fn finish(mut self) -> Done {
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Done {
                    status,
                    stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
                    stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
                    wall: self.started.elapsed(),
                };
            }
            if self.started.elapsed() > RUN_LIMIT {
                kill_tagged(&self.tag);
                let _ = self.child.wait();
                panic!(
                    "the client ran longer than {RUN_LIMIT:?}; stdout: {}\nstderr: {}",
                    std::fs::read_to_string(&self.out).unwrap_or_default(),
                    std::fs::read_to_string(&self.err).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `finish`, asserting the client exited 0.
    pub fn ok(self) -> Done {
        let done = self.finish();
        assert!(done.status.success(), "the client failed: {done:#?}");
        eprintln!("client run: {:.1} s", done.wall.as_secs_f64());
        done
    }

    /// SIGKILL the client: the process started and its descendants that are the client itself
    /// (a node that relaunches itself, a loader and its native binary), not the hooks, shells or
    /// MCP servers it started.
    pub fn kill9(&mut self) {
        let mut chain = vec![self.child.id()];
        let mut at = self.child.id();
        while let Some(next) = children(at)
            .into_iter()
            .find(|&c| is_client_process(&comm(c)))
        {
            chain.push(next);
            at = next;
        }
        for pid in chain.iter().rev() {
            kill(*pid);
        }
        let _ = self.child.wait();
    }
}

fn comm(pid: u32) -> String {
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

fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if rest.split_whitespace().nth(1) == Some(&pid.to_string()) {
            out.push(child);
        }
    }
    out
}

fn kill(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// SIGKILL every process whose environment carries `COORD_E2E_TAG=tag` (until none is left).
fn kill_tagged(tag: &str) {
    let mark = format!("COORD_E2E_TAG={tag}");
    let me = std::process::id();
    for _ in 0..20 {
        let mut found = false;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if environ.split(|b| *b == 0).any(|v| v == mark.as_bytes()) {
                // A zombie keeps its environ unreadable (empty), so it is not found again.
                kill(pid);
                found = true;
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The agent every scenario below has hold a file against the session.
pub const OTHER: &str = "claude-x";

/// One real client driven on this bench (Gemini CLI, Copilot CLI), as the scenarios below use
/// it: what differs between them is here, the scenarios are written once.
pub trait LabClient {
    /// coord's name for it: its agents are `NAME-…`.
    fn name(&self) -> &'static str;
    /// The client's command for one session of `prompt` in `lab`, against the scripted model.
    fn session(&self, lab: &Lab, prompt: &str) -> Command;
    /// The call that changes `target.txt` (as the lab made it) to read `TEXT\n`.
    fn edit(&self, lab: &Lab, text: &str) -> Value;
    /// The call that writes `TEXT\n` as the whole of `target.txt`, whatever it holds.
    fn write(&self, lab: &Lab, text: &str) -> Value;
    /// What the client told the model each tool call of the session of `prompt` did, as text.
    fn results(&self, lab: &Lab, prompt: &str) -> Vec<String>;

    /// The `NAME-*` agent holding `target.txt`, if one does.
    fn holder(&self, lab: &Lab) -> Option<String> {
        let prefix = format!("{}-", self.name());
        lab.locks_of("target.txt")
            .into_iter()
            .find_map(|l| l.strip_prefix("target.txt.lock.").map(str::to_string))
            .filter(|a| a.starts_with(&prefix))
    }

    /// A session of `calls` (the turn held until `hold` exists, when given) and its prompt.
    fn start(&self, lab: &Lab, name: &str, calls: Value, hold: Option<&Path>) -> (Run, String) {
        let prompt = script(calls, hold);
        (lab.spawn(self.session(lab, &prompt), name), prompt)
    }
}

/// Two concurrent sessions are two agents: while A holds `target.txt` inside its turn, B's write
/// is denied, the reason naming A; A's turn's end releases it.
pub fn two_sessions_exclude_each_other(c: &dyn LabClient, lab: &Lab) {
    let prefix = format!("{}-", c.name());
    let flag = lab.flag("a-done");
    let (a, _) = c.start(lab, "a", json!([c.edit(lab, "from A")]), Some(&flag));
    until("session A's edit", || {
        lab.env.read("target.txt") == "from A\n" && c.holder(lab).is_some()
    });
    let holder_a = c.holder(lab).unwrap();

    let (b, prompt_b) = c.start(lab, "b", json!([c.write(lab, "from B")]), None);
    b.ok();
    assert_eq!(
        lab.env.read("target.txt"),
        "from A\n",
        "B's write was denied"
    );
    let results = c.results(lab, &prompt_b);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains(&holder_a),
        "B is told A holds it: {results:#?}"
    );
    let agents = lab.agents(&prefix);
    assert_eq!(agents.len(), 2, "two sessions, two agents: {agents:?}");

    std::fs::write(&flag, "").unwrap();
    a.ok();
    assert!(lab.locks_of("target.txt").is_empty());
}

/// SessionEnd finishes the session's presence: ACTIVE while it runs, FINISHED after.
pub fn session_end_finishes_the_presence(c: &dyn LabClient, lab: &Lab) {
    let prefix = format!("{}-", c.name());
    let flag = lab.flag("end");
    let (run, _) = c.start(lab, "end", json!([]), Some(&flag));
    until("the session's presence", || !lab.agents(&prefix).is_empty());
    let during = lab.agents(&prefix);
    assert_eq!(during[0].1, "ACTIVE", "{during:?}");
    std::fs::write(&flag, "").unwrap();
    run.ok();
    let after = lab.agents(&prefix);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].1, "FINISHED", "{after:?}");
}

/// `kill -9` of the client inside its turn frees the file it holds within seconds (not the
/// 5-minute TTL).
pub fn killed_client_frees_its_files(c: &dyn LabClient, lab: &Lab) {
    let flag = lab.flag("never");
    let (mut run, _) = c.start(
        lab,
        "killed",
        json!([c.edit(lab, "from the session")]),
        Some(&flag),
    );
    until("the session's edit", || c.holder(lab).is_some());
    lab.env
        .agent(OTHER)
        .args(["lock", "target.txt", "--no-wait"])
        .code(3);
    run.kill9();
    let killed = Instant::now();
    lab.env
        .agent(OTHER)
        .args(["lock", "target.txt", "--wait", "20s"])
        .ok();
    eprintln!(
        "the file was free {:.1} s after the kill",
        killed.elapsed().as_secs_f64()
    );
}
