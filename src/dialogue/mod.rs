//! The turn-based dialogue of seed 002, enforced, in one folder (default `agent-dialogue/`). The
//! files keep the seed's formats ([`files`]): agents following the seed by hand take part too.

pub(crate) mod commands;
pub mod files;
pub mod say;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::arbiter::Guard;
use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Refusal, Result};
use crate::fsutil;
use crate::layout::{self, DIALOGUE_COMMANDS as COMMANDS, DIALOGUE_CONVERSATION as CONVERSATION};
use crate::layout::{DIALOGUE_LOCK as LOCK, DIALOGUE_STATUS as STATUS, DIALOGUE_TURN as TURN};
use crate::wait::{Deadline, FolderWatch};
use crate::workspace::{Target, Workspace};

use self::commands::{CommandState, UserCommand};
use self::files::{Conversation, LockInfo, StatusDoc, Turn, USER, same_id};

const CONVERSATION_CAP: u64 = 32 * 1024 * 1024;
const SMALL_CAP: u64 = 1024 * 1024;

const DEFAULT_AGENTS: [&str; 2] = ["AGENT-1", "AGENT-2"];

fn refused(why: Refusal, message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::refused(why, message, Some(hint.into()))
}

/// One dialogue folder inside a workspace.
#[derive(Debug, Clone)]
pub struct Dialogue {
    ws: Workspace,
    /// The folder, absolute.
    pub folder: PathBuf,
    /// The folder, relative to the root.
    pub rel: String,
}

impl Dialogue {
    /// The dialogue in `folder` (already confined to the workspace).
    pub fn new(ws: &Workspace, Target { rel, abs }: Target) -> Dialogue {
        Dialogue {
            ws: ws.clone(),
            folder: abs,
            rel,
        }
    }

    /// The default folder, `agent-dialogue/` under the root.
    pub fn default_in(ws: &Workspace) -> Result<Dialogue> {
        Ok(Dialogue::new(ws, ws.target_from_rel(layout::DIALOGUE_DIR)?))
    }

    /// A file of the folder, relative to the root, for messages.
    pub fn shown(&self, name: &str) -> String {
        format!("{}/{name}", self.rel)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.folder.join(name)
    }

    fn replace(&self, name: &str, text: &str) -> Result<()> {
        fsutil::replace_durable(&self.path(name), text.as_bytes())
    }

    fn exists(&self) -> bool {
        std::fs::symlink_metadata(self.path(CONVERSATION)).is_ok()
    }

    fn lock_mutex(&self) -> Result<Guard> {
        self.ws.ensure_state_dir()?;
        self.ws.require_arbitration()?;
        let policy = crate::arbiter::policy(self.ws.root())?;
        let path = layout::dialogue_mutex(&crate::worktree::shared_root(self.ws.root()), &self.rel);
        Guard::take(&path, policy.arbitration, crate::arbiter::MUTEX_PATIENCE)
    }

    fn no_dialogue(&self) -> Error {
        let rel = &self.rel;
        let message = format!("no dialogue in `{rel}` (`conversation.md` is missing)");
        let hint = "start one with `coord dialogue init --topic \"…\"`";
        refused(Refusal::NoDialogue, message, hint)
    }

    fn already_there(&self) -> Error {
        let message = format!("a dialogue is already open in `{}`", self.rel);
        let hint = "take part with `coord dialogue say`, or archive it first with `coord dialogue archive`";
        refused(Refusal::DialogueExists, message, hint)
    }

    fn read_small(&self, name: &str) -> Result<Option<(String, Option<Timestamp>)>> {
        let path = self.path(name);
        let read =
            fsutil::if_found(fsutil::read_text_capped(&path, SMALL_CAP)).at("read", &path)?;
        Ok(read.map(|(text, mtime)| (text, mtime.map(clock::from_system_time))))
    }

    /// `lock.txt`, when there is one; an unreadable one is held by an unknown holder.
    fn read_lock(&self, now: &Timestamp) -> Option<LockInfo> {
        let (text, mtime) = match self.read_small(LOCK) {
            Ok(found) => found?,
            Err(_) => {
                let mtime = fsutil::mtime(&self.path(LOCK));
                (String::new(), mtime.map(clock::from_system_time))
            }
        };
        Some(LockInfo::parse(&text, mtime, now))
    }

    /// The bytes of `conversation.md` (for `show`), capped; refused when there is no dialogue.
    pub fn conversation_bytes(&self) -> Result<Vec<u8>> {
        let path = self.path(CONVERSATION);
        let read = fsutil::if_found(fsutil::read_capped(&path, CONVERSATION_CAP));
        read.at("read", &path)?.ok_or_else(|| self.no_dialogue())
    }

    /// Read everything without taking any lock; refused when there is no dialogue.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let conv = Conversation::parse(&String::from_utf8_lossy(&self.conversation_bytes()?));
        let status = match self.read_small(STATUS) {
            Ok(Some((text, _))) => StatusDoc::parse(&text),
            Ok(None) => Err("it is missing".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let turn = match self.read_small(TURN) {
            Ok(Some((text, _))) => Turn::parse(&text),
            Ok(None) => Turn::Missing,
            Err(e) => Turn::Garbled(e.to_string()),
        };
        let (commands, mtime) = self.read_small(COMMANDS)?.unwrap_or_default();
        let last = conv.messages.last();
        let last_time = last.and_then(|m| clock::parse_timestamp(&m.time));
        // Whether an `-ONLY` came after the last message, when `status.json` cannot say.
        let newer = match (mtime, last_time) {
            (Some(c), Some(l)) => c > l,
            _ => last.is_none(),
        };
        let doc = status.as_ref().ok();
        let commands = commands::judge(&commands, doc.and_then(StatusDoc::commands_read), newer);
        let participants = doc
            .and_then(StatusDoc::participants)
            .or_else(|| conv.participants.clone())
            .unwrap_or_else(|| DEFAULT_AGENTS.map(str::to_string).to_vec());
        let topic = (commands.topic.clone())
            .or_else(|| doc.and_then(StatusDoc::topic).map(str::to_string))
            .or_else(|| conv.topic.clone())
            .unwrap_or_default();
        Ok(Snapshot {
            lock: self.read_lock(&clock::now()),
            conv,
            status,
            turn,
            commands,
            participants,
            topic,
        })
    }

    /// Start a dialogue between `agents` (none: `AGENT-1` and `AGENT-2`).
    pub fn init(&self, topic: &str, agents: &[String], first: Option<&str>) -> Result<TurnView> {
        let topic = topic.trim();
        if topic.is_empty() || topic.contains(['\n', '\r', '\0']) {
            return Err(Error::bad_input("the topic must be one non-empty line"));
        }
        let defaults = DEFAULT_AGENTS.map(str::to_string);
        let agents = check_participants(if agents.is_empty() { &defaults } else { agents })?;
        let first = first.map_or(Ok(agents[0].clone()), |f| participant(&agents, "first", f))?;
        fsutil::ensure_dir(&self.folder)?;
        let _mutex = self.lock_mutex()?;
        if self.exists() {
            return Err(self.already_there());
        }
        fsutil::ensure_dir(&self.path(layout::DIALOGUE_ARCHIVE))?;
        fsutil::create_new(&self.path(COMMANDS), b"")?;
        self.start(topic, &agents, &first, 0)?;
        fsutil::sync_dir(&self.folder)?;
        Ok(self.snapshot()?.view())
    }

    /// Write a new session's files, `conversation.md` last and with create-new: its existence
    /// is what "a dialogue is there" means, so a half set-up session is never taken for one.
    fn start(&self, topic: &str, agents: &[String], first: &str, read: usize) -> Result<()> {
        let now = clock::now();
        let mut status = StatusDoc::new(topic, agents, &now);
        status.set("commands_read", read);
        self.replace(STATUS, &status.render())?;
        self.replace(TURN, &format!("{first}\n"))?;
        let header = files::render_conversation_header(topic, agents, first, &now);
        let created = fsutil::create_new(&self.path(CONVERSATION), header.as_bytes())?;
        created.then_some(()).ok_or_else(|| self.already_there())
    }

    /// Block until `id` may speak, woken by file events in the folder.
    pub fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<TurnView> {
        let deadline = Deadline::after(timeout);
        let mut watch = FolderWatch::new(std::slice::from_ref(&self.folder));
        loop {
            let snap = self.snapshot()?;
            let may = snap.may_speak(id);
            if may.is_ok() || snap.commands.ended {
                return may.map(|()| snap.view());
            }
            if deadline.passed() {
                let waited = timeout.map(clock::format_duration).unwrap_or_default();
                let v = snap.view();
                let or = |s: Option<String>, none: &str| s.unwrap_or_else(|| none.to_string());
                let state = match v.state.as_str() {
                    "open" | "waiting-for-user" => format!("it is {}'s turn", or(v.next, "nobody")),
                    "only-one-agent" => format!("only {} may respond next", or(v.only, "?")),
                    "error" => format!("error: {}", or(v.error, "?")),
                    other => format!("the dialogue is {other}"),
                };
                let message = format!("gave up waiting for {id}'s turn after {waited}: {state}");
                let hint = format!(
                    "wait longer with `coord dialogue wait --as {id} --timeout 10m`, or see `coord dialogue turn`"
                );
                return Err(refused(Refusal::TurnWaitTimedOut, message, hint));
            }
            watch.wait(deadline.next_sleep(crate::arbiter::recheck_for(&self.folder)));
        }
    }

    /// Append a user command to `user-commands.txt`; `RESET` archives the session and starts a
    /// fresh one. Returns the line written, and the archive folder for `RESET`.
    pub fn command(&self, text: &str) -> Result<(String, Option<String>)> {
        let cmd = UserCommand::from_arg(text, &self.snapshot()?.participants)?;
        let line = cmd.render();
        let mutex = self.lock_mutex()?;
        // On a line of its own, after a last line written by hand without its newline.
        fsutil::append_line_durable_numbered(&self.path(COMMANDS), line.as_bytes())?;
        if let UserCommand::SwitchTopic(topic) = &cmd
            && let Ok(Some((text, _))) = self.read_small(STATUS)
            && let Ok(mut doc) = StatusDoc::parse(&text)
        {
            doc.set("topic", topic.as_str());
            self.replace(STATUS, &doc.render())?;
        }
        let dir = (cmd == UserCommand::Reset).then(|| self.archive_files(mutex, true));
        Ok((line, dir.transpose()?))
    }

    /// Move the session's files to `archive/session-YYYYMMDD-HHMMSS/` (returned, relative).
    pub fn archive(&self) -> Result<String> {
        if !self.exists() {
            return Err(self.no_dialogue());
        }
        self.archive_files(self.lock_mutex()?, false)
    }

    /// Archive under `lock.txt`; on `reset`, start a fresh session like the archived one.
    fn archive_files(&self, mutex: Guard, reset: bool) -> Result<String> {
        let lock = self.take_lock_txt(mutex, USER, say::DEFAULT_LOCK_WAIT)?;
        let old = reset.then(|| self.snapshot()).transpose()?;
        let stamp = clock::now().format("%Y%m%d-%H%M%S").to_string();
        let dir = (1..)
            .map(|n| layout::dialogue_archive_session(&self.folder, &stamp, n))
            .find(|d| std::fs::symlink_metadata(d).is_err())
            .unwrap_or_default();
        fsutil::ensure_dir(&dir)?;
        let used = self.read_small(COMMANDS).ok().flatten();
        let used = used.is_some_and(|(t, _)| !t.trim().is_empty());
        let mut names = vec![CONVERSATION, STATUS];
        names.extend((!reset && used).then_some(COMMANDS));
        for name in names {
            let from = self.path(name);
            if std::fs::symlink_metadata(&from).is_ok() {
                fsutil::rename(&from, &dir.join(name))?;
            }
        }
        fsutil::sync_dir(&dir)?;
        fsutil::sync_dir(&self.folder)?;
        if let Some(old) = &old {
            let p = &old.participants;
            self.start(&old.topic, p, &p[0], old.commands.lines)?;
        }
        lock.release()?;
        let rel = dir.strip_prefix(self.ws.root()).unwrap_or(&dir);
        Ok(rel.display().to_string())
    }

    /// Take `lock.txt` for `holder` (`mutex` held): a stale one is taken over, a fresh one waited
    /// for up to `wait`, without the kernel lock.
    fn take_lock_txt(&self, mutex: Guard, holder: &str, wait: Duration) -> Result<LockTxt> {
        let deadline = Deadline::after(Some(wait));
        let path = self.path(LOCK);
        // Every write starts here: sweep the temporary files killed writers left.
        fsutil::sweep_temps(&self.folder);
        let (mut held, mut watch) = (Some(mutex), None::<FolderWatch>);
        let lock = |_mutex, took_over| LockTxt {
            path: path.clone(),
            _mutex,
            took_over,
            done: false,
        };
        loop {
            let guard = held.take().map_or_else(|| self.lock_mutex(), Ok)?;
            let now = clock::now();
            if fsutil::create_new(&path, LockInfo::render(holder, &now, None).as_bytes())? {
                return Ok(lock(guard, None));
            }
            let Some(info) = self.read_lock(&now) else {
                // Gone meanwhile: try again at once, still under the kernel lock.
                held = Some(guard);
                continue;
            };
            if info.stale {
                // Replaced in one rename, never removed first: a crash in between would lose
                // the stale record that lets the next `say` complete an interrupted write.
                let origin = info.interrupted.as_deref().unwrap_or(&info.holder);
                let record = LockInfo::render(holder, &now, Some(origin));
                fsutil::replace(&path, record.as_bytes())?;
                return Ok(lock(guard, Some(info)));
            }
            drop(guard);
            if deadline.passed() {
                let since = info.since.as_deref().unwrap_or("an unknown time");
                let (file, holder) = (self.shown(LOCK), &info.holder);
                let message =
                    format!("`{file}` is held by {holder} since {since} (a write in progress)");
                let hint = "try again in a moment; a lock.txt older than 60 seconds is stale and taken over";
                return Err(refused(Refusal::DialogueBusy, message, hint));
            }
            match &mut watch {
                // Subscribe first, then look again, then wait.
                None => watch = Some(FolderWatch::new(std::slice::from_ref(&self.folder))),
                Some(w) => {
                    w.wait(deadline.next_sleep(crate::arbiter::recheck_for(&self.folder)));
                }
            }
        }
    }
}

/// A held `lock.txt`, with the dialogue's kernel lock; removed when dropped unreleased.
struct LockTxt {
    path: PathBuf,
    _mutex: Guard,
    /// The stale lock that was taken over, if any.
    took_over: Option<LockInfo>,
    done: bool,
}

impl LockTxt {
    /// Leave `lock.txt` for the next `say` to find stale and complete the write.
    fn keep(mut self) {
        self.done = true;
    }

    fn release(mut self) -> Result<()> {
        self.done = true;
        fsutil::remove(&self.path).map(drop)
    }
}

impl Drop for LockTxt {
    fn drop(&mut self) {
        if !self.done {
            let _ = fsutil::remove(&self.path);
        }
    }
}

fn check_participants(list: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for id in list {
        let id = files::validate_id(id.trim())?;
        if same_id(&id, USER) {
            let why = "`USER` is reserved for the human observer; it cannot be a participant";
            return Err(Error::bad_input(why));
        }
        if out.iter().any(|o| same_id(o, &id)) {
            let why = format!("participant `{id}` is named twice");
            return Err(Error::bad_input(why));
        }
        out.push(id);
    }
    if out.len() < 2 {
        let why = "a dialogue needs at least two participants (`--agents AGENT-1,AGENT-2`)";
        return Err(Error::bad_input(why));
    }
    Ok(out)
}

fn participant(agents: &[String], flag: &str, id: &str) -> Result<String> {
    if same_id(id, USER) {
        return Ok(USER.to_string());
    }
    let found = agents.iter().find(|p| same_id(p, id)).cloned();
    let list = agents.join(", ");
    found.ok_or_else(|| Error::bad_input(format!("`--{flag} {id}` is not a participant ({list})")))
}

/// Everything the dialogue folder says at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    conv: Conversation,
    status: std::result::Result<StatusDoc, String>,
    turn: Turn,
    lock: Option<LockInfo>,
    commands: CommandState,
    participants: Vec<String>,
    topic: String,
}

impl Snapshot {
    fn corruption(&self) -> Option<String> {
        if let Some((_, why)) = self.conv.numbering_error() {
            return Some(why);
        }
        let counted = self.status.as_ref().ok()?.message_count();
        let count = self.conv.count();
        let why = format!("it holds {count} message(s) but `status.json` counts {counted}");
        (counted != count).then_some(why)
    }

    fn may_speak(&self, id: &str) -> Result<()> {
        if self.commands.ended {
            let message = "the dialogue has ended (`END-SESSION` in `user-commands.txt`)";
            let hint = "archive it with `coord dialogue archive`, or continue after `coord dialogue command RESUME`";
            return Err(refused(Refusal::DialogueEnded, message, hint));
        }
        if self.commands.paused {
            let message = "the dialogue is paused (`PAUSE` in `user-commands.txt`)";
            let hint = format!("wait for the user's RESUME: `coord dialogue wait --as {id}`");
            return Err(refused(Refusal::DialoguePaused, message, hint));
        }
        let unsure = |why: &str| {
            let message = format!(
                "unsure whose turn it is: `current-turn.txt` {why}; never writing when unsure"
            );
            let hint = "ask the user to write the next speaker's id (like `AGENT-1`) into current-turn.txt";
            Err(refused(Refusal::TurnUnknown, message, hint))
        };
        let turn = match &self.turn {
            Turn::Id(t) => t,
            Turn::Missing => return unsure("is missing"),
            Turn::Garbled(why) => return unsure(why),
            Turn::Error(line) => {
                let message = format!("the dialogue is stopped: `current-turn.txt` says `{line}`");
                let hint = "the user fixes conversation.md, then writes the next speaker's id into current-turn.txt";
                return Err(refused(Refusal::DialogueStopped, message, hint));
            }
        };
        match &self.commands.only {
            Some(only) if !same_id(only, id) => {
                let message = format!("the user asked only {only} to respond next (`{only}-ONLY`)");
                let hint = format!("wait with `coord dialogue wait --as {id}`");
                Err(refused(Refusal::ReservedForOther, message, hint))
            }
            None if !same_id(turn, id) => {
                let message = format!("it is not {id}'s turn: `current-turn.txt` says {turn}");
                let hint = format!("wait for your turn with `coord dialogue wait --as {id}`");
                Err(refused(Refusal::NotYourTurn, message, hint))
            }
            _ => Ok(()),
        }
    }

    /// The view `coord dialogue turn` shows.
    pub fn view(&self) -> TurnView {
        // A count out of step with `status.json` while a live `lock.txt` stands is a write in
        // progress, not corruption.
        let corrupt = match &self.lock {
            Some(l) if !l.stale => self.conv.numbering_error().map(|(_, w)| w),
            _ => self.corruption(),
        };
        let error = match (&self.turn, corrupt) {
            (Turn::Error(line), _) => Some(line.clone()),
            (_, Some(why)) => Some(format!("conversation.md appears corrupted: {why}")),
            (Turn::Garbled(why), _) => Some(format!("current-turn.txt is unreadable: {why}")),
            (Turn::Missing, _) => Some("current-turn.txt is missing".into()),
            _ => None,
        };
        let c = &self.commands;
        let state = match () {
            _ if c.ended => "ended",
            _ if error.is_some() => "error",
            _ if c.paused => "paused",
            _ if c.only.is_some() => "only-one-agent",
            _ if self.turn.id() == Some(USER) => "waiting-for-user",
            _ => "open",
        };
        let turn = self.turn.id().map(str::to_string);
        let last = self.conv.messages.last();
        TurnView {
            topic: self.topic.clone(),
            next: c.only.clone().or(turn.clone()).filter(|_| error.is_none()),
            turn,
            turn_file: match &self.turn {
                Turn::Id(line) | Turn::Error(line) => line.clone(),
                Turn::Missing => "(missing)".into(),
                Turn::Garbled(why) => format!("(unreadable: {why})"),
            },
            state: state.to_string(),
            paused: c.paused,
            ended: c.ended,
            only: c.only.clone(),
            error,
            message_count: self.conv.count(),
            last_speaker: last.map(|m| m.speaker.clone()),
            last_time: last.map(|m| m.time.clone()),
            end_proposed: self.conv.last_has(files::PROPOSE_END),
            needs_user: self.conv.last_has(files::NEEDS_USER),
            priority: c.priority.clone(),
            participants: self.participants.clone(),
            lock: self.lock.clone(),
            status_json: match &self.status {
                Ok(_) => "ok".into(),
                Err(why) => format!("needs repair: {why}"),
            },
        }
    }
}

/// `coord dialogue turn --json`: whose turn it is and the session state.
#[derive(Debug, Clone, Serialize)]
pub struct TurnView {
    /// The topic (the latest `SWITCH-TOPIC:` wins over `status.json`).
    pub topic: String,
    /// The id in `current-turn.txt` (`USER` included), or null when it is not an id.
    pub turn: Option<String>,
    /// `current-turn.txt` as read (its line, or why it could not be read).
    pub turn_file: String,
    /// Who may write the next message (an `-ONLY` command wins over the turn file); null on error.
    pub next: Option<String>,
    /// `open`, `paused`, `ended`, `only-one-agent`, `waiting-for-user` or `error`.
    pub state: String,
    pub(crate) paused: bool,
    pub(crate) ended: bool,
    /// The only agent allowed next, from `<ID>-ONLY`.
    pub only: Option<String>,
    /// What is wrong, in the `error` state.
    pub error: Option<String>,
    /// Messages in `conversation.md`.
    pub message_count: u64,
    /// Who wrote the last message.
    pub last_speaker: Option<String>,
    /// When, as written in its header.
    pub last_time: Option<String>,
    /// The last message carries `[PROPOSE-END]`.
    pub end_proposed: bool,
    /// The last message carries `[NEEDS-USER]`.
    pub needs_user: bool,
    /// The latest `PRIORITY:` from the user.
    pub priority: Option<String>,
    /// The participants, in turn order.
    pub participants: Vec<String>,
    /// `lock.txt`, when present.
    pub lock: Option<LockInfo>,
    /// `ok`, or `needs repair: why`.
    pub status_json: String,
}

/// The dialogue in the default folder, for `coord status`.
#[derive(Debug, Clone, Serialize)]
pub struct DialogueSummary {
    /// The folder, relative to the root.
    pub folder: String,
    /// The topic.
    pub topic: String,
    /// Messages so far.
    pub message_count: u64,
    /// Who may speak next.
    pub turn: Option<String>,
    /// The state, as in `coord dialogue turn`.
    pub state: String,
}

/// The default dialogue's summary; `None` when there is none (or it cannot be read at all).
pub fn summary(ws: &Workspace) -> Option<DialogueSummary> {
    let d = Dialogue::default_in(ws).ok()?;
    let v = d.snapshot().ok()?.view();
    Some(DialogueSummary {
        folder: d.rel,
        topic: v.topic,
        message_count: v.message_count,
        turn: v.next.or(v.turn),
        state: v.state,
    })
}
