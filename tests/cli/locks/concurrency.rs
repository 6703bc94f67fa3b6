//! Mutual exclusion with real processes: many `coord` processes racing for one file, a witness
//! file created with `O_EXCL` inside the critical section, and a stampede on a stale lock.

use std::process::Child;

use crate::fixture::{agent_sh, counter_cycle, wait_all};
use crate::support::{Env, eventually, temps_in, tickets};

#[test]
fn eight_processes_fifty_cycles_each_count_to_exactly_400() {
    let env = Env::new();
    env.write("counter.txt", "0\n");
    // `set -C` makes `>` use O_EXCL: two holders inside the critical section would collide.
    let cycle = counter_cycle(50, "--wait 2m");
    let children: Vec<Child> = (1..=8)
        .map(|i| agent_sh(&env, &format!("agent-{i}"), &cycle, &[]))
        .collect();
    wait_all(children);
    assert!(
        !env.exists("collisions"),
        "two holders were inside the critical section at once: {}",
        env.read("collisions")
    );
    assert_eq!(env.read("counter.txt").trim(), "400");
    assert!(env.files_ending(".lock.agent-1").is_empty());
    let leftovers: Vec<String> = env
        .snapshot()
        .into_keys()
        .filter(|k| k.contains(".coord-") && k.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn a_stampede_of_sixteen_on_one_stale_lock_has_exactly_one_winner() {
    let env = Env::new();
    let old = (chrono::Local::now() - chrono::Duration::minutes(20))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    env.write(
        "SHARED.txt.lock.ghost",
        format!("Agent: Ghost\nlocked_at: {old}\nfile: SHARED.txt\n"),
    );
    // All sixteen start together: each waits for the go file, then tries once.
    let script = r#"
        while [ ! -e go ]; do :; done
        "$COORD" lock SHARED.txt --no-wait --no-backup 2>"err.$COORD_AGENT"
        echo $? > "code.$COORD_AGENT"
    "#;
    let children: Vec<Child> = (1..=16)
        .map(|i| agent_sh(&env, &format!("racer-{i:02}"), script, &[]))
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    env.write("go", "");
    for mut c in children {
        c.wait().unwrap();
    }
    let mut winners = Vec::new();
    let mut takeovers = 0;
    for i in 1..=16 {
        let name = format!("racer-{i:02}");
        let code = env.read(&format!("code.{name}"));
        let err = env.read(&format!("err.{name}"));
        match code.trim() {
            "0" => winners.push(name.clone()),
            "3" => assert!(err.contains("is held by"), "{name}: {err}"),
            other => panic!("{name} exited {other}: {err}"),
        }
        takeovers += err.matches("took over the stale lock of Ghost").count();
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert_eq!(takeovers, 1);
    let locks = env.files_ending(&format!(".lock.{}", winners[0]));
    assert_eq!(locks, ["SHARED.txt.lock.".to_string() + &winners[0]]);
    let all_locks: Vec<String> = env
        .snapshot()
        .into_keys()
        .filter(|k| k.starts_with("SHARED.txt.lock."))
        .collect();
    assert_eq!(all_locks.len(), 1, "{all_locks:?}");
}

#[test]
fn a_stampede_of_waiters_takes_turns_without_overlap() {
    let env = Env::new();
    env.write("counter.txt", "0\n");
    env.agent("holder").args(["lock", "counter.txt"]).ok();
    let script = r#"
        "$COORD" lock counter.txt --wait 2m -q || exit 10
        if ! ( set -C; : > witness ) 2>/dev/null; then echo "$COORD_AGENT" >> collisions; fi
        n=$(cat counter.txt); echo $((n + 1)) > counter.txt
        rm -f witness
        "$COORD" unlock counter.txt -q
    "#;
    let children: Vec<Child> = (1..=12)
        .map(|i| agent_sh(&env, &format!("w{i}"), script, &[]))
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    env.agent("holder").args(["unlock", "counter.txt"]).ok();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert!(!env.exists("collisions"));
    assert_eq!(env.read("counter.txt").trim(), "12");
}

/// A waiter leaves no temporary file while it waits nor once served, and no place in the queue.
#[test]
fn a_waiters_files_and_ticket_are_gone_once_it_is_done() {
    let env = Env::new();
    env.write("a.md", "v1");
    env.agent("claude").args(["lock", "a.md"]).ok();
    let waiter = env
        .agent("gemini")
        .args([
            "run",
            "a.md",
            "--wait",
            "20s",
            "--",
            "sh",
            "-c",
            "cat a.md.bak > seen-backup.txt; echo v2 > a.md",
        ])
        .spawn();
    eventually("the waiter waits", || {
        env.exists(".gemini_presence") && env.read(".gemini_presence").contains("WAITING")
    });
    assert_eq!(
        temps_in(env.root()),
        Vec::<String>::new(),
        "none in the root"
    );
    env.write("a.md", "v1 edited by claude");
    env.agent("claude").args(["unlock", "a.md"]).ok();
    let out = waiter.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The backup was written before the command, from what claude left.
    assert_eq!(env.read("seen-backup.txt"), "v1 edited by claude");
    assert_eq!(env.read("a.md"), "v2\n");
    assert!(env.read(".gemini_presence").contains("lock_status: FREE\n"));
    assert!(!env.exists("a.md.lock.gemini"));
    assert_eq!(temps_in(env.root()), Vec::<String>::new());
    assert_eq!(temps_in(&env.path(".coord")), Vec::<String>::new());
    assert_eq!(tickets(&env), Vec::<String>::new(), "left in the queue");
}
