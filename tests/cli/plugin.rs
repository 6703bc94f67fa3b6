//! `coord plugin write` and the `--plugin` hooks: one plugin per client, generated from what
//! `coord init` wires; in a repository nobody set up nothing shows in `git status`; a switch
//! turns it off. With COORD_TEST_CLAUDE / COORD_TEST_CODEX / COORD_TEST_GEMINI /
//! COORD_TEST_COPILOT pointing at a client, its own validator and its own install and
//! uninstall commands run in a scratch HOME (nothing is fetched: every source is local).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{Env, Output as Ran, coord_bin};

fn coord_path() -> String {
    std::fs::canonicalize(coord_bin())
        .unwrap()
        .display()
        .to_string()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                // A client's temporary file may go between the listing and the read.
                match std::fs::read(&p) {
                    Ok(bytes) => {
                        out.insert(rel, bytes);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => panic!("{}: {e}", p.display()),
                }
            }
        }
    }
    out
}

/// `coord plugin write [--client C] DIR` from `env`.
fn write_plugins(env: &Env, dir: &Path, client: Option<&str>) -> Ran {
    let mut cmd = env.cmd().args(["plugin", "write"]);
    if let Some(c) = client {
        cmd = cmd.args(["--client", c]);
    }
    cmd.arg(dir).ok()
}

/// A plugin's command as `coord init` writes it: `coord hook ...` without `--plugin`.
fn as_init(cmd: &str) -> String {
    let bin = coord_path();
    let rest = cmd
        .strip_prefix(&bin)
        .unwrap_or_else(|| panic!("`{cmd}` does not run {bin}"));
    let rest = rest
        .strip_suffix(" --plugin")
        .unwrap_or_else(|| panic!("`{cmd}` lacks --plugin"));
    format!("coord{rest}")
}

/// Every command string in a hooks object (Claude-shaped `command`, Copilot `bash`), rewritten
/// with `f`.
fn rewrite(v: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("command" | "bash" | "powershell", Value::String(s)) => {
                        (k.clone(), Value::String(f(s)))
                    }
                    _ => (k.clone(), rewrite(v, f)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| rewrite(x, f)).collect()),
        other => other.clone(),
    }
}

#[test]
fn plugin_write_is_deterministic_and_runs_this_binary() {
    let env = Env::new();
    let a = env.path("out-a");
    let b = env.path("out-b");
    write_plugins(&env, &a, None)
        .stdout_has("claude plugin marketplace add")
        .stdout_has("gemini extensions install")
        .stdout_has("git config coord.enabled false");
    write_plugins(&env, &b, Some("all"));
    let (ta, tb) = (tree(&a), tree(&b));
    assert_eq!(ta, tb, "two runs wrote different plugins");
    // Writing again over the first changes nothing.
    write_plugins(&env, &a, None);
    assert_eq!(tree(&a), ta);
    for needed in [
        "claude/.claude-plugin/marketplace.json",
        "claude/coord/.claude-plugin/plugin.json",
        "claude/coord/hooks/hooks.json",
        "claude/coord/.mcp.json",
        "claude/coord/skills/coord/SKILL.md",
        "codex/.agents/plugins/marketplace.json",
        "codex/coord/.codex-plugin/plugin.json",
        "codex/coord/hooks/hooks.json",
        "codex/coord/.mcp.json",
        "gemini/gemini-extension.json",
        "gemini/hooks/hooks.json",
        "gemini/GEMINI.md",
        "copilot/.github/plugin/marketplace.json",
        "copilot/coord/.github/plugin/plugin.json",
        "copilot/coord/hooks/hooks.json",
        "copilot/coord/.mcp.json",
        "qwen/qwen-extension.json",
        "qwen/hooks/hooks.json",
        "qwen/QWEN.md",
        "opencode/package.json",
        "opencode/coord.js",
        "cline/package.json",
        "cline/coord.js",
    ] {
        assert!(ta.contains_key(needed), "missing {needed}: {:?}", ta.keys());
    }
    let mcp = read_json(&a.join("claude/coord/.mcp.json"));
    assert_eq!(mcp["mcpServers"]["coord"]["command"], coord_path().as_str());
    assert_eq!(
        mcp["mcpServers"]["coord"]["args"],
        serde_json::json!(["mcp", "--plugin"])
    );
    let gem = read_json(&a.join("gemini/gemini-extension.json"));
    assert_eq!(gem["name"], "coord");
    assert_eq!(gem["mcpServers"]["coord"]["command"], coord_path().as_str());
    assert_eq!(gem["contextFileName"], "GEMINI.md");
    assert!(
        String::from_utf8_lossy(&ta["claude/coord/skills/coord/SKILL.md"])
            .contains("do not work around it")
    );

    // One client only: only its folder.
    let c = env.path("out-c");
    write_plugins(&env, &c, Some("gemini"));
    assert!(tree(&c).keys().all(|k| k.starts_with("gemini/")));
}

#[test]
fn plugin_write_refuses_a_file_for_a_folder_and_writes_nothing() {
    let env = Env::new();
    env.write("taken", "x");
    env.cmd()
        .args(["plugin", "write", "taken"])
        .code(2)
        .stderr_has("error:");
    assert_eq!(env.read("taken"), "x");
}

#[test]
fn plugin_hooks_are_the_hooks_init_wires() {
    let env = Env::new();
    env.cmd().arg("init").ok();
    let out = env.path("plugins");
    write_plugins(&env, &out, None);
    let pairs = [
        (".claude/settings.json", "claude/coord/hooks/hooks.json", 7),
        (".codex/hooks.json", "codex/coord/hooks/hooks.json", 7),
        (".gemini/settings.json", "gemini/hooks/hooks.json", 7),
        (
            ".github/hooks/coord.json",
            "copilot/coord/hooks/hooks.json",
            5,
        ),
        (".qwen/settings.json", "qwen/hooks/hooks.json", 5),
    ];
    for (init_file, plugin_file, events) in pairs {
        let wired = read_json(&env.path(init_file))["hooks"].clone();
        let plugin = rewrite(&read_json(&out.join(plugin_file))["hooks"], &as_init);
        assert_eq!(plugin, wired, "{plugin_file} differs from {init_file}");
        assert_eq!(
            wired.as_object().map(|m| m.len()),
            Some(events),
            "{init_file}: {events} events"
        );
    }
    // The MCP server of every plugin is init's `coord mcp`, run as the plugin.
    for f in [
        "claude/coord/.mcp.json",
        "codex/coord/.mcp.json",
        "copilot/coord/.mcp.json",
    ] {
        let v = read_json(&out.join(f));
        assert_eq!(v["mcpServers"]["coord"]["args"][0], "mcp", "{f}");
    }
}

/// A git repository nobody set up for coord.
fn fresh_repo() -> Env {
    let env = Env::new();
    git(env.root(), &["init", "-q"]);
    env.write("a.txt", "one\n");
    git(env.root(), &["add", "a.txt"]);
    git(
        env.root(),
        &[
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "init",
        ],
    );
    env
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Claude hook payload.
fn payload(env: &Env, event: &str, session: &str, file: Option<&str>) -> String {
    let mut v = serde_json::json!({
        "hook_event_name": event,
        "session_id": session,
        "cwd": env.root(),
    });
    if let Some(f) = file {
        v["tool_name"] = "Write".into();
        v["tool_input"] = serde_json::json!({"file_path": env.path(f), "content": "two\n"});
    }
    v.to_string()
}

/// `coord hook claude --plugin` as the plugin runs it: no COORD_DIR, the payload's `cwd`.
fn plugin_hook(env: &Env, event: &str, session: &str, file: Option<&str>) -> Ran {
    env.cmd()
        .env_remove("COORD_DIR")
        .args(["hook", "claude", "--plugin", "--wait", "0"])
        .stdin(payload(env, event, session, file))
        .ok()
}

#[test]
fn plugin_hooks_coordinate_in_a_fresh_repository_and_git_status_stays_clean() {
    let env = fresh_repo();
    plugin_hook(&env, "SessionStart", "aaaa1111", None).stdout_has("claude-aaaa1111");
    plugin_hook(&env, "PreToolUse", "aaaa1111", Some("a.txt")).stdout_lacks("deny");
    assert!(env.exists("a.txt.lock.claude-aaaa1111"));
    // Another session is refused while the first holds the file.
    plugin_hook(&env, "PreToolUse", "bbbb2222", Some("a.txt"))
        .stdout_has("\"permissionDecision\":\"deny\"")
        .stdout_has("claude-aaaa1111");
    // Nothing of coord's shows in `git status`, and the user's `.gitignore` was not made.
    assert_eq!(
        git(
            env.root(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        ""
    );
    assert!(!env.exists(".gitignore"));
    assert_eq!(env.read(".coord/.gitignore"), "*\n");
    assert!(env.read(".git/info/exclude").contains("*.lock.*"));
    // The turn ends: the lock is released.
    plugin_hook(&env, "Stop", "aaaa1111", None);
    assert!(!env.exists("a.txt.lock.claude-aaaa1111"));
    plugin_hook(&env, "PreToolUse", "bbbb2222", Some("a.txt")).stdout_lacks("deny");
    assert_eq!(
        git(
            env.root(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        ""
    );
}

#[test]
fn a_repository_where_coord_ran_by_hand_is_still_kept_out_of_git_status() {
    let env = fresh_repo();
    // `.coord/` made by a command run by hand, before any plugin hook.
    env.agent("human").args(["lock", "a.txt"]).ok();
    plugin_hook(&env, "SessionStart", "aaaa1111", None);
    assert_eq!(
        git(
            env.root(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        ""
    );
}

#[test]
fn plugin_hooks_in_a_linked_worktree_exclude_in_the_common_git_folder() {
    let env = fresh_repo();
    let wt = env.path("wt");
    git(env.root(), &["worktree", "add", "-q", "wt"]);
    let out = env
        .cmd()
        .env_remove("COORD_DIR")
        .args(["hook", "claude", "--plugin"])
        .stdin(
            serde_json::json!({
                "hook_event_name": "PreToolUse", "session_id": "cccc3333", "cwd": wt,
                "tool_name": "Write", "tool_input": {"file_path": wt.join("a.txt")},
            })
            .to_string(),
        )
        .ok();
    out.stdout_lacks("deny");
    assert!(env.read(".git/info/exclude").contains("*.lock.*"));
    assert_eq!(
        git(&wt, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

#[test]
fn a_repository_that_turns_coord_off_gets_nothing() {
    let env = fresh_repo();
    git(env.root(), &["config", "coord.enabled", "false"]);
    let before = env.snapshot();
    for event in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        let file = event.ends_with("ToolUse").then_some("a.txt");
        let out = plugin_hook(&env, event, "aaaa1111", file);
        assert!(out.stdout.is_empty(), "{event}: {out:?}");
    }
    assert_eq!(
        env.snapshot(),
        before,
        "an opted-out repository was written to"
    );
    // The MCP server writes nothing either, and says why when a tool is called.
    let out = env
        .cmd()
        .env_remove("COORD_DIR")
        .args(["mcp", "--plugin"])
        .stdin(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}"#,
            "\n"
        ))
        .ok();
    out.stdout_has("turned off");
    assert_eq!(
        env.snapshot(),
        before,
        "the MCP server wrote in an opted-out repository"
    );
    // Turned back on, the plugin acts again.
    git(env.root(), &["config", "coord.enabled", "true"]);
    plugin_hook(&env, "SessionStart", "aaaa1111", None).stdout_has("claude-aaaa1111");
}

#[test]
fn plugin_hooks_leave_folders_that_are_not_repositories_alone() {
    let env = Env::new();
    let before = env.snapshot();
    plugin_hook(&env, "SessionStart", "aaaa1111", None);
    plugin_hook(&env, "PreToolUse", "aaaa1111", Some("x.txt"));
    assert_eq!(env.snapshot(), before);
    assert!(!env.exists(".coord"));
}

#[test]
fn plugin_hooks_stand_aside_where_init_wired_the_client() {
    let env = fresh_repo();
    env.cmd().args(["init", "--client", "claude"]).ok();
    plugin_hook(&env, "PreToolUse", "aaaa1111", Some("a.txt")).stdout_lacks("deny");
    assert!(
        !env.exists("a.txt.lock.claude-aaaa1111"),
        "the repository's own hook handles this event"
    );
    // The repository's hook (no --plugin) does.
    env.cmd()
        .env_remove("COORD_DIR")
        .args(["hook", "claude"])
        .stdin(payload(&env, "PreToolUse", "aaaa1111", Some("a.txt")))
        .ok();
    assert!(env.exists("a.txt.lock.claude-aaaa1111"));
}

/// Qwen Code's extension is in its own format: a manifest naming the MCP server and the context
/// file, which holds the instructions.
#[test]
fn the_qwen_extension_names_its_mcp_server_and_context() {
    let env = Env::new();
    let out = env.path("plugins");
    write_plugins(&env, &out, Some("qwen"));
    assert!(tree(&out).keys().all(|k| k.starts_with("qwen/")));
    let manifest = read_json(&out.join("qwen/qwen-extension.json"));
    assert_eq!(manifest["name"], "coord");
    assert_eq!(manifest["contextFileName"], "QWEN.md");
    assert_eq!(
        manifest["mcpServers"]["coord"]["command"],
        coord_path().as_str()
    );
    assert_eq!(
        manifest["mcpServers"]["coord"]["args"],
        serde_json::json!(["mcp", "--plugin"])
    );
    assert!(
        std::fs::read_to_string(out.join("qwen/QWEN.md"))
            .unwrap()
            .contains("do not work around it")
    );
}

/// OpenCode's and Cline's plugins are the JS plugin `coord init` writes into a repository, run
/// as the user's plugin: this coord by its absolute path, `--plugin`, the agent's instructions;
/// each a package its client installs (`main`; Cline's `cline.plugins`).
#[test]
fn opencode_and_cline_plugins_are_inits_plugin_run_as_the_plugin() {
    let env = Env::new();
    let out = env.path("plugins");
    write_plugins(&env, &out, Some("opencode,cline"));
    env.cmd()
        .args(["init", "--client", "opencode,cline", "-q"])
        .ok();
    let bin = serde_json::to_string(&coord_path()).unwrap();
    for (client, wired) in [
        ("opencode", ".opencode/plugin/coord.js"),
        ("cline", ".cline/plugins/coord.js"),
    ] {
        let js = std::fs::read_to_string(out.join(client).join("coord.js")).unwrap();
        let init = env.read(wired);
        assert!(
            init.contains(&format!("[\"hook\", \"{client}\"]")),
            "{client}: {init}"
        );
        assert!(
            js.contains(&format!("[\"hook\", \"{client}\", \"--plugin\"]")),
            "{client}: {js}"
        );
        assert!(
            js.contains(&format!("process.env.COORD_BIN || {bin};")),
            "{client}"
        );
        assert!(
            js.contains("do not work around it"),
            "{client}: instructions"
        );
        // Line for line the plugin init writes, but for those lines.
        let differ = js.lines().zip(init.lines()).filter(|(a, b)| a != b).count();
        assert_eq!(js.lines().count(), init.lines().count(), "{client}");
        assert!(differ <= 5, "{client}: {differ} lines differ");
        let pkg = read_json(&out.join(client).join("package.json"));
        assert_eq!(pkg["name"], "coord");
        assert_eq!(pkg["type"], "module");
    }
    let oc = read_json(&out.join("opencode/package.json"));
    assert_eq!(oc["main"], "coord.js");
    let oc_js = std::fs::read_to_string(out.join("opencode/coord.js")).unwrap();
    assert!(
        oc_js.contains(&format!(
            "const MCP = {{\"type\":\"local\",\"command\":[{bin},\"mcp\",\"--plugin\"]"
        )),
        "OpenCode's plugin adds the MCP server"
    );
    let cl = read_json(&out.join("cline/package.json"));
    assert_eq!(cl["cline"]["plugins"][0]["paths"][0], "./coord.js");
}

// --- the real clients -------------------------------------------------------------------

/// The client named by `var`, or why the test is skipped.
fn client(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("skipped: set {var} to the client's binary to run this test");
            None
        }
    }
}

/// A scratch HOME for a client: nothing of the user's, no network chatter.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("coord-home-")
            .tempdir()
            .unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        let work = home.join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        Home {
            _dir: dir,
            home,
            work,
        }
    }

    fn run(&self, bin: &Path, args: &[&str]) -> Output {
        let out = Command::new(bin)
            .args(args)
            .current_dir(&self.work)
            .env("HOME", &self.home)
            .env("CODEX_HOME", self.home.join(".codex"))
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("NO_COLOR", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env_remove("COPILOT_GITHUB_TOKEN")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} {args:?} failed: {}{}",
            bin.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The client's configuration: every file under HOME except logs, caches and the
    /// client's own bookkeeping, with its content.
    fn config(&self) -> BTreeMap<String, String> {
        tree(&self.home)
            .into_iter()
            .filter(|(k, _)| {
                let skip = [
                    "work/",
                    ".cache/",
                    "/logs/",
                    "/debug/",
                    "/cache/",
                    "/telemetry/",
                    "/backups/",
                    "/tmp/",
                    "/history/",
                    "/sessions/",
                    ".lock",
                    "installation_id",
                    "projects.json",
                    ".claude.json",
                    "statsig",
                    "session-state",
                ];
                !skip.iter().any(|s| k.contains(s) || k.starts_with(s))
            })
            .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
            .collect()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Files that name the plugin folder or the coord binary: what would keep coord running.
fn mentions(config: &BTreeMap<String, String>, needles: &[&str]) -> Vec<String> {
    config
        .iter()
        .filter(|(_, v)| needles.iter().any(|n| v.contains(n)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Install the plugin from `folder` with the client's own commands, check the client lists
/// it, remove it with the client's commands, and check that the configuration holds nothing
/// of coord's. `settle` is a harmless command run first, so the client has made its own
/// files before the "before" snapshot.
fn install_and_remove(
    bin: &Path,
    client: &str,
    settle: &[&str],
    install: &[&[&str]],
    list: &[&str],
    uninstall: &[&[&str]],
) -> (Home, BTreeMap<String, String>, BTreeMap<String, String>) {
    let env = Env::new();
    let plugins = env.path("plugins");
    write_plugins(&env, &plugins, Some(client));
    let folder = plugins.join(client);
    let folder_s = folder.display().to_string();
    let home = Home::new();
    home.run(bin, settle);
    let before = home.config();
    for cmd in install {
        let args: Vec<&str> = cmd
            .iter()
            .map(|a| if *a == "{dir}" { folder_s.as_str() } else { a })
            .collect();
        home.run(bin, &args);
    }
    let listed = text(&home.run(bin, list));
    assert!(
        listed.contains("coord"),
        "{client} does not list coord: {listed}"
    );
    for cmd in uninstall {
        home.run(bin, cmd);
    }
    let after = home.config();
    let left = mentions(&after, &[&folder_s, &coord_path()]);
    assert!(
        left.is_empty(),
        "{client}: after uninstall these still name coord's plugin: {left:?}"
    );
    (home, before, after)
}

#[test]
fn claude_validates_installs_and_removes_the_plugin() {
    let Some(bin) = client("COORD_TEST_CLAUDE") else {
        return;
    };
    let env = Env::new();
    let plugins = env.path("plugins");
    write_plugins(&env, &plugins, Some("claude"));
    let home = Home::new();
    for dir in [plugins.join("claude"), plugins.join("claude/coord")] {
        let out = home.run(
            &bin,
            &["plugin", "validate", "--strict", &dir.to_string_lossy()],
        );
        assert!(text(&out).contains("Validation passed"), "{}", text(&out));
    }
    let (_home, before, after) = install_and_remove(
        &bin,
        "claude",
        &["plugin", "list"],
        &[
            &["plugin", "marketplace", "add", "{dir}"],
            &["plugin", "install", "coord@coord"],
        ],
        &["plugin", "list"],
        &[
            &["plugin", "uninstall", "coord@coord"],
            &["plugin", "marketplace", "remove", "coord"],
        ],
    );
    // Claude Code leaves its settings with empty tables where it had none.
    for (file, content) in &after {
        if before.get(file) != Some(content) {
            let v: Value = serde_json::from_str(content).unwrap_or(Value::Null);
            let empty = v.as_object().is_some_and(|m| {
                m.values().all(|x| {
                    x.as_object().is_some_and(|o| o.is_empty()) || x == &serde_json::json!(2)
                })
            });
            assert!(empty, "{file} changed: {content}");
        }
    }
}

#[test]
fn codex_installs_and_removes_the_plugin() {
    let Some(bin) = client("COORD_TEST_CODEX") else {
        return;
    };
    let (_home, before, after) = install_and_remove(
        &bin,
        "codex",
        &["plugin", "marketplace", "list"],
        &[
            &["plugin", "marketplace", "add", "{dir}"],
            &["plugin", "add", "coord@coord"],
        ],
        &["plugin", "list"],
        &[
            &["plugin", "remove", "coord@coord"],
            &["plugin", "marketplace", "remove", "coord"],
        ],
    );
    let config =
        |m: &BTreeMap<String, String>| m.get(".codex/config.toml").cloned().unwrap_or_default();
    assert_eq!(config(&after).trim(), config(&before).trim());
}

#[test]
fn gemini_validates_installs_and_removes_the_extension() {
    let Some(bin) = client("COORD_TEST_GEMINI") else {
        return;
    };
    let env = Env::new();
    let plugins = env.path("plugins");
    write_plugins(&env, &plugins, Some("gemini"));
    let home = Home::new();
    let out = home.run(
        &bin,
        &[
            "extensions",
            "validate",
            &plugins.join("gemini").to_string_lossy(),
        ],
    );
    assert!(
        text(&out).contains("successfully validated"),
        "{}",
        text(&out)
    );
    let (_home, before, after) = install_and_remove(
        &bin,
        "gemini",
        &["extensions", "list"],
        &[&["extensions", "install", "{dir}", "--consent"]],
        &["extensions", "list"],
        &[&["extensions", "uninstall", "coord"]],
    );
    // Gemini CLI keeps a signed integrity record of every extension it ever installed, makes
    // its encrypted keystore on first install and leaves an empty enablement table; those
    // aside, the configuration is as before.
    let strip = |m: &BTreeMap<String, String>| {
        m.iter()
            .filter(|(k, v)| {
                !k.ends_with("extension_integrity.json")
                    && !k.ends_with("gemini-credentials.json")
                    && v.trim() != "{}"
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(strip(&after), strip(&before));
    assert!(!_home.home.join(".gemini/extensions/coord").exists());
}

#[test]
fn copilot_installs_and_removes_the_plugin() {
    let Some(bin) = client("COORD_TEST_COPILOT") else {
        return;
    };
    let (_home, _before, after) = install_and_remove(
        &bin,
        "copilot",
        &["plugin", "marketplace", "list"],
        &[
            &["plugin", "marketplace", "add", "{dir}"],
            &["plugin", "install", "coord@coord"],
        ],
        &["plugin", "list"],
        &[
            &["plugin", "uninstall", "coord@coord"],
            &["plugin", "marketplace", "remove", "coord"],
        ],
    );
    // Copilot CLI records a plugin of a local marketplace as disabled when it is uninstalled
    // (`"coord@coord": false`); nothing of coord's is enabled or known any more.
    for (file, content) in &after {
        assert!(
            !content.contains("\"coord@coord\": true") && !content.contains("\"coord\": {"),
            "{file} still enables coord: {content}"
        );
    }
}

#[test]
fn qwen_installs_and_removes_the_extension() {
    let Some(bin) = client("COORD_TEST_QWEN") else {
        return;
    };
    let (home, before, after) = install_and_remove(
        &bin,
        "qwen",
        &["extensions", "list"],
        &[&["extensions", "install", "{dir}", "--consent"]],
        &["extensions", "list"],
        &[&["extensions", "uninstall", "coord"]],
    );
    // Qwen Code leaves an empty enablement table; that aside, the configuration is as before.
    let strip = |m: &BTreeMap<String, String>| {
        m.iter()
            .filter(|(_, v)| v.trim() != "{}")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(strip(&after), strip(&before));
    assert!(!home.home.join(".qwen/extensions/coord").exists());
}

/// Cline installs the plugin package with `cline plugin install`; `cline plugin uninstall`
/// leaves nothing naming coord.
#[test]
fn cline_installs_and_removes_the_plugin() {
    let Some(bin) = client("COORD_TEST_CLINE") else {
        return;
    };
    let env = Env::new();
    let plugins = env.path("plugins");
    write_plugins(&env, &plugins, Some("cline"));
    let home = Home::new();
    let folder = plugins.join("cline").display().to_string();
    home.run(&bin, &["plugin", "install", &folder]);
    let installed = home.config();
    assert!(
        installed
            .iter()
            .any(|(k, v)| k.ends_with("/coord.js") && v.contains("\"--plugin\"")),
        "the plugin is installed: {:?}",
        installed.keys()
    );
    home.run(&bin, &["plugin", "uninstall", "coord"]);
    let left = mentions(
        &home.config(),
        &[&folder, &coord_path(), "coord hook cline"],
    );
    assert!(left.is_empty(), "still naming coord: {left:?}");
}

/// OpenCode installs the plugin package from its folder with `opencode plugin -g`, listing it
/// in the user's configuration.
#[test]
fn opencode_installs_the_plugin() {
    let Some(bin) = client("COORD_TEST_OPENCODE") else {
        return;
    };
    let env = Env::new();
    let plugins = env.path("plugins");
    write_plugins(&env, &plugins, Some("opencode"));
    let home = Home::new();
    let folder = plugins.join("opencode").display().to_string();
    home.run(&bin, &["plugin", "-g", &folder]);
    let config = home.config();
    let listed = mentions(&config, &[&folder]);
    assert!(
        listed
            .iter()
            .any(|k| k.starts_with(".config/opencode/opencode.json")),
        "{config:?}"
    );
}

/// Two real Claude Code sessions (scripted model on 127.0.0.1) in a fresh git repository with
/// no `coord init`, coordinated by the installed plugin alone: the second session's Write is
/// denied naming the first, the reason reaches the model, the first one's Stop releases the
/// lock, `git status` shows nothing of coord's; then the plugin is removed with Claude's own
/// commands.
#[test]
fn two_claude_sessions_coordinate_through_the_installed_plugin_alone() {
    use crate::e2e::{FakeModel, release, script};
    use std::time::{Duration, Instant};
    let Some(bin) = client("COORD_TEST_CLAUDE") else {
        return;
    };
    let env = fresh_repo();
    let scratch = tempfile::tempdir().unwrap();
    let model = FakeModel::start("fake_anthropic.py", scratch.path());
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let plugins = scratch.path().join("plugins");
    write_plugins(&env, &plugins, Some("claude"));
    let claude_cmd = |args: &[&str]| {
        let out = Command::new(&bin)
            .args(args)
            .current_dir(scratch.path())
            .env("HOME", &home)
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "claude {args:?}: {out:?}");
    };
    claude_cmd(&[
        "plugin",
        "marketplace",
        "add",
        &plugins.join("claude").to_string_lossy(),
    ]);
    claude_cmd(&["plugin", "install", "coord@coord"]);

    let proj = env.root();
    // `claude -p PROMPT` as one session, offline against the scripted model.
    let session = |prompt: &str, id: &str| {
        let mut c = Command::new(&bin);
        c.current_dir(proj)
            .args(["-p", prompt, "--session-id", id, "--allowedTools"])
            .args(["Read", "Write", "Edit", "Bash", "mcp__coord"])
            .env("HOME", &home)
            .env("PATH", crate::e2e::path_with_coord())
            .env("ANTHROPIC_BASE_URL", model.url())
            .env("ANTHROPIC_API_KEY", "sk-ant-coord-e2e")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env_remove("COORD_AGENT")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env_remove("CLAUDECODE")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c
    };
    let out = proj.join("out.txt");
    let out_s = out.to_string_lossy().to_string();
    let flag = scratch.path().join("release-a");
    let prompt_a = script(serde_json::json!([
        {"write": [out_s, "from A"]},
        {"hold": flag.to_string_lossy()},
    ]));
    let a = session(&prompt_a, "a1a1a1a1-0000-4000-8000-000000000011")
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(env.exists("out.txt.lock.claude-a1a1a1a1") && env.exists("out.txt")) {
        assert!(
            Instant::now() < deadline,
            "session A never wrote out.txt through the plugin's hook"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let prompt_b = script(serde_json::json!([{"write": [out_s, "from B"]}]));
    let b = session(&prompt_b, "b2b2b2b2-0000-4000-8000-000000000022")
        .output()
        .unwrap();
    assert!(b.status.success(), "session B: {b:?}");
    assert_eq!(
        env.read("out.txt"),
        "from A",
        "the denied Write did not happen"
    );
    assert!(
        !model.results_containing("claude-a1a1a1a1").is_empty(),
        "no denial naming the holder reached the model: {:?}",
        model.requests()
    );
    release(&flag);
    let a = a.wait_with_output().unwrap();
    assert!(a.status.success(), "session A: {a:?}");
    assert!(
        !env.exists("out.txt.lock.claude-a1a1a1a1"),
        "A's Stop released its lock"
    );
    // Nothing of coord's in `git status`: only the file the sessions wrote.
    assert_eq!(
        git(proj, &["status", "--porcelain", "--untracked-files=all"]),
        "?? out.txt\n"
    );
    claude_cmd(&["plugin", "uninstall", "coord@coord"]);
    claude_cmd(&["plugin", "marketplace", "remove", "coord"]);
    let settings = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap_or_default();
    assert!(!settings.contains("coord@coord"), "{settings}");
}

/// A real Gemini CLI session (scripted model on 127.0.0.1) in a repository nobody set up, with
/// coord only as an installed extension: its edit of a file another agent holds is denied, the
/// reason reaches the model, `git status` shows nothing of coord's; then the extension is
/// removed with Gemini's own command.
#[test]
fn a_gemini_session_is_coordinated_by_the_installed_extension_alone() {
    use crate::scripted::{Lab, script};
    let Some(bin) = client("COORD_TEST_GEMINI") else {
        return;
    };
    let lab = Lab::new("gemini", "fake_gemini.py");
    let root = lab.root().to_path_buf();
    // Take back what the lab's `coord init` wrote: a repository nobody set up.
    let run_git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("HOME", &lab.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run_git(&[
        "rm",
        "-rq",
        ".gemini",
        "GEMINI.md",
        "AGENTS.md",
        ".gitignore",
    ]);
    run_git(&["commit", "-qm", "no coord here"]);
    std::fs::remove_dir_all(root.join(".coord")).unwrap();
    assert_eq!(
        run_git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );

    let dot = lab.home.join(".gemini");
    std::fs::create_dir_all(&dot).unwrap();
    let settings = serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    });
    std::fs::write(dot.join("settings.json"), settings.to_string()).unwrap();
    let trusted = serde_json::json!({ root.display().to_string(): "TRUST_FOLDER" });
    std::fs::write(dot.join("trustedFolders.json"), trusted.to_string()).unwrap();
    let plugins = lab.scratch.path().join("plugins");
    write_plugins(&lab.env, &plugins, Some("gemini"));
    let gem = |args: &[&str]| {
        let out = lab
            .command(&bin)
            .args(args)
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .output()
            .unwrap();
        assert!(out.status.success(), "gemini {args:?}: {out:?}");
        text(&out)
    };
    gem(&[
        "extensions",
        "install",
        &plugins.join("gemini").to_string_lossy(),
        "--consent",
    ]);

    // Another agent holds target.txt (taken by hand, before any hook ran here).
    lab.env.agent("claude-x").args(["lock", "target.txt"]).ok();
    let target = root.join("target.txt").display().to_string();
    let prompt = script(
        serde_json::json!([["write_file", {"file_path": target, "content": "from gemini\n"}]]),
        None,
    );
    let mut c = lab.command(&bin);
    c.args(["-p", &prompt, "--yolo"])
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", lab.port),
        )
        .env("GEMINI_API_KEY", "coord-e2e-key");
    lab.spawn(c, "denied").ok();
    assert_eq!(
        lab.env.read("target.txt"),
        "old line\n",
        "the edit was denied"
    );
    let needle = serde_json::to_string(&prompt).unwrap();
    let seen = lab
        .requests_with(&needle[1..needle.len() - 1])
        .iter()
        .any(|r| r.to_string().contains("Tool execution blocked: coord:"));
    assert!(seen, "the deny reached the model");
    lab.env
        .agent("claude-x")
        .args(["unlock", "target.txt"])
        .ok();
    assert_eq!(
        run_git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    gem(&["extensions", "uninstall", "coord"]);
    assert!(!dot.join("extensions/coord").exists());
}

/// A real Copilot CLI session (scripted model on 127.0.0.1) in a repository nobody set up, with
/// coord only as an installed plugin: its `create` of a file another agent holds is denied, the
/// reason reaches the model, `git status` shows nothing of coord's; then the plugin is removed
/// with Copilot's own commands.
#[test]
fn a_copilot_session_is_coordinated_by_the_installed_plugin_alone() {
    use crate::scripted::{Lab, script};
    let Some(bin) = client("COORD_TEST_COPILOT") else {
        return;
    };
    let lab = Lab::new("copilot", "fake_openai_chat.py");
    let root = lab.root().to_path_buf();
    let run_git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("HOME", &lab.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Take back what the lab's `coord init` wrote: a repository nobody set up.
    run_git(&[
        "rm",
        "-rq",
        ".github",
        ".mcp.json",
        "AGENTS.md",
        ".gitignore",
    ]);
    run_git(&["commit", "-qm", "no coord here"]);
    std::fs::remove_dir_all(root.join(".coord")).unwrap();
    assert_eq!(
        run_git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );

    let dot = lab.home.join(".copilot");
    std::fs::create_dir_all(&dot).unwrap();
    let config = serde_json::json!({ "trustedFolders": [root.display().to_string()] });
    std::fs::write(dot.join("config.json"), config.to_string()).unwrap();
    let cache = std::env::var_os("COPILOT_PKG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/copilot")))
        .unwrap_or_else(std::env::temp_dir);
    let plugins = lab.scratch.path().join("plugins");
    write_plugins(&lab.env, &plugins, Some("copilot"));
    let cop = |args: &[&str]| {
        let out = lab
            .command(&bin)
            .args(args)
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_AUTO_UPDATE", "false")
            .env("COPILOT_PKG_CACHE_HOME", &cache)
            .output()
            .unwrap();
        assert!(out.status.success(), "copilot {args:?}: {out:?}");
        text(&out)
    };
    cop(&[
        "plugin",
        "marketplace",
        "add",
        &plugins.join("copilot").to_string_lossy(),
    ]);
    cop(&["plugin", "install", "coord@coord"]);

    lab.env.agent("claude-x").args(["lock", "target.txt"]).ok();
    let target = root.join("target.txt").display().to_string();
    let prompt = script(
        serde_json::json!([["create", {"path": target, "file_text": "from copilot\n"}]]),
        None,
    );
    let mut c = lab.command(&bin);
    c.args(["-p", &prompt, "--allow-all-tools"])
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_PKG_CACHE_HOME", &cache)
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{}/v1", lab.port),
        )
        .env("COPILOT_PROVIDER_API_KEY", "coord-e2e-key")
        .env("COPILOT_MODEL", "gpt-4.1");
    lab.spawn(c, "denied").ok();
    assert_eq!(
        lab.env.read("target.txt"),
        "old line\n",
        "the edit was denied"
    );
    let needle = serde_json::to_string(&prompt).unwrap();
    let seen = lab
        .requests_with(&needle[1..needle.len() - 1])
        .iter()
        .any(|r| r.to_string().contains("Denied by preToolUse hook: coord:"));
    assert!(seen, "the deny reached the model");
    lab.env
        .agent("claude-x")
        .args(["unlock", "target.txt"])
        .ok();
    assert_eq!(
        run_git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    cop(&["plugin", "uninstall", "coord@coord"]);
    cop(&["plugin", "marketplace", "remove", "coord"]);
}
