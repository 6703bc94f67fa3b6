//! Crashes in `review step` / `review issue`: an update killed at any point is all or nothing.

use std::collections::BTreeSet;
use std::time::Instant;

use serde_json::Value;

use crate::robustness::crashes_protocols::{Rng, fire, maybe, no_temps, report};
use crate::support::Env;

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
