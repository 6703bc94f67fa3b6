//! The real Copilot CLI's shell tool, offline against the scripted model: `git commit` checked by
//! the guard as the session, `coord lock` acting as the session, a shell edit of a held file told
//! to the model.

use serde_json::json;

use crate::copilot_e2e::{EDIT_MODEL, OTHER, copilot_holder, edit_call, lab, start, tool_results};
use crate::scripted::until;

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_git_commit_through_its_shell_is_refused_while_another_agent_holds_a_staged_file() {
    let (bin, lab) = lab();
    lab.env.cmd().args(["guard", "install"]).ok();
    lab.env.write("target.txt", "staged change\n");
    lab.git(&["add", "target.txt"]);
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let head = lab.git(&["rev-parse", "HEAD"]);
    let commit = json!(["bash", {
        "command": "git commit -am 'from copilot'",
        "description": "commit the change",
    }]);

    let (run, prompt) = start(
        &lab,
        &bin,
        "held",
        EDIT_MODEL,
        json!([commit.clone()]),
        None,
    );
    run.ok();
    assert_eq!(lab.git(&["rev-parse", "HEAD"]), head, "no commit was made");
    let results = tool_results(&lab, &prompt);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains(OTHER) && results[0].contains("target.txt"),
        "the reason names the holder and the file: {results:#?}"
    );

    lab.env.agent(OTHER).args(["unlock", "target.txt"]).ok();
    let (run, _) = start(&lab, &bin, "free", EDIT_MODEL, json!([commit]), None);
    run.ok();
    assert_ne!(
        lab.git(&["rev-parse", "HEAD"]),
        head,
        "the commit went through"
    );
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_git_commit_through_its_shell_of_a_file_it_holds_goes_through() {
    let (bin, lab) = lab();
    lab.env.cmd().args(["guard", "install"]).ok();
    let head = lab.git(&["rev-parse", "HEAD"]);
    let flag = lab.flag("done");
    let (run, prompt) = start(
        &lab,
        &bin,
        "own",
        EDIT_MODEL,
        json!([
            edit_call(&lab, "from copilot"),
            ["bash", {"command": "git commit -qam 'from copilot'", "description": "commit"}],
        ]),
        Some(&flag),
    );
    until("both tool calls answered", || {
        tool_results(&lab, &prompt).len() == 2
    });
    let holder = copilot_holder(&lab);
    assert!(holder.is_some(), "the session holds the file it edited");
    let results = tool_results(&lab, &prompt);
    assert_ne!(
        lab.git(&["rev-parse", "HEAD"]),
        head,
        "the guard let the session commit the file it holds: {results:#?}"
    );
    assert_eq!(lab.git(&["show", "HEAD:target.txt"]), "from copilot\n");
    std::fs::write(&flag, "").unwrap();
    run.ok();
}

#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_coord_lock_from_its_shell_acts_as_the_session() {
    let (bin, lab) = lab();
    let flag = lab.flag("done");
    let (run, prompt) = start(
        &lab,
        &bin,
        "shell",
        EDIT_MODEL,
        json!([
            ["bash", {"command": "coord lock target.txt", "description": "lock"}],
            edit_call(&lab, "from copilot"),
        ]),
        Some(&flag),
    );
    until("both tool calls answered", || {
        tool_results(&lab, &prompt).len() == 2
    });
    let results = tool_results(&lab, &prompt);
    assert!(results[0].contains("Lock acquired"), "{results:#?}");
    assert_eq!(lab.env.read("target.txt"), "from copilot\n", "{results:#?}");
    let locks = lab.locks_of("target.txt");
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert!(
        locks[0].starts_with("target.txt.lock.copilot-"),
        "{locks:?}"
    );
    std::fs::write(&flag, "").unwrap();
    run.ok();
    assert!(
        lab.locks_of("target.txt").is_empty(),
        "released at turn end"
    );
}

/// A shell command that changes a file another agent holds: coord's postToolUse hook gives the
/// model its notice (`additionalContext`) before its next step.
#[test]
#[ignore = "needs the real client: set COORD_TEST_COPILOT (see .ci/run)"]
fn copilot_shell_edit_of_a_held_file_is_told_to_the_model() {
    let (bin, lab) = lab();
    lab.env.agent(OTHER).args(["lock", "target.txt"]).ok();
    let edit = json!(["bash", {
        "command": "echo more >> target.txt",
        "description": "append a line",
    }]);
    let (run, prompt) = start(&lab, &bin, "shell", EDIT_MODEL, json!([edit]), None);
    run.ok();
    assert!(
        lab.env.read("target.txt").contains("more"),
        "the command ran"
    );
    let needle = serde_json::to_string(&prompt).unwrap();
    let told = lab
        .requests_with(&needle[1..needle.len() - 1])
        .iter()
        .any(|r| {
            let text = r["body"]["messages"].to_string();
            text.contains("your shell command changed") && text.contains("target.txt")
        });
    assert!(
        told,
        "the notice reaches the model: {:#?}",
        tool_results(&lab, &prompt)
    );
}
