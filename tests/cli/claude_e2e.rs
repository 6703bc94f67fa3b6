//! End to end with the real Claude Code client (npm `@anthropic-ai/claude-code`), driven by a
//! scripted stand-in for the Anthropic Messages API on 127.0.0.1 (`tests/e2e/fake_anthropic.py`).
//!
//! Two real sessions share one folder wired by `coord init --client claude`: the first writes
//! a file and stays inside its turn; the second one's Write is denied by the PreToolUse hook,
//! naming the first (the model receives the reason as an error tool_result, the file stays);
//! after the first one's Stop, the second session (resumed) writes the file.
//!
//! Skips, saying why, where Claude Code cannot be installed or python3 is missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Env, coord_bin};

const SESSION_A: &str = "a1a1a1a1-0000-4000-8000-000000000001";
const SESSION_B: &str = "b2b2b2b2-0000-4000-8000-000000000002";

/// The `claude` executable: `COORD_TEST_CLAUDE` (set by `.ci/run`, which installs it under
/// `target/ci-tools/`), else installed there on first use.
fn claude() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("COORD_TEST_CLAUDE") {
        return Ok(PathBuf::from(p));
    }
    let prefix = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ci-tools");
    let bin = prefix.join("node_modules/.bin/claude");
    if !bin.exists() {
        let status = Command::new("timeout")
            .args([
                "600",
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(&prefix)
            .arg("@anthropic-ai/claude-code")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run npm: {e}"))?;
        if !status.success() || !bin.exists() {
            return Err(format!(
                "`npm install @anthropic-ai/claude-code` failed ({status})"
            ));
        }
    }
    let ok = Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !ok.success() {
        return Err(format!("`{} --version` failed", bin.display()));
    }
    Ok(bin)
}

/// The stand-in API server; killed (by pid) when dropped.
pub(crate) struct FakeApi {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl FakeApi {
    pub(crate) fn start(dir: &Path) -> Result<FakeApi, String> {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fake_anthropic.py");
        let port_file = dir.join("port");
        let log = dir.join("api.log");
        let child = Command::new("python3")
            .arg(&script)
            .arg(&port_file)
            .arg(&log)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run python3: {e}"))?;
        let mut api = FakeApi {
            child,
            port: 0,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                api.port = text.trim().parse().map_err(|e| format!("port file: {e}"))?;
                return Ok(api);
            }
            if let Ok(Some(status)) = api.child.try_wait() {
                return Err(format!("the stand-in API server exited: {status}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("the stand-in API server did not start".into())
    }

    pub(crate) fn tool_results(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["tool_result"].clone())
            .collect()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `claude -p PROMPT --allowedTools Write Edit` in `proj`, against the stand-in.
pub(crate) fn session(
    bin: &Path,
    proj: &Path,
    home: &Path,
    port: u16,
    prompt: &str,
    id: &[&str],
) -> Command {
    let mut path = PathBuf::from(coord_bin())
        .parent()
        .unwrap()
        .as_os_str()
        .to_owned();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut c = Command::new("timeout");
    c.arg("180")
        .arg(bin)
        .args(["-p", prompt, "--allowedTools", "Write", "Edit"])
        .args(id)
        .current_dir(proj)
        .env("PATH", path)
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-coord-e2e")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env_remove("COORD_DIR")
        .env_remove("COORD_AGENT")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

#[test]
fn two_real_claude_code_sessions_one_denied_naming_the_other_until_its_stop() {
    let bin = match claude() {
        Ok(b) => b,
        Err(why) => {
            eprintln!("skipped: Claude Code is not available: {why}");
            return;
        }
    };
    let env = Env::new();
    let scratch = tempfile::tempdir().unwrap();
    let api = match FakeApi::start(scratch.path()) {
        Ok(a) => a,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let proj = env.root();
    env.cmd().args(["init", "--client", "claude", "-q"]).ok();
    let out = proj.join("out.txt");
    let flag = scratch.path().join("release-a");

    // Session A writes out.txt and stays inside its turn until `flag` exists.
    let prompt_a = format!(
        "coord-e2e: write {} :: from A :: hold={}",
        out.display(),
        flag.display()
    );
    let a = session(
        &bin,
        proj,
        &home,
        api.port,
        &prompt_a,
        &["--session-id", SESSION_A],
    )
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(env.exists("out.txt.lock.claude-a1a1a1a1") && env.exists("out.txt")) {
        assert!(Instant::now() < deadline, "session A never wrote out.txt");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(env.read("out.txt"), "from A");

    // Session B's Write is denied by the hook, naming A; the file stays A's.
    let prompt_b = format!("coord-e2e: write {} :: from B", out.display());
    let b = session(
        &bin,
        proj,
        &home,
        api.port,
        &prompt_b,
        &["--session-id", SESSION_B],
    )
    .output()
    .unwrap();
    assert!(b.status.success(), "session B: {b:?}");
    assert_eq!(
        env.read("out.txt"),
        "from A",
        "the denied Write did not happen"
    );
    assert!(!env.exists("out.txt.lock.claude-b2b2b2b2"));
    let denied = api
        .tool_results()
        .into_iter()
        .find(|r| r["is_error"] == true)
        .unwrap_or_else(|| {
            panic!(
                "no error tool_result reached the model: {:?}",
                api.tool_results()
            )
        });
    let reason = denied["content"].to_string();
    assert!(reason.contains("claude-a1a1a1a1"), "{reason}");
    assert!(reason.contains("out.txt"), "{reason}");

    // A's turn ends: its Stop hook releases the lock.
    std::fs::write(&flag, "").unwrap();
    let a = a.wait_with_output().unwrap();
    assert!(a.status.success(), "session A: {a:?}");
    assert!(
        !env.exists("out.txt.lock.claude-a1a1a1a1"),
        "A's Stop released its lock"
    );

    // B, resumed, now gets the file.
    let b2 = session(
        &bin,
        proj,
        &home,
        api.port,
        &prompt_b,
        &["--resume", SESSION_B],
    )
    .output()
    .unwrap();
    assert!(b2.status.success(), "session B resumed: {b2:?}");
    assert_eq!(env.read("out.txt"), "from B");
    assert!(env.files_ending(".lock.claude-a1a1a1a1").is_empty());
    let status: serde_json::Value = env.cmd().args(["status", "--json"]).ok().json();
    let agents: Vec<String> = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap().to_string())
        .collect();
    assert!(
        agents.contains(&"claude-a1a1a1a1".to_string()),
        "{agents:?}"
    );
    assert!(
        agents.iter().any(|a| a.starts_with("claude-")) && agents.len() >= 2,
        "{agents:?}"
    );
}
