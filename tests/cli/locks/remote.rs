//! Claims shared by clones through the repository's remote (contract §13, #47): real git, real
//! `coord` processes, a bare repository served on 127.0.0.1 by `git daemon`, by `git
//! http-backend` (smart HTTP) and as a `file://` URL; each clone in its own folder with its own
//! `.coord/`, sharing nothing but the remote.
//!
//! The claims are driven through `coord remote claim|release|renew|hold|working-on`, hidden
//! sub-commands over the library's remote API (not part of the contract).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::gitserve::{self, Daemon, Http};
use crate::rigs::{git, git_or_skip};
use crate::support::{Cmd, Env, coord_bin};

/// `coord remote status --json`, exactly the contract's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Status {
    pub schema_version: u32,
    pub remote: Option<String>,
    pub url: Option<String>,
    pub synced_at: Option<String>,
    pub age_s: Option<u64>,
    pub claims: Vec<StatusClaim>,
    pub agents: Vec<StatusAgent>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusClaim {
    pub pattern: String,
    pub agent: String,
    pub host: String,
    pub since: String,
    pub reason: Option<String>,
    pub lease_until: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusAgent {
    pub agent: String,
    pub host: String,
    pub working_on: Vec<String>,
    pub seen_at: String,
}

/// A team: one bare repository, served one way, and clones of it.
pub(crate) struct Team {
    pub env: Env,
    pub bare: PathBuf,
    pub url: String,
    /// The daemon serving it (dropped: it stops).
    pub daemon: Option<Daemon>,
    _http: Option<Http>,
}

#[derive(Clone, Copy)]
pub(crate) enum Transport {
    Daemon,
    Http,
    File,
}

impl Team {
    pub(crate) fn new(how: Transport) -> Option<Team> {
        if !git_or_skip() {
            return None;
        }
        let env = Env::new();
        let base = env.path("srv");
        std::fs::create_dir_all(&base).unwrap();
        let bare = gitserve::bare(&base, "r.git");
        let (url, daemon, http) = match how {
            Transport::Daemon => {
                let d = Daemon::start(&base)?;
                (d.url("r.git"), Some(d), None)
            }
            Transport::Http => {
                let h = Http::start(&base, None);
                (h.url("r.git", ""), None, Some(h))
            }
            Transport::File => (format!("file://{}", bare.display()), None, None),
        };
        Some(Team {
            env,
            bare,
            url,
            daemon,
            _http: http,
        })
    }

    /// A new clone `name` (a repository whose `origin` is the team's remote), not enabled.
    pub(crate) fn repo(&self, name: &str, url: &str) -> PathBuf {
        let dir = self.env.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        run_git(&dir, &["init", "-q"]);
        run_git(&dir, &["remote", "add", "origin", url]);
        dir
    }

    /// A new clone `name`, enabled.
    pub(crate) fn clone(&self, name: &str) -> PathBuf {
        let dir = self.repo(name, &self.url);
        remote(&self.env, &dir, "x", &["enable"])
            .ok()
            .stdout_has("shared through `origin`");
        dir
    }

    /// The refs of the bare repository.
    pub(crate) fn remote_refs(&self) -> String {
        run_git(&self.bare, &["for-each-ref", "--format=%(refname)"])
    }
}

pub(crate) fn run_git(dir: &Path, args: &[&str]) -> String {
    let out = git(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `coord` as `agent` in clone `dir`, apart from this machine's git config.
pub(crate) fn coord(env: &Env, dir: &Path, agent: &str) -> Cmd {
    env.agent(agent)
        .env_remove("COORD_DIR")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .cwd(dir)
}

/// `program` run in the folder and with the environment `cmd` would have.
pub(crate) fn like(cmd: Cmd, program: &str) -> Command {
    let c = cmd.command();
    let mut out = Command::new(program);
    if let Some(dir) = c.get_current_dir() {
        out.current_dir(dir);
    }
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => out.env(k, v),
            None => out.env_remove(k),
        };
    }
    out
}

/// `coord ARGS` as `agent` in clone `dir`, on a host named `hostb` (its own UTS namespace).
fn on_hostb(env: &Env, dir: &Path, agent: &str, args: &[&str]) -> Command {
    let mut c = like(coord(env, dir, agent), "unshare");
    c.args(["-u", "sh", "-c", "hostname hostb && exec \"$0\" \"$@\""])
        .arg(coord_bin())
        .args(args);
    c
}

/// `coord remote ARGS` as `agent` in clone `dir`.
pub(crate) fn remote(env: &Env, dir: &Path, agent: &str, args: &[&str]) -> Cmd {
    coord(env, dir, agent).arg("remote").args(args)
}

pub(crate) fn status(env: &Env, dir: &Path) -> Status {
    remote(env, dir, "x", &["status", "--json"]).ok().json()
}

pub(crate) fn hostname() -> String {
    let out = Command::new("hostname").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Two clones, one claim, over each transport: the second clone is refused naming the holder,
/// its host, since when, the reason and the lease's end; released, the claim is free; nothing
/// is pushed outside `refs/coord/`.
#[test]
fn a_claim_in_one_clone_refuses_an_overlapping_one_in_another_over_every_transport() {
    for how in [Transport::Daemon, Transport::Http, Transport::File] {
        let Some(t) = Team::new(how) else { return };
        let a = t.clone("a");
        let b = t.clone("b");
        remote(
            &t.env,
            &a,
            "alice",
            &["claim", "src/auth/", "--reason", "auth refactor"],
        )
        .ok()
        .stdout_has("Claim published: src/auth/**");
        let refused = remote(&t.env, &b, "bob", &["claim", "src/auth/login.rs"]).code(3);
        refused
            .stderr_has("held by alice on ")
            .stderr_has(&hostname())
            .stderr_has("claim `src/auth/**` through remote `origin`")
            .stderr_has("lease until ")
            .stderr_has("since ")
            .stderr_has("(working on auth refactor)");
        // What a hook will read: the other clones' claims on a path, without the network.
        remote(
            &t.env,
            &b,
            "bob",
            &["who", "src/auth/login.rs", "docs/x.md"],
        )
        .ok()
        .stdout_has(&format!(
            "src/auth/login.rs: alice on {} (claim `src/auth/**`)",
            hostname()
        ))
        .stdout_lacks("docs/x.md");
        // A pattern apart is free.
        remote(&t.env, &b, "bob", &["claim", "docs/"]).ok();
        let s = status(&t.env, &b);
        assert_eq!(s.schema_version, 1);
        assert_eq!(s.remote.as_deref(), Some("origin"));
        assert_eq!(s.url.as_deref(), Some(t.url.as_str()));
        assert!(s.synced_at.is_some() && s.age_s.is_some());
        let auth = s
            .claims
            .iter()
            .find(|c| c.pattern == "src/auth/**")
            .unwrap();
        assert_eq!(auth.agent, "alice");
        assert_eq!(auth.host, hostname());
        assert_eq!(auth.reason.as_deref(), Some("auth refactor"));
        assert!(auth.since <= auth.lease_until);
        remote(&t.env, &a, "alice", &["release", "src/auth/"])
            .ok()
            .stdout_has("Claim released: src/auth/**");
        remote(&t.env, &b, "bob", &["claim", "src/auth/login.rs"]).ok();
        let refs = t.remote_refs();
        assert!(refs.lines().all(|r| r.starts_with("refs/coord/")), "{refs}");
        assert!(refs.contains("refs/coord/claims"), "{refs}");
    }
}

/// How many clones race, and for how many rounds (`COORD_TEST_REMOTE_RACE=16x30` for the full
/// run; the default keeps the suite's time on two cores).
fn race_size() -> (usize, usize) {
    std::env::var("COORD_TEST_REMOTE_RACE")
        .ok()
        .and_then(|v| {
            let (c, r) = v.split_once('x')?;
            Some((c.parse().ok()?, r.parse().ok()?))
        })
        .unwrap_or((8, 4))
}

/// Clones racing to claim overlapping patterns at once, round after round: exactly one holds
/// each round, proven by a witness each winner creates with `O_EXCL` while it holds the claim
/// (a second holder would find it there); the others are refused naming the winner.
#[test]
fn racing_clones_give_exactly_one_holder_each_round() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let (clones, rounds) = race_size();
    let dirs: Vec<PathBuf> = (0..clones).map(|i| t.clone(&format!("c{i}"))).collect();
    // Every two of these overlap (all match src/a/x.rs).
    let patterns = [
        "src/**",
        "src/a/",
        "src/*/x.rs",
        "src/a/*.rs",
        "**/x.rs",
        "src/a/x.rs",
        "src/[a-c]/x.rs",
        "src/a/x.*",
    ];
    race(
        &t,
        &dirs,
        rounds,
        "coord remote claim",
        &|i, round| vec![patterns[(i + round) % patterns.len()]],
        &|dir, agent| {
            remote(&t.env, dir, agent, &["release"]).ok();
        },
    );
}

/// `rounds` rounds of the clones `dirs` (agent `a<i>` in `dirs[i]`) each running `command` with
/// `asks(i, round)` at once: exactly one must win each round (exit 0), proven by a witness each
/// winner creates with `O_EXCL` while it holds (a second holder would find it there, exit 99);
/// the others are refused (exit 3) naming the winner. The winner then lets go (`release`).
pub(crate) fn race<'a>(
    t: &Team,
    dirs: &[PathBuf],
    rounds: usize,
    command: &str,
    asks: &dyn Fn(usize, usize) -> Vec<&'a str>,
    release: &dyn Fn(&Path, &str),
) {
    let witness = t.env.path("scratch/holder");
    std::fs::create_dir_all(witness.parent().unwrap()).unwrap();
    let script = format!(
        "w=$1; shift; {command} \"$@\"; rc=$?; if [ $rc = 0 ]; then (set -C; echo \"$COORD_AGENT\" > \"$w\") || exit 99; fi; exit $rc"
    );
    let bin = crate::views::docs::bin_dir(&t.env);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for round in 0..rounds {
        let children: Vec<_> = dirs
            .iter()
            .enumerate()
            .map(|(i, dir)| {
                let mut sh = like(coord(&t.env, dir, &format!("a{i}")), "bash");
                sh.env("PATH", &path)
                    .args(["-c", &script, "race"])
                    .arg(&witness)
                    .args(asks(i, round))
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                sh.spawn().unwrap()
            })
            .collect();
        let outs: Vec<_> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
        let winners: Vec<usize> = (0..dirs.len()).filter(|&i| codes[i] == Some(0)).collect();
        let stderr: Vec<String> = outs
            .iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exit codes {codes:?}\n{}",
            stderr.join("\n")
        );
        let w = winners[0];
        assert_eq!(
            std::fs::read_to_string(&witness).unwrap().trim(),
            format!("a{w}")
        );
        for (i, code) in codes.iter().enumerate().filter(|(i, _)| *i != w) {
            assert_eq!(*code, Some(3), "round {round}, a{i}: {}", stderr[i]);
            assert!(
                stderr[i].contains(&format!("held by a{w} on ")),
                "round {round}, a{i}: {}",
                stderr[i]
            );
        }
        release(&dirs[w], &format!("a{w}"));
        std::fs::remove_file(&witness).unwrap();
    }
}

/// A holder that renews keeps its claim past its lease; killed (`kill -9`), its lease lapses
/// on the other clone's clock and the claim is taken over, saying from whom (also in the
/// commit history of `refs/coord/claims`); the old holder's late renewal is refused.
#[test]
fn a_killed_holder_is_taken_over_after_its_lease_and_its_late_renewal_is_refused() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    let mut holder = remote(&t.env, &a, "alice", &["hold", "src/", "--ttl", "6s"]).spawn();
    crate::support::eventually("alice's claim on the remote", || {
        status(&t.env, &b).claims.iter().any(|c| c.agent == "alice")
    });
    // Past one whole lease, the renewals keep it held.
    std::thread::sleep(std::time::Duration::from_secs(8));
    remote(&t.env, &b, "bob", &["claim", "src/x.rs"])
        .code(3)
        .stderr_has("held by alice");
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Once the lease lapses on b's clock, b takes it over.
    let mut taken = None;
    for _ in 0..60 {
        let out = remote(&t.env, &b, "bob", &["claim", "src/x.rs"]).run();
        if out.code == Some(0) {
            taken = Some(out);
            break;
        }
        assert_eq!(out.code, Some(3), "{}", out.stderr);
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let taken = taken.expect("the claim was never taken over");
    taken.stderr_has("took over `src/**` from alice on ");
    let log = run_git(&t.bare, &["log", "--format=%s", "refs/coord/claims"]);
    assert!(
        log.contains("claim `src/x.rs` for bob on")
            && log.contains("taking over `src/**` from alice on"),
        "{log}"
    );
    // The old holder's renewal comes too late.
    remote(&t.env, &a, "alice", &["renew", "src/"])
        .code(3)
        .stderr_has("no longer yours: taken over by bob on");
}

/// Leases are judged on the reader's clock from when it first saw the claim: a holder whose
/// clock is ten minutes behind (its `since` ten minutes "ago") or ahead is judged the same.
#[test]
fn a_lease_is_judged_on_the_readers_clock_whatever_the_holders_says() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    let now = chrono::Local::now();
    for (shift, pattern) in [(-10i64, "behind/"), (10, "ahead/")] {
        let then = (now + chrono::Duration::minutes(shift)).format("%Y-%m-%dT%H:%M:%S%:z");
        remote(&t.env, &a, "alice", &["claim", pattern, "--ttl", "60s"])
            .env("COORD_NOW", then.to_string())
            .ok();
        remote(&t.env, &b, "bob", &["claim", &format!("{pattern}x")])
            .code(3)
            .stderr_has("held by alice");
    }
    let s = status(&t.env, &b);
    let read = |t: &str| chrono::DateTime::parse_from_rfc3339(t).unwrap();
    for c in &s.claims {
        let until = read(&c.lease_until);
        let left = until.signed_duration_since(chrono::Local::now());
        assert!(
            left > chrono::Duration::zero() && left <= chrono::Duration::seconds(61),
            "{c:?}"
        );
        // Never later than when this clone first saw it.
        assert!(read(&c.since) <= until, "{c:?}");
    }
    assert_eq!(s.claims.len(), 2);
}

/// Two clones whose agents have the same name are two holders; the host tells them apart.
#[test]
fn the_same_agent_name_in_two_clones_is_two_holders_told_apart_by_host() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    remote(&t.env, &a, "alice", &["claim", "src/"]).ok();
    // From another host when this machine lets a process have its own host name.
    let other_host = Command::new("unshare")
        .args(["-u", "sh", "-c", "hostname hostb && hostname"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !other_host {
        eprintln!("note: `unshare -u` is not allowed here: both clones on one host");
    }
    let claim = ["remote", "claim", "src/x.rs", "--ttl", "1m"];
    let out = if other_host {
        on_hostb(&t.env, &b, "alice", &claim).output().unwrap()
    } else {
        coord(&t.env, &b, "alice")
            .args(claim)
            .command()
            .output()
            .unwrap()
    };
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("held by alice on {}", hostname())),
        "{err}"
    );
    if other_host {
        let ok = on_hostb(&t.env, &b, "alice", &["remote", "claim", "docs/"])
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
        remote(&t.env, &a, "alice", &["sync"]).ok();
        let s = status(&t.env, &a);
        let docs = s.claims.iter().find(|c| c.pattern == "docs/**").unwrap();
        assert_eq!(
            (docs.agent.as_str(), docs.host.as_str()),
            ("alice", "hostb")
        );
    }
}

/// A remote that cannot be reached, or that refuses the credentials: exit 1 naming the remote,
/// nothing taken here or there. A remote the repository does not have: exit 2.
#[test]
fn an_unreachable_remote_or_refused_credentials_take_nothing() {
    if !git_or_skip() {
        return;
    }
    let env = Env::new();
    let base = env.path("srv");
    std::fs::create_dir_all(&base).unwrap();
    let bare = gitserve::bare(&base, "r.git");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = Http::start(&base, Some("user:secret"));
    let cases = [
        (
            format!("git://127.0.0.1:{closed}/r.git"),
            "cannot reach remote `origin`",
        ),
        (
            format!("file://{}", env.path("missing.git").display()),
            "cannot reach remote `origin`",
        ),
        (http.url("r.git", ""), "remote `origin`"),
        (http.url("r.git", "user:wrong@"), "refused the credentials"),
    ];
    for (i, (url, says)) in cases.iter().enumerate() {
        let dir = env.path(&format!("c{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        run_git(&dir, &["init", "-q"]);
        run_git(&dir, &["remote", "add", "origin", url]);
        // Enabled all the same, told it cannot be read.
        remote(&env, &dir, "alice", &["enable"])
            .ok()
            .stderr_has("warning: ")
            .stderr_has(says);
        let out = remote(&env, &dir, "alice", &["claim", "src/"]).code(1);
        out.stderr_has(says).stderr_has("nothing was changed");
        let doc: serde_json::Value = coord(&env, &dir, "alice")
            .args(["--json", "remote", "claim", "src/"])
            .code(1)
            .json();
        assert_eq!(doc["error"]["kind"], "remote");
        remote(&env, &dir, "alice", &["sync"])
            .code(1)
            .stderr_has(says);
        let s = status(&env, &dir);
        assert!(s.claims.is_empty() && s.synced_at.is_none(), "{s:?}");
    }
    // Credentials asked for and none to give: a refusal, said as such, never a prompt.
    let dir = env.path("c2");
    remote(&env, &dir, "alice", &["claim", "src/"])
        .code(1)
        .stderr_has("refused the credentials");
    // Nothing reached the remote.
    assert_eq!(run_git(&bare, &["for-each-ref"]), "");
    // A remote the repository does not have.
    remote(&env, &dir, "alice", &["enable", "upstream"])
        .code(2)
        .stderr_has("no remote `upstream`")
        .stderr_has("`origin`");
    // Outside a repository, and not enabled.
    let lone = env.path("lone");
    std::fs::create_dir_all(&lone).unwrap();
    remote(&env, &lone, "alice", &["enable"])
        .code(2)
        .stderr_has("not in a git repository");
    let fresh = env.path("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    run_git(&fresh, &["init", "-q"]);
    remote(&env, &fresh, "alice", &["sync"])
        .code(2)
        .stderr_has("coord remote enable");
    let s = status(&env, &fresh);
    assert!(s.remote.is_none() && s.url.is_none() && s.claims.is_empty());
}

/// Write a claims commit by hand into the bare repository: `entries` are (name, content) blobs.
fn plant_claims(bare: &Path, entries: &[(&str, &[u8])], subtree: bool) {
    let mut listing = String::new();
    for (name, content) in entries {
        let out = git(bare)
            .args(["hash-object", "-w", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(content)?;
                c.wait_with_output()
            })
            .unwrap();
        let oid = String::from_utf8_lossy(&out.stdout).trim().to_string();
        listing.push_str(&format!("100644 blob {oid}\t{name}\n"));
    }
    let mktree = |text: &str| {
        let out = git(bare)
            .arg("mktree")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(text.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    if subtree {
        let inner = mktree(&listing);
        listing.push_str(&format!(
            "040000 tree {inner}\t00000000000000000000000000000011\n"
        ));
    }
    let tree = mktree(&listing);
    let commit = run_git(bare, &["commit-tree", "-m", "planted", &tree]);
    run_git(bare, &["update-ref", "refs/coord/claims", commit.trim()]);
}

fn record(pattern: &str, agent: &str, extra: &str) -> Vec<u8> {
    format!(
        r#"{{"v":1,"kind":"claim","pattern":{},"agent":"{agent}","host":"evil","clone":"c0ffee","since":"2026-01-28T10:00:00+00:00","lease_s":900,"renewal":0,"token":"t"{extra}}}"#,
        serde_json::to_string(pattern).unwrap()
    )
    .into_bytes()
}

/// Records under `refs/coord/` that do not parse, name a path outside the repository or are
/// otherwise hostile are ignored, each with a warning; the sound ones hold; nothing panics,
/// nothing is written outside `.coord/` and `refs/coord*`.
#[test]
fn hostile_records_are_ignored_with_a_warning() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let good = record("src/ok/**", "mallory", "");
    let escape = record("../../etc/**", "mallory", "");
    let absolute = record("/etc/passwd", "mallory", "");
    let years = record("src/y/**", "mallory", "")
        .into_iter()
        .collect::<Vec<u8>>();
    let years = String::from_utf8(years)
        .unwrap()
        .replace("\"lease_s\":900", "\"lease_s\":999999999")
        .into_bytes();
    let terminal = record("src/t/**", "mallory", r#","reason":"\u001b[2Jgone""#);
    let big = vec![b'x'; 100_000];
    plant_claims(
        &t.bare,
        &[
            ("0000000000000000000000000000000a", &good),
            ("0000000000000000000000000000000b", &escape),
            ("0000000000000000000000000000000c", &absolute),
            ("0000000000000000000000000000000d", &years),
            ("0000000000000000000000000000000e", &terminal),
            ("0000000000000000000000000000000f", b"\xff\xfe not json"),
            ("00000000000000000000000000000010", &big),
            ("not-a-hash", &good),
        ],
        true,
    );
    // A clone ref that is not a commit.
    let blob = git(&t.bare)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    run_git(
        &t.bare,
        &[
            "update-ref",
            "refs/coord/clones/0123456789abcdef0123456789abcdef",
            String::from_utf8_lossy(&blob.stdout).trim(),
        ],
    );
    let b = t.clone("b");
    let before = t.env.snapshot();
    let out = remote(&t.env, &b, "bob", &["sync"]).ok();
    for says in [
        "`..` is not allowed",
        "must be relative",
        "lease of 999999999s",
        "control character",
        "not a claim record",
        "too large",
        "not a name coord writes",
        "not a file",
        "not a commit",
    ] {
        out.stderr_has(says);
    }
    let s = status(&t.env, &b);
    let patterns: Vec<&str> = s.claims.iter().map(|c| c.pattern.as_str()).collect();
    assert_eq!(patterns, vec!["src/ok/**"]);
    remote(&t.env, &b, "bob", &["claim", "src/ok/a.rs"])
        .code(3)
        .stderr_has("held by mallory on evil");
    remote(&t.env, &b, "bob", &["claim", "src/t/"]).ok();
    // Only coord's own state changed in the work tree.
    let after = t.env.snapshot();
    for (path, content) in &after {
        if before.get(path) != Some(content) {
            assert!(path.contains(".coord/") || path.contains(".git/"), "{path}");
        }
    }
    assert!(!Path::new("/etc/passwd.lock.bob").exists());
}

/// `refs/coord/claims` forced to an unrelated commit: the clones are told it was rewritten and
/// which of their claims it took with it; claims go on from the new state, and the renewal of
/// a claim that vanished is refused.
#[test]
fn a_rewritten_claims_ref_is_told_and_claims_go_on() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    remote(&t.env, &a, "alice", &["claim", "src/"]).ok();
    remote(&t.env, &a, "alice", &["sync"]).ok();
    // Someone force-pushes refs/coord/claims to a commit of their own.
    plant_claims(&t.bare, &[], false);
    remote(&t.env, &a, "alice", &["sync"])
        .ok()
        .stderr_has("was rewritten")
        .stderr_has("the claim on `src/**` of alice (this clone) is gone");
    remote(&t.env, &b, "bob", &["claim", "src/"]).ok();
    remote(&t.env, &a, "alice", &["renew", "src/"])
        .code(3)
        .stderr_has("no longer yours");
}

/// What a clone's agents edit reaches the other clones (with the host), is not pushed again
/// while unchanged, and goes away when they edit nothing.
#[test]
fn working_on_is_published_to_the_other_clones() {
    let Some(t) = Team::new(Transport::Http) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    remote(&t.env, &a, "alice", &["working-on", "src/a.rs", "src/b.rs"])
        .ok()
        .stdout_has("Published");
    remote(&t.env, &a, "alice", &["working-on", "src/a.rs", "src/b.rs"])
        .ok()
        .stdout_has("Unchanged");
    remote(&t.env, &b, "bob", &["sync"]).ok();
    let s = status(&t.env, &b);
    assert_eq!(s.agents.len(), 1, "{s:?}");
    let alice = &s.agents[0];
    assert_eq!(alice.agent, "alice");
    assert_eq!(alice.host, hostname());
    assert_eq!(alice.working_on, vec!["src/a.rs", "src/b.rs"]);
    assert!(!alice.seen_at.is_empty());
    remote(&t.env, &a, "alice", &["working-on"])
        .ok()
        .stdout_has("Published");
    remote(&t.env, &b, "bob", &["sync"]).ok();
    assert!(status(&t.env, &b).agents.is_empty());
    // A path outside the repository is never published.
    remote(&t.env, &a, "alice", &["working-on", "../x"])
        .code(2)
        .stderr_has("not inside the repository");
}

/// `disable` releases this clone's claims on the remote and forgets what it read; the clone
/// keeps its id.
#[test]
fn disable_releases_the_clones_claims_and_forgets_the_state() {
    let Some(t) = Team::new(Transport::Daemon) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    remote(&t.env, &a, "alice", &["claim", "src/"]).ok();
    let id = run_git(&a, &["config", "coord.cloneId"]);
    remote(&t.env, &a, "alice", &["disable"])
        .ok()
        .stdout_has("1 of this clone's released");
    assert!(!a.join(".coord/remote/state.json").exists());
    assert_eq!(run_git(&a, &["for-each-ref", "refs/coord-sync/"]), "");
    assert_eq!(run_git(&a, &["config", "coord.cloneId"]), id);
    remote(&t.env, &b, "bob", &["claim", "src/"]).ok();
    remote(&t.env, &a, "alice", &["claim", "src/"])
        .code(2)
        .stderr_has("coord remote enable");
}

/// A file lock shared through the remote names one path, taken literally: a file named
/// `src/*.rs` holds that name, not every `.rs` file, and a pattern over it is refused.
#[test]
fn a_shared_lock_holds_its_path_literally() {
    let Some(t) = Team::new(Transport::File) else {
        return;
    };
    let a = t.clone("a");
    let b = t.clone("b");
    remote(&t.env, &a, "alice", &["claim", "--path", "src/*.rs"]).ok();
    remote(&t.env, &b, "bob", &["claim", "--path", "src/x.rs"]).ok();
    remote(&t.env, &b, "bob", &["claim", "src/"])
        .code(3)
        .stderr_has("held by alice")
        .stderr_has("(lock `src/*.rs` through remote `origin`");
    remote(&t.env, &b, "bob", &["who", "src/*.rs", "src/y.rs"])
        .ok()
        .stdout_has("src/*.rs: alice on")
        .stdout_lacks("src/y.rs");
}
