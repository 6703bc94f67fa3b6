//! A full disk (a small tmpfs, as root): every writer leaves whole files and a clear error, and
//! the next command completes what a refused one started.

use std::process::Command;

use crate::rigs::Tmpfs;

fn run_with_stdin(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    out
}

/// On a full disk a `collab write` is whole or absent (no torn line), and its error names the
/// collaboration file and says the disk is full.
#[test]
fn a_collab_write_on_a_full_disk_leaves_no_torn_line() {
    let Some(fs) = Tmpfs::mount("size=512k") else {
        return;
    };
    let ok = run_with_stdin(fs.coord("a").args(["collab", "write", "-"]), b"first");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let before = std::fs::read(fs.path("collaboration_file.txt")).unwrap();
    fs.fill();
    std::fs::OpenOptions::new()
        .write(true)
        .open(fs.path("filler"))
        .unwrap()
        .set_len(std::fs::metadata(fs.path("filler")).unwrap().len() - 8192)
        .unwrap();
    let big = vec![b'x'; 200 * 1024];
    let out = run_with_stdin(fs.coord("a").args(["collab", "write", "-"]), &big);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        std::fs::read(fs.path("collaboration_file.txt")).unwrap(),
        before,
        "a torn line stayed"
    );
    assert!(stderr.contains("collaboration_file.txt"), "{stderr}");
    assert!(stderr.contains("disk is full"), "{stderr}");
}

/// On a full disk `coord write` names FILE (not its temporary copy) and says the disk is full;
/// FILE is unchanged.
#[test]
fn a_write_on_a_full_disk_names_the_file() {
    let Some(fs) = Tmpfs::mount("size=512k") else {
        return;
    };
    std::fs::write(fs.path("F"), "old\n").unwrap();
    let out = fs
        .coord("a")
        .args(["lock", "F", "--no-backup"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs.fill();
    let out = run_with_stdin(fs.coord("a").args(["write", "F"]), &vec![b'y'; 300 * 1024]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/F`"), "{stderr}");
    assert!(!stderr.contains(".coord-"), "{stderr}");
    assert!(stderr.contains("disk is full"), "{stderr}");
    assert_eq!(std::fs::read_to_string(fs.path("F")).unwrap(), "old\n");
}

/// On a full disk a lock or a message that cannot be written is named by its own file, never by
/// the temporary copy it was written into first.
#[test]
fn a_lock_and_a_message_on_a_full_disk_name_their_own_file() {
    let Some(fs) = Tmpfs::mount("size=512k") else {
        return;
    };
    for agent in ["a", "b"] {
        let out = fs.coord(agent).args(["presence"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    fs.fill();
    let out = fs.coord("a").args(["lock", "x.txt"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("x.txt.lock.a`"), "{stderr}");
    assert!(
        !stderr.contains(".coord-") && !stderr.contains("at path"),
        "{stderr}"
    );
    let out = run_with_stdin(
        fs.coord("a").args(["msg", "send", "b", "-"]),
        &vec![b'm'; 100 * 1024],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(".msg`"), "{stderr}");
    assert!(
        !stderr.contains(".coord-") && !stderr.contains("at path"),
        "{stderr}"
    );
    assert!(stderr.contains("disk is full"), "{stderr}");
    assert!(!fs.path("x.txt.lock.a").exists());
}

/// A `dialogue say` that cannot finish after its message went in (no inode left for the new
/// `current-turn.txt`) leaves the dialogue as a crash at that point would: the next `say`
/// completes it and goes on, instead of declaring the conversation corrupted.
#[test]
fn a_say_on_a_full_disk_leaves_a_dialogue_the_next_say_completes() {
    let Some(fs) = Tmpfs::mount("size=4m,nr_inodes=64") else {
        return;
    };
    let out = fs
        .coord("x")
        .args(["dialogue", "init", "--topic", "t"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One inode left: `lock.txt` takes it, the message is appended, the turn cannot be written.
    fs.fill_inodes(1);
    let out = fs
        .coord("x")
        .args(["dialogue", "say", "--as", "AGENT-1", "hello"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..8 {
        let _ = std::fs::remove_file(fs.path(&format!("inode-{i}")));
    }
    let out = fs
        .coord("x")
        .args(["dialogue", "say", "--as", "AGENT-2", "hi back"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let conv = std::fs::read_to_string(fs.path("agent-dialogue/conversation.md")).unwrap();
    assert!(!conv.contains("[ERROR]"), "{conv}");
    assert!(conv.contains("hello") && conv.contains("hi back"), "{conv}");
    assert_eq!(conv.matches("## Message #").count(), 2, "{conv}");
}

/// `startup` on a full disk (no inode left for the presence once the row is written) is all
/// or nothing: it fails and leaves no `online` row on the stamp card.
#[test]
fn startup_on_a_full_disk_leaves_no_online_row() {
    let Some(fs) = Tmpfs::mount("size=4m,nr_inodes=64") else {
        return;
    };
    let first = fs.coord("a").args(["startup"]).output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let shut = fs.coord("a").args(["shutdown"]).output().unwrap();
    assert!(
        shut.status.success(),
        "{}",
        String::from_utf8_lossy(&shut.stderr)
    );
    let rows = || {
        std::fs::read_dir(fs.path(".coord/partners"))
            .unwrap()
            .count()
    };
    let before = rows();
    fs.fill_inodes(1);
    let out = fs.coord("a").args(["startup"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(rows(), before, "a row stayed behind");
    let partners = fs.coord("a").args(["partners", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&partners.stdout);
    assert!(!text.contains("\"online\""), "{text}");
}
