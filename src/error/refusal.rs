//! Why a protocol refused: one variant per rule, each with a stable `kind` for `--json`.
//!
//! Every refusal exits 3; the variant lets a caller (a hook, an MCP client, a script reading
//! `--json`) branch on the reason without parsing the message.

/// The rule behind an [`Error::Refused`](crate::Error::Refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// There is no dialogue in the folder (`conversation.md` is missing).
    NoDialogue,
    /// `dialogue init` where a dialogue is already open.
    DialogueExists,
    /// The dialogue ended (`END-SESSION`).
    DialogueEnded,
    /// The user paused the dialogue (`PAUSE`).
    DialoguePaused,
    /// `current-turn.txt` is missing or unreadable: coord never writes when unsure.
    TurnUnknown,
    /// `current-turn.txt` holds the seed's error line: the dialogue is stopped.
    DialogueStopped,
    /// The user reserved the next message for another participant (`X-ONLY`).
    ReservedForOther,
    /// It is another participant's turn.
    NotYourTurn,
    /// A wait for one's turn ended first.
    TurnWaitTimedOut,
    /// The dialogue's `lock.txt` stayed held (another write in progress).
    DialogueBusy,
    /// `coord write` on a file the agent does not hold.
    NotLocked,
    /// The agent's lock was taken over (or released) before its change landed.
    LockTakenOver,
    /// A lock changed while `unlock --force` removed it.
    LockChanged,
    /// `unlock` (without `--force`) of another agent's STALE lock.
    StaleLock,
    /// The lock is free but earlier waiters stand in line.
    QueuedAhead,
    /// `msg wait` ended without an unread message.
    NoMessage,
    /// A handshake's wait ended before every peer answered.
    HandshakeUnanswered,
    /// A review tracker (active or closed) already exists for the topic.
    ReviewExists,
    /// The review is closed.
    ReviewClosed,
    /// The review has no planned (open) step.
    NoOpenStep,
    /// The open step belongs to another actor.
    NotStepActor,
    /// The workspace mutex was taken over while this process held it past its lease.
    MutexFenced,
    /// Two files stand where coord would install one (a hook and its chained copy).
    Conflict,
    /// A message to an agent that lives in a workspace nested inside this one.
    AgentElsewhere,
}

impl Refusal {
    /// Every refusal, in the order `docs/protocol.md` lists them.
    pub const ALL: [Refusal; 24] = [
        Refusal::NoDialogue,
        Refusal::DialogueExists,
        Refusal::DialogueEnded,
        Refusal::DialoguePaused,
        Refusal::TurnUnknown,
        Refusal::DialogueStopped,
        Refusal::ReservedForOther,
        Refusal::NotYourTurn,
        Refusal::TurnWaitTimedOut,
        Refusal::DialogueBusy,
        Refusal::NotLocked,
        Refusal::LockTakenOver,
        Refusal::LockChanged,
        Refusal::StaleLock,
        Refusal::QueuedAhead,
        Refusal::NoMessage,
        Refusal::HandshakeUnanswered,
        Refusal::ReviewExists,
        Refusal::ReviewClosed,
        Refusal::NoOpenStep,
        Refusal::NotStepActor,
        Refusal::MutexFenced,
        Refusal::Conflict,
        Refusal::AgentElsewhere,
    ];

    /// The stable machine-readable name, the `kind` of a `--json` error.
    pub fn kind(self) -> &'static str {
        match self {
            Refusal::NoDialogue => "no_dialogue",
            Refusal::DialogueExists => "dialogue_exists",
            Refusal::DialogueEnded => "dialogue_ended",
            Refusal::DialoguePaused => "dialogue_paused",
            Refusal::TurnUnknown => "turn_unknown",
            Refusal::DialogueStopped => "dialogue_stopped",
            Refusal::ReservedForOther => "reserved_for_other",
            Refusal::NotYourTurn => "not_your_turn",
            Refusal::TurnWaitTimedOut => "turn_wait_timed_out",
            Refusal::DialogueBusy => "dialogue_busy",
            Refusal::NotLocked => "not_locked",
            Refusal::LockTakenOver => "lock_taken_over",
            Refusal::LockChanged => "lock_changed",
            Refusal::StaleLock => "stale_lock",
            Refusal::QueuedAhead => "queued_ahead",
            Refusal::NoMessage => "no_message",
            Refusal::HandshakeUnanswered => "handshake_unanswered",
            Refusal::ReviewExists => "review_exists",
            Refusal::ReviewClosed => "review_closed",
            Refusal::NoOpenStep => "no_open_step",
            Refusal::NotStepActor => "not_step_actor",
            Refusal::MutexFenced => "mutex_fenced",
            Refusal::Conflict => "conflict",
            Refusal::AgentElsewhere => "agent_elsewhere",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Refusal;
    use std::collections::HashSet;

    #[test]
    fn every_kind_is_distinct_snake_case_and_listed_in_the_protocol() {
        let kinds: HashSet<&str> = Refusal::ALL.iter().map(|r| r.kind()).collect();
        assert_eq!(kinds.len(), Refusal::ALL.len());
        let protocol = include_str!("../../docs/protocol.md");
        let schema = include_str!("../../docs/schemas/error.schema.json");
        for k in kinds {
            assert!(k.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{k}");
            assert!(
                protocol.contains(&format!("`{k}`")),
                "{k} not in docs/protocol.md"
            );
            assert!(
                schema.contains(&format!("\"{k}\"")),
                "{k} not in error.schema.json"
            );
        }
    }
}
