//! Stopping a wait on a signal: the waiter leaves cleanly instead of dying mid-wait.

/// Signals that end a wait cleanly once [`stop_on_signals`] was called: the waiter leaves the
/// queue and resets its presence, as when the wait times out, instead of dying mid-wait.
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::OnceLock::new();

/// From now on, `SIGINT`, `SIGTERM` and `SIGHUP` no longer end this process at once: a wait in
/// progress ([`stop_requested`]) ends cleanly and reports the signal. For commands that only
/// wait and then act briefly (`coord lock`), and for `coord run` until its command starts.
///
/// # Errors
///
/// When the handlers cannot be installed.
pub fn stop_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let flag = STOP.get_or_init(Default::default);
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(sig, std::sync::Arc::clone(flag), sig as usize)?;
    }
    Ok(())
}

/// The signal that asked this process to stop, if any (see [`stop_on_signals`]).
pub fn stop_requested() -> Option<i32> {
    let sig = STOP.get()?.load(std::sync::atomic::Ordering::SeqCst);
    (sig != 0).then(|| i32::try_from(sig).unwrap_or(15))
}
