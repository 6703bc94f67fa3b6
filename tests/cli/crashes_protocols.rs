//! Crashes across the protocols: `msg send`, `dialogue say`, `review step` / `review issue
//! add`, `write` under contention with `lock` / `unlock`, and `collab write`, each killed with
//! SIGKILL at random moments (0–25 ms after start, several processes contending where that makes
//! sense). After every kill the files those commands own are whole and consistent, or in a
//! state the next command repairs (and it is then asserted that it does); no temporary file
//! outlives the next command in its folder.
//!
//! The seed is printed; `COORD_CRASH_SEED` replays a run. Each sweep prints its kill count and
//! duration.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Env;

/// A small deterministic generator (xorshift64*; the seed is printed, so a failure replays).
struct Rng(u64);

impl Rng {
    fn new(salt: u64) -> Rng {
        let seed = std::env::var("COORD_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x00c0_0d5e_ed00_0002);
        eprintln!("crash sweep seed: {seed} (set COORD_CRASH_SEED to replay)");
        Rng((seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn delay(&mut self, max_us: u64) -> Duration {
        Duration::from_micros(self.below(max_us))
    }
}

/// What became of one process of a round.
struct Shot {
    /// It was still running when its kill came.
    killed: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Start every command at once, kill each after its own delay (`None`: let it finish), and
/// collect the outcomes in the order given.
fn fire(cmds: Vec<(Command, Option<Duration>)>) -> Vec<Shot> {
    let mut procs: Vec<_> = cmds
        .into_iter()
        .enumerate()
        .map(|(i, (mut c, delay))| {
            let child = c
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (i, child, delay)
        })
        .collect();
    procs.sort_by_key(|(_, _, d)| d.unwrap_or(Duration::MAX));
    let t0 = Instant::now();
    let mut shots: Vec<(usize, Shot)> = Vec::new();
    for (i, mut child, delay) in procs {
        let mut killed = false;
        if let Some(delay) = delay {
            if let Some(left) = delay.checked_sub(t0.elapsed()) {
                std::thread::sleep(left);
            }
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                killed = true;
            }
        }
        let out = child.wait_with_output().unwrap();
        shots.push((
            i,
            Shot {
                killed,
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            },
        ));
    }
    shots.sort_by_key(|(i, _)| *i);
    shots.into_iter().map(|(_, s)| s).collect()
}

/// A command that is killed after `delay` with probability `p_kill` (in percent).
fn maybe(rng: &mut Rng, p_kill: u64, max_us: u64) -> Option<Duration> {
    (rng.below(100) < p_kill).then(|| rng.delay(max_us))
}

/// coord's temporary files anywhere under `dir` (relative paths).
fn temps(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if e
                .file_name()
                .to_str()
                .is_some_and(coord::layout::is_temp_name)
            {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[track_caller]
fn no_temps(dir: &Path, after: &str) {
    let left = temps(dir);
    assert!(
        left.is_empty(),
        "temporary files left after {after}: {left:?}"
    );
}

fn report(what: &str, kills: usize, runs: usize, started: Instant) {
    eprintln!(
        "crash sweep {what}: {kills} kills among {runs} processes in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

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

// ---------------------------------------------------------------------------------------------
// dialogue say

const SAY_KILLS: usize = 80;

/// `(number, speaker, text)` of every message of `conversation.md`; panics on a torn or
/// misnumbered block.
#[track_caller]
fn conversation(text: &str) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    let mut blocks = text.split("\n## Message #");
    blocks.next(); // the header
    for (i, block) in blocks.enumerate() {
        let (head, rest) = block
            .split_once('\n')
            .unwrap_or_else(|| panic!("torn message block: {block:?}"));
        let (n, rest_head) = head.split_once(' ').unwrap();
        let speaker = rest_head
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(s, _)| s.to_string())
            .unwrap_or_else(|| panic!("bad header: {head:?}"));
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("bad number: {head:?}"));
        assert_eq!(n, i as u64 + 1, "messages not numbered 1..N:\n{text}");
        assert!(
            rest.ends_with("\n---\n\n") || rest.ends_with("\n---\n"),
            "message #{n} is torn: {rest:?}"
        );
        let body = rest.trim().trim_end_matches("---").trim().to_string();
        out.push((n, speaker, body));
    }
    out
}

/// The dialogue's state, checked between writes (no `say` runs meanwhile): numbering 1..N,
/// no text twice, `status.json` counting N (or N-1 while a killed writer's `lock.txt` stands,
/// which the next `say` repairs), a valid turn file, `lock.txt` of a dead process only.
#[track_caller]
fn check_dialogue(env: &Env) -> (usize, bool) {
    let conv = conversation(&env.read("agent-dialogue/conversation.md"));
    let mut texts = BTreeSet::new();
    for (n, _, body) in &conv {
        assert!(
            texts.insert(body.clone()),
            "message #{n} is there twice: {body:?}"
        );
    }
    let status: Value = serde_json::from_str(&env.read("agent-dialogue/status.json"))
        .unwrap_or_else(|e| panic!("status.json does not parse: {e}"));
    let count = status["message_count"].as_u64().unwrap() as usize;
    let turn = env.read("agent-dialogue/current-turn.txt");
    assert!(
        ["AGENT-1\n", "AGENT-2\n"].contains(&turn.as_str()),
        "turn file: {turn:?}"
    );
    let lock = env.exists("agent-dialogue/lock.txt");
    if lock {
        let text = env.read("agent-dialogue/lock.txt");
        let turn: Value = env.cmd().args(["dialogue", "turn", "--json"]).ok().json();
        assert!(
            turn.to_string().contains("stale") || text.contains("pid"),
            "lock.txt is neither stale nor a process's: {text:?}"
        );
    }
    let pending = count + 1 == conv.len() && lock;
    assert!(
        count == conv.len() || pending,
        "status.json counts {count}, conversation.md holds {} (lock.txt: {lock})",
        conv.len()
    );
    (conv.len(), pending)
}

#[test]
fn killed_says_leave_a_conversation_the_next_say_continues() {
    let env = Env::new();
    env.cmd()
        .args(["dialogue", "init", "--topic", "crash sweep"])
        .ok();
    let started = Instant::now();
    let kills = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let repaired = Arc::new(AtomicUsize::new(0));
    // Held while a `say` runs and while the files are checked after it: the two agents
    // alternate anyway; this keeps the checks from reading a write in progress.
    let turn_gate = Arc::new(Mutex::new(()));
    let env = Arc::new(env);
    let agents: Vec<_> = ["AGENT-1", "AGENT-2"]
        .into_iter()
        .enumerate()
        .map(|(k, me)| {
            let (env, kills, runs, repaired, gate) = (
                Arc::clone(&env),
                Arc::clone(&kills),
                Arc::clone(&runs),
                Arc::clone(&repaired),
                Arc::clone(&turn_gate),
            );
            std::thread::spawn(move || {
                let mut rng = Rng::new(10 + k as u64);
                let mut attempt = 0;
                loop {
                    let waited = env
                        .cmd()
                        .args(["dialogue", "wait", "--as", me, "--timeout", "30s"])
                        .run();
                    assert_eq!(
                        waited.code,
                        Some(0),
                        "{me} waited in vain: {}{}",
                        waited.stderr,
                        env.read("agent-dialogue/current-turn.txt")
                    );
                    let _g = gate.lock().unwrap();
                    let done = kills.load(Ordering::SeqCst) >= SAY_KILLS;
                    attempt += 1;
                    let text = format!("{me} says #{attempt}, attempt {attempt}");
                    let cmd = env
                        .cmd()
                        .args(["dialogue", "say", "--as", me, "--json", &text])
                        .command();
                    // The last say of each agent is let through, so the other's wait ends.
                    let delay = if done {
                        None
                    } else {
                        maybe(&mut rng, 80, 10_000)
                    };
                    let shot = fire(vec![(cmd, delay)]).pop().unwrap();
                    runs.fetch_add(1, Ordering::SeqCst);
                    if shot.killed {
                        kills.fetch_add(1, Ordering::SeqCst);
                    } else {
                        // Refused (3) only when an interrupted write was completed and the
                        // turn passed: the message is in already.
                        assert!(
                            shot.code == Some(0) || shot.code == Some(3),
                            "say failed: {}",
                            shot.stderr
                        );
                        if shot.code == Some(3) || shot.stderr.contains("completed the interrupted")
                        {
                            repaired.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    check_dialogue(&env);
                    if done && !shot.killed {
                        return;
                    }
                }
            })
        })
        .collect();
    for a in agents {
        a.join().unwrap();
    }
    let (n, pending) = check_dialogue(&env);
    assert!(!pending, "the last says left an interrupted write");
    assert!(!env.exists("agent-dialogue/lock.txt"), "lock.txt left");
    no_temps(&env.path("agent-dialogue"), "the last say");
    report(
        &format!(
            "dialogue say ({n} messages, {} interrupted writes completed or refused after completing)",
            repaired.load(Ordering::SeqCst)
        ),
        kills.load(Ordering::SeqCst),
        runs.load(Ordering::SeqCst),
        started,
    );
}

// ---------------------------------------------------------------------------------------------
// review step, review issue add

const REVIEW_KILLS: usize = 70;

/// The tracker as `review show --json` gives it, checked: every step done but the last,
/// which is planned for the actor Current State names; issue ids unique.
#[track_caller]
fn check_tracker(env: &Env, strict: bool) -> Value {
    let shown: Value = env
        .cmd()
        .args(["review", "show", "api", "--json"])
        .ok()
        .json();
    let steps = shown["steps"].as_array().unwrap();
    let (last, done) = steps.split_last().unwrap();
    for s in done {
        assert_eq!(s["status"], "done", "a step is half-applied: {shown}");
    }
    assert_eq!(last["status"], "planned", "no planned step: {shown}");
    assert_eq!(
        last["actor"], shown["current"]["next_actor"],
        "the planned step and Current State disagree: {shown}"
    );
    let numbers: Vec<u64> = steps
        .iter()
        .map(|s| s["number"].as_u64().unwrap())
        .collect();
    assert!(
        numbers.windows(2).all(|w| w[1] == w[0] + 1),
        "step numbers {numbers:?}"
    );
    let ids: Vec<&str> = shown["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    let unique: BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "issue ids twice: {ids:?}");
    // No step is twice in the archive, nor both in the archive and in the tracker, except
    // for one state: a step killed between writing the archive and the tracker leaves the
    // last batch archived in both (the archive written first: never in neither), which the
    // next step completes (`strict` once one has run unkilled).
    let archive = env.path(".metadata/reviews/active/api-tracker-archive.md");
    let archived_text = std::fs::read_to_string(archive).unwrap_or_default();
    let archived: Vec<String> = archived_text
        .lines()
        .filter_map(|l| l.split("sum-").nth(1))
        .map(|s| format!("sum-{}", s.trim_end_matches(|c: char| !c.is_ascii_digit())))
        .collect();
    let tracked: Vec<String> = done
        .iter()
        .map(|s| s["summary"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<_> = archived.iter().chain(&tracked).collect();
    if unique.len() != archived.len() + tracked.len() {
        let batch = archived.len().saturating_sub(10);
        assert!(
            !strict
                && archived.len() >= 10
                && tracked.len() >= 10
                && archived[batch..] == tracked[..10]
                && unique.len() == archived.len() + tracked.len() - 10,
            "a step is there twice: archive {archived:?}, tracker {tracked:?}"
        );
    }
    shown
}

#[test]
fn killed_review_updates_are_all_or_nothing() {
    let mut rng = Rng::new(3);
    let env = Env::new();
    env.write("docs/api.md", "# API\n");
    env.cmd()
        .args([
            "review",
            "new",
            "api",
            "--target",
            "docs/api.md",
            "--reviewer",
            "Claude",
            "--implementer",
            "Codex",
        ])
        .ok();
    let started = Instant::now();
    let (mut kills, mut runs, mut steps_done, mut round) = (0, 0, 0, 0);
    let mut added = Vec::new();
    let mut shown = check_tracker(&env, true);
    while kills < REVIEW_KILLS {
        round += 1;
        assert!(
            round < 40 * REVIEW_KILLS,
            "could not land {REVIEW_KILLS} kills"
        );
        let actor = shown["current"]["next_actor"]
            .as_str()
            .unwrap()
            .to_lowercase();
        let next = if actor == "claude" { "codex" } else { "claude" };
        let out = format!("out/{round}.md");
        env.write(
            &out,
            format!("# Output {round}\n\n## Handoff Prompt for Next Actor\n\nGo on, {round}.\n"),
        );
        let summary = format!("sum-{round}");
        let mut cmds = vec![(
            env.cmd()
                .args([
                    "review",
                    "step",
                    "api",
                    "--as",
                    &actor,
                    "--action",
                    "review",
                    "--output",
                    &out,
                    "--summary",
                    &summary,
                    "--next",
                    next,
                ])
                .command(),
            maybe(&mut rng, 60, 15_000),
        )];
        for _ in 0..1 + rng.below(2) {
            cmds.push((
                env.cmd()
                    .args([
                        "review",
                        "issue",
                        "api",
                        "add",
                        "--severity",
                        "low",
                        "--title",
                        &format!("issue of round {round}"),
                    ])
                    .command(),
                maybe(&mut rng, 60, 15_000),
            ));
        }
        for (i, shot) in fire(cmds).into_iter().enumerate() {
            runs += 1;
            if shot.killed {
                kills += 1;
                continue;
            }
            assert_eq!(shot.code, Some(0), "review command failed: {}", shot.stderr);
            if i == 0 {
                steps_done += 1;
            } else {
                added.push(shot.stdout.trim().to_string());
            }
        }
        shown = check_tracker(&env, false);
        let ids: BTreeSet<&str> = shown["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        for id in &added {
            assert!(
                ids.contains(id.as_str()),
                "{id} was printed but is not there"
            );
        }
    }
    // The next step completes an interrupted archive move; the next update sweeps what the
    // killed ones left.
    let actor = shown["current"]["next_actor"]
        .as_str()
        .unwrap()
        .to_lowercase();
    env.write(
        "out/last.md",
        "# Last\n\n## Handoff Prompt for Next Actor\n\nDone.\n",
    );
    env.cmd()
        .args([
            "review",
            "step",
            "api",
            "--as",
            &actor,
            "--action",
            "review",
            "--output",
            "out/last.md",
            "--summary",
            "sum-0",
            "--next",
            "claude",
        ])
        .ok();
    env.cmd()
        .args(["review", "agree", "api", "the sweep is over"])
        .ok();
    no_temps(&env.path(".metadata"), "review agree");
    check_tracker(&env, true);
    report(
        &format!(
            "review ({steps_done} steps and {} issues committed)",
            added.len()
        ),
        kills,
        runs,
        started,
    );
}

// ---------------------------------------------------------------------------------------------
// collab write

const COLLAB_KILLS: usize = 60;

#[test]
fn killed_collab_writers_leave_only_whole_lines() {
    let mut rng = Rng::new(5);
    let env = Env::new();
    let started = Instant::now();
    let (mut kills, mut runs, mut round) = (0, 0, 0);
    let mut committed = Vec::new();
    while kills < COLLAB_KILLS {
        round += 1;
        assert!(
            round < 40 * COLLAB_KILLS,
            "could not land {COLLAB_KILLS} kills"
        );
        let n = 3 + rng.below(4) as usize;
        let texts: Vec<String> = (0..n)
            .map(|i| format!("r{round}w{i} {}", "x".repeat(rng.below(3000) as usize)))
            .collect();
        let cmds = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                (
                    env.agent(&format!("w{i}"))
                        .args(["collab", "write", t])
                        .command(),
                    maybe(&mut rng, 80, 15_000),
                )
            })
            .collect();
        for (shot, text) in fire(cmds).into_iter().zip(texts) {
            runs += 1;
            if shot.killed {
                kills += 1;
            } else {
                assert_eq!(shot.code, Some(0), "collab write failed: {}", shot.stderr);
                committed.push(text);
            }
        }
        let raw = env.read("collaboration_file.txt");
        assert!(raw.ends_with('\n'), "the last line is torn");
        let mut seen = BTreeSet::new();
        for (no, line) in raw.lines().enumerate() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {} is torn ({e}): {line:?}", no + 1));
            let resp = v["response"].as_str().unwrap().to_string();
            assert!(v["llm_id"].is_string(), "line {}: {line}", no + 1);
            assert!(seen.insert(resp), "line {} is there twice", no + 1);
        }
        for t in &committed {
            assert!(seen.contains(t), "a committed entry is missing");
        }
    }
    let read = env.cmd().args(["collab", "read", "--json"]).ok();
    assert!(
        read.stderr.is_empty(),
        "collab read reports: {}",
        read.stderr
    );
    no_temps(env.root(), "collab");
    report(
        &format!("collab write ({} lines committed)", committed.len()),
        kills,
        runs,
        started,
    );
}

/// A long line's write is the moment a kill can tear it: the kernel copies a write into the
/// file chunk by chunk and a SIGKILL stops it between two chunks. Kill the writer the instant
/// the file starts to grow, that is in the middle of that write: the line must still end up
/// whole, and the file must end with a newline, once the file's lock is free.
#[test]
fn a_writer_killed_in_the_middle_of_its_write_leaves_a_whole_line() {
    use std::io::Write as _;
    let env = Env::new();
    let file = env.path("collaboration_file.txt");
    let text = "y".repeat(1_000_000);
    let mut caught = 0;
    for round in 0..5 {
        let before = std::fs::metadata(&file).map_or(0, |m| m.len());
        let mut child = env
            .agent("w")
            .args(["collab", "write", "-"])
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(60);
        let grew = loop {
            if std::fs::metadata(&file).is_ok_and(|m| m.len() > before) {
                child.kill().unwrap();
                break true;
            }
            if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                break false;
            }
        };
        let status = child.wait().unwrap();
        // Whoever finishes the line holds the file's lock until it has: wait for the lock.
        let held = std::fs::File::open(&file).unwrap();
        held.lock().unwrap();
        let raw = std::fs::read_to_string(&file).unwrap();
        drop(held);
        assert!(
            raw.ends_with('\n'),
            "round {round}: the line is torn ({} bytes, killed: {grew}, {status})",
            raw.len()
        );
        let last: Value = serde_json::from_str(raw.lines().last().unwrap()).unwrap();
        assert_eq!(last["response"].as_str().map(str::len), Some(text.len()));
        caught += usize::from(grew && !status.success());
    }
    eprintln!("{caught} of 5 writers killed in the middle of their write");
}

// ---------------------------------------------------------------------------------------------
// write, against lock / unlock from another agent

const WRITE_KILLS: usize = 60;

/// Version `n` of the file: 3000 lines that all name it (about 90 KiB).
fn version(n: u64) -> String {
    (0..3000)
        .map(|i| format!("version {n:06} line {i:05}\n"))
        .collect()
}

/// `text` is exactly one complete version; which one.
#[track_caller]
fn whole_version(text: &str, what: &str) -> u64 {
    let n: u64 = text
        .get(8..14)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{what} is not a version: {:?}", &text[..text.len().min(40)]));
    assert!(
        text == version(n),
        "{what} is a mix or torn ({} bytes)",
        text.len()
    );
    n
}

#[test]
fn killed_writes_under_contention_leave_one_whole_version() {
    let env = Arc::new(Env::new());
    env.write("f.txt", version(0));
    std::fs::create_dir(env.path("in")).unwrap();
    let started = Instant::now();
    let kills = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    // The other agent takes and drops the lock, killed at random, until the writer is done.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let (env, kills, runs, done) = (
            Arc::clone(&env),
            Arc::clone(&kills),
            Arc::clone(&runs),
            Arc::clone(&done),
        );
        std::thread::spawn(move || {
            let mut rng = Rng::new(7);
            while !done.load(Ordering::SeqCst) {
                for args in [
                    &["lock", "f.txt", "--wait", "1s"][..],
                    &["unlock", "f.txt"][..],
                ] {
                    let c = env.agent("other").args(args).command();
                    let shot = fire(vec![(c, maybe(&mut rng, 50, 10_000))]).pop().unwrap();
                    runs.fetch_add(1, Ordering::SeqCst);
                    if shot.killed {
                        kills.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            // Whatever a kill left, the last unlock releases it.
            env.agent("other").args(["unlock"]).ok();
        })
    };
    let mut rng = Rng::new(8);
    let (mut writes, mut n) = (0, 0);
    while kills.load(Ordering::SeqCst) < WRITE_KILLS {
        let lock = env
            .agent("writer")
            .args(["lock", "f.txt", "--wait", "2s"])
            .command();
        let shot = fire(vec![(lock, maybe(&mut rng, 30, 10_000))])
            .pop()
            .unwrap();
        runs.fetch_add(1, Ordering::SeqCst);
        if shot.killed {
            kills.fetch_add(1, Ordering::SeqCst);
        }
        if shot.code == Some(0) {
            n += 1;
            let src = format!("in/v{n}.txt");
            env.write(&src, version(n));
            let write = env
                .agent("writer")
                .args(["write", "f.txt", "--from", &src])
                .command();
            let shot = fire(vec![(write, maybe(&mut rng, 70, 20_000))])
                .pop()
                .unwrap();
            runs.fetch_add(1, Ordering::SeqCst);
            if shot.killed {
                kills.fetch_add(1, Ordering::SeqCst);
            } else {
                assert_eq!(shot.code, Some(0), "write failed: {}", shot.stderr);
                writes += 1;
            }
        }
        whole_version(&env.read("f.txt"), "f.txt");
        if env.exists("f.txt.bak") {
            whole_version(&env.read("f.txt.bak"), "f.txt.bak");
        }
        let unlock = env.agent("writer").args(["unlock", "f.txt"]).command();
        let shot = fire(vec![(unlock, maybe(&mut rng, 30, 10_000))])
            .pop()
            .unwrap();
        runs.fetch_add(1, Ordering::SeqCst);
        if shot.killed {
            kills.fetch_add(1, Ordering::SeqCst);
        }
    }
    done.store(true, Ordering::SeqCst);
    other.join().unwrap();
    // The next write in the folder sweeps what the killed ones left.
    env.agent("writer")
        .args(["lock", "f.txt", "--wait", "10s"])
        .ok();
    env.write("in/last.txt", version(999_999));
    env.agent("writer")
        .args(["write", "f.txt", "--from", "in/last.txt"])
        .ok();
    env.agent("writer").args(["unlock"]).ok();
    assert_eq!(whole_version(&env.read("f.txt"), "f.txt"), 999_999);
    whole_version(&env.read("f.txt.bak"), "f.txt.bak");
    no_temps(env.root(), "the last write");
    report(
        &format!("write against lock/unlock ({writes} writes committed)"),
        kills.load(Ordering::SeqCst),
        runs.load(Ordering::SeqCst),
        started,
    );
}
