//! The exit-code table of the command-line contract, and each error's `--json` kind, in one place.
//!
//! Call sites never pick a number: they return an [`Error`], and [`ExitCode::from`] maps its
//! variant here.

use crate::error::Error;

/// How a `coord` process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: done.
    Success,
    /// 1: an I/O error or a state that cannot be handled.
    Failure,
    /// 2: usage or bad input.
    Usage,
    /// 3: refused by the protocol (lock held, wait timed out, not your turn).
    Refused,
    /// 4: a check failed.
    CheckFailed,
    /// The status of a command coord ran for the user (`coord session`): its exit code, or
    /// 128 + the signal that killed it.
    Passthrough(u8),
}

impl ExitCode {
    /// The numeric process exit status.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failure => 1,
            ExitCode::Usage => 2,
            ExitCode::Refused => 3,
            ExitCode::CheckFailed => 4,
            ExitCode::Passthrough(code) => i32::from(code),
        }
    }
}

impl From<&Error> for ExitCode {
    fn from(err: &Error) -> ExitCode {
        table(err).1
    }
}

impl Error {
    /// A short machine-readable name of the variant, for `--json` error output.
    pub fn kind(&self) -> &'static str {
        table(self).0
    }
}

/// Each error's `kind` and how the process ends with it.
fn table(err: &Error) -> (&'static str, ExitCode) {
    use ExitCode as X;
    match err {
        Error::InvalidAgent { .. } => ("invalid_agent", X::Usage),
        Error::MissingAgent => ("missing_agent", X::Usage),
        Error::OutsideRoot { .. } => ("outside_root", X::Usage),
        Error::BadPath { .. } => ("bad_path", X::Usage),
        Error::BadDuration { .. } => ("bad_duration", X::Usage),
        Error::BadPattern { .. } => ("bad_pattern", X::Usage),
        Error::NotOneFile { .. } => ("not_one_file", X::Usage),
        Error::BadInput { .. } => ("bad_input", X::Usage),
        Error::LockHeld { .. } => ("lock_held", X::Refused),
        Error::WaitTimedOut { .. } => ("wait_timed_out", X::Refused),
        Error::Deadlock { .. } => ("deadlock", X::Refused),
        Error::NotHolder { .. } => ("not_holder", X::Refused),
        Error::Refused { why, .. } => (why.kind(), X::Refused),
        Error::CheckFailed { .. } => ("check_failed", X::CheckFailed),
        Error::ReviewUnfinished { .. } => ("review_unfinished", X::CheckFailed),
        Error::Corrupt { .. } => ("corrupt", X::Failure),
        Error::DialogueCorrupted { .. } => ("dialogue_corrupted", X::Failure),
        Error::Io { .. } => ("io", X::Failure),
        Error::NoArbitration { .. } => ("no_arbitration", X::Failure),
        Error::Remote { .. } => ("remote", X::Failure),
        Error::Failed { .. } => ("failed", X::Failure),
        // As a shell reports a process killed by that signal: 130 for SIGINT, 143 for SIGTERM.
        Error::Interrupted { signal, .. } => (
            "interrupted",
            X::Passthrough(u8::try_from(128 + signal).unwrap_or(1)),
        ),
    }
}
