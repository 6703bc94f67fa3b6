//! The library's one error type.

use std::io;
use std::path::{Path, PathBuf};

pub mod quote;
mod refusal;

pub use refusal::Refusal;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in coord, as outcomes a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An agent name that is not a valid id.
    #[error("invalid agent name `{name}`: {why}")]
    InvalidAgent {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A command that acts as an agent was run without one.
    #[error("no agent given")]
    MissingAgent,
    /// A path argument that resolves outside the workspace root.
    #[error("`{path}` is outside the workspace `{root}`")]
    OutsideRoot {
        /// The path as given.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },
    /// A path argument that cannot name a file coord may use.
    #[error("invalid path `{path}`: {why}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// A duration that cannot be parsed.
    #[error("invalid duration `{text}`: {why}")]
    BadDuration {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A claim (a folder or pattern) that cannot be parsed.
    #[error("cannot claim `{pattern}`: {why}")]
    BadPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        why: String,
    },
    /// A claim (a folder or a pattern) given to a command that acts on one file's content.
    #[error("`{arg}` is a folder or a pattern, and `coord {command}` takes one file")]
    NotOneFile {
        /// The argument as given.
        arg: String,
        /// The command (`note`).
        command: String,
    },
    /// Other bad input from the user (a malformed file given on the command line, a bad value).
    #[error("{message}")]
    BadInput {
        /// What is wrong.
        message: String,
    },
    /// A lock held by another agent, when not waiting.
    #[error(
        "lock on `{file}` is held by {holder} since {since}{}",
        working_suffix(working_on)
    )]
    LockHeld {
        /// The locked file, relative to the root.
        file: String,
        /// The holder's display name.
        holder: String,
        /// When the holder took it (local time, `HH:MM`, or the raw text).
        since: String,
        /// What the holder says it works on.
        working_on: Option<String>,
    },
    /// A wait that ended without the lock.
    #[error(
        "gave up waiting for `{file}` after {waited}: held by {holder} since {since}{}",
        working_suffix(working_on)
    )]
    WaitTimedOut {
        /// The file waited for.
        file: String,
        /// How long coord waited, human readable.
        waited: String,
        /// Who held it at the end (or `earlier waiters`).
        holder: String,
        /// Since when.
        since: String,
        /// What the holder works on.
        working_on: Option<String>,
    },
    /// A wait that could never end: the agents named wait for each other in a cycle.
    #[error("waiting for `{file}` would deadlock: {}", describe_cycle(cycle))]
    Deadlock {
        /// The file the refused request would have waited for.
        file: String,
        /// The cycle, starting with the refused agent: each waits for a file the next one holds.
        cycle: Vec<WaitStep>,
    },
    /// A lock that belongs to another agent (unlock, write without the lock).
    #[error("`{file}` is locked by {holder}, not by {agent}")]
    NotHolder {
        /// The file, relative to the root.
        file: String,
        /// Who holds it.
        holder: String,
        /// Who asked.
        agent: String,
    },
    /// Any other refusal by a protocol rule; `why` names the rule (and the `--json` kind).
    #[error("{message}")]
    Refused {
        /// The rule that refused.
        why: Refusal,
        /// What was refused and why.
        message: String,
        /// What to do next.
        hint: Option<String>,
    },
    /// A check that found problems (`check --strict`).
    #[error("{message}")]
    CheckFailed {
        /// A summary of the problems.
        message: String,
    },
    /// A review that cannot be closed yet (`coord review close`): what is missing.
    #[error("review `{topic}` cannot be closed yet: {}", missing.join("; "))]
    ReviewUnfinished {
        /// The review topic.
        topic: String,
        /// Each unmet completion criterion.
        missing: Vec<String>,
    },
    /// A state file that cannot be understood.
    #[error("`{}` is corrupted{}: {why}", path.display(), line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        why: String,
    },
    /// An I/O error, with the path it happened on.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What coord was doing (`read`, `create`, `rename`, …).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A wait ended by a signal (`SIGINT`, `SIGTERM`) after cleaning up what it had started.
    #[error("interrupted by signal {signal} while waiting for `{file}`; left the queue")]
    Interrupted {
        /// The signal's number.
        signal: i32,
        /// The file waited for.
        file: String,
    },
    /// A dialogue whose `conversation.md` cannot be understood (its turn set to the error line).
    #[error("`{file}` appears corrupted{}: {why}; {turn_note}. Nothing else was written", line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    DialogueCorrupted {
        /// The conversation file, as shown to the user.
        file: String,
        /// The 1-based line, when known.
        line: Option<usize>,
        /// What is wrong.
        why: String,
        /// What became of `current-turn.txt`.
        turn_note: String,
    },
    /// A folder on a filesystem where no arbitration holds (an rclone mount).
    #[error("no arbitration holds in `{}` ({filesystem}): it offers neither hard links nor an exclusive create that holds across mounts, so coord cannot keep two agents off one file there; nothing was changed", root.display())]
    NoArbitration {
        /// The workspace root.
        root: PathBuf,
        /// The filesystem's name (`fuse.rclone`).
        filesystem: String,
    },
    /// The remote that claims are shared through (contract §13) could not be used.
    #[error("{message}")]
    Remote {
        /// The remote's name (`origin`).
        remote: String,
        /// What happened, naming the remote.
        message: String,
        /// The remote refused the credentials (else: it could not be reached or used).
        credentials: bool,
    },
    /// A state that cannot be handled, not tied to one I/O call.
    #[error("{message}")]
    Failed {
        /// What went wrong and where.
        message: String,
    },
}

/// One step of a wait-for cycle: `agent` waits for `file`, which `holder` holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WaitStep {
    /// The waiting agent (display name).
    pub agent: String,
    /// The file it waits for, relative to the root.
    pub file: String,
    /// Who holds that file (display name).
    pub holder: String,
}

fn describe_cycle(cycle: &[WaitStep]) -> String {
    let step = |s: &WaitStep| format!("{} waits for `{}` held by {}", s.agent, s.file, s.holder);
    cycle.iter().map(step).collect::<Vec<_>>().join(", ")
}

fn working_suffix(working_on: &Option<String>) -> String {
    match working_on {
        Some(w) if !w.is_empty() => format!(" (working on {w})"),
        _ => String::new(),
    }
}

impl Error {
    /// Whether this is a disk (or quota) with no room left.
    pub fn is_no_space(&self) -> bool {
        matches!(self, Error::Io { source, .. }
            if source.kind() == io::ErrorKind::StorageFull
                || source.kind() == io::ErrorKind::QuotaExceeded)
    }

    /// What the user can do next, when coord knows.
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            Error::MissingAgent => {
                "say who is acting with `--agent NAME` (or `-a NAME`), or set `COORD_AGENT=NAME`".into()
            }
            Error::InvalidAgent { .. } => {
                "an agent name is 1-32 characters of a-z, 0-9, `_` and `-`, starting with a letter or digit (case is ignored)".into()
            }
            Error::OutsideRoot { root, .. } => format!(
                "name a file inside `{}`, or choose another workspace with `--dir`",
                root.display()
            ),
            Error::BadDuration { .. } => {
                "write durations like `0`, `500ms`, `30s`, `5m`, `2h`, or `forever` where a wait is meant".into()
            }
            Error::BadPattern { .. } => {
                "claim a folder with a trailing `/` (`src/auth/`) or a pattern with `*`, `?`, `[...]`, `**` (`'src/**/*.sql'`, quoted from the shell), relative to the current folder".into()
            }
            Error::NotOneFile { arg, .. } => format!(
                "name one file (a `\\` before `*`, `?` or `[` keeps it in the name, as in `'a\\[1\\].md'`); hold every file of a folder or pattern with `coord lock {a}`, or for one command with `coord run {a} -- CMD`",
                a = quote::arg(arg),
            ),
            Error::LockHeld { file, holder, .. } | Error::WaitTimedOut { file, holder, .. } => {
                let file = quote::arg(file);
                match remote_holder(holder) {
                    // A claim of another clone (`remote::Held::refusal`): its agent is on
                    // another machine, out of reach of `coord msg`.
                    Some(who) => format!(
                        "wait with `coord lock {file} --wait 5m`, or ask who runs {who} to release it"
                    ),
                    None => format!(
                        "wait with `coord lock {file} --wait 5m`, or message them: `coord msg send {} \"…\"`",
                        quote::agent(holder)
                    ),
                }
            }
            Error::Deadlock { cycle, .. } => {
                let held = cycle.last().map_or(String::new(), |s| format!("`{}`", s.file));
                format!(
                    "nobody in a cycle can go on: release what you hold first (`coord unlock`, you hold {held}), then lock every file you need in one `coord lock` call"
                )
            }
            Error::NotHolder { file, .. } => format!(
                "take the lock first with `coord lock {}`; `coord unlock --force` only removes a STALE lock",
                quote::arg(file)
            ),
            Error::Refused { hint, .. } => return hint.clone(),
            Error::CheckFailed { .. } => {
                "see `coord status` for details; `coord unlock FILE --force` removes a STALE lock".into()
            }
            Error::ReviewUnfinished { topic, .. } => format!(
                "settle every issue (`coord review issue {t} set ISSUE-NN --status resolved`) and finish a verify step first; `coord review show {t}` shows where it stands",
                t = quote::arg(topic)
            ),
            Error::NoArbitration { .. } => {
                "share the folder over NFS, SMB or sshfs, or work in a local folder; `coord doctor` shows what coord found".into()
            }
            Error::Remote {
                remote,
                credentials: true,
                ..
            } => format!(
                "check the credentials git uses for `{remote}` (`git ls-remote {}` must work without a prompt)",
                quote::arg(remote)
            ),
            Error::Remote { remote, .. } => format!(
                "check that `git ls-remote {}` works from here, or keep a claim to this clone with `--local`",
                quote::arg(remote)
            ),
            Error::DialogueCorrupted { .. } => {
                "fix conversation.md (message numbers 1..N, in step with status.json's message_count), then write the next speaker's id into current-turn.txt".into()
            }
            Error::Corrupt { path, .. } => format!(
                "repair or remove `{}` by hand; nothing was written",
                path.display()
            ),
            Error::Io { path, source, .. } => {
                use io::ErrorKind as K;
                let path = path.display();
                let link = source.get_ref().and_then(|e| e.downcast_ref::<LinkedFolder>());
                match (source.kind(), link) {
                    (K::StorageFull, _) => format!(
                        "the disk is full: `{path}` was not written; free some space and run the command again"
                    ),
                    (_, Some(link)) => format!(
                        "remove the symlink `{}`: coord makes its own folder there again",
                        link.0.display()
                    ),
                    // Something that is not what coord expects stands where coord keeps a file
                    // (a symlink, a FIFO, a folder where a file belongs, or the reverse).
                    (K::InvalidData | K::AlreadyExists | K::IsADirectory | K::NotADirectory, _) => {
                        format!(
                            "look at `{path}`: move it out of the way if it is not yours (coord creates its own files again)"
                        )
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(hint)
    }

    /// A refusal by rule `why`, with a message and an optional hint.
    pub fn refused(why: Refusal, message: impl Into<String>, hint: Option<String>) -> Error {
        let message = message.into();
        Error::Refused { why, message, hint }
    }

    /// A path argument refused for `why`.
    pub fn bad_path(path: impl Into<String>, why: impl Into<String>) -> Error {
        let (path, why) = (path.into(), why.into());
        Error::BadPath { path, why }
    }

    /// A state file at `path` that cannot be understood (at 1-based `line`, when known).
    pub fn corrupt(path: impl Into<PathBuf>, line: Option<usize>, why: impl Into<String>) -> Error {
        let (path, why) = (path.into(), why.into());
        Error::Corrupt { path, line, why }
    }

    /// A step that failed: what went wrong and where.
    pub fn failed(message: impl Into<String>) -> Error {
        let message = message.into();
        Error::Failed { message }
    }

    /// Bad user input.
    pub fn bad_input(message: impl Into<String>) -> Error {
        let message = message.into();
        Error::BadInput { message }
    }
}

/// The `InvalidData` error of a path refused for a symlink in place of one of coord's folders.
#[derive(Debug, thiserror::Error)]
#[error("`{}` is a symlink in place of coord's folder (not followed)", .0.display())]
pub struct LinkedFolder(pub PathBuf);

/// Attach a path (and what was being done) to an `io::Result`.
pub trait IoResultExt<T> {
    /// Turn an `io::Error` into [`Error::Io`] naming `path`.
    fn at(self, action: &'static str, path: &Path) -> Result<T>;
}

impl<T> IoResultExt<T> for io::Result<T> {
    fn at(self, action: &'static str, path: &Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        })
    }
}

/// `agent on host` when a refusal's `holder` names an agent of another clone (no `coord msg`).
pub fn remote_holder(holder: &str) -> Option<&str> {
    holder
        .contains(" through remote `")
        .then(|| holder.split(" (").next().unwrap_or(holder))
}
