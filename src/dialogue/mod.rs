//! The turn-based dialogue of seed 002, enforced: `conversation.md`, `current-turn.txt`,
//! `status.json`, `lock.txt`, `user-commands.txt` and `archive/` in one dialogue folder
//! (default `agent-dialogue/` under the root).
//!
//! The files keep the seed's formats ([`files`]), so an agent following the seed by hand and
//! an agent using coord take part in the same dialogue: coord reads hand-appended messages,
//! accepts a hand-edited turn file, and treats a hand-made `lock.txt` as a lock.
//!
//! Invariants:
//! - `conversation.md` is append-only: coord appends one whole block with one write and an
//!   fsync, and never rewrites it (archiving moves it whole).
//! - Every coord writer of a dialogue folder holds a kernel lock (`.coord/dialogue-<hash>.mutex`)
//!   around its whole read-check-write sequence, and `lock.txt` (the seed's lock, for agents
//!   working by hand) around its writes. Two coord processes can never both append.
//! - `status.json` and `current-turn.txt` are replaced atomically, never half-written.
//! - The crash order is documented in [`say`]: a crash leaves a state the next `say` repairs.

pub mod commands;
pub mod files;
pub mod say;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::watch::{Deadline, FolderWatch};
use crate::workspace::{Target, Workspace};

use self::commands::{CommandState, UserCommand};
use self::files::{Conversation, LockInfo, StatusDoc, Turn, USER, same_id};

/// Size cap when reading `conversation.md` (archive a longer one and start fresh).
pub const CONVERSATION_CAP: u64 = 32 * 1024 * 1024;

/// Size cap for the small files (turn, status, lock, commands).
const SMALL_CAP: u64 = 1024 * 1024;

/// The default participants.
pub const DEFAULT_AGENTS: [&str; 2] = ["AGENT-1", "AGENT-2"];

/// One dialogue folder inside a workspace.
#[derive(Debug, Clone)]
pub struct Dialogue {
    root: PathBuf,
    folder: PathBuf,
    rel: String,
}

impl Dialogue {
    /// The dialogue in `folder` (already confined to the workspace).
    pub fn new(ws: &Workspace, folder: Target) -> Dialogue {
        Dialogue {
            root: ws.root().to_path_buf(),
            folder: folder.abs,
            rel: folder.rel,
        }
    }

    /// The default folder, `agent-dialogue/` under the root.
    ///
    /// # Errors
    ///
    /// As [`Workspace::target_from_rel`].
    pub fn default_in(ws: &Workspace) -> Result<Dialogue> {
        Ok(Dialogue::new(ws, ws.target_from_rel(layout::DIALOGUE_DIR)?))
    }

    /// The folder, absolute.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// The folder, relative to the root.
    pub fn rel(&self) -> &str {
        &self.rel
    }

    /// One of the folder's files.
    pub fn path(&self, name: &str) -> PathBuf {
        layout::dialogue_file(&self.folder, name)
    }

    /// A file's path relative to the root, for messages.
    pub fn shown(&self, name: &str) -> String {
        format!("{}/{name}", self.rel)
    }

    /// Whether a dialogue is open here (`conversation.md` exists).
    pub fn exists(&self) -> bool {
        std::fs::symlink_metadata(self.path(layout::DIALOGUE_CONVERSATION)).is_ok()
    }

    fn lock_mutex(&self) -> Result<crate::arbiter::Guard> {
        fsutil::ensure_dir(&layout::state_dir(&self.root))?;
        crate::arbiter::Guard::take(
            &layout::dialogue_mutex(&self.root, &self.rel),
            crate::arbiter::policy(&self.root)?.arbitration,
        )
    }

    fn no_dialogue(&self) -> Error {
        Error::refused(
            format!(
                "no dialogue in `{}` (`conversation.md` is missing)",
                self.rel
            ),
            Some("start one with `coord dialogue init --topic \"…\"`".into()),
        )
    }

    fn read_small(&self, name: &str) -> Result<Option<(String, Option<Timestamp>)>> {
        let path = self.path(name);
        match fsutil::read_text_capped(&path, SMALL_CAP) {
            Ok((text, mtime)) => Ok(Some((text, mtime.map(clock::from_system_time)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).at("read", &path),
        }
    }

    fn read_conversation(&self) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.conversation_bytes()?).into_owned())
    }

    /// The bytes of `conversation.md` (for `show`), capped at [`CONVERSATION_CAP`].
    ///
    /// # Errors
    ///
    /// Refused when there is no dialogue; [`Error::Io`] when it cannot be read.
    pub fn conversation_bytes(&self) -> Result<Vec<u8>> {
        let path = self.path(layout::DIALOGUE_CONVERSATION);
        match fsutil::read_capped(&path, CONVERSATION_CAP) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(self.no_dialogue()),
            Err(e) => Err(e).at("read", &path),
        }
    }

    /// Read everything without taking any lock (for `turn`, `wait`, `status`).
    ///
    /// # Errors
    ///
    /// Refused when there is no dialogue; [`Error::Io`] when a file cannot be read.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let text = self.read_conversation()?;
        let conv = Conversation::parse(&text);
        self.snapshot_with(conv, &clock::now())
    }

    fn snapshot_with(&self, conv: Conversation, now: &Timestamp) -> Result<Snapshot> {
        let (status, status_problem) = match self.read_small(layout::DIALOGUE_STATUS) {
            Ok(Some((text, _))) => match StatusDoc::parse(&text) {
                Ok(doc) => (Some(doc), None),
                Err(why) => (None, Some(why)),
            },
            Ok(None) => (None, Some("it is missing".to_string())),
            Err(e) => (None, Some(e.to_string())),
        };
        let turn = match self.read_small(layout::DIALOGUE_TURN) {
            Ok(Some((text, _))) => Turn::parse(&text),
            Ok(None) => Turn::Missing,
            Err(e) => Turn::Garbled(e.to_string()),
        };
        let lock = match self.read_small(layout::DIALOGUE_LOCK) {
            Ok(Some((text, mtime))) => Some(LockInfo::parse(&text, mtime, now)),
            Ok(None) => None,
            Err(_) => {
                let mtime =
                    fsutil::mtime(&self.path(layout::DIALOGUE_LOCK)).map(clock::from_system_time);
                Some(LockInfo::parse("", mtime, now))
            }
        };
        let (cmd_text, cmd_mtime) = self
            .read_small(layout::DIALOGUE_COMMANDS)?
            .unwrap_or_default();
        let last_time = conv.last().and_then(|m| clock::parse_timestamp(&m.time));
        let newer = match (cmd_mtime, last_time) {
            (Some(c), Some(l)) => c > l,
            _ => conv.last().is_none(),
        };
        let commands = commands::judge(
            &cmd_text,
            status.as_ref().and_then(StatusDoc::commands_read),
            newer,
        );
        let participants = status
            .as_ref()
            .and_then(StatusDoc::participants)
            .or_else(|| conv.participants.clone())
            .unwrap_or_else(|| DEFAULT_AGENTS.iter().map(|s| s.to_string()).collect());
        let topic = commands
            .topic
            .clone()
            .or_else(|| {
                status
                    .as_ref()
                    .and_then(|s| s.str_field("topic"))
                    .map(str::to_string)
            })
            .or_else(|| conv.topic.clone())
            .unwrap_or_default();
        Ok(Snapshot {
            conv,
            status,
            status_problem,
            turn,
            lock,
            commands,
            participants,
            topic,
        })
    }

    /// Start a dialogue: `conversation.md` with the topic, `current-turn.txt` (the first
    /// speaker), `status.json`, an empty `user-commands.txt` (an existing one is kept) and
    /// `archive/`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for a bad topic or participant list (nothing written);
    /// refused when a dialogue is already there; [`Error::Io`].
    pub fn init(
        &self,
        topic: &str,
        participants: &[String],
        first: Option<&str>,
    ) -> Result<Snapshot> {
        let topic = topic.trim();
        if topic.is_empty() || topic.contains(['\n', '\r', '\0']) {
            return Err(Error::bad_input("the topic must be one non-empty line"));
        }
        let participants = check_participants(participants)?;
        let first = match first {
            None => participants[0].clone(),
            Some(f) if same_id(f, USER) => USER.to_string(),
            Some(f) => participants
                .iter()
                .find(|p| same_id(p, f))
                .cloned()
                .ok_or_else(|| {
                    Error::bad_input(format!(
                        "`--first {f}` is not a participant ({})",
                        participants.join(", ")
                    ))
                })?,
        };
        fsutil::ensure_dir(&self.folder)?;
        let _mutex = self.lock_mutex()?;
        if self.exists() {
            return Err(self.already_there());
        }
        let now = clock::now();
        fsutil::ensure_dir(&self.path(layout::DIALOGUE_ARCHIVE))?;
        let commands = self.path(layout::DIALOGUE_COMMANDS);
        fsutil::create_new(&commands, b"")?;
        let status = StatusDoc::new(topic, &participants, &now);
        self.write_session(&status, topic, &participants, &first, &now)?;
        fsutil::sync_dir(&self.folder)?;
        self.snapshot()
    }

    fn already_there(&self) -> Error {
        Error::refused(
            format!("a dialogue is already open in `{}`", self.rel),
            Some("take part with `coord dialogue say`, or archive it first with `coord dialogue archive`".into()),
        )
    }

    /// Block until it is `id`'s turn and the dialogue is not paused (nor reserved for another
    /// by an `-ONLY` command). Wakes on file events in the folder, re-checking every
    /// [`RECHECK`](crate::watch::RECHECK) in any case.
    ///
    /// # Errors
    ///
    /// Refused (exit 3) when the session ended or the wait timed out; refused when there is no
    /// dialogue; [`Error::Io`].
    pub fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<Snapshot> {
        let deadline = Deadline::after(timeout);
        let watch = FolderWatch::new(std::slice::from_ref(&self.folder));
        let recheck = crate::watch::recheck_for(&self.folder);
        loop {
            let snap = self.snapshot()?;
            if snap.commands.ended {
                return Err(ended_error());
            }
            if snap.may_speak(id).is_ok() {
                return Ok(snap);
            }
            if deadline.passed() {
                let waited = timeout.map(clock::format_duration).unwrap_or_default();
                return Err(Error::refused(
                    format!(
                        "gave up waiting for {id}'s turn after {waited}: {}",
                        snap.view().describe_state()
                    ),
                    Some(format!(
                        "wait longer with `coord dialogue wait --as {id} --timeout 10m`, or see `coord dialogue turn`"
                    )),
                ));
            }
            watch.wait(deadline.next_sleep(recheck));
        }
    }

    /// Append a user command to `user-commands.txt`. `SWITCH-TOPIC` also updates `status.json`'s
    /// topic; `RESET` archives the session and starts a fresh one (same topic and participants).
    /// Returns the archive folder for `RESET`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for an unknown command (nothing written); refused when there is no
    /// dialogue or `lock.txt` stays held; [`Error::Io`].
    pub fn command(
        &self,
        text: &str,
        lock_wait: Duration,
    ) -> Result<(UserCommand, Option<String>)> {
        let snap = self.snapshot()?;
        let cmd = UserCommand::from_arg(text, &snap.participants)?;
        let mutex = self.lock_mutex()?;
        let path = self.path(layout::DIALOGUE_COMMANDS);
        fsutil::create_new(&path, b"")?;
        let (existing, _) = self
            .read_small(layout::DIALOGUE_COMMANDS)?
            .unwrap_or_default();
        let lead = if existing.is_empty() || existing.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        fsutil::append_durable(&path, format!("{lead}{}\n", cmd.render()).as_bytes())?;
        if let UserCommand::SwitchTopic(topic) = &cmd
            && let Ok(Some((text, _))) = self.read_small(layout::DIALOGUE_STATUS)
            && let Ok(mut doc) = StatusDoc::parse(&text)
        {
            doc.set("topic", serde_json::Value::from(topic.as_str()));
            fsutil::replace_durable(&self.path(layout::DIALOGUE_STATUS), doc.render().as_bytes())?;
        }
        let archived = if cmd == UserCommand::Reset {
            let lock = say::take_lock_txt(self, mutex, USER, lock_wait)?;
            let snap = self.snapshot()?;
            let dir = self.archive_files(false)?;
            self.start_fresh(&snap)?;
            lock.release()?;
            Some(dir)
        } else {
            None
        };
        Ok((cmd, archived))
    }

    /// Move `conversation.md` and `status.json` (and a non-empty `user-commands.txt`) to
    /// `archive/session-YYYYMMDD-HHMMSS/`, as the seed's archiving snippet does. Returns that
    /// folder relative to the root.
    ///
    /// # Errors
    ///
    /// Refused when there is no dialogue or `lock.txt` stays held; [`Error::Io`].
    pub fn archive(&self, lock_wait: Duration) -> Result<String> {
        if !self.exists() {
            return Err(self.no_dialogue());
        }
        let mutex = self.lock_mutex()?;
        let lock = say::take_lock_txt(self, mutex, USER, lock_wait)?;
        let dir = self.archive_files(true)?;
        lock.release()?;
        Ok(dir)
    }

    fn archive_files(&self, with_commands: bool) -> Result<String> {
        let stamp = clock::now().format("%Y%m%d-%H%M%S").to_string();
        let dir = (1..)
            .map(|n| layout::dialogue_archive_session(&self.folder, &stamp, n))
            .find(|d| std::fs::symlink_metadata(d).is_err())
            .unwrap_or_default();
        fsutil::ensure_dir(&dir)?;
        let mut names = vec![layout::DIALOGUE_CONVERSATION, layout::DIALOGUE_STATUS];
        let commands_used = self
            .read_small(layout::DIALOGUE_COMMANDS)
            .ok()
            .flatten()
            .is_some_and(|(t, _)| !t.trim().is_empty());
        if with_commands && commands_used {
            names.push(layout::DIALOGUE_COMMANDS);
        }
        for name in names {
            let from = self.path(name);
            if std::fs::symlink_metadata(&from).is_ok() {
                fsutil::rename(&from, &dir.join(name))?;
            }
        }
        fsutil::sync_dir(&dir)?;
        fsutil::sync_dir(&self.folder)?;
        let rel = dir.strip_prefix(&self.root).unwrap_or(&dir);
        Ok(rel.display().to_string())
    }

    fn start_fresh(&self, old: &Snapshot) -> Result<()> {
        let now = clock::now();
        let first = old.participants[0].clone();
        let mut status = StatusDoc::new(&old.topic, &old.participants, &now);
        status.set("commands_read", serde_json::Value::from(old.commands.lines));
        self.write_session(&status, &old.topic, &old.participants, &first, &now)
    }

    /// Write a new session's `status.json` and `current-turn.txt`, then its `conversation.md`
    /// header, last and with create-new: that file's existence is what "a dialogue is there"
    /// means, so a session half set up is never taken for one.
    fn write_session(
        &self,
        status: &StatusDoc,
        topic: &str,
        participants: &[String],
        first: &str,
        now: &Timestamp,
    ) -> Result<()> {
        fsutil::replace_durable(
            &self.path(layout::DIALOGUE_STATUS),
            status.render().as_bytes(),
        )?;
        fsutil::replace_durable(
            &self.path(layout::DIALOGUE_TURN),
            format!("{first}\n").as_bytes(),
        )?;
        let header = files::render_conversation_header(topic, participants, first, now);
        if !fsutil::create_new(&self.path(layout::DIALOGUE_CONVERSATION), header.as_bytes())? {
            return Err(self.already_there());
        }
        Ok(())
    }
}

fn ended_error() -> Error {
    Error::refused(
        "the dialogue has ended (`END-SESSION` in `user-commands.txt`)",
        Some("archive it with `coord dialogue archive`, or continue after `coord dialogue command RESUME`".into()),
    )
}

/// Validate a participant list: valid ids, no `USER`, no duplicates, at least two.
///
/// # Errors
///
/// [`Error::BadInput`] naming the problem.
pub fn check_participants(list: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for id in list {
        let id = files::validate_id(id.trim())?;
        if same_id(&id, USER) {
            return Err(Error::bad_input(
                "`USER` is reserved for the human observer; it cannot be a participant",
            ));
        }
        if out.iter().any(|o| same_id(o, &id)) {
            return Err(Error::bad_input(format!(
                "participant `{id}` is named twice"
            )));
        }
        out.push(id);
    }
    if out.len() < 2 {
        return Err(Error::bad_input(
            "a dialogue needs at least two participants (`--agents AGENT-1,AGENT-2`)",
        ));
    }
    Ok(out)
}

/// Everything the dialogue folder says at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// `conversation.md`, parsed.
    pub conv: Conversation,
    /// `status.json`, when valid.
    pub status: Option<StatusDoc>,
    /// Why `status.json` cannot be used.
    pub status_problem: Option<String>,
    /// `current-turn.txt`.
    pub turn: Turn,
    /// `lock.txt`, when present.
    pub lock: Option<LockInfo>,
    /// `user-commands.txt`, judged.
    pub commands: CommandState,
    /// The participants, in turn order.
    pub participants: Vec<String>,
    /// The topic.
    pub topic: String,
}

impl Snapshot {
    /// Why the conversation is corrupted, when it is: `(line, why)`. A count that differs from
    /// `status.json` while `lock.txt` stands is a write in progress, not corruption.
    pub fn corruption(&self) -> Option<(Option<usize>, String)> {
        if let Some((line, why)) = self.conv.numbering_error() {
            return Some((Some(line), why));
        }
        let status = self.status.as_ref()?;
        (status.message_count() != self.conv.count()).then(|| {
            (
                None,
                format!(
                    "it holds {} message(s) but `status.json` counts {}",
                    self.conv.count(),
                    status.message_count()
                ),
            )
        })
    }

    /// Whether `id` may write the next message now; the refusal says why not.
    ///
    /// # Errors
    ///
    /// Refused (exit 3) with the reason and what to do.
    pub fn may_speak(&self, id: &str) -> Result<()> {
        if self.commands.ended {
            return Err(ended_error());
        }
        if self.commands.paused {
            return Err(Error::refused(
                "the dialogue is paused (`PAUSE` in `user-commands.txt`)",
                Some(format!(
                    "wait for the user's RESUME: `coord dialogue wait --as {id}`"
                )),
            ));
        }
        match &self.turn {
            Turn::Missing | Turn::Garbled(_) => {
                return Err(Error::refused(
                    format!(
                        "unsure whose turn it is: `current-turn.txt` {}; never writing when unsure",
                        match &self.turn {
                            Turn::Missing => "is missing".to_string(),
                            other => other.describe().trim_start_matches("(unreadable: ").trim_end_matches(')').to_string(),
                        }
                    ),
                    Some("ask the user to write the next speaker's id (like `AGENT-1`) into current-turn.txt".into()),
                ));
            }
            Turn::Error(line) => {
                return Err(Error::refused(
                    format!("the dialogue is stopped: `current-turn.txt` says `{line}`"),
                    Some("the user fixes conversation.md, then writes the next speaker's id into current-turn.txt".into()),
                ));
            }
            _ => {}
        }
        if let Some(only) = &self.commands.only {
            if same_id(only, id) {
                return Ok(());
            }
            return Err(Error::refused(
                format!("the user asked only {only} to respond next (`{only}-ONLY`)"),
                Some(format!("wait with `coord dialogue wait --as {id}`")),
            ));
        }
        match self.turn.id() {
            Some(t) if same_id(t, id) => Ok(()),
            Some(t) => Err(Error::refused(
                format!("it is not {id}'s turn: `current-turn.txt` says {t}"),
                Some(format!(
                    "wait for your turn with `coord dialogue wait --as {id}`"
                )),
            )),
            None => Err(Error::refused("unsure whose turn it is", None)),
        }
    }

    /// Who may speak next: the `-ONLY` speaker, else the turn file's id.
    pub fn next_speaker(&self) -> Option<String> {
        self.commands
            .only
            .clone()
            .or_else(|| self.turn.id().map(str::to_string))
    }

    /// The JSON/human view of this snapshot (`coord dialogue turn`).
    pub fn view(&self) -> TurnView {
        let corrupt = if self.lock.as_ref().is_some_and(|l| !l.stale) {
            self.conv.numbering_error().map(|(_, w)| w)
        } else {
            self.corruption().map(|(_, w)| w)
        };
        let error = match (&self.turn, &corrupt) {
            (Turn::Error(line), _) => Some(line.clone()),
            (_, Some(why)) => Some(format!("conversation.md appears corrupted: {why}")),
            (Turn::Garbled(why), _) => Some(format!("current-turn.txt is unreadable: {why}")),
            (Turn::Missing, _) => Some("current-turn.txt is missing".into()),
            _ => None,
        };
        let state = if self.commands.ended {
            "ended"
        } else if error.is_some() {
            "error"
        } else if self.commands.paused {
            "paused"
        } else if self.commands.only.is_some() {
            "only-one-agent"
        } else if self.turn == Turn::User {
            "waiting-for-user"
        } else {
            "open"
        };
        let last = self.conv.last();
        TurnView {
            topic: self.topic.clone(),
            turn: self.turn.id().map(str::to_string),
            turn_file: self.turn.describe(),
            next: if error.is_some() {
                None
            } else {
                self.next_speaker()
            },
            state: state.to_string(),
            paused: self.commands.paused,
            ended: self.commands.ended,
            only: self.commands.only.clone(),
            error,
            message_count: self.conv.count(),
            last_speaker: last.map(|m| m.speaker.clone()),
            last_time: last.map(|m| m.time.clone()),
            end_proposed: self.conv.last_has(&files::Marker::ProposeEnd),
            needs_user: self.conv.last_has(&files::Marker::NeedsUser),
            priority: self.commands.priority.clone(),
            participants: self.participants.clone(),
            lock: self.lock.clone(),
            status_json: match &self.status_problem {
                None => "ok".into(),
                Some(why) => format!("needs repair: {why}"),
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
    /// A `PAUSE` stands.
    pub paused: bool,
    /// `END-SESSION` stands.
    pub ended: bool,
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

impl TurnView {
    /// One phrase for the state: `AGENT-2's turn`, `paused`, ….
    pub fn describe_state(&self) -> String {
        match self.state.as_str() {
            "open" | "waiting-for-user" => {
                format!("it is {}'s turn", self.next.as_deref().unwrap_or("nobody"))
            }
            "only-one-agent" => format!(
                "only {} may respond next",
                self.only.as_deref().unwrap_or("?")
            ),
            "error" => format!("error: {}", self.error.as_deref().unwrap_or("?")),
            other => format!("the dialogue is {other}"),
        }
    }
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
    if !d.exists() {
        return None;
    }
    let view = d.snapshot().ok()?.view();
    Some(DialogueSummary {
        folder: d.rel.clone(),
        topic: view.topic,
        message_count: view.message_count,
        turn: view.next.or(view.turn),
        state: view.state,
    })
}
