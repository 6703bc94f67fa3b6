//! The stamp card: seed 001's `partner_presence` table, one plain file per row.
//!
//! ```text
//! <root>/.coord/partners/seq                 the last row id handed out
//! <root>/.coord/partners/0000000007.session  one row:
//!
//! id: 7
//! partner_name: claude
//! status: online
//! clocked_in: 2026-01-28T01:00:00+01:00
//! clocked_out: -
//! last_heartbeat: 2026-01-28T01:05:00+01:00
//! current_task: Task_123
//! session_id: claude-7-3fa2c1
//! pid: 4242
//! host: build-box
//! ```
//!
//! The seed keeps this table in SQLite; coord keeps it as files because the shared folder may be
//! on a network filesystem where SQLite's locking is unsafe (see `docs/sessions.md`). Every
//! transition — clock in, heartbeat, crash marking, clock out — happens under the workspace
//! mutex, and every row is replaced atomically, so a reader never sees half a row and two
//! writers never lose each other's change. Row ids come from a counter file read and bumped
//! under the same mutex, so they are unique and increase.
//!
//! `status` is `online` from clock-in to clock-out (`offline`). A row that never clocked out is
//! marked `crashed` by the next startup of the same partner once its `last_heartbeat` is more
//! than [`CRASH_AFTER`] old — or at once when it records a process (`pid`, `host`: rows made by
//! `coord session`) that no longer exists on this host. `-` stands for "none".

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::error::{Error, Result};
use crate::fsutil::{self, RECORD_CAP};
use crate::history::{self, Event, Kind};
use crate::host;
use crate::layout;
use crate::record::Record;
use crate::v3::lock::{self, Release};
use crate::v3::presence::{self, AgentState, Unreadable, Update};
use crate::v3::session;
use crate::workspace::{AgentId, Workspace, is_valid_agent_id};

/// A session whose heartbeat is older than this, and that never clocked out, has crashed.
pub const CRASH_AFTER: Duration = Duration::from_secs(300);

/// The `--partner` value that asks coord to pick a free name.
pub const NEW_PARTNER: &str = "new";

/// The prefix of names picked for `--partner new` (`partner-1`, `partner-2`, …).
const PICKED_PREFIX: &str = "partner-";

/// The seed's columns, in the seed's order.
pub const SEED_KEYS: [&str; 8] = [
    "id",
    "partner_name",
    "status",
    "clocked_in",
    "clocked_out",
    "last_heartbeat",
    "current_task",
    "session_id",
];

/// A row's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowStatus {
    /// Clocked in, not yet out.
    Online,
    /// Clocked out.
    Offline,
    /// Never clocked out, and silent for too long (or its process is gone).
    Crashed,
}

impl RowStatus {
    /// The word written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Online => "online",
            RowStatus::Offline => "offline",
            RowStatus::Crashed => "crashed",
        }
    }

    fn parse(text: &str) -> Option<RowStatus> {
        [RowStatus::Online, RowStatus::Offline, RowStatus::Crashed]
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(text.trim()))
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
    /// Its last sign of life.
    pub last_heartbeat: Option<String>,
    /// What it works on.
    pub current_task: Option<String>,
    /// The session id (`COORD_SESSION` inside `coord session`, `session:` in its locks).
    pub session_id: String,
    /// The process the session follows (`coord session`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The host of that process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

fn opt(value: Option<&str>) -> Option<String> {
    value
        .filter(|v| !v.is_empty() && *v != "-")
        .map(str::to_string)
}

impl Row {
    /// Parse row `id`'s file text (the id in the file name is authoritative).
    ///
    /// # Errors
    ///
    /// A description of what is missing or wrong.
    pub fn parse(id: u64, text: &str) -> std::result::Result<Row, String> {
        let rec = Record::parse(text);
        let partner_name = rec
            .get_nonempty("partner_name")
            .map(str::to_ascii_lowercase)
            .filter(|n| is_valid_agent_id(n))
            .ok_or("no valid `partner_name`")?;
        let status = rec
            .get("status")
            .and_then(RowStatus::parse)
            .ok_or("`status` is not online, offline or crashed")?;
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
        if let Some(pid) = self.pid {
            rec.set("pid", pid.to_string());
        }
        if let Some(h) = &self.host {
            rec.set("host", h);
        }
        rec.render()
    }

    /// The last sign of life: `last_heartbeat`, else `clocked_in`.
    pub fn heartbeat(&self) -> Option<Timestamp> {
        self.last_heartbeat
            .as_deref()
            .and_then(clock::parse_timestamp)
            .or_else(|| clock::parse_timestamp(&self.clocked_in))
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
            && host::recorded_process_gone(pid, h)
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

/// Every row on the stamp card, by id, and the row files that could not be read. Temporary
/// files left by killed writers are swept on the way.
pub fn scan(root: &Path) -> (Vec<Row>, Vec<Unreadable>) {
    let dir = layout::partners_dir(root);
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    let Ok(entries) = crate::fsutil::read_dir(&dir) else {
        return (rows, bad);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(layout::parse_partner_row_name) else {
            // The whole card is listed: a temporary file a killed writer left goes now.
            fsutil::sweep_entry(&entry);
            continue;
        };
        let path = layout::partner_row(root, id);
        match fsutil::read_text_capped(&path, RECORD_CAP) {
            Ok((text, _)) => match Row::parse(id, &text) {
                Ok(row) => rows.push(row),
                Err(why) => bad.push(unreadable_row(&name.to_string_lossy(), why)),
            },
            Err(e) => bad.push(unreadable_row(&name.to_string_lossy(), e.to_string())),
        }
    }
    rows.sort_by_key(|r| r.id);
    (rows, bad)
}

fn write_row(root: &Path, row: &Row) -> Result<()> {
    fsutil::replace(&layout::partner_row(root, row.id), row.render().as_bytes())?;
    index_row(root, row)
}

/// Keep the index of open rows in step with `row` as just written: an entry while it is not
/// clocked out, none once it is. Caller holds the mutex.
fn index_row(root: &Path, row: &Row) -> Result<()> {
    if has_index(root) {
        set_entry(root, row)?;
    }
    Ok(())
}

/// [`index_row`] where the index is known to be there.
fn set_entry(root: &Path, row: &Row) -> Result<()> {
    let entry = layout::partner_open(root, row.id);
    if row.status == RowStatus::Offline {
        fsutil::remove(&entry)?;
    } else {
        fsutil::empty_marker(&entry)?;
    }
    Ok(())
}

/// Whether the card has its index of open rows: a real folder (anything else in its place is
/// not followed nor written, and the card is read whole).
fn has_index(root: &Path) -> bool {
    let dir = layout::partners_open_dir(root);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => true,
        Ok(m) => {
            if m.is_symlink() {
                // Said once by the command.
                let _ = fsutil::refuse_linked(&dir, true);
            }
            false
        }
        Err(_) => false,
    }
}

/// The rows not clocked out (`online` or `crashed`), by id, read without reading the card's
/// history: the rows the index of open rows names, and the rows above the counter (rows coord
/// did not make: written by hand, as the contract allows, with the next ids up; see
/// [`ids_above`]). A card without the index (written before it) is read whole.
pub fn open_rows(root: &Path) -> Vec<Row> {
    open_rows_checked(root).0
}

/// [`open_rows`], and the row files among those read that could not be read (for `status`,
/// which shows the online rows and never reads the card's history).
pub fn open_rows_checked(root: &Path) -> (Vec<Row>, Vec<Unreadable>) {
    let listed = if has_index(root) {
        fsutil::list_names(&layout::partners_open_dir(root)).ok()
    } else {
        None
    };
    let Some(listed) = listed else {
        let (rows, bad) = scan(root);
        let open = rows
            .into_iter()
            .filter(|r| r.status != RowStatus::Offline)
            .collect();
        return (open, bad);
    };
    let mut ids: Vec<u64> = listed
        .iter()
        .filter_map(|name| name.to_str()?.parse::<u64>().ok())
        .collect();
    ids.extend(ids_above(root, read_counter(root)));
    ids.sort_unstable();
    ids.dedup();
    let mut rows = Vec::with_capacity(ids.len());
    let mut bad = Vec::new();
    for id in ids {
        let path = layout::partner_row(root, id);
        let why = match fsutil::read_text_capped(&path, RECORD_CAP) {
            Ok((text, _)) => match Row::parse(id, &text) {
                Ok(row) => {
                    if row.status != RowStatus::Offline {
                        rows.push(row);
                    }
                    continue;
                }
                Err(why) => why,
            },
            // An index entry whose row is gone: nothing to show.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => e.to_string(),
        };
        bad.push(unreadable_row(
            &path.file_name().unwrap_or_default().to_string_lossy(),
            why,
        ));
    }
    (rows, bad)
}

/// The row file `name` of the card, which could not be read for `why`, as the views list it.
fn unreadable_row(name: &str, why: String) -> Unreadable {
    Unreadable {
        path: format!("{}/partners/{name}", layout::STATE_DIR),
        why,
    }
}

/// Index the open rows `rows` (as [`open_rows`] found them) that are not indexed yet: rows
/// written by hand, found above the counter until it passes them. Called before the counter
/// moves (a clock-in); elsewhere they are still found above it. Caller holds the mutex.
fn adopt(root: &Path, rows: &[Row]) -> Result<()> {
    if !has_index(root) {
        return Ok(());
    }
    rows.iter().try_for_each(|r| set_entry(root, r))
}

/// The ids of the card's row files, from their names alone (nothing is read): the whole
/// card's listing.
fn row_ids(root: &Path) -> Vec<u64> {
    let mut ids = Vec::new();
    // The card's history is listed, never copied: only the ids are kept.
    let _ = fsutil::for_each_name(&layout::partners_dir(root), |name| {
        ids.extend(
            std::str::from_utf8(name)
                .ok()
                .and_then(layout::parse_partner_row_name),
        );
    });
    ids
}

/// The ids of the row files above the counter: rows written by hand, which take the next ids
/// up. Looked up one by one from the counter up to the first id without a row file, so that
/// the cost grows with those rows, not with the card's history. Without a readable counter
/// (lost, damaged: `counted` is `None`), every row file is above it: the whole card is listed.
fn ids_above(root: &Path, counted: Option<u64>) -> Vec<u64> {
    let Some(counted) = counted else {
        return row_ids(root);
    };
    (counted + 1..)
        .take_while(|&id| fs::symlink_metadata(layout::partner_row(root, id)).is_ok())
        .collect()
}

/// The stamp card's counter: the last row id coord handed out (`None` when missing or
/// unreadable).
fn read_counter(root: &Path) -> Option<u64> {
    fsutil::read_capped(&layout::partners_seq(root), 64)
        .ok()
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse().ok())
}

/// Make the index of open rows from the whole card when it is not there yet (a card written
/// before it). Caller holds the mutex.
fn ensure_index(root: &Path) -> Result<()> {
    let dir = layout::partners_open_dir(root);
    // Made once; something else in its place is left alone (the card is then read whole).
    if fs::symlink_metadata(&dir).is_ok() {
        return Ok(());
    }
    let (rows, _) = scan(root);
    // Made under a temporary name and renamed into place, so a reader sees no index or a
    // whole one. One builder at a time (the mutex): a fixed name, and what a killed builder
    // left there is built on (an entry too many only costs a read).
    let tmp = layout::partners_dir(root).join(".open.tmp");
    fsutil::ensure_dir(&tmp)?;
    for r in rows.iter().filter(|r| r.status != RowStatus::Offline) {
        fsutil::empty_marker(&tmp.join(r.id.to_string()))?;
    }
    fsutil::rename(&tmp, &dir)?;
    Ok(())
}

/// The next row id, bumping the counter. Caller holds the mutex. An id without a row file,
/// above the counter and the rows written by hand that follow it; a lost or damaged counter is
/// recounted from the whole card, so it cannot hand out an id twice.
fn next_id(root: &Path) -> Result<u64> {
    let path = layout::partners_seq(root);
    let counted = read_counter(root);
    let seen = ids_above(root, counted).into_iter().max().unwrap_or(0);
    let id = counted.unwrap_or(0).max(seen) + 1;
    // Read and written under the mutex, and a damaged counter is recounted from the rows:
    // rewritten where it is, rather than as a new file swapped in (a file made and one removed
    // on every clock-in).
    let text = format!("{id}\n");
    if !fsutil::rewrite_in_place(&path, text.as_bytes())? {
        fsutil::replace(&path, text.as_bytes())?;
    }
    Ok(id)
}

/// The first `partner-N` not used by any row or presence file.
pub fn free_name(root: &Path, rows: &[Row]) -> String {
    let (presences, _) = presence::scan(root);
    (1u64..)
        .map(|n| format!("{PICKED_PREFIX}{n}"))
        .find(|name| {
            !rows.iter().any(|r| &r.partner_name == name)
                && !presences.iter().any(|p| &p.id == name)
                && !layout::presence(root, name).exists()
        })
        .unwrap_or_else(|| format!("{PICKED_PREFIX}{}", host::random_u64() % 1_000_000))
}

/// Who clocks in.
#[derive(Debug, Clone)]
pub enum Partner {
    /// This agent.
    Named(AgentId),
    /// A free name picked by coord (`--partner new`).
    New,
}

/// What `coord startup` (and `coord session`) asks for.
#[derive(Debug, Clone)]
pub struct StartupRequest {
    /// Who.
    pub partner: Partner,
    /// `current_task` and the presence's `working_on`.
    pub task: Option<String>,
    /// The process the session follows (`coord session`); `None` for a plain startup.
    pub pid: Option<u32>,
    /// Whether to look who else is around (the sessions online, the active agents); a caller
    /// that shows none of it (a client's session start, which gathers its own context) leaves
    /// [`Startup::online`] and [`Startup::active_agents`] empty and saves reading them.
    pub look_around: bool,
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
    /// Agents whose presence is ACTIVE, this one included.
    pub active_agents: Vec<String>,
    /// Two or more agents are active: `coord handshake` is recommended.
    pub recommend_handshake: bool,
}

/// A row marked crashed.
#[derive(Debug, Clone, Serialize)]
pub struct Crashed {
    /// The row, as now written.
    pub row: Row,
    /// Why.
    pub why: String,
}

/// Clock in: mark this partner's dead sessions crashed, add an `online` row, write the presence
/// (ACTIVE, `working_on` = task), and look who else is around. All under the workspace mutex.
///
/// # Errors
///
/// [`Error::Io`] when the stamp card or the presence cannot be written.
pub fn startup(ws: &Workspace, req: &StartupRequest) -> Result<Startup> {
    let root = ws.root();
    let _mutex = ws.lock_mutex()?;
    fsutil::ensure_dir(&layout::partners_dir(root))?;
    // The index only saves reads: a card where it cannot be made is read whole.
    let _ = ensure_index(root);
    // Only rows not clocked out matter here (crash marking, who is online); a picked name must
    // be free of every row, so that case reads the whole card.
    let (agent, picked) = match &req.partner {
        Partner::Named(a) => (a.clone(), false),
        Partner::New => (AgentId::parse(&free_name(root, &scan(root).0))?, true),
    };
    let rows = open_rows(root);
    adopt(root, &rows)?;
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

    let id = next_id(root)?;
    let task = req
        .task
        .as_deref()
        .map(crate::record::one_line)
        .filter(|t| !t.is_empty());
    let row = Row {
        id,
        partner_name: agent.id().to_string(),
        status: RowStatus::Online,
        clocked_in: now_s.clone(),
        clocked_out: None,
        last_heartbeat: Some(now_s),
        current_task: task.clone(),
        session_id: format!("{}-{id}-{:06x}", agent.id(), host::random_u64() & 0xff_ffff),
        pid: req.pid,
        host: req.pid.map(|_| host::hostname().to_string()),
    };
    if !fsutil::create_new(&layout::partner_row(root, id), row.render().as_bytes())? {
        return Err(Error::Failed {
            message: format!(
                "stamp-card row `{}` already exists; the counter `{}` is behind",
                layout::partner_row(root, id).display(),
                layout::partners_seq(root).display()
            ),
        });
    }
    if let Err(e) = index_row(root, &row) {
        let _ = fsutil::remove(&layout::partner_row(root, id));
        return Err(e);
    }
    // All or nothing: a startup that cannot write the presence (a full disk) withdraws its
    // online row, rather than leave a session on the card that never started.
    if let Err(e) = presence::write(
        root,
        &agent,
        &Update {
            finished: Some(false),
            working_on: Some(task.unwrap_or_else(|| "-".into())),
            ..Default::default()
        },
    ) {
        let _ = fsutil::remove(&layout::partner_row(root, id));
        let _ = fsutil::remove(&layout::partner_open(root, id));
        return Err(e);
    }

    let (online, active_agents) = if req.look_around {
        let online = rows
            .iter()
            .filter(|r| r.status == RowStatus::Online && r.crash_reason(&now).is_none())
            .filter(|r| !crashed.iter().any(|c| c.row.id == r.id))
            .cloned()
            .collect();
        let (presences, _) = presence::scan(root);
        let active = active_ids(&presences, &now);
        (online, active)
    } else {
        (Vec::new(), Vec::new())
    };
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
        recommend_handshake: active_agents.len() >= 2,
        row,
        crashed,
        online,
        active_agents,
    })
}

/// The ids of the ACTIVE agents among `presences`.
fn active_ids(presences: &[presence::Presence], now: &Timestamp) -> Vec<String> {
    presences
        .iter()
        .filter(|p| p.state(now) == AgentState::Active)
        .map(|p| p.id.clone())
        .collect()
}

/// Refresh session `session_id`'s `last_heartbeat` and `agent`'s presence heartbeat. A row
/// marked crashed meanwhile (the machine slept) comes back `online`. Returns the row, `None`
/// when it is gone from the card.
///
/// # Errors
///
/// [`Error::Io`] when a file cannot be written.
pub fn heartbeat(ws: &Workspace, agent: &AgentId, session_id: &str) -> Result<Option<Row>> {
    let root = ws.root();
    let _mutex = ws.lock_mutex()?;
    let row = open_rows(root)
        .into_iter()
        .find(|r| r.session_id == session_id && r.partner_name == agent.id());
    let row = match row {
        Some(mut row) if row.status != RowStatus::Offline => {
            row.status = RowStatus::Online;
            row.last_heartbeat = Some(clock::now_string());
            write_row(root, &row)?;
            Some(row)
        }
        other => other,
    };
    presence::write(root, agent, &Update::default())?;
    Ok(row)
}

/// Refresh `last_heartbeat` of `agent`'s open rows: only `session` when given, else every row
/// of the partner that is `online`. Returns how many rows were refreshed. Caller holds the
/// workspace mutex. Keeps `coord presence` and the stamp card in step, so an agent that
/// heartbeats by hand is not marked crashed by its next startup.
///
/// # Errors
///
/// [`Error::Io`] when a row cannot be written.
pub fn refresh_partner(root: &Path, agent: &AgentId, session: Option<&str>) -> Result<usize> {
    let rows = open_rows(root);
    let now = clock::now_string();
    let mut n = 0;
    for mut row in rows {
        let mine = row.partner_name == agent.id()
            && row.status == RowStatus::Online
            && session.is_none_or(|s| row.session_id == s);
        if mine {
            row.last_heartbeat = Some(now.clone());
            write_row(root, &row)?;
            n += 1;
        }
    }
    Ok(n)
}

/// What `coord shutdown` ends.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every open session of the partner, and all its locks.
    Partner,
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

/// Clock out: release the locks in scope, set the rows in scope `offline` with `clocked_out`,
/// and mark the presence FINISHED unless another session of the partner is still online.
///
/// # Errors
///
/// [`Error::Io`] when a lock, row or the presence cannot be written.
pub fn shutdown(ws: &Workspace, agent: &AgentId, scope: Scope<'_>) -> Result<Shutdown> {
    let released = match scope {
        Scope::Partner => lock::release(ws, agent, None, false)?,
        Scope::Session(id) => session::release_locks(ws, agent, id)?,
    };
    let root = ws.root();
    let _mutex = ws.lock_mutex()?;
    let now = clock::now();
    let now_s = clock::format_timestamp(&now);
    let rows = open_rows(root);
    let mut closed = Vec::new();
    for row in rows.iter().filter(|r| r.partner_name == agent.id()) {
        let in_scope = match scope {
            Scope::Partner => row.status == RowStatus::Online,
            Scope::Session(id) => row.session_id == id && row.status != RowStatus::Offline,
        };
        if in_scope {
            let mut row = row.clone();
            row.status = RowStatus::Offline;
            row.clocked_out = Some(now_s.clone());
            row.last_heartbeat = Some(now_s.clone());
            write_row(root, &row)?;
            closed.push(row);
        }
    }
    let others_online = rows.iter().any(|r| {
        r.partner_name == agent.id()
            && !closed.iter().any(|c| c.id == r.id)
            && r.crash_reason(&now).is_none()
            && r.status == RowStatus::Online
    });
    if !others_online {
        presence::write(
            root,
            agent,
            &Update {
                finished: Some(true),
                ..Default::default()
            },
        )?;
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
