//! `--json`: one document on stdout for every outcome, with `schema_version` first.

use crate::support::Env;

fn keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// The first key of a pretty-printed document (serde_json's map sorts keys, so read the text).
fn first_key(text: &str) -> String {
    text.lines()
        .nth(1)
        .and_then(|l| l.trim().strip_prefix('"'))
        .and_then(|l| l.split('"').next())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_usage_error_is_one_json_document() {
    let env = Env::new();
    let out = env
        .agent("claude")
        .args(["--json", "lock", "--frobnicate"])
        .code(2);
    let doc: serde_json::Value = out.json();
    assert_eq!(doc["error"]["kind"], "usage");
    assert_eq!(doc["error"]["exit_code"], 2);
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--frobnicate")
    );
    assert_eq!(doc["schema_version"], 1);
    // Said once: the document, not clap's text too.
    assert_eq!(out.stderr, "");
    // Without --json, stdout stays empty and the error is on stderr.
    let plain = env.agent("claude").args(["lock", "--frobnicate"]).code(2);
    assert_eq!(plain.stdout, "");
    plain.stderr_has("error:");
}

#[test]
fn every_document_starts_with_its_schema_version() {
    let env = Env::new();
    env.write("a.md", "x");
    let runs: Vec<Vec<&str>> = vec![
        vec!["lock", "a.md"],
        vec!["status"],
        vec!["msg", "send", "gemini", "hi"],
        vec!["collab", "write", "hello"],
        vec!["unlock", "a.md"],
        vec!["dialogue", "init", "--topic", "T"],
        vec!["dialogue", "turn"],
        vec!["lock", "../outside"],
    ];
    for args in runs {
        let out = env.agent("claude").arg("--json").args(&args).run();
        assert_eq!(
            first_key(&out.stdout),
            "schema_version",
            "{args:?}\n{}",
            out.stdout
        );
        let doc: serde_json::Value = out.json();
        assert_eq!(doc["schema_version"], 1);
    }
}

#[test]
fn msg_read_json_reports_the_message_as_now_read() {
    let env = Env::new();
    let sent: serde_json::Value = env
        .agent("claude")
        .args(["--json", "msg", "send", "gemini", "hi"])
        .ok()
        .json();
    let id = sent["id"].as_str().unwrap().to_string();
    let first: serde_json::Value = env
        .agent("gemini")
        .args(["--json", "msg", "read", &id])
        .ok()
        .json();
    assert_eq!(first["unread"], false);
    assert_eq!(first["marked_read"], true);
    let again: serde_json::Value = env
        .agent("gemini")
        .args(["--json", "msg", "read", &id])
        .ok()
        .json();
    assert_eq!(again["unread"], false);
    assert_eq!(again["marked_read"], false);
}

#[test]
fn collab_write_json_reports_the_line_written() {
    let env = Env::new();
    env.write(
        "collaboration_file.txt",
        "\n{\"llm_id\": \"x\", \"response\": \"y\"}",
    );
    let doc: serde_json::Value = env
        .agent("claude")
        .args(["--json", "collab", "write", "hello"])
        .ok()
        .json();
    assert_eq!(doc["entry"]["line"], 3, "{doc}");
    let doc: serde_json::Value = env
        .agent("claude")
        .args(["--json", "collab", "write", "again"])
        .ok()
        .json();
    assert_eq!(doc["entry"]["line"], 4);
    let read: serde_json::Value = env.cmd().args(["--json", "collab", "read"]).ok().json();
    let lines: Vec<_> = read["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].clone())
        .collect();
    assert_eq!(lines, [2, 3, 4]);
}

#[test]
fn dialogue_show_json_orders_turn_like_dialogue_turn() {
    let env = Env::new();
    env.cmd().args(["dialogue", "init", "--topic", "T"]).ok();
    let turn = env.cmd().args(["--json", "dialogue", "turn"]).ok().stdout;
    let show = env.cmd().args(["--json", "dialogue", "show"]).ok().stdout;
    let order = |text: &str, indent: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(indent))
            .filter(|l| l.starts_with('"'))
            .filter_map(|l| l[1..].split('"').next().map(str::to_string))
            .collect()
    };
    let turn_keys = order(&turn, "  ");
    let show_turn: Vec<String> = {
        let inner = &show[show.find("\"turn\": {").unwrap()..];
        order(inner, "    ")
    };
    assert_eq!(
        &turn_keys[1..],
        &show_turn[..],
        "schema_version aside, same keys, same order"
    );
    let doc: serde_json::Value = serde_json::from_str(&show).unwrap();
    assert_eq!(keys(&doc).len(), 4, "schema_version, file, text, turn");
}
