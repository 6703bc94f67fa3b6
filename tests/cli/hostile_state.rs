//! Hostile state files beyond the Protocol V3 core: handshakes, the stamp card, messages and
//! read marks, the collaboration file, the dialogue's five files and archive, review trackers,
//! their archive and template, `FILE.bak` and `FILE.rejected.<agent>`.
//!
//! Each case builds a normal workspace, puts a hostile file of every kind (see
//! [`crate::hostile::Kind`]) where a state file belongs, then runs the commands that read or
//! write it, each killed and failed after [`LIMIT`]. After each command: the expected exit code,
//! no panic, an `error:` line on failure, the folder around the workspace byte for byte the
//! same (the victim a planted symlink points at included), and for commands that only read,
//! the workspace unchanged too.

use std::collections::BTreeMap;

use crate::hostile::{ALL, Bed, Kind, LIMIT, age_entry, bounded, expect, plant};

/// Exit code expected for a kind of hostile file.
type Code = fn(Kind) -> i32;

fn zero(_: Kind) -> i32 {
    0
}
fn one(_: Kind) -> i32 {
    1
}
fn three(_: Kind) -> i32 {
    3
}
fn four(_: Kind) -> i32 {
    4
}
/// 0 for a small (possibly meaningless) regular file, else 1.
fn small_ok(k: Kind) -> i32 {
    if k.readable() { 0 } else { 1 }
}
/// 0 for a folder (what the path should be), else 1.
fn dir_ok(k: Kind) -> i32 {
    if k == Kind::Dir { 0 } else { 1 }
}
/// 1 for a folder (nothing can replace it), else 0.
fn dir_fails(k: Kind) -> i32 {
    if k == Kind::Dir { 1 } else { 0 }
}

struct Step {
    agent: Option<&'static str>,
    args: &'static [&'static str],
    code: Code,
    /// Whether the command may change the workspace.
    writes: bool,
}

const fn read(agent: Option<&'static str>, args: &'static [&'static str], code: Code) -> Step {
    Step {
        agent,
        args,
        code,
        writes: false,
    }
}

const fn write(agent: Option<&'static str>, args: &'static [&'static str], code: Code) -> Step {
    Step {
        agent,
        args,
        code,
        writes: true,
    }
}

struct Case<'a> {
    /// The hostile path, relative to the workspace.
    target: &'static str,
    setup: fn(&Bed),
    /// Seconds to age the hostile entry by (0: fresh).
    age: u64,
    steps: &'a [Step],
    /// Whether `status --json` must list the target under `unreadable` for a kind.
    listed: fn(Kind) -> bool,
}

fn never(_: Kind) -> bool {
    false
}
fn unless_small(k: Kind) -> bool {
    !k.readable()
}
fn always(_: Kind) -> bool {
    true
}

/// The workspace without the kernel-lock files (opening them is not a change).
fn state(bed: &Bed) -> BTreeMap<String, String> {
    bed.inside()
        .into_iter()
        .filter(|(k, _)| !k.ends_with("mutex"))
        .collect()
}

fn remove_any(p: &std::path::Path) {
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if m.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
}

fn sweep(case: &Case<'_>) {
    for kind in ALL {
        let bed = Bed::new();
        (case.setup)(&bed);
        let target = bed.at(case.target);
        remove_any(&target);
        plant(&target, kind, &bed.victim());
        if case.age > 0 {
            age_entry(&target, case.age);
        }
        let outside = bed.outside();
        let status = bed.run(None, &["status", "--json"]);
        expect(&status, 0);
        let doc: serde_json::Value = status.json();
        let listed = doc["unreadable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["path"] == case.target);
        assert_eq!(
            listed,
            (case.listed)(kind),
            "{} {kind:?}: unreadable {}",
            case.target,
            doc["unreadable"]
        );
        for step in case.steps {
            let before = state(&bed);
            let out = bounded(bed.cmd(step.agent).args(step.args), LIMIT);
            let code = (step.code)(kind);
            let what = format!("{} {kind:?} {:?}", case.target, step.args);
            expect(&out, code);
            if code != 0 {
                // Said once: with `--json` in the error document on stdout, else on stderr.
                if step.args.contains(&"--json") {
                    let doc: serde_json::Value = out.json();
                    assert!(doc["error"]["message"].is_string(), "{what}: {doc}");
                } else {
                    assert!(out.stderr.contains("error: "), "{what}: {}", out.stderr);
                }
            }
            assert_eq!(bed.outside(), outside, "{what}: wrote outside");
            bed.assert_victim_untouched();
            if !step.writes {
                // A refusal is an event of the history (contract §11): the log may only have
                // grown by appended lines; nothing else may change.
                let (mut after, mut was) = (state(&bed), before.clone());
                let log = ".coord/history/events.jsonl";
                let grown = after.remove(log).unwrap_or_default();
                let old = was.remove(log).unwrap_or_default();
                assert!(grown.starts_with(&old), "{what}: the history was rewritten");
                after.remove(".coord/history");
                was.remove(".coord/history");
                assert_eq!(after, was, "{what}: a read wrote");
            }
        }
    }
}

// --- handshakes ---

fn two_agents_one_request(bed: &Bed) {
    bed.run(Some("claude"), &["presence", ".", "x"]);
    bed.run(Some("gemini"), &["presence", ".", "y"]);
    bed.run(Some("gemini"), &["handshake"]);
}

#[test]
fn hostile_handshake_files() {
    sweep(&Case {
        target: ".handshake_gemini",
        setup: two_agents_one_request,
        age: 0,
        listed: unless_small,
        steps: &[
            read(None, &["status"], zero),
            write(Some("claude"), &["handshake"], zero),
            write(Some("claude"), &["handshake", "--wait", "300ms"], three),
            // Its own file: replaced when a small file, refused otherwise.
            write(Some("gemini"), &["handshake"], small_ok),
        ],
    });
    sweep(&Case {
        target: ".handshake_claude",
        setup: two_agents_one_request,
        age: 0,
        listed: unless_small,
        steps: &[
            read(None, &["status"], zero),
            write(Some("claude"), &["handshake"], small_ok),
            write(Some("claude"), &["handshake", "--wait", "300ms"], small_ok),
            write(Some("gemini"), &["handshake"], zero),
        ],
    });
}

// --- stamp card ---

fn clocked_in(bed: &Bed) {
    bed.run(Some("claude"), &["startup", "--partner", "claude"]);
}

const STAMP_STEPS: &[Step] = &[
    read(None, &["partners"], zero),
    read(None, &["partners", "--json"], zero),
    read(None, &["status"], zero),
    write(Some("gemini"), &["startup", "--partner", "gemini"], zero),
    write(Some("claude"), &["shutdown"], zero),
    write(Some("claude"), &["startup", "--partner", "claude"], zero),
];

#[test]
fn hostile_stamp_card_rows() {
    sweep(&Case {
        target: ".coord/partners/0000000001.session",
        setup: clocked_in,
        age: 0,
        // Even a small one has no `partner_name`: listed.
        listed: always,
        steps: STAMP_STEPS,
    });
}

#[test]
fn hostile_stamp_card_counter_and_folder() {
    // A damaged counter is recounted from the rows; only a folder cannot be replaced.
    sweep(&Case {
        target: ".coord/partners/seq",
        setup: clocked_in,
        age: 0,
        listed: never,
        steps: &[
            read(None, &["partners"], zero),
            read(None, &["status"], zero),
            write(
                Some("gemini"),
                &["startup", "--partner", "gemini"],
                dir_fails,
            ),
            write(Some("claude"), &["shutdown"], zero),
            write(
                Some("claude"),
                &["startup", "--partner", "claude"],
                dir_fails,
            ),
        ],
    });
    sweep(&Case {
        target: ".coord/partners",
        setup: clocked_in,
        age: 0,
        listed: never,
        steps: &[
            read(None, &["partners", "--json"], zero),
            read(None, &["status"], zero),
            write(Some("gemini"), &["startup", "--partner", "gemini"], dir_ok),
            write(Some("claude"), &["shutdown"], zero),
        ],
    });
}

// --- messages ---

fn two_messages(bed: &Bed) {
    bed.run(Some("gemini"), &["msg", "send", "claude", "hello"]);
    std::fs::write(
        bed.at(".coord/messages/aaaa.msg"),
        "from: gemini\nto: claude\ntime: 2026-01-01T00:00:00+00:00\n\nhi\n",
    )
    .unwrap();
}

#[test]
fn hostile_message_files_and_read_marks() {
    sweep(&Case {
        target: ".coord/messages/aaaa.msg",
        setup: two_messages,
        age: 0,
        // Even a small one is not a message (no header): listed, and skipped.
        listed: always,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            read(Some("claude"), &["msg", "list", "--unread", "--json"], zero),
            write(Some("claude"), &["msg", "read", "aaaa"], one),
            read(Some("claude"), &["status"], zero),
            write(Some("gemini"), &["msg", "send", "claude", "again"], zero),
            // The good message is still there to be waited for.
            read(Some("claude"), &["msg", "wait", "--timeout", "300ms"], zero),
        ],
    });
    sweep(&Case {
        target: ".coord/messages/read/claude/aaaa",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            write(Some("claude"), &["msg", "read", "aaaa"], zero),
            read(Some("claude"), &["msg", "list", "--unread", "--json"], zero),
            read(Some("claude"), &["status"], zero),
        ],
    });
    sweep(&Case {
        target: ".coord/messages/read/claude",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            write(Some("claude"), &["msg", "read", "aaaa"], dir_ok),
            read(Some("claude"), &["status"], zero),
        ],
    });
}

#[test]
fn a_hostile_message_folder() {
    fn no_message(k: Kind) -> i32 {
        if k == Kind::Dir { 2 } else { 1 }
    }
    fn nothing_new(k: Kind) -> i32 {
        if k == Kind::Dir { 3 } else { 1 }
    }
    sweep(&Case {
        target: ".coord/messages",
        setup: two_messages,
        age: 0,
        listed: never,
        steps: &[
            read(Some("claude"), &["msg", "list"], zero),
            read(Some("claude"), &["msg", "read", "aaaa"], no_message),
            read(
                Some("claude"),
                &["msg", "wait", "--timeout", "300ms"],
                nothing_new,
            ),
            read(Some("claude"), &["status"], zero),
            write(Some("gemini"), &["msg", "send", "claude", "x"], dir_ok),
        ],
    });
}

// --- collaboration file ---

#[test]
fn hostile_collaboration_file() {
    fn readable_or_huge(k: Kind) -> i32 {
        match k {
            Kind::Fifo | Kind::Dir | Kind::Socket => 1,
            // A symlink to a file outside is an argument leaving the workspace.
            Kind::Symlink => 2,
            _ => 0,
        }
    }
    sweep(&Case {
        target: "collaboration_file.txt",
        setup: |bed| {
            bed.run(Some("claude"), &["collab", "write", "hi"]);
        },
        age: 0,
        listed: never,
        steps: &[
            read(None, &["collab", "read"], readable_or_huge),
            read(None, &["collab", "read", "--json"], readable_or_huge),
            write(
                Some("claude"),
                &["collab", "write", "again"],
                readable_or_huge,
            ),
        ],
    });
}

#[test]
fn collab_follow_never_hangs_on_a_file_it_cannot_read() {
    for kind in [Kind::Fifo, Kind::Dir, Kind::Socket, Kind::Symlink] {
        let bed = Bed::new();
        plant(&bed.at("collaboration_file.txt"), kind, &bed.victim());
        let out = bed.run(None, &["collab", "read", "--follow"]);
        assert!(
            matches!(out.code, Some(1 | 2)),
            "{kind:?}: {:?} {}",
            out.code,
            out.stderr
        );
        assert!(out.stderr.contains("error: "), "{kind:?}: {}", out.stderr);
        bed.assert_victim_untouched();
    }
}

// --- dialogue ---

fn one_said(bed: &Bed) {
    bed.run(None, &["dialogue", "init", "--topic", "t"]);
    bed.run(None, &["dialogue", "say", "--as", "AGENT-1", "first"]);
}

const TURN: &[&str] = &["dialogue", "turn"];
const TURN_JSON: &[&str] = &["dialogue", "turn", "--json"];
const SHOW: &[&str] = &["dialogue", "show"];
const WAIT1: &[&str] = &["dialogue", "wait", "--as", "AGENT-1", "--timeout", "300ms"];
const SAY2: &[&str] = &[
    "dialogue",
    "say",
    "--as",
    "AGENT-2",
    "hello",
    "--lock-wait",
    "1s",
];
const PAUSE: &[&str] = &["dialogue", "command", "PAUSE"];
const ARCHIVE: &[&str] = &["dialogue", "archive"];

fn dialogue_case(target: &'static str, age: u64, steps: &[Step]) {
    sweep(&Case {
        target,
        setup: one_said,
        age,
        listed: never,
        steps,
    });
}

#[test]
fn hostile_dialogue_status_and_turn_files() {
    dialogue_case(
        "agent-dialogue/status.json",
        0,
        &[
            read(None, TURN, zero),
            read(None, TURN_JSON, zero),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, three),
            // Rebuilt from the conversation; a folder is refused before anything is written.
            write(None, SAY2, dir_fails),
            write(None, PAUSE, zero),
            write(None, ARCHIVE, zero),
        ],
    );
    dialogue_case(
        "agent-dialogue/current-turn.txt",
        0,
        &[
            read(None, TURN, zero),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, three),
            // Unsure whose turn it is: never writing.
            read(None, SAY2, three),
            write(None, PAUSE, zero),
            write(None, ARCHIVE, zero),
        ],
    );
}

#[test]
fn hostile_dialogue_conversation_and_commands() {
    fn wait_code(k: Kind) -> i32 {
        if k.readable() { 3 } else { 1 }
    }
    dialogue_case(
        "agent-dialogue/conversation.md",
        0,
        &[
            read(None, TURN, small_ok),
            read(None, TURN_JSON, small_ok),
            read(None, SHOW, small_ok),
            read(None, &["status"], zero),
            read(None, WAIT1, wait_code),
            // A short conversation disagrees with status.json: corrupted, nothing appended.
            write(None, SAY2, one),
            write(None, PAUSE, small_ok),
            write(None, ARCHIVE, zero),
        ],
    );
    dialogue_case(
        "agent-dialogue/user-commands.txt",
        0,
        &[
            read(None, TURN, small_ok),
            read(None, TURN_JSON, small_ok),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, wait_code),
            write(None, SAY2, small_ok),
            write(None, PAUSE, small_ok),
            write(None, ARCHIVE, zero),
        ],
    );
}

#[test]
fn hostile_dialogue_lock_and_archive() {
    // Fresh: whatever it is, a writer holds it.
    dialogue_case(
        "agent-dialogue/lock.txt",
        0,
        &[
            read(None, TURN, zero),
            read(None, TURN_JSON, zero),
            read(None, SHOW, zero),
            read(None, &["status"], zero),
            read(None, WAIT1, three),
            read(None, SAY2, three),
            write(None, PAUSE, zero),
        ],
    );
    // Two minutes old: stale, taken over (removed as an entry, never followed); a folder
    // cannot be, and is reported.
    dialogue_case(
        "agent-dialogue/lock.txt",
        120,
        &[
            read(None, TURN, zero),
            write(None, SAY2, dir_fails),
            write(None, ARCHIVE, dir_fails),
        ],
    );
    dialogue_case(
        "agent-dialogue/archive",
        0,
        &[
            read(None, TURN, zero),
            write(None, SAY2, zero),
            write(None, ARCHIVE, dir_ok),
        ],
    );
}

// --- review tracker ---

fn one_review(bed: &Bed) {
    std::fs::write(bed.at("t.md"), "# T\n").unwrap();
    let out = bed.run(
        None,
        &[
            "review",
            "new",
            "api",
            "--target",
            "t.md",
            "--reviewer",
            "Claude",
            "--implementer",
            "Codex",
        ],
    );
    expect(&out, 0);
    std::fs::write(
        bed.at("out.md"),
        "# Out\n\n## Handoff Prompt for Next Actor\n\nGo.\n",
    )
    .unwrap();
}

const STEP: &[&str] = &[
    "review",
    "step",
    "api",
    "--as",
    "Claude",
    "--action",
    "review",
    "--output",
    "out.md",
    "--summary",
    "s",
    "--next",
    "Codex",
];
const ISSUE: &[&str] = &[
    "review",
    "issue",
    "api",
    "add",
    "--severity",
    "low",
    "--title",
    "x",
];
const NEW_WEB: &[&str] = &[
    "review",
    "new",
    "web",
    "--target",
    "t.md",
    "--reviewer",
    "Claude",
    "--implementer",
    "Codex",
];

#[test]
fn hostile_review_trackers() {
    sweep(&Case {
        target: ".metadata/reviews/active/api-tracker.md",
        setup: one_review,
        age: 0,
        // Even a small one has no `## Meta`: listed.
        listed: always,
        steps: &[
            read(None, &["review", "show", "api"], one),
            read(None, &["review", "show", "api", "--json"], one),
            read(None, &["review", "next", "api"], one),
            read(None, &["status"], zero),
            read(None, STEP, one),
            read(None, ISSUE, one),
            read(None, &["review", "close", "api"], one),
            write(None, NEW_WEB, zero),
        ],
    });
}

#[test]
fn hostile_review_archive_and_template() {
    // Neither is read before step 21; nothing about them may stop the review.
    for target in [
        ".metadata/reviews/active/api-tracker-archive.md",
        ".metadata/templates/review-tracker-template.md",
    ] {
        sweep(&Case {
            target,
            setup: one_review,
            age: 0,
            listed: never,
            steps: &[
                read(None, &["review", "show", "api"], zero),
                read(None, &["review", "next", "api"], zero),
                write(None, STEP, zero),
                write(None, ISSUE, zero),
                read(None, &["review", "close", "api"], four),
                write(None, NEW_WEB, zero),
            ],
        });
    }
}

#[test]
fn a_hostile_active_reviews_folder() {
    fn missing(k: Kind) -> i32 {
        if k == Kind::Dir { 2 } else { 1 }
    }
    sweep(&Case {
        target: ".metadata/reviews/active",
        setup: one_review,
        age: 0,
        listed: never,
        steps: &[
            read(None, &["review", "show", "api"], missing),
            read(None, &["review", "next", "api"], missing),
            read(None, &["status"], zero),
            read(None, STEP, missing),
            read(None, &["review", "close", "api"], missing),
            write(None, NEW_WEB, dir_ok),
        ],
    });
}

// --- backups and rejected content ---

#[test]
fn hostile_backup_for_restore() {
    fn copyable(k: Kind) -> i32 {
        if k.readable() || k == Kind::Huge {
            0
        } else {
            1
        }
    }
    fn held(k: Kind) -> i32 {
        // The backup is checked first; a good one waits for the lock another holds.
        if k.readable() || k == Kind::Huge {
            3
        } else {
            1
        }
    }
    sweep(&Case {
        target: "a.md.bak",
        setup: |bed| {
            expect(&bed.run(Some("claude"), &["lock", "a.md"]), 0);
        },
        age: 0,
        listed: never,
        steps: &[
            write(Some("claude"), &["restore", "a.md"], copyable),
            read(Some("gemini"), &["restore", "a.md", "--no-wait"], held),
            write(Some("claude"), &["unlock"], zero),
            write(Some("claude"), &["restore", "a.md"], copyable),
        ],
    });
}

#[test]
fn hostile_rejected_file_for_write() {
    // Refused, and the content kept: at `a.md.rejected.claude`, or beside it
    // (`a.md.rejected.claude.1`) when a folder, FIFO or socket stands there.
    fn kept(_: Kind) -> i32 {
        3
    }
    sweep(&Case {
        target: "a.md.rejected.claude",
        setup: |bed| std::fs::write(bed.at("new.txt"), "new\n").unwrap(),
        age: 0,
        listed: never,
        steps: &[
            write(
                Some("claude"),
                &["write", "a.md", "--from", "new.txt"],
                kept,
            ),
            read(None, &["status"], zero),
        ],
    });
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
        crate::hostile::tree(&bed.env.path("outside")).is_empty(),
        "{:?}",
        crate::hostile::tree(&bed.env.path("outside"))
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
