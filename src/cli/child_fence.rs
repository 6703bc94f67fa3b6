//! The children whose life coord fences: a supervised child that dies with its supervisor
//! ([`die_with_parent`]: `coord session`'s and `coord run`'s CMD, even when coord dies by `kill -9`, so an agent
//! never edits on after its locks went STALE), and a detached child that outlives the command
//! that started it ([`detach`]: the remote claims' renewer and background syncs).
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

/// Make the child a session of its own with no inherited descriptor beyond stdio, so it never
/// holds open a pipe of whoever started coord (a client waiting for a hook's output to end).
pub fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // Listed here, so that the child allocates nothing: Rust opens every descriptor of its
    // own close-on-exec, but those inherited from coord's parent may not be.
    let inherited = open_descriptors();
    // SAFETY: the closure runs in the child between fork and exec; it makes only system calls
    // (setsid, fcntl) through rustix, which are async-signal-safe, on descriptor numbers
    // listed before the fork; a number closed since is refused by the kernel (EBADF), and
    // adding close-on-exec to one reused since (the pipe Rust reports a failed exec through
    // is close-on-exec already) changes nothing.
    unsafe {
        command.pre_exec(move || {
            rustix::process::setsid()?;
            for &fd in &inherited {
                let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
                let _ = rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC);
            }
            Ok(())
        });
    }
}

/// The descriptors of this process above stderr (`/proc/PID/fd`, else `/dev/fd`).
fn open_descriptors() -> Vec<i32> {
    let own = std::path::PathBuf::from(format!("/proc/{}/fd", std::process::id()));
    let names = coord::fsutil::list_names(&own)
        .or_else(|_| coord::fsutil::list_names(std::path::Path::new("/dev/fd")))
        .unwrap_or_default();
    let above_stderr = |n: &std::ffi::OsString| n.to_str()?.parse().ok().filter(|fd| *fd > 2);
    names.iter().filter_map(above_stderr).collect()
}
