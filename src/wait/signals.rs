//! Stopping a wait on a signal: the waiter leaves cleanly instead of dying mid-wait.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};

/// The signal that asked this process to stop (0: none), once [`stop_on_signals`] was called.
static STOP: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

std::thread_local! {
    static FINISHING: Cell<bool> = const { Cell::new(false) };
}

/// From now on, `SIGINT`, `SIGTERM` and `SIGHUP` no longer end this process at once: a wait in
/// progress ([`stop_requested`]) ends cleanly (the waiter leaves the queue and resets its
/// presence, as when the wait times out) and reports the signal.
pub fn stop_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let flag = STOP.get_or_init(Default::default);
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(sig, Arc::clone(flag), sig as usize)?;
    }
    Ok(())
}

/// Ask every wait of this process to end cleanly, as the signal `sig` would after
/// [`stop_on_signals`]: for a server whose client went away while a call of it waits
/// (`coord mcp`).
pub fn request_stop(sig: i32) {
    let flag = STOP.get_or_init(Default::default);
    let sig = usize::try_from(sig).unwrap_or(1).max(1);
    let _ = flag.compare_exchange(0, sig, SeqCst, SeqCst);
}

/// Run `f` with stop requests ignored on this thread: the cleanup after a wait that a stop
/// ended (leaving the queue, resetting the presence, clocking out) must still take the
/// workspace mutex when another process holds it for a moment.
pub fn finishing<T>(f: impl FnOnce() -> T) -> T {
    let before = FINISHING.with(|c| c.replace(true));
    let out = f();
    FINISHING.with(|c| c.set(before));
    out
}

/// The signal that asked this process to stop, if any (see [`stop_on_signals`]); `None`
/// inside [`finishing`].
pub fn stop_requested() -> Option<i32> {
    if FINISHING.with(Cell::get) {
        return None;
    }
    let sig = STOP.get()?.load(SeqCst);
    (sig != 0).then(|| i32::try_from(sig).unwrap_or(15))
}

/// `Interrupted` while waiting for `file()`, when a signal asked this process to stop.
pub fn stopped(file: impl FnOnce() -> String) -> crate::Result<()> {
    let Some(signal) = stop_requested() else {
        return Ok(());
    };
    let file = file();
    Err(crate::Error::Interrupted { signal, file })
}
