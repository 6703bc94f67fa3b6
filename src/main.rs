//! The `coord` binary: parse the command line, run it, turn the outcome into an exit code.
//!
//! On Linux with glibc the binary brings its own C `main` (`#![no_main]`) rather than std's
//! start-up. coord runs as one short process per `lock`, `unlock` and edit hook, and std's start-up
//! spends about a tenth of such a process preparing for a stack overflow: it reads
//! `/proc/self/maps` to find the main thread's stack and installs an alternate signal stack and
//! handler. coord does what the rest of std's start-up does itself ([`prepare`]); a stack overflow,
//! which coord has no deep recursion to cause, ends the process with SIGSEGV instead of a message.
//! std still has the arguments (glibc hands them to std's own initialiser, which is why this is
//! glibc only), and `std::process::exit` still flushes stdout.

// Not under `cargo test`, whose harness brings its own `main`.
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

mod arena;
mod cli;

/// Short commands allocate from a static block first (see [`arena`]).
#[global_allocator]
static ALLOC: arena::Arena = arena::Arena::new();

/// The C entry point. std collects `argc`/`argv` itself (glibc passes them to its
/// initialisers), so they are not needed here.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[allow(unsafe_code)] // A C `main` must have this unmangled name; the function itself is safe.
#[unsafe(no_mangle)]
extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    prepare();
    // A panic must not unwind into C: where panics unwind it ends the process as std's start-up
    // would (101); a release build aborts at the panic itself, as before.
    let code = std::panic::catch_unwind(cli::run).map_or(101, |code| code.code());
    // `exit` flushes stdout, as returning from std's `main` does.
    std::process::exit(code)
}

#[cfg(any(not(all(target_os = "linux", target_env = "gnu")), test))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(cli::run().code() as u8)
}

/// What std's start-up does that coord relies on: file descriptors 0, 1 and 2 are open (else a
/// file coord opens could take one, and a message meant for stdout would land in it; the
/// commands coord starts inherit them too), and a closed pipe on stdout is an error to handle
/// (`coord status | head -1`), not a SIGPIPE that kills the process mid-write.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
fn prepare() {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::os::fd::IntoRawFd;

    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let mut fds = [
        PollFd::new(&stdin, PollFlags::empty()),
        PollFd::new(&stdout, PollFlags::empty()),
        PollFd::new(&stderr, PollFlags::empty()),
    ];
    if poll(&mut fds, Some(&Timespec::default())).is_ok() {
        // `open` takes the lowest free number, so closed ones are filled in order.
        for fd in &fds {
            #[allow(clippy::disallowed_methods)] // A device, not a file of the protocols.
            let null = || {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")
            };
            if fd.revents().contains(PollFlags::NVAL)
                && let Ok(null) = null()
            {
                // Rust opens files close-on-exec; these stand for the standard streams, which
                // the commands coord starts (`coord run`, `coord session`) inherit.
                let _ = rustix::io::fcntl_setfd(&null, rustix::io::FdFlags::empty());
                let _ = null.into_raw_fd();
            }
        }
    }
    // A handled SIGPIPE makes the write fail with EPIPE; children start with the default again.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGPIPE,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
}
