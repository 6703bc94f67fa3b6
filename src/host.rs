//! This machine and its processes: the host name recorded in lock files, whether a recorded
//! process still lives, and the short host tag used in temporary file names.

use std::sync::OnceLock;

/// This machine's host name (`uname -n`).
pub fn hostname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let uts = rustix::system::uname();
        let name = uts.nodename().to_string_lossy();
        let name = if name.is_empty() { "localhost" } else { &name };
        name.to_string()
    })
}

/// A short, stable tag for this host (8 hex digits), safe in file names.
pub fn host_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| format!("{:08x}", fnv1a64(hostname().as_bytes()) as u32))
}

/// Where a command comes from, as a lock's `origin:` line says it: its coord session
/// (`session ID`), else its POSIX session (`sid N`), else its pid namespace (`pidns N`).
/// Found once: none of them changes in a process's life.
pub fn origin() -> &'static str {
    static ORIGIN: OnceLock<String> = OnceLock::new();
    ORIGIN.get_or_init(|| {
        let session = std::env::var("COORD_SESSION").unwrap_or_default();
        if !session.trim().is_empty() {
            return format!("session {}", session.trim());
        }
        if let Some(sid) = own_ids().session {
            return format!("sid {sid}");
        }
        // The session's leader lives outside this pid namespace (a container or sandbox): every
        // command started in it from outside shares that session, so the namespace stands for it.
        // Its inode number, from `/proc/self/ns/pid` (`pid:[4026531836]`).
        let link = std::fs::read_link("/proc/self/ns/pid").ok();
        let ns = link
            .as_ref()
            .and_then(|l| l.to_str()?.strip_prefix("pid:[")?.strip_suffix(']'));
        ns.map_or_else(|| format!("pid {}", pid()), |ns| format!("pidns {ns}"))
    })
}

/// This process's group, session and terminal foreground group (`None`: not known).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct OwnIds {
    group: Option<i32>,
    session: Option<i32>,
    terminal_group: Option<i32>,
}

fn own_ids() -> OwnIds {
    #[cfg(target_os = "linux")]
    {
        let stat = read_proc("/proc/self/stat").and_then(|stat| String::from_utf8(stat).ok());
        stat.map_or_else(OwnIds::default, |stat| parse_stat_ids(&stat))
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::os::fd::AsFd as _;
        let raw = |p: rustix::process::Pid| Some(p.as_raw_nonzero().get());
        OwnIds {
            group: raw(rustix::process::getpgrp()),
            session: rustix::process::getsid(None).ok().and_then(raw),
            terminal_group: [
                std::io::stdin().as_fd(),
                std::io::stdout().as_fd(),
                std::io::stderr().as_fd(),
            ]
            .into_iter()
            .find_map(|fd| rustix::termios::tcgetpgrp(fd).ok())
            .and_then(raw),
        }
    }
}

/// The group, session and terminal foreground group fields of a `/proc/PID/stat` line.
#[cfg(any(target_os = "linux", test))]
fn parse_stat_ids(stat: &str) -> OwnIds {
    let fields: Vec<&str> = stat_fields(stat).collect();
    let id = |i: usize| fields.get(i)?.parse::<i32>().ok().filter(|v| *v > 0);
    OwnIds {
        group: id(2),
        session: id(3),
        terminal_group: id(5),
    }
}

/// The fields of a `/proc/PID/stat` line after the command name (0: the state), which may
/// itself hold spaces and parentheses: they start after its last `)`.
fn stat_fields(stat: &str) -> impl Iterator<Item = &str> {
    let after_name = stat.rfind(')').map(|end| &stat[end + 1..]);
    after_name.into_iter().flat_map(str::split_whitespace)
}

/// Whether this process runs in the foreground of a terminal on its stdin, stdout or stderr.
pub fn in_terminal_foreground() -> bool {
    use std::os::fd::AsFd as _;
    let on_terminal = [
        std::io::stdin().as_fd(),
        std::io::stdout().as_fd(),
        std::io::stderr().as_fd(),
    ]
    .into_iter()
    .any(rustix::termios::isatty);
    // The ids only when it matters: reading them costs a file read.
    on_terminal && {
        let ids = own_ids();
        ids.group.is_some() && ids.group == ids.terminal_group
    }
}

/// This process's id.
pub fn pid() -> u32 {
    std::process::id()
}

/// Whether process `pid` exists on this host.
pub fn pid_alive(pid: u32) -> bool {
    probe(pid).is_some()
}

/// `Some` when process `pid` exists on this host ([`pid_alive`]), with its `/proc` stat line
/// when that was read to tell (a process this one may signal could be a zombie; another
/// user's is alive without a look).
fn probe(pid: u32) -> Option<Option<String>> {
    if pid == self::pid() {
        return Some(None);
    }
    let id = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
    match rustix::process::test_kill_process(id) {
        Ok(()) => {
            let stat = stat_line(pid);
            let state = stat.as_deref().and_then(|s| stat_fields(s).next());
            (state != Some("Z")).then_some(stat)
        }
        Err(e) if e == rustix::io::Errno::PERM => Some(None),
        Err(_) => None,
    }
}

/// Whether a process recorded as (`pid`, `host`) is known to be gone, or (with its recorded
/// `start`) its number reused by a process started at another time.
pub fn recorded_process_gone(pid: u32, host: &str, start: Option<u64>) -> bool {
    if host != hostname() {
        return false;
    }
    let Some(stat) = probe(pid) else {
        return true;
    };
    // The stat line read to tell a zombie tells the start time too.
    let now = || started(&stat.or_else(|| stat_line(pid))?);
    pid != self::pid() && start.is_some_and(|recorded| now().is_some_and(|now| now != recorded))
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`, field 22).
pub fn start_time(pid: u32) -> Option<u64> {
    let read = |pid| started(&stat_line(pid)?);
    if pid != self::pid() {
        return read(pid);
    }
    static OWN: OnceLock<Option<u64>> = OnceLock::new();
    *OWN.get_or_init(|| read(pid))
}

/// The start time a `/proc/<pid>/stat` line gives (see [`start_time`]).
fn started(stat: &str) -> Option<u64> {
    stat_fields(stat).nth(19)?.parse().ok()
}

fn stat_line(pid: u32) -> Option<String> {
    let stat = read_proc(&format!("/proc/{pid}/stat"))?;
    Some(String::from_utf8_lossy(&stat).into_owned())
}

/// A `/proc` file whole, read into room for the usual line at once (it tells no size ahead);
/// opened and read through rustix, which asks no `fcntl`, `fstat` or `lseek` around it.
fn read_proc(path: &str) -> Option<Vec<u8>> {
    use rustix::{fs::Mode, fs::OFlags, io::Errno};
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let (mut bytes, mut len) = (vec![0; 1024], 0);
    loop {
        if len == bytes.len() {
            bytes.resize(2 * len, 0);
        }
        match rustix::io::read(&fd, &mut bytes[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    bytes.truncate(len);
    Some(bytes)
}

/// The command name of process `pid` (`/proc/<pid>/comm`), when it can be read.
pub fn command_name(pid: u32) -> Option<String> {
    let comm = String::from_utf8(read_proc(&format!("/proc/{pid}/comm"))?).ok()?;
    Some(comm.trim_end_matches('\n').to_string())
}

/// The arguments of process `pid` (`/proc/<pid>/cmdline`), when they can be read.
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    let raw = read_proc(&format!("/proc/{pid}/cmdline"))?;
    let args = raw.split(|b| *b == 0).filter(|a| !a.is_empty());
    let args = args.map(|a| String::from_utf8_lossy(a).into_owned());
    Some(args.collect())
}

/// Whether the standard input of process `pid` is a terminal; `None` when that cannot be read.
pub fn stdin_is_terminal(pid: u32) -> Option<bool> {
    let target = std::fs::read_link(format!("/proc/{pid}/fd/0")).ok()?;
    let target = target.to_string_lossy();
    let terminals = ["/dev/pts/", "/dev/tty", "/dev/console"];
    Some(terminals.iter().any(|t| target.starts_with(t)))
}

/// The process that ran this one: its parent, or the parent of coord's npm launcher.
pub fn invoker() -> u32 {
    let parent = std::os::unix::process::parent_id();
    match std::env::var("COORD_LAUNCHER_PID") {
        Ok(v) if v.parse() == Ok(parent) => parent_of_pid(parent).unwrap_or(parent),
        _ => parent,
    }
}

/// Whether `pid` is an ancestor of this process (`false` where there is no `/proc`).
pub fn is_ancestor(pid: u32) -> bool {
    ancestors().any(|a| a == pid)
}

/// This process's parent, its parent, and so on (at most 64, read as asked).
pub fn ancestors() -> impl Iterator<Item = u32> {
    // Not `iter::successors`: it reads the next parent before the caller asks for it.
    let mut last = None;
    std::iter::from_fn(move || {
        let pid = match last {
            None => std::os::unix::process::parent_id(),
            Some(p) if p > 1 => parent_of_pid(p)?,
            Some(_) => return None,
        };
        last = Some(pid);
        Some(pid)
    })
    .take(64)
}

/// The parent of process `pid`, from `/proc/<pid>/stat`; `None` when it cannot be read.
pub fn parent_of_pid(pid: u32) -> Option<u32> {
    stat_fields(&stat_line(pid)?).nth(1)?.parse().ok()
}

/// 64-bit FNV-1a: a small, stable hash for names on disk (not for security).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A random 64-bit value for tokens, from the OS's hashing keys and the clock.
pub fn random_u64() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u32(pid());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    h.finish()
}

/// A supervised command's process group (`coord run`, `coord session`).
#[derive(Debug, Clone, Copy)]
pub struct ProcessGroup {
    pgid: rustix::process::Pid,
}

impl ProcessGroup {
    /// Whether a command started now should get a process group of its own.
    pub fn wanted() -> bool {
        !in_terminal_foreground()
    }

    /// The group led by child `pid` (started with `process_group(0)`).
    pub fn led_by(pid: u32) -> Option<ProcessGroup> {
        let pgid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
        Some(ProcessGroup { pgid })
    }

    /// Send `sig` to every process of the group (best effort).
    pub fn signal(&self, sig: rustix::process::Signal) {
        let _ = rustix::process::kill_process_group(self.pgid, sig);
    }

    /// Whether any process of the group is left.
    pub fn alive(&self) -> bool {
        match rustix::process::test_kill_process_group(self.pgid) {
            Ok(()) => true,
            Err(e) => e == rustix::io::Errno::PERM,
        }
    }

    /// Wait until the group has ended, killing what is left at `deadline`; whether it is gone.
    pub fn wait_gone(&self, deadline: std::time::Instant) -> bool {
        let wait_until = |until| {
            while self.alive() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        };
        wait_until(deadline);
        if self.alive() {
            self.signal(rustix::process::Signal::KILL);
            wait_until(std::time::Instant::now() + std::time::Duration::from_secs(2));
        }
        !self.alive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper(secs: &str) -> std::process::Child {
        std::process::Command::new("sleep")
            .arg(secs)
            .spawn()
            .unwrap()
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(pid_alive(pid()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let child_pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(child_pid));
        assert!(recorded_process_gone(child_pid, hostname(), None));
        let elsewhere = "another-host.example";
        assert!(!recorded_process_gone(child_pid, elsewhere, None));
    }

    /// Issue 26 item 17: a process killed with -9 and not yet reaped (a zombie) is not alive:
    /// a waiter in that state does not hold up a deadlock check, a holder's lock goes STALE.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_killed_unreaped_child_is_not_alive() {
        let mut child = sleeper("100");
        let pid = child.id();
        // Ended, and only waiting to be reaped.
        let zombie = |pid| stat_line(pid).is_some_and(|s| stat_fields(&s).next() == Some("Z"));
        assert!(pid_alive(pid));
        child.kill().unwrap();
        // The kernel makes it a zombie at once after the signal is taken; not reaped yet.
        let pause = |_| std::thread::sleep(std::time::Duration::from_millis(1));
        (0..10_000).take_while(|_| !zombie(pid)).for_each(pause);
        assert!(zombie(pid), "the child is a zombie");
        assert!(!pid_alive(pid), "a zombie is not alive");
        child.wait().unwrap();
    }

    /// A process's start time names it: this process's own and a child's are what `/proc`
    /// says, and differ.
    #[test]
    #[cfg(target_os = "linux")]
    fn start_times_are_each_process_own() {
        let in_proc = |pid| started(&stat_line(pid)?);
        let own = in_proc(pid());
        assert!(own.is_some());
        assert_eq!(start_time(pid()), own);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut child = sleeper("5");
        let theirs = start_time(child.id());
        assert_eq!(theirs, in_proc(child.id()));
        let later = theirs > own;
        assert!(later, "the child started later: {theirs:?} vs {own:?}");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(start_time(child.id()), None, "a reaped child has none");
    }

    #[test]
    fn ancestors_are_known() {
        assert!(is_ancestor(std::os::unix::process::parent_id()));
        assert!(!is_ancestor(pid()), "a process is not its own ancestor");
        let mut child = sleeper("5");
        assert!(!is_ancestor(child.id()), "a child is not an ancestor");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn stat_ids_are_read_past_the_command_name_and_zero_means_unknown() {
        let line = "42 (a) b (c)) S 1 40 30 34816 40 4194560 0 0";
        assert_eq!(
            parse_stat_ids(line),
            OwnIds {
                group: Some(40),
                session: Some(30),
                terminal_group: Some(40),
            }
        );
        // A leader outside this pid namespace, and no controlling terminal.
        let outside = "7 (coord) R 0 0 0 0 -1 4194304";
        assert_eq!(parse_stat_ids(outside), OwnIds::default());
        assert_eq!(parse_stat_ids("garbage"), OwnIds::default());
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(random_u64(), random_u64());
    }
}
