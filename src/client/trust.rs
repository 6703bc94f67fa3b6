//! What makes each client run a folder's hooks (its own trust gate), read from its config files
//! and environment, and the one step that opens the gate, for `coord init` and `coord doctor`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::HooksRun::{No, Unknown, Yes};
use super::Trust;

/// A verdict, or one reached early (`Err`, for `?`).
type Verdict = Result<Trust, Trust>;

/// `VAR` when set and not empty.
fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `VAR` when set and not empty, else `under_home` under the home folder (`HOME`).
fn dir_from_env(var: &str, under_home: &str) -> Option<PathBuf> {
    env_path(var).or_else(|| env_path("HOME").map(|h| h.join(under_home)))
}

/// Read and parse a client's config file of at most `cap` bytes: the verdict `missing` when it
/// does not exist, `Unknown` with why when it cannot be read or parsed.
fn read_file<T>(
    path: &Path,
    cap: u64,
    missing: Trust,
    parse: impl FnOnce(&str) -> std::result::Result<T, String>,
) -> Result<T, Trust> {
    let why = match crate::fsutil::read_capped(path, cap) {
        Ok(b) => match parse(&String::from_utf8_lossy(&b)) {
            Ok(v) => return Ok(v),
            Err(e) => format!("{} cannot be parsed: {e}", path.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing),
        Err(e) => format!("cannot read {}: {e}", path.display()),
    };
    Err(Trust::new(Unknown, why))
}

/// Read a client's JSON config file (`comments`: JSON with `//` and `/* */` comments).
fn read_config(path: &Path, comments: bool, missing: Trust) -> Result<Value, Trust> {
    read_file(path, 256 * 1024 * 1024, missing, |text| {
        if !comments {
            return serde_json::from_str(text).map_err(|e| e.to_string());
        }
        jsonc_parser::cst::CstRootNode::parse(text, &Default::default())
            .map_err(|e| e.to_string())
            .and_then(|root| root.to_serde_value().ok_or_else(|| "empty".to_string()))
    })
}

/// `path` and each folder above it, nearest first, as strings.
fn self_and_ancestors(path: &Path) -> impl Iterator<Item = String> + '_ {
    path.ancestors().map(|p| p.to_string_lossy().into_owned())
}

fn missing(path: &Path) -> Trust {
    let path = path.display();
    Trust::new(
        No,
        format!("{path} does not exist: no folder is trusted yet"),
    )
}

fn untrusted(path: &Path) -> Trust {
    Trust::new(No, format!("{} does not trust this folder", path.display()))
}

fn no_home(what: &str) -> Trust {
    Trust::new(Unknown, format!("no home folder (HOME) to find {what}"))
}

/// Claude Code's global config: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
pub fn claude_config() -> Option<PathBuf> {
    dir_from_env("CLAUDE_CONFIG_DIR", "").map(|d| d.join(".claude.json"))
}

/// Claude Code drops a project's hooks until the folder (or one above it) is trusted:
/// `projects[PATH].hasTrustDialogAccepted` in its global config.
pub fn claude(root: &Path) -> Verdict {
    let path = claude_config().ok_or_else(|| no_home("~/.claude.json"))?;
    trusted_in(root, &path, false, |config, dir| {
        config["projects"][dir]["hasTrustDialogAccepted"] == Value::Bool(true)
    })
}

/// The verdict of the JSON config `path` (`comments`: with comments) that trusts `root` when
/// `trusts` says so of it or a folder above it.
fn trusted_in(
    root: &Path,
    path: &Path,
    comments: bool,
    trusts: impl Fn(&Value, &str) -> bool,
) -> Verdict {
    let config = read_config(path, comments, missing(path))?;
    let trusted = self_and_ancestors(root).find(|d| trusts(&config, d));
    Ok(match trusted {
        Some(dir) => Trust::new(Yes, format!("{} trusts {dir}", path.display())),
        None => untrusted(path),
    })
}

/// Codex runs a folder's hooks only when the folder is trusted (`[projects."PATH"]
/// trust_level = "trusted"`) and each hook was reviewed (`[hooks.state."FILE:EVENT:GROUP:HOOK"]
/// trusted_hash`), both in `$CODEX_HOME/config.toml`.
pub fn codex(root: &Path) -> Verdict {
    let path = dir_from_env("CODEX_HOME", ".codex").ok_or_else(|| no_home("~/.codex"))?;
    let path = path.join("config.toml");
    let doc = read_file(&path, 64 * 1024 * 1024, missing(&path), |text| {
        text.parse::<toml_edit::DocumentMut>()
            .map_err(|e| e.to_string())
    })?;
    let level = self_and_ancestors(root).find_map(|d| {
        let level = doc.get("projects")?.get(d.as_str())?.get("trust_level")?;
        Some((level.as_str()?.to_string(), d))
    });
    match level {
        Some((l, _)) if l == "trusted" => {}
        Some((l, d)) => {
            let why = format!("{} sets trust_level = \"{l}\" for {d}", path.display());
            return Err(Trust::new(No, why));
        }
        None => return Err(untrusted(&path)),
    }
    let keys = codex_hook_keys(root);
    let state = doc.get("hooks").and_then(|h| h.get("state"));
    let reviewed = |s: &&toml_edit::Item| {
        let hash = s.get("trusted_hash").and_then(|h| h.as_str());
        hash.is_some_and(|h| !h.is_empty())
            && s.get("enabled").and_then(|e| e.as_bool()) != Some(false)
    };
    let states = keys.iter().filter_map(|k| state?.get(k.as_str()));
    let trusted = states.filter(reviewed).count();
    let (config, all) = (path.display(), keys.len());
    Ok(if trusted == all {
        let why = format!(
            "{config} trusts this folder and all {all} of coord's hooks (Codex asks again for a hook that changed)"
        );
        Trust::new(Yes, why)
    } else {
        let why = format!("{config} trusts this folder but only {trusted} of coord's {all} hooks");
        Trust::new(No, why)
    })
}

/// The keys under which Codex records the review of each of coord's hooks in
/// `.codex/hooks.json`: `/abs/.codex/hooks.json:pre_tool_use:GROUP:HOOK`.
fn codex_hook_keys(root: &Path) -> Vec<String> {
    let file = root.join(".codex/hooks.json");
    let doc = read_config(&file, false, missing(&file)).unwrap_or_default();
    let mut keys = Vec::new();
    for (event, groups) in doc["hooks"].as_object().into_iter().flatten() {
        // `PreToolUse` → `pre_tool_use`.
        let mut snake = String::new();
        for (i, c) in event.chars().enumerate() {
            snake.extend((i > 0 && c.is_ascii_uppercase()).then_some('_'));
            snake.push(c.to_ascii_lowercase());
        }
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            for (h, hook) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                let command = hook["command"].as_str().unwrap_or_default();
                if command.trim().starts_with("coord hook codex") {
                    keys.push(format!("{}:{snake}:{g}:{h}", file.display()));
                }
            }
        }
    }
    keys
}

/// `~/.gemini` (`GEMINI_CLI_HOME` replaces the home folder).
fn gemini_dir() -> Option<PathBuf> {
    dir_from_env("GEMINI_CLI_HOME", "").map(|h| h.join(".gemini"))
}

/// Gemini CLI's or Qwen Code's trusted-folders file: `var`, else `trustedFolders.json` in `dir`.
fn trusted_folders(var: &str, dir: Option<PathBuf>) -> Option<PathBuf> {
    env_path(var).or_else(|| dir.map(|d| d.join("trustedFolders.json")))
}

/// Gemini CLI's trusted-folders file.
pub fn gemini_folders() -> Option<PathBuf> {
    trusted_folders("GEMINI_CLI_TRUSTED_FOLDERS_PATH", gemini_dir())
}

/// Qwen Code's trusted-folders file.
pub fn qwen_folders() -> Option<PathBuf> {
    trusted_folders("QWEN_CODE_TRUSTED_FOLDERS_PATH", qwen_dir())
}

/// The system settings (`var`, else `system`) and user settings (in `dir`) that can be read,
/// with their `security.folderTrust.enabled`.
fn folder_trust(var: &str, system: &str, dir: Option<PathBuf>) -> Vec<(PathBuf, Value)> {
    let system = env_path(var).unwrap_or_else(|| PathBuf::from(system));
    [Some(system), dir.map(|d| d.join("settings.json"))]
        .into_iter()
        .flatten()
        .filter_map(|path| {
            let v = read_config(&path, true, missing(&path)).ok()?;
            Some((path, v["security"]["folderTrust"]["enabled"].clone()))
        })
        .collect()
}

/// The rules of the trusted-folders file `path` whose folder holds `root` (its own, or its
/// parent for `TRUST_PARENT`), in file order: rule and level (`Err`: the verdict when they
/// cannot be had; `missing`: the verdict when the file does not exist).
fn holding(root: &Path, path: &Path, missing: Trust) -> Result<Vec<(String, String)>, Trust> {
    let Value::Object(rules) = read_config(path, true, missing)? else {
        let why = format!("{} is not a JSON object", path.display());
        return Err(Trust::new(Unknown, why));
    };
    let level = |v: Value| v.as_str().unwrap_or_default().to_string();
    let holds = |(rule, level): &(String, String)| {
        let own = Path::new(rule);
        let folder = match level.as_str() {
            "TRUST_PARENT" => own.parent().unwrap_or(own),
            _ => own,
        };
        self_and_ancestors(root).any(|d| Path::new(&d) == folder)
    };
    let rules = rules.into_iter().map(|(rule, v)| (rule, level(v)));
    Ok(rules.filter(holds).collect())
}

/// Gemini CLI ignores a folder's `.gemini/settings.json` (hooks included) unless folder
/// trust is off or the folder is trusted: `GEMINI_CLI_TRUST_WORKSPACE`, then
/// `security.folderTrust.enabled` in the user and system settings, then the longest
/// matching rule of `trustedFolders.json`.
pub fn gemini(root: &Path) -> Verdict {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let workspace = env("GEMINI_CLI_TRUST_WORKSPACE");
    if env("GEMINI_RESTRICTED_MODE") == "true" || workspace == "false" {
        let why = "the environment sets restricted mode or GEMINI_CLI_TRUST_WORKSPACE=false";
        return Err(Trust::new(No, why));
    }
    if workspace == "true" {
        return Err(Trust::new(Yes, "GEMINI_CLI_TRUST_WORKSPACE=true"));
    }
    let settings = folder_trust(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        "/etc/gemini-cli/settings.json",
        gemini_dir(),
    );
    if let Some((off, _)) = settings.iter().find(|(_, on)| *on == Value::Bool(false)) {
        let why = format!("folder trust is off in {}", off.display());
        return Err(Trust::new(Yes, why));
    }
    let path = gemini_folders().ok_or_else(|| no_home("~/.gemini"))?;
    let rules = holding(root, &path, missing(&path))?;
    // The longest rule decides (the first of equal length).
    let best = rules
        .iter()
        .min_by_key(|(rule, _)| std::cmp::Reverse(rule.len()));
    let file = path.display();
    Ok(match best.map(|(rule, level)| (rule, level.as_str())) {
        Some((rule, "TRUST_FOLDER" | "TRUST_PARENT")) => {
            Trust::new(Yes, format!("{file} trusts {rule}"))
        }
        Some((rule, level)) => Trust::new(No, format!("{file} says {level} for {rule}")),
        None => untrusted(&path),
    })
}

/// Copilot's config (JSON with comments): `$COPILOT_HOME/config.json`, else `~/.copilot/`'s.
pub fn copilot_config() -> Option<PathBuf> {
    dir_from_env("COPILOT_HOME", ".copilot").map(|d| d.join("config.json"))
}

/// Copilot CLI runs a repository's hooks only in a trusted folder: `COPILOT_ALLOW_ALL=true`,
/// or the folder (or one above it) in `trustedFolders` of its config.
pub fn copilot(root: &Path) -> Verdict {
    if std::env::var("COPILOT_ALLOW_ALL").as_deref() == Ok("true") {
        return Ok(Trust::new(Yes, "COPILOT_ALLOW_ALL=true"));
    }
    let path = copilot_config().ok_or_else(|| no_home("~/.copilot"))?;
    trusted_in(root, &path, true, |config, dir| {
        let trusted = config["trustedFolders"].as_array().into_iter().flatten();
        (trusted.filter_map(Value::as_str)).any(|t| Path::new(t) == Path::new(dir))
    })
}

/// `~/.qwen` (`QWEN_HOME` replaces it).
fn qwen_dir() -> Option<PathBuf> {
    dir_from_env("QWEN_HOME", ".qwen")
}

/// Qwen Code loads a folder's hooks unless folder trust is on (`security.folderTrust.enabled`
/// in the user or system settings; off by default) and the folder is not trusted.
pub fn qwen(root: &Path) -> Verdict {
    let settings = folder_trust(
        "QWEN_CODE_SYSTEM_SETTINGS_PATH",
        "/etc/qwen-code/settings.json",
        qwen_dir(),
    );
    let Some((settings, _)) = settings.iter().rfind(|(_, on)| *on == Value::Bool(true)) else {
        return Ok(Trust::new(Yes, "folder trust is off (Qwen Code's default)"));
    };
    let path = qwen_folders().ok_or_else(|| no_home("~/.qwen"))?;
    let on = |what: String| {
        let why = format!("{} turns folder trust on and {what}", settings.display());
        Trust::new(No, why)
    };
    let missing = on(format!("{} does not exist", path.display()));
    let rules = holding(root, &path, missing)?;
    // Any trusting rule trusts it.
    let trusted =
        (rules.iter()).find(|(_, l)| matches!(l.as_str(), "TRUST_FOLDER" | "TRUST_PARENT"));
    Ok(match trusted {
        Some((rule, _)) => Trust::new(Yes, format!("{} trusts {rule}", path.display())),
        None => on(format!("{} does not trust this folder", path.display())),
    })
}
