//! Load: many processes locking and unlocking four files in turn while `status` readers run.
//! Inside each critical section a witness file is created with `O_EXCL` (two holders at once
//! would collide on it) and a per-file counter is incremented (a lost update would show in the
//! totals). Every command must exit 0.
//!
//! The default run is small (8 workers × 25 cycles, 2 readers); the full 32 × 200 is ignored
//! by default because it keeps two cores busy for minutes:
//! `cargo test --release --test cli -- --ignored load`.

use std::process::Child;
use std::time::Instant;

use crate::fixture::agent_sh;
use crate::support::Env;

const FILES: [&str; 4] = ["a.md", "b.md", "c.md", "d.md"];

fn run_load(workers: usize, cycles: usize, n_readers: usize) {
    let env = Env::new();
    for f in FILES {
        env.write(&format!("count.{f}"), "0\n");
        env.write(f, format!("{f}\n"));
    }
    // Worker w locks FILES[(w + i) % 4] in cycle i. `set -C` makes `>` use O_EXCL.
    let worker = format!(
        r#"
        w=$W; i=0
        set -- {files}
        while [ $i -lt {cycles} ]; do
            k=$(( (w + i) % 4 + 1 ))
            eval f=\${{$k}}
            "$COORD" lock "$f" --wait 10m -q 2>>"err.$COORD_AGENT" || {{ echo "lock $f: $?" >> failures; exit 10; }}
            if ! ( set -C; : > "witness.$f" ) 2>/dev/null; then echo "$COORD_AGENT $f" >> collisions; fi
            n=$(cat "count.$f")
            echo $((n + 1)) > "count.$f"
            rm -f "witness.$f"
            "$COORD" unlock "$f" -q 2>>"err.$COORD_AGENT" || {{ echo "unlock $f: $?" >> failures; exit 11; }}
            i=$((i + 1))
        done
        "#,
        files = FILES.join(" "),
    );
    let reader = r#"
        n=0
        while [ ! -e stop ]; do
            "$COORD" status --json > /dev/null 2>>"err.$COORD_AGENT" || { echo "status: $?" >> failures; exit 12; }
            n=$((n + 1))
        done
        echo $n > "reads.$COORD_AGENT"
    "#;
    let started = Instant::now();
    let children: Vec<Child> = (0..workers)
        .map(|w| agent_sh(&env, &format!("w{w}"), &worker, &[("W", &w.to_string())]))
        .collect();
    let readers: Vec<Child> = (0..n_readers)
        .map(|r| agent_sh(&env, &format!("reader{r}"), reader, &[("W", "0")]))
        .collect();
    let mut failed = Vec::new();
    for (w, mut c) in children.into_iter().enumerate() {
        let status = c.wait().unwrap();
        if !status.success() {
            failed.push(format!("w{w}: {status}"));
        }
    }
    let elapsed = started.elapsed();
    env.write("stop", "");
    let mut reads = 0;
    for (r, mut c) in readers.into_iter().enumerate() {
        assert!(c.wait().unwrap().success(), "reader {r} failed");
        reads += env
            .read(&format!("reads.reader{r}"))
            .trim()
            .parse::<usize>()
            .unwrap();
    }
    let failures = if env.exists("failures") {
        env.read("failures")
    } else {
        String::new()
    };
    assert!(
        failed.is_empty() && failures.is_empty(),
        "workers failed: {failed:?}\n{failures}"
    );
    assert!(
        !env.exists("collisions"),
        "mutual exclusion violated: {}",
        env.read("collisions")
    );
    for (k, f) in FILES.iter().enumerate() {
        let expected: usize = (0..workers)
            .map(|w| (0..cycles).filter(|i| (w + i) % 4 == k).count())
            .sum();
        assert_eq!(
            env.read(&format!("count.{f}")).trim(),
            expected.to_string(),
            "lost update on {f}"
        );
    }
    let stray: Vec<String> = env
        .snapshot()
        .into_keys()
        .filter(|k| {
            coord::layout::parse_lock_name(k).is_some()
                || k.rsplit('/')
                    .next()
                    .is_some_and(coord::layout::is_temp_name)
                || (k.starts_with(".coord/queue/q-") && k.matches('/').count() == 3)
        })
        .collect();
    assert!(stray.is_empty(), "left behind: {stray:?}");
    eprintln!(
        "load: {workers} workers x {cycles} cycles on {} files = {} lock/unlock pairs, {reads} \
         status reads by {} readers, in {:.1}s ({:.1} pairs/s); no collision, no lost update",
        FILES.len(),
        workers * cycles,
        n_readers,
        elapsed.as_secs_f64(),
        (workers * cycles) as f64 / elapsed.as_secs_f64()
    );
}

#[test]
fn load_eight_workers_and_two_readers() {
    run_load(8, 25, 2);
}

#[test]
#[ignore = "minutes on two cores: cargo test --release --test cli -- --ignored load"]
fn load_thirty_two_workers_two_hundred_cycles() {
    run_load(32, 200, 4);
}
