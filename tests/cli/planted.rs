//! A bed for hostile files: a workspace `ws/` inside the test folder, files planted in every
//! shape (empty, truncated, binary, huge, a FIFO, a folder, a socket, a symlink to a victim), and
//! commands run under a time limit so that a hang fails instead of blocking the suite.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::support::{Cmd, Env, Output};

/// A command that has not finished by then is taken to hang.
pub const LIMIT: Duration = Duration::from_secs(10);

/// Run `cmd` to completion, killing it and failing the test if it outlives `limit`.
#[track_caller]
pub fn bounded(cmd: Cmd, limit: Duration) -> Output {
    let mut command = cmd.command();
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{shown} still ran after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        shown,
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Assert an exit code, showing the output when it differs.
#[track_caller]
pub fn expect(out: &Output, code: i32) {
    assert_eq!(
        out.code,
        Some(code),
        "expected exit {code} from {}\n--- stdout\n{}--- stderr\n{}",
        out.shown,
        out.stdout,
        out.stderr
    );
    assert!(
        !out.stderr.contains("panicked"),
        "{} panicked:\n{}",
        out.shown,
        out.stderr
    );
}

/// A test folder holding the workspace `ws/`, a victim file and an `outside/` folder beside it.
pub struct Bed {
    pub env: Env,
}

pub const VICTIM: &str = "victim.txt";

pub const PRECIOUS: &str = "precious, must never change\n";

impl Bed {
    pub fn new() -> Bed {
        let env = Env::new();
        std::fs::create_dir_all(env.path("ws")).unwrap();
        std::fs::create_dir_all(env.path("outside")).unwrap();
        env.write(VICTIM, PRECIOUS);
        env.write("ws/a.md", "hello\n");
        Bed { env }
    }

    /// The workspace root.
    pub fn ws(&self) -> PathBuf {
        self.env.path("ws")
    }

    /// A path inside the workspace.
    pub fn at(&self, rel: &str) -> PathBuf {
        self.ws().join(rel)
    }

    /// The victim file outside the workspace.
    pub fn victim(&self) -> PathBuf {
        self.env.path(VICTIM)
    }

    /// `coord` with the workspace as root and current directory, acting as `agent`.
    pub fn cmd(&self, agent: Option<&str>) -> Cmd {
        let cmd = self.env.cmd().env("COORD_DIR", self.ws()).cwd(self.ws());
        match agent {
            Some(a) => cmd.agent(a),
            None => cmd,
        }
    }

    /// Run `coord ARGS` as `agent` under the time limit.
    #[track_caller]
    pub fn run(&self, agent: Option<&str>, args: &[&str]) -> Output {
        bounded(self.cmd(agent).args(args), LIMIT)
    }

    /// Everything outside the workspace.
    pub fn outside(&self) -> BTreeMap<String, String> {
        tree(self.env.root())
            .into_iter()
            .filter(|(k, _)| k != "ws" && !k.starts_with("ws/"))
            .collect()
    }

    /// Everything inside the workspace.
    pub fn inside(&self) -> BTreeMap<String, String> {
        tree(&self.ws())
    }

    #[track_caller]
    pub fn assert_victim_untouched(&self) {
        assert_eq!(std::fs::read_to_string(self.victim()).unwrap(), PRECIOUS);
    }
}

/// Every entry under `root`, described without opening anything that is not a regular file:
/// `file:<content>` (or `big:<len>` past 1 MiB), `dir`, `fifo`, `socket`, `link:<target>`.
pub fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let ft = meta.file_type();
            let what = if ft.is_symlink() {
                format!("link:{}", std::fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                stack.push(p);
                "dir".into()
            } else if ft.is_fifo() {
                "fifo".into()
            } else if ft.is_socket() {
                "socket".into()
            } else if meta.len() > 1 << 20 {
                format!("big:{}", meta.len())
            } else {
                format!(
                    "file:{}",
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap())
                )
            };
            out.insert(rel, what);
        }
    }
    out
}

/// What a hostile state file can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Empty,
    Truncated,
    Binary,
    Huge,
    Fifo,
    Dir,
    Socket,
    Symlink,
}

pub const ALL: [Kind; 8] = [
    Kind::Empty,
    Kind::Truncated,
    Kind::Binary,
    Kind::Huge,
    Kind::Fifo,
    Kind::Dir,
    Kind::Socket,
    Kind::Symlink,
];

impl Kind {
    /// Whether coord can read it as a (possibly meaningless) small text file.
    pub fn readable(self) -> bool {
        matches!(self, Kind::Empty | Kind::Truncated | Kind::Binary)
    }

    /// Whether a rename can put a regular file in its place.
    pub fn replaceable(self) -> bool {
        self != Kind::Dir
    }
}

/// Create a hostile `path` of `kind`; a symlink points at `victim`.
pub fn plant(path: &Path, kind: Kind, victim: &Path) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    match kind {
        Kind::Empty => std::fs::write(path, b"").unwrap(),
        Kind::Truncated => std::fs::write(path, b"Agent: Gho").unwrap(),
        Kind::Binary => {
            let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
            std::fs::write(path, bytes).unwrap();
        }
        Kind::Huge => {
            // 100 MiB, sparse: coord must refuse it by size, never read it whole.
            let f = std::fs::File::create(path).unwrap();
            f.set_len(100 << 20).unwrap();
        }
        // `mkfifo(1)`: rustix offers no `mkfifo` on macOS.
        Kind::Fifo => assert!(
            std::process::Command::new("mkfifo")
                .arg(path)
                .status()
                .unwrap()
                .success()
        ),
        Kind::Dir => std::fs::create_dir(path).unwrap(),
        Kind::Socket => {
            drop(std::os::unix::net::UnixListener::bind(path).unwrap());
        }
        Kind::Symlink => std::os::unix::fs::symlink(victim, path).unwrap(),
    }
}

/// Set the modification time of `path` itself (not a link's target) `secs` seconds back,
/// whatever kind of file it is.
pub fn age_entry(path: &Path, secs: u64) {
    let ok = std::process::Command::new("touch")
        .arg("-h")
        .arg("-d")
        .arg(format!("{secs} seconds ago"))
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "touch -h failed on {}", path.display());
}

#[derive(Debug, Deserialize)]
pub(crate) struct StatusDoc {
    pub(crate) agents: Vec<AgentDoc>,
    pub(crate) locks: Vec<LockDoc>,
    pub(crate) unreadable: Vec<UnreadableDoc>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AgentDoc {
    pub(crate) agent: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LockDoc {
    pub(crate) file: String,
    pub(crate) agent: String,
    pub(crate) state: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct UnreadableDoc {
    pub(crate) path: String,
    pub(crate) why: String,
}

/// Exit code expected for a kind of hostile file.
pub(crate) type Code = fn(Kind) -> i32;

pub(crate) fn zero(_: Kind) -> i32 {
    0
}

pub(crate) fn one(_: Kind) -> i32 {
    1
}

pub(crate) fn three(_: Kind) -> i32 {
    3
}

/// 0 for a small (possibly meaningless) regular file, else 1.
pub(crate) fn small_ok(k: Kind) -> i32 {
    if k.readable() { 0 } else { 1 }
}

/// 0 for a folder (what the path should be), else 1.
pub(crate) fn dir_ok(k: Kind) -> i32 {
    if k == Kind::Dir { 0 } else { 1 }
}

/// 1 for a folder (nothing can replace it), else 0.
pub(crate) fn dir_fails(k: Kind) -> i32 {
    if k == Kind::Dir { 1 } else { 0 }
}

pub(crate) struct Step {
    pub(crate) agent: Option<&'static str>,
    pub(crate) args: &'static [&'static str],
    pub(crate) code: Code,
    /// Whether the command may change the workspace.
    pub(crate) writes: bool,
}

pub(crate) const fn read(
    agent: Option<&'static str>,
    args: &'static [&'static str],
    code: Code,
) -> Step {
    Step {
        agent,
        args,
        code,
        writes: false,
    }
}

pub(crate) const fn write(
    agent: Option<&'static str>,
    args: &'static [&'static str],
    code: Code,
) -> Step {
    Step {
        agent,
        args,
        code,
        writes: true,
    }
}

pub(crate) struct Case<'a> {
    /// The hostile path, relative to the workspace.
    pub(crate) target: &'static str,
    pub(crate) setup: fn(&Bed),
    /// Seconds to age the hostile entry by (0: fresh).
    pub(crate) age: u64,
    pub(crate) steps: &'a [Step],
    /// Whether `status --json` must list the target under `unreadable` for a kind.
    pub(crate) listed: fn(Kind) -> bool,
}

pub(crate) fn never(_: Kind) -> bool {
    false
}

pub(crate) fn always(_: Kind) -> bool {
    true
}

/// The workspace without the kernel-lock files (opening them is not a change).
pub(crate) fn state(bed: &Bed) -> BTreeMap<String, String> {
    bed.inside()
        .into_iter()
        .filter(|(k, _)| !k.ends_with("mutex"))
        .collect()
}

pub(crate) fn remove_any(p: &std::path::Path) {
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if m.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
}

pub(crate) fn sweep(case: &Case<'_>) {
    for kind in ALL {
        let bed = Bed::new();
        (case.setup)(&bed);
        let target = bed.at(case.target);
        remove_any(&target);
        plant(&target, kind, &bed.victim());
        if case.age > 0 {
            age_entry(&target, case.age);
        }
        let outside = bed.outside();
        let status = bed.run(None, &["status", "--json"]);
        expect(&status, 0);
        let doc: serde_json::Value = status.json();
        let listed = doc["unreadable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["path"] == case.target);
        assert_eq!(
            listed,
            (case.listed)(kind),
            "{} {kind:?}: unreadable {}",
            case.target,
            doc["unreadable"]
        );
        for step in case.steps {
            let before = state(&bed);
            let out = bounded(bed.cmd(step.agent).args(step.args), LIMIT);
            let code = (step.code)(kind);
            let what = format!("{} {kind:?} {:?}", case.target, step.args);
            expect(&out, code);
            if code != 0 {
                // Said once: with `--json` in the error document on stdout, else on stderr.
                if step.args.contains(&"--json") {
                    let doc: serde_json::Value = out.json();
                    assert!(doc["error"]["message"].is_string(), "{what}: {doc}");
                } else {
                    assert!(out.stderr.contains("error: "), "{what}: {}", out.stderr);
                }
            }
            assert_eq!(bed.outside(), outside, "{what}: wrote outside");
            bed.assert_victim_untouched();
            if !step.writes {
                // A refusal is an event of the history (contract §11): the log may only have
                // grown by appended lines; nothing else may change.
                let (mut after, mut was) = (state(&bed), before.clone());
                let log = ".coord/history/events.jsonl";
                let grown = after.remove(log).unwrap_or_default();
                let old = was.remove(log).unwrap_or_default();
                assert!(grown.starts_with(&old), "{what}: the history was rewritten");
                after.remove(".coord/history");
                was.remove(".coord/history");
                assert_eq!(after, was, "{what}: a read wrote");
            }
        }
    }
}

// --- messages ---

pub(crate) fn two_messages(bed: &Bed) {
    bed.run(Some("gemini"), &["msg", "send", "claude", "hello"]);
    std::fs::write(
        bed.at(".coord/messages/aaaa.msg"),
        "from: gemini\nto: claude\ntime: 2026-01-01T00:00:00+00:00\n\nhi\n",
    )
    .unwrap();
}

// --- dialogue ---

pub(crate) fn one_said(bed: &Bed) {
    bed.run(None, &["dialogue", "init", "--topic", "t"]);
    bed.run(None, &["dialogue", "say", "--as", "AGENT-1", "first"]);
}

pub(crate) const TURN: &[&str] = &["dialogue", "turn"];

pub(crate) const ARCHIVE: &[&str] = &["dialogue", "archive"];

// --- review tracker ---

pub(crate) fn one_review(bed: &Bed) {
    std::fs::write(bed.at("t.md"), "# T\n").unwrap();
    let out = bed.run(
        None,
        &[
            "review",
            "new",
            "api",
            "--target",
            "t.md",
            "--reviewer",
            "Claude",
            "--implementer",
            "Codex",
        ],
    );
    expect(&out, 0);
    std::fs::write(
        bed.at("out.md"),
        "# Out\n\n## Handoff Prompt for Next Actor\n\nGo.\n",
    )
    .unwrap();
}

pub(crate) const NEW_WEB: &[&str] = &[
    "review",
    "new",
    "web",
    "--target",
    "t.md",
    "--reviewer",
    "Claude",
    "--implementer",
    "Codex",
];
