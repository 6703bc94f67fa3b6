//! `coord init --remove`: every file byte for byte as before init, coord's entries cut out of
//! files edited since, and a state folder kept.

use crate::clients::init::read_json;
use crate::support::{Env, no_clients};

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
    env.cmd().path_only(no_clients()).args(["init"]).ok();
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

/// The folders init made go with `--remove`; those the user had before stay, empty or not
/// (init's record says which are which).
#[test]
fn remove_takes_the_folders_init_made_and_keeps_the_users_own() {
    let env = Env::new();
    for dir in [".claude", ".github", ".codex"] {
        std::fs::create_dir(env.path(dir)).unwrap();
    }
    env.cmd().path_only(no_clients()).args(["init"]).ok();
    assert!(env.path(".github/hooks").is_dir() && env.path(".gemini").is_dir());
    env.cmd().args(["init", "--remove"]).ok();
    for dir in [".claude", ".github", ".codex"] {
        assert!(env.path(dir).is_dir(), "{dir}: the user's folder stays");
        assert_eq!(
            std::fs::read_dir(env.path(dir)).unwrap().count(),
            0,
            "{dir}"
        );
    }
    for dir in [".github/hooks", ".gemini", ".cursor", ".coord"] {
        assert!(!env.exists(dir), "{dir}: init made it, --remove takes it");
    }
}

/// A file coord wrote and nobody changed since keeps, when a later init (a newer coord)
/// rewrites it, what it held before the first init: `--remove` then puts back that, byte for
/// byte, not the older coord's version.
#[test]
fn remove_after_an_upgrade_gives_back_the_file_from_before_the_first_init() {
    let env = Env::new();
    plant_user_files(&env);
    let users = env.read(".gemini/settings.json");
    env.cmd().args(["init", "--client", "gemini"]).ok();
    // What an older coord wrote: its shell-tool matcher narrower, and its record saying so.
    let wide = "write_file|replace|run_shell_command";
    let ours = env.read(".gemini/settings.json");
    assert!(ours.contains(wide), "{ours}");
    let older = ours.replacen(wide, "write_file|replace", 1);
    env.write(".gemini/settings.json", &older);
    let mut record = read_json(&env, ".coord/init.json");
    record["files"][".gemini/settings.json"]["after"] = older.clone().into();
    env.write(".coord/init.json", record.to_string());

    env.cmd().args(["init", "--client", "gemini"]).ok();
    assert_ne!(
        env.read(".gemini/settings.json"),
        older,
        "the rerun widened the matcher"
    );
    env.cmd()
        .args(["init", "--remove", "--client", "gemini"])
        .ok();
    assert_eq!(env.read(".gemini/settings.json"), users);
}

/// A settings file that wired coord by hand before init (here with an older matcher, which
/// init widened) is left without coord's entries by `--remove`, not given back with them:
/// what the file said before init is compared by value (comments allowed), and it says more
/// than the file without coord does.
#[test]
fn remove_does_not_give_back_coord_wired_by_hand_before_init() {
    let env = Env::new();
    env.write(
        ".gemini/settings.json",
        "{\n  // mine\n  \"theme\": \"Dracula\",\n  \"hooks\": {\"BeforeTool\": [\n    {\"matcher\": \"write_file|replace\", \"hooks\": [{\"name\": \"coord\", \"type\": \"command\", \"command\": \"coord hook gemini\"}]}\n  ]}\n}\n",
    );
    env.cmd().args(["init", "--client", "gemini"]).ok();
    assert!(
        env.read(".gemini/settings.json")
            .contains("run_shell_command")
    );
    env.cmd()
        .args(["init", "--remove", "--client", "gemini", "--json"])
        .ok()
        .stdout_has(
            r#""file": ".gemini/settings.json",
        "action": "update""#,
        );
    assert_eq!(
        env.read(".gemini/settings.json"),
        "{\n  // mine\n  \"theme\": \"Dracula\"\n}\n"
    );
}

/// Files whose last bytes only init's record knows come back exactly: a settings file of
/// blank lines, a TOML file without a final line break.
#[test]
fn remove_gives_back_blank_and_unterminated_files_exactly() {
    let env = Env::new();
    env.write(".gemini/settings.json", "\n  \n");
    env.write(".claude/settings.json", "\n");
    env.write(".codex/config.toml", "model = \"gpt-5\"");
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--client", "gemini,claude,codex"])
        .ok();
    assert!(
        env.read(".gemini/settings.json")
            .contains("coord hook gemini")
    );
    assert!(env.read(".codex/config.toml").contains("mcp_servers.coord"));
    env.cmd().args(["init", "--remove"]).ok();
    assert_eq!(env.snapshot(), before);
}

/// A file of the user's own at the path of a plugin coord generates is not coord's to take.
#[test]
fn remove_leaves_a_users_own_file_where_coord_would_put_its_plugin() {
    let env = Env::new();
    env.write(".opencode/plugin/coord.js", "// my own plugin\n");
    env.write(".cline/plugins/coord.js", "// mine too\n");
    let before = env.snapshot();
    env.cmd()
        .args(["init", "--remove", "--client", "opencode,cline"])
        .ok()
        .stdout_has("Nothing to remove");
    assert_eq!(env.snapshot(), before);
}

/// Removing some clients while others stay wired keeps `.coord/` without saying so (it is
/// not "kept" for its state: it is still in use).
#[test]
fn a_partial_remove_does_not_report_the_state_folder_as_kept() {
    let env = Env::new();
    env.cmd().path_only(no_clients()).args(["init"]).ok();
    let out = env
        .cmd()
        .args(["init", "--remove", "--client", "gemini", "--json"])
        .ok();
    let v: serde_json::Value = out.json();
    assert_eq!(v["removal"]["state_dir_kept"], false, "{v}");
    assert_eq!(v["removal"]["remove_state_dir"], false, "{v}");
    assert!(!out.stdout.contains("Kept .coord/"));
    assert!(env.path(".coord").is_dir());
}

/// Without init's record (lost, or never written by an older coord) `--remove` works from
/// the files alone: coord's files go, and the folders they leave empty with them.
#[test]
fn without_the_record_remove_still_takes_the_emptied_folders() {
    let env = Env::new();
    env.cmd().args(["init", "--client", "gemini"]).ok();
    std::fs::remove_file(env.path(".coord/init.json")).unwrap();
    env.cmd().args(["init", "--remove"]).ok();
    assert!(!env.exists(".gemini"));
    assert!(!env.exists("GEMINI.md"));
}

/// A block whose lines a checkout turned into CRLF (git's `autocrlf`) is cut out with its own
/// line break, in the middle of the user's text as at its end.
#[test]
fn remove_cuts_a_crlf_block_out_of_the_middle_of_a_file() {
    let env = Env::new();
    env.cmd().args(["init", "--client", "codex"]).ok();
    let block = env.read("AGENTS.md").replace('\n', "\r\n");
    assert!(block.starts_with("<!-- coord:begin -->"), "{block}");
    env.write(
        "AGENTS.md",
        format!("# Rules\r\n\r\n{block}More rules.\r\n"),
    );
    env.cmd().args(["init", "--remove"]).ok();
    assert_eq!(env.read("AGENTS.md"), "# Rules\r\n\r\nMore rules.\r\n");
}

/// coord's hook moved by hand into a group of the user's own (next to their hook) is cut out of
/// that group, which stays with the user's hook; a group of coord's alone goes whole.
#[test]
fn remove_cuts_coords_hook_out_of_a_users_group_and_keeps_theirs() {
    let env = Env::new();
    env.cmd().args(["init", "--client", "claude"]).ok();
    let mut v = read_json(&env, ".claude/settings.json");
    let ours = v["hooks"]["PreToolUse"][0]["hooks"][0].clone();
    assert_eq!(ours["command"], "coord hook claude");
    v["hooks"]["PreToolUse"] = serde_json::json!([
        {"matcher": "Write", "hooks": [{"type": "command", "command": "./mine.sh"}, ours]},
    ]);
    env.write(".claude/settings.json", v.to_string());
    env.cmd().args(["init", "--remove"]).ok();
    let v = read_json(&env, ".claude/settings.json");
    assert_eq!(
        v["hooks"],
        serde_json::json!({"PreToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": "./mine.sh"}]},
        ]}),
        "{v}"
    );
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

/// A repository in `<env>/main` (a `.gitignore` and an `AGENTS.md` committed) with a linked
/// worktree `<env>/b`.
pub(crate) fn repo_with_worktree() -> (Env, std::path::PathBuf, std::path::PathBuf) {
    let env = Env::new();
    let main = env.path("main");
    std::fs::create_dir_all(&main).unwrap();
    let git = |dir: &std::path::Path, args: &[&str]| {
        let out = crate::rigs::git(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&main, &["init", "-q", "-b", "trunk"]);
    std::fs::write(main.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(main.join("AGENTS.md"), "# Rules\n").unwrap();
    std::fs::write(main.join("README.md"), "hello\n").unwrap();
    git(&main, &["add", "."]);
    git(&main, &["commit", "-qm", "start"]);
    git(&main, &["worktree", "add", "-q", "../b", "-b", "feature"]);
    let b = env.path("b");
    (env, main, b)
}

/// `coord` started in `dir`, finding its workspace as a user's shell would.
fn coord_in(env: &Env, dir: &std::path::Path) -> crate::support::Cmd {
    env.cmd().env_remove("COORD_DIR").cwd(dir)
}

/// #48: `init --remove` says only what it really took back: "Unwired" names the clients that
/// were wired (not every client it knows), and a file given back as it was before init is
/// "Restored" in every worktree of the repository, whichever tree is unwired first (the record
/// of what init found stays while another tree is still wired).
#[test]
fn remove_names_only_the_clients_it_unwired_and_one_word_for_one_outcome() {
    let (env, main, b) = repo_with_worktree();
    for dir in [&main, &b] {
        coord_in(&env, dir)
            .args(["init", "--client", "claude"])
            .ok();
    }
    let mut said = Vec::new();
    for dir in [&main, &b] {
        let out = coord_in(&env, dir).args(["init", "--remove"]).ok();
        out.stdout_has("Unwired claude.");
        said.push(out.stdout.clone());
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            "target/\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("AGENTS.md")).unwrap(),
            "# Rules\n"
        );
    }
    for out in &said {
        for file in [".gitignore", "AGENTS.md"] {
            assert!(
                out.contains(&format!("Restored: {file}\n")),
                "{file}: one outcome, one word:\n{}",
                said.join("---\n")
            );
        }
    }
}

/// #48: a linked worktree has no `.coord/` of its own: `init --remove` there never says it kept
/// one; when the repository's state stays, it names the folder where it lies.
#[test]
fn remove_in_a_linked_worktree_names_the_state_folder_where_it_lies() {
    let (env, main, b) = repo_with_worktree();
    coord_in(&env, &b).args(["init", "--client", "claude"]).ok();
    env.agent("alice")
        .env_remove("COORD_DIR")
        .cwd(&b)
        .args(["msg", "send", "bob", "hi"])
        .ok();
    assert!(!b.join(".coord").exists() && main.join(".coord").is_dir());
    let out = coord_in(&env, &b).args(["init", "--remove"]).ok();
    out.stdout_lacks("Kept .coord/");
    out.stdout_has(&format!("Kept {}/", main.join(".coord").display()));
}
