//! Clones whose clock is set back (contract §13, docs/remote.md "Clocks"): what a clone read or
//! published while its clock ran ahead is stamped with times that clock has not reached since.
//! Neither freezes what it knows of the other clones nor lets its own claims lapse elsewhere
//! while their holder lives. Real git served by `git daemon`, real `coord` processes.

use std::path::PathBuf;

use crate::locks::remote::{Team, Transport, coord, remote, status};

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
