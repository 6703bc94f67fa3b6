//! `coord init`: real settings files of each client, merged and never clobbered.

use serde_json::Value;

use crate::support::{Env, no_clients};

pub(crate) fn read_json(env: &Env, rel: &str) -> Value {
    serde_json::from_str(&env.read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every command registered under `hooks.EVENT` of a Claude-shaped settings file.
pub(crate) fn commands(v: &Value, event: &str) -> Vec<String> {
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
        .path_only(no_clients())
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
    env.cmd()
        .path_only(no_clients())
        .arg("init")
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
    env.cmd()
        .args(["init", "--client", "claude,gemini"])
        .ok()
        .stdout_has("Nothing to change");
    assert_eq!(env.snapshot(), before);
}

/// `coord init --client NAME` writes that client's files, the instructions for agents (in
/// `AGENTS.md`, and in the client's own instructions file where it has one) and the ignore
/// lines: nothing else outside `.coord/`. It names the client as its makers do, and the step
/// that makes the client run the hooks here names that client's own gate.
#[test]
fn init_of_one_client_writes_exactly_its_files() {
    // client, product, the files it writes besides AGENTS.md and .gitignore, a word of its step
    let cases: [(&str, &str, &[&str], &str); 9] = [
        (
            "claude",
            "Claude Code",
            &[".claude/settings.json", ".mcp.json", "CLAUDE.md"],
            "hasTrustDialogAccepted",
        ),
        (
            "codex",
            "Codex CLI",
            &[".codex/config.toml", ".codex/hooks.json"],
            "Hooks need review",
        ),
        (
            "gemini",
            "Gemini CLI",
            &[".gemini/settings.json", "GEMINI.md"],
            ".gemini/trustedFolders.json",
        ),
        (
            "copilot",
            "Copilot CLI",
            &[".github/hooks/coord.json", ".mcp.json"],
            ".copilot/config.json",
        ),
        (
            "qwen",
            "Qwen Code",
            &[".qwen/settings.json", "QWEN.md"],
            ".qwen/trustedFolders.json",
        ),
        (
            "opencode",
            "OpenCode",
            &[".opencode/plugin/coord.js", "opencode.json"],
            "`.opencode/plugin/`",
        ),
        (
            "cline",
            "Cline CLI",
            &[".cline/plugins/coord.js"],
            "`.cline/plugins/`",
        ),
        (
            "cursor",
            "Cursor",
            &[".cursor/hooks.json", ".cursor/mcp.json"],
            "`.cursor/hooks.json`",
        ),
        (
            "windsurf",
            "Windsurf",
            &[".windsurf/hooks.json"],
            "`.windsurf/hooks.json`",
        ),
    ];
    for (client, product, own, step) in cases {
        let env = Env::new();
        let out = env.cmd().args(["init", "--client", client]).ok();
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{product}: "))),
            "{client}: {}",
            out.stdout
        );
        let written: Vec<String> = env
            .snapshot()
            .into_keys()
            .filter(|p| !p.starts_with(".coord/"))
            .collect();
        let mut want: Vec<String> = own
            .iter()
            .chain(&[".gitignore", "AGENTS.md"])
            .map(|f| f.to_string())
            .collect();
        want.sort();
        assert_eq!(written, want, "{client}");
        let v: Value = env
            .cmd()
            .args(["init", "--client", client, "--json", "--dry-run"])
            .ok()
            .json();
        let trust = &v["trust"][0];
        assert_eq!(trust["product"], product, "{v}");
        assert!(trust["step"].as_str().unwrap().contains(step), "{v}");
        // Whether git's hooks run for commits made through the client's shell, and why: Gemini
        // CLI turns them off; the editors' terminals are read from their docs.
        assert_eq!(trust["shell_git_hooks"], client != "gemini", "{v}");
        let why = if matches!(client, "cursor" | "windsurf") {
            "its terminal runs git"
        } else {
            "its shell tool"
        };
        assert!(
            trust["shell_git_hooks_why"]
                .as_str()
                .unwrap()
                .starts_with(why),
            "{v}"
        );
    }
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

    env.cmd().path_only(no_clients()).args(["init"]).ok();

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
        .path_only(no_clients())
        .args(["init"])
        .ok()
        .stdout_has("Nothing to change");
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

/// The files of the clients a plain `coord init` wired in `env`, each client's own folder or
/// file that only it uses.
fn wired_clients(env: &Env) -> Vec<&'static str> {
    [
        ("claude", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("copilot", ".github/hooks/coord.json"),
        ("qwen", ".qwen/settings.json"),
        ("opencode", ".opencode/plugin/coord.js"),
        ("cline", ".cline/plugins/coord.js"),
        ("cursor", ".cursor/hooks.json"),
        ("windsurf", ".windsurf/hooks.json"),
    ]
    .into_iter()
    .filter(|(_, file)| env.exists(file))
    .map(|(client, _)| client)
    .collect()
}

/// #48 item 4: plain `coord init` wires the clients installed on this machine (their command
/// on PATH), says which and how to add another; a user with one client gets that client's
/// files only, not nine clients' in eleven places.
#[test]
fn plain_init_wires_the_clients_found_on_path() {
    let env = Env::new();
    let bin = env.path("bin");
    crate::support::plant_command(&bin, "claude");
    // Named like a client but not executable: not a client installed.
    env.write("bin/codex", "not a program");
    let out = env.cmd().path_only(&bin).arg("init").ok();
    out.stdout_has(&format!(
        "Found on PATH: claude ({}).",
        bin.join("claude").display()
    ));
    out.stdout_has("Add another client with `coord init --client NAME` (codex, gemini");
    assert_eq!(wired_clients(&env), ["claude"]);
    let mut files: Vec<String> = env
        .snapshot()
        .into_keys()
        .filter(|k| !k.starts_with(".coord/") && !k.starts_with("bin/"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ".claude/settings.json",
            ".gitignore",
            ".mcp.json",
            "AGENTS.md",
            "CLAUDE.md"
        ]
    );

    crate::support::plant_command(&bin, "cursor-agent");
    crate::support::plant_command(&bin, "gemini");
    let v: Value = env
        .cmd()
        .path_only(&bin)
        .args(["init", "--json"])
        .ok()
        .json();
    assert_eq!(v["chosen_by"], "found", "{v}");
    assert_eq!(
        v["plan"]["clients"],
        serde_json::json!(["claude", "gemini", "cursor"])
    );
    assert_eq!(wired_clients(&env), ["claude", "gemini", "cursor"]);
}

/// #48 item 4: with no client on PATH, plain `coord init` wires the four clients the contract
/// names (a repository set up before its users' clients are installed), and says so; `--client
/// all` still wires every client.
#[test]
fn plain_init_without_a_client_on_path_wires_the_contracts_four() {
    let env = Env::new();
    let empty = env.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    env.cmd()
        .path_only(&empty)
        .arg("init")
        .ok()
        .stdout_has("No agent client found on PATH: wiring claude, codex, gemini, copilot");
    assert_eq!(
        wired_clients(&env),
        ["claude", "codex", "gemini", "copilot"]
    );
    for doc in ["AGENTS.md", "CLAUDE.md", "GEMINI.md"] {
        assert!(env.read(doc).contains("<!-- coord:begin -->"), "{doc}");
    }
    let everyone = Env::new();
    everyone
        .cmd()
        .path_only(&empty)
        .args(["init", "--client", "all"])
        .ok()
        .stdout_lacks("Add another client");
    assert_eq!(wired_clients(&everyone).len(), 9);
}
