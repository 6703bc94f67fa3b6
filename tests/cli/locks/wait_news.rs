//! A waiter is told what happens while it waits (issue 25, issue 30 item 6): who holds the
//! file, how long it will wait and how to stop; then, one line per change, when the holder goes
//! INACTIVE and when the lock can be taken over.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::Env;

#[test]
fn a_piped_waiter_gets_a_line_per_change_with_the_time_the_lock_becomes_takeable() {
    let env = Env::new();
    env.write("a.md", "a\n");
    env.agent("claude")
        .args(["lock", "a.md", "--ttl", "1h"])
        .ok();
    let mut waiter = env
        .agent("gemini")
        .args(["lock", "a.md", "--wait", "2m"])
        .spawn();
    let (tx, lines) = mpsc::channel::<String>();
    let stderr = waiter.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || {
        lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a line from the waiter")
    };
    let first = next();
    assert!(
        first.contains("waiting for `a.md`: held by claude since")
            && first.contains("[waiting up to 2m; Ctrl-C to stop]"),
        "{first}"
    );
    // The holder stops beating: its presence's heartbeat is three minutes old.
    let old = (chrono::Local::now() - chrono::Duration::minutes(3))
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string();
    let presence: String = env
        .read(".claude_presence")
        .lines()
        .map(|l| {
            if l.starts_with("heartbeat: ") {
                format!("heartbeat: {old}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    env.write(".claude_presence", presence);
    let news = next();
    assert!(
        news.starts_with("`a.md`: claude is INACTIVE; it can be taken over at ")
            && news.contains("[waited "),
        "{news}"
    );
    env.agent("claude").args(["unlock", "a.md"]).ok();
    let status = waiter.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
