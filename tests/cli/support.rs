//! A small builder around the real `coord` binary, in the spirit of just's and fd's test
//! harnesses: `env.agent("claude").args(["lock", "a.md"]).code(3).stderr_has("gemini")`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The binary under test.
pub fn coord_bin() -> &'static str {
    env!("CARGO_BIN_EXE_coord")
}

/// The variables through which agent clients tell what they start their session id.
pub const CLIENT_SESSION_VARS: [&str; 5] = [
    "CLAUDE_CODE_SESSION_ID",
    "CODEX_SESSION_ID",
    "CODEX_THREAD_ID",
    "COPILOT_AGENT_SESSION_ID",
    "GEMINI_SESSION_ID",
];

/// A temporary workspace.
pub struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::Builder::new()
            .prefix("coord-test-")
            .tempdir()
            .unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        // coord takes the nearest `.coord/` at or above a folder as its workspace: one left in
        // the temp folder itself (by a run outside any test folder) would make every test
        // folder part of it. Say so, rather than fail a hundred tests in odd ways.
        if let Some(stray) = root
            .ancestors()
            .skip(1)
            .map(|a| a.join(".coord"))
            .find(|a| a.is_dir())
        {
            panic!(
                "{} exists above the test folders: every test would share it; remove it",
                stray.display()
            );
        }
        Env { _dir: dir, root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, content).unwrap();
    }

    /// `agent`'s entry in `coord status --json` (the test fails when it has none).
    #[track_caller]
    pub fn status_of(&self, agent: &str) -> serde_json::Value {
        let v: serde_json::Value = self.cmd().args(["status", "--json"]).ok().json();
        v["agents"]
            .as_array()
            .and_then(|all| all.iter().find(|a| a["agent"] == agent))
            .cloned()
            .unwrap_or_else(|| panic!("no {agent} in {v:#}"))
    }

    #[track_caller]
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
    }

    pub fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.path(rel)).is_ok()
    }

    /// Set a file's modification time to `secs` seconds ago.
    pub fn age(&self, rel: &str, secs: u64) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(self.path(rel))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(secs))
            .unwrap();
    }

    /// `coord` in the root, with no agent and no inherited `COORD_*` settings.
    pub fn cmd(&self) -> Cmd {
        let mut command = Command::new(coord_bin());
        command.current_dir(&self.root).env("COORD_DIR", &self.root);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("COORD_") && k != "COORD_DIR" {
                command.env_remove(k);
            }
        }
        // Nor the session of an agent client the tests may run in (coord would act as it).
        for var in CLIENT_SESSION_VARS {
            command.env_remove(var);
        }
        command.env("NO_COLOR", "1");
        Cmd {
            command,
            stdin: None,
        }
    }

    /// `coord` acting as `agent`.
    pub fn agent(&self, agent: &str) -> Cmd {
        self.cmd().env("COORD_AGENT", agent)
    }

    /// Every file under the root (relative path → bytes), `.coord/` excepted unless asked.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                let rel = p
                    .strip_prefix(&self.root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let ft = e.file_type().unwrap();
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_symlink() {
                    out.insert(
                        rel,
                        std::fs::read_link(&p)
                            .unwrap()
                            .to_string_lossy()
                            .into_owned()
                            .into_bytes(),
                    );
                } else {
                    out.insert(rel, std::fs::read(&p).unwrap_or_default());
                }
            }
        }
        out
    }

    /// Files whose name ends with `suffix`, anywhere under the root.
    pub fn files_ending(&self, suffix: &str) -> Vec<String> {
        self.snapshot()
            .into_keys()
            .filter(|k| k.ends_with(suffix))
            .collect()
    }
}

/// One `coord` invocation being built.
pub struct Cmd {
    command: Command,
    stdin: Option<Vec<u8>>,
}

impl Cmd {
    pub fn agent(self, name: &str) -> Cmd {
        self.env("COORD_AGENT", name)
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cmd {
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Cmd {
        self.command.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: &str) -> Cmd {
        self.command.env_remove(key);
        self
    }

    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Cmd {
        self.command.current_dir(dir);
        self
    }

    pub fn stdin(mut self, input: impl AsRef<[u8]>) -> Cmd {
        self.stdin = Some(input.as_ref().to_vec());
        self
    }

    /// With `PATH` naming only `dir`: no agent client's command is found (an empty folder), or
    /// only those planted there ([`plant_command`]). For commands that start no other program.
    pub fn path_only(self, dir: &Path) -> Cmd {
        self.env("PATH", dir)
    }

    /// The underlying command (for spawning without waiting).
    pub fn command(self) -> Command {
        self.command
    }

    /// Start it without waiting; stdout and stderr are piped.
    pub fn spawn(mut self) -> Child {
        self.command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Run it to completion.
    pub fn run(mut self) -> Output {
        self.command
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let shown = format!("{:?}", self.command);
        let mut child = self.command.spawn().unwrap();
        if let Some(input) = self.stdin.take() {
            let mut pipe = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
        }
        let out = child.wait_with_output().unwrap();
        Output {
            shown,
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Run it and expect exit 0.
    #[track_caller]
    pub fn ok(self) -> Output {
        self.code(0)
    }

    /// Run it and expect exit `code`.
    #[track_caller]
    pub fn code(self, code: i32) -> Output {
        let out = self.run();
        assert_eq!(
            out.code,
            Some(code),
            "expected exit {code} from {}\n--- stdout\n{}--- stderr\n{}",
            out.shown,
            out.stdout,
            out.stderr
        );
        out
    }
}

/// A finished invocation.
#[derive(Debug)]
pub struct Output {
    pub shown: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Output {
        assert!(
            self.stdout.contains(needle),
            "expected stdout of {} to contain {needle:?}\n--- stdout\n{}--- stderr\n{}",
            self.shown,
            self.stdout,
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Output {
        assert!(
            self.stderr.contains(needle),
            "expected stderr of {} to contain {needle:?}\n--- stdout\n{}--- stderr\n{}",
            self.shown,
            self.stdout,
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stdout_lacks(&self, needle: &str) -> &Output {
        assert!(
            !self.stdout.contains(needle),
            "expected stdout of {} not to contain {needle:?}\n--- stdout\n{}",
            self.shown,
            self.stdout
        );
        self
    }

    #[track_caller]
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of {} is not the expected JSON: {e}\n{}",
                self.shown, self.stdout
            )
        })
    }
}

/// A command for `coord run` (`sh -c`) that creates `started`, then runs until a file `stop`
/// appears, or 20 s have passed should the test fail before creating it.
const UNTIL_STOP: &str =
    ": > started; i=0; while [ ! -e stop ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done";

/// `coord run FILE` by `agent`, its command started and holding FILE until [`stop_run`].
pub fn hold_with_run(env: &Env, agent: &str, file: &str) -> Child {
    let run = env
        .agent(agent)
        .args(["run", file, "--", "/bin/sh", "-c", UNTIL_STOP])
        .spawn();
    eventually("the run's command started", || env.exists("started"));
    run
}

/// Tell a run from [`hold_with_run`] to end its command; it must exit 0.
pub fn stop_run(env: &Env, run: Child) {
    env.write("stop", "");
    let out = finish(run);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

/// Wait (bounded, 20 s) until `cond` holds; panics with `what` when it never does.
#[track_caller]
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        if cond() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("timed out waiting for: {what}");
}

/// coord's temporary files (`.coord-<host>-<pid>-XXXXXX.tmp`) in `dir` (none when it is gone).
pub fn temps_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".coord-") && n.ends_with(".tmp"))
                .collect()
        })
        .unwrap_or_default()
}

/// Wait tickets under `.coord/queue/` (any file but `seq`, in any folder).
pub fn tickets(env: &Env) -> Vec<String> {
    env.snapshot()
        .into_keys()
        .filter(|k| k.starts_with(".coord/queue/") && k != ".coord/queue/seq")
        .collect()
}

/// The CPU time (user + system, in clock ticks) in a process's `/proc/PID/stat`.
pub fn cpu_ticks(stat: &str) -> u64 {
    // Fields after the command name: state is field 3, utime 14, stime 15.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A spawned process's exit code and output, once it ends.
pub fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    Output {
        shown: "spawned coord".into(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A folder outside every test workspace (one per test process), where hooks whose payload
/// names the workspace are started: a hook that wrongly took the folder it runs in for the
/// workspace (a mutant under test, say) writes its `.coord/` there, never in `/`, where it
/// would sit above every test folder.
pub fn outside() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    folder_once(&DIR, "coord-outside-")
}

/// The folder in `cell`, made (empty, named `prefix…`) the first time it is asked for.
fn folder_once(
    cell: &'static std::sync::OnceLock<tempfile::TempDir>,
    prefix: &str,
) -> &'static Path {
    cell.get_or_init(|| {
        tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("a temporary folder")
    })
    .path()
}

/// An executable `name` in `dir` (a script that does nothing): a client "installed" there.
pub fn plant_command(dir: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// An empty folder (one per test process): as `PATH` ([`Cmd::path_only`]), no agent client is
/// found, and a plain `coord init` wires the contract's four clients, as on a machine without
/// any installed.
pub fn no_clients() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    folder_once(&DIR, "coord-no-clients-")
}
