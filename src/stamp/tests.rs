//! The stamp card: rows, scans, startup and shutdown.

use super::*;

fn sample() -> Row {
    Row {
        id: 7,
        partner_name: "claude".into(),
        status: RowStatus::Online,
        clocked_in: "2026-01-28T01:00:00+01:00".into(),
        clocked_out: None,
        last_heartbeat: Some("2026-01-28T01:05:00+01:00".into()),
        current_task: Some("Task_123".into()),
        session_id: "claude-7-abcdef".into(),
        pid: None,
        host: None,
    }
}

#[test]
fn rows_render_and_parse_back() {
    let row = sample();
    let text = row.render();
    assert_eq!(
        text,
        "id: 7\npartner_name: claude\nstatus: online\nclocked_in: 2026-01-28T01:00:00+01:00\n\
         clocked_out: -\nlast_heartbeat: 2026-01-28T01:05:00+01:00\ncurrent_task: Task_123\n\
         session_id: claude-7-abcdef\n"
    );
    assert_eq!(Row::parse(7, &text).unwrap(), row);
}

#[test]
fn hand_written_rows_are_read_leniently() {
    let text = "partner_name: Gemini\nstatus: ONLINE\nclocked_in: 2026-01-28T01:00:00\n";
    let row = Row::parse(3, text).unwrap();
    let read = (&*row.partner_name, row.status, &*row.session_id);
    assert_eq!(read, ("gemini", RowStatus::Online, "row-3"));
    assert!(Row::parse(3, "partner_name: x\nstatus: maybe\nclocked_in: now\n").is_err());
    assert!(Row::parse(3, "status: online\nclocked_in: now\n").is_err());
    assert!(Row::parse(3, "\u{0}\u{1}binary").is_err());
}

#[test]
fn crash_needs_five_silent_minutes() {
    let row = sample();
    let soon = clock::parse_timestamp("2026-01-28T01:10:00+01:00").unwrap();
    assert_eq!(row.crash_reason(&soon), None);
    let later = clock::parse_timestamp("2026-01-28T01:10:01+01:00").unwrap();
    assert!(row.crash_reason(&later).unwrap().contains("no heartbeat"));
    let mut off = row.clone();
    off.status = RowStatus::Offline;
    assert_eq!(off.crash_reason(&later), None);
}
