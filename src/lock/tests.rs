//! Reading, judging and taking over lock files; `acquire` and the wait queue on real folders (all
//! or nothing, refreshes and newcomers refused behind earlier waiters are pinned by tests/cli
//! `locks` and `waiting`).

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::clock::Wait;
use crate::error::Error;
use crate::host;
use crate::presence::StateCache;
use crate::workspace::{AgentId, Target, Workspace};

fn entry(file: &str, agent: &str, text: &str) -> LockEntry {
    let path = PathBuf::from(format!("/nonexistent/{file}.lock.{agent}"));
    LockEntry::new(path, file.into(), agent.into(), Some(text.into()))
}

/// `entries` judged as of `now`, in a root with no presence.
fn judge(mut entries: Vec<LockEntry>, now: &Timestamp) -> Vec<LockEntry> {
    let root = Path::new("/nonexistent");
    classify(root, &mut entries, &mut StateCache::default(), now);
    entries
}

fn states(entries: Vec<LockEntry>, now: &Timestamp) -> Vec<LockState> {
    judge(entries, now).iter().map(|e| e.state).collect()
}

/// Age against the TTL (inclusive bounds, either way in time) decides, with no presence to
/// keep the holder ACTIVE; a lock dated beyond its TTL in the future counts as expired.
#[test]
fn the_ttl_decides_staleness_both_ways_in_time() {
    let now = clock::parse_timestamp("2026-01-28T01:10:00+00:00").unwrap();
    let cases = [
        ("2026-01-28T01:00:00+00:00", "", LockState::Stale),
        ("2026-01-28T01:08:00+00:00", "", LockState::Live),
        ("2026-01-28T01:00:00+00:00", "ttl: 1h\n", LockState::Live),
        ("2026-01-28T01:05:00+00:00", "", LockState::Live),
        ("2026-01-28T01:04:59+00:00", "", LockState::Stale),
        ("2026-01-28T01:11:00+00:00", "", LockState::Live),
        ("2026-01-28T01:15:00+00:00", "", LockState::Live),
        ("2026-01-28T01:15:01+00:00", "", LockState::Stale),
        ("2999-01-01T00:00:00+00:00", "", LockState::Stale),
    ];
    for (locked_at, ttl, want) in cases {
        let text = format!("Agent: X\nlocked_at: {locked_at}\n{ttl}");
        let e = judge(vec![entry("a", "x", &text)], &now).remove(0);
        assert_eq!(e.state, want, "{locked_at} {ttl}");
        if locked_at.starts_with("2999") {
            assert!(e.stale_why.as_deref().unwrap().contains("future"));
        }
    }
}

/// Two live locks on one file conflict; a lock whose process is gone is stale at once.
#[test]
fn conflicts_and_dead_processes_are_judged() {
    let now = clock::parse_timestamp("2026-01-28T01:10:00+00:00").unwrap();
    let entries = vec![
        entry("a", "claude", "locked_at: 2026-01-28T01:09:00+00:00\n"),
        entry("a", "gemini", "locked_at: 2026-01-28T01:09:30+00:00\n"),
        entry("b", "x", "locked_at: 2026-01-28T01:09:30+00:00\n"),
    ];
    use LockState::{Conflict, Live};
    assert_eq!(states(entries, &now), [Conflict, Conflict, Live]);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let now = clock::now();
    let (at, host) = (clock::format_timestamp(&now), host::hostname());
    let text = format!("locked_at: {at}\npid: {pid}\nhost: {host}\n");
    let entries = vec![entry("a", "claude", &text)];
    assert_eq!(states(entries, &now), [LockState::Stale]);
}

/// An old lock `F.lock.x` planted in `dir`, as read.
fn real_entry(dir: &Path) -> LockEntry {
    let path = dir.join("F.lock.x");
    std::fs::write(&path, "Agent: X\nlocked_at: 2026-01-28T01:00:00+00:00\n").unwrap();
    LockEntry::read(path, "F".into(), "x".into()).unwrap()
}

/// A lock unchanged since it was judged (or gone already) is taken over, leaving nothing in its
/// folder; one renewed or touched (a hand-made lock is refreshed so) in between stands alone.
/// #45: where hard links do not exist (SMB), the renewed lock moved aside is put back as a copy.
#[test]
fn take_over_removes_only_a_lock_unchanged_since_it_was_judged() {
    let renew = |p: &Path| std::fs::write(p, "Agent: X\nlocked_at: 2026-01-28T01:09:59+00:00\n");
    let touch = |p: &Path| {
        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        f.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
            .unwrap();
    };
    type Change<'a> = &'a dyn Fn(&Path);
    let cases: [(&str, Change, bool, bool); 5] = [
        ("unchanged", &|_| {}, true, true),
        ("gone", &|p| std::fs::remove_file(p).unwrap(), true, true),
        ("renewed", &|p| renew(p).unwrap(), true, false),
        ("renewed", &|p| renew(p).unwrap(), false, false),
        ("touched", &touch, true, false),
    ];
    for (what, change, hard_links, taken) in cases {
        let dir = tempfile::tempdir().unwrap();
        let e = real_entry(dir.path());
        change(&e.lock_path);
        let now = std::fs::read(&e.lock_path).ok();
        let got = if hard_links {
            take_over(dir.path(), &e)
        } else {
            crate::fsutil::raw::without_hard_links(|| take_over(dir.path(), &e))
        };
        let case = format!("{what} (hard links: {hard_links})");
        assert_eq!(got.unwrap(), taken, "{case}");
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, usize::from(!taken), "{case}");
        if !taken {
            assert_eq!(std::fs::read(&e.lock_path).ok(), now, "{case}");
        }
    }
}

#[test]
fn take_over_fails_when_the_lock_cannot_be_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let e = real_entry(dir.path());
    let chattr = |flag| {
        std::process::Command::new("chattr")
            .args([flag])
            .arg(&e.lock_path)
            .status()
    };
    // An immutable file cannot be renamed, even by root (ext4, xfs, btrfs; not tmpfs).
    if !chattr("+i").is_ok_and(|s| s.success()) {
        eprintln!("skipped: `chattr +i` is not available on this filesystem");
        return;
    }
    let result = take_over(dir.path(), &e);
    let _ = chattr("-i");
    assert!(
        result.is_err(),
        "a lock still in place was reported taken over"
    );
    assert!(e.lock_path.exists());
}

#[test]
fn the_index_reads_back_every_path_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let long = format!("deep/{}/x.txt", "n".repeat(230));
    let paths = [
        "a.md",
        "src/lib.rs",
        "100% =sure/%2F.md",
        "node_modules/a.lock.b/c.js",
        long.as_str(),
    ];
    for p in paths {
        index::note(root, p, "claude").unwrap();
        // A second note of the same lock changes nothing.
        index::note(root, p, "claude").unwrap();
    }
    index::note(root, "a.md", "gemini").unwrap();
    let mut got = index::entries(root);
    got.sort();
    let mut want: Vec<(String, String)> = (paths.iter())
        .map(|p| (p.to_string(), "claude".to_string()))
        .collect();
    want.push(("a.md".into(), "gemini".into()));
    want.sort();
    assert_eq!(got, want);
    for p in paths {
        index::forget(root, p, "claude");
    }
    assert_eq!(index::entries(root), [("a.md".into(), "gemini".into())]);
    // An entry planted to make a reader look outside the workspace is not read.
    let held = crate::layout::held_dir(&crate::worktree::shared_root(root));
    std::fs::write(held.join("..%2Fetc%2Fx.held.eve"), "").unwrap();
    std::fs::write(held.join("=0123.held.eve"), "/etc/x").unwrap();
    assert_eq!(index::entries(root).len(), 1);
}

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = std::fs::canonicalize(dir.path()).unwrap();
    let (ws, _) = Workspace::init(&root).unwrap();
    (dir, ws)
}

fn agent(name: &str) -> AgentId {
    AgentId::parse(name).unwrap()
}

fn target(ws: &Workspace, rel: &str) -> Target {
    std::fs::write(ws.root().join(rel), "text\n").unwrap();
    ws.target_from_rel(rel).unwrap()
}

fn request(who: &str, targets: Vec<Target>) -> LockRequest {
    LockRequest {
        agent: agent(who),
        targets,
        wait: Wait::For(Duration::ZERO),
        ttl: Duration::from_secs(300),
        backup: false,
        reason: None,
        owner: None,
        claims: Vec::new(),
    }
}

fn acquire(ws: &Workspace, req: &LockRequest) -> crate::Result<Acquisition> {
    super::acquire(ws, req, &Reach::HERE, &mut |_| {})
}

#[test]
fn queue_numbers_only_grow_and_leaving_removes_the_tickets() {
    let (_dir, ws) = workspace();
    let a = target(&ws, "a.md");
    let _mutex = ws.lock_mutex().unwrap();
    let first = queue::register(ws.root(), &agent("one"), std::slice::from_ref(&a), &[]).unwrap();
    // A damaged counter cannot let a newcomer jump the line: tickets still queued count too.
    let seq = crate::layout::queue_seq(&crate::worktree::shared_root(ws.root()));
    std::fs::write(seq, "garbage").unwrap();
    let second = queue::register(ws.root(), &agent("two"), std::slice::from_ref(&a), &[]).unwrap();
    assert!(second.seq > first.seq, "{} > {}", second.seq, first.seq);
    let line = || -> Vec<String> {
        let tickets = queue::live_tickets(ws.root(), &a, None).into_iter();
        tickets.map(|t| t.agent).collect()
    };
    assert_eq!(line(), ["one", "two"], "oldest first");
    queue::leave(&first);
    assert!(first.paths.iter().all(|p| !p.exists()));
    assert_eq!(line(), ["two"]);
    queue::leave(&second);
    assert!(queue::live_tickets(ws.root(), &a, None).is_empty());
}

#[test]
fn the_ticket_just_ahead_is_the_last_one_numbered_before_ours() {
    let (_dir, ws) = workspace();
    let a = target(&ws, "a.md");
    let _mutex = ws.lock_mutex().unwrap();
    let tickets: Vec<_> = ["one", "two", "three"]
        .iter()
        .map(|id| queue::register(ws.root(), &agent(id), std::slice::from_ref(&a), &[]).unwrap())
        .collect();
    let dir = queue::dirs(ws.root(), std::slice::from_ref(&a)).remove(0);
    for open in [false, true] {
        let ahead = queue::ticket_before(&dir, tickets[2].seq, open).unwrap();
        assert_eq!(ahead, tickets[1].paths[0], "open: {open}");
        assert!(queue::ticket_stands(&ahead, open));
        assert_eq!(queue::ticket_before(&dir, tickets[0].seq, open), None);
    }
    // The one just ahead leaves: it no longer stands, and the one before it is next.
    queue::leave(&tickets[1]);
    assert!(!queue::ticket_stands(&tickets[1].paths[0], true));
    assert!(!queue::ticket_stands(&tickets[1].paths[0], false));
    assert_eq!(
        queue::ticket_before(&dir, tickets[2].seq, true),
        Some(tickets[0].paths[0].clone())
    );
}

/// A wait that has run out before the first look never waits, so it closes no cycle: it reports
/// the holder, as `--no-wait` does, not a deadlock, though the holder waits for a file of ours.
#[test]
fn a_wait_run_out_before_the_first_look_reports_the_holder_not_a_deadlock() {
    let (_dir, ws) = workspace();
    let (f, g) = (target(&ws, "f.md"), target(&ws, "g.md"));
    acquire(&ws, &request("claude", vec![g.clone()])).unwrap();
    acquire(&ws, &request("gemini", vec![f.clone()])).unwrap();
    let _gemini_waits_for_g = {
        let _mutex = ws.lock_mutex().unwrap();
        queue::register(ws.root(), &agent("gemini"), std::slice::from_ref(&g), &[]).unwrap()
    };
    let mut req = request("claude", vec![f]);
    req.wait = Wait::For(Duration::from_secs(30));
    let err = acquire(&ws, &req).unwrap_err();
    assert!(matches!(err, Error::Deadlock { .. }), "{err:?}");
    // Over before the first try has even read the locks.
    req.wait = Wait::For(Duration::from_nanos(1));
    let err = acquire(&ws, &req).unwrap_err();
    assert!(
        matches!(err, Error::WaitTimedOut { ref holder, .. } if holder == "gemini"),
        "{err:?}"
    );
    assert!(!ws.root().join("f.md.lock.claude").exists());
}

#[test]
fn lock_and_unlock_list_a_folder_once_however_many_files_it_holds() {
    let (_dir, ws) = workspace();
    std::fs::create_dir(ws.root().join("big")).unwrap();
    let targets: Vec<Target> = (0..300)
        .map(|i| target(&ws, &format!("big/f{i:03}")))
        .collect();
    let before = folder_listings();
    acquire(&ws, &request("claude", targets.clone())).unwrap();
    let after_lock = folder_listings();
    // One try: the folder once to judge its locks, once more to look for locks made by hand
    // meanwhile; not once per file.
    assert_eq!(after_lock - before, 2);
    let released = release(&ws, &agent("claude"), Some(&targets), false).unwrap();
    assert_eq!(released.len(), 300);
    assert_eq!(folder_listings() - after_lock, 1);
    // The index followed: one entry per lock while held, none after.
    let held = crate::layout::held_dir(&crate::worktree::shared_root(ws.root()));
    let entries = std::fs::read_dir(held).unwrap().flatten();
    let held_entry = |e: &std::fs::DirEntry| e.file_name().to_string_lossy().contains(".held.");
    assert_eq!(entries.filter(held_entry).count(), 0);
}
