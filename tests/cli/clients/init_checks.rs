//! `coord init` refusals and reports: unparsable, FIFO or linked settings files, dry runs, a
//! user's own hook entry, `doctor`, and a rerun that widens coord's matcher.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clients::init::{commands, read_json};
use crate::support::{Env, no_clients};

/// `coord ARGS` in `env` is refused as bad input (exit 2, an `error:` line saying each of
/// `said`) with nothing written: every file as it was, and no `.coord/`.
fn refused_writing_nothing(env: &Env, args: &[&str], said: &[&str]) {
    let before = env.snapshot();
    let out = env.cmd().path_only(no_clients()).args(args).code(2);
    assert!(
        out.stderr.contains("error:") && said.iter().all(|s| out.stderr.contains(s)),
        "{args:?}: {}",
        out.stderr
    );
    assert_eq!(env.snapshot(), before, "{args:?} {said:?}: nothing written");
    assert!(
        !env.path(".coord").exists(),
        "{args:?} {said:?}: no .coord/"
    );
}

#[test]
fn an_unparsable_file_stops_init_before_anything_is_written() {
    for (file, bad) in [
        (".claude/settings.json", "{\"hooks\": [1,"),
        (".mcp.json", "not json"),
        (".codex/config.toml", "[mcp_servers\ncommand = "),
        (".gemini/settings.json", "[1, 2]"),
        (
            ".github/hooks/coord.json",
            "{\"hooks\": {\"preToolUse\": {}}}",
        ),
    ] {
        let env = Env::new();
        env.write(file, bad);
        env.write("AGENTS.md", "mine\n");
        refused_writing_nothing(&env, &["init"], &[file]);
    }
}

#[test]
fn dry_run_prints_the_changes_and_writes_nothing() {
    let env = Env::new();
    env.write("AGENTS.md", "mine\n");
    let before = env.snapshot();
    let out = env
        .cmd()
        .args(["init", "--client", "codex", "--dry-run"])
        .ok();
    out.stdout_has("Would create: .codex/hooks.json")
        .stdout_has("Would update: AGENTS.md")
        .stdout_has("coord hook codex")
        .stdout_lacks(".claude");
    assert_eq!(env.snapshot(), before);
    assert!(!env.path(".coord").exists());
    let json: Value = env
        .cmd()
        .path_only(no_clients())
        .args(["init", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(json["dry_run"], true);
    assert!(json["plan"]["changes"].as_array().unwrap().len() >= 9);
    assert_eq!(env.snapshot(), before);
}

/// A `coord` run with `home` as the home folder and no client config from the environment.
fn with_home(env: &Env, home: &std::path::Path) -> crate::support::Cmd {
    let mut cmd = env.cmd().env("HOME", home);
    for var in [
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
        "GEMINI_CLI_TRUST_WORKSPACE",
        "GEMINI_RESTRICTED_MODE",
        "COPILOT_HOME",
        "COPILOT_ALLOW_ALL",
        "QWEN_HOME",
        "QWEN_CODE_TRUSTED_FOLDERS_PATH",
    ] {
        cmd = cmd.env_remove(var);
    }
    cmd.env(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        home.join("no-system-settings.json"),
    )
    .env(
        "QWEN_CODE_SYSTEM_SETTINGS_PATH",
        home.join("no-system-settings.json"),
    )
}

/// `coord doctor --json`'s verdict per wired client.
fn verdicts(env: &Env, home: &std::path::Path) -> Vec<(String, String, String)> {
    verdicts_of(with_home(env, home))
}

/// `coord doctor --json`, run as `cmd` says (more variables, say): the verdict per wired
/// client, as client, `hooks_run` and why.
fn verdicts_of(cmd: crate::support::Cmd) -> Vec<(String, String, String)> {
    let v: Value = cmd.args(["doctor", "--json"]).ok().json();
    v["clients"]
        .as_array()
        .unwrap_or_else(|| panic!("no clients in {v}"))
        .iter()
        .map(|c| {
            (
                c["client"].as_str().unwrap().to_string(),
                c["hooks_run"].as_str().unwrap().to_string(),
                c["why"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `client`'s verdict when it is the only client wired: `hooks_run`, and why.
fn verdict_of(cmd: crate::support::Cmd, client: &str) -> (String, String) {
    let mut all = verdicts_of(cmd);
    assert_eq!(all.len(), 1, "{all:?}");
    let (wired, run, why) = all.remove(0);
    assert_eq!(wired, client);
    (run, why)
}

/// A workspace wired by `coord init --client CLIENT` with a home folder of its own, and its
/// root as `doctor` names it.
fn wired_alone(client: &str) -> (Env, tempfile::TempDir, String) {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    with_home(&env, home.path())
        .args(["init", "--client", client])
        .ok();
    let v: Value = with_home(&env, home.path())
        .args(["doctor", "--json"])
        .ok()
        .json();
    let root = v["root"].as_str().unwrap().to_string();
    (env, home, root)
}

/// A client's settings file of several MiB (a long permissions list, say) that init wired is
/// still seen as wired by `doctor`.
#[test]
fn doctor_sees_coord_wired_in_a_large_settings_file() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let allow: Vec<String> = (0..120_000)
        .map(|i| format!("Bash(tool-{i:06} *)"))
        .collect();
    env.write(
        ".claude/settings.json",
        serde_json::json!({"permissions": {"allow": allow}}).to_string(),
    );
    assert!(env.read(".claude/settings.json").len() > 2 << 20);
    with_home(&env, home.path())
        .args(["init", "--client", "claude"])
        .ok();
    let clients: Vec<String> = verdicts(&env, home.path())
        .into_iter()
        .map(|(client, _, _)| client)
        .collect();
    assert_eq!(clients, ["claude"]);
}

/// Claude Code's `~/.claude.json` grows with every project and session: one of several MiB is
/// read whole. An empty `CLAUDE_CONFIG_DIR` is unset (the home folder's file is read); a file
/// that is there but cannot be read is "unknown", said why, never "no".
#[test]
fn doctor_reads_a_large_claude_json_and_says_when_it_cannot_read_it() {
    let (env, home, root) = wired_alone("claude");
    let h = home.path();
    let changelog = "- a line of release notes\n".repeat(100_000);
    std::fs::write(
        h.join(".claude.json"),
        serde_json::json!({
            "cachedChangelog": changelog,
            "projects": {root: {"hasTrustDialogAccepted": true}},
        })
        .to_string(),
    )
    .unwrap();
    assert!(std::fs::metadata(h.join(".claude.json")).unwrap().len() > 2 << 20);
    let claude = |cmd| verdict_of(cmd, "claude");
    let (run, why) = claude(with_home(&env, h));
    assert_eq!(run, "yes", "{why}");
    let (run, why) = claude(with_home(&env, h).env("CLAUDE_CONFIG_DIR", ""));
    assert_eq!(run, "yes", "{why}");

    std::fs::remove_file(h.join(".claude.json")).unwrap();
    std::fs::create_dir(h.join(".claude.json")).unwrap();
    let (run, why) = claude(with_home(&env, h));
    assert_eq!(run, "unknown", "{why}");
    assert!(why.contains("cannot read"), "{why}");
}

/// Codex CLI's `config.toml`, read whole however large (its `[projects]` and reviewed hooks
/// grow with use): a folder trusted and its hooks reviewed runs them; `trust_level =
/// "untrusted"` does not; a file that cannot be read is "unknown", said why.
#[test]
fn doctor_reads_codex_trust_levels_in_large_and_unreadable_configs() {
    let (env, home, root) = wired_alone("codex");
    let h = home.path();
    let config = |level: &str| {
        let mut text = "# a note the user keeps\n".repeat(100_000);
        text.push_str(&format!(
            "[projects.\"{root}\"]\ntrust_level = \"{level}\"\n"
        ));
        for event in [
            "session_start",
            "pre_tool_use",
            "post_tool_use",
            "permission_request",
            "user_prompt_submit",
            "stop",
            "session_end",
        ] {
            text.push_str(&format!(
                "\n[hooks.state.\"{root}/.codex/hooks.json:{event}:0:0\"]\ntrusted_hash = \"sha256:00\"\n"
            ));
        }
        text
    };
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    let codex = || verdict_of(with_home(&env, h), "codex");
    std::fs::write(h.join(".codex/config.toml"), config("trusted")).unwrap();
    assert!(
        std::fs::metadata(h.join(".codex/config.toml"))
            .unwrap()
            .len()
            > 2 << 20
    );
    let (run, why) = codex();
    assert_eq!(run, "yes", "{why}");
    std::fs::write(h.join(".codex/config.toml"), config("untrusted")).unwrap();
    let (run, why) = codex();
    assert_eq!(run, "no", "{why}");
    assert!(why.contains("trust_level = \"untrusted\""), "{why}");
    std::fs::remove_file(h.join(".codex/config.toml")).unwrap();
    std::fs::create_dir(h.join(".codex/config.toml")).unwrap();
    let (run, why) = codex();
    assert_eq!(run, "unknown", "{why}");
    assert!(why.contains("cannot read"), "{why}");
}

/// Copilot CLI trusts a folder listed in `trustedFolders` and every folder below it: another
/// folder listed there does not make it run the hooks here.
#[test]
fn doctor_reads_copilot_trusted_folders_for_this_folder_and_above() {
    let (env, home, root) = wired_alone("copilot");
    let h = home.path();
    let parent = std::path::Path::new(&root).parent().unwrap().to_path_buf();
    std::fs::create_dir_all(h.join(".copilot")).unwrap();
    let copilot = |trusted: Value| {
        std::fs::write(
            h.join(".copilot/config.json"),
            serde_json::json!({"trustedFolders": trusted}).to_string(),
        )
        .unwrap();
        verdict_of(with_home(&env, h), "copilot")
    };
    let elsewhere = parent.join("another-project").display().to_string();
    let (run, why) = copilot(serde_json::json!([elsewhere]));
    assert_eq!(run, "no", "{why}");
    let (run, why) = copilot(serde_json::json!([elsewhere, parent.display().to_string()]));
    assert_eq!(run, "yes", "{why}");
    assert!(why.contains(&parent.display().to_string()), "{why}");
}

/// Gemini CLI's `trustedFolders.json` as Gemini CLI 0.61 reads it: the longest rule whose
/// folder holds this one decides (`TRUST_PARENT` names a folder's parent; of two rules of one
/// length the first written wins); a rule for another folder says nothing here; restricted
/// mode, or the workspace trust variable set to `false`, each turns the hooks off.
#[test]
fn doctor_judges_gemini_trust_rules_as_gemini_cli_does() {
    let (env, home, root) = wired_alone("gemini");
    let h = home.path();
    let parent = std::path::Path::new(&root)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let name_len = root.len() - parent.len() - 1;
    std::fs::create_dir_all(h.join(".gemini")).unwrap();
    // The rules as written (in this order), and what doctor says with them.
    let gemini = |rules: &[(String, &str)], vars: &[(&str, &str)]| {
        let body: Vec<String> = rules
            .iter()
            .map(|(rule, level)| format!("  {}: \"{level}\"", Value::from(rule.as_str())))
            .collect();
        std::fs::write(
            h.join(".gemini/trustedFolders.json"),
            format!("{{\n{}\n}}\n", body.join(",\n")),
        )
        .unwrap();
        let mut cmd = with_home(&env, h);
        for (k, v) in vars {
            cmd = cmd.env(k, v);
        }
        verdict_of(cmd, "gemini").0
    };
    let sibling = format!("{parent}/{}", "s".repeat(name_len));
    let elsewhere = format!("/srv/{}/a/much/longer/path/than/this/one", "x".repeat(40));
    let cases: [(Vec<(String, &str)>, &str); 6] = [
        (vec![(root.clone(), "TRUST_FOLDER")], "yes"),
        (
            vec![
                (parent.clone(), "TRUST_FOLDER"),
                (root.clone(), "DO_NOT_TRUST"),
            ],
            "no",
        ),
        (vec![(format!("{parent}/other"), "TRUST_PARENT")], "yes"),
        (
            vec![(root.clone(), "DO_NOT_TRUST"), (sibling, "TRUST_PARENT")],
            "no",
        ),
        (vec![(format!("{parent}/other"), "TRUST_FOLDER")], "no"),
        (
            vec![(root.clone(), "TRUST_FOLDER"), (elsewhere, "DO_NOT_TRUST")],
            "yes",
        ),
    ];
    for (rules, want) in &cases {
        assert_eq!(gemini(rules, &[]), *want, "{rules:?}");
    }
    let trusted = [(root.clone(), "TRUST_FOLDER")];
    assert_eq!(
        gemini(&trusted, &[("GEMINI_RESTRICTED_MODE", "true")]),
        "no"
    );
    assert_eq!(
        gemini(&trusted, &[("GEMINI_CLI_TRUST_WORKSPACE", "false")]),
        "no"
    );
}

/// Qwen Code's folder trust, off unless its user or system settings turn it on, read where
/// Qwen Code reads it: `~/.qwen` (`QWEN_HOME` moves it), `QWEN_CODE_TRUSTED_FOLDERS_PATH` and
/// `QWEN_CODE_SYSTEM_SETTINGS_PATH` (an empty variable is unset).
#[test]
fn doctor_reads_qwen_trust_where_qwen_code_reads_it() {
    let (env, home, root) = wired_alone("qwen");
    let h = home.path();
    let qwen = |vars: &[(&str, &std::path::Path)]| {
        let mut cmd = with_home(&env, h);
        for (k, v) in vars {
            cmd = cmd.env(k, v);
        }
        verdict_of(cmd, "qwen").0
    };
    let trust_on = serde_json::json!({"security": {"folderTrust": {"enabled": true}}}).to_string();
    let trusting = serde_json::json!({root.clone(): "TRUST_FOLDER"}).to_string();
    let empty = std::path::Path::new("");
    // Off by default.
    assert_eq!(qwen(&[]), "yes");
    // Turned on in the system settings named by the variable (an empty one is unset).
    let system = h.join("system.json");
    std::fs::write(&system, &trust_on).unwrap();
    assert_eq!(qwen(&[("QWEN_CODE_SYSTEM_SETTINGS_PATH", &system)]), "no");
    assert_eq!(qwen(&[("QWEN_CODE_SYSTEM_SETTINGS_PATH", empty)]), "yes");
    // Turned on in ~/.qwen/settings.json; trusted in ~/.qwen/trustedFolders.json.
    std::fs::create_dir_all(h.join(".qwen")).unwrap();
    std::fs::write(h.join(".qwen/settings.json"), &trust_on).unwrap();
    assert_eq!(qwen(&[]), "no");
    std::fs::write(h.join(".qwen/trustedFolders.json"), &trusting).unwrap();
    assert_eq!(qwen(&[]), "yes");
    assert_eq!(qwen(&[("QWEN_CODE_TRUSTED_FOLDERS_PATH", empty)]), "yes");
    // A rule for another folder says nothing here; `TRUST_PARENT` trusts its folder's parent.
    let parent = std::path::Path::new(&root)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let sibling = format!("{parent}/another-project");
    for (level, want) in [("TRUST_FOLDER", "no"), ("TRUST_PARENT", "yes")] {
        std::fs::write(
            h.join(".qwen/trustedFolders.json"),
            serde_json::json!({sibling.clone(): level}).to_string(),
        )
        .unwrap();
        assert_eq!(qwen(&[]), want, "{level}");
    }
    // The trusted folders elsewhere, named by the variable.
    let elsewhere = h.join("elsewhere.json");
    std::fs::write(&elsewhere, "{}").unwrap();
    assert_eq!(
        qwen(&[("QWEN_CODE_TRUSTED_FOLDERS_PATH", &elsewhere)]),
        "no"
    );
    // QWEN_HOME in place of ~/.qwen: trust on there, nothing trusted.
    let moved = h.join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::write(moved.join("settings.json"), &trust_on).unwrap();
    std::fs::remove_file(h.join(".qwen/settings.json")).unwrap();
    assert_eq!(qwen(&[]), "yes");
    assert_eq!(qwen(&[("QWEN_HOME", &moved)]), "no");
}

/// Gemini CLI's trust, read where Gemini CLI reads it when its environment moves the files:
/// `GEMINI_CLI_TRUSTED_FOLDERS_PATH` for the trusted folders, `GEMINI_CLI_SYSTEM_SETTINGS_PATH`
/// for the system settings (folder trust turned off there).
#[test]
fn doctor_reads_gemini_trust_where_its_environment_puts_it() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    with_home(&env, h).args(["init", "--client", "gemini"]).ok();
    let gemini = |cmd| verdict_of(cmd, "gemini");
    assert_eq!(gemini(with_home(&env, h)).0, "no");
    let root = env.root().display().to_string();
    let trusted = h.join("elsewhere/trusted.json");
    std::fs::create_dir_all(trusted.parent().unwrap()).unwrap();
    std::fs::write(&trusted, format!("{{\"{root}\": \"TRUST_FOLDER\"}}")).unwrap();
    let (run, why) = gemini(with_home(&env, h).env("GEMINI_CLI_TRUSTED_FOLDERS_PATH", &trusted));
    assert_eq!(run, "yes", "{why}");
    let system = h.join("system-settings.json");
    std::fs::write(
        &system,
        r#"{"security": {"folderTrust": {"enabled": false}}}"#,
    )
    .unwrap();
    let (run, why) = gemini(with_home(&env, h).env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", &system));
    assert_eq!(run, "yes", "{why}");
    assert!(
        why.contains("folder trust is off") && why.contains("system-settings.json"),
        "{why}"
    );
}

/// Issue 25: hooks that silently do not run. `coord init` prints, per client, the step that
/// makes the client run them; `coord doctor` says, per wired client, whether its own config
/// trusts the folder (Claude's `~/.claude.json`, Codex's project and per-hook trust in
/// `~/.codex/config.toml`, Gemini's `trustedFolders.json`, Copilot's `trustedFolders`).
#[test]
fn init_and_doctor_say_which_clients_run_the_hooks() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let out = with_home(&env, h)
        .args(["init", "--client", "codex,gemini"])
        .ok();
    out.stdout_has("Codex CLI: runs these hooks only in a folder it trusts")
        .stdout_has("Trust all and continue")
        .stdout_has("Gemini CLI: runs these hooks only in a folder it trusts")
        .stdout_has("\"TRUST_FOLDER\"")
        .stdout_lacks("Claude Code");
    let json: Value = with_home(&env, h)
        .args(["init", "--json", "--client", "claude,copilot"])
        .ok()
        .json();
    let steps = json["trust"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert!(
        steps[0]["step"]
            .as_str()
            .unwrap()
            .contains("hasTrustDialogAccepted")
    );
    assert!(
        steps[1]["step"]
            .as_str()
            .unwrap()
            .contains("trustedFolders")
    );

    // Nothing trusted yet: no client runs the hooks.
    let v = verdicts(&env, h);
    let names: Vec<&str> = v.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(names, ["claude", "codex", "gemini", "copilot"]);
    for (client, run, why) in &v {
        assert_eq!(run, "no", "{client}: {why}");
    }
    let text = with_home(&env, h).arg("doctor").ok();
    text.stdout_has("client:        Copilot CLI: runs these hooks only in a folder it trusts")
        // #48: `claude -p` runs a folder's hooks untrusted (the real client's end-to-end
        // tests run it so): the gate is said for interactive sessions only, with the MCP
        // server question an interactive session asks.
        .stdout_has("Claude Code: an interactive session runs these hooks only in a folder it trusts")
        .stdout_has("`claude -p` runs them in any folder, trusted or not")
        .stdout_has("MCP server `coord`")
        .stdout_has("git in shell:  Gemini CLI: git hooks for commits through its shell: no")
        .stdout_has("git in shell:  Claude Code: git hooks for commits through its shell: yes (its shell tool runs git with the repository's own config)")
        .stdout_has("git in shell:  Copilot CLI: git hooks for commits through its shell: yes (its shell tool sets only safe.bareRepository and core.fsmonitor through GIT_CONFIG_*; git hooks run)");
    // Issue 35: per wired client, whether git hooks run for its shell's commits.
    let v: Value = with_home(&env, h).args(["doctor", "--json"]).ok().json();
    let hooks: Vec<bool> = v["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["shell_git_hooks"].as_bool().unwrap())
        .collect();
    assert_eq!(hooks, [true, true, false, true]);

    // Each client's own record of trust, as the client writes it.
    let root: Value = with_home(&env, h).args(["doctor", "--json"]).ok().json();
    let root = root["root"].as_str().unwrap().to_string();
    let parent = std::path::Path::new(&root)
        .parent()
        .unwrap()
        .display()
        .to_string();
    std::fs::write(
        h.join(".claude.json"),
        serde_json::json!({"projects": {parent.clone(): {"hasTrustDialogAccepted": true}}})
            .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    let mut codex = format!("[projects.\"{root}\"]\ntrust_level = \"trusted\"\n");
    for event in [
        "session_start",
        "pre_tool_use",
        "post_tool_use",
        "permission_request",
        "user_prompt_submit",
        "stop",
        "session_end",
    ] {
        codex.push_str(&format!(
            "\n[hooks.state.\"{root}/.codex/hooks.json:{event}:0:0\"]\ntrusted_hash = \"sha256:00\"\n"
        ));
    }
    std::fs::write(h.join(".codex/config.toml"), &codex).unwrap();
    std::fs::create_dir_all(h.join(".gemini")).unwrap();
    std::fs::write(
        h.join(".gemini/trustedFolders.json"),
        format!("{{\n  // written by Gemini CLI\n  \"{root}\": \"TRUST_FOLDER\"\n}}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(h.join(".copilot")).unwrap();
    std::fs::write(
        h.join(".copilot/config.json"),
        format!("// User settings belong in settings.json.\n{{\n  \"trustedFolders\": [\"{root}\"]\n}}\n"),
    )
    .unwrap();
    for (client, run, why) in verdicts(&env, h) {
        assert_eq!(run, "yes", "{client}: {why}");
    }

    // One of coord's hooks not reviewed in Codex; the folder refused in Gemini by a nearer
    // rule; Claude's trust of another folder does not count.
    std::fs::write(
        h.join(".codex/config.toml"),
        codex.replace(":stop:0:0\"]\ntrusted_hash", ":stop:0:0\"]\nuntrusted"),
    )
    .unwrap();
    std::fs::write(
        h.join(".gemini/trustedFolders.json"),
        format!("{{\"{parent}\": \"TRUST_FOLDER\", \"{root}\": \"DO_NOT_TRUST\"}}"),
    )
    .unwrap();
    std::fs::write(
        h.join(".claude.json"),
        serde_json::json!({"projects": {format!("{root}/sub"): {"hasTrustDialogAccepted": true}}})
            .to_string(),
    )
    .unwrap();
    let v = verdicts(&env, h);
    let of = |name: &str| v.iter().find(|(c, _, _)| c == name).unwrap().clone();
    assert_eq!(of("codex").1, "no", "{:?}", of("codex"));
    assert!(
        of("codex").2.contains("only 6 of coord's 7 hooks"),
        "{:?}",
        of("codex")
    );
    assert_eq!(of("gemini").1, "no", "{:?}", of("gemini"));
    assert!(
        of("gemini").2.contains("DO_NOT_TRUST"),
        "{:?}",
        of("gemini")
    );
    assert_eq!(of("claude").1, "no", "{:?}", of("claude"));
    assert_eq!(of("copilot").1, "yes");
    // The environment can decide too.
    let v: Value = with_home(&env, h)
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .args(["doctor", "--json"])
        .ok()
        .json();
    assert_eq!(v["clients"][2]["hooks_run"], "yes", "{v}");
}

/// Issue 35: the pre-tool hooks now watch the shell too; a folder wired by an earlier init gets
/// the new matcher on coord's own group, and nobody else's group is touched.
#[test]
fn a_rerun_widens_coords_own_matcher_to_the_shell_tool() {
    let env = Env::new();
    env.write(
        ".gemini/settings.json",
        r#"{"hooks": {"BeforeTool": [
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "./mine.sh"}]},
            {"matcher": "write_file|replace", "hooks": [{"name": "coord", "type": "command", "command": "coord hook gemini"}]}
        ]}}"#,
    );
    env.cmd().args(["init", "--client", "gemini"]).ok();
    let v = read_json(&env, ".gemini/settings.json");
    assert_eq!(v["hooks"]["BeforeTool"][0]["matcher"], "write_file");
    assert_eq!(
        v["hooks"]["BeforeTool"][1]["matcher"],
        "write_file|replace|run_shell_command"
    );
    assert_eq!(
        commands(&v, "BeforeTool"),
        ["./mine.sh", "coord hook gemini"]
    );
    assert_eq!(
        v["hooks"]["AfterTool"][0]["matcher"],
        "write_file|replace|run_shell_command"
    );
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "gemini"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
}

/// The same rerun in a settings file with comments (Gemini CLI reads JSON with comments): the
/// matcher of coord's group is widened, the user's group stays, and the user's comments and the
/// way they wrote their own values stay as they were.
#[test]
fn a_rerun_widens_coords_matcher_in_a_file_with_comments() {
    let env = Env::new();
    env.write(
        ".gemini/settings.json",
        r#"{
  // my hooks
  "theme": "d\u0061rk",
  "hooks": {"BeforeTool": [
    {"matcher": "write_file", "hooks": [{"type": "command", "command": "./mine.sh"}]},
    {"matcher": "write_file|replace", "hooks": [{"name": "coord", "type": "command", "command": "coord hook gemini"}]}
  ]}
}
"#,
    );
    env.cmd().args(["init", "--client", "gemini"]).ok();
    let text = env.read(".gemini/settings.json");
    assert!(text.contains("// my hooks"), "{text}");
    assert!(text.contains(r#""theme": "d\u0061rk""#), "{text}");
    assert!(
        text.contains(r#""matcher": "write_file","#) && text.contains("./mine.sh"),
        "{text}"
    );
    assert!(
        text.contains(r#""matcher": "write_file|replace|run_shell_command""#),
        "{text}"
    );
    assert!(
        !text.contains(r#""matcher": "write_file|replace","#),
        "{text}"
    );
}

/// Every path under the root, without reading any file (a FIFO would block).
fn names(env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![env.root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
            out.push(e.path().display().to_string());
        }
    }
    out.sort();
    out
}

/// Issue 26 item 15: a FIFO where a settings file belongs does not hang init: exit 2,
/// nothing written.
#[test]
fn a_fifo_settings_file_is_refused_without_hanging() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".claude")).unwrap();
    let fifo = env.path(".claude/settings.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let before = names(&env);
    let mut child = env
        .cmd()
        .path_only(no_clients())
        .arg("init")
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        waited += 1;
        if waited > 600 {
            let _ = child.kill();
            // Unblock and reap it, then fail.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
            let _ = child.wait();
            panic!("init hangs on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("settings.json"));
    assert_eq!(names(&env), before);
}

/// Issue 26 item 16: `-C outer/proj init` inside a workspace `outer/` makes `proj/` a
/// workspace of its own and wires it, never `outer/`.
#[test]
fn init_with_dir_inside_another_workspace_wires_that_dir() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".coord")).unwrap();
    std::fs::create_dir_all(env.path("proj")).unwrap();
    env.cmd()
        .args(["-C", "proj", "init", "--client", "claude"])
        .ok();
    assert!(env.path("proj/.coord").is_dir());
    assert!(env.exists("proj/.claude/settings.json"));
    assert!(!env.exists(".claude/settings.json") && !env.exists("AGENTS.md"));
    env.cmd().args(["-C", "proj", "init", "--remove"]).ok();
    assert!(!env.exists("proj/.claude") && !env.exists("proj/.coord"));
}

/// Issue 26 item 17: a settings file that is a symlink out of the workspace is skipped, and
/// init says so rather than "Wired for claude".
#[test]
fn a_skipped_settings_link_is_reported_and_its_client_not_called_wired() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("settings.json"), "{}").unwrap();
    std::fs::create_dir_all(env.path(".claude")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("settings.json"),
        env.path(".claude/settings.json"),
    )
    .unwrap();
    let out = env.cmd().args(["init", "--client", "claude,codex"]).ok();
    out.stdout_lacks("claude,").stdout_has("Wired for codex.");
    assert!(
        out.stderr
            .contains("warning: skipped `.claude/settings.json`")
            && out.stderr.contains("claude is not wired"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("settings.json")).unwrap(),
        "{}"
    );
    let out = env.cmd().args(["init", "--client", "claude"]).ok();
    out.stdout_lacks("Wired for");
}

/// Issue 26 item 17: a user's own entry that already runs coord's hook (by a path, with
/// options) gets no second `coord hook` entry beside it; the other events are wired.
#[test]
fn a_users_own_coord_hook_entry_gets_no_second_one() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "/usr/local/bin/coord -q hook claude --wait 5s"}]}]}}"#,
    );
    env.write(
        ".github/hooks/coord.json",
        r#"{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "COORD_AGENT=me \"$HOME/bin/coord\" hook copilot --event preToolUse"}]}}"#,
    );
    env.cmd().args(["init", "--client", "claude,copilot"]).ok();
    let claude = read_json(&env, ".claude/settings.json");
    assert_eq!(
        commands(&claude, "PreToolUse"),
        ["/usr/local/bin/coord -q hook claude --wait 5s"]
    );
    assert_eq!(claude["hooks"]["PreToolUse"][0]["matcher"], "Edit|Write");
    assert_eq!(commands(&claude, "Stop"), ["coord hook claude"]);
    let copilot = read_json(&env, ".github/hooks/coord.json");
    assert_eq!(copilot["hooks"]["preToolUse"].as_array().unwrap().len(), 1);
    assert_eq!(copilot["hooks"]["sessionEnd"].as_array().unwrap().len(), 1);
    // And `--remove` leaves the user's own entries where they are.
    env.cmd().args(["init", "--remove"]).ok();
    let claude = read_json(&env, ".claude/settings.json");
    assert_eq!(
        commands(&claude, "PreToolUse"),
        ["/usr/local/bin/coord -q hook claude --wait 5s"]
    );
    assert!(claude["hooks"].get("Stop").is_none());
}

/// coord's hook in the user's own shell forms (after `&&`, `;` or a pipe) counts as coord's; a
/// command that only mentions `hook claude`, or runs coord's hook for another client, does not,
/// and gets coord's own entry beside it.
#[test]
fn own_hook_forms_are_recognised_and_lookalikes_are_not() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        r#"{"hooks": {
            "PreToolUse": [{"hooks": [{"type": "command", "command": "cd \"$CLAUDE_PROJECT_DIR\"&&coord hook claude"}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "true;coord hook claude"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "cat|coord hook claude"}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": "echo hook claude"}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "coord hook gemini"}]}]
        }}"#,
    );
    env.cmd().args(["init", "--client", "claude"]).ok();
    let claude = read_json(&env, ".claude/settings.json");
    assert_eq!(
        commands(&claude, "PreToolUse"),
        ["cd \"$CLAUDE_PROJECT_DIR\"&&coord hook claude"]
    );
    assert_eq!(commands(&claude, "PostToolUse"), ["true;coord hook claude"]);
    assert_eq!(commands(&claude, "Stop"), ["cat|coord hook claude"]);
    assert_eq!(
        commands(&claude, "SessionStart"),
        ["echo hook claude", "coord hook claude"]
    );
    assert_eq!(
        commands(&claude, "SessionEnd"),
        ["coord hook gemini", "coord hook claude"]
    );
}

// ---------------------------------------------------------------------------------------------
// init

/// Issue 26 item 10: an `AGENTS.md` with `<!-- coord:begin -->` and no end is reported (exit 2)
/// and nothing is written (init used to append a second block, then the next init deleted the
/// user's text after the first).
#[test]
fn init_refuses_an_unterminated_coord_block_and_writes_nothing() {
    let env = Env::new();
    env.write(
        "AGENTS.md",
        "# Rules\n<!-- coord:begin -->\nold coord text\n\nMy own notes, keep them.\n",
    );
    refused_writing_nothing(&env, &["init", "--client", "claude"], &["AGENTS.md"]);
}

/// Issue 26 item 15: a FIFO at `.claude/settings.json` is refused (exit 2, nothing written);
/// init used to block in `open` forever.
#[test]
fn init_refuses_a_fifo_settings_file_without_blocking() {
    let env = Env::new();
    std::fs::create_dir(env.path(".claude")).unwrap();
    let made = Command::new("mkfifo")
        .arg(env.path(".claude/settings.json"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no `mkfifo` here");
        return;
    }
    let before = names_under(env.root());
    let mut child = env.cmd().args(["init", "--client", "claude"]).spawn();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("init blocked on the FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(names_under(env.root()), before, "init wrote something");
}

/// Issue 26 item 16: `coord -C outer/proj init` inside an existing `outer/.coord` wires
/// `outer/proj`, not `outer`.
#[test]
fn init_with_dash_c_wires_the_named_folder_inside_another_workspace() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("outer/.coord")).unwrap();
    std::fs::create_dir_all(env.path("outer/proj")).unwrap();
    env.cmd()
        .env_remove("COORD_DIR")
        .args(["-C", "outer/proj", "init", "--client", "claude"])
        .ok();
    assert!(env.exists("outer/proj/.claude/settings.json"));
    assert!(!env.exists("outer/.claude/settings.json"));
}

/// Every path under `dir` (names only: nothing is opened, a FIFO included).
fn names_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// `-C` naming a file: init is refused and writes nothing.
#[test]
fn init_in_a_file_instead_of_a_folder_is_refused_and_writes_nothing() {
    let env = Env::new();
    env.write("notes.txt", "mine\n");
    let file = env.path("notes.txt");
    refused_writing_nothing(
        &env,
        &["-C", file.to_str().unwrap(), "init"],
        &["the workspace must be a folder"],
    );
}

/// An instructions file of a few MiB (a long AGENTS.md) is merged like a short one, and
/// `--remove` gives it back byte for byte.
#[test]
fn a_large_instructions_file_is_merged_and_given_back() {
    let env = Env::new();
    let mut text = String::new();
    while text.len() < 3 * 1024 * 1024 {
        text.push_str("- keep each module small and name it for what it owns\n");
    }
    // No line break at the end: only init's record knows there was none.
    text.pop();
    env.write("AGENTS.md", &text);
    env.cmd().args(["init", "--client", "codex"]).ok();
    let merged = env.read("AGENTS.md");
    assert!(merged.starts_with(&text), "the user's text stays first");
    assert!(merged.contains("<!-- coord:begin -->"));
    env.cmd()
        .args(["init", "--client", "codex", "--remove"])
        .ok();
    assert!(env.read("AGENTS.md") == text, "given back byte for byte");
    // The record of what init did (holding the file as it was) is read back whatever its size:
    // the files init created go again.
    assert!(!env.path(".gitignore").exists());
    assert!(!env.path(".codex").exists());
}

/// A file too large to be a settings or instructions file (over 64 MiB) is refused as bad
/// input (exit 2) before anything is written.
#[test]
fn an_oversized_file_is_refused_as_bad_input_before_anything_is_written() {
    let env = Env::new();
    env.write("AGENTS.md", "mine\n");
    // Sparse: the size is what is judged, nothing is read.
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(env.path("AGENTS.md"))
        .unwrap();
    f.set_len(65 * 1024 * 1024).unwrap();
    drop(f);
    refused_writing_nothing(&env, &["init", "--client", "codex"], &["AGENTS.md"]);
}

/// `CLAUDE.md` kept as a link to `AGENTS.md` (a common set-up): the link is followed inside the
/// workspace, the block lands once in `AGENTS.md`, and the link stays a link.
#[test]
fn an_instructions_file_linked_inside_the_workspace_is_written_through() {
    let env = Env::new();
    env.write("AGENTS.md", "# Rules\n");
    std::os::unix::fs::symlink("AGENTS.md", env.path("CLAUDE.md")).unwrap();
    let out: Value = env
        .cmd()
        .args(["init", "--client", "claude", "--json"])
        .ok()
        .json();
    assert_eq!(out["plan"]["skipped"], serde_json::json!([]), "{out}");
    let agents = env.read("AGENTS.md");
    assert!(agents.starts_with("# Rules\n"), "{agents}");
    assert_eq!(
        agents.matches("<!-- coord:begin -->").count(),
        1,
        "{agents}"
    );
    assert!(
        std::fs::symlink_metadata(env.path("CLAUDE.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// A settings file holding only blank lines is an empty one: init fills it in.
#[test]
fn a_blank_settings_file_is_filled_in() {
    let env = Env::new();
    env.write(".mcp.json", "\n  \n");
    env.cmd().args(["init", "--client", "claude"]).ok();
    let mcp = read_json(&env, ".mcp.json");
    assert!(mcp["mcpServers"]["coord"].is_object(), "{mcp}");
}

/// Comments are accepted only where the client itself reads JSON with comments (Gemini CLI):
/// Claude Code's `settings.json` with a comment is not valid for Claude Code, and init says so
/// rather than merging into it.
#[test]
fn comments_in_a_strict_json_settings_file_are_refused() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        "{\n  // my model\n  \"model\": \"opus\"\n}\n",
    );
    refused_writing_nothing(
        &env,
        &["init", "--client", "claude"],
        &[".claude/settings.json", "not valid JSON"],
    );
    // Gemini CLI reads its settings with comments: merged, comment kept.
    env.write(
        ".gemini/settings.json",
        "{\n  // my theme\n  \"theme\": \"dark\"\n}\n",
    );
    env.cmd().args(["init", "--client", "gemini"]).ok();
    let gemini = env.read(".gemini/settings.json");
    assert!(
        gemini.contains("// my theme") && gemini.contains("coord hook gemini"),
        "{gemini}"
    );
}
