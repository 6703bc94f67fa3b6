//! Crashes in `msg send`: a sender killed at any point leaves whole messages, delivered once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::Value;

use crate::robustness::crashes_protocols::{Rng, fire, maybe, no_temps, report, temps};
use crate::support::Env;

// ---------------------------------------------------------------------------------------------
// msg send

const MSG_KILLS: usize = 80;

/// Split a message file into (header, body); `None` when torn.
fn parse_msg(text: &str) -> Option<(BTreeMap<String, String>, String)> {
    let (head, body) = text.split_once("\n\n")?;
    let rec: BTreeMap<String, String> = head
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(": ")?;
            Some((k.to_string(), v.to_string()))
        })
        .collect::<Option<_>>()?;
    Some((rec, body.to_string()))
}

#[test]
fn killed_senders_leave_whole_messages_delivered_once() {
    let mut rng = Rng::new(1);
    let env = Env::new();
    env.agent("r").args(["presence"]).ok();
    let dir = coord::layout::messages_dir(env.root());
    let started = Instant::now();
    let (mut kills, mut runs, mut round) = (0, 0, 0);
    let mut delivered: BTreeMap<String, String> = BTreeMap::new(); // id -> body
    let mut attempted: BTreeSet<String> = BTreeSet::new();
    let mut stored: BTreeMap<String, String> = BTreeMap::new(); // id -> body, as found
    while kills < MSG_KILLS {
        round += 1;
        assert!(round < 40 * MSG_KILLS, "could not land {MSG_KILLS} kills");
        let n = 3 + rng.below(4) as usize;
        let mut sent = Vec::new();
        let cmds = (0..n)
            .map(|i| {
                let body = format!("m{round}-{i} first line\nsecond line of m{round}-{i}\n");
                let to = if rng.below(3) == 0 { "all" } else { "r" };
                let from = format!("s{}", rng.below(4));
                sent.push(body.clone());
                attempted.insert(body.clone());
                let c = env.agent(&from).args(["msg", "send", to, &body]).command();
                (c, maybe(&mut rng, 80, 20_000))
            })
            .collect();
        for (shot, body) in fire(cmds).into_iter().zip(sent) {
            runs += 1;
            kills += usize::from(shot.killed);
            if shot.killed {
                continue;
            }
            assert_eq!(shot.code, Some(0), "msg send failed: {}", shot.stderr);
            let id = shot.stdout.trim().to_string();
            assert!(!id.is_empty(), "no id printed");
            delivered.insert(id, body);
        }
        // Every message file present is whole, and no body is there twice.
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".msg") else {
                continue;
            };
            let text = std::fs::read_to_string(e.path()).unwrap();
            let (head, body) =
                parse_msg(&text).unwrap_or_else(|| panic!("message {name} is torn: {text:?}"));
            for k in ["from", "name", "to", "time"] {
                assert!(head.contains_key(k), "message {name} lacks `{k}`: {text:?}");
            }
            assert!(
                attempted.contains(&body),
                "message {name} has a cut body: {body:?}"
            );
            stored.entry(id.to_string()).or_insert(body);
        }
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for body in stored.values() {
            *seen.entry(body).or_insert(0) += 1;
        }
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "messages stored twice: {twice:?}");
    }
    // `msg list` works, shows every delivered id once with its body, and sweeps the litter.
    let left_by_kills = temps(&dir).len();
    let list: Value = env.agent("r").args(["msg", "list", "--json"]).ok().json();
    let listed: BTreeMap<String, String> = list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["body"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (id, body) in &delivered {
        assert_eq!(
            listed.get(id),
            Some(body),
            "message {id} was not delivered whole"
        );
    }
    assert!(
        list.get("skipped")
            .and_then(Value::as_array)
            .is_none_or(|s| s.is_empty()),
        "skipped files: {list}"
    );
    no_temps(&dir, "msg list");
    env.agent("s0").args(["msg", "send", "r", "after"]).ok();
    no_temps(env.root(), "msg send");
    report(
        &format!(
            "msg send ({} delivered, {left_by_kills} temporary files left at the end and swept)",
            delivered.len()
        ),
        kills,
        runs,
        started,
    );
}
