//! `coord lock` in clones that share their claims through the repository's remote (contract
//! §13, #47): a claim, and a file lock taken with `--share`, is published there before `coord
//! lock` answers, released there by `coord unlock` (and the end of a client's turn), renewed
//! while its holder lives. Real git served by `git daemon` on 127.0.0.1, real `coord`
//! processes, each clone in its own folder sharing nothing but the remote.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::locks::remote::{Team, Transport, coord, hostname, status};
use crate::support::{Env, eventually, finish};

/// `coord lock --json`, the fields these tests read.
#[derive(Debug, Deserialize)]
struct Locked {
    acquired: Vec<LockedItem>,
}

#[derive(Debug, Deserialize)]
struct LockedItem {
    file: String,
    claim: Option<bool>,
    remote: Option<String>,
    lease_until: Option<String>,
    took_over: Vec<TookOver>,
}

#[derive(Debug, Deserialize)]
struct TookOver {
    from: String,
    claim: Option<String>,
    remote: Option<String>,
}

/// `coord unlock --json`, the fields these tests read.
#[derive(Debug, Deserialize)]
struct Unlocked {
    results: Vec<UnlockedItem>,
}

#[derive(Debug, Deserialize)]
struct UnlockedItem {
    file: String,
    outcome: String,
    remote: Option<RemoteRelease>,
}

#[derive(Debug, Deserialize)]
struct RemoteRelease {
    remote: String,
    released: bool,
    warning: Option<String>,
}

/// `coord status --json`, what is taken here.
#[derive(Debug, Deserialize)]
struct Here {
    locks: Vec<serde_json::Value>,
    #[serde(default)]
    claims: Vec<serde_json::Value>,
}

fn here(env: &Env, dir: &Path) -> Here {
    coord(env, dir, "x").args(["status", "--json"]).ok().json()
}

/// The claims on the remote, as another clone reads them now.
fn on_remote(t: &Team, reader: &Path) -> Vec<(String, String)> {
    crate::locks::remote::remote(&t.env, reader, "x", &["sync"]).ok();
    let s = status(&t.env, reader);
    s.claims.into_iter().map(|c| (c.pattern, c.agent)).collect()
}

/// A clone `name` with the folders the tests lock in.
fn clone_with_src(t: &Team, name: &str) -> PathBuf {
    let dir = t.clone(name);
    std::fs::create_dir_all(dir.join("src/a")).unwrap();
    dir
}

/// Two clones claim overlapping paths at the same moment (`src/**` against a `--share` lock
/// of `src/a.rs`): exactly one wins; the other is refused (exit 3) naming the holder, its host,
/// since when, the reason and when its lease ends, and keeps nothing here or there. The winner
/// says where it published and until when; its unlock releases it there too.
#[test]
fn overlapping_claims_of_two_clones_at_once_give_one_holder() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    let alice = coord(&t.env, &a, "alice")
        .args([
            "--json",
            "lock",
            "src/**",
            "--no-wait",
            "--reason",
            "refactor",
        ])
        .spawn();
    let bob = coord(&t.env, &b, "bob")
        .args(["--json", "lock", "--share", "src/a.rs", "--no-wait"])
        .args(["--reason", "schema"])
        .spawn();
    let (alice, bob) = (finish(alice), finish(bob));
    let (won, lost, winner, loser, reason, dir) = match (alice.code, bob.code) {
        (Some(0), Some(3)) => (alice, bob, "alice", "bob", "refactor", &b),
        (Some(3), Some(0)) => (bob, alice, "bob", "alice", "schema", &a),
        other => panic!("exactly one must win: {other:?}\n{alice:?}\n{bob:?}"),
    };
    let doc: serde_json::Value = serde_json::from_str(&lost.stdout).unwrap();
    let message = doc["error"]["message"].as_str().unwrap();
    for says in [
        format!("held by {winner} on {}", hostname()),
        "through remote `origin`".into(),
        "lease until ".into(),
        " since ".into(),
        format!("(working on {reason})"),
    ] {
        assert!(message.contains(&says), "{says:?} in {message}");
    }
    assert_eq!(doc["error"]["exit_code"], 3);
    // The loser keeps nothing: not here, not there.
    let kept = here(&t.env, dir);
    assert!(kept.locks.is_empty() && kept.claims.is_empty(), "{kept:?}");
    assert_eq!(
        on_remote(&t, dir),
        vec![(
            if winner == "alice" {
                "src/**"
            } else {
                "src/a.rs"
            }
            .to_string(),
            winner.to_string()
        )]
    );
    crate::views::schemas::validate("lock", &serde_json::from_str(&won.stdout).unwrap());
    let got: Locked = serde_json::from_str(&won.stdout).unwrap();
    let item = &got.acquired[0];
    assert_eq!(item.remote.as_deref(), Some("origin"), "{item:?}");
    assert!(item.lease_until.is_some(), "{item:?}");
    assert_eq!(item.claim == Some(true), winner == "alice");
    assert_eq!(
        item.file,
        if winner == "alice" {
            "src/**"
        } else {
            "src/a.rs"
        }
    );
    // Released there too, in the same command.
    let winner_dir = if winner == "alice" { &a } else { &b };
    let out = coord(&t.env, winner_dir, winner)
        .args(["--json", "unlock"])
        .ok();
    crate::views::schemas::validate("unlock", &out.json());
    let done: Unlocked = out.json();
    let r = &done.results[0];
    assert_eq!(r.outcome, "released", "{r:?}");
    let remote = r.remote.as_ref().unwrap();
    assert!(remote.remote == "origin" && remote.released && remote.warning.is_none());
    assert!(on_remote(&t, dir).is_empty());
    coord(&t.env, dir, loser)
        .args(["lock", "src/a/", "--no-wait"])
        .ok()
        .stdout_has("shared through `origin`");
    coord(&t.env, dir, loser).arg("unlock").ok();
}

/// A clone waiting (`--wait`) for another clone's claim gets it once that clone unlocks (it
/// reads the remote again at most every 2 s); the end of a client's turn (the Stop hook)
/// releases a claim on the remote as `coord unlock` does.
#[test]
fn a_waiter_in_another_clone_gets_the_claim_once_it_is_released() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/"])
        .ok()
        .stdout_has("Claim acquired: src/** (shared through `origin`, lease until ");
    let waiter = coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--wait", "60s"])
        .spawn();
    eventually("bob waits for alice's claim", || {
        coord(&t.env, &b, "bob")
            .args(["log", "--json"])
            .ok()
            .stdout
            .contains("\"lock_waiting\"")
    });
    coord(&t.env, &a, "alice")
        .args(["unlock", "src/"])
        .ok()
        .stdout_has("Claim released: src/** (and on remote `origin`)");
    let got = finish(waiter);
    assert_eq!(got.code, Some(0), "{got:?}");
    got.stdout_has("Lock acquired: src/a.rs")
        .stderr_has("held by alice on ");
    assert_eq!(
        on_remote(&t, &a),
        vec![("src/a.rs".to_string(), "bob".to_string())]
    );
    // The end of bob's turn releases everything bob holds, there too.
    let stop = serde_json::json!({
        "hook_event_name": "Stop",
        "session_id": "5e551011-0000-4000-8000-000000000000",
        "cwd": b,
        "stop_hook_active": false,
    });
    coord(&t.env, &b, "bob")
        .args(["hook", "claude"])
        .stdin(stop.to_string())
        .ok();
    assert!(here(&t.env, &b).locks.is_empty());
    // The hook leaves the push to the clone's renewer (it never waits on the network): released
    // there within the renewer's two looks.
    eventually("bob's record released on the remote", || {
        on_remote(&t, &a).is_empty()
    });
}

/// The end of a client's turn never waits on the network: with the remote holding every
/// connection open without a word, the Stop hook of an agent holding a published claim answers
/// at once (before, it waited for the push's 30 s budget), released here; the record there is
/// left to the clone's renewer.
#[test]
fn the_stop_hook_does_not_wait_on_a_remote_that_never_answers() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/"])
        .ok()
        .stdout_has("shared through `origin`");
    // A remote that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for c in silent.incoming().take(8).flatten() {
            open.push(c);
        }
    });
    crate::locks::remote::run_git(
        &a,
        &[
            "remote",
            "set-url",
            "origin",
            &format!("git://127.0.0.1:{port}/r.git"),
        ],
    );
    let stop = serde_json::json!({
        "hook_event_name": "Stop",
        "session_id": "5e551011-0000-4000-8000-000000000001",
        "cwd": a,
        "stop_hook_active": false,
    });
    let mut hook =
        crate::locks::remote::like(coord(&t.env, &a, "alice"), crate::support::coord_bin())
            .args(["hook", "claude"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    std::io::Write::write_all(&mut hook.stdin.take().unwrap(), stop.to_string().as_bytes())
        .unwrap();
    let started = std::time::Instant::now();
    while hook.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the Stop hook waits on a remote that never answers"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let done = hook.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let left = here(&t.env, &a);
    assert!(left.claims.is_empty(), "released here: {left:?} {done:?}");
    drop(held);
}

/// `--local` keeps a claim to this clone: nothing reaches the remote (its refs are as they
/// were), and another clone claims the same paths. `--share` where the clone does not share,
/// or with `--local`, is refused before anything is taken.
#[test]
fn a_local_claim_publishes_nothing() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--local"])
        .ok()
        .stdout_lacks("shared");
    let listed = Command::new("git")
        .args(["ls-remote", &t.url])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "",
        "nothing published"
    );
    assert_eq!(here(&t.env, &a).claims.len(), 1);
    coord(&t.env, &b, "bob")
        .args(["lock", "src/**", "--no-wait"])
        .ok()
        .stdout_has("shared through `origin`");
    // Released here only: the remote is not asked.
    coord(&t.env, &a, "alice")
        .args(["unlock", "src/**"])
        .ok()
        .stdout_has("Claim released: src/**")
        .stdout_lacks("remote");
    assert_eq!(on_remote(&t, &a), vec![("src/**".into(), "bob".into())]);
    coord(&t.env, &a, "alice")
        .args(["lock", "--share", "--local", "src/a.rs"])
        .code(2);
    let lone = t.repo("lone", &t.url);
    coord(&t.env, &lone, "carol")
        .args(["lock", "--share", "x.rs"])
        .code(2)
        .stderr_has("coord remote enable");
    assert!(!lone.join("x.rs.lock.carol").exists());
    coord(&t.env, &b, "bob").arg("unlock").ok();
}

/// The remote gone (its daemon stopped): a shared claim or lock fails with exit 1 naming the
/// remote, and nothing is taken here; a release goes through here and says that the record
/// there stays until its lease lapses.
#[test]
fn an_unreachable_remote_takes_nothing() {
    let Some(mut t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    coord(&t.env, &a, "alice").args(["lock", "docs/"]).ok();
    drop(t.daemon.take());
    for args in [
        &["lock", "src/**", "--no-wait"][..],
        &["lock", "--share", "src/a.rs", "--wait", "5s"][..],
        &["lock", "src/a.rs", "src/b/", "--no-wait"][..],
    ] {
        coord(&t.env, &a, "alice")
            .args(args)
            .code(1)
            .stderr_has("cannot reach remote `origin`")
            .stderr_has("--local");
    }
    let kept = here(&t.env, &a);
    assert!(kept.locks.is_empty(), "{kept:?}");
    assert_eq!(kept.claims.len(), 1, "only docs/** stays: {kept:?}");
    assert!(!a.join("src/a.rs.lock.alice").exists());
    // A claim kept to this clone needs no remote.
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--local"])
        .ok();
    let out = coord(&t.env, &a, "alice").args(["--json", "unlock"]).ok();
    out.stderr_has("warning: released here, but cannot reach remote `origin`")
        .stderr_has("stays until its lease lapses");
    crate::views::schemas::validate("unlock", &out.json());
    let done: Unlocked = out.json();
    let docs = done.results.iter().find(|r| r.file == "docs/**").unwrap();
    let r = docs.remote.as_ref().unwrap();
    assert!(!r.released && r.warning.is_some(), "{r:?}");
    let local = done.results.iter().find(|r| r.file == "src/**").unwrap();
    assert!(local.remote.is_none());
    let kept = here(&t.env, &a);
    assert!(kept.locks.is_empty() && kept.claims.is_empty(), "{kept:?}");
}

/// Clones `a` and `b`; alice claims `src/**` in `a` with a lease of 3 s, and her clone's renewer
/// runs (its pid returned).
fn alice_claims_with_a_short_lease(t: &Team) -> (PathBuf, PathBuf, String) {
    let a = clone_with_src(t, "a");
    let b = clone_with_src(t, "b");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--ttl", "3s"])
        .ok();
    let pid_file = a.join(".coord/remote/renewer.pid");
    let mut pid = String::new();
    eventually("alice's clone runs its renewer", || {
        pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        !pid.trim().is_empty()
    });
    (a, b, pid)
}

/// The process that holds a clone's claims on the remote (its renewer) killed with `kill -9`:
/// the lease (`--ttl 3s`) lapses, and another clone waiting takes the claim over, saying from
/// whom (stderr, `--json`, its history). When the old clone's renewer runs again, its renewal
/// is refused: the claim is given back there and its history says who took it.
#[test]
fn a_killed_renewer_lets_its_lease_lapse_and_its_late_renewal_is_refused() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let (a, b, pid) = alice_claims_with_a_short_lease(&t);
    // Renewed past its lease while the renewer lives.
    std::thread::sleep(std::time::Duration::from_secs(4));
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    let killed = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = coord(&t.env, &b, "bob")
        .args(["--json", "lock", "--share", "src/a.rs", "--wait", "30s"])
        .ok();
    out.stderr_has(&format!(
        "took over the stale claim of alice on {} on `src/**` (its lease on remote `origin` ended at",
        hostname()
    ));
    crate::views::schemas::validate("lock", &out.json());
    let got: Locked = out.json();
    let over = &got.acquired[0].took_over[0];
    assert_eq!(over.from, format!("alice on {}", hostname()));
    assert_eq!(over.claim.as_deref(), Some("src/**"));
    assert_eq!(over.remote.as_deref(), Some("origin"));
    let log = coord(&t.env, &b, "bob").args(["log", "--json"]).ok().stdout;
    assert!(
        log.lines().any(|l| l.contains("\"lock_taken_over\"")
            && l.contains("\"remote\":\"origin\"")
            && l.contains(&format!("\"from\":\"alice on {}\"", hostname()))),
        "{log}"
    );
    // alice's clone runs a renewer again (her next shared claim starts it): the renewal of
    // `src/**` is refused, and the claim given back here.
    coord(&t.env, &a, "alice").args(["lock", "docs/"]).ok();
    eventually("alice's clone records the claim it lost", || {
        coord(&t.env, &a, "alice")
            .args(["log", "--json"])
            .ok()
            .stdout
            .lines()
            .any(|l| {
                l.contains("\"claim_lost\"")
                    && l.contains("\"pattern\":\"src/**\"")
                    && l.contains(&format!("\"by\":\"bob on {}\"", hostname()))
            })
    });
    coord(&t.env, &a, "alice")
        .arg("log")
        .ok()
        .stdout_has("alice lost the claim `src/**`: taken over by bob on ");
    let lost = coord(&t.env, &a, "alice")
        .args(["log", "--json"])
        .ok()
        .stdout
        .lines()
        .find(|l| l.contains("\"claim_lost\""))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .unwrap();
    crate::views::schemas::validate("watch-event", &lost);
    let kept = here(&t.env, &a);
    assert_eq!(kept.claims.len(), 1, "only docs/** stays: {kept:?}");
    coord(&t.env, &a, "alice").arg("unlock").ok();
    coord(&t.env, &b, "bob").arg("unlock").ok();
}

/// The clone's renewer killed with `kill -9` while alice goes on working: her next edit
/// through her client's hook starts it again, so her claim (lease 3 s, which B counts from
/// when it first read it) is renewed in time, and past that lease bob is still refused.
#[test]
fn a_killed_renewer_is_started_again_by_its_holders_next_hook() {
    killed_renewer_is_started_again_by(|t, a| {
        let payload = serde_json::json!({
            "session_id": "7684f1ed-55e2-4a19-be34-6aa5a64f4b50",
            "cwd": a,
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": a.join("docs/notes.md"), "content": "x\n"},
        });
        coord(&t.env, a, "alice")
            .args(["hook", "claude", "--wait", "0"])
            .stdin(payload.to_string())
            .ok();
    });
}

/// The same for an agent that works through commands and takes no lock: its heartbeat
/// (`coord presence`, which keeps its records here LIVE) starts the renewer again, else its
/// claim would lapse for the other clones while it goes on working under it.
#[test]
fn a_killed_renewer_is_started_again_by_its_holders_next_heartbeat() {
    killed_renewer_is_started_again_by(|t, a| {
        coord(&t.env, a, "alice").args(["presence", "parser"]).ok();
    });
}

fn killed_renewer_is_started_again_by(goes_on: impl Fn(&Team, &Path)) {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let (a, b, pid) = alice_claims_with_a_short_lease(&t);
    crate::locks::remote::remote(&t.env, &b, "x", &["sync"]).ok();
    let killed = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Dead, not only signalled: its kernel lock is free (a call that looks while the killed
    // process is still on its way out sees a renewer running, and the next one starts it).
    let lock = std::fs::File::open(a.join(".coord/remote/renewer")).unwrap();
    eventually("the killed renewer is gone", || lock.try_lock().is_ok());
    drop(lock);
    goes_on(&t, &a);
    let pid_file = a.join(".coord/remote/renewer.pid");
    eventually("a renewer runs again in alice's clone", || {
        let now = std::fs::read_to_string(&pid_file).unwrap_or_default();
        !now.trim().is_empty() && now.trim() != pid.trim()
    });
    // Past the lease B counts from when it read alice's claim.
    std::thread::sleep(std::time::Duration::from_secs(4));
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// A holder killed with `kill -9` (a `coord session` whose claim follows its process): its
/// clone's renewer sees the claim STALE here and releases it there, so that another clone gets
/// the paths without waiting for the lease (15 minutes) and without a takeover.
#[test]
fn a_killed_holder_is_released_there_by_its_clone() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    let mut session = coord(&t.env, &a, "x")
        .env_remove("COORD_AGENT")
        .env("COORD_BIN", crate::support::coord_bin())
        .args(["session", "--partner", "alice", "--", "sh", "-c"])
        .arg("\"$COORD_BIN\" lock 'src/**' && exec sleep 60")
        .spawn();
    eventually("alice's claim reaches the remote", || {
        on_remote(&t, &b) == vec![("src/**".to_string(), "alice".to_string())]
    });
    session.kill().unwrap();
    session.wait().unwrap();
    let out = coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--wait", "30s"])
        .ok();
    assert!(!out.stderr.contains("took over"), "{}", out.stderr);
    coord(&t.env, &b, "bob").arg("unlock").ok();
}

/// A clone whose `.coord/claims` cannot be read (grown past what coord reads): who holds its
/// claims there is unknown, so its renewer keeps renewing them and releases none; another
/// clone is still refused past the lease, and once the file is readable the unlock frees it.
#[test]
fn a_claims_file_that_cannot_be_read_keeps_its_claims_held_there() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let (a, b, _) = alice_claims_with_a_short_lease(&t);
    let path = a.join(".coord/claims");
    let kept = std::fs::read(&path).unwrap();
    let mut grown = kept.clone();
    grown.extend(format!("\nnote: {}\n", "x".repeat(5 * 1024 * 1024)).bytes());
    std::fs::write(&path, &grown).unwrap();
    // Past the lease, and past two looks of the renewer.
    std::thread::sleep(std::time::Duration::from_secs(5));
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    assert_eq!(
        on_remote(&t, &b),
        vec![("src/**".to_string(), "alice".to_string())]
    );
    std::fs::write(&path, &kept).unwrap();
    coord(&t.env, &a, "alice").arg("unlock").ok();
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--wait", "30s"])
        .ok();
    coord(&t.env, &b, "bob").arg("unlock").ok();
}

/// The remote's claims wiped (`refs/coord/claims` deleted by hand): the renewer of a clone whose
/// holder still holds its claim publishes it again, and the other clones see it held.
#[test]
fn a_claim_wiped_from_the_remote_is_published_again_while_held() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--ttl", "3s", "--reason", "refactor"])
        .ok();
    crate::locks::remote::run_git(&t.bare, &["update-ref", "-d", "refs/coord/claims"]);
    assert!(on_remote(&t, &b).is_empty());
    eventually("alice's claim is on the remote again", || {
        on_remote(&t, &b) == vec![("src/**".to_string(), "alice".to_string())]
    });
    coord(&t.env, &b, "bob")
        .args(["lock", "src/a/", "--no-wait"])
        .code(3)
        .stderr_has("(working on refactor)");
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// Clones racing for overlapping claims and shared locks at once, round after round: exactly
/// one holds each round, proven by a witness each winner creates with `O_EXCL` while it holds
/// (a second holder would find it there); the others are refused (exit 3) naming the winner.
#[test]
fn racing_clones_give_exactly_one_holder_each_round() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let dirs: Vec<PathBuf> = (0..8)
        .map(|i| clone_with_src(&t, &format!("c{i}")))
        .collect();
    // Every two of these overlap (all hold src/a/x.rs).
    let asks: [&[&str]; 4] = [
        &["src/**"],
        &["--share", "src/a/x.rs"],
        &["src/a/"],
        &["src/*/x.rs"],
    ];
    crate::locks::remote::race(
        &t,
        &dirs,
        10,
        "coord lock --no-wait",
        &|i, round| asks[(i + round) % asks.len()].to_vec(),
        &|dir, agent| {
            coord(&t.env, dir, agent)
                .arg("unlock")
                .ok()
                .stdout_has("(and on remote `origin`)");
        },
    );
}

/// A `pre-receive` hook on the team's bare repository: each push is refused, held back or let
/// through by its commit's first line, as the file `hooks/mode` says (`reject`: releases are
/// refused; `block`: a release waits, saying so in `hooks/blocked`, while the mode stays;
/// `hold`: renewals and alice's claims wait while it stays; `park`: alice's claims wait, saying
/// so in `hooks/parked`, while it stays; anything else: all go through).
fn server_gate(t: &Team) -> PathBuf {
    let hooks = t.bare.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-receive");
    std::fs::write(
        &hook,
        r#"#!/bin/sh
dir=$(dirname "$0")
while read old new ref; do
  msg=$(git log -1 --format=%s "$new" 2>/dev/null)
  case "$(cat "$dir/mode"):$msg" in
    reject:release*) exit 1;;
    block:release*) touch "$dir/blocked"; while [ "$(cat "$dir/mode")" = block ]; do sleep 0.05; done;;
    hold:renew*|hold:claim*alice*) while [ "$(cat "$dir/mode")" = hold ]; do sleep 0.05; done;;
    park:claim*alice*) touch "$dir/parked"; while [ "$(cat "$dir/mode")" = park ]; do sleep 0.05; done;;
  esac
done
exit 0
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mode = hooks.join("mode");
    std::fs::write(&mode, "pass").unwrap();
    mode
}

/// Alice lets go of `src/**` here while the remote refuses the release, so her clone's renewer
/// releases it there; she claims it again while that release is on its way (its push held back
/// by the server). The release loses the race to her new claim and, read again, leaves it: bob
/// in another clone is refused, and alice keeps what she claimed.
#[test]
fn the_renewers_release_never_takes_back_a_claim_published_again_meanwhile() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    let mode = server_gate(&t);
    coord(&t.env, &a, "alice").args(["lock", "src/**"]).ok();
    std::fs::write(&mode, "reject").unwrap();
    coord(&t.env, &a, "alice")
        .arg("unlock")
        .ok()
        .stderr_has("released here, but remote `origin` refused");
    // The renewer's release of the record alice let go reaches the server, and waits there.
    std::fs::write(&mode, "block").unwrap();
    let blocked = mode.with_file_name("blocked");
    eventually("the renewer's release reaches the server", || {
        blocked.exists()
    });
    coord(&t.env, &a, "alice").args(["lock", "src/**"]).ok();
    // The release goes on (and loses the race); alice's renewals would wait at the server.
    std::fs::write(&mode, "hold").unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let out = coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .run();
    std::fs::write(&mode, "pass").unwrap();
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("held by alice on "), "{}", out.stderr);
    let log = coord(&t.env, &a, "alice").arg("log").ok().stdout;
    assert!(!log.contains("alice lost the claim"), "{log}");
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// Alice's `coord unlock` of `src/**` and her `coord lock` of it again race (two processes of
/// one agent: a hook and a command): the unlock's push there is held back by the server while
/// the lock publishes the claim anew. The unlock's release then loses the race and, read again,
/// leaves the new claim: bob in another clone is refused, and alice keeps what she claimed.
#[test]
fn an_unlock_that_loses_the_race_never_takes_back_a_claim_made_again_meanwhile() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    let mode = server_gate(&t);
    coord(&t.env, &a, "alice").args(["lock", "src/**"]).ok();
    std::fs::write(&mode, "block").unwrap();
    let unlock = coord(&t.env, &a, "alice").arg("unlock").spawn();
    let blocked = mode.with_file_name("blocked");
    eventually("the unlock's release reaches the server", || {
        blocked.exists()
    });
    coord(&t.env, &a, "alice").args(["lock", "src/**"]).ok();
    // The release goes on (and loses the race); alice's renewals would wait at the server.
    std::fs::write(&mode, "hold").unwrap();
    let unlocked = finish(unlock);
    assert_eq!(unlocked.code, Some(0), "{}", unlocked.stderr);
    let out = coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .run();
    std::fs::write(&mode, "pass").unwrap();
    assert_eq!(out.code, Some(3), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("held by alice on "), "{}", out.stderr);
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// A claude `Write` of `rel` in clone `dir`, as its `PreToolUse` hook gets it, run as `agent`.
fn hook_write(env: &Env, dir: &Path, agent: &str, rel: &str) -> crate::support::Output {
    let payload = serde_json::json!({
        "session_id": "6c1d2a8e-3b7f-4e0a-9d51-2f4e8b7c9a10",
        "cwd": dir,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": dir.join(rel), "content": "b\n"},
        "tool_use_id": "toolu_1",
    });
    coord(env, dir, agent)
        .args(["hook", "claude", "--wait", "0"])
        .stdin(payload.to_string())
        .ok()
}

/// Clones `a` and `b`; alice's `coord lock src/**` (lease 3 s) in `a` is killed (SIGKILL) while
/// its push of the claim waits at the server, which then lets it land.
fn claim_killed_as_its_push_lands(t: &Team) -> (PathBuf, PathBuf) {
    let a = clone_with_src(t, "a");
    let b = clone_with_src(t, "b");
    let mode = server_gate(t);
    std::fs::write(&mode, "park").unwrap();
    let mut lock = coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--ttl", "3s"])
        .spawn();
    let parked = mode.with_file_name("parked");
    eventually("alice's push reaches the server", || parked.exists());
    let killed = Command::new("kill")
        .args(["-9", &lock.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = lock.wait();
    std::fs::write(&mode, "pass").unwrap();
    eventually("alice's claim lands on the remote", || {
        on_remote(t, &b) == vec![("src/**".to_string(), "alice".to_string())]
    });
    (a, b)
}

/// Alice's `coord lock src/**` is killed (SIGKILL) while its push of the claim waits at the
/// server, which then lets it land: the claim is published, and the process that would have
/// said so here is gone. Alice goes on editing (her next hook): her clone renews the claim, so
/// that past its lease bob in another clone is still refused, never a second holder.
#[test]
fn a_claim_whose_lock_was_killed_as_its_push_landed_is_renewed_while_held() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let (a, b) = claim_killed_as_its_push_lands(&t);
    let edit = hook_write(&t.env, &a, "alice", "src/a/x.rs");
    assert!(
        crate::clients::hooks::denied("claude", &edit).is_none(),
        "{}",
        edit.stdout
    );
    // Past the lease B counts from when it first saw alice's claim.
    std::thread::sleep(std::time::Duration::from_secs(6));
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// As above, but alice goes on working through commands, not a client's hook: she locks a
/// file of her claim and gives it back (`coord lock`, `coord unlock`), again and again past the
/// lease. Her clone renews the claim all the same, so that bob in another clone is refused.
#[test]
fn a_claim_whose_lock_was_killed_as_its_push_landed_is_renewed_while_its_holder_runs_commands() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let (a, b) = claim_killed_as_its_push_lands(&t);
    // Past the lease B counts from when it first saw alice's claim, alice working all along.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(6);
    while std::time::Instant::now() < until {
        coord(&t.env, &a, "alice").args(["lock", "src/a/x.rs"]).ok();
        coord(&t.env, &a, "alice")
            .args(["unlock", "src/a/x.rs"])
            .ok();
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// From now on `clone` reads the remote through `script`, an upload-pack of the test's own (it
/// runs `git-upload-pack` and is slow when the test says so).
fn fetch_through(t: &Team, clone: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let pack = t.env.path("slow-upload-pack");
    std::fs::write(&pack, script).unwrap();
    std::fs::set_permissions(&pack, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pack = pack.display().to_string();
    crate::locks::remote::run_git(clone, &["config", "remote.origin.uploadpack", &pack]);
}

/// Alice holds `src/**` kept to her clone (`--local`) and a published claim (her clone's renewer
/// runs); bob in another clone claims `src/a/**`. Her `coord lock src/**` to share hers marks it
/// as published before it asks the remote, which is slow to answer it (its fetch waits 3 s):
/// her renewer, looking meanwhile, must not take that mark for a claim of hers taken over there.
/// The remote answers that bob holds it: refused (exit 3), and the claim she held before stays
/// hers here, with no `claim_lost` in her history. `renewer_slow`: the renewer's reads of the
/// remote are slow too (it decides once the lock has answered), else only the lock's are (it
/// decides while the lock publishes).
fn a_refused_share_while_the_renewer_looks(renewer_slow: bool) {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    std::fs::create_dir_all(a.join("docs")).unwrap();
    coord(&t.env, &a, "alice").args(["lock", "docs/**"]).ok();
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--local"])
        .ok();
    coord(&t.env, &b, "bob").args(["lock", "src/a/**"]).ok();
    crate::locks::remote::remote(&t.env, &a, "x", &["sync"]).ok();
    // From now on alice's clone reads the remote slowly: every read while `slow` is there, or
    // those of a process started with SLOW_FETCH set.
    let slow = a.join("slow");
    let script = format!(
        "#!/bin/sh\nif [ -e '{}' ] || [ -n \"$SLOW_FETCH\" ]; then sleep 3; fi\nexec git-upload-pack \"$@\"\n",
        slow.display()
    );
    fetch_through(&t, &a, &script);
    if renewer_slow {
        std::fs::write(&slow, "").unwrap();
    }
    coord(&t.env, &a, "alice")
        .env("SLOW_FETCH", "1")
        .args(["lock", "src/**", "--no-wait"])
        .code(3)
        .stderr_has("held by bob on ");
    let _ = std::fs::remove_file(&slow);
    // The renewer's looks meanwhile (each reading the remote) are over.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let claims: Vec<String> = here(&t.env, &a)
        .claims
        .iter()
        .filter_map(|c| c["pattern"].as_str().map(str::to_string))
        .collect();
    assert!(claims.contains(&"src/**".to_string()), "{claims:?}");
    let log = coord(&t.env, &a, "x").args(["log", "--json"]).ok();
    assert!(!log.stdout.contains("claim_lost"), "{}", log.stdout);
    coord(&t.env, &a, "alice").arg("unlock").ok();
    coord(&t.env, &b, "bob").arg("unlock").ok();
}

#[test]
fn a_claim_held_before_a_refused_share_is_kept_though_the_renewer_looks_after() {
    a_refused_share_while_the_renewer_looks(true);
}

#[test]
fn a_claim_held_before_a_refused_share_is_kept_though_the_renewer_looks_during() {
    a_refused_share_while_the_renewer_looks(false);
}

/// Two `coord lock src/**` of alice at once in one session (she held `src/**` here before,
/// kept to her clone): the first to ask the remote hears that bob holds `src/a/**` (its read
/// then ends slowly), bob lets go, and the second publishes hers. The first must not take back
/// the mark of the record the second just published: that record is renewed, so that past its
/// lease bob is still refused.
#[test]
fn a_refused_share_never_takes_back_the_mark_of_the_same_claim_published_meanwhile() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    let session = std::process::id().to_string();
    let alice = |args: &[&str]| {
        coord(&t.env, &a, "alice")
            .env("COORD_SESSION_PID", &session)
            .env("COORD_SESSION", "s1")
            .args(args)
    };
    alice(&["lock", "src/**", "--local", "--ttl", "3s"]).ok();
    coord(&t.env, &b, "bob").args(["lock", "src/a/**"]).ok();
    let script = "#!/bin/sh\ngit-upload-pack \"$@\"\nrc=$?\nif [ -n \"$SLOW_FETCH\" ]; then sleep 3; fi\nexit $rc\n";
    fetch_through(&t, &a, script);
    let first = alice(&["lock", "src/**", "--no-wait", "--ttl", "3s"])
        .env("SLOW_FETCH", "1")
        .spawn();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    coord(&t.env, &b, "bob").arg("unlock").ok();
    alice(&["lock", "src/**", "--no-wait", "--ttl", "3s"])
        .ok()
        .stdout_has("shared through `origin`");
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(3), "{first:?}");
    crate::locks::remote::remote(&t.env, &b, "x", &["sync"]).ok();
    // Past the lease B counts from when it first saw alice's claim, alice working all along.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(6);
    while std::time::Instant::now() < until {
        alice(&["lock", "src/a/x.rs"]).ok();
        alice(&["unlock", "src/a/x.rs"]).ok();
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a/x.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    alice(&["unlock"]).ok();
}
