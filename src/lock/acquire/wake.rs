//! Between two tries: what a waiter watches, and what it re-reads when woken before it takes
//! the mutex for a full try (so a release wakes every waiter but only the first in line tries).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::super::LockEntry;
use crate::arbiter::Policy;
use crate::fsutil::{self, RECORD_CAP};
use crate::host;
use crate::layout;
use crate::lock::queue;
use crate::wait::handoff::{Handoff, Woken};
use crate::wait::{Deadline, FolderWatch};
use crate::workspace::Target;

/// Where a waiter only re-reads the blocking lock, how often it tries in full (locks age too).
const FULL_TRY_EVERY: Duration = Duration::from_secs(1);

/// The longest sleep on a hand-off: how soon a stop is seen and the lock slept on re-read.
const HANDOFF_LOOK: Duration = Duration::from_millis(100);

/// What a woken waiter re-reads, without the mutex, before trying in full.
pub(super) struct Probe<'a> {
    /// The blocking lock and its bytes as read (later: the lock the waiter ahead took of ours).
    pub(super) record: RefCell<Option<(PathBuf, Vec<u8>)>>,
    /// Our queue folders and ticket number, when we hold no lock (else only a full try can judge).
    pub(super) queue: Option<(Vec<PathBuf>, u64)>,
    /// The ticket last seen just before ours: while it stands, we are not first.
    pub(super) ahead: RefCell<Option<PathBuf>>,
    /// The workspace root, and the files waited for.
    pub(super) at: (&'a Path, &'a [Target]),
    /// Our agent id (a lock of our own name is for a full try to judge).
    pub(super) agent: &'a str,
    /// Whether listings may lag (a ticket must open to count) and hand-offs work (local folders).
    pub(super) policy: &'a Policy,
}

/// What a woken waiter sees before trying in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// A ticket numbered before ours stands in one of our queues.
    Behind,
    /// First in line, the blocking lock unchanged and its process (if of this host) still running.
    Blocked,
    /// A full try may succeed.
    Changed,
}

impl Probe<'_> {
    /// Whether a full try would surely still find us blocked, and why.
    pub(super) fn look(&self) -> Look {
        if let Some((dirs, seq)) = &self.queue {
            let (last, open) = (self.ahead.take(), self.policy.exact_lookups);
            let ahead = (last.clone())
                .filter(|t| queue::ticket_stands(t, open))
                .or_else(|| {
                    dirs.iter()
                        .find_map(|d| queue::ticket_before(d, *seq, open))
                });
            if ahead.is_some() {
                self.ahead.replace(ahead);
                return Look::Behind;
            }
            // First in line now: the waiter just ahead most likely took its locks: we wait on them.
            if let Some(taken) = last.and_then(|t| self.taken_by(&t)) {
                self.record.replace(Some(taken));
                return Look::Blocked;
            }
        }
        // The blocking lock holds what it held (one read, no mutex), naming no gone local process.
        let unchanged = |path, raw: &[u8]| {
            fsutil::read_capped(path, RECORD_CAP).is_ok_and(|now| now == raw && process_alive(&now))
        };
        match &*self.record.borrow() {
            Some((path, raw)) if unchanged(path, raw) => Look::Blocked,
            _ => Look::Changed,
        }
    }

    /// The file whose owner lets it go when we may move on: the ticket just ahead, or the lock.
    fn in_front(&self, look: Look) -> Option<PathBuf> {
        match look {
            Look::Behind => self.ahead.borrow().clone(),
            Look::Blocked => self.record.borrow().as_ref().map(|(path, _)| path.clone()),
            Look::Changed => None,
        }
    }

    /// The lock (and bytes) of the agent of `ticket` (just ahead) on one of our files, if not gone.
    fn taken_by(&self, ticket: &Path) -> Option<(PathBuf, Vec<u8>)> {
        let name = ticket.file_name()?.to_str()?;
        let (_, agent) = layout::parse_ticket(name).filter(|(_, a)| *a != self.agent)?;
        self.at.1.iter().find_map(|t| {
            let path = layout::lock_file(&t.abs, agent);
            let raw = fsutil::read_capped(&path, RECORD_CAP).ok()?;
            process_alive(&raw).then_some((path, raw))
        })
    }
}

/// Whether a lock record does not name a process of this host that is gone.
fn process_alive(raw: &[u8]) -> bool {
    let e = LockEntry::new(PathBuf::new(), "".into(), "".into(), Some(raw.to_vec()));
    (e.process()).is_none_or(|(pid, h)| !host::recorded_process_gone(pid, h, e.process_start()))
}

/// What a waiter watches (names going away only): its queue folders, and its files' lock names.
pub(super) struct Watches {
    queue: FolderWatch,
    locks: FolderWatch,
}

/// How a waiter sleeps across tries: on the hand-off of what is in front of it, else on watches.
#[derive(Default)]
pub(super) struct Waits {
    pub(super) watches: Option<Watches>,
    hand: Option<Handoff>,
    /// The kernel refused a hand-off: watch folders from now on.
    refused: bool,
    /// The last sleep returned at once, on its first look, without sleeping.
    returned_at_once: bool,
}

pub(super) fn watch_for(root: &Path, targets: &[Target]) -> Watches {
    let mut queue = FolderWatch::new(&[]);
    for dir in queue::dirs(root, targets) {
        queue.add_removals(&dir, None);
    }
    let mut locks = FolderWatch::new(&[]);
    // A lock of the same path in another work tree of the repository blocks us too.
    let others = crate::worktree::others(root);
    for t in targets {
        if let (Some(dir), Some(base)) = (t.abs.parent(), t.abs.file_name()) {
            let prefix = (layout::lock_file(Path::new(base), "").to_string_lossy()).into_owned();
            let rel_dir = Path::new(&t.rel).parent().unwrap_or(Path::new(""));
            let there = (others.iter().map(|tree| tree.top.join(rel_dir))).filter(|d| d.is_dir());
            for dir in std::iter::once(dir.to_path_buf()).chain(there) {
                locks.add_removals(&dir, Some(vec![prefix.clone()]));
            }
        }
    }
    Watches { queue, locks }
}

/// Sleep until a full try is worth making.
pub(super) fn sleep(waits: &mut Waits, probe: &Probe, deadline: Deadline) {
    let ((root, targets), policy) = (probe.at, probe.policy);
    let (lags, hand_over) = (policy.exact_lookups, policy.fs.served_locally());
    let full_every = if lags { FULL_TRY_EVERY } else { policy.recheck };
    let since = Instant::now();
    let mut step = policy.recheck;
    // Blocked by the queue alone (no lock record), the last try found us behind.
    let before = if probe.record.borrow().is_none() && probe.queue.is_some() {
        Look::Behind
    } else {
        Look::Blocked
    };
    // Looking may end the sleep at once, but only once between two sleeps: some blocks look
    // changed without being so (a waiter holding locks ignores the queue), and we would spin.
    let may_return = !std::mem::take(&mut waits.returned_at_once);
    let mut at_once = |look: Look| {
        if look == Look::Changed && may_return {
            waits.returned_at_once = true;
            return None;
        }
        Some(if look == Look::Changed { before } else { look })
    };
    // What blocked the try may be gone; a waiter behind others learns whose ticket is just ahead.
    let first = if hand_over { probe.look() } else { before };
    let Some(mut look) = at_once(first) else {
        return;
    };
    loop {
        let in_front = probe.in_front(look).filter(|_| hand_over && !waits.refused);
        if waits.hand.as_ref().map(Handoff::path) != in_front.as_deref() {
            waits.hand = in_front.as_deref().and_then(Handoff::start);
        }
        if let Some(hand) = &waits.hand {
            match hand.wait(deadline.next_sleep(step.min(HANDOFF_LOOK))) {
                Woken::TimedOut => {}
                Woken::LetGo => waits.hand = None,
                Woken::Refused => {
                    waits.hand = None;
                    waits.refused = true;
                }
            }
        } else {
            let Some(w) = &mut waits.watches else {
                waits.watches = Some(watch_for(root, targets));
                // Watched from now on: what we looked at may have changed before.
                match at_once(probe.look()) {
                    Some(now) => look = now,
                    None => break,
                }
                continue;
            };
            let watch = if look == Look::Behind {
                &mut w.queue
            } else {
                &mut w.locks
            };
            watch.wait(deadline.next_sleep(step));
        }
        if since.elapsed() >= full_every
            || deadline.passed()
            || crate::wait::stop_requested().is_some()
        {
            break;
        }
        look = probe.look();
        step = match look {
            Look::Changed => break,
            Look::Blocked if lags => (policy.recheck / 5).max(FIRST_IN_LINE_MIN),
            Look::Blocked | Look::Behind => policy.recheck,
        };
    }
}

/// The shortest re-check of the first in line where events do not cross machines.
const FIRST_IN_LINE_MIN: Duration = Duration::from_millis(5);
