//! A supervised child that dies with its supervisor: `coord session` asks the kernel to kill
//! CMD (`SIGKILL`) the moment coord itself dies, even by `kill -9`, so an agent never goes on
//! editing after the locks its session took were judged STALE and handed to someone else.
//!
//! This is the one place coord runs code between `fork` and `exec` (`pre_exec`, which Rust
//! marks `unsafe`): two raw system calls, both async-signal-safe, and no allocation. Where the
//! kernel has no such request (not Linux), nothing is asked and the session's locks still go
//! STALE with coord; docs/sessions.md says so.
#![allow(unsafe_code)]

use std::process::Command;

/// Make the child that `command` starts die (`SIGKILL`) when this process dies. If this
/// process is already gone by the time the child could ask, the child does not start.
pub fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        let parent = rustix::process::getpid();
        // SAFETY: the closure runs in the child between fork and exec; it only makes two system
        // calls (prctl, getppid) through rustix, which are async-signal-safe, and builds an
        // `io::Error` from a raw code, which does not allocate.
        unsafe {
            command.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))?;
                // The parent died before the request was made: it would never fire.
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::from_raw_os_error(
                        rustix::io::Errno::SRCH.raw_os_error(),
                    ));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}
