//! Messages between agents (seed 001): one file each in `.coord/messages/`, read marks per reader.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::ErrorKind::NotFound;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::clock::{self, Wait};
use crate::error::{Error, IoResultExt, Refusal, Result};
use crate::fsutil;
use crate::history::{self, Event, Kind};
use crate::host;
use crate::layout;
use crate::presence::Unreadable;
use crate::record::Record;
use crate::wait::{Deadline, FolderWatch};
use crate::workspace::{AgentId, Workspace, is_valid_agent_id};
use crate::worktree::shared_root;

/// The largest message coord writes or reads (1 MiB).
pub const MESSAGE_CAP: u64 = 1024 * 1024;

/// The recipient name that addresses every agent.
pub const ALL: &str = "all";

/// The `to:` of a message for `text`: `all`, or an agent's id (case is ignored, as for `--agent`).
pub fn recipient(text: &str) -> Result<String> {
    if text.eq_ignore_ascii_case(ALL) {
        return Ok(ALL.to_string());
    }
    AgentId::parse(text).map(|a| a.id().to_string())
}

/// One message, as stored.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Message {
    /// Its id (the file name without `.msg`).
    pub id: String,
    /// The sender's id.
    pub from: String,
    /// The sender's name as given (for display).
    pub from_name: String,
    /// The recipient's id, or `all`.
    pub to: String,
    /// When it was sent (RFC 3339, as written).
    pub time: String,
    /// The text, exactly as sent.
    pub body: String,
}

impl Message {
    /// The first line of the body (for listings).
    pub fn first_line(&self) -> &str {
        self.body.lines().next().unwrap_or("")
    }

    /// Whether `agent` is among its recipients.
    pub fn is_for(&self, agent: &str) -> bool {
        self.to == agent || self.to == ALL
    }

    fn render(&self) -> String {
        let mut rec = Record::new();
        rec.set("from", &self.from);
        rec.set("name", &self.from_name);
        rec.set("to", &self.to);
        rec.set("time", &self.time);
        format!("{}\n{}", rec.render(), self.body)
    }

    fn parse(id: &str, text: &str) -> std::result::Result<Message, String> {
        let split = text.split_once("\n\n");
        let (head, body) = split.ok_or("no empty line between the header and the body")?;
        let rec = Record::parse(head);
        let from = rec.get_nonempty("from").ok_or("no `from:` line")?;
        if !is_valid_agent_id(from) {
            return Err(format!("`from: {from}` is not an agent id"));
        }
        let to = rec.get_nonempty("to").ok_or("no `to:` line")?;
        if to != ALL && !is_valid_agent_id(to) {
            return Err(format!("`to: {to}` is neither an agent id nor `all`"));
        }
        Ok(Message {
            id: id.to_string(),
            from: from.to_string(),
            from_name: rec.get_nonempty("name").unwrap_or(from).to_string(),
            to: to.to_string(),
            time: rec.get("time").unwrap_or("").to_string(),
            body: body.to_string(),
        })
    }
}

/// A message in one agent's inbox.
#[derive(Debug, Clone, Serialize)]
pub struct InboxEntry {
    /// The message.
    #[serde(flatten)]
    pub message: Message,
    /// Whether this agent has not read it yet.
    pub unread: bool,
}

/// One agent's inbox: messages to it or to `all`, oldest first, and files that were skipped.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Inbox {
    /// The messages, in sending order.
    pub messages: Vec<InboxEntry>,
    /// Files in the message folder that could not be read as messages.
    pub skipped: Vec<Unreadable>,
}

impl Inbox {
    /// The unread entries.
    pub fn unread(&self) -> impl Iterator<Item = &InboxEntry> {
        self.messages.iter().filter(|e| e.unread)
    }
}

/// The last `width` base-36 digits of `n` (`0-9a-z`), most significant first.
pub fn base36(n: u64, width: u32) -> String {
    let digit = |i: u32| char::from_digit((n / 36u64.pow(i) % 36) as u32, 36).unwrap_or('0');
    (0..width).rev().map(digit).collect()
}

fn new_id() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    let ms = since.map_or(0, |d| d.as_millis() as u64);
    let random = base36(host::random_u64() % 36u64.pow(4), 4);
    format!("{}{random}", base36(ms, 9))
}

/// Store a message from `from` to `to` (a [`recipient`]); returns it with its new id.
pub fn send(ws: &Workspace, from: &AgentId, to: &str, body: &str) -> Result<Message> {
    if body.trim().is_empty() {
        return Err(Error::bad_input("the message is empty"));
    }
    let cap = MESSAGE_CAP - 4096;
    if body.len() as u64 > cap {
        let why = format!("the message is larger than {} KiB", cap / 1024);
        return Err(Error::bad_input(why));
    }
    let dir = messages_folder(ws)?;
    // What killed senders left here goes (listings sweep it too).
    fsutil::sweep_temps(&dir);
    let mut msg = Message {
        id: String::new(),
        from: from.id().to_string(),
        from_name: from.name().to_string(),
        to: to.to_string(),
        time: clock::now_string(),
        body: body.to_string(),
    };
    for _ in 0..64 {
        msg.id = new_id();
        let path = layout::message_file(&shared_root(ws.root()), &msg.id);
        if fsutil::create_new(&path, msg.render().as_bytes())? {
            let event = Event::new(Kind::MessageSent, from.id())
                .with("id", msg.id.as_str())
                .with("from", from.id())
                .with("to", msg.to.as_str());
            history::record(ws.root(), event);
            return Ok(msg);
        }
    }
    let dir = dir.display();
    let message = format!("cannot find a free message id in `{dir}` after 64 tries");
    Err(Error::failed(message))
}

fn messages_folder(ws: &Workspace) -> Result<std::path::PathBuf> {
    ws.require_arbitration()?;
    ws.ensure_state_dir()?;
    let dir = layout::messages_dir(&shared_root(ws.root()));
    fsutil::ensure_dir(&dir)?;
    Ok(dir)
}

/// Every message in sending order but those `skip` names, and the unreadable files; an error if
/// the folder is unlistable.
pub fn scan(root: &Path, skip: impl Fn(&str) -> bool) -> Result<(Vec<Message>, Vec<Unreadable>)> {
    let dir = layout::messages_dir(&shared_root(root));
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let entries = match fsutil::read_dir(&dir) {
        Ok(entries) => entries,
        // Anything but a folder standing there (gone, a file, a FIFO) holds no message.
        Err(e) if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) => {
            return Err(e).at("read the messages in", &dir);
        }
        Err(_) => return Ok((found, skipped)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.ends_with(layout::MESSAGE_SUFFIX) {
            // Temporary files of senders killed before publishing (and the `read` folder).
            fsutil::sweep_entry(&entry);
            continue;
        }
        let shown = format!("{}/messages/{name}", layout::STATE_DIR);
        let read = match layout::parse_message_name(name) {
            Some(id) if skip(id) => continue,
            Some(id) => message_of(id, fsutil::read_capped(&entry.path(), MESSAGE_CAP)),
            None => Err("its name is not a message id".into()),
        };
        match read {
            Ok(m) => found.push(m),
            Err(why) => skipped.push(Unreadable { path: shown, why }),
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((found, skipped))
}

fn message_of(id: &str, read: std::io::Result<Vec<u8>>) -> std::result::Result<Message, String> {
    let bytes = read.map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    Message::parse(id, &text)
}

/// What one reader knows of the messages: the ids it has read, and those it found were for
/// others (a message never changes once sent, so each reader reads another's message once).
#[derive(Default)]
struct Known {
    read: HashSet<String>,
    others: HashSet<String>,
}

impl Known {
    /// `agent`'s read marks and its list of others' messages, from one listing of its folder.
    /// Temporary files of readers killed while marking are swept.
    fn of(root: &Path, agent: &str) -> Known {
        let dir = layout::read_marks_dir(&shared_root(root), agent);
        let entries = fsutil::read_dir(&dir).into_iter().flatten().flatten();
        let names = entries.filter(|e| !fsutil::sweep_entry(e));
        let mut known = Known::default();
        for name in names.filter_map(|e| e.file_name().into_string().ok()) {
            if name == layout::OTHERS_SEEN {
                let path = layout::others_seen(&shared_root(root), agent);
                let text = fsutil::read_capped(&path, OTHERS_CAP).unwrap_or_default();
                let ids = String::from_utf8_lossy(&text);
                let ids = ids.lines().filter(|id| layout::is_valid_message_id(id));
                known.others.extend(ids.map(str::to_string));
            } else if layout::is_valid_message_id(&name) {
                known.read.insert(name);
            }
        }
        known
    }

    /// Whether message `id` is known to be read, or for others.
    fn settled(&self, id: &str) -> bool {
        self.read.contains(id) || self.others.contains(id)
    }
}

/// The largest list of others' messages read (a million ids); a larger one is not used.
const OTHERS_CAP: u64 = 14 << 20;

/// Whether `m` is for `agent` and not read by it. A broadcast is never news to its sender; a
/// note to oneself is.
fn is_unread(m: &Message, agent: &str, marks: &HashSet<String>) -> bool {
    m.is_for(agent) && !(m.to == ALL && m.from == agent) && !marks.contains(&m.id)
}

/// Add to `agent`'s list `seen` of others' messages those in `others` (best effort: without it,
/// they are read again next time). An id is unique: one of a message removed since does no harm.
fn note_others(root: &Path, agent: &str, seen: &HashSet<String>, others: &[Message]) {
    if others.is_empty() {
        return;
    }
    let shared = shared_root(root);
    let mut ids: Vec<&str> = others.iter().map(|m| m.id.as_str()).collect();
    ids.extend(seen.iter().map(String::as_str));
    ids.sort_unstable();
    let text: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let dir = layout::read_marks_dir(&shared, agent);
    let path = layout::others_seen(&shared, agent);
    let _ = fsutil::ensure_dir(&dir).and_then(|()| fsutil::replace(&path, text.as_bytes()));
}

/// `agent`'s inbox: messages to it or to `all`; an error when the folder cannot be listed. At an
/// agent's turn (its client's hooks), only the unread part: a message it has read is not read
/// again, and those found to be for others are noted, not to be read again.
pub fn inbox(ws: &Workspace, agent: &AgentId, at_turn: bool) -> Result<Inbox> {
    let me = agent.id();
    let known = Known::of(ws.root(), me);
    let skip = |id: &str| known.others.contains(id) || at_turn && known.read.contains(id);
    let (all, skipped) = scan(ws.root(), skip)?;
    let (mine, others): (Vec<Message>, Vec<Message>) = all.into_iter().partition(|m| m.is_for(me));
    if at_turn {
        note_others(ws.root(), me, &known.others, &others);
    }
    let entry = |message: Message| InboxEntry {
        unread: is_unread(&message, me, &known.read),
        message,
    };
    let messages = mine.into_iter().map(entry).collect();
    Ok(Inbox { messages, skipped })
}

/// Unread counts of each agent in `agents` (every one gets an entry), and the unreadable files.
/// A message each of them has read, or found was for others, is not read again.
pub fn unread_counts(
    ws: &Workspace,
    agents: &[String],
) -> (BTreeMap<String, usize>, Vec<Unreadable>) {
    // Each agent's read marks are read once there is a message to judge.
    let known = std::cell::OnceCell::new();
    let marks = || known.get_or_init(|| marks_of(ws, agents));
    let settled = |id: &str| !agents.is_empty() && marks().iter().all(|k| k.settled(id));
    let (all, skipped) = scan(ws.root(), settled).unwrap_or_default();
    let marks = || known.into_inner().unwrap_or_else(|| marks_of(ws, agents));
    (count_unread(agents, marks, &all), skipped)
}

/// [`unread_counts`] among `all`, every message read already (a live view keeps them).
pub fn unread_counts_among(
    ws: &Workspace,
    agents: &[String],
    all: &[Message],
) -> BTreeMap<String, usize> {
    count_unread(agents, || marks_of(ws, agents), all)
}

fn marks_of(ws: &Workspace, agents: &[String]) -> Vec<Known> {
    agents.iter().map(|a| Known::of(ws.root(), a)).collect()
}

/// How many of `all` each agent has not read; their marks (`known`) are read only when `all`
/// holds a message.
fn count_unread(
    agents: &[String],
    known: impl FnOnce() -> Vec<Known>,
    all: &[Message],
) -> BTreeMap<String, usize> {
    if all.is_empty() {
        return agents.iter().map(|a| (a.clone(), 0)).collect();
    }
    let count = |(agent, k): (&String, Known)| {
        let n = all.iter().filter(|m| is_unread(m, agent, &k.read)).count();
        (agent.clone(), n)
    };
    agents.iter().zip(known()).map(count).collect()
}

/// Message `id`, marked read for `agent` when it is one of its recipients.
pub fn read(ws: &Workspace, agent: &AgentId, id: &str) -> Result<InboxEntry> {
    let (me, shared) = (agent.id(), shared_root(ws.root()));
    let key = id.trim().to_ascii_lowercase();
    let path = layout::message_file(&shared, &key);
    // What is not an id is never read.
    let read = layout::is_valid_message_id(&key).then(|| fsutil::read_capped(&path, MESSAGE_CAP));
    let Some(read) = read.filter(|r| !r.as_ref().is_err_and(|e| e.kind() == NotFound)) else {
        let why = format!("there is no message `{id}` (see the ids with `coord msg list`)");
        return Err(Error::bad_input(why));
    };
    let message = message_of(&key, read).map_err(|why| Error::corrupt(path, None, why))?;
    let unread = is_unread(&message, me, &Known::of(ws.root(), me).read);
    if unread {
        fsutil::ensure_dir(&layout::read_marks_dir(&shared, me))?;
        // Already there (read twice at once): just as good.
        let when = format!("{}\n", clock::now_string());
        fsutil::create_new(&layout::read_mark(&shared, me, &key), when.as_bytes())?;
    }
    Ok(InboxEntry { message, unread })
}

/// Block until `agent` has at least one unread message, or `wait` runs out.
pub fn wait(ws: &Workspace, agent: &AgentId, wait: Wait) -> Result<Inbox> {
    let dir = messages_folder(ws)?;
    let started = std::time::Instant::now();
    let deadline = Deadline::after(wait.as_duration());
    // Where events do not cross machines, look again sooner.
    let recheck = crate::arbiter::recheck_for(&dir);
    // Subscribed before the first look: a message sent in between is still seen.
    let mut watch = FolderWatch::new(std::slice::from_ref(&dir));
    loop {
        let inbox = inbox(ws, agent, false)?;
        if inbox.unread().next().is_some() {
            return Ok(inbox);
        }
        if deadline.passed() {
            let me = agent.id();
            let waited = Duration::from_millis(started.elapsed().as_millis() as u64);
            let waited = clock::format_duration(waited);
            let why = format!("no unread message for {me} after {waited}");
            let hint = format!(
                "wait longer with `coord msg wait --timeout 10m`, or see older messages with `coord msg list`; others reach you with `coord msg send {me} \"…\"`"
            );
            return Err(Error::refused(Refusal::NoMessage, why, Some(hint)));
        }
        watch.wait(deadline.next_sleep(recheck));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_sortable_and_valid() {
        let a = new_id();
        std::thread::sleep(Duration::from_millis(2));
        let b = new_id();
        assert_eq!(a.len(), 13);
        assert!(layout::is_valid_message_id(&a));
        assert!(a[..9] < b[..9], "{a} sorts before {b}");
        assert_eq!(base36(35, 2), "0z");
    }

    #[test]
    fn messages_round_trip_and_bad_ones_are_refused() {
        let m = Message {
            id: "abc".into(),
            from: "claude".into(),
            from_name: "Claude".into(),
            to: ALL.into(),
            time: "2026-01-28T01:00:00+01:00".into(),
            body: "line one\n\nline three\nto: nobody\n".into(),
        };
        assert_eq!(Message::parse("abc", &m.render()).unwrap(), m);
        for bad in [
            "",
            "from: claude\nto: all\n",
            "to: all\n\nbody",
            "from: ../x\nto: all\n\nbody",
            "from: claude\nto: a/b\n\nbody",
        ] {
            assert!(Message::parse("x", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn recipients() {
        for (text, want) in [("ALL", Some(ALL)), ("Gemini", Some("gemini"))] {
            assert_eq!(recipient(text).ok().as_deref(), want);
        }
        assert!(recipient("../x").is_err() && recipient("").is_err());
    }

    proptest::proptest! {
        // Message files are read from a shared folder: any bytes must give a message or a
        // reason, never a panic; and what `msg send` writes reads back exactly.
        #[test]
        fn message_files_never_panic_and_read_back(
            text in proptest::prelude::any::<String>(),
            from in "[a-z0-9][a-z0-9_-]{0,15}",
            name in "[A-Za-z0-9][A-Za-z0-9_-]{0,15}",
            to in "(all|[a-z0-9][a-z0-9_-]{0,15})",
            body in proptest::prelude::any::<String>(),
        ) {
            let _ = Message::parse("x", &text);
            let m = Message {
                id: "abc".into(),
                from,
                from_name: name,
                to,
                time: "2026-01-28T01:00:00+01:00".into(),
                body,
            };
            proptest::prop_assert_eq!(Message::parse("abc", &m.render()), Ok(m));
        }
    }
}
