//! Plugins installed into the real clients: each client validates, installs and removes its
//! plugin (or extension) with its own commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::clients::plugin::{client, coord_path, text, tree, write_plugins};
use crate::support::Env;

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
