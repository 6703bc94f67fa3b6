//! Property tests of the parsers whose types stay inside the crate (the dialogue files and the
//! collaboration lines): hostile bytes never panic them, and what coord writes reads back. The
//! parsers of the public API are tested the same way in `tests/properties.rs`.

use std::time::Duration;

use proptest::prelude::*;

use crate::clock;

/// Any text, control characters and odd Unicode included.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(any::<u8>(), 0..512)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "(([A-Za-z_]{1,10}) *: *[ -~\t\r]{0,40}\n){0,12}",
    ]
}

fn timestamp() -> impl Strategy<Value = clock::Timestamp> {
    (-62_135_596_800i64..253_402_214_400, -1439i32..=1439).prop_map(|(secs, off)| {
        let utc = chrono::DateTime::from_timestamp(secs, 0).unwrap();
        utc.with_timezone(&chrono::FixedOffset::east_opt(off * 60).unwrap())
    })
}

/// An agent id as the stamp card and handshakes keep them (lower case).
fn lower_id() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9_-]{0,15}"
}

/// One line of ordinary text (no line break; spaces only inside).
fn one_line() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9 .,;!?'()-]{0,30}[A-Za-z0-9.]"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn dialogue_parsers_never_panic(text in any_text(), read in proptest::option::of(0usize..64), newer: bool, secs in 0i64..4_000_000_000) {
        let now = clock::from_system_time(std::time::UNIX_EPOCH + Duration::from_secs(secs as u64));
        let conv = crate::dialogue::files::Conversation::parse(&text);
        let _ = conv.numbering_error();
        let _ = crate::dialogue::files::Turn::parse(&text);
        let _ = crate::dialogue::files::StatusDoc::parse(&text);
        let _ = crate::dialogue::files::LockInfo::parse(&text, Some(now), &now);
        let _ = crate::dialogue::commands::judge(&text, read, newer);
        for line in text.lines() {
            let _ = crate::dialogue::commands::UserCommand::parse(line);
        }
    }

    #[test]
    fn a_conversation_coord_writes_reads_back(
        topic in one_line(),
        texts in proptest::collection::vec(any_text(), 0..6),
        at in timestamp(),
    ) {
        use crate::dialogue::files::{self, Conversation};
        let who = ["AGENT-1".to_string(), "AGENT-2".to_string()];
        let mut text = files::render_conversation_header(&topic, &who, &who[0], &at);
        for (i, body) in texts.iter().enumerate() {
            let conv = Conversation::parse(&text);
            prop_assert_eq!(conv.count(), i as u64);
            // A body that itself looks like a message header would be read as one: the seed's
            // format has no escaping. Keep bodies free of header lines here.
            let body = body.replace("## Message", "## Msg");
            text.push_str(&files::render_message(&conv, i as u64 + 1, &who[i % 2], &at, &body, &[]));
        }
        let conv = Conversation::parse(&text);
        prop_assert_eq!(conv.count(), texts.len() as u64);
        prop_assert!(conv.numbering_error().is_none());
        prop_assert_eq!(conv.topic.as_deref(), Some(topic.as_str()));
        if let Some(last) = conv.messages.last() {
            prop_assert_eq!(&last.speaker, &who[(texts.len() - 1) % 2]);
        }
    }

    #[test]
    fn status_json_coord_writes_reads_back(topic in one_line(), count in 0u64..10_000, at in timestamp()) {
        use crate::dialogue::files::StatusDoc;
        let who = ["AGENT-1".to_string(), "AGENT-2".to_string()];
        let mut doc = StatusDoc::new(&topic, &who, &at);
        doc.record_message(count, &who[1], &at);
        let back = StatusDoc::parse(&doc.render());
        prop_assert!(back.is_ok(), "{:?}", back.err());
        prop_assert_eq!(back.unwrap().message_count(), count);
    }

    #[test]
    fn user_commands_coord_writes_read_back(pick in 0usize..7, text in one_line(), n in 1u8..3) {
        use crate::dialogue::commands::UserCommand;
        let cmd = match pick {
            0 => UserCommand::Pause,
            1 => UserCommand::Resume,
            2 => UserCommand::Reset,
            3 => UserCommand::SwitchTopic(text),
            4 => UserCommand::EndSession,
            5 => UserCommand::Priority(text),
            _ => UserCommand::Only(format!("AGENT-{n}")),
        };
        prop_assert_eq!(UserCommand::parse(&cmd.render()), Some(cmd));
    }

    #[test]
    fn collab_lines_never_panic_and_read_back(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        id in any::<String>(),
        response in any::<String>(),
        time in any::<String>(),
    ) {
        let _ = crate::collab::parse_line(1, &bytes);
        let line = crate::collab::render_line(&id, &response, &time);
        prop_assert!(!line.contains('\n'), "one line: {line:?}");
        let back = crate::collab::parse_line(7, line.as_bytes());
        prop_assert!(back.is_ok(), "{:?}", back.err());
        let e = back.unwrap();
        prop_assert_eq!((e.llm_id, e.response, e.time), (id, response, Some(time)));
    }

    #[test]
    fn handshake_blocks_never_panic_and_read_back(
        owner in lower_id(),
        text in any_text(),
        peers in proptest::collection::btree_map(lower_id(), (any::<bool>(), proptest::option::of(timestamp())), 0..5),
    ) {
        use crate::handshake::{self, Block, HandshakeStatus};
        let _ = handshake::parse(&owner, &text);
        let blocks: Vec<Block> = peers
            .into_iter()
            .filter(|(to, _)| *to != owner)
            .map(|(to, (accepted, time))| Block {
                from: owner.clone(),
                to,
                status: if accepted { HandshakeStatus::Accepted } else { HandshakeStatus::Requested },
                time: time.map(|t| clock::format_timestamp(&t)),
            })
            .collect();
        prop_assert_eq!(handshake::parse(&owner, &handshake::render(&blocks)), blocks);
    }

    #[test]
    fn stamp_rows_never_panic_and_read_back(
        id in any::<u64>(),
        text in any_text(),
        name in lower_id(),
        status in 0u8..3,
        task in proptest::option::of(one_line()),
        pid in proptest::option::of(any::<u32>()),
        at in timestamp(),
    ) {
        use crate::stamp::{Row, RowStatus};
        let _ = Row::parse(id, &text);
        let row = Row {
            id,
            partner_name: name,
            status: [RowStatus::Online, RowStatus::Offline, RowStatus::Crashed][status as usize],
            clocked_in: clock::format_timestamp(&at),
            clocked_out: None,
            last_heartbeat: Some(clock::format_timestamp(&at)),
            current_task: task,
            session_id: format!("s-{id}"),
            pid,
            host: pid.map(|_| "host".to_string()),
        };
        prop_assert_eq!(Row::parse(id, &row.render()), Ok(row));
    }
}
