//! Crashes across the protocols: `msg send`, `dialogue say`, `review step` / `review issue
//! add`, `write` under contention with `lock` / `unlock`, and `collab write`, each killed with
//! SIGKILL at random moments (0–25 ms after start, several processes contending where that makes
//! sense). After every kill the files those commands own are whole and consistent, or in a
//! state the next command repairs (and it is then asserted that it does); no temporary file
//! outlives the next command in its folder.
//!
//! The seed is printed; `COORD_CRASH_SEED` replays a run. Each sweep prints its kill count and
//! duration.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Env;

/// A small deterministic generator (xorshift64*; the seed is printed, so a failure replays).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(salt: u64) -> Rng {
        let seed = std::env::var("COORD_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x00c0_0d5e_ed00_0002);
        eprintln!("crash sweep seed: {seed} (set COORD_CRASH_SEED to replay)");
        Rng((seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(crate) fn delay(&mut self, max_us: u64) -> Duration {
        Duration::from_micros(self.below(max_us))
    }
}

/// What became of one process of a round.
pub(crate) struct Shot {
    /// It was still running when its kill came.
    pub(crate) killed: bool,
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Start every command at once, kill each after its own delay (`None`: let it finish), and
/// collect the outcomes in the order given.
pub(crate) fn fire(cmds: Vec<(Command, Option<Duration>)>) -> Vec<Shot> {
    let mut procs: Vec<_> = cmds
        .into_iter()
        .enumerate()
        .map(|(i, (mut c, delay))| {
            let child = c
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (i, child, delay)
        })
        .collect();
    procs.sort_by_key(|(_, _, d)| d.unwrap_or(Duration::MAX));
    let t0 = Instant::now();
    let mut shots: Vec<(usize, Shot)> = Vec::new();
    for (i, mut child, delay) in procs {
        let mut killed = false;
        if let Some(delay) = delay {
            if let Some(left) = delay.checked_sub(t0.elapsed()) {
                std::thread::sleep(left);
            }
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                killed = true;
            }
        }
        let out = child.wait_with_output().unwrap();
        shots.push((
            i,
            Shot {
                killed,
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            },
        ));
    }
    shots.sort_by_key(|(i, _)| *i);
    shots.into_iter().map(|(_, s)| s).collect()
}

/// A command that is killed after `delay` with probability `p_kill` (in percent).
pub(crate) fn maybe(rng: &mut Rng, p_kill: u64, max_us: u64) -> Option<Duration> {
    (rng.below(100) < p_kill).then(|| rng.delay(max_us))
}

/// coord's temporary files anywhere under `dir` (relative paths).
pub(crate) fn temps(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if e
                .file_name()
                .to_str()
                .is_some_and(coord::layout::is_temp_name)
            {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[track_caller]
pub(crate) fn no_temps(dir: &Path, after: &str) {
    let left = temps(dir);
    assert!(
        left.is_empty(),
        "temporary files left after {after}: {left:?}"
    );
}

pub(crate) fn report(what: &str, kills: usize, runs: usize, started: Instant) {
    eprintln!(
        "crash sweep {what}: {kills} kills among {runs} processes in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// collab write

const COLLAB_KILLS: usize = 60;

#[test]
fn killed_collab_writers_leave_only_whole_lines() {
    let mut rng = Rng::new(5);
    let env = Env::new();
    let started = Instant::now();
    let (mut kills, mut runs, mut round) = (0, 0, 0);
    let mut committed = Vec::new();
    while kills < COLLAB_KILLS {
        round += 1;
        assert!(
            round < 40 * COLLAB_KILLS,
            "could not land {COLLAB_KILLS} kills"
        );
        let n = 3 + rng.below(4) as usize;
        let texts: Vec<String> = (0..n)
            .map(|i| format!("r{round}w{i} {}", "x".repeat(rng.below(3000) as usize)))
            .collect();
        let cmds = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                (
                    env.agent(&format!("w{i}"))
                        .args(["collab", "write", t])
                        .command(),
                    maybe(&mut rng, 80, 15_000),
                )
            })
            .collect();
        for (shot, text) in fire(cmds).into_iter().zip(texts) {
            runs += 1;
            if shot.killed {
                kills += 1;
            } else {
                assert_eq!(shot.code, Some(0), "collab write failed: {}", shot.stderr);
                committed.push(text);
            }
        }
        // A killed writer's line may still be in the hands of the process finishing it, which
        // holds the file's lock until the line is whole: read once the lock is free.
        let held = std::fs::File::open(env.path("collaboration_file.txt")).ok();
        held.iter().for_each(|f| f.lock().unwrap());
        let raw = env.read("collaboration_file.txt");
        drop(held);
        assert!(raw.ends_with('\n'), "the last line is torn");
        let mut seen = BTreeSet::new();
        for (no, line) in raw.lines().enumerate() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {} is torn ({e}): {line:?}", no + 1));
            let resp = v["response"].as_str().unwrap().to_string();
            assert!(v["llm_id"].is_string(), "line {}: {line}", no + 1);
            assert!(seen.insert(resp), "line {} is there twice", no + 1);
        }
        for t in &committed {
            assert!(seen.contains(t), "a committed entry is missing");
        }
    }
    let read = env.cmd().args(["collab", "read", "--json"]).ok();
    assert!(
        read.stderr.is_empty(),
        "collab read reports: {}",
        read.stderr
    );
    no_temps(env.root(), "collab");
    report(
        &format!("collab write ({} lines committed)", committed.len()),
        kills,
        runs,
        started,
    );
}

/// A long line's write is the moment a kill can tear it: the kernel copies a write into the
/// file chunk by chunk and a SIGKILL stops it between two chunks. Kill the writer the instant
/// the file starts to grow, that is in the middle of that write: the line must still end up
/// whole, and the file must end with a newline, once the file's lock is free.
#[test]
fn a_writer_killed_in_the_middle_of_its_write_leaves_a_whole_line() {
    use std::io::Write as _;
    let env = Env::new();
    let file = env.path("collaboration_file.txt");
    let text = "y".repeat(1_000_000);
    let mut caught = 0;
    for round in 0..5 {
        let before = std::fs::metadata(&file).map_or(0, |m| m.len());
        let mut child = env
            .agent("w")
            .args(["collab", "write", "-"])
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(60);
        let grew = loop {
            if std::fs::metadata(&file).is_ok_and(|m| m.len() > before) {
                child.kill().unwrap();
                break true;
            }
            if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                break false;
            }
        };
        let status = child.wait().unwrap();
        // Whoever finishes the line holds the file's lock until it has: wait for the lock.
        let held = std::fs::File::open(&file).unwrap();
        held.lock().unwrap();
        let raw = std::fs::read_to_string(&file).unwrap();
        drop(held);
        assert!(
            raw.ends_with('\n'),
            "round {round}: the line is torn ({} bytes, killed: {grew}, {status})",
            raw.len()
        );
        let last: Value = serde_json::from_str(raw.lines().last().unwrap()).unwrap();
        assert_eq!(last["response"].as_str().map(str::len), Some(text.len()));
        caught += usize::from(grew && !status.success());
    }
    eprintln!("{caught} of 5 writers killed in the middle of their write");
}

// ---------------------------------------------------------------------------------------------
// write, against lock / unlock from another agent

const WRITE_KILLS: usize = 60;

/// Version `n` of the file: 3000 lines that all name it (about 90 KiB).
fn version(n: u64) -> String {
    (0..3000)
        .map(|i| format!("version {n:06} line {i:05}\n"))
        .collect()
}

/// `text` is exactly one complete version; which one.
#[track_caller]
fn whole_version(text: &str, what: &str) -> u64 {
    let n: u64 = text
        .get(8..14)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{what} is not a version: {:?}", &text[..text.len().min(40)]));
    assert!(
        text == version(n),
        "{what} is a mix or torn ({} bytes)",
        text.len()
    );
    n
}

#[test]
fn killed_writes_under_contention_leave_one_whole_version() {
    let env = Arc::new(Env::new());
    env.write("f.txt", version(0));
    std::fs::create_dir(env.path("in")).unwrap();
    let started = Instant::now();
    let kills = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    // The other agent takes and drops the lock, killed at random, until the writer is done.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let (env, kills, runs, done) = (
            Arc::clone(&env),
            Arc::clone(&kills),
            Arc::clone(&runs),
            Arc::clone(&done),
        );
        std::thread::spawn(move || {
            let mut rng = Rng::new(7);
            while !done.load(Ordering::SeqCst) {
                for args in [
                    &["lock", "f.txt", "--wait", "1s"][..],
                    &["unlock", "f.txt"][..],
                ] {
                    let c = env.agent("other").args(args).command();
                    let shot = fire(vec![(c, maybe(&mut rng, 50, 10_000))]).pop().unwrap();
                    runs.fetch_add(1, Ordering::SeqCst);
                    if shot.killed {
                        kills.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            // Whatever a kill left, the last unlock releases it.
            env.agent("other").args(["unlock"]).ok();
        })
    };
    let mut rng = Rng::new(8);
    let (mut writes, mut n) = (0, 0);
    while kills.load(Ordering::SeqCst) < WRITE_KILLS {
        let lock = env
            .agent("writer")
            .args(["lock", "f.txt", "--wait", "2s"])
            .command();
        let shot = fire(vec![(lock, maybe(&mut rng, 30, 10_000))])
            .pop()
            .unwrap();
        runs.fetch_add(1, Ordering::SeqCst);
        if shot.killed {
            kills.fetch_add(1, Ordering::SeqCst);
        }
        if shot.code == Some(0) {
            n += 1;
            let src = format!("in/v{n}.txt");
            env.write(&src, version(n));
            let write = env
                .agent("writer")
                .args(["write", "f.txt", "--from", &src])
                .command();
            let shot = fire(vec![(write, maybe(&mut rng, 70, 20_000))])
                .pop()
                .unwrap();
            runs.fetch_add(1, Ordering::SeqCst);
            if shot.killed {
                kills.fetch_add(1, Ordering::SeqCst);
            } else {
                assert_eq!(shot.code, Some(0), "write failed: {}", shot.stderr);
                writes += 1;
            }
        }
        whole_version(&env.read("f.txt"), "f.txt");
        if env.exists("f.txt.bak") {
            whole_version(&env.read("f.txt.bak"), "f.txt.bak");
        }
        let unlock = env.agent("writer").args(["unlock", "f.txt"]).command();
        let shot = fire(vec![(unlock, maybe(&mut rng, 30, 10_000))])
            .pop()
            .unwrap();
        runs.fetch_add(1, Ordering::SeqCst);
        if shot.killed {
            kills.fetch_add(1, Ordering::SeqCst);
        }
    }
    done.store(true, Ordering::SeqCst);
    other.join().unwrap();
    // The next write in the folder sweeps what the killed ones left.
    env.agent("writer")
        .args(["lock", "f.txt", "--wait", "10s"])
        .ok();
    env.write("in/last.txt", version(999_999));
    env.agent("writer")
        .args(["write", "f.txt", "--from", "in/last.txt"])
        .ok();
    env.agent("writer").args(["unlock"]).ok();
    assert_eq!(whole_version(&env.read("f.txt"), "f.txt"), 999_999);
    whole_version(&env.read("f.txt.bak"), "f.txt.bak");
    no_temps(env.root(), "the last write");
    report(
        &format!("write against lock/unlock ({writes} writes committed)"),
        kills.load(Ordering::SeqCst),
        runs.load(Ordering::SeqCst),
        started,
    );
}
