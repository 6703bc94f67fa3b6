//! `FILE.bak` and its older generations: a takeover or a refresh keeps the backup from before
//! the current holder's edit; `coord restore --list` and `--from N` bring back any kept one.

use std::time::Duration;

use crate::support::Env;

// ---------------------------------------------------------------------------------------------
// Data: backups

/// Issue 26 item 9: `FILE.bak` keeps FILE as it was before its current holder's edit. A holder
/// that crashed mid-edit leaves a half-written FILE: the agent taking its stale lock over keeps
/// the crashed holder's backup (and is told how to restore it), and `coord restore` brings the
/// original back. A refresh of a lock one holds, after editing, leaves the backup alone.
#[test]
fn a_takeover_and_a_refresh_keep_the_backup_from_before_the_edit() {
    let env = Env::new();
    env.write("F", "original\n");
    env.agent("a").args(["lock", "F", "--ttl", "1s"]).ok();
    assert_eq!(env.read("F.bak"), "original\n");
    env.write("F", "half-writ");
    // a crashes: no presence, and its lock outlives its TTL.
    std::fs::remove_file(env.path(".a_presence")).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let out = env.agent("b").args(["lock", "F"]).ok();
    assert_eq!(
        env.read("F.bak"),
        "original\n",
        "the backup was overwritten"
    );
    assert!(out.stderr.contains("coord restore F"), "{}", out.stderr);
    env.agent("b").args(["restore", "F"]).ok();
    assert_eq!(env.read("F"), "original\n");
    // b edits, then locks again (a refresh): the backup stays what F was before b's edit.
    let before = env.read("F.bak");
    env.write("F", "b's edit\n");
    env.agent("b").args(["lock", "F"]).ok();
    assert_eq!(env.read("F.bak"), before, "a refresh rewrote the backup");
}

/// Issue 26 item 9 (generations): every backup a new holder's lock replaces is kept under
/// `.coord/backups/`, `restore --list` shows them newest first, `restore --from N` puts one
/// back byte for byte (the current content becoming `FILE.bak`, nothing dropped), and only the
/// newest generations are kept.
#[test]
fn older_backups_are_kept_listed_and_restored_byte_for_byte() {
    let env = Env::new();
    let version = |i: u32| -> Vec<u8> { format!("v{i}\r\n\0\u{e9}").into_bytes() };
    // `restore F --list --json`'s generations, newest first.
    let generations = || -> Vec<serde_json::Value> {
        let v: serde_json::Value = env
            .cmd()
            .args(["restore", "F", "--list", "--json"])
            .ok()
            .json();
        v["generations"].as_array().unwrap().clone()
    };
    // v1 .. v4 each locked (backed up) by an agent, then edited and unlocked.
    let mut raw = version(1);
    raw.push(0xff);
    std::fs::write(env.path("F"), &raw).unwrap();
    for i in 2..=4 {
        env.agent("a").args(["lock", "F"]).ok();
        std::fs::write(env.path("F"), version(i)).unwrap();
        env.agent("a").args(["unlock", "F"]).ok();
    }
    env.agent("b").args(["lock", "F"]).ok();
    std::fs::write(env.path("F"), b"b's edit").unwrap();
    let listed = env.cmd().args(["restore", "F", "--list", "--json"]).ok();
    let json: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let gens = json["generations"].as_array().unwrap();
    assert_eq!(gens.len(), 4, "{}", listed.stdout);
    assert_eq!(gens[0]["n"], 1);
    assert_eq!(gens[0]["path"], "F.bak");
    let bytes =
        |g: &serde_json::Value| std::fs::read(env.path(g["path"].as_str().unwrap())).unwrap();
    assert_eq!(bytes(&gens[0]), version(4));
    assert_eq!(bytes(&gens[1]), version(3));
    assert_eq!(bytes(&gens[3]), raw);
    let text = env.cmd().args(["restore", "F", "--list"]).ok().stdout;
    assert_eq!(text.lines().count(), 4, "{text}");
    // The oldest, byte for byte; what it replaced is FILE.bak, and the old FILE.bak is kept.
    env.agent("b").args(["restore", "F", "--from", "4"]).ok();
    assert_eq!(std::fs::read(env.path("F")).unwrap(), raw);
    assert_eq!(std::fs::read(env.path("F.bak")).unwrap(), b"b's edit");
    let gens = generations();
    assert_eq!(gens.len(), 5);
    assert_eq!(
        bytes(&gens[1]),
        version(4),
        "the replaced FILE.bak was dropped"
    );
    // A generation that is not there: exit 1, nothing changed.
    let out = env.agent("b").args(["restore", "F", "--from", "9"]).code(1);
    assert!(out.stderr.contains("--list"), "{}", out.stderr);
    assert_eq!(std::fs::read(env.path("F")).unwrap(), raw);
    env.agent("b").args(["unlock", "F"]).ok();
    // Only the newest are kept: FILE.bak and 8 older ones.
    for i in 10..30 {
        env.agent("a").args(["lock", "F"]).ok();
        std::fs::write(env.path("F"), version(i)).unwrap();
        env.agent("a").args(["unlock", "F"]).ok();
    }
    let gens = generations();
    assert_eq!(gens.len(), 9);
    assert_eq!(bytes(&gens[0]), version(28));
    assert_eq!(bytes(&gens[8]), version(20));
    // A file never backed up lists nothing.
    env.write("G", "g");
    let none = env.cmd().args(["restore", "G", "--list"]).ok();
    assert!(none.stdout.contains("No backups"), "{}", none.stdout);
}

/// Past generation 99999999 the names grow a digit: a generation numbered 100000000 and above
/// is still listed (and swept when too old), not written where no command sees it again.
#[test]
fn generations_past_eight_digits_are_still_listed() {
    let env = Env::new();
    env.write("F", "v1\n");
    env.agent("a").args(["lock", "F"]).ok();
    env.write("F", "v2\n");
    env.agent("a").args(["unlock", "F"]).ok();
    env.agent("a").args(["lock", "F"]).ok();
    env.write("F", "v3\n");
    env.agent("a").args(["unlock", "F"]).ok();
    env.write(".coord/backups/F/99999999", "planted\n");
    env.agent("a").args(["lock", "F"]).ok();
    env.agent("a").args(["unlock", "F"]).ok();
    assert!(env.exists(".coord/backups/F/100000000"));
    let v: serde_json::Value = env
        .cmd()
        .args(["restore", "F", "--list", "--json"])
        .ok()
        .json();
    let paths: Vec<&str> = v["generations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["path"].as_str())
        .collect();
    assert_eq!(
        paths[..3],
        [
            "F.bak",
            ".coord/backups/F/100000000",
            ".coord/backups/F/99999999"
        ],
        "{v}"
    );
}

/// A restore whose FILE.bak cannot be replaced (a folder stands there) fails before it touches
/// FILE: the current content is never left only in a temporary file (which the failure drops,
/// as the next command sweeps that of a killed restore), and the generation asked for is
/// still there.
#[test]
fn a_restore_that_cannot_keep_the_current_content_leaves_the_file_alone() {
    let env = Env::new();
    for i in 1..=3 {
        env.write("F", format!("v{i}\n"));
        env.agent("a").args(["lock", "F"]).ok();
        env.agent("a").args(["unlock", "F"]).ok();
    }
    env.write("F", "the current edit\n");
    std::fs::remove_file(env.path("F.bak")).unwrap();
    std::fs::create_dir_all(env.path("F.bak/inside")).unwrap();
    let out = env.agent("a").args(["restore", "F", "--from", "2"]).code(1);
    assert!(out.stderr.starts_with("error:"), "{}", out.stderr);
    assert_eq!(
        env.read("F"),
        "the current edit\n",
        "the current content was lost"
    );
    assert!(env.exists("F.bak/inside"));
    assert_eq!(env.read(".coord/backups/F/00000001"), "v1\n");
    assert_eq!(env.read(".coord/backups/F/00000002"), "v2\n");
}
