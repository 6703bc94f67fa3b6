//! What a person meets on the first day, said the way the rest of coord says it: a `version`
//! command, durations written in words, times as `13:02 (3m ago)`, an error said once per mode,
//! a person cleaning up a STALE lock as themselves, a man page whose synopsis shows the values.
//! (Issue 30, item 8.)

use crate::support::Env;

#[test]
fn coord_version_prints_the_version() {
    let env = Env::new();
    let version = env!("CARGO_PKG_VERSION");
    let out = env.cmd().arg("version").ok();
    assert_eq!(out.stdout, format!("coord {version}\n"));
    let doc: serde_json::Value = env.cmd().args(["version", "--json"]).ok().json();
    assert_eq!(doc["version"], version);
    // The same as the flag.
    env.cmd()
        .arg("--version")
        .ok()
        .stdout_has(&format!("coord {version}"));
}

#[test]
fn durations_may_be_written_in_words() {
    let env = Env::new();
    env.agent("claude")
        .args(["lock", "a.md", "--wait", "5 minutes"])
        .ok();
    env.agent("claude")
        .args(["lock", "a.md", "--ttl", "1 hour 30 min"])
        .ok();
    let out = env
        .agent("gemini")
        .args(["lock", "a.md", "--wait", "1 sec"])
        .code(3);
    out.stderr_has("gave up waiting for `a.md` after 1s");
    let bad = env
        .agent("gemini")
        .args(["lock", "a.md", "--wait", "5 fortnights"])
        .code(2);
    bad.stderr_has("`5 fortnights`").stderr_has("minutes");
}

#[test]
fn who_says_times_like_status() {
    let env = Env::new();
    env.agent("claude").args(["lock", "a.md"]).ok();
    let out = env.cmd().args(["who", "a.md"]).ok();
    let line = out.stdout.lines().next().unwrap_or_default();
    // `a.md: held by claude since 13:02 (0s ago) [LIVE]`: no RFC 3339 time.
    let since = line
        .split(" since ")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    let hhmm = &since[..5];
    assert!(
        hhmm.as_bytes()[2] == b':' && hhmm.replace(':', "").bytes().all(|b| b.is_ascii_digit()),
        "{line}"
    );
    assert!(
        since[5..].starts_with(" (") && since.contains("s ago)"),
        "{line}"
    );
    assert!(!line.contains('T') || !line.contains("+"), "{line}");
    // The JSON keeps the full time.
    let doc: serde_json::Value = env.cmd().args(["who", "a.md", "--json"]).ok().json();
    assert!(
        doc["files"][0]["locks"][0]["locked_at"]
            .as_str()
            .is_some_and(|t| t.contains('T')),
        "{doc}"
    );
}

/// An error is said in one stream: the `error:` and `hint:` lines on stderr, or with `--json`
/// the error document on stdout and nothing on stderr.
#[test]
fn an_error_is_said_once_in_each_mode() {
    let env = Env::new();
    env.agent("claude").args(["lock", "a.md"]).ok();
    let plain = env
        .agent("gemini")
        .args(["lock", "a.md", "--no-wait"])
        .code(3);
    assert_eq!(plain.stdout, "");
    plain
        .stderr_has("error: lock on `a.md` is held by claude")
        .stderr_has("hint: ");
    let json = env
        .agent("gemini")
        .args(["lock", "a.md", "--no-wait", "--json"])
        .code(3);
    let doc: serde_json::Value = json.json();
    assert_eq!(doc["error"]["kind"], "lock_held");
    assert!(doc["error"]["hint"].is_string(), "{doc}");
    assert!(
        !json.stderr.contains("error:"),
        "said twice: {}",
        json.stderr
    );
    // A command line that cannot be parsed, too.
    let usage = env.cmd().args(["--json", "lock", "--frobnicate"]).code(2);
    assert_eq!(usage.json::<serde_json::Value>()["error"]["kind"], "usage");
    assert_eq!(usage.stderr, "");
}

/// A person at a terminal removes a STALE lock with `--force` and no agent name: they act as
/// their login name. A LIVE lock stays refused, and without `--force` an agent is still needed.
#[test]
fn a_person_cleans_up_a_stale_lock_without_an_agent_name() {
    let env = Env::new();
    env.write("a.md", "a\n");
    env.write(
        "a.md.lock.gemini",
        "Agent: Gemini\nlocked_at: 2020-01-01T00:00:00+00:00\nfile: a.md\n",
    );
    env.cmd()
        .args(["unlock", "a.md"])
        .env_remove("COORD_AGENT")
        .code(2)
        .stderr_has("no agent given");
    let out = env
        .cmd()
        .args(["unlock", "a.md", "--force"])
        .env_remove("COORD_AGENT")
        .env("USER", "Jane.Doe")
        .ok();
    out.stdout_has("Stale lock of Gemini on a.md removed");
    assert!(!env.exists("a.md.lock.gemini"));
    // Nothing of the person's is left behind.
    assert!(!env.exists(".jane-doe_presence"));

    env.agent("claude").args(["lock", "a.md"]).ok();
    env.cmd()
        .args(["unlock", "a.md", "--force"])
        .env_remove("COORD_AGENT")
        .env("USER", "jane")
        .code(3)
        .stderr_has("claude");
    assert!(env.exists("a.md.lock.claude"));
}

#[test]
fn the_man_page_synopsis_shows_option_values() {
    let env = Env::new();
    let page = env.cmd().args(["man", "lock"]).ok().stdout;
    let synopsis: String = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap_or_default()
        .replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fR", "")
        .replace("\\fI", "");
    for part in [
        "[--wait DUR]",
        "[--ttl DUR]",
        "[--reason TEXT]",
        "[-C|--dir DIR]",
        "<FILE>...",
    ] {
        assert!(synopsis.contains(part), "{part} missing from {synopsis}");
    }
}

/// What `init` points to is there in an installed binary (no source tree at hand): every
/// `coord …` command it names runs, and it names no file of coord's source tree. (Item 5.)
#[test]
fn init_points_at_documentation_the_binary_shows() {
    let env = Env::new();
    let out = env.cmd().args(["init", "--client", "claude"]).ok();
    assert!(!out.stdout.contains("docs/"), "{}", out.stdout);
    let named: Vec<&str> = out
        .stdout
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("coord docs"))
        .collect();
    assert!(!named.is_empty(), "init names no docs page: {}", out.stdout);
    for cmd in named {
        let args: Vec<&str> = cmd.split_whitespace().skip(1).collect();
        let page = env.cmd().args(&args).ok();
        assert!(page.stdout.starts_with("# "), "{cmd}: {}", page.stdout);
    }
    // The pages are the docs folder's, as written.
    let agents = env.cmd().args(["docs", "agents"]).ok().stdout;
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/agents.md"),
    )
    .unwrap();
    assert_eq!(agents, source);
    env.cmd()
        .args(["docs", "nope"])
        .code(2)
        .stderr_has("`agents`");
}
