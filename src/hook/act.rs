//! What each hook event does, as calls into the protocols.

use std::path::Path;
use std::time::Duration;

use crate::clock::{self, Wait};
use crate::error::{Error, Result};
use crate::lock::queue;
use crate::lock::{self, DEFAULT_TTL, LockRequest, Owner};
use crate::message;
use crate::presence::{self, AgentState, Update};
use crate::stamp::{self, Scope};
use crate::status;
use crate::workspace::{AgentId, Target, Workspace};

use super::gitcmd::{self, GitAction};
use crate::client::{Client, HookCall, Kind, Reply};
use crate::guard;
use crate::history;
use crate::shelledit;

/// How long a pre-edit hook waits for a lock held by another agent, by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(2);

/// The least and most a hook waits for the workspace mutex (its `--wait`, within these).
const MUTEX_BUDGET: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(10));

/// Do what `call` asks, as `agent` in `ws` (relative paths from `cwd`; locks follow `owner`). A
/// file held by another agent is `Ok(Reply::Deny)`; any other failure is an error.
pub fn handle(
    ws: &Workspace,
    agent: &AgentId,
    call: &HookCall,
    cwd: &Path,
    wait: Duration,
    owner: Option<&Owner>,
) -> Result<Reply> {
    // A process stopped while holding the workspace mutex must not hold the client past its
    // own hook timeout.
    crate::arbiter::cap_mutex_patience(wait.clamp(MUTEX_BUDGET.0, MUTEX_BUDGET.1));
    match call.kind {
        Kind::BeforeTool => match (&call.files, &call.shell) {
            (Some(files), _) => {
                let seen = |t: &[Target]| deny_seen(ws, agent, t, wait, None);
                let made = targets(ws, cwd, files, false);
                // A file in a folder not made yet cannot be locked, but a claim may hold it. A
                // file with other names (hard links) is one file under each: an edit through one
                // name writes what another agent holds under another.
                let unmade = targets(ws, cwd, files, true);
                match seen(&unmade).or_else(|| seen(&linked_names(ws, &made))) {
                    Some(deny) => Ok(deny),
                    None => before_edit(ws, agent, call, &made, wait, owner),
                }
            }
            (None, Some(shell)) => before_shell(ws, agent, shell, cwd),
            (None, None) => heartbeat(ws, agent, true).map(|()| Reply::Allow),
        },
        Kind::AfterTool => {
            heartbeat(ws, agent, true)?;
            if let Some(files) = &call.files {
                renew(ws, agent, call, &targets(ws, cwd, files, false), owner)?;
            }
            if call.shell.is_some() {
                return Ok(after_shell(ws, agent, call));
            }
            Ok(Reply::Allow)
        }
        // Clock in, and tell the agent who else is here, what they hold, what waits for it.
        Kind::SessionStart => {
            ws.ensure_state_dir()?;
            stamp::clock_in(ws, agent, owner.map(|o| o.pid))?;
            Ok(Reply::Context(context(ws, agent, call.client)))
        }
        // A stop the client already continued once because of a hook.
        Kind::Stop => stop(ws, agent, call.payload["stop_hook_active"] == true),
        Kind::SessionEnd => {
            stamp::shutdown(ws, agent, Scope::Client)?;
            Ok(Reply::Allow)
        }
        Kind::Prompt | Kind::Notification | Kind::Permission | Kind::Other => Ok(Reply::Allow),
    }
}

/// The other names, among the files locked in the workspace, of those of `made` that have
/// hard links: the same (device, inode) under another path. Looked for only when one has.
fn linked_names(ws: &Workspace, made: &[Target]) -> Vec<Target> {
    use std::os::unix::fs::MetadataExt;
    let id = |t: &Target| {
        let m = std::fs::symlink_metadata(&t.abs).ok()?;
        (m.is_file() && m.nlink() > 1).then(|| (m.dev(), m.ino()))
    };
    let linked: Vec<(u64, u64)> = made.iter().filter_map(id).collect();
    if linked.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Target> = Vec::new();
    for t in lock::scan_tree(ws)
        .iter()
        .filter_map(|e| ws.target_from_rel(&e.file).ok())
    {
        let named = made.iter().chain(&out).any(|m| m.rel == t.rel);
        if !named && id(&t).is_some_and(|i| linked.contains(&i)) {
            out.push(t);
        }
    }
    out
}

/// The files inside the workspace, not under `.coord/`: in folders that exist, or (`unmade`)
/// created together with their folder (nothing to lock, but what others hold of them denies).
fn targets(ws: &Workspace, cwd: &Path, files: &[String], unmade: bool) -> Vec<Target> {
    let resolve = |f: &String| match unmade {
        true => ws.resolve_unmade(cwd, f),
        false => ws.resolve(cwd, f).ok(),
    };
    (files.iter().filter_map(resolve))
        .filter(|t| t.not_coords_own().is_ok())
        .collect()
}

/// A call judged without writing anything: a payload read only in part ([`HookCall::fault`]),
/// or (`agent` is `None`) one from a session coord cannot name (no usable `session_id`, no
/// agent given), whose holders all count as others. An edit it names of a file another agent
/// holds is denied all the same; `None`: no such file.
pub fn judge_untaken(
    ws: &Workspace,
    agent: Option<&AgentId>,
    call: &HookCall,
    cwd: &Path,
) -> Option<Reply> {
    let files = call
        .files
        .as_ref()
        .filter(|_| call.kind == Kind::BeforeTool)?;
    let (agent, why) = match (agent, call.fault.as_deref()) {
        (Some(agent), Some(why)) => (
            agent.clone(),
            format!("coord could read this request only in part, and took no lock: {why}"),
        ),
        (Some(_), None) => return None,
        // No session's agent is `claude-` (it has letters of its id after the dash).
        (None, _) => (
            AgentId::parse(&format!("{}-", call.client.as_str())).ok()?,
            "coord cannot tell which session this is, and took no lock".to_string(),
        ),
    };
    let mut all = targets(ws, cwd, files, false);
    all.extend(targets(ws, cwd, files, true));
    deny_seen(ws, &agent, &all, Duration::ZERO, Some(&why))
}

/// How recent a heartbeat or a lock renewal must be for a hook to leave it as it is: far below
/// what anything reads them against ([`presence::HEARTBEAT_TIMEOUT`], [`DEFAULT_TTL`]).
const FRESH: Duration = Duration::from_secs(5);

/// Whether `then` is within [`FRESH`] of `now`, either way.
fn recent(now: &clock::Timestamp, then: &clock::Timestamp) -> bool {
    clock::age(now, then) <= FRESH && clock::age(then, now) <= FRESH
}

/// Presence heartbeat and (`card`) stamp-card row, unless [`FRESH`] already: the presence ACTIVE
/// (read without the mutex: a stale answer costs one write).
fn heartbeat(ws: &Workspace, agent: &AgentId, card: bool) -> Result<()> {
    let now = clock::now();
    let me = presence::read(ws.root(), agent.id()).ok().flatten();
    let active = me.is_some_and(|me| {
        me.state(&now) == AgentState::Active && me.heartbeat().is_some_and(|hb| recent(&now, &hb))
    });
    let rows_fresh = || {
        (stamp::open_rows(ws.root()).0.iter())
            .filter(|r| r.partner_name == agent.id() && r.status == stamp::RowStatus::Online)
            .all(|r| r.heartbeat().is_some_and(|hb| recent(&now, &hb)))
    };
    if active && (!card || rows_fresh()) {
        return Ok(());
    }
    ws.ensure_state_dir()?;
    let _mutex = ws.lock_mutex()?;
    if card {
        stamp::refresh_partner(ws.root(), agent, None, false)?;
    }
    presence::write(ws.root(), agent, &Update::default()).map(drop)
}

/// Lock every edited file, all or nothing: a refresh for files this agent already holds.
fn before_edit(
    ws: &Workspace,
    agent: &AgentId,
    call: &HookCall,
    targets: &[Target],
    wait: Duration,
    owner: Option<&Owner>,
) -> Result<Reply> {
    if targets.is_empty() {
        return heartbeat(ws, agent, true).map(|()| Reply::Allow);
    }
    // Files this session locked seconds ago, with no other lock beside: nothing to refresh.
    let now = clock::now();
    if targets.iter().all(|t| {
        renewed_lately(t, agent, owner, &now)
            && lock::try_locks_each(std::slice::from_ref(t))
                .is_ok_and(|found| found.iter().flatten().all(|e| e.agent == agent.id()))
    }) {
        return heartbeat(ws, agent, false).map(|()| Reply::Allow);
    }
    let req = request(agent, call, targets.to_vec(), wait, true, owner);
    match lock::acquire(ws, &req, &lock::Reach::HERE, &mut |_| {}) {
        Ok(_) => {
            // Another clone's agent editing one of them: allowed, and the agent is told.
            let paths: Vec<&str> = targets.iter().map(|t| t.rel.as_str()).collect();
            Ok(match crate::remote::editing_warning(ws, &paths) {
                Some(w) => Reply::Notice(call.event.clone(), format!("coord: {w}.")),
                None => Reply::Allow,
            })
        }
        Err(e) => match deny_reason(ws, agent, targets, &e, wait) {
            Some(reason) => Ok(Reply::Deny(reason)),
            // coord failed on its own: the edit goes through only when no holder is seen.
            None => {
                let why = format!("coord could not wait for it: {e}");
                deny_seen(ws, agent, targets, wait, Some(&why)).ok_or(e)
            }
        },
    }
}

/// A shell command that commits or pushes: the git guard's check, made before it runs (a client
/// may run git with its hooks disabled). `COORD_GUARD=warn|off` let it through.
fn before_shell(
    ws: &Workspace,
    agent: &AgentId,
    shell: &crate::client::Shell,
    cwd: &Path,
) -> Result<Reply> {
    heartbeat(ws, agent, true)?;
    if let Err(e) = shelledit::start(ws, agent) {
        eprintln!("warning: coord cannot note the start of this shell command: {e}");
    }
    let mode = std::env::var("COORD_GUARD").unwrap_or_default();
    if mode.eq_ignore_ascii_case("off") || mode.eq_ignore_ascii_case("warn") {
        return Ok(Reply::Allow);
    }
    let start = (shell.dir.as_ref()).map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d));
    let mut refused: Vec<(&'static str, guard::Held)> = Vec::new();
    for call in gitcmd::calls(&shell.command) {
        let dir = call.dir.iter().fold(start.clone(), |d, step| d.join(step));
        // Not a repository (or git missing): git itself will say so.
        let Ok(top) = guard::toplevel(&dir) else {
            continue;
        };
        let (what, paths) = match call.action {
            GitAction::Commit { all, added } => {
                let mut paths = guard::staged(&dir).unwrap_or_default();
                if all || added {
                    paths.extend(guard::unstaged(&dir, added).unwrap_or_default());
                }
                ("commits", paths)
            }
            GitAction::Push => {
                let paths = guard::changed(&dir, &["@{u}..HEAD".to_string()])
                    .or_else(|_| {
                        guard::changed(&dir, &["HEAD".into(), "--not".into(), "--remotes".into()])
                    })
                    .unwrap_or_default();
                ("pushes", paths)
            }
        };
        // For a push, the other clones' claims as last synced (a hook never waits on the network).
        for held in guard::held(ws, &top, &paths, Some(agent), what == "pushes")? {
            if !refused.iter().any(|(_, h)| h.file == held.file) {
                refused.push((what, held));
            }
        }
    }
    let Some((_, first)) = refused.first() else {
        return Ok(Reply::Allow);
    };
    let now = clock::now();
    let list: Vec<String> = refused
        .iter()
        .map(|(what, h)| format!("it {what} `{}`, {}", h.file, h.locked_by(&now)))
        .collect();
    Ok(Reply::Deny(format!(
        "coord: the git guard refuses this command: {}. Do not commit or push a file another agent holds: leave it out (`git restore --staged {}`), or wait until it is released (`coord status` shows who and since when), or ask with `coord -a {} msg send {} \"...\"`.",
        list.join("; "),
        first.file,
        agent.id(),
        crate::shell::agent(&first.holder),
    )))
}

/// A shell command ran: tell the agent about files others hold that it changed, and record them.
fn after_shell(ws: &Workspace, agent: &AgentId, call: &HookCall) -> Reply {
    let changed = shelledit::changed(ws, agent);
    if changed.is_empty() {
        return Reply::Allow;
    }
    for (how, c) in &changed {
        history::record(
            ws.root(),
            history::Event::new(history::Kind::ShellEdit, agent.id())
                .file(&c.file)
                .with("holder", c.holder.as_str())
                .with("how", *how)
                .with("tool", call.tool.clone()),
        );
    }
    Reply::Notice(call.event.clone(), shelledit::notice(&changed, agent))
}

/// The lock of `targets` a hook asks for (`backup`: write `FILE.bak` first).
fn request(
    agent: &AgentId,
    call: &HookCall,
    targets: Vec<Target>,
    wait: Duration,
    backup: bool,
    owner: Option<&Owner>,
) -> LockRequest {
    let tool = call.tool.as_deref().unwrap_or("an edit");
    LockRequest {
        agent: agent.clone(),
        targets,
        wait: Wait::For(wait),
        ttl: DEFAULT_TTL,
        backup,
        reason: Some(format!("{tool} in {}", call.client.adapter().product)),
        owner: owner.cloned(),
        claims: Vec::new(),
    }
}

/// The denial for a holder of `targets` seen without locking, `why` after it; `None`: no holder.
fn deny_seen(
    ws: &Workspace,
    agent: &AgentId,
    targets: &[Target],
    wait: Duration,
    why: Option<&str>,
) -> Option<Reply> {
    let b = lock::seen_holder(ws, agent, targets)?;
    let held = Error::LockHeld {
        file: b.file,
        holder: b.holder,
        since: b.since,
        working_on: b.working_on,
    };
    let reason = deny_reason(ws, agent, targets, &held, wait)?;
    Some(Reply::Deny(match why {
        Some(why) => format!("{reason} ({why})"),
        None => reason,
    }))
}

/// Why a lock refusal denies the tool call (holder, since, task, queue); `None`: coord's failure.
fn deny_reason(
    ws: &Workspace,
    agent: &AgentId,
    targets: &[Target],
    err: &Error,
    wait: Duration,
) -> Option<String> {
    let (file, held, ask) = match err {
        Error::LockHeld {
            file,
            holder,
            since,
            working_on,
        }
        | Error::WaitTimedOut {
            file,
            holder,
            since,
            working_on,
            ..
        } => (
            file.clone(),
            format!(
                "`{file}` is locked by {holder} since {since}, working on {}",
                working_on
                    .as_deref()
                    .filter(|w| !w.is_empty() && *w != "-")
                    .unwrap_or("something not stated")
            ),
            holder.clone(),
        ),
        Error::Refused { message, .. } => (
            targets.first().map(|t| t.rel.clone()).unwrap_or_default(),
            message.clone(),
            "all".to_string(),
        ),
        _ => return None,
    };
    let target = targets.iter().find(|t| t.rel == file);
    let waiting = target.map_or(0, |t| {
        // Only for a count: not worth waiting for a mutex held long.
        let _mutex = ws.lock_mutex_within(Duration::from_millis(100)).ok();
        let tickets = queue::live_tickets(ws.root(), t, None).into_iter();
        tickets
            .filter(|a| !a.agent.eq_ignore_ascii_case(agent.id()))
            .count()
    });
    let place = match waiting {
        0 => "no one else waits for it: you are next in the queue".to_string(),
        1 => "1 other agent waits for it: you are 2nd in the queue".to_string(),
        n => format!(
            "{n} other agents wait for it: you are #{} in the queue",
            n + 1
        ),
    };
    let released = released_when(ws, target, &ask);
    // A holder in another clone is out of reach of `coord msg`: its person is.
    let ask_them = match crate::error::remote_holder(&ask) {
        Some(them) => format!("or ask whoever runs {them} to release it"),
        None => format!(
            "or ask with `coord -a {} msg send {} \"...\"`",
            agent.id(),
            crate::shell::agent(&ask)
        ),
    };
    Some(format!(
        "coord: {held}; {place}. Waited {}. Do not edit `{file}` now: work on something else and try again later (it is released {released}; `coord status` shows when it could be taken over), {ask_them}.",
        clock::format_duration(wait),
    ))
}

/// When the lock or claim `holder` (as a refusal names it) has on `target` goes.
fn released_when(ws: &Workspace, target: Option<&Target>, holder: &str) -> &'static str {
    let id = crate::shell::agent(holder);
    target
        .and_then(|t| lock::locks_of(t).into_iter().find(|l| l.agent == id))
        .or_else(|| (lock::claim::read_all(ws.root()).ok()?.0.into_iter()).find(|c| c.agent == id))
        .map_or("when its holder unlocks it", |l| l.released_when())
}

/// Renew the TTL of this agent's locks on `targets` (a refresh rewrites `locked_at`).
fn renew(
    ws: &Workspace,
    agent: &AgentId,
    call: &HookCall,
    targets: &[Target],
    owner: Option<&Owner>,
) -> Result<()> {
    let now = clock::now();
    let mine: Vec<Target> = targets
        .iter()
        .filter(|t| lock::own_token(t, agent).is_some() && !renewed_lately(t, agent, owner, &now))
        .cloned()
        .collect();
    if mine.is_empty() {
        return Ok(());
    }
    let req = request(agent, call, mine, Duration::ZERO, false, owner);
    lock::acquire(ws, &req, &lock::Reach::HERE, &mut |_| {}).map(|_| ())
}

/// Whether `agent`'s lock on `target` was written within [`FRESH`] for the same owner.
fn renewed_lately(
    target: &Target,
    agent: &AgentId,
    owner: Option<&Owner>,
    now: &clock::Timestamp,
) -> bool {
    let Some(owner) = owner else {
        return false;
    };
    let path = crate::layout::lock_file(&target.abs, agent.id());
    let Ok(bytes) = crate::fsutil::read_capped(&path, crate::fsutil::RECORD_CAP) else {
        return false;
    };
    let rec = crate::record::Record::parse(&String::from_utf8_lossy(&bytes));
    let same_client = match &owner.client {
        Some(c) => {
            rec.get_nonempty("client") == Some(c.client.as_str())
                && rec.get_nonempty("client_session") == Some(c.session.as_str())
        }
        None => rec.get_nonempty("client").is_none(),
    };
    rec.get_nonempty("token").is_some()
        && rec.get_nonempty("pid") == Some(owner.pid.to_string().as_str())
        && rec.get_nonempty("session") == owner.session.as_deref()
        && same_client
        && rec
            .get_nonempty("locked_at")
            .and_then(clock::parse_timestamp)
            .is_some_and(|at| recent(now, &at))
}

fn context(ws: &Workspace, agent: &AgentId, client: Client) -> String {
    let me = agent.id();
    let st = status::glance(ws);
    let mut out = vec![format!(
        "coord: you are agent `{me}` in the shared folder {}. {} locks each file you edit for you; \
         an edit of a file another agent holds is refused, naming the holder. Your locks are released when your turn ends.",
        st.root,
        client.adapter().product
    )];
    let mut list = |head: &str, items: Vec<String>| {
        if !items.is_empty() {
            out.push(format!("{head}: {}.", items.join(", ")));
        }
    };
    let (active, live) = (AgentState::Active.as_str(), lock::LockState::Live);
    let others = (st.agents.iter()).filter(|a| a.agent != me && a.status == active);
    list(
        "Other agents active",
        (others.map(|a| match a.working_on.as_deref().filter(|w| *w != "-") {
            Some(w) => format!("{} (working on {w})", a.agent),
            None => a.agent.clone(),
        }))
        .collect(),
    );
    let now = clock::now();
    let locks = st.locks.iter().filter(|l| l.agent != me && l.state == live);
    list(
        "Files locked by others",
        (locks.map(|l| {
            let since = lock::since_text(l.locked_at.as_deref(), &now);
            format!("{} (held by {} since {since})", l.file, l.name)
        }))
        .collect(),
    );
    let claims = (st.claims.iter()).filter(|c| c.agent != me && c.state == live);
    list(
        "Folders and patterns claimed by others (every file they match is held)",
        (claims.map(|c| {
            let reason = (c.reason.as_deref().map(|r| format!(", {r}"))).unwrap_or_default();
            format!("`{}` (claimed by {}{reason})", c.pattern, c.name)
        }))
        .collect(),
    );
    let unread = unread_lines(ws, agent);
    if !unread.is_empty() {
        out.push(format!(
            "Unread messages for you ({}): {}. Read one with `coord -a {me} msg read ID`.",
            unread.len(),
            unread.join("; ")
        ));
    }
    let mine = |who: &str| who.eq_ignore_ascii_case(me);
    if let Some(d) = &st.dialogue
        && d.turn.as_deref().is_some_and(mine)
    {
        out.push(format!(
            "It is your turn in the dialogue `{}` ({}): `coord -a {me} dialogue turn`.",
            d.topic, d.folder
        ));
    }
    for r in st.reviews.iter().filter(|r| mine(&r.next_actor)) {
        let action = (r.next_action.as_deref().map(|a| format!(": {a}"))).unwrap_or_default();
        out.push(format!("Review `{}` waits for you{action}.", r.topic));
    }
    out.join("\n")
}

/// `ID from SENDER: first line` for each unread message of `agent`.
fn unread_lines(ws: &Workspace, agent: &AgentId) -> Vec<String> {
    let inbox = message::inbox(ws, agent, true).unwrap_or_default();
    let line = |m: &message::Message| format!("{} from {}: {}", m.id, m.from, m.first_line());
    inbox.unread().map(|e| line(&e.message)).collect()
}

/// The turn is over: release every lock; hold the stop once for unread messages.
fn stop(ws: &Workspace, agent: &AgentId, already_continued: bool) -> Result<Reply> {
    lock::release_all(ws, agent)?;
    if already_continued {
        return Ok(Reply::Allow);
    }
    let unread = unread_lines(ws, agent);
    if unread.is_empty() {
        return Ok(Reply::Allow);
    }
    Ok(Reply::Block(format!(
        "coord: you have {} unread message{} before you stop: {}. Read them with `coord -a {} msg read ID` and answer if needed.",
        unread.len(),
        if unread.len() == 1 { "" } else { "s" },
        unread.join("; "),
        agent.id()
    )))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;
    use crate::client::patch;
    use proptest::prelude::*;

    proptest! {
        /// Of a patch's paths, exactly those inside the workspace (not under `.coord/`) are locked.
        #[test]
        fn only_paths_inside_the_workspace_are_targets(
            names in prop::collection::vec("[a-z]{1,6}( [a-z]{1,3})?\\.txt", 1..5),
            escapes in prop::collection::vec(0u8..4, 1..5),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(dir.path()).unwrap();
            let ws = Workspace::at(root.clone());
            let mut text = String::from("*** Begin Patch\r\n");
            let mut inside = Vec::new();
            for (i, name) in names.iter().enumerate() {
                let path = match escapes[i % escapes.len()] {
                    0 => { inside.push(name.clone()); name.clone() }
                    1 => format!("../{name}"),
                    2 => format!("/nonexistent-coord-dir/{name}"),
                    _ => format!(".coord/{name}"),
                };
                text.push_str(&format!("*** Update File: {path}\r\n@@\r\n-a\r\n+b\r\n"));
            }
            text.push_str("*** End Patch\r\n");
            std::fs::create_dir_all(root.join(".coord")).unwrap();
            let got: Vec<String> = targets(&ws, &root, &patch::paths(&text), false)
                .into_iter()
                .map(|t| t.rel)
                .collect();
            let mut seen = std::collections::HashSet::new();
            inside.retain(|n| seen.insert(n.clone()));
            prop_assert_eq!(got, inside);
        }
    }
}
