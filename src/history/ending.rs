//! Endings: the events one agent writes as its turn or its session ends (its locks and claims
//! released, waiting for its user or no longer, clocking out), read as one line by the views
//! people read (`coord log`, `coord watch`). The history keeps one event per transition, and
//! `--json` prints each: only the words fold.

use std::time::Duration;

use super::Event;
use crate::clock::{self, Timestamp};

/// How far apart the events of one ending may be.
pub const WINDOW: Duration = Duration::from_secs(2);

/// One line of a view: an event as written, or an ending.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An event, read on its own.
    One(Event),
    /// The events of one ending, read together.
    Ending(Ending),
}

/// The events of one ending, summed up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ending {
    /// Its first event (its time, agent, work tree, client and session stand for all).
    pub first: Event,
    /// The files released, in order.
    pub released: Vec<String>,
    /// The claims released (their patterns), in order.
    pub claims: Vec<String>,
    /// The agent clocked out.
    pub left: bool,
    /// What it waits for its user for, when the ending leaves it waiting (not when it left).
    pub waits: Option<String>,
}

/// Events in, lines out: each event is pushed as it comes; an ending is given out once it is
/// over (another event came, or [`WINDOW`] passed), an event that cannot be part of one at once.
#[derive(Debug, Default)]
pub struct Endings {
    /// The events of the run still open.
    open: Vec<Event>,
}

impl Endings {
    /// Push the next event; the lines that are complete now.
    pub fn push(&mut self, e: Event) -> Vec<Item> {
        let ending = match e.event.as_str() {
            "lock_released" => !e.extra.contains_key("forced"),
            "claim_released" | "needs_user" | "user_answered" | "agent_left" => true,
            _ => false,
        };
        let same_run = self.open.first().is_some_and(|first| {
            first.agent == e.agent
                && first.session == e.session
                && matches!((self.last(), e.time()), (Some(last), Some(at)) if clock::age(&at, &last) <= WINDOW)
        });
        let mut out = if ending && same_run {
            Vec::new()
        } else {
            self.finish()
        };
        if ending {
            self.open.push(e);
        } else {
            out.push(Item::One(e));
        }
        out
    }

    /// The endings over by `now` (their last event more than [`WINDOW`] before it).
    pub fn due(&mut self, now: &Timestamp) -> Vec<Item> {
        match self.last() {
            Some(last) if clock::age(now, &last) <= WINDOW => Vec::new(),
            _ => self.finish(),
        }
    }

    fn last(&self) -> Option<Timestamp> {
        self.open.last()?.time()
    }

    /// The run still open, closed: one [`Ending`] when it has two or more events and one of them
    /// releases (is more than a user's question asked or answered), else each event on its own.
    pub fn finish(&mut self) -> Vec<Item> {
        let events = std::mem::take(&mut self.open);
        let asks = |e: &Event| matches!(e.event.as_str(), "needs_user" | "user_answered");
        if events.len() < 2 || events.iter().all(asks) {
            return events.into_iter().map(Item::One).collect();
        }
        let mut ending = Ending {
            first: events[0].clone(),
            ..Ending::default()
        };
        for e in &events {
            match e.event.as_str() {
                "lock_released" => ending.released.extend(e.file.clone()),
                "claim_released" => ending.claims.extend(e.pattern.clone()),
                "agent_left" => ending.left = true,
                "needs_user" => ending.waits = Some(e.str("what").unwrap_or("").to_string()),
                "user_answered" => ending.waits = None,
                _ => {}
            }
        }
        if ending.left {
            ending.waits = None;
        }
        vec![Item::Ending(ending)]
    }
}

/// `events` (oldest first) as the lines a person reads.
pub fn fold(events: impl IntoIterator<Item = Event>) -> Vec<Item> {
    let mut endings = Endings::default();
    let mut lines: Vec<Item> = events.into_iter().flat_map(|e| endings.push(e)).collect();
    lines.extend(endings.finish());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Kind;

    fn at(kind: Kind, agent: &str, ms: i64) -> Event {
        let base = clock::parse_timestamp("2026-01-28T10:00:00+00:00").unwrap();
        Event {
            at: (base + chrono::Duration::milliseconds(ms))
                .format("%Y-%m-%dT%H:%M:%S%.3f%:z")
                .to_string(),
            session: Some("s1".into()),
            ..Event::new(kind, agent)
        }
    }

    #[test]
    fn a_print_sessions_end_is_one_line() {
        let events = vec![
            at(Kind::LockTaken, "c", 0).file("a.rs"),
            at(Kind::LockReleased, "c", 900).file("a.rs"),
            at(Kind::LockReleased, "c", 901).file("b.rs"),
            at(Kind::NeedsUser, "c", 960).with("what", "its turn"),
            at(Kind::AgentLeft, "c", 1500),
            at(Kind::UserAnswered, "c", 1501),
            at(Kind::LockTaken, "d", 1600).file("a.rs"),
        ];
        let lines = fold(events);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        let Item::Ending(end) = &lines[1] else {
            panic!("{lines:#?}");
        };
        assert_eq!(end.released, ["a.rs", "b.rs"]);
        assert!(end.left);
        assert_eq!(end.waits, None);
        assert!(matches!(&lines[2], Item::One(e) if e.agent == "d"));
        // Another agent's event in the middle: read in the order written.
        let lines = fold(vec![
            at(Kind::LockReleased, "c", 0).file("a.rs"),
            at(Kind::LockTaken, "d", 10).file("a.rs"),
            at(Kind::AgentLeft, "c", 20),
        ]);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines.iter().all(|l| matches!(l, Item::One(_))));
    }

    #[test]
    fn a_turn_that_ends_waiting_says_so_and_lone_events_stay_as_they_are() {
        let lines = fold(vec![
            at(Kind::LockReleased, "c", 0).file("a.rs"),
            at(Kind::NeedsUser, "c", 10).with("what", "its turn"),
            // Much later: another ending.
            at(Kind::AgentLeft, "c", 60_000),
            // A question answered: no release, no ending.
            at(Kind::NeedsUser, "e", 61_000).with("what", "permission"),
            at(Kind::UserAnswered, "e", 61_100),
        ]);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        let Item::Ending(end) = &lines[0] else {
            panic!("{lines:#?}");
        };
        assert_eq!(end.waits.as_deref(), Some("its turn"));
        assert!(!end.left);
        assert!(matches!(&lines[1], Item::One(e) if e.event == "agent_left"));
        assert!(matches!(&lines[3], Item::One(e) if e.event == "user_answered"));
    }

    #[test]
    fn an_ending_is_given_out_once_over_or_another_event_comes() {
        let mut endings = Endings::default();
        let first = at(Kind::LockReleased, "c", 0).file("a");
        assert!(endings.push(first).is_empty());
        assert!(endings.push(at(Kind::AgentLeft, "c", 100)).is_empty());
        let soon = clock::parse_timestamp("2026-01-28T10:00:01+00:00").unwrap();
        assert!(endings.due(&soon).is_empty());
        let later = clock::parse_timestamp("2026-01-28T10:00:03+00:00").unwrap();
        assert!(matches!(endings.due(&later)[..], [Item::Ending(_)]));
        // Another event closes it at once, before that event.
        endings.push(at(Kind::LockReleased, "c", 4000).file("a"));
        let out = endings.push(at(Kind::LockTaken, "c", 4100).file("b"));
        assert!(matches!(
            &out[..],
            [Item::One(r), Item::One(t)] if r.event == "lock_released" && t.event == "lock_taken"
        ));
    }
}
