//! Clones whose clock is set back (contract §13, docs/remote.md "Clocks"): what a clone read or
//! published while its clock ran ahead is stamped with times that clock has not reached since.
//! Neither freezes what it knows of the other clones nor lets its own claims lapse elsewhere
//! while their holder lives. Real git served by `git daemon`, real `coord` processes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::locks::remote::{Team, Transport, coord, remote, status};
use crate::support::eventually;

/// The time an hour ahead of this clock, as `COORD_NOW` takes it.
fn an_hour_ahead() -> String {
    (chrono::Local::now() + chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
}

/// A clone `name` with the folder the tests lock in.
fn clone_with_src(t: &Team, name: &str) -> PathBuf {
    let dir = t.clone(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    dir
}

/// Clone B read the remote while its clock ran an hour ahead, then the clock was set right.
/// A claim made in A since reaches B all the same: B's next check reads the remote again (what
/// it read is not "0 s old") and keeps what it reads, so the claim refuses bob's lock and
/// `coord remote status` shows it.
#[test]
fn a_view_read_on_a_clock_since_set_back_is_read_again() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    remote(&t.env, &b, "x", &["sync"])
        .env("COORD_NOW", an_hour_ahead())
        .ok();
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--reason", "refactor"])
        .ok();
    coord(&t.env, &b, "bob")
        .args(["lock", "src/a.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    remote(&t.env, &b, "x", &["sync"]).ok();
    let seen = status(&t.env, &b);
    assert!(
        seen.claims
            .iter()
            .any(|c| c.agent == "alice" && c.pattern == "src/**"),
        "{seen:?}"
    );
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// `kill -9` of the renewer of clone `a`, once it says its pid; returned once it is dead, not
/// only signalled (its kernel lock free).
fn kill_renewer(a: &Path) -> String {
    let mut pid = String::new();
    eventually("the renewer says its pid", || {
        pid = std::fs::read_to_string(a.join(".coord/remote/renewer.pid")).unwrap_or_default();
        !pid.trim().is_empty()
    });
    let killed = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let lock = std::fs::File::open(a.join(".coord/remote/renewer")).unwrap();
    eventually("the killed renewer is gone", || lock.try_lock().is_ok());
    pid.trim().to_string()
}

/// Alice claims `src/**` (lease 4 s) in clone A while A's clock runs an hour ahead; B reads it
/// at once. A's clock is set right (its renewer started again on it) and alice lives on. Her
/// claim, stamped an hour ahead here, is renewed at once, not an hour late: past the lease B
/// first counted, bob is still refused.
#[test]
fn a_claim_published_on_a_clock_since_set_back_is_renewed_in_time() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--ttl", "4s"])
        .env("COORD_NOW", an_hour_ahead())
        .ok();
    remote(&t.env, &b, "x", &["sync"]).ok();
    // The renewer started on the clock that ran ahead (frozen there) is gone; alice heartbeats
    // on the clock set right, which starts her clone's renewer again, on it.
    let killed = kill_renewer(&a);
    coord(&t.env, &a, "alice").arg("presence").ok();
    eventually("the renewer on the clock set right runs", || {
        let now = std::fs::read_to_string(a.join(".coord/remote/renewer.pid")).unwrap_or_default();
        !now.trim().is_empty() && now.trim() != killed
    });
    // Past the 4 s B counts from when it first saw alice's claim.
    std::thread::sleep(Duration::from_secs(6));
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .code(3)
        .stderr_has("held by alice on ");
    coord(&t.env, &a, "alice").arg("unlock").ok();
}

/// Alice in clone A holds `src/**` (a 15-minute lease, renewed well inside it); clone B reads
/// it, then B's clock jumps an hour ahead. By B's wall clock her lease lapsed long ago, but B
/// itself has seen her claim for seconds only: bob's `--share` lock does not take it over, and
/// his lock of a file in it does not take it as free. Both are refused naming alice.
#[test]
fn a_reader_whose_clock_jumps_ahead_never_takes_over_a_live_claim() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = clone_with_src(&t, "a");
    let b = clone_with_src(&t, "b");
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--reason", "refactor"])
        .ok();
    remote(&t.env, &b, "x", &["sync"]).ok();
    let ahead = an_hour_ahead();
    coord(&t.env, &b, "bob")
        .args(["lock", "--share", "src/a.rs", "--no-wait"])
        .env("COORD_NOW", &ahead)
        .code(3)
        .stderr_has("held by alice on ");
    coord(&t.env, &b, "bob")
        .args(["lock", "src/b.rs", "--no-wait"])
        .env("COORD_NOW", &ahead)
        .code(3)
        .stderr_has("held by alice on ");
    remote(&t.env, &b, "x", &["sync"]).ok();
    let seen = status(&t.env, &b);
    assert!(
        seen.claims
            .iter()
            .any(|c| c.agent == "alice" && c.pattern == "src/**"),
        "{seen:?}"
    );
    coord(&t.env, &a, "alice").arg("unlock").ok();
}
