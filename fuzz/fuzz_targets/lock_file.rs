//! A lock file of arbitrary bytes, read from disk as coord reads it, judged and shown.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use coord::clock;
use coord::lock;
use coord::presence::StateCache;
use coord::status::lock_view;
use coord::workspace::Workspace;
use libfuzzer_sys::fuzz_target;

fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        std::fs::canonicalize(dir).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let root = root();
    let ws = Workspace::at(root.clone());
    std::fs::write(root.join("f.md.lock.fuzz"), data).unwrap();
    std::fs::write(root.join(".fuzz_presence"), data).unwrap();
    let now = clock::parse_timestamp("2026-01-28T01:00:00+01:00").unwrap();
    let target = ws.resolve(root, "f.md").unwrap();
    let mut entries = lock::locks_of(&target);
    lock::classify(root, &mut entries, &mut StateCache::default(), &now);
    for e in &entries {
        let _ = (e.holder(), e.ttl(), e.token(), e.process(), e.reason());
        let _ = lock::describe_problem(e);
        let _ = lock_view(e, &ws, &now, &coord::worktree::trees(root));
    }
});
