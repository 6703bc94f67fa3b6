//! `coord status` in clones that share their claims through the repository's remote (contract
//! §13, #47): the other clones' claims and agents as last synced, how old that view is, and the
//! remote's branches (as last fetched) that changed the same files as this branch, with
//! `CONFLICT` or `CLEAN`. Real git served by `git daemon`, each clone in its own folder.

use crate::locks::remote::{Team, Transport, coord, hostname, remote, run_git};
use crate::locks::remote_guard::commit;

const LINES: &str = "1\n2\n3\n4\n5\n6\n7\n8\n";

/// Clone A pushes `copilot/fix` (changing the first line of `src/a.rs`) and `copilot/ok`
/// (its last line) and claims `src/**`; clone B changes the first line otherwise. B's status
/// shows A's claim and the two branches: `copilot/fix` CONFLICT, `copilot/ok` CLEAN; the
/// branch B tracks is not listed. A clone that does not share claims has `remote: null`.
#[test]
fn status_shows_the_other_clones_claims_and_the_remote_branches_that_touch_the_same_files() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    run_git(&a, &["checkout", "-qb", "main"]);
    commit(&a, "src/a.rs", LINES);
    commit(&a, "docs/a.md", "# a\n");
    run_git(&a, &["push", "-q", "origin", "main"]);
    run_git(&a, &["checkout", "-qb", "copilot/fix"]);
    commit(&a, "src/a.rs", &LINES.replace("1\n", "one\n"));
    run_git(&a, &["push", "-q", "origin", "copilot/fix"]);
    run_git(&a, &["checkout", "-qb", "copilot/ok", "main"]);
    commit(&a, "src/a.rs", &LINES.replace("8\n", "eight\n"));
    run_git(&a, &["push", "-q", "origin", "copilot/ok"]);
    coord(&t.env, &a, "alice")
        .args(["lock", "src/**", "--reason", "refactor"])
        .ok();

    run_git(&b, &["fetch", "-q", "origin"]);
    run_git(
        &b,
        &["checkout", "-q", "-b", "main", "--track", "origin/main"],
    );
    commit(&b, "src/a.rs", &LINES.replace("1\n", "uno\n"));
    remote(&t.env, &b, "bob", &["sync"]).ok();
    let doc: serde_json::Value = coord(&t.env, &b, "bob")
        .args(["status", "--json"])
        .ok()
        .json();
    let r = &doc["remote"];
    assert_eq!(r["remote"], "origin", "{r}");
    assert!(r["synced_at"].is_string() && r["age_s"].is_u64(), "{r}");
    assert_eq!(r["claims"][0]["pattern"], "src/**", "{r}");
    assert_eq!(r["claims"][0]["agent"], "alice", "{r}");
    assert_eq!(r["claims"][0]["host"], hostname().as_str(), "{r}");
    assert_eq!(r["claims"][0]["reason"], "refactor", "{r}");
    let mut branches = r["branches"].as_array().unwrap().clone();
    branches.sort_by_key(|b| b["branch"].as_str().unwrap().to_string());
    assert_eq!(
        branches,
        [
            serde_json::json!({"branch": "origin/copilot/fix", "state": "CONFLICT", "files": ["src/a.rs"]}),
            serde_json::json!({"branch": "origin/copilot/ok", "state": "CLEAN", "files": ["src/a.rs"]}),
        ],
        "{r}"
    );

    coord(&t.env, &b, "bob")
        .arg("status")
        .ok()
        .stdout_has("Remote `origin` (synced ")
        .stdout_has(&format!("alice@{}", hostname()))
        .stdout_has("src/**")
        .stdout_has("refactor")
        .stdout_has("origin/copilot/fix")
        .stdout_has("CONFLICT")
        .stdout_has("origin/copilot/ok")
        .stdout_has("CLEAN");

    let c = t.repo("c", &t.url);
    let doc: serde_json::Value = coord(&t.env, &c, "carol")
        .args(["status", "--json"])
        .ok()
        .json();
    assert!(doc["remote"].is_null(), "{doc}");
}
