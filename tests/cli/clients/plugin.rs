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

pub(crate) fn coord_path() -> String {
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
pub(crate) fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
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
pub(crate) fn write_plugins(env: &Env, dir: &Path, client: Option<&str>) -> Ran {
    let mut cmd = env.cmd().args(["plugin", "write"]);
    if let Some(c) = client {
        cmd = cmd.args(["--client", c]);
    }
    cmd.arg(dir).ok()
}

/// A plugin's command as `coord init` writes it: `coord hook ...` without `--plugin`, nor the
/// `exec` before it.
fn as_init(cmd: &str) -> String {
    let bin = coord_path();
    let rest = cmd
        .strip_prefix("exec ")
        .unwrap_or(cmd)
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
                        // A shell becomes coord (`exec`); PowerShell has no `exec`.
                        assert_eq!(s.starts_with("exec "), k != "powershell", "{k}: {s}");
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
    // Every manifest names the plugin and carries this binary's version, and what it points
    // at is in the tree.
    for manifest in [
        "claude/coord/.claude-plugin/plugin.json",
        "codex/coord/.codex-plugin/plugin.json",
        "copilot/coord/.github/plugin/plugin.json",
        "gemini/gemini-extension.json",
        "qwen/qwen-extension.json",
        "opencode/package.json",
        "cline/package.json",
    ] {
        let v = read_json(&a.join(manifest));
        assert_eq!(v["name"], "coord", "{manifest}: {v}");
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{manifest}: {v}");
    }
    for (plugin, hooks) in [
        ("codex/coord", "./hooks/hooks.json"),
        ("copilot/coord", "hooks/hooks.json"),
    ] {
        let dir = a.join(plugin);
        let manifest = if plugin.starts_with("codex") {
            ".codex-plugin/plugin.json"
        } else {
            ".github/plugin/plugin.json"
        };
        let v = read_json(&dir.join(manifest));
        assert_eq!(v["hooks"], hooks, "{plugin}");
        for key in ["hooks", "mcpServers", "skills"] {
            let at = dir.join(v[key].as_str().unwrap());
            assert!(at.exists(), "{plugin}: {key} {}", at.display());
        }
    }
    for market in [
        "claude/.claude-plugin/marketplace.json",
        "copilot/.github/plugin/marketplace.json",
    ] {
        let v = read_json(&a.join(market));
        assert_eq!(v["plugins"][0]["name"], "coord", "{market}");
        assert_eq!(v["plugins"][0]["source"], "./coord", "{market}");
        assert_eq!(
            v["plugins"][0]["version"],
            env!("CARGO_PKG_VERSION"),
            "{market}"
        );
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
    env.cmd().args(["init", "--client", "all"]).ok();
    let out = env.path("plugins");
    write_plugins(&env, &out, None);
    let pairs = [
        (".claude/settings.json", "claude/coord/hooks/hooks.json", 7),
        (".codex/hooks.json", "codex/coord/hooks/hooks.json", 7),
        (".gemini/settings.json", "gemini/hooks/hooks.json", 7),
        (
            ".github/hooks/coord.json",
            "copilot/coord/hooks/hooks.json",
            6,
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
pub(crate) fn fresh_repo() -> Env {
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

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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
pub(crate) fn client(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("skipped: set {var} to the client's binary to run this test");
            None
        }
    }
}

pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
