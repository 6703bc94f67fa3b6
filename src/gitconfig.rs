//! The few settings coord reads from git's config files, read as git reads them, without
//! running git: `coord.enabled` (the plugin's switch) and `core.excludesFile` (the user's own
//! ignore rules, which the views' walk honours as `git status` does).

use std::path::{Path, PathBuf};

use crate::fsutil;

/// Config files larger than this are not read (a config is a few hundred bytes).
pub(crate) const MAX_CONFIG: u64 = 16 * 1024 * 1024;

/// The value of `section.key` in config `text` (`Some(None)`: a bare `key`, a boolean true).
pub fn last_value(text: &str, section: &str, key: &str) -> Option<Option<String>> {
    let mut in_section = false;
    let mut found = None;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let Some((name, rest)) = header.split_once(']') else {
                in_section = false;
                continue;
            };
            in_section = !name.contains('"') && name.trim().eq_ignore_ascii_case(section);
            // `[core] excludesFile = …` on one line.
            line = rest.trim();
        }
        if in_section && let Some(value) = setting(line, key) {
            found = Some(value);
        }
    }
    found
}

/// The value of `key = VALUE` (`Some(None)` for a bare `key`); `None` for another key.
fn setting(line: &str, key: &str) -> Option<Option<String>> {
    let (name, value) = match line.split_once('=') {
        Some((name, value)) => (name.trim().to_string(), Some(value)),
        None => (unquoted(line), None),
    };
    (!name.is_empty() && name.eq_ignore_ascii_case(key)).then(|| value.map(unquoted))
}

/// A value as git reads it: comments cut, surrounding blanks trimmed, quotes removed and the
/// escapes `\"`, `\\`, `\t` and `\n` taken.
fn unquoted(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => break,
            '\\' => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            },
            _ => out.push(c),
        }
    }
    if quoted {
        out
    } else {
        out.trim_end().to_string()
    }
}

/// The value of `section.key` in the config file at `path` ([`last_value`]); `None`: unreadable.
pub fn file_value(path: &Path, section: &str, key: &str) -> Option<Option<String>> {
    let bytes = fsutil::read_capped(path, MAX_CONFIG).ok()?;
    last_value(&String::from_utf8_lossy(&bytes), section, key)
}

/// Git's config files for the repository whose common folder is `common`, in git's order.
pub fn config_files(common: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if std::env::var_os("GIT_CONFIG_NOSYSTEM").is_none_or(|v| v.is_empty() || v == "0") {
        files
            .push(env_path("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    }
    match std::env::var_os("GIT_CONFIG_GLOBAL") {
        // Set, it stands for both global files (empty: none at all).
        Some(global) => files.extend((!global.is_empty()).then(|| PathBuf::from(global))),
        None => {
            files.extend(config_home().map(|c| c.join("git").join("config")));
            files.extend(env_path("HOME").map(|h| h.join(".gitconfig")));
        }
    }
    files.push(common.join("config"));
    files
}

/// The user's own ignore file (`core.excludesFile`), as git finds it for the repository.
pub fn excludes_file(common: &Path) -> Option<PathBuf> {
    let set = config_files(common).iter().rev().find_map(|f| {
        file_value(f, "core", "excludesFile")
            .flatten()
            .filter(|v| !v.is_empty())
    });
    let default = || config_home().map(|c| c.join("git").join("ignore"));
    set.map(|value| expand_home(&value)).or_else(default)
}

/// `~/…` with the home folder put in.
pub(crate) fn expand_home(value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), env_path("HOME")) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(value),
    }
}

/// A variable naming a path, when set and not empty.
fn env_path(var: &str) -> Option<PathBuf> {
    let value = std::env::var_os(var).filter(|v| !v.is_empty());
    value.map(PathBuf::from)
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_home() -> Option<PathBuf> {
    env_path("XDG_CONFIG_HOME").or_else(|| env_path("HOME").map(|h| h.join(".config")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sections and keys in any case, not in another section or a subsection; the last
    /// setting wins, a bare key is true; quotes, comments and escapes as git reads them.
    #[test]
    fn values_are_read_as_git_reads_them() {
        let some = |v: &str| Some(Some(v.to_string()));
        let ex = "core.excludesFile";
        let user = "[user]\n\tname = x\n[Core]\n\texcludesFile = ~/.gi\n";
        let cases = [
            (user, "core.excludesfile", some("~/.gi")),
            (user, "user.excludesfile", None),
            (
                "[alias]\nexcludesFile = a\n[core \"x\"]\nexcludesFile = b\n[core]\n",
                ex,
                None,
            ),
            (
                "[coord]\nenabled = false\n[other]\n[coord]\n  enabled\n",
                "coord.enabled",
                Some(None),
            ),
            (
                "[coord] enabled = false ; off\n",
                "coord.enabled",
                some("false"),
            ),
            (
                "[core]\n excludesFile = \"/a b/#c\" # the rules\n",
                ex,
                some("/a b/#c"),
            ),
            (
                "[core]\n excludesFile = /x\\\\y ; note\n",
                ex,
                some("/x\\y"),
            ),
            ("[core]\n# excludesFile = /z\n", ex, None),
        ];
        for (text, name, want) in cases {
            let (section, key) = name.split_once('.').unwrap();
            assert_eq!(last_value(text, section, key), want, "{text:?}");
        }
    }

    #[test]
    fn a_home_path_is_expanded() {
        if let Some(h) = env_path("HOME") {
            assert_eq!(expand_home("~/ig"), h.join("ig"));
        }
        assert_eq!(expand_home("/abs/ig"), PathBuf::from("/abs/ig"));
    }
}
