//! What the dialogue folder says at one moment ([`Snapshot`]), who may speak
//! ([`Snapshot::may_speak`]), the view `coord dialogue turn` prints, and the summary
//! `coord status` shows.

use serde::Serialize;

use crate::error::{Error, Refusal, Result};
use crate::workspace::Workspace;

use super::Dialogue;
use super::commands::CommandState;
use super::files::{
    Conversation, LockInfo, NEEDS_USER, PROPOSE_END, StatusDoc, Turn, USER, same_id,
};

/// Everything the dialogue folder says at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) conv: Conversation,
    /// `status.json`, or why it cannot be used.
    pub(crate) status: std::result::Result<StatusDoc, String>,
    pub(crate) turn: Turn,
    pub(crate) lock: Option<LockInfo>,
    pub(crate) commands: CommandState,
    /// In turn order.
    pub(crate) participants: Vec<String>,
    pub(crate) topic: String,
}

impl Snapshot {
    /// Why the conversation is corrupted, when it is: `(line, why)`.
    pub(crate) fn corruption(&self) -> Option<(Option<usize>, String)> {
        if let Some((line, why)) = self.conv.numbering_error() {
            return Some((Some(line), why));
        }
        let counted = self.status.as_ref().ok()?.message_count();
        let count = self.conv.count();
        (counted != count).then(|| {
            let why = format!("it holds {count} message(s) but `status.json` counts {counted}");
            (None, why)
        })
    }

    /// Whether `id` may write the next message now; the refusal (exit 3) says why not and what
    /// to do.
    pub(crate) fn may_speak(&self, id: &str) -> Result<()> {
        if self.commands.ended {
            return Err(ended_error());
        }
        if self.commands.paused {
            return Err(Error::refused(
                Refusal::DialoguePaused,
                "the dialogue is paused (`PAUSE` in `user-commands.txt`)",
                Some(format!(
                    "wait for the user's RESUME: `coord dialogue wait --as {id}`"
                )),
            ));
        }
        let unsure = |why: &str| {
            Error::refused(
                Refusal::TurnUnknown,
                format!("unsure whose turn it is: `current-turn.txt` {why}; never writing when unsure"),
                Some("ask the user to write the next speaker's id (like `AGENT-1`) into current-turn.txt".into()),
            )
        };
        let turn = match &self.turn {
            Turn::Id(t) => t,
            Turn::Missing => return Err(unsure("is missing")),
            Turn::Garbled(why) => return Err(unsure(why)),
            Turn::Error(line) => {
                return Err(Error::refused(
                    Refusal::DialogueStopped,
                    format!("the dialogue is stopped: `current-turn.txt` says `{line}`"),
                    Some("the user fixes conversation.md, then writes the next speaker's id into current-turn.txt".into()),
                ));
            }
        };
        match &self.commands.only {
            Some(only) if !same_id(only, id) => Err(Error::refused(
                Refusal::ReservedForOther,
                format!("the user asked only {only} to respond next (`{only}-ONLY`)"),
                Some(format!("wait with `coord dialogue wait --as {id}`")),
            )),
            Some(_) => Ok(()),
            None if same_id(turn, id) => Ok(()),
            None => Err(Error::refused(
                Refusal::NotYourTurn,
                format!("it is not {id}'s turn: `current-turn.txt` says {turn}"),
                Some(format!(
                    "wait for your turn with `coord dialogue wait --as {id}`"
                )),
            )),
        }
    }

    /// The JSON/human view of this snapshot (`coord dialogue turn`).
    pub fn view(&self) -> TurnView {
        // A count out of step with `status.json` while a live `lock.txt` stands is a write in
        // progress, not corruption.
        let corrupt = if self.lock.as_ref().is_some_and(|l| !l.stale) {
            self.conv.numbering_error().map(|(_, w)| w)
        } else {
            self.corruption().map(|(_, w)| w)
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
        let next = (c.only.clone()).or_else(|| self.turn.id().map(str::to_string));
        let last = self.conv.last();
        TurnView {
            topic: self.topic.clone(),
            turn: self.turn.id().map(str::to_string),
            turn_file: self.turn.describe(),
            next: next.filter(|_| error.is_none()),
            state: state.to_string(),
            paused: c.paused,
            ended: c.ended,
            only: c.only.clone(),
            error,
            message_count: self.conv.count(),
            last_speaker: last.map(|m| m.speaker.clone()),
            last_time: last.map(|m| m.time.clone()),
            end_proposed: self.conv.last_has(PROPOSE_END),
            needs_user: self.conv.last_has(NEEDS_USER),
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
    /// One phrase for the state: `it is AGENT-2's turn`, `the dialogue is paused`, ….
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
        folder: d.rel,
        topic: view.topic,
        message_count: view.message_count,
        turn: view.next.or(view.turn),
        state: view.state,
    })
}

/// The refusal for a dialogue the user ended.
pub(super) fn ended_error() -> Error {
    Error::refused(
        Refusal::DialogueEnded,
        "the dialogue has ended (`END-SESSION` in `user-commands.txt`)",
        Some("archive it with `coord dialogue archive`, or continue after `coord dialogue command RESUME`".into()),
    )
}
