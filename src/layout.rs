//! Every name coord uses on disk, in one place (docs/protocol.md lists them with their
//! formats). No other module builds a path by joining strings. Names only, no I/O: every `root`
//! below is the workspace's shared root (where `.coord/` and presences live; for a linked git
//! worktree, the main work tree's, which the caller resolves: see `worktree::shared_root`).

use std::path::{Path, PathBuf};

use crate::error::quote::is_valid_agent_id;
use crate::host;

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

/// Declares `pub fn NAME(root: &Path) -> PathBuf`, each a fixed name inside another's path.
macro_rules! names {
    ($($(#[doc = $doc:literal])* $name:ident = $parent:ident / $file:literal;)*) => {
        $($(#[doc = $doc])* pub fn $name(root: &Path) -> PathBuf {
            $parent(root).join($file)
        })*
    };
}

names! {
    /// `.coord/.gitignore`: `*`, written where nobody set the repository up.
    state_gitignore = state_dir / ".gitignore";
    /// `.coord/init.json`: what `coord init` wrote, for `coord init --remove`.
    init_record = state_dir / "init.json";
    /// `.coord/mutex`, the workspace mutex.
    mutex = state_dir / "mutex";
    /// `.coord/agents`: every agent that took a lock here, one a line.
    roster = state_dir / "agents";
    /// `.coord/sessions`: one file per agent client process whose session ran a hook here.
    sessions_dir = state_dir / "sessions";
    /// `.coord/nested/`: one file per workspace inside this one, holding its relative path.
    nested_register = state_dir / "nested";
    /// `.coord/sync-warned`: the sync-tool warning was given (it is given once).
    sync_warned = state_dir / "sync-warned";
    /// `.coord/held`: one empty entry per lock file coord made (see `lock::index`).
    held_dir = state_dir / "held";
    /// `.coord/queue`.
    queue_root = state_dir / "queue";
    /// `.coord/queue/seq`, the next ticket number.
    queue_seq = queue_root / "seq";
    /// `.coord/claims`: every claim on a folder or pattern, one record per claim.
    claims_file = state_dir / "claims";
    /// `.coord/messages`.
    messages_dir = state_dir / "messages";
    /// `.coord/partners`, the stamp card (seed 001 `partner_presence`).
    partners_dir = state_dir / "partners";
    /// `.coord/partners/seq`, the last row id handed out.
    partners_seq = partners_dir / "seq";
    /// `.coord/partners/open`: one empty file per row not clocked out, named by its id.
    partners_open_dir = partners_dir / "open";
    /// `.coord/config`: workspace settings, `key: value` lines (`history_max_size`, ...).
    config = state_dir / "config";
    /// `.coord/history`, the folder of the event history (contract §11).
    history_dir = state_dir / "history";
    /// `.coord/history/events.jsonl`, the history being appended to (one JSON object a line).
    history_log = history_dir / "events.jsonl";
    /// `.coord/history/events.1.jsonl`, the previous generation (the newest rotated out).
    history_rotated = history_dir / "events.1.jsonl";
    /// `.coord/needs-user`, one file per agent whose client waits for its user.
    needs_user_dir = state_dir / "needs-user";
    /// `.coord/remote`: what this clone knows of its remote's coord state (contract §13).
    remote_dir = state_dir / "remote";
    /// `.coord/remote/state.json`: the remote's claims and clones as last read.
    remote_state = remote_dir / "state.json";
    /// `.coord/remote/claims`: the claims of `state.json` as a hook reads them.
    remote_claims = remote_dir / "claims";
    /// `.coord/remote/working_on`: what each clone's agents are editing, as last read.
    remote_working_on = remote_dir / "working_on";
    /// `.coord/remote/sync`: the kernel lock of `coord remote sync` (never deleted).
    remote_sync = remote_dir / "sync";
    /// `.coord/remote/lock`: the kernel lock of a merge of `state.json` (never deleted).
    remote_lock = remote_dir / "lock";
    /// `.coord/remote/renewer`: the kernel lock of `coord remote renewer` (never deleted).
    remote_renewer = remote_dir / "renewer";
    /// `.coord/remote/renewer.pid`: the process id of that renewer, while it runs.
    remote_renewer_pid = remote_dir / "renewer.pid";
    /// `.coord/remote/publishing`: the kernel lock of the publications under way (never deleted).
    remote_publishing = remote_dir / "publishing";
}

/// The lease file beside a kernel-mutex file (`mutex` → `mutex.lease`), for network folders.
pub fn lease_of(mutex_path: &Path) -> PathBuf {
    with_suffix(mutex_path, ".lease")
}

/// `<root>/.coord/sessions/<tag>-<pid>`: the session of client process `pid` on host `tag`.
pub fn session_file(root: &Path, tag: &str, pid: u32) -> PathBuf {
    sessions_dir(root).join(format!("{tag}-{pid}"))
}

/// The host tag and pid of a session file name (`0a1b2c3d-4242` → `("0a1b2c3d", 4242)`).
pub fn parse_session_name(file_name: &str) -> Option<(&str, u32)> {
    let (tag, pid) = file_name.split_once('-')?;
    let hex = tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_hexdigit());
    Some((tag, number(pid).filter(|_| hex)?))
}

/// `text` as a number when it is ASCII digits only (no sign, no blank).
fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    let digits = text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse().ok())?
}

/// `<root>/.coord/nested/<FNV-1a hash of rel>`: the register entry of the nested workspace `rel`.
pub fn nested_entry(root: &Path, rel: &str) -> PathBuf {
    nested_register(root).join(hashed("", rel, ""))
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

/// The locked file's name and the agent id of a lock file name (`a.txt.lock.claude`).
pub fn parse_lock_name(file_name: &str) -> Option<(&str, String)> {
    let at = file_name.rfind(LOCK_INFIX)?;
    let (base, agent) = (&file_name[..at], &file_name[at + LOCK_INFIX.len()..]);
    // `...lock.x` and `..lock.x` would name a lock on `..` or `.`, which no file can be: a walk
    // of the tree would report a lock on a folder path that leaves it.
    let names_a_file = !base.is_empty() && base != "." && base != "..";
    // An agent following the seed by hand may write its name as it spells it
    // (`FILE.lock.Claude`): that is claude's lock, not no lock at all.
    let agent = agent.to_ascii_lowercase();
    (names_a_file && is_valid_agent_id(&agent)).then_some((base, agent))
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

/// The first line of coord's block in `.gitignore` (and in `info/exclude`).
pub const IGNORE_BEGIN: &str = "# coord:begin";
/// The last line of coord's block in `.gitignore` (and in `info/exclude`).
pub const IGNORE_END: &str = "# coord:end";

/// The `.gitignore` lines that keep coord's own files out of `git status`.
pub const GITIGNORE_LINES: &[&str] = &[
    // Any `.coord/`, a nested workspace's too.
    ".coord/",
    ".*_presence",
    ".handshake_*",
    "*.lock.*",
    "*.bak",
    "*.rejected.*",
    ".coord-*.tmp",
];

/// The infix between a file's name and the agent in a rejected-write file name.
pub const REJECTED_INFIX: &str = ".rejected.";

/// `FILE.rejected.<agent>` beside `file`: where a refused `coord write` keeps its content.
pub fn rejected(file: &Path, agent: &str) -> PathBuf {
    with_suffix(file, &format!("{REJECTED_INFIX}{agent}"))
}

/// `FILE.rejected.<agent>.<n>`: where refused content goes when a non-file holds the name.
pub fn rejected_numbered(file: &Path, agent: &str, n: u32) -> PathBuf {
    with_suffix(file, &format!("{REJECTED_INFIX}{agent}.{n}"))
}

/// The start of a temporary file name made by process `pid` on the host tagged `tag`.
pub fn temp_prefix(tag: &str, pid: u32) -> String {
    format!("{TEMP_START}{tag}-{pid}-")
}

/// The host tag and process id of one of coord's temporary file names.
pub fn parse_temp_name(file_name: &str) -> Option<(&str, u32)> {
    let rest = file_name.strip_prefix(TEMP_START)?;
    let rest = rest.strip_suffix(TEMP_SUFFIX)?;
    let (tag, rest) = rest.split_once('-')?;
    let (pid, _random) = rest.split_once('-')?;
    Some((tag, pid.parse().ok()?))
}

/// Whether a name is a FUSE leftover (`.fuse_hidden…`: removed while open through the mount).
pub fn is_fuse_hidden(file_name: &str) -> bool {
    file_name.starts_with(".fuse_hidden")
}

/// Whether a name is one of coord's temporary files.
pub fn is_temp_name(file_name: &str) -> bool {
    parse_temp_name(file_name).is_some()
}

/// What coord file a name is, when it is one of coord's own files beside the user's.
pub fn own_file_kind(file_name: &str) -> Option<&'static str> {
    type Is = fn(&str) -> bool;
    let kinds: [(Is, &'static str); 6] = [
        (|n| parse_lock_name(n).is_some(), "a lock file"),
        (
            |n| n.len() > BACKUP_SUFFIX.len() && n.ends_with(BACKUP_SUFFIX),
            "a backup",
        ),
        (is_rejected_name, "a refused write kept by `coord write`"),
        (|n| presence_agent(n).is_some(), "a presence file"),
        (|n| handshake_agent(n).is_some(), "a handshake file"),
        (is_temp_name, "a temporary file"),
    ];
    kinds.iter().find(|(is, _)| is(file_name)).map(|k| k.1)
}

/// Whether a name is `FILE.rejected.<agent>` or `FILE.rejected.<agent>.<n>`.
fn is_rejected_name(file_name: &str) -> bool {
    file_name.rfind(REJECTED_INFIX).is_some_and(|at| {
        let agent = &file_name[at + REJECTED_INFIX.len()..];
        let agent = match agent.split_once('.') {
            Some((a, n)) if n.bytes().all(|b| b.is_ascii_digit()) => a,
            Some(_) => "",
            None => agent,
        };
        at > 0 && is_valid_agent_id(&agent.to_ascii_lowercase())
    })
}

/// Folders a walk of the workspace never enters.
pub fn skip_in_walk(dir_name: &str) -> bool {
    dir_name == STATE_DIR || dir_name == ".git"
}

/// What earlier versions of coord kept in `.coord/` and this one neither reads nor writes.
pub fn leftovers(root: &Path) -> [PathBuf; 4] {
    let state = state_dir(root);
    [
        state.join("recycled"),
        state.join("folders"),
        state.join("worktrees"),
        held_dir(root).join("anchor"),
    ]
}

/// The infix between the path and the agent in an index entry's name.
const HELD_INFIX: &str = ".held.";

/// The longest index entry name spelled out (longer paths are named by their hash).
const HELD_NAME_MAX: usize = 200;

/// The index entry of `agent`'s lock on `rel`, and whether it is named by a hash (holding `rel`).
pub fn held_entry(root: &Path, rel: &str, agent: &str) -> (PathBuf, bool) {
    let max = HELD_NAME_MAX.saturating_sub(HELD_INFIX.len() + agent.len());
    let (name, hashed) = escaped_name(rel, "=", max);
    let entry = held_dir(root).join(format!("{name}{HELD_INFIX}{agent}"));
    (entry, hashed)
}

/// The locked file (`None`: named by hash) and the agent an index entry's name says.
pub fn parse_held_entry(file_name: &str) -> Option<(Option<String>, String)> {
    let (enc, agent) = file_name.rsplit_once(HELD_INFIX)?;
    if enc.is_empty() || !is_valid_agent_id(agent) {
        return None;
    }
    let agent = agent.to_string();
    if enc.starts_with('=') {
        return Some((None, agent));
    }
    let (mut rel, mut rest) = (String::with_capacity(enc.len()), enc);
    while let Some(at) = rest.find('%') {
        rel.push_str(&rest[..at]);
        rel.push(match rest.get(at + 1..at + 3)? {
            "25" => '%',
            "2F" => '/',
            "3D" => '=',
            _ => return None,
        });
        rest = &rest[at + 3..];
    }
    rel.push_str(rest);
    Some((Some(rel), agent))
}

/// `<root>/.coord/backups/<name>`: `file`'s older backups, named by its escaped path.
pub fn backup_generations(root: &Path, file: &Path) -> PathBuf {
    let key = file.strip_prefix(root).unwrap_or(file).to_string_lossy();
    let name = escaped_name(&key, "", HELD_NAME_MAX).0;
    state_dir(root).join("backups").join(name)
}

/// `<prefix><16 hex digits of the FNV-1a hash of key><suffix>`.
fn hashed(prefix: &str, key: &str, suffix: &str) -> String {
    format!("{prefix}{:016x}{suffix}", host::fnv1a64(key.as_bytes()))
}

/// `key` as one file name: `%` written `%25`, `/` `%2F` and each of `also` as `%XX`; when that
/// is longer than `max`, `=` and the FNV-1a hash of `key` (then `true`).
fn escaped_name(key: &str, also: &str, max: usize) -> (String, bool) {
    let mut name = String::with_capacity(key.len() + 8);
    for c in key.chars() {
        if c == '%' || c == '/' || also.contains(c) {
            name.push_str(&format!("%{:02X}", c as u32));
        } else {
            name.push(c);
        }
    }
    if name.len() > max {
        return (hashed("=", key, ""), true);
    }
    (name, false)
}

/// The name of backup generation `seq` (zero-padded, so names sort by age).
pub fn generation_name(seq: u64) -> String {
    format!("{seq:08}")
}

/// The queue folder of one file, named after a hash of its path relative to the root.
pub fn queue_dir(root: &Path, rel: &str) -> PathBuf {
    queue_root(root).join(hashed("q-", rel, ""))
}

/// The queue folder of one claim pattern (`c-` and a hash of the pattern).
pub fn claim_queue_dir(root: &Path, pattern: &str) -> PathBuf {
    queue_root(root).join(hashed(CLAIM_QUEUE_PREFIX, pattern, ""))
}

/// The name prefix of a claim's queue folder.
pub const CLAIM_QUEUE_PREFIX: &str = "c-";

/// A ticket file name: the sequence number (zero-padded, so names sort in arrival order) and agent.
pub fn ticket_name(seq: u64, agent: &str) -> String {
    format!("{seq:020}.{agent}")
}

/// The sequence number and agent id of a ticket file name.
pub fn parse_ticket(file_name: &str) -> Option<(u64, &str)> {
    let (seq, agent) = file_name.split_once('.')?;
    let valid = seq.len() == 20 && is_valid_agent_id(agent);
    Some((seq.parse().ok().filter(|_| valid)?, agent))
}

/// The suffix of a message file.
pub const MESSAGE_SUFFIX: &str = ".msg";

/// The default collaboration file of seed 000, in the root.
pub const COLLAB_FILE: &str = "collaboration_file.txt";

/// Whether `id` can be a message id: 1-32 characters of `0-9a-z`.
pub fn is_valid_message_id(id: &str) -> bool {
    let digit_or_lower = |b: u8| b.is_ascii_digit() || b.is_ascii_lowercase();
    (1..=32).contains(&id.len()) && id.bytes().all(digit_or_lower)
}

/// `<root>/.coord/messages/<id>.msg`. The caller has checked `id` with [`is_valid_message_id`].
pub fn message_file(root: &Path, id: &str) -> PathBuf {
    messages_dir(root).join(format!("{id}{MESSAGE_SUFFIX}"))
}

/// The id of a message file name (`0mkx2a9q1b3cd.msg` → `0mkx2a9q1b3cd`).
pub fn parse_message_name(file_name: &str) -> Option<&str> {
    let id = file_name.strip_suffix(MESSAGE_SUFFIX)?;
    is_valid_message_id(id).then_some(id)
}

/// `<root>/.coord/messages/read/<agent>`: the read marks of one agent.
pub fn read_marks_dir(root: &Path, agent: &str) -> PathBuf {
    messages_dir(root).join("read").join(agent)
}

/// The file of a reader's read-marks folder that lists the messages it found were for others
/// (never a message id: those have no dot).
pub const OTHERS_SEEN: &str = "others.ids";

/// `<root>/.coord/messages/read/<agent>/others.ids`: the messages `agent` found were for others.
pub fn others_seen(root: &Path, agent: &str) -> PathBuf {
    read_marks_dir(root, agent).join(OTHERS_SEEN)
}

/// `<root>/.coord/messages/read/<agent>/<id>`: present once `agent` has read message `id`.
pub fn read_mark(root: &Path, agent: &str, id: &str) -> PathBuf {
    read_marks_dir(root, agent).join(id)
}

/// The suffix of a stamp-card row file.
const ROW_SUFFIX: &str = ".session";

/// `<root>/.coord/partners/<id>.session`, one row (the id zero-padded, so names sort by id).
pub fn partner_row(root: &Path, id: u64) -> PathBuf {
    partners_dir(root).join(format!("{id:010}{ROW_SUFFIX}"))
}

/// `<root>/.coord/partners/open/<id>`, the index entry of an open row.
pub fn partner_open(root: &Path, id: u64) -> PathBuf {
    partners_open_dir(root).join(id.to_string())
}

/// `<root>/.coord/partners/<id>.session` without the zeros, as a row written by hand may be named.
pub fn partner_row_unpadded(root: &Path, id: u64) -> PathBuf {
    partners_dir(root).join(format!("{id}{ROW_SUFFIX}"))
}

/// The row id of a stamp-card row file name.
pub fn parse_partner_row_name(file_name: &str) -> Option<u64> {
    number(file_name.strip_suffix(ROW_SUFFIX)?)
}

// ---- Dialogue (seed 002) -------------------------------------------------------------------

/// The default dialogue folder, relative to the root.
pub const DIALOGUE_DIR: &str = "agent-dialogue";
/// The dialogue log, in the dialogue folder.
pub const DIALOGUE_CONVERSATION: &str = "conversation.md";
/// Whose turn it is, in the dialogue folder.
pub const DIALOGUE_TURN: &str = "current-turn.txt";
/// Session metadata, in the dialogue folder.
pub const DIALOGUE_STATUS: &str = "status.json";
/// The writer's lock, in the dialogue folder.
pub const DIALOGUE_LOCK: &str = "lock.txt";
/// The user's command channel, in the dialogue folder.
pub const DIALOGUE_COMMANDS: &str = "user-commands.txt";
/// The archive folder, in the dialogue folder.
pub const DIALOGUE_ARCHIVE: &str = "archive";

/// `archive/session-<stamp>[-N]` in the dialogue folder: the N-th archive made in that second.
pub fn dialogue_archive_session(folder: &Path, stamp: &str, n: u32) -> PathBuf {
    let name = match n {
        0 | 1 => format!("session-{stamp}"),
        _ => format!("session-{stamp}-{n}"),
    };
    folder.join(DIALOGUE_ARCHIVE).join(name)
}

/// `<root>/.coord/dialogue-<hash of folder_rel>.mutex`: the kernel lock of one dialogue's writers.
pub fn dialogue_mutex(root: &Path, folder_rel: &str) -> PathBuf {
    state_dir(root).join(hashed("dialogue-", folder_rel, ".mutex"))
}

// --- Review tracker (seed 003) -----------------------------------------------------------------

/// The default review metadata folder under the root.
pub const REVIEW_METADATA_DIR: &str = ".metadata";

/// `<meta>/reviews/active`.
pub fn review_active_dir(meta: &Path) -> PathBuf {
    meta.join("reviews").join("active")
}

/// `<meta>/reviews/closed`.
pub fn review_closed_dir(meta: &Path) -> PathBuf {
    meta.join("reviews").join("closed")
}

/// `<dir>/<topic>-tracker.md` (in `active/` or `closed/`).
pub fn review_tracker(dir: &Path, topic: &str) -> PathBuf {
    dir.join(format!("{topic}-tracker.md"))
}

/// The topic of a tracker file name (`api-tracker.md` → `api`).
pub fn review_tracker_topic(file_name: &str) -> Option<&str> {
    file_name
        .strip_suffix("-tracker.md")
        .filter(|t| !t.is_empty() && !t.ends_with("-tracker-archive"))
}

/// `<topic>-tracker-archive.md`, the name the Steps note refers to.
pub fn review_archive_name(topic: &str) -> String {
    format!("{topic}-tracker-archive.md")
}

/// `<dir>/<topic>-tracker-archive.md`, beside its tracker.
pub fn review_archive(dir: &Path, topic: &str) -> PathBuf {
    dir.join(review_archive_name(topic))
}

/// `<meta>/templates/review-tracker-template.md`.
pub fn review_template(meta: &Path) -> PathBuf {
    meta.join("templates").join("review-tracker-template.md")
}

/// `<meta>/reviews/llms/<llm>/<topic>_review_<date>.md`.
pub fn review_file(meta: &Path, llm: &str, topic: &str, date: &str) -> PathBuf {
    let dir = meta.join("reviews").join("llms").join(llm);
    dir.join(format!("{topic}_review_{date}.md"))
}

/// `<meta>/review-responses/llms/<llm>/<topic>-review/<NN>_<action>_to_<other>_<description>_<date>.md`.
// Every argument is one part of the seed's name; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn review_response(
    meta: &Path,
    llm: &str,
    topic: &str,
    step: u32,
    action: &str,
    other: &str,
    description: &str,
    date: &str,
) -> PathBuf {
    let llms = meta.join("review-responses").join("llms");
    let dir = llms.join(llm).join(format!("{topic}-review"));
    let name = format!("{step:02}_{action}_to_{other}_{description}_{date}.md");
    dir.join(name)
}

/// `<meta>/changelog/<llm1>_<llm2>_<topic>_<description>_<date>.md`.
pub fn review_changelog(
    meta: &Path,
    llm1: &str,
    llm2: &str,
    topic: &str,
    description: &str,
    date: &str,
) -> PathBuf {
    meta.join("changelog")
        .join(format!("{llm1}_{llm2}_{topic}_{description}_{date}.md"))
}

/// `<root>/.coord/needs-user/<agent>`: the agent's client waits for its user (JSON).
pub fn needs_user(root: &Path, agent: &str) -> PathBuf {
    needs_user_dir(root).join(agent)
}

/// `<root>/.coord/shell/<agent>`: the agent's running shell call (see [`crate::shelledit`]).
pub fn shell_start(root: &Path, agent: &str) -> PathBuf {
    state_dir(root).join("shell").join(agent)
}

/// The ref on the remote holding every shared claim (one commit; its tree one blob a claim).
pub const REMOTE_CLAIMS_REF: &str = "refs/coord/claims";
/// The folder of refs on the remote holding each clone's `working_on`, one ref a clone.
pub const REMOTE_CLONES_PREFIX: &str = "refs/coord/clones/";

/// Where this clone keeps the remote's `refs/coord/…` as last fetched (never pushed).
pub const SYNC_PREFIX: &str = "refs/coord-sync/";

/// The refs `git fast-import` builds a commit on in this clone, deleted in the same run.
pub const SCRATCH_PREFIX: &str = "refs/coord-tmp/";

/// The ref on the remote holding the `working_on` of the clone whose name hashes to `key`.
pub fn remote_clone_ref(key: &str) -> String {
    format!("{REMOTE_CLONES_PREFIX}{key}")
}

/// The local copy of the remote ref `remote_ref` (`refs/coord/X` → `refs/coord-sync/X`).
pub fn sync_ref(remote_ref: &str) -> String {
    format!(
        "{SYNC_PREFIX}{}",
        remote_ref.strip_prefix("refs/coord/").unwrap_or(remote_ref)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_names() {
        let (root, file) = (Path::new("/w"), Path::new("/w/a/b.txt"));
        for (got, want) in [
            (presence(root, "claude"), "/w/.claude_presence"),
            (handshake(root, "gemini"), "/w/.handshake_gemini"),
            (
                lock_file(Path::new("/w/PROTOKOL.md"), "claude"),
                "/w/PROTOKOL.md.lock.claude",
            ),
            (backup(file), "/w/a/b.txt.bak"),
            (rejected(file, "claude"), "/w/a/b.txt.rejected.claude"),
        ] {
            assert_eq!(got, Path::new(want));
        }
    }

    #[test]
    fn lock_names_parse_back() {
        for (name, want) in [
            ("SHARED.txt.lock.claude", Some(("SHARED.txt", "claude"))),
            ("a.lock.b.lock.gemini", Some(("a.lock.b", "gemini"))),
            ("a.lock.b.txt", None),
            (".lock.claude", None),
            ("...lock.claude", None), // found by fuzzing
            ("..lock.claude", None),
            ("....lock.claude", Some(("...", "claude"))),
            // A hand-made lock spelled with capitals is still a lock.
            ("x.lock.Claude", Some(("x", "claude"))),
            ("x.lock.gpt 4o", None),
        ] {
            let want = want.map(|(base, agent)| (base, agent.to_string()));
            assert_eq!(parse_lock_name(name), want, "{name}");
        }
        assert_eq!(presence_agent(".claude_presence"), Some("claude"));
        assert_eq!(presence_agent(".x/y_presence"), None);
        assert_eq!(handshake_agent(".handshake_gemini"), Some("gemini"));
    }

    #[test]
    fn temp_ticket_message_and_row_names_parse_back() {
        let name = format!("{}Ab12Cd{}", temp_prefix("0badcafe", 4242), TEMP_SUFFIX);
        assert_eq!(parse_temp_name(&name), Some(("0badcafe", 4242)));
        assert!(!is_temp_name("notes.tmp"));
        assert_eq!(parse_ticket(&ticket_name(7, "claude")), Some((7, "claude")));
        assert_eq!(parse_ticket("7.claude"), None);
        let root = Path::new("/w");
        let p = message_file(root, "0mkx2a9q1b3cd");
        assert_eq!(p, Path::new("/w/.coord/messages/0mkx2a9q1b3cd.msg"));
        let id = parse_message_name("0mkx2a9q1b3cd.msg");
        assert_eq!(id, Some("0mkx2a9q1b3cd"));
        for bad in ["x.txt", ".msg", "../x.msg", "A.msg", "a-b.msg"] {
            assert_eq!(parse_message_name(bad), None, "{bad}");
        }
        let row = partner_row(root, 7);
        assert_eq!(row, Path::new("/w/.coord/partners/0000000007.session"));
        let name = row.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_partner_row_name(name), Some(7));
        assert_eq!(parse_partner_row_name("seq"), None);
        assert_eq!(parse_partner_row_name("x.session"), None);
        assert_eq!(parse_partner_row_name(".session"), None);
    }
}
