//! Every name coord uses on disk, in one place.
//!
//! ```text
//! <root>/.<agent>_presence            seed 001 presence
//! <root>/.handshake_<agent>           seed 001 handshake
//! <dir>/FILE.lock.<agent>             seed 001 lock, beside FILE
//! <dir>/FILE.bak                      seed 001 backup, beside FILE
//! <dir>/.coord-<host>-<pid>-XXXXXX.tmp  a temporary file on its way to becoming one of the above
//! <root>/.coord/mutex                 the workspace mutex (never deleted)
//! <root>/.coord/queue/seq             the next wait-ticket number
//! <root>/.coord/queue/q-<hash>/<seq>.<agent>  a waiter's ticket for one file
//! ```
//!
//! No other module builds a path by joining strings.

use std::path::{Path, PathBuf};

use crate::host;
use crate::workspace::is_valid_agent_id;

/// The folder under the root where coord keeps its own state.
pub const STATE_DIR: &str = ".coord";

/// The infix between a file's name and the agent in a lock file name.
pub const LOCK_INFIX: &str = ".lock.";

/// The suffix of a backup.
pub const BACKUP_SUFFIX: &str = ".bak";

/// The suffix of coord's temporary files.
pub const TEMP_SUFFIX: &str = ".tmp";

const TEMP_START: &str = ".coord-";

/// `<root>/.coord`.
pub fn state_dir(root: &Path) -> PathBuf {
    root.join(STATE_DIR)
}

/// `<root>/.coord/mutex`, the workspace mutex.
pub fn mutex(root: &Path) -> PathBuf {
    state_dir(root).join("mutex")
}

/// `<root>/.<agent>_presence`.
pub fn presence(root: &Path, agent: &str) -> PathBuf {
    root.join(format!(".{agent}_presence"))
}

/// The agent id of a presence file name (`.claude_presence` → `claude`).
pub fn presence_agent(file_name: &str) -> Option<&str> {
    let id = file_name.strip_prefix('.')?.strip_suffix("_presence")?;
    is_valid_agent_id(id).then_some(id)
}

/// `<root>/.handshake_<agent>`.
pub fn handshake(root: &Path, agent: &str) -> PathBuf {
    root.join(format!(".handshake_{agent}"))
}

/// The agent id of a handshake file name (`.handshake_gemini` → `gemini`).
pub fn handshake_agent(file_name: &str) -> Option<&str> {
    let id = file_name.strip_prefix(".handshake_")?;
    is_valid_agent_id(id).then_some(id)
}

/// `FILE.lock.<agent>` beside `file`.
pub fn lock_file(file: &Path, agent: &str) -> PathBuf {
    with_suffix(file, &format!("{LOCK_INFIX}{agent}"))
}

/// Split a lock file name into the locked file's name and the agent id
/// (`SHARED.txt.lock.claude` → `("SHARED.txt", "claude")`). The agent part must be a valid id.
pub fn parse_lock_name(file_name: &str) -> Option<(&str, &str)> {
    let at = file_name.rfind(LOCK_INFIX)?;
    let (base, agent) = (&file_name[..at], &file_name[at + LOCK_INFIX.len()..]);
    // `...lock.x` and `..lock.x` would name a lock on `..` or `.`, which no file can be: a walk
    // of the tree would report a lock on a folder path that leaves it.
    let names_a_file = !base.is_empty() && base != "." && base != "..";
    (names_a_file && is_valid_agent_id(agent)).then_some((base, agent))
}

/// `FILE.bak` beside `file`.
pub fn backup(file: &Path) -> PathBuf {
    with_suffix(file, BACKUP_SUFFIX)
}

fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    file.with_file_name(name)
}

/// The start of a temporary file name made by process `pid` on the host tagged `tag`.
pub fn temp_prefix(tag: &str, pid: u32) -> String {
    format!("{TEMP_START}{tag}-{pid}-")
}

/// The host tag and process id of one of coord's temporary file names.
pub fn parse_temp_name(file_name: &str) -> Option<(&str, u32)> {
    let rest = file_name
        .strip_prefix(TEMP_START)?
        .strip_suffix(TEMP_SUFFIX)?;
    let mut parts = rest.splitn(3, '-');
    let tag = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((tag, pid))
}

/// Whether a name is one of coord's temporary files.
pub fn is_temp_name(file_name: &str) -> bool {
    parse_temp_name(file_name).is_some()
}

/// Folders a walk of the workspace never enters.
pub fn skip_in_walk(dir_name: &str) -> bool {
    dir_name == STATE_DIR || dir_name == ".git"
}

/// `<root>/.coord/queue`.
pub fn queue_root(root: &Path) -> PathBuf {
    state_dir(root).join("queue")
}

/// `<root>/.coord/queue/seq`, the next ticket number.
pub fn queue_seq(root: &Path) -> PathBuf {
    queue_root(root).join("seq")
}

/// The queue folder of one file, named after a hash of its path relative to the root.
pub fn queue_dir(root: &Path, rel: &str) -> PathBuf {
    queue_root(root).join(format!("q-{:016x}", host::fnv1a64(rel.as_bytes())))
}

/// A ticket file name: the sequence number (zero-padded, so names sort in arrival order) and agent.
pub fn ticket_name(seq: u64, agent: &str) -> String {
    format!("{seq:020}.{agent}")
}

/// The sequence number of a ticket file name.
pub fn parse_ticket_name(file_name: &str) -> Option<u64> {
    let (seq, agent) = file_name.split_once('.')?;
    if seq.len() != 20 || !is_valid_agent_id(agent) {
        return None;
    }
    seq.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_names() {
        let root = Path::new("/w");
        assert_eq!(presence(root, "claude"), Path::new("/w/.claude_presence"));
        assert_eq!(handshake(root, "gemini"), Path::new("/w/.handshake_gemini"));
        assert_eq!(
            lock_file(Path::new("/w/PROTOKOL.md"), "claude"),
            Path::new("/w/PROTOKOL.md.lock.claude")
        );
        assert_eq!(backup(Path::new("/w/a/b.txt")), Path::new("/w/a/b.txt.bak"));
    }

    #[test]
    fn lock_names_parse_back() {
        assert_eq!(
            parse_lock_name("SHARED.txt.lock.claude"),
            Some(("SHARED.txt", "claude"))
        );
        assert_eq!(
            parse_lock_name("a.lock.b.lock.gemini"),
            Some(("a.lock.b", "gemini"))
        );
        assert_eq!(parse_lock_name("a.lock.b.txt"), None);
        assert_eq!(parse_lock_name(".lock.claude"), None);
        assert_eq!(parse_lock_name("...lock.claude"), None, "found by fuzzing");
        assert_eq!(parse_lock_name("..lock.claude"), None);
        assert_eq!(parse_lock_name("....lock.claude"), Some(("...", "claude")));
        assert_eq!(parse_lock_name("x.lock.Claude"), None);
        assert_eq!(presence_agent(".claude_presence"), Some("claude"));
        assert_eq!(presence_agent(".x/y_presence"), None);
        assert_eq!(handshake_agent(".handshake_gemini"), Some("gemini"));
    }

    #[test]
    fn temp_and_ticket_names_parse_back() {
        let name = format!("{}Ab12Cd{}", temp_prefix("0badcafe", 4242), TEMP_SUFFIX);
        assert_eq!(parse_temp_name(&name), Some(("0badcafe", 4242)));
        assert!(!is_temp_name("notes.tmp"));
        assert_eq!(parse_ticket_name(&ticket_name(7, "claude")), Some(7));
        assert_eq!(parse_ticket_name("7.claude"), None);
    }
}
