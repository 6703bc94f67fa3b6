//! Waiting for a lock: the queue served in arrival order, timeouts, signals to a waiter, a
//! waiter that outlives the state folder or a lock refreshed meanwhile, and tickets, counter and
//! queue folder planted in any shape failing only the waiter.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::locks::lock_unlock::eventually;
use crate::planted::{ALL, Bed, Kind, expect, plant, tree};
use crate::rigs::{eventually_within, now_stamp};
use crate::support::{Env, tickets};

/// SIGINT or SIGTERM to a waiting `coord lock` cleans up as a timeout does (ticket removed,
/// presence no longer WAITING), then exits with the signal's status.
#[test]
fn a_signal_to_a_waiting_lock_leaves_the_queue_and_resets_waiting() {
    let env = Env::new();
    env.agent("a").args(["lock", "F"]).ok();
    for (sig, code) in [
        (rustix::process::Signal::INT, 130),
        (rustix::process::Signal::TERM, 143),
    ] {
        let child = env.agent("b").args(["lock", "F", "--wait", "60s"]).spawn();
        eventually_within("b to wait", Duration::from_secs(10), || {
            env.exists(".b_presence")
                && env.read(".b_presence").contains("WAITING")
                && !tickets(&env).is_empty()
        });
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(tickets(&env), Vec::<String>::new());
        assert!(env.read(".b_presence").contains("lock_status: FREE"));
    }
    // Nobody stands in line: a newcomer gets the lock at once when a releases it.
    env.agent("a").args(["unlock", "F"]).ok();
    env.agent("c").args(["lock", "F", "--no-wait"]).ok();
}

/// `rm -rf .coord` while agents wait: every waiter recreates the state folder and goes on; each
/// gets the lock in turn, and no two hold it at once.
#[test]
fn waiters_survive_the_state_folder_being_removed() {
    let env = Env::new();
    env.write("F", "");
    env.agent("a0").args(["lock", "F"]).ok();
    let bin = crate::support::coord_bin();
    let waiters: Vec<_> = (1..=6)
        .map(|i| {
            let script = format!(
                "'{bin}' lock F --wait 60s -q --no-backup && \
                 ls F.lock.* | wc -l >> holders.txt && '{bin}' unlock F -q"
            );
            std::process::Command::new("sh")
                .args(["-c", &script])
                .current_dir(env.root())
                .env("COORD_DIR", env.root())
                .env("COORD_AGENT", format!("w{i}"))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Remove the state folder over and over while they wait, then release.
    std::thread::sleep(Duration::from_millis(300));
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        let _ = std::fs::remove_dir_all(env.path(".coord"));
    }
    env.agent("a0").args(["unlock", "F"]).ok();
    for w in waiters {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a waiter failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let holders = env.read("holders.txt");
    assert_eq!(holders.lines().count(), 6, "{holders}");
    assert!(
        holders.lines().all(|l| l.trim() == "1"),
        "two holders at once: {holders}"
    );
}

fn queue_dir_of(bed: &Bed, rel: &str) -> PathBuf {
    coord::layout::queue_dir(&bed.ws(), rel)
}

#[test]
fn hostile_wait_tickets_are_skipped_and_cleared() {
    for kind in ALL {
        let bed = Bed::new();
        let ticket = queue_dir_of(&bed, "a.md").join(coord::layout::ticket_name(1, "ghost"));
        plant(&ticket, kind, &bed.victim());
        let outside = bed.outside();
        // Not a live waiter: it stands in nobody's way.
        let out = bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]);
        expect(&out, 0);
        if kind != Kind::Dir {
            assert!(std::fs::symlink_metadata(&ticket).is_err(), "{kind:?} kept");
        }
        expect(&bed.run(Some("claude"), &["unlock", "a.md"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_queue_counter_never_stops_or_crashes_a_waiter() {
    let giant = "18446744073709551615\n";
    let mut cases: Vec<(String, Option<Kind>)> =
        ALL.iter().map(|k| (format!("{k:?}"), Some(*k))).collect();
    cases.push(("u64::MAX".into(), None));
    for (name, kind) in cases {
        let bed = Bed::new();
        let seq = bed.at(".coord/queue/seq");
        match kind {
            Some(k) => plant(&seq, k, &bed.victim()),
            None => {
                std::fs::create_dir_all(seq.parent().unwrap()).unwrap();
                std::fs::write(&seq, giant).unwrap();
            }
        }
        let outside = bed.outside();
        expect(&bed.run(Some("holder"), &["lock", "a.md"]), 0);
        let out = bed.run(Some("claude"), &["lock", "a.md", "--wait", "600ms"]);
        expect(&out, 3);
        assert!(
            out.stderr.contains("gave up waiting"),
            "{name}: {}",
            out.stderr
        );
        // The waiter left the line: nothing stands in the queue.
        let left: Vec<String> = bed
            .inside()
            .into_keys()
            .filter(|k| k.starts_with(".coord/queue/q-") && k.matches('/').count() == 3)
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
        expect(&bed.run(Some("holder"), &["unlock"]), 0);
        expect(&bed.run(Some("claude"), &["lock", "a.md", "--no-wait"]), 0);
        assert_eq!(bed.outside(), outside, "{name}");
        bed.assert_victim_untouched();
    }
}

#[test]
fn a_hostile_queue_folder_fails_only_the_waiter() {
    for kind in [Kind::Empty, Kind::Fifo, Kind::Symlink] {
        let bed = Bed::new();
        let queue = bed.at(".coord/queue");
        std::fs::create_dir_all(bed.at(".coord")).unwrap();
        if kind == Kind::Symlink {
            std::os::unix::fs::symlink(bed.env.path("outside"), &queue).unwrap();
        } else {
            plant(&queue, kind, &bed.victim());
        }
        let outside = bed.outside();
        // Nobody waits: the queue is not needed.
        expect(&bed.run(Some("holder"), &["lock", "a.md"]), 0);
        let out = bed.run(Some("claude"), &["lock", "a.md", "--wait", "2s"]);
        expect(&out, 1);
        assert!(
            out.stderr.contains(".coord/queue"),
            "{kind:?}: {}",
            out.stderr
        );
        // The failed waiter left no WAITING status and no lock.
        let presence = std::fs::read_to_string(bed.at(".claude_presence")).unwrap_or_default();
        assert!(!presence.contains("WAITING"), "{presence}");
        assert!(!bed.at("a.md.lock.claude").exists());
        expect(&bed.run(Some("holder"), &["unlock"]), 0);
        assert_eq!(bed.outside(), outside, "{kind:?}");
        assert!(tree(&bed.env.path("outside")).is_empty());
    }
}

/// A wait that ran out is reported in whole seconds.
#[test]
fn a_wait_that_ran_out_is_reported_in_whole_seconds() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.agent("gemini").args(["lock", "f.txt"]).ok();
    env.agent("claude")
        .args(["lock", "f.txt", "--wait", "1s"])
        .code(3)
        .stderr_has("gave up waiting for `f.txt` after 1s: held by gemini");
}

/// An agent that made its lock by hand (the seed's way) takes it into coord with `coord lock`
/// even while another agent waits in line for the file: refreshing a lock one holds never
/// queues behind those who wait for it (they wait for us).
#[test]
fn a_hand_made_lock_is_refreshed_while_another_agent_waits_for_the_file() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    env.write(
        "f.txt.lock.claude",
        format!("Agent: Claude\nlocked_at: {}\nfile: f.txt\n", now_stamp()),
    );
    let waiter = env
        .agent("gemini")
        .args(["lock", "f.txt", "--wait", "30s"])
        .spawn();
    crate::support::eventually("gemini waits", || {
        std::fs::read_to_string(env.path(".gemini_presence"))
            .is_ok_and(|p| p.contains("lock_status: WAITING"))
    });
    env.agent("claude")
        .args(["lock", "f.txt", "--no-wait"])
        .ok()
        .stdout_has("Lock refreshed: f.txt");
    assert!(env.read("f.txt.lock.claude").contains("\ntoken: "));
    assert!(!env.exists("f.txt.lock.gemini"));
    env.agent("claude").args(["unlock", "f.txt"]).ok();
    let got = crate::support::finish(waiter);
    assert_eq!(got.code, Some(0), "{}", got.stderr);
    assert!(env.exists("f.txt.lock.gemini") && !env.exists("f.txt.lock.claude"));
}

#[test]
fn a_waiter_times_out_with_exit_3_and_leaves_the_queue() {
    let env = Env::new();
    env.agent("gemini")
        .args(["lock", "a.md", "--reason", "refactoring"])
        .ok();
    env.agent("claude")
        .args(["lock", "a.md", "--wait", "300ms"])
        .code(3)
        .stderr_has("error: gave up waiting for `a.md` after")
        .stderr_has("held by gemini")
        .stderr_has("(working on refactoring)");
    assert!(env.read(".claude_presence").contains("lock_status: FREE"));
    env.agent("gemini").args(["unlock", "a.md"]).ok();
    // The queue is empty again: a lock without waiting succeeds at once.
    env.agent("claude").args(["lock", "a.md", "--no-wait"]).ok();
}

#[test]
fn waiters_are_served_in_arrival_order() {
    use rustix::process::{Pid, Signal, kill_process_group};
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    env.agent("a0").args(["lock", "f.md"]).ok();
    let mut waiters = Vec::new();
    for i in 1..=4 {
        let name = format!("a{i}");
        // Each waiter appends its name when it gets the lock, then releases it.
        let script = format!(
            "{bin} lock f.md --wait 60s -q && echo {name} >> order.txt && {bin} unlock f.md -q",
            bin = crate::support::coord_bin()
        );
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(env.root())
            .env("COORD_DIR", env.root())
            .env("COORD_AGENT", &name)
            .process_group(0)
            .spawn()
            .unwrap();
        waiters.push(child);
        eventually("the waiter queues up", || {
            env.exists(&format!(".{name}_presence"))
                && env.read(&format!(".{name}_presence")).contains("WAITING")
        });
    }
    // Make the wake-up order the reverse of the arrival order: every waiter but the last is
    // stopped when the lock is released, and they resume last-come first. Only the queue can
    // then serve them in arrival order.
    let group = |w: &std::process::Child| Pid::from_raw(w.id() as i32).unwrap();
    for w in &waiters[..3] {
        kill_process_group(group(w), Signal::STOP).unwrap();
    }
    env.agent("a0").args(["unlock", "f.md"]).ok();
    for w in waiters[..3].iter().rev() {
        std::thread::sleep(Duration::from_millis(400));
        kill_process_group(group(w), Signal::CONT).unwrap();
    }
    for mut w in waiters {
        assert!(w.wait().unwrap().success());
    }
    assert_eq!(env.read("order.txt"), "a1\na2\na3\na4\n");
}

#[test]
fn refreshing_a_held_lock_never_queues_behind_its_own_waiters() {
    let env = Env::new();
    env.agent("alice").args(["lock", "a.md"]).ok();
    let waiter = env
        .agent("bob")
        .args(["lock", "a.md", "b.md", "--wait", "60s"])
        .spawn();
    eventually("bob waits", || {
        env.exists(".bob_presence") && env.read(".bob_presence").contains("WAITING")
    });
    // Bob waits for a.md (held by alice): alice refreshing a.md, or taking b.md which bob also
    // wants, must not wait behind bob, who waits for alice.
    env.agent("alice")
        .args(["lock", "a.md", "--no-wait"])
        .ok()
        .stdout_has("Lock refreshed: a.md");
    env.agent("alice")
        .args(["lock", "b.md", "--no-wait"])
        .ok()
        .stdout_has("Lock acquired: b.md");
    // A third agent holding nothing does queue behind bob for b.md once alice lets it go.
    env.agent("alice").args(["unlock", "b.md"]).ok();
    env.agent("carol")
        .args(["lock", "b.md", "--no-wait"])
        .code(3)
        .stderr_has("earlier waiter");
    env.agent("alice").arg("unlock").ok();
    let out = waiter.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env.exists("a.md.lock.bob") && env.exists("b.md.lock.bob"));
}
