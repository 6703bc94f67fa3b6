//! How a `coord` process ends. Call sites never pick a number: they return an [`Error`], whose
//! [`Error::class`] gives its status.

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
        match err.class().1 {
            1 => ExitCode::Failure,
            2 => ExitCode::Usage,
            3 => ExitCode::Refused,
            4 => ExitCode::CheckFailed,
            code => ExitCode::Passthrough(code),
        }
    }
}
