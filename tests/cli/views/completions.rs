//! Shell completions and the man page.

use crate::support::Env;

/// Whether `program` can be run here.
pub(crate) fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Check `script` with `shell ARGS... FILE`, or skip (saying why) when the shell is missing.
fn shell_accepts(env: &Env, shell: &str, check: &[&str], script: &str) {
    if !have(shell) {
        eprintln!("skipped: `{shell}` is not installed; its completion script was not checked");
        return;
    }
    let file = env.path(&format!("completion.{shell}"));
    std::fs::write(&file, script).unwrap();
    let out = std::process::Command::new(shell)
        .args(check)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shell} rejects the script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completion_scripts_are_valid_for_each_shell() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.cmd().args(["completions", shell]).ok();
        assert!(
            out.stdout.contains("lock") && out.stdout.contains("unlock"),
            "{shell}: {}",
            out.stdout
        );
        assert!(out.stdout.contains("completions"), "{shell} lists itself");
    }
    let bash = env.cmd().args(["completions", "bash"]).ok().stdout.clone();
    assert!(bash.contains("complete -F _coord"), "{bash}");
    shell_accepts(&env, "bash", &["-n"], &bash);
    let zsh = env.cmd().args(["completions", "zsh"]).ok().stdout.clone();
    assert!(zsh.starts_with("#compdef coord"));
    shell_accepts(&env, "zsh", &["-n"], &zsh);
    let fish = env.cmd().args(["completions", "fish"]).ok().stdout.clone();
    shell_accepts(&env, "fish", &["--no-execute"], &fish);
    env.cmd()
        .args(["completions", "tcsh"])
        .code(2)
        .stderr_has("tcsh");
}

#[test]
fn bash_completion_really_completes_commands_and_options() {
    if !have("bash") {
        eprintln!("skipped: bash is not installed");
        return;
    }
    let env = Env::new();
    let script = env.cmd().args(["completions", "bash"]).ok().stdout.clone();
    let file = env.path("coord.bash");
    std::fs::write(&file, script).unwrap();
    // Load the script and ask it what follows `coord unl` and `coord lock --no-`.
    let probe = format!(
        "source {}\n\
         COMP_WORDS=(coord unl); COMP_CWORD=1; _coord coord unl coord; echo \"1:${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(coord lock --no-); COMP_CWORD=2; _coord coord --no- lock; echo \"2:${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1:unlock"), "{text}");
    assert!(
        text.contains("--no-wait") && text.contains("--no-backup"),
        "{text}"
    );
}

#[test]
fn the_man_page_renders() {
    let env = Env::new();
    let page = env.cmd().arg("man").ok().stdout.clone();
    assert!(page.contains(".TH coord 1"), "{page}");
    assert!(page.contains(".SH SYNOPSIS") && page.contains("lock"));
    let sub = env.cmd().args(["man", "msg", "send"]).ok().stdout.clone();
    assert!(sub.contains(".TH coord-msg-send 1"), "{sub}");
    env.cmd()
        .args(["man", "nosuch"])
        .code(2)
        .stderr_has("error: `coord` has no command `nosuch`");
    if !have("groff") {
        eprintln!("skipped: groff is not installed; the man page was not rendered");
        return;
    }
    for (name, roff) in [("coord", &page), ("coord-msg-send", &sub)] {
        let file = env.path(&format!("{name}.1"));
        std::fs::write(&file, roff).unwrap();
        let out = std::process::Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .arg(&file)
            .env("GROFF_NO_SGR", "1")
            .output()
            .unwrap();
        // Overstruck bold (`S\x08S`) and underline (`_\x08x`) back to plain letters.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\x08' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "groff warns: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("SYNOPSIS") && text.contains("OPTIONS"),
            "{text}"
        );
    }
}
