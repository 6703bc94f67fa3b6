//! Hostile state files: every file the Protocol V3 core reads may be empty, truncated, binary,
//! 100 MB, a FIFO, a folder, a socket or a symlink. coord must never hang, never follow the
//! link, never read without bound and never panic: it names the file and goes on, and it
//! writes nothing outside the workspace.
//!
//! Every command here runs under a time limit (killed and failed after [`LIMIT`]), and the
//! workspace is a folder `ws/` inside the test folder, so that everything around it (a victim
//! file that planted symlinks point at, an `outside/` folder) can be checked byte for byte.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::support::{Cmd, Env, Output};

/// A command that has not finished by then is taken to hang.
pub const LIMIT: Duration = Duration::from_secs(10);

/// Run `cmd` to completion, killing it and failing the test if it outlives `limit`.
#[track_caller]
pub fn bounded(cmd: Cmd, limit: Duration) -> Output {
    let mut command = cmd.command();
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{shown} still ran after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        shown,
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Assert an exit code, showing the output when it differs.
#[track_caller]
pub fn expect(out: &Output, code: i32) {
    assert_eq!(
        out.code,
        Some(code),
        "expected exit {code} from {}\n--- stdout\n{}--- stderr\n{}",
        out.shown,
        out.stdout,
        out.stderr
    );
    assert!(
        !out.stderr.contains("panicked"),
        "{} panicked:\n{}",
        out.shown,
        out.stderr
    );
}

/// A test folder holding the workspace `ws/`, a victim file and an `outside/` folder beside it.
pub struct Bed {
    pub env: Env,
}

pub const VICTIM: &str = "victim.txt";
pub const PRECIOUS: &str = "precious, must never change\n";

impl Bed {
    pub fn new() -> Bed {
        let env = Env::new();
        std::fs::create_dir_all(env.path("ws")).unwrap();
        std::fs::create_dir_all(env.path("outside")).unwrap();
        env.write(VICTIM, PRECIOUS);
        env.write("ws/a.md", "hello\n");
        Bed { env }
    }

    /// The workspace root.
    pub fn ws(&self) -> PathBuf {
        self.env.path("ws")
    }

    /// A path inside the workspace.
    pub fn at(&self, rel: &str) -> PathBuf {
        self.ws().join(rel)
    }

    /// The victim file outside the workspace.
    pub fn victim(&self) -> PathBuf {
        self.env.path(VICTIM)
    }

    /// `coord` with the workspace as root and current directory, acting as `agent`.
    pub fn cmd(&self, agent: Option<&str>) -> Cmd {
        let cmd = self.env.cmd().env("COORD_DIR", self.ws()).cwd(self.ws());
        match agent {
            Some(a) => cmd.agent(a),
            None => cmd,
        }
    }

    /// Run `coord ARGS` as `agent` under the time limit.
    #[track_caller]
    pub fn run(&self, agent: Option<&str>, args: &[&str]) -> Output {
        bounded(self.cmd(agent).args(args), LIMIT)
    }

    /// Everything outside the workspace.
    pub fn outside(&self) -> BTreeMap<String, String> {
        tree(self.env.root())
            .into_iter()
            .filter(|(k, _)| k != "ws" && !k.starts_with("ws/"))
            .collect()
    }

    /// Everything inside the workspace.
    pub fn inside(&self) -> BTreeMap<String, String> {
        tree(&self.ws())
    }

    #[track_caller]
    pub fn assert_victim_untouched(&self) {
        assert_eq!(std::fs::read_to_string(self.victim()).unwrap(), PRECIOUS);
    }
}

/// Every entry under `root`, described without opening anything that is not a regular file:
/// `file:<content>` (or `big:<len>` past 1 MiB), `dir`, `fifo`, `socket`, `link:<target>`.
pub fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let ft = meta.file_type();
            let what = if ft.is_symlink() {
                format!("link:{}", std::fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                stack.push(p);
                "dir".into()
            } else if ft.is_fifo() {
                "fifo".into()
            } else if ft.is_socket() {
                "socket".into()
            } else if meta.len() > 1 << 20 {
                format!("big:{}", meta.len())
            } else {
                format!(
                    "file:{}",
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap())
                )
            };
            out.insert(rel, what);
        }
    }
    out
}

/// What a hostile state file can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Empty,
    Truncated,
    Binary,
    Huge,
    Fifo,
    Dir,
    Socket,
    Symlink,
}

pub const ALL: [Kind; 8] = [
    Kind::Empty,
    Kind::Truncated,
    Kind::Binary,
    Kind::Huge,
    Kind::Fifo,
    Kind::Dir,
    Kind::Socket,
    Kind::Symlink,
];

impl Kind {
    /// Whether coord can read it as a (possibly meaningless) small text file.
    pub fn readable(self) -> bool {
        matches!(self, Kind::Empty | Kind::Truncated | Kind::Binary)
    }

    /// Whether a rename can put a regular file in its place.
    pub fn replaceable(self) -> bool {
        self != Kind::Dir
    }
}

/// Create a hostile `path` of `kind`; a symlink points at `victim`.
pub fn plant(path: &Path, kind: Kind, victim: &Path) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    match kind {
        Kind::Empty => std::fs::write(path, b"").unwrap(),
        Kind::Truncated => std::fs::write(path, b"Agent: Gho").unwrap(),
        Kind::Binary => {
            let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
            std::fs::write(path, bytes).unwrap();
        }
        Kind::Huge => {
            // 100 MiB, sparse: coord must refuse it by size, never read it whole.
            let f = std::fs::File::create(path).unwrap();
            f.set_len(100 << 20).unwrap();
        }
        Kind::Fifo => rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap(),
        Kind::Dir => std::fs::create_dir(path).unwrap(),
        Kind::Socket => {
            drop(std::os::unix::net::UnixListener::bind(path).unwrap());
        }
        Kind::Symlink => std::os::unix::fs::symlink(victim, path).unwrap(),
    }
}

/// Set the modification time of `path` itself (not a link's target) `secs` seconds back,
/// whatever kind of file it is.
pub fn age_entry(path: &Path, secs: u64) {
    let ok = std::process::Command::new("touch")
        .arg("-h")
        .arg("-d")
        .arg(format!("{secs} seconds ago"))
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "touch -h failed on {}", path.display());
}

#[derive(Debug, Deserialize)]
struct StatusDoc {
    agents: Vec<AgentDoc>,
    locks: Vec<LockDoc>,
    unreadable: Vec<UnreadableDoc>,
}

#[derive(Debug, Deserialize)]
struct AgentDoc {
    agent: String,
}

#[derive(Debug, Deserialize)]
struct LockDoc {
    file: String,
    agent: String,
    state: String,
}

#[derive(Debug, Deserialize)]
struct UnreadableDoc {
    path: String,
    why: String,
}

#[test]
fn status_and_check_report_hostile_presences_and_go_on() {
    for kind in ALL {
        let bed = Bed::new();
        bed.run(Some("good"), &["presence", "fine"]);
        plant(&bed.at(".evil_presence"), kind, &bed.victim());
        let before = (bed.inside(), bed.outside());

        let out = bed.run(None, &["status", "--json"]);
        expect(&out, 0);
        let doc: StatusDoc = out.json();
        assert!(doc.agents.iter().any(|a| a.agent == "good"), "{kind:?}");
        let listed = doc.unreadable.iter().find(|u| u.path == ".evil_presence");
        if kind.readable() {
            assert!(listed.is_none(), "{kind:?}: {:?}", doc.unreadable);
            assert!(doc.agents.iter().any(|a| a.agent == "evil"), "{kind:?}");
        } else {
            let u = listed.unwrap_or_else(|| panic!("{kind:?} not listed: {:?}", doc.unreadable));
            assert!(!u.why.is_empty());
        }
        let human = bed.run(None, &["status"]);
        expect(&human, 0);
        let check = bed.run(Some("good"), &["check", "--json"]);
        expect(&check, 0);
        assert!(!check.stdout.contains("panicked"));
        assert_eq!(
            (bed.inside(), bed.outside()),
            before,
            "{kind:?}: status wrote"
        );
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_own_presence_is_replaced_or_refused_never_followed() {
    for kind in ALL {
        let bed = Bed::new();
        plant(&bed.at(".claude_presence"), kind, &bed.victim());
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md"]);
        if kind.replaceable() {
            expect(&out, 0);
            let text = std::fs::read_to_string(bed.at(".claude_presence")).unwrap();
            assert!(
                text.starts_with("Agent: claude\nstatus: ACTIVE\n"),
                "{kind:?}: {text}"
            );
            assert!(text.contains("lock_status: LOCKED"), "{kind:?}: {text}");
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
        } else {
            // A folder stands where the presence belongs: refused, and all or nothing.
            expect(&out, 1);
            assert!(out.stderr.contains("error: "), "{}", out.stderr);
            assert!(out.stderr.contains(".claude_presence"), "{}", out.stderr);
            assert!(!bed.at("a.md.lock.claude").exists(), "lock left behind");
            let presence = bed.run(Some("claude"), &["presence", "x"]);
            expect(&presence, 1);
            assert!(presence.stderr.contains(".claude_presence"));
        }
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_foreign_lock_file_of_any_kind_is_a_lock_and_a_stale_one_is_taken_over() {
    for kind in ALL {
        let bed = Bed::new();
        let lock = bed.at("a.md.lock.ghost");
        plant(&lock, kind, &bed.victim());
        let outside = bed.outside();

        // Fresh: a lock, whatever it is.
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        expect(&out, 3);
        assert!(out.stderr.contains("held by"), "{kind:?}: {}", out.stderr);
        let doc: StatusDoc = bed.run(None, &["status", "--json"]).json();
        assert!(
            doc.locks
                .iter()
                .any(|l| l.file == "a.md" && l.agent == "ghost" && l.state == "LIVE"),
            "{kind:?}: {doc:?}"
        );
        assert_eq!(
            doc.unreadable.iter().any(|u| u.path == "a.md.lock.ghost"),
            !kind.readable(),
            "{kind:?}: {doc:?}"
        );
        let check = bed.run(None, &["check", "--strict"]);
        expect(&check, 0);

        // An hour old, its holder without presence: stale.
        age_entry(&lock, 3600);
        let check = bed.run(None, &["check", "--strict"]);
        expect(&check, 4);
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        if kind == Kind::Dir {
            // A folder posing as a stale lock is a state coord cannot handle (exit 1): it is
            // neither taken over nor removed, and nothing is written.
            expect(&out, 1);
            assert!(out.stderr.contains("is a folder"), "{}", out.stderr);
            assert!(!bed.at("a.md.lock.claude").exists());
            let force = bed.run(Some("claude"), &["unlock", "a.md", "--force"]);
            expect(&force, 1);
            assert!(bed.at("a.md.lock.ghost").is_dir());
        } else {
            expect(&out, 0);
            assert!(
                out.stderr.contains("took over the stale lock"),
                "{kind:?}: {}",
                out.stderr
            );
            assert!(std::fs::symlink_metadata(&lock).is_err(), "{kind:?}");
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
        }
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
        let temps: Vec<String> = bed
            .inside()
            .into_keys()
            .filter(|k| k.ends_with(".tmp"))
            .collect();
        assert!(temps.is_empty(), "{kind:?}: {temps:?}");
    }
}

#[test]
fn unlock_force_removes_a_stale_hostile_lock_but_never_its_target() {
    for kind in [
        Kind::Empty,
        Kind::Binary,
        Kind::Fifo,
        Kind::Socket,
        Kind::Symlink,
    ] {
        let bed = Bed::new();
        let lock = bed.at("a.md.lock.ghost");
        plant(&lock, kind, &bed.victim());
        age_entry(&lock, 3600);
        let out = bed.run(Some("claude"), &["unlock", "a.md", "--force"]);
        expect(&out, 0);
        assert!(
            out.stdout.contains("Stale lock of"),
            "{kind:?}: {}",
            out.stdout
        );
        assert!(std::fs::symlink_metadata(&lock).is_err());
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_own_lock_file_is_replaced_or_refused() {
    for kind in ALL {
        let bed = Bed::new();
        let lock = bed.at("a.md.lock.claude");
        plant(&lock, kind, &bed.victim());
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        if kind.replaceable() {
            expect(&out, 0);
            let meta = std::fs::symlink_metadata(&lock).unwrap();
            assert!(meta.is_file(), "{kind:?}");
            let text = std::fs::read_to_string(&lock).unwrap();
            assert!(text.starts_with("Agent: claude\nlocked_at: "), "{text}");
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
            assert!(std::fs::symlink_metadata(&lock).is_err());
        } else {
            expect(&out, 1);
            assert!(out.stderr.contains("a.md.lock.claude"), "{}", out.stderr);
            let out = bed.run(Some("claude"), &["unlock", "a.md"]);
            expect(&out, 1);
            assert!(out.stderr.contains("a.md.lock.claude"), "{}", out.stderr);
        }
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

fn queue_dir_of(bed: &Bed, rel: &str) -> PathBuf {
    coord::layout::queue_dir(&bed.ws(), rel)
}

#[test]
fn hostile_wait_tickets_are_skipped_and_cleared() {
    for kind in ALL {
        let bed = Bed::new();
        let ticket = queue_dir_of(&bed, "a.md").join(coord::layout::ticket_name(1, "ghost"));
        plant(&ticket, kind, &bed.victim());
        let outside = bed.outside();
        // Not a live waiter: it stands in nobody's way.
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        expect(&out, 0);
        if kind != Kind::Dir {
            assert!(std::fs::symlink_metadata(&ticket).is_err(), "{kind:?} kept");
        }
        expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_queue_counter_never_stops_or_crashes_a_waiter() {
    let giant = "18446744073709551615\n";
    let mut cases: Vec<(String, Option<Kind>)> =
        ALL.iter().map(|k| (format!("{k:?}"), Some(*k))).collect();
    cases.push(("u64::MAX".into(), None));
    for (name, kind) in cases {
        let bed = Bed::new();
        let seq = bed.at(".coord/queue/seq");
        match kind {
            Some(k) => plant(&seq, k, &bed.victim()),
            None => {
                std::fs::create_dir_all(seq.parent().unwrap()).unwrap();
                std::fs::write(&seq, giant).unwrap();
            }
        }
        let outside = bed.outside();
        expect(&bed.run(Some("holder"), &["lock", "a.md"]), 0);
        let out = bed.run(Some("claude"), &["lock", "a.md", "--wait", "600ms"]);
        expect(&out, 3);
        assert!(
            out.stderr.contains("gave up waiting"),
            "{name}: {}",
            out.stderr
        );
        // The waiter left the line: nothing stands in the queue.
        let left: Vec<String> = bed
            .inside()
            .into_keys()
            .filter(|k| k.starts_with(".coord/queue/q-") && k.matches('/').count() == 3)
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
        expect(&bed.run(Some("holder"), &["unlock"]), 0);
        expect(&bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]), 0);
        assert_eq!(bed.outside(), outside, "{name}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_state_folder_is_refused_and_nothing_is_written_through_it() {
    for kind in ALL {
        let bed = Bed::new();
        let state = bed.at(".coord");
        // A symlinked `.coord` points at a real folder outside, which must stay empty.
        if kind == Kind::Symlink {
            std::os::unix::fs::symlink(bed.env.path("outside"), &state).unwrap();
        } else if kind == Kind::Dir {
            continue; // a folder is what `.coord` should be
        } else {
            plant(&state, kind, &bed.victim());
        }
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md"]);
        expect(&out, 1);
        assert!(out.stderr.contains(".coord"), "{kind:?}: {}", out.stderr);
        assert!(out.stderr.contains("hint: "), "{kind:?}: {}", out.stderr);
        assert!(!bed.at("a.md.lock.claude").exists());
        expect(&bed.run(Some("claude"), &["presence", "x"]), 1);
        expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 1);
        expect(&bed.run(None, &["status"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        assert!(tree(&bed.env.path("outside")).is_empty());
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_mutex_is_refused_with_its_name() {
    for kind in ALL {
        let bed = Bed::new();
        let mutex = bed.at(".coord/mutex");
        plant(&mutex, kind, &bed.victim());
        let outside = bed.outside();
        let out = bed.run(Some("claude"), &["lock", "a.md"]);
        if kind.readable() || kind == Kind::Huge {
            // Its content does not matter: only the kernel lock on it does.
            expect(&out, 0);
            expect(&bed.run(Some("claude"), &["unlock"]), 0);
        } else {
            expect(&out, 1);
            assert!(
                out.stderr.contains(".coord/mutex"),
                "{kind:?}: {}",
                out.stderr
            );
            assert!(!bed.at("a.md.lock.claude").exists());
            expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 1);
        }
        expect(&bed.run(None, &["status"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_queue_folder_fails_only_the_waiter() {
    for kind in [Kind::Empty, Kind::Fifo, Kind::Symlink] {
        let bed = Bed::new();
        let queue = bed.at(".coord/queue");
        std::fs::create_dir_all(bed.at(".coord")).unwrap();
        if kind == Kind::Symlink {
            std::os::unix::fs::symlink(bed.env.path("outside"), &queue).unwrap();
        } else {
            plant(&queue, kind, &bed.victim());
        }
        let outside = bed.outside();
        // Nobody waits: the queue is not needed.
        expect(&bed.run(Some("holder"), &["lock", "a.md"]), 0);
        let out = bed.run(Some("claude"), &["lock", "a.md", "--wait", "2s"]);
        expect(&out, 1);
        assert!(
            out.stderr.contains(".coord/queue"),
            "{kind:?}: {}",
            out.stderr
        );
        // The failed waiter left no WAITING status and no lock.
        let presence = std::fs::read_to_string(bed.at(".claude_presence")).unwrap_or_default();
        assert!(!presence.contains("WAITING"), "{presence}");
        assert!(!bed.at("a.md.lock.claude").exists());
        expect(&bed.run(Some("holder"), &["unlock"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        assert!(tree(&bed.env.path("outside")).is_empty());
    }
}

#[test]
fn dates_far_in_the_future_do_not_make_a_lock_eternal() {
    let bed = Bed::new();
    std::fs::write(
        bed.at("a.md.lock.ghost"),
        "Agent: Ghost\nlocked_at: 2999-01-01T00:00:00+00:00\nfile: a.md\n",
    )
    .unwrap();
    std::fs::write(
        bed.at(".ghost_presence"),
        "Agent: Ghost\nstatus: ACTIVE\nheartbeat: 2999-01-01T00:00:00+00:00\n",
    )
    .unwrap();
    let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
    expect(&out, 0);
    assert!(out.stderr.contains("in the future"), "{}", out.stderr);
}

#[test]
fn an_mtime_beyond_any_calendar_is_not_a_crash() {
    // tmpfs keeps any 64-bit mtime; ext4 clamps it. Use /dev/shm when it is there.
    let Ok(dir) = tempfile::Builder::new()
        .prefix("coord-test-")
        .tempdir_in("/dev/shm")
    else {
        return;
    };
    let root = dir.path();
    std::fs::write(root.join("a.md.lock.ghost"), "no date here\n").unwrap();
    std::fs::write(root.join(".ghost_presence"), "Agent: Ghost\n").unwrap();
    for name in ["a.md.lock.ghost", ".ghost_presence"] {
        let f = std::fs::File::options()
            .write(true)
            .open(root.join(name))
            .unwrap();
        let far = std::time::UNIX_EPOCH + Duration::from_secs(1 << 60);
        if f.set_modified(far).is_err() {
            return;
        }
    }
    let env = Env::new();
    for args in [
        &["status"][..],
        &["check", "--strict"],
        &["lock", "a.md", "--no-wait"],
    ] {
        let out = bounded(
            env.agent("claude")
                .env("COORD_DIR", root)
                .cwd(root)
                .args(args),
            LIMIT,
        );
        assert!(
            !out.stderr.contains("panicked") && out.code != Some(101),
            "{}: {}",
            out.shown,
            out.stderr
        );
    }
}

#[test]
fn escape_sequences_in_a_lock_file_never_reach_the_terminal() {
    let bed = Bed::new();
    std::fs::write(
        bed.at("a.md.lock.ghost"),
        "Agent: \u{1b}[2J\u{1b}]0;pwned\u{7}Ghost\nreason: \u{1b}[31mred\n",
    )
    .unwrap();
    let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
    expect(&out, 3);
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
    let status = bed.run(None, &["status"]);
    assert!(!status.stdout.contains('\u{1b}'), "{:?}", status.stdout);
    let check = bed.run(None, &["check"]);
    assert!(!check.stderr.contains('\u{1b}') && !check.stdout.contains('\u{1b}'));
}

#[test]
fn every_kind_at_once_in_one_workspace_still_gives_a_status() {
    // The whole zoo in one workspace: status lists each unreadable file once and goes on.
    let bed = Bed::new();
    for (i, kind) in ALL.iter().enumerate() {
        plant(&bed.at(&format!(".p{i}_presence")), *kind, &bed.victim());
        plant(&bed.at(&format!("a.md.lock.l{i}")), *kind, &bed.victim());
    }
    let out = bed.run(None, &["status", "--json"]);
    expect(&out, 0);
    let doc: StatusDoc = out.json();
    let unreadable = ALL.iter().filter(|k| !k.readable()).count();
    assert_eq!(doc.unreadable.len(), 2 * unreadable, "{:?}", doc.unreadable);
    assert_eq!(doc.locks.len(), ALL.len());
    assert!(doc.locks.iter().all(|l| l.state == "CONFLICT"));
    bed.assert_victim_untouched();
}
