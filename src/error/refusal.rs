//! Why a protocol refused: one variant per rule, each with a stable `kind` for `--json`.

/// Declares [`Refusal`] with each variant's `kind`, and the list of them all.
macro_rules! refusals {
    ($($(#[doc = $doc:literal])* $variant:ident => $kind:literal,)*) => {
        /// The rule behind an [`Error::Refused`](crate::Error::Refused).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Refusal {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Refusal {
            /// Every refusal, in the order `docs/protocol.md` lists them.
            pub const ALL: &[Refusal] = &[$(Refusal::$variant,)*];

            /// The stable machine-readable name, the `kind` of a `--json` error.
            pub fn kind(self) -> &'static str {
                match self {
                    $(Refusal::$variant => $kind,)*
                }
            }
        }
    };
}

refusals! {
    /// There is no dialogue in the folder (`conversation.md` is missing).
    NoDialogue => "no_dialogue",
    /// `dialogue init` where a dialogue is already open.
    DialogueExists => "dialogue_exists",
    /// The dialogue ended (`END-SESSION`).
    DialogueEnded => "dialogue_ended",
    /// The user paused the dialogue (`PAUSE`).
    DialoguePaused => "dialogue_paused",
    /// `current-turn.txt` is missing or unreadable: coord never writes when unsure.
    TurnUnknown => "turn_unknown",
    /// `current-turn.txt` holds the seed's error line: the dialogue is stopped.
    DialogueStopped => "dialogue_stopped",
    /// The user reserved the next message for another participant (`X-ONLY`).
    ReservedForOther => "reserved_for_other",
    /// It is another participant's turn.
    NotYourTurn => "not_your_turn",
    /// A wait for one's turn ended first.
    TurnWaitTimedOut => "turn_wait_timed_out",
    /// The dialogue's `lock.txt` stayed held (another write in progress).
    DialogueBusy => "dialogue_busy",
    /// `coord write` on a file the agent does not hold.
    NotLocked => "not_locked",
    /// The agent's lock was taken over (or released) before its change landed.
    LockTakenOver => "lock_taken_over",
    /// A lock changed while `unlock --force` removed it.
    LockChanged => "lock_changed",
    /// `unlock` (without `--force`) of another agent's STALE lock.
    StaleLock => "stale_lock",
    /// The lock is free but earlier waiters stand in line.
    QueuedAhead => "queued_ahead",
    /// `msg wait` ended without an unread message.
    NoMessage => "no_message",
    /// A handshake's wait ended before every peer answered.
    HandshakeUnanswered => "handshake_unanswered",
    /// A review tracker (active or closed) already exists for the topic.
    ReviewExists => "review_exists",
    /// The review is closed.
    ReviewClosed => "review_closed",
    /// The review has no planned (open) step.
    NoOpenStep => "no_open_step",
    /// The open step belongs to another actor.
    NotStepActor => "not_step_actor",
    /// The workspace mutex was taken over while this process held it past its lease.
    MutexFenced => "mutex_fenced",
    /// Two files stand where coord would install one (a hook and its chained copy).
    Conflict => "conflict",
    /// A message to an agent that lives in a workspace nested inside this one.
    AgentElsewhere => "agent_elsewhere",
    /// `init --remove --all` while another agent holds a live lock or claim.
    InUse => "in_use",
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
            let (listed, in_schema) = (format!("`{k}`"), format!("\"{k}\""));
            assert!(protocol.contains(&listed), "{k} not in docs/protocol.md");
            assert!(schema.contains(&in_schema), "{k} not in error.schema.json");
        }
    }
}
