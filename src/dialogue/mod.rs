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

pub(crate) mod commands;
pub mod files;
pub mod say;
mod snapshot;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::clock::{self, Timestamp};
use crate::error::{Error, IoResultExt, Refusal, Result};
use crate::fsutil;
use crate::layout::{
    self, DIALOGUE_COMMANDS, DIALOGUE_CONVERSATION, DIALOGUE_LOCK, DIALOGUE_STATUS, DIALOGUE_TURN,
};
use crate::wait::{Deadline, FolderWatch};
use crate::workspace::{Target, Workspace};

use self::commands::UserCommand;
use self::files::{Conversation, LockInfo, StatusDoc, Turn, USER, same_id};
use self::snapshot::ended_error;
pub use self::snapshot::{DialogueSummary, Snapshot, TurnView, summary};

/// Size cap when reading `conversation.md` (archive a longer one and start fresh).
const CONVERSATION_CAP: u64 = 32 * 1024 * 1024;

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
        let (folder, rel) = (folder.abs, folder.rel);
        Dialogue {
            root: ws.root().to_path_buf(),
            folder,
            rel,
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

    /// A file of the folder, relative to the root, for messages.
    pub fn shown(&self, name: &str) -> String {
        format!("{}/{name}", self.rel)
    }

    fn path(&self, name: &str) -> PathBuf {
        layout::dialogue_file(&self.folder, name)
    }

    fn exists(&self) -> bool {
        std::fs::symlink_metadata(self.path(DIALOGUE_CONVERSATION)).is_ok()
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
            Refusal::NoDialogue,
            format!(
                "no dialogue in `{}` (`conversation.md` is missing)",
                self.rel
            ),
            Some("start one with `coord dialogue init --topic \"…\"`".into()),
        )
    }

    fn already_there(&self) -> Error {
        Error::refused(
            Refusal::DialogueExists,
            format!("a dialogue is already open in `{}`", self.rel),
            Some("take part with `coord dialogue say`, or archive it first with `coord dialogue archive`".into()),
        )
    }

    /// A small file's text and mtime; `None` when it is missing.
    fn read_small(&self, name: &str) -> Result<Option<(String, Option<Timestamp>)>> {
        let path = self.path(name);
        match fsutil::read_text_capped(&path, SMALL_CAP) {
            Ok((text, mtime)) => Ok(Some((text, mtime.map(clock::from_system_time)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).at("read", &path),
        }
    }

    /// `lock.txt`, when there is one. One that cannot be read (a folder, too large) is a lock
    /// by an unknown holder, as old as its mtime.
    fn read_lock(&self, now: &Timestamp) -> Option<LockInfo> {
        let (text, mtime) = match self.read_small(DIALOGUE_LOCK) {
            Ok(found) => found?,
            Err(_) => {
                let mtime = fsutil::mtime(&self.path(DIALOGUE_LOCK));
                (String::new(), mtime.map(clock::from_system_time))
            }
        };
        Some(LockInfo::parse(&text, mtime, now))
    }

    /// The bytes of `conversation.md` (for `show`), capped.
    ///
    /// # Errors
    ///
    /// Refused when there is no dialogue; [`Error::Io`] when it cannot be read.
    pub fn conversation_bytes(&self) -> Result<Vec<u8>> {
        let path = self.path(DIALOGUE_CONVERSATION);
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
        let conv = Conversation::parse(&String::from_utf8_lossy(&self.conversation_bytes()?));
        let now = clock::now();
        let status = match self.read_small(DIALOGUE_STATUS) {
            Ok(Some((text, _))) => StatusDoc::parse(&text),
            Ok(None) => Err("it is missing".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let turn = match self.read_small(DIALOGUE_TURN) {
            Ok(Some((text, _))) => Turn::parse(&text),
            Ok(None) => Turn::Missing,
            Err(e) => Turn::Garbled(e.to_string()),
        };
        let (cmd_text, cmd_mtime) = self.read_small(DIALOGUE_COMMANDS)?.unwrap_or_default();
        let last_time = conv.last().and_then(|m| clock::parse_timestamp(&m.time));
        let newer = match (cmd_mtime, last_time) {
            (Some(c), Some(l)) => c > l,
            _ => conv.last().is_none(),
        };
        let doc = status.as_ref().ok();
        let commands = commands::judge(&cmd_text, doc.and_then(StatusDoc::commands_read), newer);
        let participants = (doc.and_then(StatusDoc::participants))
            .or_else(|| conv.participants.clone())
            .unwrap_or_else(|| DEFAULT_AGENTS.map(str::to_string).to_vec());
        let topic = (commands.topic.clone())
            .or_else(|| doc.and_then(StatusDoc::topic).map(str::to_string))
            .or_else(|| conv.topic.clone())
            .unwrap_or_default();
        Ok(Snapshot {
            lock: self.read_lock(&now),
            conv,
            status,
            turn,
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
    ) -> Result<TurnView> {
        let topic = topic.trim();
        if topic.is_empty() || topic.contains(['\n', '\r', '\0']) {
            return Err(Error::bad_input("the topic must be one non-empty line"));
        }
        let participants = check_participants(participants)?;
        let first = match first {
            None => participants[0].clone(),
            Some(f) if same_id(f, USER) => USER.to_string(),
            Some(f) => (participants.iter().find(|p| same_id(p, f)).cloned()).ok_or_else(|| {
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
        fsutil::ensure_dir(&self.path(layout::DIALOGUE_ARCHIVE))?;
        fsutil::create_new(&self.path(DIALOGUE_COMMANDS), b"")?;
        let now = clock::now();
        self.write_session(
            StatusDoc::new(topic, &participants, &now),
            topic,
            &participants,
            &first,
            &now,
        )?;
        fsutil::sync_dir(&self.folder)?;
        Ok(self.snapshot()?.view())
    }

    /// Write a new session's `status.json` and `current-turn.txt`, then its `conversation.md`
    /// header, last and with create-new: that file's existence is what "a dialogue is there"
    /// means, so a session half set up is never taken for one.
    fn write_session(
        &self,
        status: StatusDoc,
        topic: &str,
        participants: &[String],
        first: &str,
        now: &Timestamp,
    ) -> Result<()> {
        fsutil::replace_durable(&self.path(DIALOGUE_STATUS), status.render().as_bytes())?;
        fsutil::replace_durable(&self.path(DIALOGUE_TURN), format!("{first}\n").as_bytes())?;
        let header = files::render_conversation_header(topic, participants, first, now);
        if !fsutil::create_new(&self.path(DIALOGUE_CONVERSATION), header.as_bytes())? {
            return Err(self.already_there());
        }
        Ok(())
    }

    /// Block until it is `id`'s turn and the dialogue is not paused (nor reserved for another
    /// by an `-ONLY` command). Wakes on file events in the folder, re-checking every
    /// [`RECHECK`](crate::wait::RECHECK) in any case.
    ///
    /// # Errors
    ///
    /// Refused (exit 3) when the session ended or the wait timed out; refused when there is no
    /// dialogue; [`Error::Io`].
    pub fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<TurnView> {
        let deadline = Deadline::after(timeout);
        let watch = FolderWatch::new(std::slice::from_ref(&self.folder));
        let recheck = crate::wait::recheck_for(&self.folder);
        loop {
            let snap = self.snapshot()?;
            if snap.commands.ended {
                return Err(ended_error());
            }
            if snap.may_speak(id).is_ok() {
                return Ok(snap.view());
            }
            if deadline.passed() {
                let waited = timeout.map(clock::format_duration).unwrap_or_default();
                return Err(Error::refused(
                    Refusal::TurnWaitTimedOut,
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
    /// Returns the command as written, and the archive folder for `RESET`.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for an unknown command (nothing written); refused when there is no
    /// dialogue or `lock.txt` stays held; [`Error::Io`].
    pub fn command(&self, text: &str, lock_wait: Duration) -> Result<(String, Option<String>)> {
        let cmd = UserCommand::from_arg(text, &self.snapshot()?.participants)?;
        let mutex = self.lock_mutex()?;
        let path = self.path(DIALOGUE_COMMANDS);
        fsutil::create_new(&path, b"")?;
        let (existing, _) = self.read_small(DIALOGUE_COMMANDS)?.unwrap_or_default();
        let lead = if existing.is_empty() || existing.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        fsutil::append_durable(&path, format!("{lead}{}\n", cmd.render()).as_bytes())?;
        if let UserCommand::SwitchTopic(topic) = &cmd
            && let Ok(Some((text, _))) = self.read_small(DIALOGUE_STATUS)
            && let Ok(mut doc) = StatusDoc::parse(&text)
        {
            doc.set("topic", topic.as_str());
            fsutil::replace_durable(&self.path(DIALOGUE_STATUS), doc.render().as_bytes())?;
        }
        if cmd != UserCommand::Reset {
            return Ok((cmd.render(), None));
        }
        let lock = self.take_lock_txt(mutex, USER, lock_wait)?;
        let old = self.snapshot()?;
        let dir = self.archive_files(false)?;
        let now = clock::now();
        let mut status = StatusDoc::new(&old.topic, &old.participants, &now);
        status.set("commands_read", old.commands.lines);
        self.write_session(
            status,
            &old.topic,
            &old.participants,
            &old.participants[0],
            &now,
        )?;
        lock.release()?;
        Ok((cmd.render(), Some(dir)))
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
        let lock = self.take_lock_txt(self.lock_mutex()?, USER, lock_wait)?;
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
        let commands_used = (self.read_small(DIALOGUE_COMMANDS).ok().flatten())
            .is_some_and(|(t, _)| !t.trim().is_empty());
        let commands = (with_commands && commands_used).then_some(DIALOGUE_COMMANDS);
        for name in [Some(DIALOGUE_CONVERSATION), Some(DIALOGUE_STATUS), commands]
            .into_iter()
            .flatten()
        {
            let from = self.path(name);
            if std::fs::symlink_metadata(&from).is_ok() {
                fsutil::rename(&from, &dir.join(name))?;
            }
        }
        fsutil::sync_dir(&dir)?;
        fsutil::sync_dir(&self.folder)?;
        Ok(dir
            .strip_prefix(&self.root)
            .unwrap_or(&dir)
            .display()
            .to_string())
    }
}

/// Validate a participant list: valid ids, no `USER`, no duplicates, at least two.
fn check_participants(list: &[String]) -> Result<Vec<String>> {
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
