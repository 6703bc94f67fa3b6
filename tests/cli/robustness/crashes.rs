//! Crashes: `coord lock` and `coord unlock` killed with SIGKILL at random points, several at a
//! time, contending for the same files. Afterwards every lock and presence file is whole, no
//! lock blocks forever (what a killed holder left goes stale under its 1 s TTL once its
//! presence is gone, dead wait tickets are skipped), and the temporary files the killed
//! processes left are swept by the next command.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::planted::{LIMIT, bounded, expect, tree};
use crate::support::Env;

/// A small deterministic generator (the seed is printed, so a failure can be replayed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const FILES: [&str; 3] = ["a.md", "b.md", "c.md"];

const AGENTS: [&str; 4] = ["k1", "k2", "k3", "k4"];

/// How many processes are killed (each one still running when its kill came).
const KILLS: usize = 400;

fn random_args(rng: &mut Rng) -> Vec<String> {
    let f = FILES[rng.below(3) as usize].to_string();
    let g = FILES[rng.below(3) as usize].to_string();
    let lock = |files: Vec<String>| {
        let mut v = vec!["lock".to_string()];
        v.extend(files);
        v.extend(["--ttl", "1s", "--wait", "2s"].map(String::from));
        v
    };
    match rng.below(5) {
        0 | 1 => lock(vec![f]),
        2 => lock(vec![f, g]),
        3 => vec!["unlock".into(), f],
        _ => vec!["unlock".into()],
    }
}

/// Every lock record and presence in the workspace is whole: seed keys present, parseable.
#[track_caller]
fn assert_whole(root: &Path, round: usize) {
    for (rel, what) in tree(root) {
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let Some(text) = what.strip_prefix("file:") else {
            continue;
        };
        if coord::layout::parse_lock_name(name).is_some() {
            let rec = coord::record::Record::parse(text);
            for key in ["Agent", "locked_at", "file", "token", "ttl", "host"] {
                assert!(
                    rec.get_nonempty(key).is_some(),
                    "round {round}: `{rel}` lacks `{key}`:\n{text}"
                );
            }
            assert!(
                coord::clock::parse_timestamp(rec.get("locked_at").unwrap()).is_some(),
                "round {round}: `{rel}`: {text}"
            );
            assert!(
                text.ends_with('\n'),
                "round {round}: `{rel}` is cut: {text:?}"
            );
        } else if coord::layout::presence_agent(name).is_some() {
            let rec = coord::record::Record::parse(text);
            for key in coord::presence::SEED_KEYS {
                assert!(
                    rec.get_nonempty(key).is_some(),
                    "round {round}: `{rel}` lacks `{key}`:\n{text}"
                );
            }
            assert!(
                text.ends_with('\n'),
                "round {round}: `{rel}` is cut: {text:?}"
            );
        }
    }
}

fn temps(root: &Path) -> Vec<String> {
    tree(root)
        .into_keys()
        .filter(|k| {
            k.rsplit('/')
                .next()
                .is_some_and(coord::layout::is_temp_name)
        })
        .collect()
}

#[test]
fn kill_nine_at_random_points_leaves_whole_files_and_no_eternal_lock() {
    let seed = std::env::var("COORD_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x00c0_0d5e_ed00_0001);
    eprintln!("crash sweep seed: {seed} (set COORD_CRASH_SEED to replay)");
    let mut rng = Rng(seed | 1);
    let env = Env::new();
    for f in FILES {
        env.write(f, format!("{f}\n"));
    }
    let started = Instant::now();
    let mut kills = 0;
    let mut finished_first = 0;
    let mut rounds = 0;
    let mut locks_seen_after_kill = 0;
    while kills < KILLS {
        rounds += 1;
        assert!(rounds < 10 * KILLS, "could not land {KILLS} kills");
        // Two to four contenders at once, each killed after its own random delay (0-8 ms:
        // from before `main` runs to the middle of a transition).
        let n = 2 + rng.below(3) as usize;
        let mut procs: Vec<(Child, Duration)> = (0..n)
            .map(|_| {
                let agent = AGENTS[rng.below(4) as usize];
                let child = env
                    .agent(agent)
                    .args(random_args(&mut rng))
                    .command()
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                (child, Duration::from_micros(rng.below(8000)))
            })
            .collect();
        procs.sort_by_key(|(_, d)| *d);
        let t0 = Instant::now();
        for (child, delay) in &mut procs {
            if let Some(left) = delay.checked_sub(t0.elapsed()) {
                std::thread::sleep(left);
            }
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                kills += 1;
            } else {
                finished_first += 1;
            }
            child.wait().unwrap();
        }
        assert_whole(env.root(), rounds);
        locks_seen_after_kill += tree(env.root())
            .keys()
            .filter(|k| coord::layout::parse_lock_name(k).is_some())
            .count();
    }
    let sweep_time = started.elapsed();

    // What the killed processes left: locks (1 s TTL) whose holders still look ACTIVE. Once
    // their presences are gone and the TTL passed, every lock is stale and taken over.
    let left_temps = temps(env.root());
    for a in AGENTS {
        let _ = std::fs::remove_file(coord::layout::presence(env.root(), a));
    }
    std::thread::sleep(Duration::from_millis(1100));
    for f in FILES {
        let out = bounded(
            env.agent("survivor").args(["lock", f, "--wait", "8s"]),
            LIMIT,
        );
        expect(&out, 0);
    }
    expect(&bounded(env.agent("survivor").args(["unlock"]), LIMIT), 0);
    expect(&bounded(env.cmd().args(["check", "--strict"]), LIMIT), 0);
    assert_whole(env.root(), rounds + 1);
    let still = temps(env.root());
    assert!(
        still.is_empty(),
        "temporary files not swept: {still:?} (left by the kills: {left_temps:?})"
    );
    let queued: Vec<String> = tree(env.root())
        .into_keys()
        .filter(|k| k.starts_with(".coord/queue/q-") && k.matches('/').count() == 3)
        .collect();
    assert!(queued.is_empty(), "dead tickets left: {queued:?}");
    eprintln!(
        "crash sweep: {kills} kills in {rounds} rounds ({finished_first} processes finished \
         before their kill, {locks_seen_after_kill} lock files found after rounds, {} \
         temporary files left by kills and swept) in {:.1}s",
        left_temps.len(),
        sweep_time.as_secs_f64()
    );
}
