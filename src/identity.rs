//! Who a coord process acts as when neither `-a` nor `COORD_AGENT` says: the agent of the
//! client session it runs in, whichever door coord is entered by (the client's hooks, its
//! `coord mcp` server, every `coord` its shell tool runs, `git commit` and its guard included).
//!
//! Two signals: the process tree (every hook call registers its client process, pid and start
//! time, under `.coord/sessions/`; a later coord takes its nearest registered live ancestor) and
//! the client's session variables ([`SESSION_VARS`]), for before the first hook or a sandboxed
//! shell in its own pid namespace. The tree wins: it follows a new session in the same process
//! (Claude Code's `/clear`). Resolving never writes: only [`register`] and [`end`] (hooks) do.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::client::{Client, SESSION_VARS};
use crate::clock;
use crate::error::Result;
use crate::fsutil::{self, RECORD_CAP};
use crate::host;
use crate::layout;
use crate::record::Record;
use crate::workspace::{AgentId, Workspace};

/// The agent of a session: `CLIENT-` and 8 letters and digits of its id, lower-cased: its first 8,
/// or its last 8 for ids that begin with a clock (UUID v7, OpenCode's `ses_`, Cline's `conv_`).
pub fn agent_for(client: Client, session_id: &str) -> Option<AgentId> {
    let alnum: Vec<char> = session_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if alnum.is_empty() {
        return None;
    }
    let clock_first = is_uuid_v7(session_id)
        || (client == Client::Opencode && session_id.starts_with("ses_"))
        || (client == Client::Cline && session_id.starts_with("conv_"));
    let short: String = if clock_first {
        alnum[alnum.len().saturating_sub(8)..].iter().collect()
    } else {
        alnum.iter().take(8).collect()
    };
    AgentId::parse(&format!("{}-{short}", client.as_str())).ok()
}

/// The agent of a client whose payload carries no session id: the client process that ran the
/// hook stands for the session (`copilot-p4242`; past the `sh -c` it may run hooks through).
pub fn agent_for_parent(client: Client) -> Option<AgentId> {
    let pid = hook_client_process().map_or_else(host::invoker, |p| p.pid);
    AgentId::parse(&format!("{}-p{pid}", client.as_str())).ok()
}

fn is_uuid_v7(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
        && groups[2].starts_with('7')
}

/// A client process: its pid and start time (clock ticks since boot), which together name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClientProcess {
    /// The process id.
    pub pid: u32,
    /// Its start time, from `/proc/<pid>/stat`.
    pub start: u64,
}

impl ClientProcess {
    /// Process `pid` as it is now, `None` when it cannot be read.
    pub fn of(pid: u32) -> Option<ClientProcess> {
        Some(ClientProcess {
            pid,
            start: host::start_time(pid)?,
        })
    }

    /// Whether this very process still runs (same pid, same start time).
    pub fn alive(&self) -> bool {
        host::start_time(self.pid) == Some(self.start)
    }
}

/// The client session a process runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Which client.
    pub client: Client,
    /// The client's session id.
    pub id: String,
    /// The session's agent.
    pub agent: AgentId,
    /// How coord knows: `process tree`, or `env VAR` for a session variable.
    pub via: String,
    /// The client process, when known and alive: locks taken in the session follow it.
    pub process: Option<ClientProcess>,
}

/// One registration file, as read: the session it names (with its process) and its host.
fn registration(path: &Path) -> Option<(Session, String)> {
    let bytes = fsutil::read_capped(path, RECORD_CAP).ok()?;
    let rec = Record::parse(&String::from_utf8_lossy(&bytes));
    let client = Client::parse(rec.get_nonempty("client")?)?;
    let id = rec.get_nonempty("session")?.to_string();
    let session = Session {
        agent: agent_for(client, &id)?,
        client,
        id,
        via: "process tree".into(),
        process: Some(ClientProcess {
            pid: rec.get_nonempty("pid")?.parse().ok()?,
            start: rec.get_nonempty("pid_start")?.parse().ok()?,
        }),
    };
    Some((session, rec.get_nonempty("host")?.to_string()))
}

/// The session this process runs in, if any: `from_tree`, else the client's session variable,
/// with the live process registered for that session on this host.
pub fn current(root: &Path) -> Option<Session> {
    from_tree(root).or_else(|| {
        let (var, client, id) = env_session()?;
        let agent = agent_for(client, &id)?;
        let process = (this_host(root).into_iter()).find_map(|(_, s)| {
            s.process
                .filter(|p| s.client == client && s.id == id && p.alive())
        });
        Some(Session {
            client,
            id,
            agent,
            via: format!("env {var}"),
            process,
        })
    })
}

/// The nearest ancestor of this process registered in the workspace at `root`, if still alive.
fn from_tree(root: &Path) -> Option<Session> {
    let dir = layout::sessions_dir(&crate::worktree::shared_root(root));
    if !dir.is_dir() {
        return None;
    }
    host::ancestors()
        .take_while(|&pid| pid > 1)
        .find_map(|pid| {
            let (session, host) = registration(&session_path(root, pid))?;
            let live = session.process.is_some_and(|p| p.pid == pid && p.alive());
            (host == host::hostname() && live).then_some(session)
        })
}

/// The first client session variable set: the variable, its client and the session id.
fn env_session() -> Option<(&'static str, Client, String)> {
    SESSION_VARS.iter().find_map(|(var, client)| {
        let value = std::env::var(var).ok()?;
        let value = value.trim();
        (!value.is_empty()).then(|| (*var, *client, value.to_string()))
    })
}

/// The client session this process runs in, as a lock request carries it (`env_session`).
pub fn runs_in() -> Option<crate::lock::ClientSession> {
    env_session().map(|(_, client, session)| crate::lock::ClientSession {
        client: client.as_str().to_string(),
        session,
    })
}

/// The registration files of this host that can be read, with what each holds: named with its
/// tag and saying its name (two hosts' names may share a tag).
fn this_host(root: &Path) -> Vec<(PathBuf, Session)> {
    let tag = host::host_tag();
    let dir = layout::sessions_dir(&crate::worktree::shared_root(root));
    let entries = fsutil::read_dir(&dir).into_iter().flatten().flatten();
    entries
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(layout::parse_session_name)
                .is_some_and(|(t, _)| t == tag)
        })
        .filter_map(|e| {
            let (session, host) = registration(&e.path())?;
            (host == host::hostname()).then(|| (e.path(), session))
        })
        .collect()
}

/// The client process of a hook: its parent, or the parent of the `sh -c` between them. `None`
/// when that is a shell: a hook run by hand must not make the terminal a client session.
pub fn hook_client_process() -> Option<ClientProcess> {
    let mut parent = host::invoker();
    // Each process's arguments are read once.
    let mut args = host::command_line(parent);
    // A wrapper that runs this very command (`timeout 30 coord hook claude`) is no client: it
    // ends with the hook, and a lock following it would be STALE the moment it did.
    for _ in 0..4 {
        if !runs_this_command(args.as_deref()) {
            break;
        }
        parent = host::parent_of_pid(parent)?;
        args = host::command_line(parent);
    }
    let pid = if !is_shell(parent) {
        // The client itself (a shell that ran `exec coord …` became coord).
        parent
    } else if runs_c(args.as_deref()) {
        host::parent_of_pid(parent).filter(|&pid| !is_shell(pid))?
    } else {
        return None;
    };
    (pid > 1).then(|| ClientProcess::of(pid)).flatten()
}

/// Whether a process with arguments `args` is a wrapper of this process's own command: they
/// end with this process's arguments, after some of its own (`timeout 30 coord hook claude`).
fn runs_this_command(args: Option<&[String]>) -> bool {
    let ours: Vec<String> = (std::env::args_os())
        .map(|a| a.to_string_lossy().into_owned())
        .filter(|a| !a.is_empty())
        .collect();
    args.is_some_and(|args| args.len() > ours.len() && args.ends_with(&ours))
}

/// Whether the client `process` runs with nobody at it (`Adapter::headless`); `false`: unknown.
pub fn headless(client: Client, process: ClientProcess) -> bool {
    host::command_line(process.pid).is_some_and(|args| {
        let args = args.get(1..).unwrap_or_default();
        (client.adapter().headless)(args, host::stdin_is_terminal(process.pid))
    })
}

const SHELLS: [&str; 9] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish",
];

fn is_shell(pid: u32) -> bool {
    host::command_name(pid).is_some_and(|name| SHELLS.contains(&name.as_str()))
}

/// Whether a shell with arguments `args` runs `-c` (or `-lc`): how clients run hooks.
fn runs_c(args: Option<&[String]>) -> bool {
    let dash_c = |a: &String| {
        a.strip_prefix('-').is_some_and(|opts| {
            !opts.starts_with('-')
                && opts.contains('c')
                && opts.bytes().all(|b| b.is_ascii_alphabetic())
        })
    };
    args.is_some_and(|args| args.iter().skip(1).any(dash_c))
}

/// Record that the session `id` of `client` runs in `process` (unless already recorded), and
/// sweep registrations of processes that are gone.
pub fn register(
    ws: &Workspace,
    client: Client,
    id: &str,
    agent: &AgentId,
    process: ClientProcess,
) -> Result<()> {
    let root = ws.root();
    let path = session_path(root, process.pid);
    if let Some((s, _)) = registration(&path)
        && s.client == client
        && s.id == id
        && s.process == Some(process)
    {
        return Ok(());
    }
    ws.ensure_state_dir()?;
    fsutil::ensure_dir(&layout::sessions_dir(&crate::worktree::shared_root(root)))?;
    let mut rec = Record::new();
    rec.set("client", client.as_str());
    rec.set("session", id);
    rec.set("agent", agent.id());
    rec.set("pid", process.pid.to_string());
    rec.set("pid_start", process.start.to_string());
    rec.set("host", host::hostname());
    rec.set("registered_at", clock::now_string());
    fsutil::replace(&path, rec.render().as_bytes())?;
    // Registrations of this host whose process is gone (best effort).
    for (path, s) in this_host(root) {
        if s.process.is_some_and(|p| !p.alive()) {
            let _ = fsutil::remove(&path);
        }
    }
    Ok(())
}

/// The session `id` of `client` ended in `process`: its registration goes, if still its own.
pub fn end(ws: &Workspace, client: Client, id: &str, process: ClientProcess) -> Result<()> {
    let path = session_path(ws.root(), process.pid);
    match registration(&path) {
        Some((s, ..)) if s.client == client && s.id == id => fsutil::remove(&path).map(drop),
        _ => Ok(()),
    }
}

fn session_path(root: &Path, pid: u32) -> PathBuf {
    layout::session_file(&crate::worktree::shared_root(root), host::host_tag(), pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids that begin with a clock keep their last 8, so sessions started together differ.
    #[test]
    fn agent_ids_take_eight_letters_and_digits() {
        // The client is the agent's prefix.
        for (id, want) in [
            ("7684F1ED-55e2-4a19", "claude-7684f1ed"),
            ("ab-c", "gemini-abc"),
            // A UUID v4 keeps its first 8.
            ("cedd012c-f1ba-4d70-ad6d-1c65c16ba070", "claude-cedd012c"),
            // Two Codex sessions started 12 s apart: the same first 8 digits.
            ("01a20dbd-91c4-78d0-ada6-8244799b2282", "codex-799b2282"),
            ("01a20dbd-c053-7b63-9944-21d2369b8293", "codex-369b8293"),
            ("ses_5a1b2c3d4ffeAbCdEfGhIjKlMn", "opencode-ghijklmn"),
            ("ses_5a1b2c3d4ffdZyXwVuTsRqPoNm", "opencode-tsrqponm"),
            ("conv_1764000000000_k3j9x2q", "cline-0k3j9x2q"),
            ("conv_1764000000001_p0a8z7w", "cline-1p0a8z7w"),
            // Other clients keep the first 8.
            ("ses_5a1b2c3d", "qwen-ses5a1b2"),
        ] {
            let client = Client::parse(want.split('-').next().unwrap()).unwrap();
            assert_eq!(agent_for(client, id).unwrap().id(), want, "{id}");
        }
        assert!(agent_for(Client::Codex, "--").is_none());
        assert!(is_uuid_v7("01A20DBD-91C4-78D0-ADA6-8244799B2282"));
        assert!(!is_uuid_v7("01a20dbd-91c4-48d0-ada6-8244799b2282"));
        assert!(!is_uuid_v7("01a20dbd91c478d0ada68244799b2282"));
    }

    #[test]
    fn clients_run_with_nobody_at_them_are_told_by_their_arguments() {
        use Client::*;
        let tty = Some(true);
        for (client, args, stdin, want) in [
            (Claude, &["/x/cli.js", "-p", "hi"][..], tty, true),
            (Claude, &["--print"], tty, true),
            (Claude, &["--model", "x"], tty, false),
            (Codex, &["exec", "do it"], tty, true),
            (Codex, &["-m", "gpt", "exec", "do it"], tty, true),
            (Codex, &["e", "do it"], tty, true),
            (Codex, &["resume"], tty, false),
            (Gemini, &["--prompt=hi"], tty, true),
            (Gemini, &[], Some(false), true),
            (Gemini, &[], tty, false),
            // Cannot tell: someone is there.
            (Gemini, &[], None, false),
            (Gemini, &["-i", "hi"], Some(false), false),
            (Copilot, &["-p", "fix"], tty, true),
            (Copilot, &["--prompt-file"], tty, false),
            // Not known: as before.
            (Qwen, &["-p", "hi"], tty, false),
        ] {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            assert_eq!(
                (client.adapter().headless)(&args, stdin),
                want,
                "{client:?} {args:?}"
            );
        }
    }

    #[test]
    fn this_process_is_a_client_process_that_lives() {
        let me = ClientProcess::of(host::pid()).unwrap();
        assert!(me.alive());
        let other = ClientProcess {
            start: me.start + 1,
            ..me
        };
        assert!(!other.alive(), "a reused pid is another process");
    }

    #[test]
    fn a_registration_is_found_below_its_process_and_swept_when_gone_on_this_host_only() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(std::fs::canonicalize(dir.path()).unwrap());
        let parent = ClientProcess::of(std::os::unix::process::parent_id()).unwrap();
        let agent = agent_for(Client::Claude, "abcdef0123").unwrap();
        register(&ws, Client::Claude, "abcdef0123", &agent, parent).unwrap();
        let s = from_tree(ws.root()).unwrap();
        assert_eq!(s.agent.id(), "claude-abcdef01");
        assert_eq!(s.via, "process tree");
        assert_eq!(s.process, Some(parent));
        // A dead process's registration is never matched and is swept.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = ClientProcess::of(child.id());
        child.wait().unwrap();
        if let Some(dead) = dead {
            let path = session_path(ws.root(), dead.pid);
            register(&ws, Client::Codex, "x1", &agent, dead).unwrap();
            assert!(!path.exists(), "swept at once: its process is gone");
        }
        // Another host whose name shares this host's tag: its registrations are not this host's
        // to sweep, though no process of that number lives here.
        let theirs = session_path(ws.root(), 4_000_000);
        let text = std::fs::read_to_string(session_path(ws.root(), parent.pid)).unwrap();
        let text = text.replace(&format!("host: {}", host::hostname()), "host: elsewhere");
        let text = text.replace(&format!("pid: {}", parent.pid), "pid: 4000000");
        fsutil::replace(&theirs, text.as_bytes()).unwrap();
        register(&ws, Client::Codex, "x2", &agent, parent).unwrap();
        assert!(theirs.exists(), "another host's registration was swept");
        end(&ws, Client::Codex, "x2", parent).unwrap();
        assert!(from_tree(ws.root()).is_none());
    }
}
