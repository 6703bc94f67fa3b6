//! A git submodule is a folder of its superproject's workspace (#45): an agent started inside
//! it finds the superproject's workspace, as one started above it does, so its locks and claims
//! are keyed by the superproject's paths (`sub/d/f.rs`, `sub/d/**`) and hold both ways. Real
//! `git submodule add`.

use std::path::{Path, PathBuf};

use crate::support::{Cmd, Env};

fn git(dir: &Path, args: &[&str]) {
    let out = crate::rigs::git(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A superproject `<env>/sup` with the submodule `sub` (holding `d/f.rs`), checked out.
pub(crate) fn superproject() -> (Env, PathBuf) {
    let env = Env::new();
    let lib = env.path("lib");
    std::fs::create_dir_all(lib.join("d")).unwrap();
    std::fs::write(lib.join("d/f.rs"), "f\n").unwrap();
    git(&lib, &["init", "-q", "-b", "trunk"]);
    git(&lib, &["add", "."]);
    git(&lib, &["commit", "-qm", "lib"]);
    let sup = env.path("sup");
    std::fs::create_dir_all(&sup).unwrap();
    std::fs::write(sup.join("a.txt"), "a\n").unwrap();
    git(&sup, &["init", "-q", "-b", "trunk"]);
    git(&sup, &["add", "."]);
    git(&sup, &["commit", "-qm", "start"]);
    git(
        &sup,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            "../lib",
            "sub",
        ],
    );
    git(&sup, &["commit", "-qm", "sub"]);
    assert!(
        sup.join("sub/.git").is_file(),
        "a submodule's `.git` is a file"
    );
    (env, sup)
}

/// `coord` as `agent`, started in `dir` (finding its workspace as a shell there would).
pub(crate) fn from(env: &Env, dir: &Path, agent: &str) -> Cmd {
    env.agent(agent).env_remove("COORD_DIR").cwd(dir)
}

#[test]
fn a_claim_taken_inside_a_submodule_holds_its_paths_for_the_superproject() {
    let (env, sup) = superproject();
    // The first coord command of all runs inside the submodule.
    from(&env, &sup.join("sub"), "alice")
        .args(["lock", "d/"])
        .ok()
        .stdout_has("Claim acquired: sub/d/**");
    assert!(!sup.join("sub/.coord").exists());
    from(&env, &sup, "bob")
        .args(["lock", "sub/d/f.rs", "--no-wait"])
        .code(3)
        .stderr_has("alice (claim `sub/d/**`)");
    assert!(!sup.join("sub/d/f.rs.lock.bob").exists());
    // From a folder deep in the submodule too.
    from(&env, &sup.join("sub/d"), "carol")
        .args(["lock", "f.rs", "--no-wait"])
        .code(3)
        .stderr_has("alice (claim `sub/d/**`)");
}

#[test]
fn a_claim_of_the_superproject_holds_the_submodules_files_for_an_agent_inside_it() {
    let (env, sup) = superproject();
    // The agent inside the submodule says it is here before anyone else acts.
    from(&env, &sup.join("sub"), "alice")
        .args(["presence", "lib work"])
        .ok();
    from(&env, &sup, "bob").args(["lock", "sub/"]).ok();
    from(&env, &sup.join("sub"), "alice")
        .args(["lock", "d/f.rs", "--no-wait"])
        .code(3)
        .stderr_has("bob (claim `sub/**`)");
    assert!(!sup.join("sub/d/f.rs.lock.alice").exists());
    // A lock taken inside it is the superproject's lock of `sub/d/f.rs`, both ways.
    from(&env, &sup, "bob").args(["unlock", "sub/"]).ok();
    from(&env, &sup.join("sub"), "alice")
        .args(["lock", "d/f.rs"])
        .ok()
        .stdout_has("Lock acquired: sub/d/f.rs");
    from(&env, &sup, "bob")
        .args(["lock", "sub/", "--no-wait"])
        .code(3)
        .stderr_has("alice");
    let v: serde_json::Value = from(&env, &sup.join("sub/d"), "carol")
        .args(["status", "--json"])
        .ok()
        .json();
    assert_eq!(
        v["root"],
        std::fs::canonicalize(&sup).unwrap().to_str().unwrap(),
        "{v}"
    );
    assert_eq!(v["locks"][0]["file"], "sub/d/f.rs", "{v}");
    assert_eq!(v["nested"], serde_json::json!([]), "{v}");
}
