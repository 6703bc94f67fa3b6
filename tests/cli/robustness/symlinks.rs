//! Symlinks and traversal: names coord writes (`FILE.bak`, `FILE.lock.<agent>`, temporary
//! files) planted as symlinks to a victim never lead coord to the victim, and FILE arguments
//! or agent names that try to leave the workspace are refused (exit 2) before a byte is
//! written. The folder around the workspace is compared byte for byte before and after.

use crate::planted::{
    ARCHIVE, Bed, NEW_WEB, PRECIOUS, TURN, age_entry, expect, one_review, one_said, two_messages,
};

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn temp_like(pid: u32, tail: &str) -> String {
    format!(
        "{}{tail}{}",
        coord::layout::temp_prefix(coord::host::host_tag(), pid),
        coord::layout::TEMP_SUFFIX
    )
}

#[test]
fn a_backup_planted_as_a_symlink_is_replaced_never_written_through() {
    let bed = Bed::new();
    std::os::unix::fs::symlink(bed.victim(), bed.at("a.md.bak")).unwrap();
    // A dangling one too: following it would create a file outside.
    std::fs::write(bed.at("b.md"), "bee\n").unwrap();
    std::os::unix::fs::symlink(bed.env.path("outside/created"), bed.at("b.md.bak")).unwrap();
    let outside = bed.outside();
    let out = bed.run(Some("claude"), &["lock", "a.md", "b.md"]);
    expect(&out, 0);
    for (bak, content) in [("a.md.bak", "hello\n"), ("b.md.bak", "bee\n")] {
        let meta = std::fs::symlink_metadata(bed.at(bak)).unwrap();
        assert!(meta.is_file(), "{bak} is a regular file now");
        assert_eq!(std::fs::read_to_string(bed.at(bak)).unwrap(), content);
    }
    expect(&bed.run(Some("claude"), &["unlock"]), 0);
    assert_eq!(bed.outside(), outside);
    bed.assert_victim_untouched();
}

#[test]
fn lock_files_planted_as_symlinks_never_touch_their_targets() {
    let bed = Bed::new();
    // Own lock name → victim; a foreign lock name → victim; a dangling one → outside.
    std::os::unix::fs::symlink(bed.victim(), bed.at("a.md.lock.claude")).unwrap();
    std::os::unix::fs::symlink(bed.victim(), bed.at("b.md.lock.ghost")).unwrap();
    std::fs::write(bed.at("b.md"), "bee\n").unwrap();
    std::os::unix::fs::symlink(bed.env.path("outside/made"), bed.at("c.md.lock.claude")).unwrap();
    let outside = bed.outside();

    // lock over our own planted link: the link is replaced by a real record.
    expect(&bed.run(Some("claude"), &["lock", "a.md", "c.md"]), 0);
    for lock in ["a.md.lock.claude", "c.md.lock.claude"] {
        assert!(std::fs::symlink_metadata(bed.at(lock)).unwrap().is_file());
    }
    // unlock removes the record, not what a link pointed at.
    expect(&bed.run(Some("claude"), &["unlock"]), 0);

    // A foreign link is a lock (fresh), then stale (aged): unlock --force and takeover
    // remove the link only.
    expect(&bed.run(Some("claude"), &["lock", "b.md", "--no-wait"]), 3);
    expect(&bed.run(Some("claude"), &["unlock", "b.md"]), 3);
    age_entry(&bed.at("b.md.lock.ghost"), 3600);
    expect(&bed.run(Some("claude"), &["unlock", "b.md", "--force"]), 0);
    std::os::unix::fs::symlink(bed.victim(), bed.at("b.md.lock.ghost")).unwrap();
    age_entry(&bed.at("b.md.lock.ghost"), 3600);
    let out = bed.run(Some("claude"), &["lock", "b.md", "--no-wait"]);
    expect(&out, 0);
    assert!(
        out.stderr.contains("took over the stale lock of ghost"),
        "{}",
        out.stderr
    );
    expect(&bed.run(Some("claude"), &["unlock"]), 0);

    assert_eq!(bed.outside(), outside);
    bed.assert_victim_untouched();
    assert!(!bed.env.path("outside/made").exists());
}

#[test]
fn temporary_names_planted_as_symlinks_are_swept_as_links_only() {
    let bed = Bed::new();
    let pid = dead_pid();
    std::fs::create_dir_all(bed.at(".coord/queue")).unwrap();
    let planted = [
        bed.at(&temp_like(pid, "aaaaaa")),
        bed.at(&format!(".coord/{}", temp_like(pid, "bbbbbb"))),
        bed.at(&format!(".coord/queue/{}", temp_like(pid, "cccccc"))),
    ];
    for p in &planted {
        std::os::unix::fs::symlink(bed.victim(), p).unwrap();
    }
    // And one pointing at a folder outside, which a careless sweep could empty.
    std::fs::write(bed.env.path("outside/keep"), "keep\n").unwrap();
    let dir_link = bed.at(&temp_like(pid, "dddddd"));
    std::os::unix::fs::symlink(bed.env.path("outside"), &dir_link).unwrap();
    let outside = bed.outside();

    expect(&bed.run(Some("claude"), &["lock", "a.md"]), 0);
    expect(&bed.run(Some("claude"), &["unlock"]), 0);
    for p in planted.iter().chain([&dir_link]) {
        assert!(
            std::fs::symlink_metadata(p).is_err(),
            "{} swept",
            p.display()
        );
    }
    assert_eq!(bed.outside(), outside);
    bed.assert_victim_untouched();
    assert_eq!(
        std::fs::read_to_string(bed.env.path("outside/keep")).unwrap(),
        "keep\n"
    );
}

#[test]
fn file_arguments_that_leave_the_workspace_are_refused_before_anything_is_written() {
    let bed = Bed::new();
    std::fs::create_dir_all(bed.at("sub")).unwrap();
    std::os::unix::fs::symlink(bed.env.path("outside"), bed.at("outlink")).unwrap();
    std::os::unix::fs::symlink(bed.victim(), bed.at("victimlink")).unwrap();
    std::os::unix::fs::symlink(bed.at(".coord"), bed.at("statelink")).unwrap();
    let victim_abs = bed.victim().display().to_string();
    let bad: Vec<&str> = vec![
        "../victim.txt",
        "sub/../../victim.txt",
        &victim_abs,
        "outlink/x.md",
        "victimlink",
        "./../outside/y.md",
        ".coord/mutex",
        "statelink/mutex",
        "",
        ".",
        "..",
        "sub/..",
        "missing/dir/x.md",
    ];
    let inside = bed.inside();
    let outside = bed.outside();
    for arg in &bad {
        for args in [
            vec!["lock", arg],
            vec!["lock", "a.md", arg],
            vec!["unlock", arg],
            vec!["unlock", "--force", arg],
            vec!["presence", "--file", arg, "task"],
        ] {
            let out = bed.run(Some("claude"), &args);
            expect(&out, 2);
            assert!(
                out.stderr.starts_with("error: "),
                "{args:?}: {}",
                out.stderr
            );
            assert_eq!(bed.inside(), inside, "{args:?} wrote inside");
            assert_eq!(bed.outside(), outside, "{args:?} wrote outside");
        }
    }
    // From a subfolder too, where `..` is still inside.
    let out = crate::planted::bounded(
        bed.cmd(Some("claude"))
            .cwd(bed.at("sub"))
            .args(["lock", "../../victim.txt"]),
        crate::planted::LIMIT,
    );
    expect(&out, 2);
    assert!(!bed.at(".coord").exists(), "nothing was created");
    bed.assert_victim_untouched();
}

#[test]
fn agent_names_that_could_build_paths_are_refused_before_anything_is_written() {
    let bed = Bed::new();
    let long = "a".repeat(33);
    let bad = [
        "../x", "a/b", "/abs", ".", "..", "", &long, "a b", "ünï", "-x", "_x", "x.y", "a\\b",
        "x\ny",
    ];
    let inside = bed.inside();
    let outside = bed.outside();
    for name in bad {
        for args in [
            vec!["lock", "a.md"],
            vec!["unlock"],
            vec!["presence", "task"],
        ] {
            let out = bed.run(Some(name), &args);
            expect(&out, 2);
            assert!(
                out.stderr.starts_with("error: "),
                "{name:?}: {}",
                out.stderr
            );
            let flag = crate::planted::bounded(
                bed.cmd(None).arg(format!("--agent={name}")).args(&args),
                crate::planted::LIMIT,
            );
            expect(&flag, 2);
        }
        assert_eq!(bed.inside(), inside, "{name:?} wrote inside");
        assert_eq!(bed.outside(), outside, "{name:?} wrote outside");
    }
    assert!(!bed.at(".coord").exists());
    assert_eq!(std::fs::read_to_string(bed.victim()).unwrap(), PRECIOUS);
}

#[test]
fn a_symlink_to_a_file_inside_is_locked_as_its_target() {
    let bed = Bed::new();
    std::os::unix::fs::symlink("a.md", bed.at("alias.md")).unwrap();
    let out = bed.run(Some("claude"), &["lock", "alias.md"]);
    expect(&out, 0);
    assert!(out.stdout.contains("Lock acquired: a.md"), "{}", out.stdout);
    assert!(bed.at("a.md.lock.claude").exists());
    assert!(!bed.at("alias.md.lock.claude").exists());
    expect(&bed.run(Some("gemini"), &["lock", "a.md", "--no-wait"]), 3);
    expect(&bed.run(Some("claude"), &["unlock", "alias.md"]), 0);
}

// --- symlinks at the names coord creates, and symlinked folders ---

/// Plant `rel` as a symlink to the victim, or (`dir`) to the `outside/` folder.
fn link(bed: &Bed, rel: &str, dir: bool) {
    let p = bed.at(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let to = if dir {
        bed.env.path("outside")
    } else {
        bed.victim()
    };
    std::os::unix::fs::symlink(to, p).unwrap();
}

#[track_caller]
fn nothing_outside(bed: &Bed) {
    bed.assert_victim_untouched();
    assert!(
        crate::planted::tree(&bed.env.path("outside")).is_empty(),
        "{:?}",
        crate::planted::tree(&bed.env.path("outside"))
    );
}

#[test]
fn names_coord_creates_planted_as_symlinks_never_lead_outside() {
    let bed = Bed::new();
    // A read mark, a rejected copy, a handshake, a stamp-card row and counter.
    two_messages(&bed);
    link(&bed, ".coord/messages/read/claude/aaaa", false);
    link(&bed, "a.md.rejected.claude", false);
    link(&bed, ".handshake_claude", false);
    link(&bed, ".coord/partners/0000000001.session", false);
    link(&bed, ".coord/partners/seq", false);
    expect(&bed.run(Some("claude"), &["msg", "read", "aaaa"]), 0);
    std::fs::write(bed.at("new.txt"), "new\n").unwrap();
    let out = bed.run(Some("claude"), &["write", "a.md", "--from", "new.txt"]);
    expect(&out, 3);
    let kept = std::fs::symlink_metadata(bed.at("a.md.rejected.claude")).unwrap();
    assert!(kept.is_file(), "the link was replaced by the content");
    expect(&bed.run(Some("gemini"), &["presence", ".", "y"]), 0);
    expect(&bed.run(Some("claude"), &["presence", ".", "x"]), 0);
    let out = bed.run(Some("claude"), &["handshake"]);
    expect(&out, 1);
    assert!(out.stderr.contains(".handshake_claude"), "{}", out.stderr);
    expect(
        &bed.run(Some("claude"), &["startup", "--partner", "claude"]),
        0,
    );
    expect(&bed.run(Some("claude"), &["shutdown"]), 0);
    nothing_outside(&bed);
}

#[test]
fn review_paths_planted_as_symlinks_never_lead_outside() {
    // The tracker name of a new review, its template, and the closed tracker.
    let bed = Bed::new();
    link(&bed, ".metadata/reviews/active/api-tracker.md", false);
    link(
        &bed,
        ".metadata/templates/review-tracker-template.md",
        false,
    );
    std::fs::write(bed.at("t.md"), "# T\n").unwrap();
    let mut new_api = NEW_WEB.to_vec();
    new_api[2] = "api";
    let out = bed.run(None, &new_api);
    expect(&out, 3);
    expect(&bed.run(None, &["review", "show", "api"]), 1);
    expect(&bed.run(None, NEW_WEB), 0);
    nothing_outside(&bed);

    // Symlinked folders: `.metadata`, `reviews/active`, `reviews/closed` pointing outside.
    for folder in [
        ".metadata",
        ".metadata/reviews/active",
        ".metadata/reviews/closed",
    ] {
        let bed = Bed::new();
        if folder.ends_with("closed") {
            one_review(&bed);
        }
        std::fs::write(bed.at("t.md"), "# T\n").unwrap();
        link(&bed, folder, true);
        let out = bed.run(None, NEW_WEB);
        if folder.ends_with("closed") {
            expect(&out, 0);
            let out = bed.run(None, &["review", "close", "api"]);
            assert!(matches!(out.code, Some(1 | 4)), "{}", out.stderr);
        } else {
            expect(&out, 1);
            assert!(out.stderr.contains(folder), "{folder}: {}", out.stderr);
            expect(&bed.run(None, &["review", "show", "web"]), 1);
            expect(&bed.run(None, &["status"]), 0);
        }
        nothing_outside(&bed);
    }
}

#[test]
fn a_symlinked_dialogue_archive_or_marks_folder_is_refused() {
    let bed = Bed::new();
    one_said(&bed);
    std::fs::remove_dir_all(bed.at("agent-dialogue/archive")).unwrap();
    link(&bed, "agent-dialogue/archive", true);
    let out = bed.run(None, ARCHIVE);
    expect(&out, 1);
    assert!(out.stderr.contains("symlink"), "{}", out.stderr);
    // Nothing moved: the dialogue goes on.
    expect(&bed.run(None, TURN), 0);
    nothing_outside(&bed);

    let bed = Bed::new();
    two_messages(&bed);
    link(&bed, ".coord/messages/read", true);
    let out = bed.run(Some("claude"), &["msg", "read", "aaaa"]);
    expect(&out, 1);
    nothing_outside(&bed);
}

// --- coord's own folders under `.coord/` planted as symlinks ---

/// Every command the folders of `.coord/` serve: locks, a wait, a write keeping backups,
/// messages and read marks, clock-in and out, a client's hooks (its session, a question to
/// its user, a shell call), a nested workspace, and the views. Returns what each said.
fn every_folder_served(bed: &Bed) -> Vec<crate::support::Output> {
    let mut outs = Vec::new();
    let mut run = |agent: Option<&str>, args: &[&str]| outs.push(bed.run(agent, args));
    // Content that differs every time, so that each backup keeps an older generation.
    let now = std::time::SystemTime::now();
    std::fs::write(bed.at("new.txt"), format!("new {now:?}\n")).unwrap();
    std::fs::write(bed.at("a.md"), format!("edited {now:?}\n")).unwrap();
    run(Some("alice"), &["presence", ".", "t"]);
    run(Some("alice"), &["lock", "a.md"]);
    run(Some("alice"), &["write", "a.md", "--from", "new.txt"]);
    run(Some("bob"), &["lock", "a.md", "--wait", "300ms"]);
    run(Some("alice"), &["unlock"]);
    run(Some("alice"), &["msg", "send", "bob", "warm"]);
    run(Some("bob"), &["msg", "list"]);
    run(Some("bob"), &["msg", "read", "aaaa"]);
    run(Some("alice"), &["startup", "--partner", "alice"]);
    run(Some("alice"), &["shutdown"]);
    run(None, &["-C", "sub", "init", "--client", "claude"]);
    run(None, &["status"]);
    run(None, &["check"]);
    run(None, &["log"]);
    run(None, &["prune", "--dry-run"]);
    let cwd = bed.ws().display().to_string();
    let sid = "5f0c6d1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    for payload in [
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Notification", "message": "Claude needs your permission to use Bash"}),
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        serde_json::json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": false}),
    ] {
        outs.push(
            bed.cmd(None)
                .args(["hook", "claude"])
                .stdin(payload.to_string())
                .run(),
        );
    }
    outs
}

/// #45: each of coord's folders under `.coord/` replaced by a symlink to a folder outside (its
/// content moved there) is never followed: nothing outside is written, moved or removed,
/// nothing there is read as coord's own (the history's events, the messages), and the
/// commands that meet it say so, naming it. Only what belongs in that folder is left out: a
/// lock is still granted when only the history (a sink) is linked, and refused clearly (exit 1)
/// when its index of locks is; waiting, messages and clock-in refuse clearly too.
#[test]
fn a_symlinked_folder_under_coord_is_never_followed() {
    let folders = [
        "history",
        "held",
        "queue",
        "queue/Q",
        "messages",
        "messages/read",
        "messages/read/bob",
        "partners",
        "partners/open",
        "backups",
        "backups/B",
        "sessions",
        "needs-user",
        "shell",
        "nested",
    ];
    for folder in folders {
        let bed = Bed::new();
        std::fs::create_dir_all(bed.at("sub")).unwrap();
        two_messages(&bed);
        // Every folder is made and holds something.
        every_folder_served(&bed);
        let ws = bed.ws();
        let rel = match folder {
            "queue/Q" => coord::layout::queue_dir(&ws, "a.md"),
            "backups/B" => coord::layout::backup_generations(&ws, &ws.join("a.md")),
            f => ws.join(".coord").join(f),
        };
        let moved = bed.env.path("outside/moved");
        if rel.exists() {
            std::fs::rename(&rel, &moved).unwrap();
        } else {
            std::fs::create_dir_all(&moved).unwrap();
            std::fs::create_dir_all(rel.parent().unwrap()).unwrap();
        }
        std::os::unix::fs::symlink(&moved, &rel).unwrap();
        let before = bed.outside();
        // A name made and removed again outside leaves its trace in the folder's times.
        let stamp = |p: &std::path::Path| {
            let m = std::fs::metadata(p).unwrap();
            (
                m.modified().unwrap(),
                std::os::unix::fs::MetadataExt::ctime_nsec(&m),
            )
        };
        let touched = stamp(&moved);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let outs = every_folder_served(&bed);
        assert_eq!(bed.outside(), before, "{folder}: written outside");
        assert_eq!(
            stamp(&moved),
            touched,
            "{folder}: written outside, then undone"
        );
        bed.assert_victim_untouched();
        for out in &outs {
            assert!(
                matches!(out.code, Some(0..=3)) && !out.stderr.contains("panicked"),
                "{folder}: {}\n{}",
                out.shown,
                out.stderr
            );
        }
        let said: String = outs.iter().map(|o| o.stderr.as_str()).collect();
        assert!(
            said.contains(&format!("`{}` is a symlink", rel.display())),
            "{folder}: never said: {said}"
        );
        // What the link leads to is not read as coord's own.
        let log = &outs[13];
        let inbox = &outs[6];
        match folder {
            "history" => {
                assert!(!log.stdout.contains("locked"), "{}", log.stdout);
                // A sink: the lock still went through.
                expect(&outs[1], 0);
            }
            "messages" => assert!(!inbox.stdout.contains("warm"), "{}", inbox.stdout),
            "held" => {
                expect(&outs[1], 1);
                assert!(outs[1].stderr.contains("symlink"), "{}", outs[1].stderr);
            }
            _ => {}
        }
    }
}
