//! `/api/events`: the workspace's history as Server-Sent Events, one event a message, its
//! `data` the object `coord log --json` prints for it and its `id` the event's place in the
//! history ([`Position`]). A page that reconnects sends the last id it got (`Last-Event-ID`, as
//! browsers do) and is sent what followed it, so no event is missed across a dropped
//! connection, a rotation of the log or `.coord/` removed and made again (the
//! [`Tail`]'s guarantees). A comment line every [`KEEP_ALIVE`] keeps proxies and the page's
//! own timeout from closing a quiet stream.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::clock::Timestamp;
use crate::history::{self, Position, Tail};

/// How often the log is looked at (a `stat`, and a read when it grew).
pub const POLL: Duration = Duration::from_millis(100);

/// How long a stream stays silent before a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where a stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// With the events written from now on.
    Now,
    /// With the events kept that happened at or after this time (`?since=DUR`).
    Since(Timestamp),
    /// Just after the event with this id (`Last-Event-ID`: a reconnection).
    After(Position),
}

impl Start {
    /// From the request: `Last-Event-ID` first, then `since` (a duration, as `coord log
    /// --since` takes); `Err(400)` for a value that does not parse.
    ///
    /// # Errors
    ///
    /// 400, the status code of the answer, when either value does not parse.
    pub fn of(since: Option<&str>, last_event_id: Option<&str>) -> Result<Start, u16> {
        match (last_event_id, since) {
            (Some(id), _) => id.parse().map(Start::After).map_err(|()| 400),
            (None, Some(dur)) => history::since(dur).map(Start::Since).map_err(|_| 400),
            (None, None) => Ok(Start::Now),
        }
    }
}

/// Send the answer's head, then the events from `start` as they are written, until the
/// client goes away.
pub fn stream(root: &Path, start: Start, out: &mut impl Write) -> std::io::Result<()> {
    let (mut tail, since) = match start {
        Start::Now => (Tail::from_end(root), None),
        Start::Since(t) => (Tail::from_oldest(root), Some(t)),
        Start::After(pos) => (Tail::from_position(root, pos), None),
    };
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
          Connection: close\r\nX-Content-Type-Options: nosniff\r\n\r\nretry: 1000\n\n",
    )?;
    out.flush()?;
    let mut said = Instant::now();
    loop {
        let text = messages(tail.poll_positioned(), since);
        if !text.is_empty() || said.elapsed() >= KEEP_ALIVE {
            out.write_all(if text.is_empty() {
                b": keep-alive\n\n"
            } else {
                text.as_bytes()
            })?;
            out.flush()?;
            said = Instant::now();
        }
        std::thread::sleep(POLL);
    }
}

/// The SSE messages of `events` (those before `since` left out). An event is one line of
/// JSON: the serializer escapes every line break inside its strings.
fn messages(events: Vec<(Position, history::Event)>, since: Option<Timestamp>) -> String {
    let mut text = String::new();
    for (pos, e) in events {
        if since.is_some_and(|t| e.time().is_none_or(|at| at < t)) {
            continue;
        }
        if let Ok(json) = serde_json::to_string(&e) {
            text.push_str(&format!("id: {pos}\ndata: {json}\n\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, Kind};

    #[test]
    fn an_event_is_one_message_whatever_its_text() {
        let pos = Position {
            file: (1, 2),
            offset: 30,
        };
        let e = Event::new(Kind::LockTaken, "a").file("x\n\ry <script>\u{2028}");
        let text = messages(vec![(pos, e.clone())], None);
        assert_eq!(text.matches("\n\n").count(), 1, "{text}");
        let data = text.strip_prefix("id: 1-2-30\ndata: ").unwrap().trim_end();
        assert_eq!(data, serde_json::to_string(&e).unwrap());
        assert_eq!(Start::of(None, Some("1-2-30")), Ok(Start::After(pos)));
        assert_eq!(Start::of(Some("5m"), Some("1-2")), Err(400));
        assert_eq!(Start::of(Some("soon"), None), Err(400));
        assert_eq!(Start::of(None, None), Ok(Start::Now));
    }
}
