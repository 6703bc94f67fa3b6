//! Property tests of the public parsers of the Protocol V3 core: arbitrary input never panics,
//! and what coord writes reads back as written. The parsers of types kept inside the crate are
//! tested the same way in `src/proptests.rs`.
#![allow(clippy::disallowed_methods)] // plants hand-made files on purpose

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;

use coord::clock;
use coord::layout;
use coord::lock;
use coord::presence::{Presence, StateCache};
use coord::record::Record;
use coord::status;
use coord::workspace::{AgentId, Workspace, is_valid_agent_id};

/// Any text, control characters and odd Unicode included.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(any::<u8>(), 0..512)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "(([A-Za-z_]{1,10}) *: *[ -~\t\r]{0,40}\n){0,12}",
    ]
}

/// A claim pattern over a small alphabet (so that patterns and paths often meet): folders,
/// `*`, `?`, classes, `**`.
fn claim_pattern() -> impl Strategy<Value = String> {
    let seg = proptest::sample::select(
        &[
            "a", "b", "ab", "*", "a*", "*b", "?", "a?", "[ab]", "[!a]", "[a-c]*", "**", "*a*",
        ][..],
    );
    (proptest::collection::vec(seg, 1..5), any::<bool>()).prop_map(|(segs, folder)| {
        let mut p = segs.join("/");
        if folder {
            p.push('/');
        }
        p
    })
}

/// A path over the same alphabet.
fn claim_path() -> impl Strategy<Value = String> {
    let seg = proptest::sample::select(&["a", "b", "ab", "ba", "aa", "c", "abc"][..]);
    proptest::collection::vec(seg, 1..6).prop_map(|s| s.join("/"))
}

fn valid_id() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9_-]{0,31}"
}

fn timestamp() -> impl Strategy<Value = clock::Timestamp> {
    // Years 1 to 9999, offsets up to ±23:59 in whole minutes (RFC 3339 has no offset seconds).
    (-62_135_596_800i64..253_402_214_400, -1439i32..=1439).prop_map(|(secs, off)| {
        let utc = chrono::DateTime::from_timestamp(secs, 0).unwrap();
        utc.with_timezone(&chrono::FixedOffset::east_opt(off * 60).unwrap())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn record_parse_never_panics(text in any_text()) {
        let r = Record::parse(&text);
        for (k, _) in r.entries() {
            prop_assert!(!k.is_empty() && !k.contains(char::is_whitespace));
        }
        let _ = r.render();
    }

    #[test]
    fn records_read_back_as_written(
        entries in proptest::collection::vec(("[A-Za-z_][A-Za-z0-9_-]{0,12}", any::<String>()), 0..10)
    ) {
        let mut r = Record::new();
        for (k, v) in &entries {
            r.set(k, v);
        }
        let back = Record::parse(&r.render());
        prop_assert_eq!(back.entries(), r.entries());
        // No value can smuggle in a line of its own.
        prop_assert_eq!(r.render().lines().count(), r.entries().len());
    }

    #[test]
    fn presence_parse_never_panics(text in any_text(), mtime in proptest::option::of(timestamp()), now in timestamp()) {
        let p = Presence::parse("x", &text, mtime);
        let _ = (p.name(), p.heartbeat(), p.state(&now), p.locks());
        let _ = status::agent_view(&p, &now);
    }

    #[test]
    fn timestamps_never_panic(text in any_text()) {
        if let Some(ts) = clock::parse_timestamp(&text) {
            let _ = clock::format_timestamp(&ts);
        }
    }

    #[test]
    fn timestamps_read_back_as_written(ts in timestamp()) {
        let text = clock::format_timestamp(&ts);
        let back = clock::parse_timestamp(&text).unwrap();
        prop_assert_eq!(back, ts);
        prop_assert_eq!(back.offset(), ts.offset());
    }

    #[test]
    fn mtimes_never_panic(secs in any::<u64>(), before in any::<bool>()) {
        let d = Duration::from_secs(secs);
        let t = if before {
            std::time::UNIX_EPOCH.checked_sub(d)
        } else {
            std::time::UNIX_EPOCH.checked_add(d)
        };
        if let Some(t) = t {
            let _ = clock::format_timestamp(&clock::from_system_time(t));
        }
    }

    #[test]
    fn durations_never_panic(text in prop_oneof![any_text(), "([0-9]{1,14}(ms|s|m|h|d|x|)){1,6}"]) {
        let _ = clock::parse_duration(&text);
        let _ = clock::Wait::parse(&text);
    }

    #[test]
    fn durations_read_back_as_written(ms in any::<u64>()) {
        let d = Duration::from_millis(ms);
        let text = clock::format_duration(d);
        prop_assert_eq!(clock::parse_duration(&text).unwrap(), d, "{}", text);
    }

    #[test]
    fn agent_ids_are_safe_file_name_parts(name in prop_oneof![any_text(), "[A-Za-z0-9][A-Za-z0-9_-]{0,31}"]) {
        if let Ok(a) = AgentId::parse(&name) {
            prop_assert!(is_valid_agent_id(a.id()));
            prop_assert_eq!(a.id(), name.to_ascii_lowercase());
            let root = Path::new("/w");
            let presence = layout::presence(&coord::worktree::shared_root(root), a.id());
            prop_assert_eq!(presence.parent(), Some(root));
            let lock = layout::lock_file(&root.join("f"), a.id());
            prop_assert_eq!(lock.parent(), Some(root));
        }
    }

    #[test]
    fn valid_names_are_accepted(name in "[A-Za-z0-9][A-Za-z0-9_-]{0,31}") {
        prop_assert!(AgentId::parse(&name).is_ok());
    }

    #[test]
    fn name_parsers_never_panic(name in any_text()) {
        let _ = layout::parse_lock_name(&name);
        let _ = layout::parse_temp_name(&name);
        let _ = layout::parse_ticket(&name);
        let _ = layout::presence_agent(&name);
        let _ = layout::handshake_agent(&name);
        if let Some((base, agent)) = layout::parse_lock_name(&name) {
            prop_assert!(!base.is_empty() && is_valid_agent_id(&agent));
        }
    }

    #[test]
    fn names_read_back_as_written(
        base in "[^/\u{0}]{1,40}".prop_filter("a file name", |b| b != "." && b != ".."),
        agent in valid_id(),
        tag in "[0-9a-f]{8}",
        pid in any::<u32>(),
        rand in "[A-Za-z0-9]{6}",
        seq in any::<u64>(),
    ) {
        let lock = layout::lock_file(&Path::new("/w").join(&base), &agent);
        let name = lock.file_name().unwrap().to_str().unwrap();
        prop_assert_eq!(layout::parse_lock_name(name), Some((base.as_str(), agent.clone())));
        let temp = format!("{}{rand}{}", layout::temp_prefix(&tag, pid), layout::TEMP_SUFFIX);
        prop_assert_eq!(layout::parse_temp_name(&temp), Some((tag.as_str(), pid)));
        prop_assert!(layout::parse_lock_name(&temp).is_none());
        let ticket = layout::ticket_name(seq, &agent);
        prop_assert_eq!(layout::parse_ticket(&ticket), Some((seq, agent.as_str())));
        let presence = layout::presence(&coord::worktree::shared_root(Path::new("/w")), &agent);
        prop_assert_eq!(
            layout::presence_agent(presence.file_name().unwrap().to_str().unwrap()),
            Some(agent.as_str())
        );
    }
}

proptest! {
    // These touch the disk: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn lock_files_of_any_content_are_judged_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        text in any_text(),
        now in timestamp(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = Workspace::at(root.clone());
        std::fs::write(root.join("f.md.lock.a"), &bytes).unwrap();
        std::fs::write(root.join("f.md.lock.b"), text.as_bytes()).unwrap();
        std::fs::write(root.join(".a_presence"), &bytes).unwrap();
        let target = ws.resolve(&root, "f.md").unwrap();
        let mut entries = lock::locks_of(&target);
        prop_assert_eq!(entries.len(), 2);
        lock::classify(&root, &mut entries, &mut StateCache::default(), &now);
        for e in &entries {
            let _ = (e.holder(), e.ttl(), e.token(), e.process(), e.reason(), e.session());
            let _ = lock::describe_problem(e);
            let _ = lock::format_since(e.since.as_ref(), &now);
            let _ = status::lock_view(e, &ws, &now, &coord::worktree::trees(&root));
        }
        let _ = status::collect(&ws, None);
    }

    #[test]
    fn lock_records_read_back_as_written(
        name in "[A-Za-z0-9][A-Za-z0-9_-]{0,31}",
        file in "[a-z]{1,8}\\.md",
        ts in timestamp(),
        ttl_ms in 1u64..86_400_000_000,
        reason in any::<String>(),
    ) {
        let mut rec = Record::new();
        rec.set("Agent", &name);
        rec.set("locked_at", clock::format_timestamp(&ts));
        rec.set("file", &file);
        rec.set("token", "0123456789abcdef");
        rec.set("ttl", clock::format_duration(Duration::from_millis(ttl_ms)));
        rec.set("reason", &reason);
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let id = name.to_ascii_lowercase();
        std::fs::write(root.join(format!("{file}.lock.{id}")), rec.render()).unwrap();
        let ws = Workspace::at(root.clone());
        let entries = lock::locks_of(&ws.resolve(&root, &file).unwrap());
        prop_assert_eq!(entries.len(), 1);
        let e = &entries[0];
        prop_assert_eq!(e.holder(), name.as_str());
        prop_assert_eq!(e.since, Some(ts));
        prop_assert_eq!(e.ttl(), Duration::from_millis(ttl_ms));
        prop_assert_eq!(e.token(), Some("0123456789abcdef"));
        prop_assert_eq!(e.reason(), rec.get_nonempty("reason"));
        prop_assert!(e.problem.is_none());
    }

    #[test]
    fn resolved_paths_never_leave_the_root(arg in prop_oneof![
        any_text(),
        "(\\.\\.|\\.|sub|link|\\.coord|x\\.md|/|//){0,8}",
    ]) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("/", root.join("link")).unwrap();
        let ws = Workspace::at(root.join("sub"));
        if let Ok(t) = ws.resolve(&root.join("sub"), &arg) {
            prop_assert!(t.abs.starts_with(root.join("sub")), "{:?}", t);
            prop_assert!(!t.rel.is_empty());
            prop_assert!(!t.rel.split('/').any(|p| p == ".." || p == "." || p.is_empty()));
            prop_assert!(t.rel.split('/').next() != Some(".coord"));
        }
    }
}

// Claim patterns and the names of files given on the command line.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn claim_patterns_never_panic(text in any_text()) {
        if let Ok(p) = coord::pattern::Pattern::parse(&text) {
            // What it normalizes to parses to the same pattern.
            let again = coord::pattern::Pattern::parse(p.as_str());
            prop_assert!(again.is_ok(), "{:?} -> {:?}", text, p.as_str());
            let again = again.unwrap();
            prop_assert_eq!(again.as_str(), p.as_str());
        }
    }

    #[test]
    fn claim_overlap_is_symmetric_and_implied_by_a_common_path(
        a in claim_pattern(),
        b in claim_pattern(),
        paths in proptest::collection::vec(claim_path(), 0..16),
    ) {
        use coord::pattern::Pattern;
        let pa = Pattern::parse(&a).unwrap();
        let pb = Pattern::parse(&b).unwrap();
        let ab = pa.overlaps(&pb);
        prop_assert_eq!(ab, pb.overlaps(&pa), "{} vs {}", a, b);
        prop_assert!(pa.overlaps(&pa), "{} overlaps itself", a);
        for path in &paths {
            if pa.matches(path) && pb.matches(path) {
                prop_assert!(ab, "{} and {} both match {} but do not overlap", a, b, path);
            }
            prop_assert_eq!(pa.matches(path), pa.overlaps(&Pattern::literal(path)));
        }
    }

    /// #45: every file can be named on the command line: its name written with a `\` before
    /// each wildcard is no claim, and reads back as that very name; as a pattern, that text
    /// matches exactly the file.
    #[test]
    fn every_file_name_can_be_written_as_an_argument_and_reads_back(
        name in "[a-z\\\\*?\\[\\]{}. -]{1,6}(/[a-z\\\\*?\\[\\]. -]{1,6}){0,2}",
    ) {
        use coord::pattern::{Pattern, escape_name, is_claim, literal_name};
        let arg = escape_name(&name);
        prop_assert!(!is_claim(&arg), "{} -> {}", name, arg);
        prop_assert_eq!(literal_name(&arg), name.clone());
        if let Ok(p) = Pattern::parse(&arg) {
            prop_assert!(p.matches(&name), "{} does not match {}", arg, name);
        }
    }
}
