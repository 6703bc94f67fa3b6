//! `coord init`: real settings files of each client, merged and never clobbered.

use serde_json::Value;

use crate::support::Env;

fn read_json(env: &Env, rel: &str) -> Value {
    serde_json::from_str(&env.read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every command registered under `hooks.EVENT` of a Claude-shaped settings file.
fn commands(v: &Value, event: &str) -> Vec<String> {
    v["hooks"][event]
        .as_array()
        .unwrap_or_else(|| panic!("no hooks.{event} in {v}"))
        .iter()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn init_wires_every_client_and_a_second_run_changes_nothing() {
    let env = Env::new();
    env.cmd()
        .arg("init")
        .ok()
        .stdout_has("Created: .claude/settings.json");
    assert!(env.path(".coord").is_dir());

    let claude = read_json(&env, ".claude/settings.json");
    for event in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        assert_eq!(commands(&claude, event), ["coord hook claude"], "{event}");
    }
    // The edit tools, and the shell (a `git commit` through it is checked like the guard).
    assert_eq!(
        claude["hooks"]["PreToolUse"][0]["matcher"],
        "Edit|Write|MultiEdit|NotebookEdit|Bash"
    );
    // After the shell too: held files a command changed are reported.
    assert_eq!(
        claude["hooks"]["PostToolUse"][0]["matcher"],
        "Edit|Write|MultiEdit|NotebookEdit|Bash"
    );
    assert_eq!(
        read_json(&env, ".mcp.json")["mcpServers"]["coord"]["args"][0],
        "mcp"
    );
    let codex = read_json(&env, ".codex/hooks.json");
    assert_eq!(commands(&codex, "PreToolUse"), ["coord hook codex"]);
    assert!(
        codex["hooks"]["PreToolUse"][0]["matcher"]
            .as_str()
            .unwrap()
            .contains("apply_patch")
    );
    let toml = env.read(".codex/config.toml");
    assert!(
        toml.contains("[mcp_servers.coord]") && toml.contains("args = [\"mcp\"]"),
        "{toml}"
    );
    let gemini = read_json(&env, ".gemini/settings.json");
    for event in [
        "SessionStart",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "SessionEnd",
    ] {
        assert_eq!(commands(&gemini, event), ["coord hook gemini"], "{event}");
    }
    assert_eq!(gemini["mcpServers"]["coord"]["command"], "coord");
    let copilot = read_json(&env, ".github/hooks/coord.json");
    assert_eq!(copilot["version"], 1);
    assert_eq!(
        copilot["hooks"]["preToolUse"][0]["bash"],
        "coord hook copilot --event preToolUse"
    );
    for doc in ["AGENTS.md", "CLAUDE.md", "GEMINI.md"] {
        let text = env.read(doc);
        assert!(
            text.starts_with("<!-- coord:begin -->\n") && text.ends_with("<!-- coord:end -->\n"),
            "{doc}"
        );
        assert!(text.contains("coord status"));
    }
    let ignore = env.read(".gitignore");
    for line in [
        ".coord/",
        ".*_presence",
        ".handshake_*",
        "*.lock.*",
        "*.bak",
        "*.rejected.*",
    ] {
        assert!(ignore.lines().any(|l| l == line), "{line} in {ignore}");
    }

    let before = env.snapshot();
    env.cmd().arg("init").ok().stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
    env.cmd()
        .args(["init", "--client", "claude,gemini"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn init_merges_into_existing_settings_keeping_keys_hooks_and_text() {
    let env = Env::new();
    env.write(
        ".claude/settings.json",
        r#"{
  "zzz": {"b": 2, "a": 1},
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check-bash.sh"}]}],
    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
  },
  "aaa": true
}"#,
    );
    env.write(
        ".gemini/settings.json",
        r#"{"theme": "Dracula", "mcpServers": {"other": {"command": "other-mcp"}}, "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
    );
    env.write(
        ".codex/config.toml",
        "# my settings\nmodel = \"gpt-5-codex\"   # keep this comment\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n",
    );
    let agents = "# My project\r\n\r\nRules for agents.\r\n\r\n<!-- coord:begin -->\nold coord text\n<!-- coord:end -->\r\nAfter the block.\r\n";
    env.write("AGENTS.md", agents);
    env.write(".gitignore", "target/\n*.log");

    env.cmd().args(["init"]).ok();

    let text = env.read(".claude/settings.json");
    let pos = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {text}"))
    };
    assert!(
        pos("\"zzz\"") < pos("\"permissions\"")
            && pos("\"permissions\"") < pos("\"hooks\"")
            && pos("\"hooks\"") < pos("\"aaa\""),
        "{text}"
    );
    assert!(pos("\"b\"") < pos("\"a\""), "nested key order kept: {text}");
    let claude: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        commands(&claude, "PreToolUse"),
        ["./check-bash.sh", "coord hook claude"]
    );
    assert_eq!(
        commands(&claude, "Notification"),
        ["notify-send hi", "coord hook claude"]
    );
    assert_eq!(claude["permissions"]["allow"][0], "Bash(ls)");

    let gemini = read_json(&env, ".gemini/settings.json");
    assert_eq!(gemini["theme"], "Dracula");
    assert_eq!(gemini["mcpServers"]["other"]["command"], "other-mcp");
    assert_eq!(gemini["mcpServers"]["coord"]["command"], "coord");
    assert_eq!(
        commands(&gemini, "BeforeTool"),
        ["./guard.sh", "coord hook gemini"]
    );

    let toml = env.read(".codex/config.toml");
    assert!(toml.starts_with("# my settings\nmodel = \"gpt-5-codex\"   # keep this comment\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n"), "{toml}");
    assert!(toml.contains("[mcp_servers.coord]"), "{toml}");

    let md = env.read("AGENTS.md");
    assert!(
        md.starts_with("# My project\r\n\r\nRules for agents.\r\n\r\n<!-- coord:begin -->\n"),
        "{md:?}"
    );
    assert!(
        md.ends_with("<!-- coord:end -->\r\nAfter the block.\r\n"),
        "{md:?}"
    );
    assert!(!md.contains("old coord text"));
    assert_eq!(md.matches("<!-- coord:begin -->").count(), 1);
    assert!(
        env.read(".gitignore")
            .starts_with("target/\n*.log\n\n# coord:begin\n")
    );

    // Idempotent on merged files too.
    let before = env.snapshot();
    env.cmd()
        .args(["init"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
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
        let before = env.snapshot();
        let out = env.cmd().arg("init").code(2);
        assert!(
            out.stderr.contains("error:") && out.stderr.contains(file),
            "{file}: {}",
            out.stderr
        );
        assert_eq!(env.snapshot(), before, "{file}: nothing written");
        assert!(!env.path(".coord").exists(), "{file}: no .coord/");
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
    let json: Value = env.cmd().args(["init", "--dry-run", "--json"]).ok().json();
    assert_eq!(json["dry_run"], true);
    assert!(json["plan"]["changes"].as_array().unwrap().len() >= 9);
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_claude_md_linked_to_agents_md_gets_one_block() {
    let env = Env::new();
    env.write("AGENTS.md", "shared rules\n");
    std::os::unix::fs::symlink("AGENTS.md", env.path("CLAUDE.md")).unwrap();
    env.cmd().args(["init", "--client", "claude"]).ok();
    assert!(
        std::fs::symlink_metadata(env.path("CLAUDE.md"))
            .unwrap()
            .is_symlink()
    );
    let text = env.read("AGENTS.md");
    assert!(text.starts_with("shared rules\n\n<!-- coord:begin -->"));
    assert_eq!(text.matches("<!-- coord:begin -->").count(), 1);
}

#[test]
fn the_registered_hook_command_runs_against_the_folder() {
    // The command init registers, run as the client would run it (through a shell, in the
    // project folder), locks the file a Write names.
    let env = Env::new();
    env.cmd().args(["init", "--client", "claude"]).ok();
    let settings = read_json(&env, ".claude/settings.json");
    let cmd = commands(&settings, "PreToolUse")[0]
        .replace("coord ", &format!("{} ", crate::support::coord_bin()));
    let payload = format!(
        r#"{{"session_id":"5e55a0e1","cwd":"{0}","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"{0}/a.txt","content":"x"}}}}"#,
        env.root().display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("printf '%s' '{payload}' | {cmd}")])
        .current_dir(env.root())
        .env_remove("COORD_DIR")
        .env_remove("COORD_AGENT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(env.exists("a.txt.lock.claude-5e55a0e1"));
}

/// Issue 25: every lifecycle event is registered (Codex `SessionEnd`, Copilot `agentStop`),
/// Copilot gets coord's MCP server in `.mcp.json` (which it reads), and Codex no deprecated
/// `[features].codex_hooks` (one written by an earlier init is taken back, other keys kept).
#[test]
fn init_registers_every_lifecycle_event_and_no_deprecated_codex_flag() {
    let env = Env::new();
    env.cmd().args(["init", "--client", "codex,copilot"]).ok();
    let codex = read_json(&env, ".codex/hooks.json");
    for event in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        assert_eq!(commands(&codex, event), ["coord hook codex"], "{event}");
    }
    let toml = env.read(".codex/config.toml");
    assert!(
        !toml.contains("codex_hooks") && !toml.contains("[features]"),
        "{toml}"
    );
    let copilot = read_json(&env, ".github/hooks/coord.json");
    for event in [
        "sessionStart",
        "preToolUse",
        "postToolUse",
        "agentStop",
        "sessionEnd",
    ] {
        assert_eq!(
            copilot["hooks"][event][0]["bash"],
            format!("coord hook copilot --event {event}"),
            "{event}"
        );
    }
    assert_eq!(
        read_json(&env, ".mcp.json")["mcpServers"]["coord"]["args"][0],
        "mcp"
    );
    assert!(!env.exists(".claude/settings.json"));

    let env = Env::new();
    env.write(
        ".codex/config.toml",
        "model = \"gpt-5.5\"\n\n[features]\ncodex_hooks = true\nweb_search = false # mine\n",
    );
    env.cmd().args(["init", "--client", "codex"]).ok();
    let toml = env.read(".codex/config.toml");
    assert!(!toml.contains("codex_hooks"), "{toml}");
    assert!(
        toml.contains("[features]\nweb_search = false # mine\n"),
        "{toml}"
    );
    let env = Env::new();
    env.write(".codex/config.toml", "[features]\ncodex_hooks = true\n");
    env.cmd().args(["init", "--client", "codex"]).ok();
    let toml = env.read(".codex/config.toml");
    assert!(!toml.contains("features"), "{toml}");
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "codex"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
}

/// Copilot's hook file and `.mcp.json` are merged like the others: other hooks and servers
/// stay, a second run and a dry run change nothing.
#[test]
fn init_merges_copilot_hooks_and_mcp_keeping_others() {
    let env = Env::new();
    env.write(
        ".github/hooks/coord.json",
        r#"{"version": 1, "note": "mine", "hooks": {"preToolUse": [{"type": "command", "bash": "./audit.sh"}]}}"#,
    );
    env.write(
        ".mcp.json",
        r#"{"mcpServers": {"docs": {"command": "docs-mcp"}}}"#,
    );
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "copilot", "--dry-run"])
        .ok()
        .stdout_has("coord hook copilot --event agentStop");
    assert_eq!(env.snapshot(), before);
    env.cmd().args(["init", "--client", "copilot"]).ok();
    let hooks = read_json(&env, ".github/hooks/coord.json");
    assert_eq!(hooks["note"], "mine");
    assert_eq!(hooks["hooks"]["preToolUse"][0]["bash"], "./audit.sh");
    assert_eq!(
        hooks["hooks"]["preToolUse"][1]["bash"],
        "coord hook copilot --event preToolUse"
    );
    let mcp = read_json(&env, ".mcp.json");
    assert_eq!(mcp["mcpServers"]["docs"]["command"], "docs-mcp");
    assert_eq!(mcp["mcpServers"]["coord"]["command"], "coord");
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "copilot"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
}

/// Issue 25: Gemini CLI reads its settings as JSON with comments; init merges into such a
/// file and keeps every comment. What Gemini refuses (a trailing comma) init refuses too.
#[test]
fn gemini_settings_with_comments_are_merged_keeping_them() {
    let env = Env::new();
    let text = "{\n  // my theme\n  \"theme\": \"Dracula\",\n  /* my guard */\n  \"hooks\": {\n    \"BeforeTool\": [\n      {\"matcher\": \"run_shell_command\", \"hooks\": [{\"type\": \"command\", \"command\": \"./guard.sh\"}]}\n    ]\n  }\n}\n";
    env.write(".gemini/settings.json", text);
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "gemini", "--dry-run"])
        .ok()
        .stdout_has("Would update: .gemini/settings.json");
    assert_eq!(env.snapshot(), before);
    env.cmd().args(["init", "--client", "gemini"]).ok();
    let merged = env.read(".gemini/settings.json");
    assert!(
        merged.starts_with("{\n  // my theme\n  \"theme\": \"Dracula\",\n  /* my guard */\n"),
        "{merged}"
    );
    let plain: String = merged
        .lines()
        .filter(|l| !l.trim_start().starts_with("//") && !l.trim_start().starts_with("/*"))
        .collect::<Vec<_>>()
        .join("\n");
    let v: Value = serde_json::from_str(&plain).unwrap_or_else(|e| panic!("{e}: {merged}"));
    assert_eq!(v["theme"], "Dracula");
    assert_eq!(
        commands(&v, "BeforeTool"),
        ["./guard.sh", "coord hook gemini"]
    );
    for event in ["SessionStart", "AfterTool", "AfterAgent", "SessionEnd"] {
        assert_eq!(commands(&v, event), ["coord hook gemini"], "{event}");
    }
    assert_eq!(v["mcpServers"]["coord"]["command"], "coord");
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "gemini"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);

    let env = Env::new();
    env.write(
        ".gemini/settings.json",
        "{\n  // x\n  \"theme\": \"Dracula\",\n}\n",
    );
    let before = env.snapshot();
    let out = env.cmd().args(["init", "--client", "gemini"]).code(2);
    assert!(
        out.stderr.contains(".gemini/settings.json"),
        "{}",
        out.stderr
    );
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
    ] {
        cmd = cmd.env_remove(var);
    }
    cmd.env(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        home.join("no-system-settings.json"),
    )
}

/// `coord doctor --json`'s verdict per wired client.
fn verdicts(env: &Env, home: &std::path::Path) -> Vec<(String, String, String)> {
    let v: Value = with_home(env, home).args(["doctor", "--json"]).ok().json();
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
        .stdout_has("git in shell:  Gemini CLI: git hooks for commits through its shell: no");
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

/// Each client's files as a user may have them before `coord init`: other hooks, other keys,
/// comments, odd formatting, text without a final line break.
fn plant_user_files(env: &Env) {
    env.write(
        ".claude/settings.json",
        "{ \"zzz\": 1,\n\t\"hooks\": {\"Stop\": [ {\"hooks\": [{\"type\": \"command\", \"command\": \"./mine.sh\"}]} ],\n\"PreToolUse\": []},\n  \"aaa\": [1,2] }",
    );
    env.write(
        ".mcp.json",
        "{\"mcpServers\": {\"docs\": {\"command\": \"docs-mcp\"}}}\n\n",
    );
    env.write(
        ".codex/hooks.json",
        "{\n    \"hooks\": {\n        \"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]}]\n    }\n}\n",
    );
    env.write(
        ".codex/config.toml",
        "# mine\nmodel = \"gpt-5\"   # keep\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n",
    );
    env.write(
        ".gemini/settings.json",
        "{\n  // my theme\n  \"theme\": \"Dracula\", /* inline */\n  \"hooks\": {\n    \"BeforeTool\": [\n      {\"matcher\": \"run_shell_command\", \"hooks\": [{\"type\": \"command\", \"command\": \"./guard.sh\"}]}\n    ]\n  }\n}\n",
    );
    env.write(
        ".github/hooks/coord.json",
        "{\"version\": 1, \"hooks\": {\"preToolUse\": [{\"type\": \"command\", \"bash\": \"./audit.sh\"}]}}",
    );
    env.write("AGENTS.md", "# Rules\r\n\r\nBe nice.");
    env.write("CLAUDE.md", "claude rules\n\n");
    env.write(".gitignore", "target/\n");
}

/// Issue 29: `coord init --remove` takes back exactly what init added. For each client, from
/// a folder holding nothing, and from one holding the user's own hooks, keys and text: init
/// then remove leaves every file byte for byte as before, and a file init created is gone.
#[test]
fn init_then_remove_leaves_every_file_byte_for_byte() {
    for client in ["claude", "codex", "gemini", "copilot", "all"] {
        for planted in [false, true] {
            let env = Env::new();
            if planted {
                plant_user_files(&env);
            }
            let before = env.snapshot();
            env.cmd().args(["init", "--client", client]).ok();
            assert_ne!(env.snapshot(), before, "{client}: init wrote");
            let wired = env.snapshot();
            env.cmd()
                .args(["init", "--remove", "--client", client, "--dry-run"])
                .ok()
                .stdout_has("Would ");
            assert_eq!(env.snapshot(), wired, "{client}: a dry run writes nothing");
            env.cmd()
                .args(["init", "--remove", "--client", client])
                .ok();
            assert_eq!(env.snapshot(), before, "{client} (planted: {planted})");
            for dir in [".claude", ".codex", ".gemini", ".github", ".coord"] {
                assert_eq!(
                    env.path(dir).exists(),
                    planted && dir != ".coord",
                    "{client} (planted: {planted}): {dir}"
                );
            }
            env.cmd()
                .args(["init", "--remove", "--client", client])
                .ok()
                .stdout_has("Nothing to remove");
            assert_eq!(env.snapshot(), before);
        }
    }
}

/// Without init's record (files edited since, or wired elsewhere), coord's entries are cut
/// out where they lie: the user's later edits, comments and layout stay; entries another
/// wired client still uses (the shared `.mcp.json` server, the AGENTS.md block) stay too.
#[test]
fn remove_cuts_coords_entries_out_of_files_edited_since() {
    let env = Env::new();
    plant_user_files(&env);
    env.cmd().args(["init"]).ok();
    // The user edits after init: a new key in Gemini's settings, a line in AGENTS.md.
    let gemini = env.read(".gemini/settings.json").replace(
        "// my theme",
        "// my theme\n  \"later\": true, // added later",
    );
    env.write(".gemini/settings.json", &gemini);
    let agents = format!("{}More rules.\n", env.read("AGENTS.md"));
    env.write("AGENTS.md", &agents);

    env.cmd()
        .args(["init", "--remove", "--client", "gemini,claude"])
        .ok()
        .stdout_has("Still wired: codex, copilot");
    let g = env.read(".gemini/settings.json");
    assert_eq!(
        g,
        "{\n  // my theme\n  \"later\": true, // added later\n  \"theme\": \"Dracula\", /* inline */\n  \"hooks\": {\n    \"BeforeTool\": [\n      {\"matcher\": \"run_shell_command\", \"hooks\": [{\"type\": \"command\", \"command\": \"./guard.sh\"}]}\n    ]\n  }\n}\n"
    );
    assert!(!env.exists("GEMINI.md"));
    // Copilot still reads coord's server from .mcp.json; AGENTS.md keeps its block.
    let mcp = read_json(&env, ".mcp.json");
    assert_eq!(mcp["mcpServers"]["coord"]["command"], "coord");
    assert!(env.read("AGENTS.md").contains("<!-- coord:begin -->"));
    assert!(!env.read("CLAUDE.md").contains("coord"));
    assert!(!env.read(".claude/settings.json").contains("coord"));

    env.cmd().args(["init", "--remove"]).ok();
    assert_eq!(
        env.read("AGENTS.md"),
        "# Rules\r\n\r\nBe nice.\n\nMore rules.\n"
    );
    assert_eq!(
        env.read(".mcp.json"),
        "{\"mcpServers\": {\"docs\": {\"command\": \"docs-mcp\"}}}\n\n"
    );
    assert!(!env.exists(".coord"));
    let all = env.snapshot();
    for (file, bytes) in &all {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains("coord hook") && !text.contains("coord:begin"),
            "{file}: {text}"
        );
    }
}

/// `.coord/` holding the workspace's state (messages, history) is kept by `--remove`.
#[test]
fn remove_keeps_a_coord_folder_that_holds_state() {
    let env = Env::new();
    env.cmd().args(["init", "--client", "claude"]).ok();
    env.agent("alice").args(["msg", "send", "bob", "hi"]).ok();
    env.cmd()
        .args(["init", "--remove"])
        .ok()
        .stdout_has("Kept .coord/");
    assert!(env.path(".coord").is_dir());
    assert!(!env.exists(".claude/settings.json"));
}

/// Issue 26 item 10: an instructions block without its end marker is reported (exit 2,
/// nothing written), never closed by a guess that would swallow the user's text after it.
#[test]
fn an_unterminated_coord_block_is_reported_and_nothing_written() {
    let env = Env::new();
    env.write(
        "AGENTS.md",
        "# Rules\n\n<!-- coord:begin -->\nold coord text\n\nMy own rules after it.\n",
    );
    let before = env.snapshot();
    let out = env.cmd().arg("init").code(2);
    assert!(
        out.stderr.contains("AGENTS.md")
            && out.stderr.contains("line 3")
            && out.stderr.contains("<!-- coord:end -->"),
        "{}",
        out.stderr
    );
    assert_eq!(env.snapshot(), before);
    assert!(!env.path(".coord").exists());
    env.cmd().args(["init", "--remove"]).code(2);
    assert_eq!(env.snapshot(), before);
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
