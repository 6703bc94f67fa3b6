//! Tests of the writer.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::*;
use crate::{host, layout};

/// A FIFO made at `path` (by `mkfifo(1)`: rustix offers no `mkfifo` on macOS).
pub(crate) fn fifo_at(path: &Path) -> PathBuf {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success(), "mkfifo {}", path.display());
    path.to_path_buf()
}

fn entries(dir: &Path) -> usize {
    fs::read_dir(dir).unwrap().count()
}

#[test]
fn create_new_never_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.lock.x");
    assert!(create_new(&p, b"one").unwrap());
    assert!(!create_new(&p, b"two").unwrap());
    assert_eq!(fs::read(&p).unwrap(), b"one");
    assert_eq!(entries(dir.path()), 1, "no temp left");
}

#[test]
fn capped_reads_give_every_byte_whatever_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    // Around the one-read limit, and a file with no bytes.
    for len in [0, 1, 4095, 4096, 65535, 65536, 65537, 200_000] {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        fs::write(&f, &bytes).unwrap();
        assert_eq!(read_capped(&f, 1 << 20).unwrap(), bytes, "{len} bytes");
        if len > 0 {
            let over = read_capped(&f, len as u64 - 1);
            assert!(over.is_err(), "{len} bytes over the cap");
        }
    }
    // A file whose size says 0 but that has content (the kernel's own files) reads whole.
    let stat = read_capped(Path::new("/proc/self/stat"), 1 << 20).unwrap();
    assert!(stat.ends_with(b"\n") && stat.len() > 50, "{stat:?}");
}

#[test]
fn touch_refuses_a_fifo_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo_at(&dir.path().join("ticket"));
    assert!(touch(&fifo).is_err(), "no reader: must not block");
    assert!(touch(dir.path()).is_err());
}

#[test]
fn old_fuse_leftovers_are_swept_and_fresh_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join(".fuse_hidden0000000a00000001");
    let fresh = dir.path().join(".fuse_hidden0000000b00000002");
    fs::write(&old, b"Agent: x\n").unwrap();
    fs::write(&fresh, b"Agent: y\n").unwrap();
    let f = OpenOptions::new().write(true).open(&old).unwrap();
    let two_minutes_ago = SystemTime::now() - Duration::from_secs(120);
    f.set_modified(two_minutes_ago).unwrap();
    assert_eq!(sweep_temps(dir.path()), 1);
    assert!(!old.exists());
    assert!(fresh.exists(), "one still in use is left alone");
}

#[test]
fn sweep_removes_temps_of_dead_processes_only() {
    let dir = tempfile::tempdir().unwrap();
    let mine = temp_in(dir.path()).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let orphan = dir.path().join(format!(
        "{}abc123{}",
        layout::temp_prefix(host::host_tag(), dead),
        layout::TEMP_SUFFIX
    ));
    fs::write(&orphan, b"partial").unwrap();
    assert_eq!(sweep_temps(dir.path()), 1);
    assert!(!orphan.exists());
    assert!(mine.path().exists());
}

#[test]
fn append_adds_whole_lines_and_refuses_links() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.md");
    append_line(&f, b"one").unwrap();
    fs::write(&f, b"one\nhand-written, no newline").unwrap();
    append_line_durable_numbered(&f, b"two\n").unwrap();
    let text = fs::read_to_string(&f).unwrap();
    assert_eq!(text, "one\nhand-written, no newline\ntwo\n");
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    assert!(append_line(&link, b"x").is_err());
    assert!(append_line(dir.path(), b"x").is_err());
    assert!(fs::read_to_string(&f).unwrap().ends_with("two\n"));
}

#[test]
fn append_durable_only_appends_to_an_existing_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("conversation.md");
    let missing = append_durable(&f, b"x");
    assert!(missing.is_err(), "a missing file is not created");
    fs::write(&f, b"one\n").unwrap();
    append_durable(&f, b"two\n").unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"one\ntwo\n");
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    let through = append_durable(&link, b"three\n");
    assert!(through.is_err(), "a link is not followed");
    assert_eq!(fs::read(&f).unwrap(), b"one\ntwo\n");
}

#[test]
fn replace_over_an_existing_file_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    fs::write(&f, b"old").unwrap();
    let other = dir.path().join("hardlink");
    fs::hard_link(&f, &other).unwrap();
    replace(&f, b"new").unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"new");
    let kept = fs::read(&other).unwrap();
    assert_eq!(kept, b"old", "other links keep the old content");
    let left = |n, why: &str| assert_eq!(entries(dir.path()), n, "{why}, no temp left");
    left(2, "the file and its other link");
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join("inside"), b"kept").unwrap();
    assert!(replace(&sub, b"x").is_err(), "a folder is never replaced");
    assert_eq!(fs::read(sub.join("inside")).unwrap(), b"kept");
    left(3, "the folder is back at its name");
    // Anything else at the path (a FIFO here) is replaced, as a rename would.
    let fifo = fifo_at(&dir.path().join("fifo"));
    replace(&fifo, b"now a file").unwrap();
    assert_eq!(fs::read(&fifo).unwrap(), b"now a file");
    left(4, "the FIFO replaced");
}

#[test]
fn same_regular_files_compares_bytes_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for p in [&a, &b] {
        fs::write(p, b"same").unwrap();
        fs::set_permissions(p, fs::Permissions::from_mode(0o644)).unwrap();
    }
    assert!(same_regular_files(&a, &b));
    fs::write(&b, b"diff").unwrap();
    assert!(!same_regular_files(&a, &b));
    fs::write(&b, b"same").unwrap();
    fs::set_permissions(&b, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!same_regular_files(&a, &b));
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    assert!(!same_regular_files(&a, &link), "a link is never followed");
    assert!(!same_regular_files(&a, &dir.path().join("missing")));
}

#[test]
fn replace_durable_keeps_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("script.sh");
    fs::write(&f, b"old").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o751)).unwrap();
    replace_durable(&f, b"new").unwrap();
    assert_eq!(fs::read(&f).unwrap(), b"new");
    let mode = fs::metadata(&f).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o751);
}

#[test]
fn a_temporary_file_that_cannot_be_made_is_named_by_its_folder_alone() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let e = temp_in(&gone).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    let text = e.to_string();
    assert!(text.contains("No such file or directory"), "{text}");
    let named = text.contains("at path") || text.contains(".tmp");
    assert!(!named, "{text}");
}

#[test]
fn a_staged_replace_leaves_no_temporary_file_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let (stage, target_dir) = (dir.path().join("stage"), dir.path().join("queue"));
    for d in [&stage, &target_dir] {
        fs::create_dir(d).unwrap();
    }
    let path = target_dir.join("00000000000000000001.claude");
    replace_staged(&path, &stage, b"first\n", false).unwrap();
    replace_staged(&path, &stage, b"second\n", false).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second\n");
    assert_eq!(entries(&stage), 0, "nothing left in the stage");
    assert_eq!(entries(&target_dir), 1, "only the file");
    let gone = dir.path().join("missing");
    assert!(replace_staged(&path, &gone, b"x", false).is_err());
    assert_eq!(fs::read(&path).unwrap(), b"second\n", "unchanged on error");
}

#[test]
fn a_link_in_place_of_a_state_folder_is_found_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join(".coord");
    let outside = dir.path().join("outside");
    fs::create_dir_all(state.join("queue")).unwrap();
    fs::create_dir_all(outside.join("q-1")).unwrap();
    let (history, q1) = (state.join("history"), state.join("queue/q-1"));
    for link in [&history, &q1] {
        std::os::unix::fs::symlink(&outside, link).unwrap();
    }
    let log = state.join("history/events.jsonl");
    // Below `.coord/` only; the path's own last component only when asked.
    for (path, with_self, want) in [
        (log.clone(), false, Some(history.clone())),
        (history.clone(), false, None),
        (history.clone(), true, Some(history.clone())),
        (q1.join("t"), false, Some(q1.clone())),
        (state.join("queue/x"), false, None),
        (outside.join("q-1/t"), false, None),
    ] {
        assert_eq!(linked_state_folder(&path, with_self), want, "{path:?}");
    }
    // Nothing is made, listed or removed through it.
    assert!(append_line(&log, b"x").is_err());
    assert!(create_new(&state.join("queue/q-1/t"), b"x").is_err());
    assert!(read_dir(state.join("history")).is_err());
    assert!(list_names(&state.join("queue/q-1")).is_err());
    assert!(ensure_dir(&state.join("history/sub")).is_err());
    assert_eq!(entries(&outside), 1, "written outside");
    // Noted for the command to say (another test's link may have been noted first).
    let (_, said) = take_link_warning().unwrap();
    assert!(said.contains("is a symlink"), "{said}");
}
