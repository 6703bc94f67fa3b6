//! Benchmarks of the `coord` binary against the classic tools, as whole processes.
//!
//! Run with `cargo bench --bench coord` (or `bench/run.sh`, which installs the reference tools
//! first). Prints a markdown report; `docs/performance.md` records the figures.
//!
//! - `lock`: `coord lock` + `coord unlock` as two processes vs `dotlockfile -l` + `dotlockfile -u`.
//! - `wake`: time from the holder's release returning to the waiter's exit, coord vs `flock(1)`.
//! - `status`: `coord status --json` over 20,000 files, 1,000 locks and 100 agents vs `find`.
//! - `hook`: one pre-edit `coord hook claude` call (a Write's PreToolUse payload on stdin) vs one
//!   `coord lock` process, each taking a free lock (released, untimed, between runs).
//! - `mcp`: `lock` + `unlock` as two `tools/call` requests to one running `coord mcp` vs
//!   `dotlockfile -l` + `dotlockfile -u`, in the same run.
//! - `deadlock`: how long the `coord lock` that would close a cycle of N waiting agents takes
//!   to be refused, vs a plain refusal (`--no-wait` on a held lock).
//! - `msg`: time from `coord msg send` returning to a blocked `coord msg wait` exiting.
//! - `dialogue`: time from `coord dialogue say` returning to the other side's `dialogue wait` exiting.
//! - `run`: 8 processes × 25 contended `coord run FILE -- increment` vs the same with `flock(1)`.
//!
//! Every section also adds its ratio to a summary table, printed first: the figures the
//! performance goals are stated in (see `docs/performance.md`).
#![allow(clippy::disallowed_methods)] // the benchmarks set up folders by hand

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `coord` binary measured: the one `cargo build --release` makes, copied into place the
/// way `cargo install` (or a package) puts it.
///
/// Not `CARGO_BIN_EXE_coord`: under `cargo bench` that binary is built with `panic = "unwind"`
/// (cargo builds everything a benchmark links against that way, whatever the release profile
/// says). So the release build is made here, in a target folder of its own. It is then copied:
/// the linker writes its output piecemeal, and the kernel keeps such a file's pages as single
/// small pages, while a file written front to back (an installed copy, or any file read back
/// from disk) is cached in large folios that every process start maps in fewer, cheaper steps;
/// the linker's own file starts about 0.1 ms slower. `COORD_BENCH_BIN` names another binary,
/// measured as it is.
fn coord_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("COORD_BENCH_BIN") {
            return bin.into();
        }
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("release-build");
        eprintln!(
            "bench: building coord as `cargo build --release` does, in {}",
            target.display()
        );
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "--quiet",
                "--bin",
                "coord",
                "--target-dir",
            ])
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("spawn cargo");
        assert!(status.success(), "cargo build --release failed");
        let installed = target.join("installed");
        std::fs::create_dir_all(&installed).expect("create the install folder");
        let bin = installed.join("coord");
        let _ = std::fs::remove_file(&bin);
        std::fs::copy(target.join("release").join("coord"), &bin).expect("install coord");
        bin
    })
}

/// A command for a measured process, in the environment a user's shell would give it. cargo
/// runs benchmarks with `LD_LIBRARY_PATH` naming its build folders, and the dynamic loader then
/// searches all of them for libc at every start of coord (about 0.13 ms a process) but not of the
/// set-group-id `dotlockfile`, for which it ignores the variable.
fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_remove("LD_LIBRARY_PATH");
    c
}

fn run(cmd: &mut Command) {
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(status.success(), "{cmd:?} failed");
}

fn coord(dir: &Path, agent: &str, args: &[&str]) -> Command {
    let mut c = command(coord_bin());
    c.args(args)
        .current_dir(dir)
        .env("COORD_DIR", dir)
        .env("COORD_AGENT", agent)
        .env_remove("COORD_SESSION_PID");
    c
}

fn have(tool: &str) -> bool {
    command("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One line of the summary: a figure, its value, and the goal it is held to.
struct Ratio {
    figure: &'static str,
    value: String,
    goal: &'static str,
}

struct Stats {
    median: Duration,
    p95: Duration,
    n: usize,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    let n = v.len();
    Stats {
        median: v[n / 2],
        p95: v[(n * 95 / 100).min(n - 1)],
        n,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn row(name: &str, s: &Stats) -> String {
    format!("| {name} | {} | {} | {} |", ms(s.median), ms(s.p95), s.n)
}

/// Returns the ratio coord / dotlockfile (medians, without backup) when dotlockfile is there.
fn bench_lock(out: &mut Vec<String>) -> Option<f64> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("SHARED.txt"), "shared\n").unwrap();
    let n = 500;
    // The cases take turns, pair by pair, so that a change in the machine's load (a shared VM's
    // neighbours) weighs on all of them alike rather than on whichever ran during it.
    let lockfile = d.join("SHARED.txt.lock");
    let lockfile = lockfile.to_str().unwrap();
    let dotlockfile = have("dotlockfile");
    let pair = |case: usize| {
        let t = Instant::now();
        match case {
            0 | 1 => {
                let lock: &[&str] = if case == 0 {
                    &["lock", "SHARED.txt", "-q", "--no-backup"]
                } else {
                    &["lock", "SHARED.txt", "-q"]
                };
                run(&mut coord(d, "claude", lock));
                run(&mut coord(d, "claude", &["unlock", "SHARED.txt", "-q"]));
            }
            // For scale: two coord processes that start and exit (a process builds the arguments
            // of the command it runs only).
            2 => {
                run(&mut coord(d, "claude", &["--version"]));
                run(&mut coord(d, "claude", &["--version"]));
            }
            _ => {
                run(command("dotlockfile").args(["-l", lockfile]));
                run(command("dotlockfile").args(["-u", lockfile]));
            }
        }
        t.elapsed()
    };
    let cases = if dotlockfile { 4 } else { 3 };
    // Warm up the page cache and the state folder.
    for case in 0..cases {
        for _ in 0..20 {
            pair(case);
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); cases];
    for i in 0..n {
        for k in 0..cases {
            let case = (i + k) % cases;
            times[case].push(pair(case));
        }
    }
    let mut times = times.into_iter().map(stats);
    let (coord_plain, coord_backup, start_only) = (
        times.next().unwrap(),
        times.next().unwrap(),
        times.next().unwrap(),
    );
    out.push("| lock + unlock (two processes) | median | p95 | runs |".into());
    out.push("|---|---|---|---|".into());
    out.push(row(
        "`coord lock --no-backup` + `coord unlock`",
        &coord_plain,
    ));
    out.push(row(
        "`coord lock` (with `.bak`) + `coord unlock`",
        &coord_backup,
    ));
    out.push(row("two `coord --version` (start, exit)", &start_only));
    if let Some(dl) = times.next() {
        out.push(row("`dotlockfile -l` + `dotlockfile -u`", &dl));
        out.push(String::new());
        let ratio = coord_plain.median.as_secs_f64() / dl.median.as_secs_f64();
        out.push(format!(
            "Ratio coord / dotlockfile (medians): {ratio:.2}x without backup, {:.2}x with backup.",
            coord_backup.median.as_secs_f64() / dl.median.as_secs_f64()
        ));
        Some(ratio)
    } else {
        out.push(String::new());
        out.push("(dotlockfile not installed: `apt-get install liblockfile-bin`)".into());
        None
    }
}

fn bench_hook(out: &mut Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(d.join("SHARED.txt"), "shared\n").unwrap();
    let payload = format!(
        r#"{{"session_id":"7684f1ed-55e2-4a19-be34-6aa5a64f4b50","transcript_path":"/tmp/t.jsonl","cwd":"{0}","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"{0}/SHARED.txt","content":"x"}},"tool_use_id":"toolu_1"}}"#,
        d.display()
    );
    let hook = || {
        let mut c = command(coord_bin());
        c.args(["hook", "claude"])
            .current_dir(&d)
            .env_remove("COORD_DIR")
            .env_remove("COORD_AGENT")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = c.spawn().expect("spawn");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    };
    let agent = "claude-7684f1ed";
    let n = 300;
    for _ in 0..20 {
        hook();
        run(&mut coord(&d, agent, &["unlock", "-q"]));
    }
    let mut h = Vec::with_capacity(n);
    let mut l = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        hook();
        h.push(t.elapsed());
        assert!(d.join(format!("SHARED.txt.lock.{agent}")).exists());
        run(&mut coord(&d, agent, &["unlock", "-q"]));
        let t = Instant::now();
        run(&mut coord(&d, agent, &["lock", "SHARED.txt", "-q"]));
        l.push(t.elapsed());
        run(&mut coord(&d, agent, &["unlock", "-q"]));
    }
    let (h, l) = (stats(h), stats(l));
    out.push("| one pre-edit lock (one process) | median | p95 | runs |".into());
    out.push("|---|---|---|---|".into());
    out.push(row("`coord hook claude` (PreToolUse of a Write)", &h));
    out.push(row("`coord lock` (with `.bak`)", &l));
    out.push(String::new());
    out.push(format!(
        "Ratio hook / lock (medians): {:.2}x.",
        h.median.as_secs_f64() / l.median.as_secs_f64()
    ));
}

/// Returns the ratio coord mcp / dotlockfile (medians) when dotlockfile is there.
fn bench_mcp(out: &mut Vec<String>) -> Option<f64> {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("SHARED.txt"), "shared\n").unwrap();
    let mut server = coord(d, "claude", &["mcp", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn coord mcp");
    let mut to = server.stdin.take().unwrap();
    let mut from = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    let mut ask = |request: &str| {
        to.write_all(request.as_bytes()).unwrap();
        to.write_all(b"\n").unwrap();
        to.flush().unwrap();
        line.clear();
        from.read_line(&mut line).unwrap();
        assert!(
            line.contains("\"result\"") && !line.contains("\"isError\":true"),
            "{line}"
        );
    };
    ask(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    );
    let lock = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lock","arguments":{"files":["SHARED.txt"]}}}"#;
    let unlock = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"unlock","arguments":{"files":["SHARED.txt"]}}}"#;
    let n = 2000;
    let lockfile = d.join("SHARED.txt.lock");
    let lockfile = lockfile.to_str().unwrap();
    let dotlockfile = have("dotlockfile");
    let dl_pair = || {
        let t = Instant::now();
        run(command("dotlockfile").args(["-l", lockfile]));
        run(command("dotlockfile").args(["-u", lockfile]));
        t.elapsed()
    };
    // The floor under any server on pipes: two requests that do no work (`ping`), the same
    // round trips and wake-ups of both processes.
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    for _ in 0..50 {
        ask(lock);
        ask(unlock);
    }
    for _ in 0..(if dotlockfile { 20 } else { 0 }) {
        dl_pair();
    }
    // Side by side, so that a change in the machine's load weighs on both alike: a dotlockfile
    // pair after every fourth pair of requests.
    let (mut v, mut p, mut dl) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n / 4),
    );
    for i in 0..n {
        let t = Instant::now();
        ask(lock);
        ask(unlock);
        v.push(t.elapsed());
        let t = Instant::now();
        ask(ping);
        ask(ping);
        p.push(t.elapsed());
        if dotlockfile && i % 4 == 0 {
            dl.push(dl_pair());
        }
    }
    let (mcp, pings) = (stats(v), stats(p));
    drop(to);
    let _ = server.wait();
    out.push("| lock + unlock | median | p95 | runs |".into());
    out.push("|---|---|---|---|".into());
    out.push(row(
        "two `tools/call` to one running `coord mcp` (with `.bak`)",
        &mcp,
    ));
    out.push(row(
        "two `ping` to the same server (the pipes' round trips alone)",
        &pings,
    ));
    if dotlockfile {
        let dl = stats(dl);
        out.push(row("`dotlockfile -l` + `dotlockfile -u`", &dl));
        out.push(String::new());
        let ratio = mcp.median.as_secs_f64() / dl.median.as_secs_f64();
        out.push(format!(
            "Ratio coord mcp / dotlockfile (medians): {ratio:.3}x (goal: 0.25x or less)."
        ));
        Some(ratio)
    } else {
        out.push(String::new());
        out.push("(dotlockfile not installed: `apt-get install liblockfile-bin`)".into());
        None
    }
}

/// Spawn `cmd`, and return a handle that yields the instant it exited.
fn exit_time(mut cmd: Command) -> std::thread::JoinHandle<Instant> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::spawn(move || {
        let st = child.wait().unwrap();
        let t = Instant::now();
        assert!(st.success());
        t
    })
}

fn wait_until(mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(10), "setup timed out");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A waiter in `waiter_dir` woken by a holder's release in `holder_dir` (one folder, or two
/// work trees of one repository, whose presences live in `shared`), `rounds` times.
fn coord_wake(holder_dir: &Path, waiter_dir: &Path, shared: &Path, rounds: usize) -> Stats {
    let mut lat = Vec::new();
    for _ in 0..rounds {
        run(&mut coord(
            holder_dir,
            "holder",
            &["lock", "f", "-q", "--no-backup"],
        ));
        let waiter = exit_time(coord(
            waiter_dir,
            "waiter",
            &["lock", "f", "--wait", "30s", "-q", "--no-backup"],
        ));
        wait_until(|| {
            std::fs::read_to_string(shared.join(".waiter_presence"))
                .is_ok_and(|t| t.contains("WAITING"))
        });
        // Let the waiter settle into its wait.
        std::thread::sleep(Duration::from_millis(30));
        run(&mut coord(holder_dir, "holder", &["unlock", "f", "-q"]));
        let released = Instant::now();
        let woke = waiter.join().unwrap();
        lat.push(woke.saturating_duration_since(released));
        run(&mut coord(waiter_dir, "waiter", &["unlock", "f", "-q"]));
    }
    stats(lat)
}

/// A repository with `f` committed and one linked worktree; returns (main tree, linked tree).
fn repo_with_worktree(base: &Path) -> Option<(PathBuf, PathBuf)> {
    let main = base.join("main");
    let linked = base.join("linked");
    std::fs::create_dir(&main).ok()?;
    std::fs::write(main.join("f"), "x\n").ok()?;
    let git = |dir: &Path, args: &[&str]| {
        command("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@localhost")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@localhost")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let ok = git(&main, &["init", "-q"])
        && git(&main, &["add", "f"])
        && git(&main, &["commit", "-qm", "f"])
        && git(
            &main,
            &["worktree", "add", "-q", linked.to_str()?, "-b", "linked"],
        );
    // Canonical paths, as coord resolves them.
    ok.then(|| (main.canonicalize().ok(), linked.canonicalize().ok()))
        .and_then(|(m, l)| Some((m?, l?)))
}

/// Returns the coord waiter's figures, flock's when flock(1) is there, and the coord waiter's
/// across work trees when git is there.
fn bench_wake(out: &mut Vec<String>) -> (Stats, Option<Stats>, Option<Stats>) {
    let rounds = 40;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let c = coord_wake(d, d, d, rounds);
    out.push("| waiter wake-up after release | median | p95 | rounds |".into());
    out.push("|---|---|---|---|".into());
    out.push(row("`coord lock --wait` after `coord unlock` returns", &c));
    // Across work trees: the holder in the main tree, the waiter in a linked worktree.
    let trees = tempfile::tempdir().unwrap();
    let across = if have("git")
        && let Some((main, linked)) = repo_with_worktree(trees.path())
    {
        let w = coord_wake(&main, &linked, &main, rounds);
        out.push(row(
            "the same, holder in the main tree, waiter in a linked worktree",
            &w,
        ));
        Some(w)
    } else {
        None
    };
    if have("flock") {
        let lockf = d.join("flockfile");
        std::fs::write(&lockf, "").unwrap();
        let lf = lockf.to_str().unwrap().to_string();
        let mut lat = Vec::new();
        for _ in 0..rounds {
            let ready = d.join("holding");
            let _ = std::fs::remove_file(&ready);
            let mut holder = command("flock")
                .args([
                    &lf,
                    "sh",
                    "-c",
                    &format!("touch {}; read x", ready.display()),
                ])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            wait_until(|| ready.exists());
            let waiter = exit_time({
                let mut c = command("flock");
                c.args([&lf, "true"]);
                c
            });
            std::thread::sleep(Duration::from_millis(30));
            drop(holder.stdin.take());
            holder.wait().unwrap();
            let released = Instant::now();
            let woke = waiter.join().unwrap();
            lat.push(woke.saturating_duration_since(released));
        }
        let f = stats(lat);
        out.push(row("`flock FILE true` after the holder exits", &f));
        return (c, Some(f), across);
    }
    (c, None, across)
}

/// Returns the ratio coord / find (medians).
fn bench_status(out: &mut Vec<String>) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 20,000 files in 200 folders, 1,000 of them locked, 100 agents present.
    let now = chrono::Local::now()
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string();
    for i in 0..200 {
        let sub = d.join(format!("pkg{i:03}"));
        std::fs::create_dir(&sub).unwrap();
        for j in 0..100 {
            std::fs::write(sub.join(format!("file{j:03}.rs")), "fn main() {}\n").unwrap();
        }
        for j in 0..5 {
            let agent = format!("agent{:03}", (i * 5 + j) % 100);
            let mut f =
                std::fs::File::create(sub.join(format!("file{j:03}.rs.lock.{agent}"))).unwrap();
            write!(
                f,
                "Agent: {agent}\nlocked_at: {now}\nfile: pkg{i:03}/file{j:03}.rs\n"
            )
            .unwrap();
        }
    }
    for a in 0..100 {
        std::fs::write(
            d.join(format!(".agent{a:03}_presence")),
            format!("Agent: agent{a:03}\nstatus: ACTIVE\nstarted: {now}\nheartbeat: {now}\nworking_on: t\ncurrent_file: -\nlock_status: LOCKED\n"),
        )
        .unwrap();
    }
    let n = 30;
    let time = |mk: &dyn Fn() -> Command| {
        run(&mut mk());
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            run(&mut mk());
            v.push(t.elapsed());
        }
        stats(v)
    };
    let c = time(&|| {
        let mut c = command(coord_bin());
        c.args(["status", "--json"]).env("COORD_DIR", d);
        c
    });
    let f = time(&|| {
        let mut c = command("find");
        c.arg(d).args(["-name", "*.lock.*"]);
        c
    });
    out.push("| 20,000 files, 1,000 locks, 100 agents | median | p95 | runs |".into());
    out.push("|---|---|---|---|".into());
    out.push(row("`coord status --json`", &c));
    out.push(row("`find DIR -name '*.lock.*'`", &f));
    out.push(String::new());
    let ratio = c.median.as_secs_f64() / f.median.as_secs_f64();
    out.push(format!("Ratio coord / find (medians): {ratio:.2}x."));
    ratio
}

/// `coord msg wait` already blocking; time from `coord msg send` returning to its exit.
fn bench_msg(out: &mut Vec<String>) -> Stats {
    let rounds = 40;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(&mut coord(d, "reader", &["presence", "-q"]));
    let mut lat = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let waiter = exit_time(coord(d, "reader", &["msg", "wait", "--timeout", "30s"]));
        // Let the waiter subscribe and settle into its wait.
        std::thread::sleep(Duration::from_millis(60));
        let sent = coord(
            d,
            "writer",
            &["msg", "send", "reader", &format!("round {i}")],
        )
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
        let released = Instant::now();
        assert!(sent.status.success());
        let woke = waiter.join().unwrap();
        lat.push(woke.saturating_duration_since(released));
        let id = String::from_utf8_lossy(&sent.stdout).trim().to_string();
        run(&mut coord(d, "reader", &["msg", "read", &id]));
    }
    let s = stats(lat);
    out.push("| wake-up | median | p95 | rounds |".into());
    out.push("|---|---|---|---|".into());
    out.push(row("`coord msg wait` after `coord msg send` returns", &s));
    s
}

/// The other side's `coord dialogue wait` already blocking; time from `coord dialogue say`
/// starting, and from it returning, to the waiter's exit.
fn bench_dialogue(out: &mut Vec<String>) -> Stats {
    let rounds = 40;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let c = |args: &[&str]| {
        let mut c = command(coord_bin());
        c.args(args)
            .current_dir(d)
            .env("COORD_DIR", d)
            .env_remove("COORD_AGENT");
        c
    };
    run(&mut c(&[
        "-q",
        "dialogue",
        "init",
        "--topic",
        "wake-up benchmark",
    ]));
    let mut after_return = Vec::with_capacity(rounds);
    let mut from_start = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let waiter = exit_time(c(&[
            "-q",
            "dialogue",
            "wait",
            "--as",
            "AGENT-2",
            "--timeout",
            "30s",
        ]));
        std::thread::sleep(Duration::from_millis(60));
        let start = Instant::now();
        run(&mut c(&[
            "-q",
            "dialogue",
            "say",
            "--as",
            "AGENT-1",
            &format!("round {i}"),
        ]));
        let returned = Instant::now();
        let woke = waiter.join().unwrap();
        after_return.push(woke.saturating_duration_since(returned));
        from_start.push(woke.saturating_duration_since(start));
        run(&mut c(&[
            "-q",
            "dialogue",
            "say",
            "--as",
            "AGENT-2",
            &format!("ack {i}"),
        ]));
    }
    let after = stats(after_return);
    out.push("| `dialogue wait` wake-up | median | p95 | rounds |".into());
    out.push("|---|---|---|---|".into());
    out.push(row("after `coord dialogue say` returns", &after));
    out.push(row("after `coord dialogue say` starts", &stats(from_start)));
    after
}

/// How many races of each kind `bench_run` runs.
const RACE_ROUNDS: usize = 3;

/// The middle value of `v` (sorted in place).
fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// 8 processes × 25 increments of one counter, each under the lock: `coord run` vs `flock`.
/// Returns the wall-clock totals (coord, flock).
fn bench_run(out: &mut Vec<String>) -> Option<(Duration, Duration)> {
    if !have("flock") {
        out.push("(flock not installed: the contended run comparison needs util-linux)".into());
        return None;
    }
    let (procs, each) = (8, 25);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = "n=$(cat counter.txt); echo $((n + 1)) > counter.txt";
    let race = |mk: &dyn Fn(usize) -> Command| {
        std::fs::write(d.join("counter.txt"), "0\n").unwrap();
        let t = Instant::now();
        let workers: Vec<_> = (0..procs)
            .map(|worker| {
                let cmds: Vec<Command> = (0..each).map(|_| mk(worker)).collect();
                std::thread::spawn(move || {
                    for mut c in cmds {
                        run(&mut c);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let total = t.elapsed();
        let n: u32 = std::fs::read_to_string(d.join("counter.txt"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(n as usize, procs * each, "lost updates");
        total
    };
    // One agent per worker, as eight agents sharing a folder would be.
    let coord_race = || {
        race(&|worker| {
            coord(
                d,
                &format!("agent{worker}"),
                &[
                    "run",
                    "counter.txt",
                    "--wait",
                    "5m",
                    "--",
                    "sh",
                    "-c",
                    script,
                ],
            )
        })
    };
    let flock_race = || {
        race(&|_| {
            let mut c = command("flock");
            c.args(["counter.txt", "sh", "-c", script]).current_dir(d);
            c
        })
    };
    // Rounds alternate, so that a busy moment of the machine weighs on both sides; the medians
    // are compared.
    let (mut cs, mut fs) = (Vec::new(), Vec::new());
    for _ in 0..RACE_ROUNDS {
        cs.push(coord_race());
        fs.push(flock_race());
    }
    let (c, f) = (median(&mut cs), median(&mut fs));
    out.push(format!(
        "| {procs} × {each} contended increments, median of {RACE_ROUNDS} alternated rounds | wall clock | rounds |"
    ));
    out.push("|---|---|---|".into());
    let all = |v: &[Duration]| v.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ");
    out.push(format!(
        "| `coord run counter.txt -- sh -c …` | {} | {} |",
        ms(c),
        all(&cs)
    ));
    out.push(format!(
        "| `flock counter.txt sh -c …` | {} | {} |",
        ms(f),
        all(&fs)
    ));
    Some((c, f))
}

fn times(r: f64) -> String {
    format!("{r:.2}×")
}

/// Run `cmd` to completion expecting exit 3; its wall-clock time.
fn refused_in(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let st = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let t = start.elapsed();
    assert_eq!(st.code(), Some(3), "{cmd:?}");
    t
}

fn bench_deadlock(out: &mut Vec<String>) {
    let runs = 30;
    out.push("| refusal | median | p95 | runs |".into());
    out.push("|---|---|---|---|".into());
    {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        run(&mut coord(d, "holder", &["lock", "f", "-q", "--no-backup"]));
        let lat = (0..runs)
            .map(|_| refused_in(coord(d, "other", &["lock", "f", "--no-wait", "-q"])))
            .collect();
        out.push(row(
            "`coord lock --no-wait` on a held lock (plain refusal)",
            &stats(lat),
        ));
    }
    for n in [2usize, 8] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // a0 holds f0, ..., a{n-1} holds f{n-1}; a{i} waits for f{i+1} for i < n-1.
        for i in 0..n {
            run(&mut coord(
                d,
                &format!("a{i}"),
                &["lock", &format!("f{i}"), "-q", "--no-backup"],
            ));
        }
        let mut waiters = Vec::new();
        for i in 0..n - 1 {
            let mut c = coord(
                d,
                &format!("a{i}"),
                &["lock", &format!("f{}", i + 1), "--wait", "10m", "-q"],
            );
            waiters.push(
                c.stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            wait_until(|| {
                std::fs::read_to_string(d.join(format!(".a{i}_presence")))
                    .is_ok_and(|t| t.contains("WAITING"))
            });
        }
        let last = format!("a{}", n - 1);
        let lat = (0..runs)
            .map(|_| refused_in(coord(d, &last, &["lock", "f0", "--wait", "10m", "-q"])))
            .collect();
        out.push(row(
            &format!("`coord lock --wait 10m` closing a cycle of {n} agents"),
            &stats(lat),
        ));
        for mut w in waiters {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |name: &str| which.is_empty() || which.iter().any(|w| w == name || w == "all");
    // The binary is built (or found up to date) before anything is timed or the load is read.
    coord_bin();
    let load = load_average();
    let mut out = Vec::new();
    let mut ratios: Vec<Ratio> = Vec::new();
    if want("lock") {
        if let Some(r) = bench_lock(&mut out) {
            ratios.push(Ratio {
                figure: "`coord lock` + `coord unlock` / `dotlockfile -l` + `-u`",
                value: times(r),
                goal: "≤ 1.5×, then ≤ 1.3×",
            });
        }
        out.push(String::new());
    }
    if want("mcp") {
        if let Some(r) = bench_mcp(&mut out) {
            ratios.push(Ratio {
                figure: "MCP lock + unlock (two `tools/call`) / `dotlockfile -l` + `-u`",
                value: format!("{r:.2}×"),
                goal: "≤ 0.25×",
            });
        }
        out.push(String::new());
    }
    let mut flock_wake = None;
    if want("wake") || want("msg") {
        let (c, f, across) = bench_wake(&mut out);
        if let (Some(f), Some(w)) = (&f, &across) {
            ratios.push(Ratio {
                figure: "wake-up across two work trees of a repository / `flock` waiter wake-up",
                value: format!(
                    "{} ({} median, {} p95)",
                    times(w.median.as_secs_f64() / f.median.as_secs_f64()),
                    ms(w.median),
                    ms(w.p95)
                ),
                goal: "≤ 3×",
            });
        }
        if let Some(f) = &f {
            ratios.push(Ratio {
                figure: "waiter wake-up after release / `flock` waiter wake-up",
                value: format!(
                    "{} ({} median, {} p95; flock {})",
                    times(c.median.as_secs_f64() / f.median.as_secs_f64()),
                    ms(c.median),
                    ms(c.p95),
                    ms(f.median)
                ),
                goal: "≤ 3×",
            });
        }
        flock_wake = f;
        out.push(String::new());
    }
    if want("msg") {
        let m = bench_msg(&mut out);
        ratios.push(Ratio {
            figure: "`msg wait` wake-up after `msg send` / `flock` waiter wake-up",
            value: match &flock_wake {
                Some(f) => format!(
                    "{} ({} median)",
                    times(m.median.as_secs_f64() / f.median.as_secs_f64()),
                    ms(m.median)
                ),
                None => format!("{} median", ms(m.median)),
            },
            goal: "≤ 3×",
        });
        out.push(String::new());
    }
    if want("dialogue") {
        let d = bench_dialogue(&mut out);
        ratios.push(Ratio {
            figure: "`dialogue wait` wake-up after `say`",
            value: format!("{} median, {} p95", ms(d.median), ms(d.p95)),
            goal: "≤ 10 ms median",
        });
        out.push(String::new());
    }
    if want("run")
        && let Some((c, f)) = bench_run(&mut out)
    {
        ratios.push(Ratio {
            figure: "8 × 25 contended `coord run` increments / `flock`",
            value: times(c.as_secs_f64() / f.as_secs_f64()),
            goal: "≤ 1.5×",
        });
        out.push(String::new());
    }
    if want("hook") {
        bench_hook(&mut out);
        out.push(String::new());
    }
    if want("status") {
        let r = bench_status(&mut out);
        ratios.push(Ratio {
            figure: "`status --json`, 20k files and 1k locks / `find`",
            value: times(r),
            goal: "≤ 2×",
        });
        out.push(String::new());
    }
    if want("deadlock") {
        bench_deadlock(&mut out);
        out.push(String::new());
    }
    let mut report = vec![
        format!(
            "Measured {} on {}, {} cores, Linux {}, load {} at the start.",
            chrono::Local::now().format("%Y-%m-%d %H:%M %Z"),
            cpu_model(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into()),
            load
        ),
        String::new(),
        "| figure | measured | goal |".into(),
        "|---|---|---|".into(),
    ];
    for r in &ratios {
        report.push(format!("| {} | {} | {} |", r.figure, r.value, r.goal));
    }
    report.push(String::new());
    report.extend(out);
    println!("{}", report.join("\n").trim_end());
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "an unknown CPU".into())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
