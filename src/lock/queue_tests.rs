//! Unit tests of `lock::acquire` and the wait queue, on real folders (all or nothing, refreshes
//! and newcomers refused behind earlier waiters are pinned by tests/cli `locks` and `waiting`).
#![allow(clippy::disallowed_methods)] // plants hand-made files on purpose

use std::path::PathBuf;
use std::time::Duration;

use crate::clock::Wait;
use crate::error::Error;
use crate::lock::queue;
use crate::lock::{self, LockRequest};
use crate::workspace::{AgentId, Target, Workspace};

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
        runs_in: None,
    }
}

fn acquire(ws: &Workspace, req: &LockRequest) -> crate::Result<lock::Acquisition> {
    lock::acquire(ws, req, &lock::Reach::HERE, &mut |_| {})
}

#[test]
fn queue_numbers_only_grow_and_leaving_removes_the_tickets() {
    let (_dir, ws) = workspace();
    let a = target(&ws, "a.md");
    let _mutex = ws.lock_mutex().unwrap();
    let first = queue::register(ws.root(), &agent("one"), std::slice::from_ref(&a), &[]).unwrap();
    // A damaged counter cannot let a newcomer jump the line: tickets still queued count too.
    std::fs::write(
        crate::layout::queue_seq(&crate::worktree::shared_root(ws.root())),
        "garbage",
    )
    .unwrap();
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
    let before = lock::folder_listings();
    acquire(&ws, &request("claude", targets.clone())).unwrap();
    let after_lock = lock::folder_listings();
    // One try: the folder once to judge its locks, once more to look for locks made by hand
    // meanwhile; not once per file.
    assert_eq!(after_lock - before, 2);
    let released = lock::release(&ws, &agent("claude"), Some(&targets), false).unwrap();
    assert_eq!(released.len(), 300);
    assert_eq!(lock::folder_listings() - after_lock, 1);
    // The index followed: one entry per lock while held, none after.
    let held = crate::layout::held_dir(&crate::worktree::shared_root(ws.root()));
    let entries = std::fs::read_dir(held).unwrap().flatten();
    let held_entry = |e: &std::fs::DirEntry| e.file_name().to_string_lossy().contains(".held.");
    assert_eq!(entries.filter(held_entry).count(), 0);
}
