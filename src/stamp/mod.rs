//! The stamp card: seed 001's `partner_presence` table, one file per row under `.coord/partners/`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::history::{self, Event, Kind};
use crate::host;
use crate::layout;
use crate::lock::{self, Release};
use crate::presence::{self, AgentState, Presence, Unreadable, Update};
use crate::record::Record;
use crate::workspace::{AgentId, Workspace, is_valid_agent_id};
use crate::worktree::shared_root;

/// A session whose heartbeat is older than this, and that never clocked out, has crashed.
pub const CRASH_AFTER: Duration = Duration::from_secs(300);

/// The `--partner` value that asks coord to pick a free name.
pub const NEW_PARTNER: &str = "new";

const PICKED_PREFIX: &str = "partner-";

crate::record::names! {
    /// A row's `status`.
    RowStatus {
        Online = "online": "Clocked in, not yet out.",
        Offline = "offline": "Clocked out.",
        Crashed = "crashed": "Never clocked out, and silent for too long (or its process is gone).",
    }
}

/// One row of the stamp card.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Row {
    /// The row id (increasing).
    pub id: u64,
    /// The partner (an agent id).
    pub partner_name: String,
    /// online, offline or crashed.
    pub status: RowStatus,
    /// When the session clocked in.
    pub clocked_in: String,
    /// When it clocked out (or was found crashed), if it did.
    pub clocked_out: Option<String>,
    pub(crate) last_heartbeat: Option<String>,
    /// What it works on.
    pub current_task: Option<String>,
    /// The session id (`COORD_SESSION` inside `coord session`, `session:` in its locks).
    pub session_id: String,
    /// The process the session follows (`coord session`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
    /// The host of that process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
}

fn opt(value: Option<&str>) -> Option<String> {
    Some(value?.to_string()).filter(|v| !v.is_empty() && v != "-")
}

impl Row {
    /// Parse row `id`'s file text (the id in the file name is authoritative).
    pub fn parse(id: u64, text: &str) -> std::result::Result<Row, String> {
        let rec = Record::parse(text);
        let valid = |n: &String| is_valid_agent_id(n);
        let name = rec.get_nonempty("partner_name");
        let name = name.map(str::to_ascii_lowercase).filter(valid);
        let partner_name = name.ok_or("no valid `partner_name`")?;
        let status = rec.get("status").and_then(RowStatus::parse);
        let status = status.ok_or("`status` is not online, offline or crashed")?;
        let clocked_in = opt(rec.get("clocked_in")).ok_or("no `clocked_in`")?;
        Ok(Row {
            id,
            partner_name,
            status,
            clocked_in,
            clocked_out: opt(rec.get("clocked_out")),
            last_heartbeat: opt(rec.get("last_heartbeat")),
            current_task: opt(rec.get("current_task")),
            session_id: opt(rec.get("session_id")).unwrap_or_else(|| format!("row-{id}")),
            pid: rec.get("pid").and_then(|p| p.trim().parse().ok()),
            host: opt(rec.get("host")),
        })
    }

    /// The file text: the seed's columns in order, then `pid` and `host` when known.
    pub fn render(&self) -> String {
        let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let mut rec = Record::new();
        rec.set("id", self.id.to_string());
        rec.set("partner_name", &self.partner_name);
        rec.set("status", self.status.as_str());
        rec.set("clocked_in", &self.clocked_in);
        rec.set("clocked_out", dash(&self.clocked_out));
        rec.set("last_heartbeat", dash(&self.last_heartbeat));
        rec.set("current_task", dash(&self.current_task));
        rec.set("session_id", &self.session_id);
        rec.set_opt("pid", self.pid);
        rec.set_opt("host", self.host.as_ref());
        rec.render()
    }

    /// The last sign of life: `last_heartbeat`, else `clocked_in`.
    pub fn heartbeat(&self) -> Option<Timestamp> {
        let parse = clock::parse_timestamp;
        let hb = self.last_heartbeat.as_deref().and_then(parse);
        hb.or_else(|| parse(&self.clocked_in))
    }

    /// Seconds since the last sign of life.
    pub fn heartbeat_age(&self, now: &Timestamp) -> Option<Duration> {
        self.heartbeat().map(|hb| clock::age(now, &hb))
    }

    /// Why an `online` row counts as crashed as of `now`, if it does.
    pub fn crash_reason(&self, now: &Timestamp) -> Option<String> {
        if self.status != RowStatus::Online {
            return None;
        }
        if let (Some(pid), Some(h)) = (self.pid, self.host.as_deref())
            && host::recorded_process_gone(pid, h, None)
        {
            return Some(format!("its process {pid} on {h} is gone"));
        }
        match self.heartbeat_age(now) {
            Some(age) if age <= CRASH_AFTER => None,
            Some(age) => Some(format!("no heartbeat for {}", clock::format_age(age))),
            None => Some("its heartbeat cannot be read".into()),
        }
    }
}

/// Every row on the stamp card, by id, and the row files that could not be read.
pub fn scan(root: &Path) -> (Vec<Row>, Vec<Unreadable>) {
    let mut found = Vec::new();
    let dir = layout::partners_dir(&shared_root(root));
    for entry in fsutil::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        match name.to_str().and_then(layout::parse_partner_row_name) {
            Some(id) => found.push((id, entry.path())),
            None => _ = fsutil::sweep_entry(&entry),
        }
    }
    let (mut rows, bad) = read_rows(found);
    rows.sort_by_key(|r| r.id);
    (rows, bad)
}

fn read_rows(found: impl IntoIterator<Item = (u64, PathBuf)>) -> (Vec<Row>, Vec<Unreadable>) {
    let (mut rows, mut bad) = (Vec::new(), Vec::new());
    for (id, path) in found {
        let read = match fsutil::read_text_capped(&path, RECORD_CAP) {
            Ok((text, _)) => Row::parse(id, &text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => Err(e.to_string()),
        };
        match read {
            Ok(row) => rows.push(row),
            Err(why) => {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                let path = format!("{}/partners/{name}", layout::STATE_DIR);
                bad.push(Unreadable { path, why });
            }
        }
    }
    (rows, bad)
}

/// Write `row` and keep the index of open rows in step: an entry while it is not clocked out,
/// none once it is. Caller holds the mutex.
fn write_row(root: &Path, row: &Row) -> Result<()> {
    let path = layout::partner_row(&shared_root(root), row.id);
    fsutil::replace(&path, row.render().as_bytes())?;
    index_row(root, row)
}

fn index_row(root: &Path, row: &Row) -> Result<()> {
    if !has_index(root) {
        return Ok(());
    }
    let entry = layout::partner_open(&shared_root(root), row.id);
    if row.status == RowStatus::Offline {
        fsutil::remove(&entry).map(drop)
    } else {
        fsutil::empty_marker(&entry)
    }
}

/// Whether the card has its index of open rows: a real folder (anything else in its place is
/// not followed nor written, and the card is read whole).
fn has_index(root: &Path) -> bool {
    let dir = layout::partners_open_dir(&shared_root(root));
    let meta = fs::symlink_metadata(&dir);
    if meta.as_ref().is_ok_and(|m| m.is_symlink()) {
        // Said once by the command.
        let _ = fsutil::refuse_linked(&dir, true);
    }
    meta.is_ok_and(|m| m.is_dir())
}

/// The rows not clocked out, by id, and the unreadable row files: those the index names and
/// those written by hand above the counter (the next ids up); without the index or the counter,
/// every row. The card is not listed: its rows of earlier sessions cost a hook nothing.
pub fn open_rows(root: &Path) -> (Vec<Row>, Vec<Unreadable>) {
    open_rows_above(root, read_counter(root))
}

/// [`open_rows`], the counter read already (`counter`).
fn open_rows_above(root: &Path, counter: Option<u64>) -> (Vec<Row>, Vec<Unreadable>) {
    let indexed = has_index(root)
        .then(|| fsutil::list_names(&layout::partners_open_dir(&shared_root(root))).ok())
        .flatten();
    let (rows, bad) = match indexed {
        None => scan(root),
        Some(names) => {
            let listed = names.iter().filter_map(|name| name.to_str()?.parse().ok());
            let above: Vec<u64> = match counter {
                Some(counted) => ids_above(root, counted).collect(),
                None => row_ids(root).collect(),
            };
            let ids: std::collections::BTreeSet<u64> = listed.chain(above).collect();
            let shared = shared_root(root);
            let path = |id| (id, layout::partner_row(&shared, id));
            read_rows(ids.into_iter().map(path))
        }
    };
    let open = rows.into_iter().filter(|r| r.status != RowStatus::Offline);
    (open.collect(), bad)
}

/// The ids after `counted` whose row files are there, up to the first that is not.
fn ids_above(root: &Path, counted: u64) -> impl Iterator<Item = u64> {
    let shared = shared_root(root);
    let taken = move |&id: &u64| {
        let there = |path: PathBuf| fs::symlink_metadata(path).is_ok();
        there(layout::partner_row(&shared, id)) || there(layout::partner_row_unpadded(&shared, id))
    };
    (counted.saturating_add(1)..u64::MAX).take_while(taken)
}

fn row_ids(root: &Path) -> impl Iterator<Item = u64> {
    let names = fsutil::list_names(&layout::partners_dir(&shared_root(root)));
    let names = names.unwrap_or_default().into_iter();
    names.filter_map(|name| layout::parse_partner_row_name(name.to_str()?))
}

/// The card's counter: the last row id coord handed out (`None` when missing or unreadable).
fn read_counter(root: &Path) -> Option<u64> {
    let bytes = fsutil::read_capped(&layout::partners_seq(&shared_root(root)), 64).ok()?;
    String::from_utf8_lossy(&bytes).trim().parse().ok()
}

/// Make the card's folder, and the index of open rows from the whole card when it is not there
/// yet (a card written before it); something else in the index's place is left alone. A card
/// where the index cannot be made is read whole. Caller holds the mutex.
fn ensure_index(root: &Path) -> Result<()> {
    let shared = shared_root(root);
    let card = layout::partners_dir(&shared);
    let dir = layout::partners_open_dir(&shared);
    let indexed = fs::symlink_metadata(&dir).is_ok();
    if !indexed || fsutil::linked_state_folder(&card, true).is_some() {
        // Refuses a card folder that is a symlink.
        fsutil::ensure_dir(&card)?;
    }
    if indexed {
        return Ok(());
    }
    // Built under a fixed temporary name (one builder at a time: the mutex; what a killed
    // builder left is built on) and renamed into place: a reader sees no index or a whole one.
    let build = || {
        let tmp = card.join(".open.tmp");
        fsutil::ensure_dir(&tmp)?;
        let (rows, _) = scan(root);
        for r in rows.iter().filter(|r| r.status != RowStatus::Offline) {
            fsutil::empty_marker(&tmp.join(r.id.to_string()))?;
        }
        fsutil::rename(&tmp, &dir)
    };
    let _ = build();
    Ok(())
}

/// The next row id, bumping the counter (`counter`, as read): the first id above it without a
/// row file (a lost counter is recounted from the card, so no id is handed out twice). Caller
/// holds the mutex.
fn next_id(root: &Path, counter: Option<u64>) -> Result<u64> {
    let counted = counter.unwrap_or_else(|| row_ids(root).max().unwrap_or(0));
    let last = ids_above(root, counted).last();
    let id = last.unwrap_or(counted).saturating_add(1);
    let counter = layout::partners_seq(&shared_root(root));
    fsutil::replace(&counter, format!("{id}\n").as_bytes())?;
    Ok(id)
}

/// The ids of the agents whose presence is ACTIVE at `now`.
pub(crate) fn active_agents(root: &Path, now: &Timestamp) -> Vec<String> {
    let active = |p: &Presence| p.state(now) == AgentState::Active;
    let (presences, _) = presence::scan(root);
    presences.into_iter().filter(active).map(|p| p.id).collect()
}

fn free_name(root: &Path, rows: &[Row]) -> String {
    let taken = |name: &String| {
        rows.iter().any(|r| &r.partner_name == name)
            || layout::presence(&shared_root(root), name).exists()
    };
    let mut names = (1u64..).map(|n| format!("{PICKED_PREFIX}{n}"));
    names.find(|n| !taken(n)).unwrap_or_default()
}

/// Who clocks in.
#[derive(Debug, Clone)]
pub enum Partner {
    /// This agent.
    Named(AgentId),
    /// A free name picked by coord (`--partner new`).
    New,
}

/// What clocking in did and found.
#[derive(Debug, Clone, Serialize)]
pub struct Startup {
    /// The partner's id.
    pub partner: String,
    /// Whether the name was picked by coord (`--partner new`).
    pub picked: bool,
    /// The new row.
    pub row: Row,
    /// Earlier sessions of this partner just marked crashed, with why.
    pub crashed: Vec<Crashed>,
    /// Other sessions on the stamp card that are online (heartbeat within 5 minutes).
    pub online: Vec<Row>,
    /// Agents whose presence is ACTIVE, this one included ([`Startup::with_active_agents`]).
    pub active_agents: Vec<String>,
    /// Two or more agents are active: `coord handshake` is recommended.
    pub recommend_handshake: bool,
}

impl Startup {
    /// With the agents active now and whether a handshake is recommended: what `coord startup`
    /// and `coord session` tell, looked up for them only (a client's hook does not say it).
    pub fn with_active_agents(mut self, root: &Path) -> Startup {
        self.active_agents = active_agents(root, &clock::now());
        self.recommend_handshake = self.active_agents.len() >= 2;
        self
    }
}

/// A row marked crashed.
#[derive(Debug, Clone, Serialize)]
pub struct Crashed {
    /// The row, as now written.
    pub row: Row,
    /// Why.
    pub why: String,
}

/// Clock in: mark this partner's dead sessions crashed, add an `online` row (`task` its
/// `current_task`, `pid` the process it follows, if any), write the presence.
pub fn startup(
    ws: &Workspace,
    partner: Partner,
    task: Option<&str>,
    pid: Option<u32>,
) -> Result<Startup> {
    let _mutex = ws.lock_mutex()?;
    let (rows, counter) = open_card(ws.root())?;
    start(ws, partner, task, pid, rows, counter)
}

/// The card made ready (its folder and index), its open rows and its counter, each read once.
/// Caller holds the mutex.
fn open_card(root: &Path) -> Result<(Vec<Row>, Option<u64>)> {
    ensure_index(root)?;
    let counter = read_counter(root);
    Ok((open_rows_above(root, counter).0, counter))
}

/// A client's session start: clock in again the `online` row of the client's process `pid` on
/// this host (a resumed session stays one row), or clock in, under one hold of the mutex.
pub fn clock_in(ws: &Workspace, agent: &AgentId, pid: Option<u32>) -> Result<()> {
    let _mutex = ws.lock_mutex()?;
    let (rows, counter) = open_card(ws.root())?;
    let ours = |r: &&Row| {
        r.partner_name == agent.id()
            && r.status == RowStatus::Online
            && r.pid.is_some_and(|p| Some(p) == pid)
            && r.host.as_deref() == Some(host::hostname())
    };
    let Some(row) = rows.iter().find(ours) else {
        let named = Partner::Named(agent.clone());
        return start(ws, named, None, pid, rows, counter).map(drop);
    };
    refresh_partner(ws.root(), agent, Some(&row.session_id), false)?;
    let active = Update {
        finished: Some(false),
        ..Default::default()
    };
    presence::write(ws.root(), agent, &active).map(drop)
}

/// Clock in among the open `rows` (the counter read: `counter`). Caller holds the mutex.
fn start(
    ws: &Workspace,
    partner: Partner,
    task: Option<&str>,
    pid: Option<u32>,
    rows: Vec<Row>,
    counter: Option<u64>,
) -> Result<Startup> {
    let root = ws.root();
    // A picked name must be free of every row, not only of the open ones.
    let (agent, picked) = match partner {
        Partner::Named(a) => (a, false),
        Partner::New => (AgentId::parse(&free_name(root, &scan(root).0))?, true),
    };
    // Open rows written by hand above the counter, which it is about to pass, join the index.
    let counted = counter.unwrap_or(0);
    (rows.iter().filter(|r| r.id > counted)).try_for_each(|r| index_row(root, r))?;
    let now = clock::now();
    let now_s = clock::format_timestamp(&now);

    let mut crashed = Vec::new();
    for row in rows.iter().filter(|r| r.partner_name == agent.id()) {
        if let Some(why) = row.crash_reason(&now) {
            let mut row = row.clone();
            row.status = RowStatus::Crashed;
            write_row(root, &row)?;
            crashed.push(Crashed { row, why });
        }
    }

    let id = next_id(root, counter)?;
    let task = task.map(crate::record::one_line);
    let task = task.filter(|t| !t.is_empty());
    let row = Row {
        id,
        partner_name: agent.id().to_string(),
        status: RowStatus::Online,
        clocked_in: now_s.clone(),
        clocked_out: None,
        last_heartbeat: Some(now_s),
        current_task: task.clone(),
        session_id: format!("{}-{id}-{:06x}", agent.id(), host::random_u64() & 0xff_ffff),
        pid,
        host: pid.map(|_| host::hostname().to_string()),
    };
    let shared = shared_root(root);
    let path = layout::partner_row(&shared, id);
    if !fsutil::create_new(&path, row.render().as_bytes())? {
        return Err(Error::failed(format!(
            "stamp-card row `{}` already exists; the counter `{}` is behind",
            path.display(),
            layout::partners_seq(&shared).display()
        )));
    }
    // All or nothing: a startup that cannot write the presence withdraws its online row.
    let presence = Update {
        finished: Some(false),
        working_on: Some(task.unwrap_or_else(|| "-".into())),
        ..Default::default()
    };
    if let Err(e) = index_row(root, &row).and_then(|()| presence::write(root, &agent, &presence)) {
        let _ = fsutil::remove(&path);
        let _ = fsutil::remove(&layout::partner_open(&shared, id));
        return Err(e);
    }

    let alive = |r: &&Row| r.status == RowStatus::Online && r.crash_reason(&now).is_none();
    let online = rows.iter().filter(alive).cloned().collect();
    for c in &crashed {
        let event = Event::new(Kind::AgentCrashed, agent.id())
            .with("row_session", c.row.session_id.as_str())
            .with("why", c.why.as_str());
        history::record(root, event);
    }
    let event = Event::new(Kind::AgentArrived, agent.id())
        .with("status", "ACTIVE")
        .with("row_session", row.session_id.as_str())
        .with_null("working_on", row.current_task.clone());
    history::record(root, event);
    Ok(Startup {
        partner: agent.id().to_string(),
        picked,
        recommend_handshake: false,
        row,
        crashed,
        online,
        active_agents: Vec::new(),
    })
}

/// Refresh session `session_id`'s `last_heartbeat` (a crashed row comes back) and the presence.
pub fn heartbeat(ws: &Workspace, agent: &AgentId, session_id: &str) -> Result<()> {
    let _mutex = ws.lock_mutex()?;
    refresh_partner(ws.root(), agent, Some(session_id), true)?;
    presence::write(ws.root(), agent, &Update::default()).map(drop)
}

/// Refresh `last_heartbeat` of `agent`'s `online` rows (only `session`'s when given; its crashed
/// ones too, back `online`, when `revive`). Caller holds the workspace mutex.
pub fn refresh_partner(
    root: &Path,
    agent: &AgentId,
    session: Option<&str>,
    revive: bool,
) -> Result<()> {
    let now = clock::now_string();
    for mut row in open_rows(root).0 {
        if row.partner_name == agent.id()
            && (revive || row.status == RowStatus::Online)
            && session.is_none_or(|s| row.session_id == s)
        {
            row.status = RowStatus::Online;
            row.last_heartbeat = Some(now.clone());
            write_row(root, &row)?;
        }
    }
    Ok(())
}

/// What `coord shutdown` ends.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every open session of the partner, and all its locks.
    Partner,
    /// Every open session of the partner, and the locks coord's index and its presence list
    /// (a client's session end: the tree is not walked).
    Client,
    /// One session, and only the locks taken in it.
    Session(&'a str),
}

/// What clocking out did.
#[derive(Debug, Clone, Serialize)]
pub struct Shutdown {
    /// The partner's id.
    pub partner: String,
    /// The rows clocked out.
    pub closed: Vec<Row>,
    /// The locks released, each named.
    pub released: Vec<Release>,
    /// Whether the presence now says FINISHED (not while another session of the partner is online).
    pub finished: bool,
}

/// Clock out: release the locks in scope, set its rows `offline`, and the presence FINISHED
/// unless another session of the partner is still online.
pub fn shutdown(ws: &Workspace, agent: &AgentId, scope: Scope<'_>) -> Result<Shutdown> {
    let released = match scope {
        Scope::Partner => lock::release(ws, agent, None, false)?,
        Scope::Client => lock::release_all(ws, agent)?,
        // Only the locks whose `session:` line names it; none to release takes no mutex.
        Scope::Session(id) => match lock::session_locks(ws, agent, id) {
            held if held.is_empty() => Vec::new(),
            held => lock::release_tokens(ws, agent, &held, true)?,
        },
    };
    let root = ws.root();
    let _mutex = ws.lock_mutex()?;
    let now = clock::now();
    let now_s = clock::format_timestamp(&now);
    let (rows, _) = open_rows(root);
    let in_scope = |row: &&Row| match scope {
        Scope::Partner | Scope::Client => row.status == RowStatus::Online,
        Scope::Session(id) => row.session_id == id,
    };
    let (closing, others): (Vec<&Row>, _) = (rows.iter())
        .filter(|r| r.partner_name == agent.id())
        .partition(in_scope);
    let mut closed = Vec::new();
    for row in closing {
        let mut row = row.clone();
        row.status = RowStatus::Offline;
        row.clocked_out = Some(now_s.clone());
        row.last_heartbeat = Some(now_s.clone());
        write_row(root, &row)?;
        closed.push(row);
    }
    let alive = |r: &&Row| r.status == RowStatus::Online && r.crash_reason(&now).is_none();
    let others_online = others.iter().any(alive);
    if !others_online {
        let finished = Update {
            finished: Some(true),
            ..Default::default()
        };
        presence::write(root, agent, &finished)?;
    }
    history::record(root, Event::new(Kind::AgentLeft, agent.id()));
    Ok(Shutdown {
        partner: agent.id().to_string(),
        closed,
        released,
        finished: !others_online,
    })
}

#[cfg(test)]
mod tests;
