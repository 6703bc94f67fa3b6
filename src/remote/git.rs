//! The one place the remote room starts git: with a deadline (past it the command and what it
//! started are killed), a clean environment (no prompt for credentials, the C locale so that
//! git's messages can be read, none of a calling git's `GIT_DIR`-like variables), and the
//! answers read the way coord needs them: a push's status per ref (a lost compare-and-swap is
//! `(stale info)`), a remote that could not be reached told apart from one that refused the
//! credentials, objects read through one `git cat-file --batch` and written through one
//! `git fast-import`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::host::ProcessGroup;

/// What a git call gave.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error, as text.
    pub stderr: String,
}

impl Ran {
    /// Whether git exited 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// stdout as trimmed text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_string()
    }
}

/// Why a git call gave no answer.
#[derive(Debug)]
pub(crate) enum Failed {
    /// git could not be started.
    Spawn(std::io::Error),
    /// The deadline passed; git was killed.
    Timeout,
}

impl Failed {
    /// In words, for a message.
    pub fn describe(&self) -> String {
        match self {
            Failed::Spawn(e) => format!("git could not be started ({e})"),
            Failed::Timeout => "git did not answer in time".into(),
        }
    }
}

/// `git` in `dir`, as the remote room runs it.
fn command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        // A calling git (coord run from a hook) must not point this one elsewhere.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_PREFIX")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        // Never a prompt: a credential git cannot find is a refusal, said as such.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        // git's messages in English, so that a refusal can be told from a lost race.
        .env("LC_ALL", "C")
        .env_remove("LANGUAGE");
    // Its own process group, so that a deadline kills what it started too (ssh, a remote
    // helper); not in a terminal's foreground, where ssh may need to ask its user.
    if ProcessGroup::wanted() {
        c.process_group(0);
    }
    c
}

/// Run `git ARGS` in `dir`, with `input` on its stdin, until `deadline`.
pub(crate) fn run(
    dir: &Path,
    args: &[&str],
    input: Option<Vec<u8>>,
    deadline: Instant,
) -> Result<Ran, Failed> {
    run_with(dir, args, &[], input, deadline)
}

/// [`run`] with the variables `env` set on top of the clean environment.
pub(crate) fn run_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    input: Option<Vec<u8>>,
    deadline: Instant,
) -> Result<Ran, Failed> {
    let mut child = command(dir)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Failed::Spawn)?;
    if let (Some(bytes), Some(mut pipe)) = (input, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let Some(code) = wait_until(&mut child, deadline) else {
        return Err(Failed::Timeout);
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(Ran {
        code,
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// A thread reading `pipe` to its end.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Wait for `child` until `deadline`: its exit code (`Some(None)`: killed by a signal), or
/// `None` once it was killed for running late (with what it started).
fn wait_until(child: &mut Child, deadline: Instant) -> Option<Option<i32>> {
    let mut step = Duration::from_micros(500);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status.code()),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(step);
                step = (step * 2).min(Duration::from_millis(5));
            }
            _ => {
                if let Some(group) = ProcessGroup::led_by(child.id()) {
                    group.signal(rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// What went wrong talking to a remote, read from git's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NetFault {
    /// The remote refused the credentials (or git had none to give without a prompt).
    Credentials(String),
    /// Anything else: the remote could not be reached, or is not a repository.
    Unreachable(String),
}

/// The fault in git's `stderr` of a call that talked to a remote and failed.
pub(crate) fn fault(stderr: &str) -> NetFault {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // git's last `fatal:` line and what follows it say why; else its last line.
    let from = lines
        .iter()
        .rposition(|l| l.starts_with("fatal:"))
        .unwrap_or(lines.len().saturating_sub(1));
    let why = lines.get(from..).unwrap_or_default().join(" ");
    let why = why.trim_start_matches("fatal:").trim();
    let why = if why.is_empty() {
        "git gave no reason".to_string()
    } else {
        why.chars().take(300).collect()
    };
    let lower = stderr.to_ascii_lowercase();
    let credentials = [
        "authentication failed",
        "could not read username",
        "could not read password",
        "permission denied",
        "access denied",
        "returned error: 401",
        "returned error: 403",
        "invalid credentials",
        "invalid username or password",
    ]
    .iter()
    .any(|needle| lower.contains(needle));
    if credentials {
        NetFault::Credentials(why)
    } else {
        NetFault::Unreachable(why)
    }
}

/// Whether a failed fetch only met another fetch of this clone updating the same ref.
pub(crate) fn ref_busy(stderr: &str) -> bool {
    stderr.contains("cannot lock ref") || stderr.contains("Unable to create")
}

/// The expected value of a remote ref in a compare-and-swap push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// The ref must be at this object.
    Oid(String),
    /// The ref must not exist (create only).
    Absent,
    /// Whatever it is (a ref only this clone writes).
    Any,
}

/// One ref a push sets.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    /// The object it is set to (`None`: delete the ref).
    pub oid: Option<String>,
    /// The remote ref.
    pub dst: String,
    /// What it must be before.
    pub expect: Expect,
}

/// How a push of one ref ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefStatus {
    /// Set (or already at that value).
    Done,
    /// The compare-and-swap lost: the ref was not at the expected value.
    Stale,
    /// Refused for another reason (a hook of the server, a name in the way, a protected ref).
    Rejected(String),
}

/// How a push that lost a race is refused: by the client, which saw the ref at another value
/// than expected (`stale info`), or by the server, which found it changed or locked by another
/// push when it came to update it.
const LOST_RACE: [&str; 6] = [
    "stale info",
    "fetch first",
    "failed to update ref",
    "failed to lock",
    "cannot lock ref",
    "incorrect old value",
];

/// Push `updates` to `remote`, all or nothing where there are several (`--atomic`); each
/// expected value is a full object id or create-only, so a lost race is `(stale info)`.
/// `Err`: the remote could not be talked to (or git gave no status for a ref).
pub(crate) fn push(
    dir: &Path,
    remote: &str,
    updates: &[Update],
    deadline: Instant,
) -> Result<Vec<RefStatus>, NetFault> {
    let mut args: Vec<String> = [
        "-c",
        "push.recurseSubmodules=no",
        "-c",
        "push.gpgSign=false",
        "push",
        "--porcelain",
        "--no-verify",
        "--no-follow-tags",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if updates.len() > 1 {
        args.push("--atomic".into());
    }
    let mut specs = Vec::new();
    for u in updates {
        match &u.expect {
            Expect::Oid(oid) => args.push(format!("--force-with-lease={}:{oid}", u.dst)),
            Expect::Absent => args.push(format!("--force-with-lease={}:", u.dst)),
            Expect::Any => {}
        }
        let force = if u.expect == Expect::Any { "+" } else { "" };
        specs.push(format!(
            "{force}{}:{}",
            u.oid.as_deref().unwrap_or_default(),
            u.dst
        ));
    }
    args.push("--".into());
    args.push(remote.into());
    args.extend(specs);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let ran = run(dir, &argv, None, deadline).map_err(|f| NetFault::Unreachable(f.describe()))?;
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let mut out = Vec::with_capacity(updates.len());
    for u in updates {
        let line = stdout.lines().find(|l| {
            l.split('\t')
                .nth(1)
                .and_then(|spec| spec.rsplit_once(':'))
                .is_some_and(|(_, dst)| dst == u.dst)
        });
        let Some(line) = line else {
            return Err(fault(&ran.stderr));
        };
        let flag = line.chars().next().unwrap_or('!');
        let summary = line.split('\t').nth(2).unwrap_or_default();
        out.push(match flag {
            ' ' | '+' | '-' | '*' | '=' => RefStatus::Done,
            _ if LOST_RACE.iter().any(|m| summary.contains(m)) => RefStatus::Stale,
            _ => RefStatus::Rejected(summary.trim().to_string()),
        });
    }
    // With `--atomic`, the refs refused only because another was are refused with it: the
    // reason is the other's.
    if out.contains(&RefStatus::Stale) {
        for s in &mut out {
            if matches!(s, RefStatus::Rejected(why) if why.contains("atomic")) {
                *s = RefStatus::Stale;
            }
        }
    }
    Ok(out)
}

/// One answer of `git cat-file --batch`.
#[derive(Debug)]
pub(crate) struct Object {
    /// `commit`, `tree`, `blob` or `tag`.
    pub kind: String,
    /// Its content (`None`: larger than the cap it was read with; skipped).
    pub body: Option<Vec<u8>>,
}

/// A running `git cat-file --batch`: objects read one after the other through one process.
pub(crate) struct Batch {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: mpsc::Receiver<Option<Object>>,
    deadline: Instant,
}

impl Batch {
    /// Start one in `dir`; objects larger than `cap` bytes are skipped, not kept.
    pub fn start(dir: &Path, cap: usize, deadline: Instant) -> Option<Batch> {
        let mut child = command(dir)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take()?;
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut header = String::new();
                match r.read_line(&mut header) {
                    Ok(n) if n > 0 => {}
                    _ => return,
                }
                let parts: Vec<&str> = header.split_whitespace().collect();
                let answer = match parts.as_slice() {
                    [_, kind, size] => {
                        let Ok(size) = size.parse::<usize>() else {
                            return;
                        };
                        let body = if size <= cap {
                            let mut body = vec![0; size];
                            if r.read_exact(&mut body).is_err() {
                                return;
                            }
                            Some(body)
                        } else {
                            let copied = std::io::copy(
                                &mut r.by_ref().take(size as u64),
                                &mut std::io::sink(),
                            );
                            if copied.ok() != Some(size as u64) {
                                return;
                            }
                            None
                        };
                        let mut nl = [0u8; 1];
                        if r.read_exact(&mut nl).is_err() {
                            return;
                        }
                        Some(Object {
                            kind: kind.to_string(),
                            body,
                        })
                    }
                    _ => None,
                };
                if tx.send(answer).is_err() {
                    return;
                }
            }
        });
        Some(Batch {
            child,
            stdin,
            answers,
            deadline,
        })
    }

    /// The object `spec` names (an id, `REF`, `OID^{tree}`): `Ok(None)` when there is none,
    /// `Err` when git stopped answering.
    pub fn get(&mut self, spec: &str) -> Result<Option<Object>, Failed> {
        if spec.contains(['\n', '\0']) {
            return Ok(None);
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Failed::Timeout);
        };
        if stdin
            .write_all(format!("{spec}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return Err(Failed::Timeout);
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        self.answers.recv_timeout(left).map_err(|_| Failed::Timeout)
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if wait_until(&mut self.child, Instant::now() + Duration::from_secs(2)).is_none() {
            let _ = self.child.kill();
        }
    }
}

/// Write the objects `stream` describes with one `git fast-import` (commands as its manual
/// gives them; the stream asks for the commit's id with `get-mark`). Returns git's stdout:
/// the ids asked for, one a line.
pub(crate) fn fast_import(
    dir: &Path,
    stream: Vec<u8>,
    deadline: Instant,
) -> Result<String, String> {
    let ran = run(
        dir,
        &["fast-import", "--quiet", "--done"],
        Some(stream),
        deadline,
    )
    .map_err(|f| f.describe())?;
    if ran.ok() {
        Ok(ran.text())
    } else {
        Err(ran
            .stderr
            .lines()
            .find(|l| l.starts_with("fatal:"))
            .unwrap_or("git fast-import failed")
            .to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_told_from_an_unreachable_remote() {
        assert!(matches!(
            fault(
                "fatal: could not read Username for 'http://127.0.0.1:1': terminal prompts disabled\n"
            ),
            NetFault::Credentials(_)
        ));
        assert!(matches!(
            fault("remote: HTTP Basic: Access denied\nfatal: Authentication failed for 'https://h/x.git/'\n"),
            NetFault::Credentials(why) if why.starts_with("Authentication failed")
        ));
        assert_eq!(
            fault(
                "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n"
            ),
            NetFault::Unreachable(
                "unable to connect to 127.0.0.1: 127.0.0.1[0: 127.0.0.1]: errno=Connection refused"
                    .into()
            )
        );
        assert!(matches!(fault(""), NetFault::Unreachable(_)));
    }
}
