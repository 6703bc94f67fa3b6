//! What a waiting command says while it waits for a lock: who holds it, in what state, until
//! when, how long it has waited and how long it will.

use std::io::{IsTerminal as _, Write as _};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use coord::clock::{self, Wait};
use coord::lock::{Blocker, LockEvent};

use super::output;

const TICK: Duration = Duration::from_secs(1);

/// The wait's voice; quiet when asked to be.
pub struct WaitProgress {
    wait: Wait,
    quiet: bool,
    started: Instant,
    /// The live line, on a terminal, once the wait began.
    live: Option<Live>,
}

/// The ticker redraws each new text and every TICK; it ends, giving its last text, with `text`.
struct Live {
    text: mpsc::Sender<String>,
    ticker: std::thread::JoinHandle<String>,
}

impl WaitProgress {
    pub fn new(wait: Wait, quiet: bool) -> WaitProgress {
        WaitProgress {
            wait,
            quiet,
            started: Instant::now(),
            live: None,
        }
    }

    /// Run `op`, which waits for locks, with its events said; the live line ends with it (drop).
    pub fn during<T>(
        wait: Wait,
        quiet: bool,
        op: impl FnOnce(&mut dyn FnMut(&LockEvent)) -> T,
    ) -> T {
        let mut progress = WaitProgress::new(wait, quiet);
        op(&mut |event| progress.on_event(event))
    }

    pub fn on_event(&mut self, event: &LockEvent) {
        if self.quiet {
            return;
        }
        let terminal =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        match event {
            LockEvent::Waiting(b) if terminal => {
                let (mut shown, (started, wait)) = (status(b), (self.started, self.wait));
                draw(&shown, started, wait);
                let (text, texts) = mpsc::channel();
                let ticker = std::thread::spawn(move || {
                    loop {
                        match texts.recv_timeout(TICK) {
                            Ok(text) => shown = text,
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => return shown,
                        }
                        draw(&shown, started, wait);
                    }
                });
                self.live = Some(Live { text, ticker });
            }
            LockEvent::Changed(b) if terminal => {
                if let Some(live) = &self.live {
                    let _ = live.text.send(status(b));
                }
            }
            LockEvent::Waiting(b) => {
                let until = match self.wait.as_duration() {
                    Some(d) => format!("waiting up to {}", clock::format_duration(d)),
                    None => "waiting with no deadline".to_string(),
                };
                output::diag(&format!("{} [{until}; Ctrl-C to stop]", status(b)));
            }
            LockEvent::Changed(b) => {
                let now = || output::waiting_line(b).replacen("waiting for", "now", 1);
                let news = news(b).unwrap_or_else(now);
                let waited = elapsed(self.started, self.wait);
                output::diag(&format!("`{}`: {news} [{waited}]", b.file));
            }
        }
    }

    /// The wait is over: the live line becomes a plain line (what was waited for, how long).
    pub fn finish(&mut self) {
        if let Some(live) = self.live.take() {
            drop(live.text);
            let text = live.ticker.join().unwrap_or_default();
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "\r\x1b[K{text} [waited {}]", waited(self.started));
        }
    }
}

impl Drop for WaitProgress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The live line's text without the clock: who holds it and what is known.
fn status(b: &Blocker) -> String {
    let line = output::waiting_line(b);
    news(b).map_or_else(|| line.clone(), |n| format!("{line}; {n}"))
}

fn draw(text: &str, started: Instant, wait: Wait) {
    let (mut err, elapsed) = (std::io::stderr().lock(), elapsed(started, wait));
    let _ = write!(err, "\r\x1b[K{text} [{elapsed}; Ctrl-C to stop]");
    let _ = err.flush();
}

/// `waited 12s of 2m`, or `waited 12s` with no deadline.
fn elapsed(started: Instant, wait: Wait) -> String {
    let waited = waited(started);
    match wait.as_duration() {
        Some(d) => format!("waited {waited} of {}", clock::format_duration(d)),
        None => format!("waited {waited}"),
    }
}

/// How long since `started`, in whole seconds (`12s`).
fn waited(started: Instant) -> String {
    clock::format_duration(Duration::from_secs(started.elapsed().as_secs()))
}

/// What is known beyond who holds it: the process the lock follows, the holder's state, when
/// the lock can be taken over.
pub fn news(b: &Blocker) -> Option<String> {
    use coord::presence::AgentState;
    if b.queued_ahead > 0 {
        return None;
    }
    if let Some(pid) = b.follows.filter(|f| f.client).map(|f| f.pid) {
        return Some(format!("held while its agent client (process {pid}) runs"));
    }
    let when = b.takeable_at.as_ref().map(|t| {
        if *t <= clock::now() {
            "it can be taken over now".to_string()
        } else {
            format!("it can be taken over at {}", t.format("%H:%M:%S"))
        }
    });
    let holder = output::clean(&b.holder);
    match (b.holder_state, when) {
        (Some(AgentState::Active), _) => None,
        (Some(state), Some(when)) => Some(format!("{holder} is {}; {when}", state.as_str())),
        (None, Some(when)) => Some(format!("{holder} has no presence; {when}")),
        (_, None) => None,
    }
}
