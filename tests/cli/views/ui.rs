//! `coord ui` (contract §14, #49): the address it prints, the token and `Host` checks, bad
//! requests, `/api/status` as `status --json`, the event stream resumed with `Last-Event-ID`
//! across a rotation, its end on a signal, that it writes nothing; and the page in a real
//! headless Chromium (Debian's `chromium` and `chromium-driver`; skipped, saying why, without
//! them).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Env, eventually};
use crate::views::history::log_json;

/// A running `coord ui`.
struct Ui {
    child: Child,
    port: u16,
    token: String,
}

impl Ui {
    fn start(env: &Env) -> Ui {
        let mut child = env.cmd().args(["ui"]).spawn();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = tx.send(first);
        });
        let first = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("an address on stdout");
        let url = first.strip_suffix('\n').expect("one whole line");
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("{url:?}"));
        let (port, token) = rest
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("{url:?}"));
        assert!(
            token.len() >= 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
            "{url}"
        );
        Ui {
            child,
            port: port.parse().unwrap(),
            token: token.to_string(),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    /// GET `path` with the token in the query, from the right `Host`.
    fn get(&self, path: &str) -> Reply {
        let sep = if path.contains('?') { '&' } else { '?' };
        self.request("GET", &format!("{path}{sep}token={}", self.token), "")
    }

    fn request(&self, method: &str, target: &str, headers: &str) -> Reply {
        let host = if headers.contains("Host:") {
            String::new()
        } else {
            format!("Host: 127.0.0.1:{}\r\n", self.port)
        };
        let head =
            format!("{method} {target} HTTP/1.1\r\n{host}{headers}Connection: close\r\n\r\n");
        http(self.port, head.as_bytes())
    }

    fn signal(&mut self, sig: rustix::process::Signal) -> Option<i32> {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
        self.child.wait().unwrap().code()
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer: status code, head, body.
struct Reply {
    code: u16,
    head: String,
    body: String,
}

/// Send `bytes` to 127.0.0.1:`port` and read the whole answer (Content-Length, else to the end).
#[track_caller]
fn http(port: u16, bytes: &[u8]) -> Reply {
    try_http(port, bytes).unwrap_or_else(|e| panic!("127.0.0.1:{port}: {e}"))
}

fn try_http(port: u16, bytes: &[u8]) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.write_all(bytes)?;
    let mut r = BufReader::new(s);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") && r.read_line(&mut head)? > 0 {}
    let code = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let length = head.lines().find_map(|l| {
        let l = l.to_ascii_lowercase();
        l.strip_prefix("content-length:")?
            .trim()
            .parse::<usize>()
            .ok()
    });
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            r.read_exact(&mut body)?;
        }
        None => {
            r.read_to_end(&mut body)?;
        }
    }
    Ok(Reply {
        code,
        head,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// A process killed when dropped (a waiter that would otherwise outlive a failed test).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An open `/api/events` stream.
struct Sse {
    r: BufReader<TcpStream>,
}

impl Sse {
    fn open(ui: &Ui, query: &str, last_event_id: Option<&str>) -> Sse {
        let mut s = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let id = last_event_id.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
        let head = format!(
            "GET /api/events?{query}&token={} HTTP/1.1\r\nHost: localhost:{}\r\n{id}\r\n",
            ui.token, ui.port
        );
        s.write_all(head.as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "HTTP/1.1 200 OK\r\n");
        while line != "\r\n" {
            line.clear();
            r.read_line(&mut line).unwrap();
        }
        Sse { r }
    }

    /// The next event: its id and data (comments and `retry` skipped); fails after 30 s
    /// without one (keep-alive comments do not count).
    #[track_caller]
    fn next(&mut self) -> (String, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut id, mut data) = (None, None);
        loop {
            assert!(Instant::now() < deadline, "no event within 30 s");
            let mut line = String::new();
            assert!(
                self.r.read_line(&mut line).expect("an event within 30 s") > 0,
                "stream ended"
            );
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if let (Some(id), Some(data)) = (id.take(), data.take()) {
                    return (id, data);
                }
            } else if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                assert!(data.is_none(), "one data line per event");
                data = Some(v.to_string());
            }
        }
    }
}

fn parse(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|e| panic!("{data}: {e}"))
}

#[test]
fn ui_prints_its_address_and_refuses_without_the_token_or_from_another_host() {
    let env = Env::new();
    let ui = Ui::start(&env);
    let port = ui.port;
    let page = ui.get("/");
    assert_eq!(page.code, 200, "{}", page.head);
    assert!(page.body.contains("page.js"));
    let cookie = page
        .head
        .lines()
        .find_map(|l| l.strip_prefix("Set-Cookie: "))
        .and_then(|c| c.split(';').next())
        .expect("a cookie")
        .to_string();
    assert!(cookie.ends_with(&ui.token), "{cookie}");
    assert!(
        page.head
            .contains("Content-Security-Policy: default-src 'self'")
    );
    // The cookie alone opens it; neither the token nor the cookie: 403, on every path.
    let with_cookie = ui.request("GET", "/api/status", &format!("Cookie: {cookie}\r\n"));
    assert_eq!(with_cookie.code, 200);
    for path in [
        "/",
        "/api/status",
        "/api/events",
        "/page.js",
        "/nope",
        "/?token=0123",
    ] {
        assert_eq!(ui.request("GET", path, "").code, 403, "{path}");
    }
    let other_cookie = format!("Cookie: coord_ui_{}={}\r\n", port + 1, ui.token);
    assert_eq!(ui.request("GET", "/api/status", &other_cookie).code, 403);
    // DNS rebinding: the token, but another name (or port) in `Host`.
    let target = format!("/api/status?token={}", ui.token);
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.1:{}", port + 1),
        "127.0.0.1".to_string(),
        format!("127.0.0.1.evil.example:{port}"),
    ] {
        let r = ui.request("GET", &target, &format!("Host: {host}\r\n"));
        assert_eq!(r.code, 403, "{host}");
    }
    let r = ui.request("GET", &target, &format!("Host: localhost:{port}\r\n"));
    assert_eq!(r.code, 200);
}

#[test]
fn bad_requests_get_4xx_and_the_server_goes_on() {
    let env = Env::new();
    let ui = Ui::start(&env);
    let t = &ui.token;
    assert_eq!(ui.get("/nope").code, 404);
    assert_eq!(ui.get("/api/status/x").code, 404);
    assert_eq!(ui.request("POST", &format!("/?token={t}"), "").code, 405);
    assert_eq!(
        ui.request("DELETE", &format!("/api/status?token={t}"), "")
            .code,
        405
    );
    assert_eq!(ui.get("/api/events?since=soon").code, 400);
    let r = ui.request(
        "GET",
        &format!("/api/events?token={t}"),
        "Last-Event-ID: x\r\n",
    );
    assert_eq!(r.code, 400);
    for garbage in [
        &b"HELLO\r\n\r\n"[..],
        b"GET /\r\n\r\n",
        b"GET / HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET /\xff\xfe HTTP/1.1\r\n\r\n",
        b"\x00\x01\x02\r\n\r\n",
    ] {
        assert_eq!(http(ui.port, garbage).code, 400, "{garbage:?}");
    }
    let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(64 * 1024));
    assert_eq!(http(ui.port, huge.as_bytes()).code, 431);
    // A client that connects and says nothing, or leaves mid-request, harms no one.
    let idle = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
    let mut half = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
    half.write_all(b"GET /api/sta").unwrap();
    drop(half);
    assert_eq!(ui.get("/api/status").code, 200);
    drop(idle);
}

/// Drop the fields that move with time (ages in seconds).
fn timeless(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !k.ends_with("age_s"));
            map.values_mut().for_each(timeless);
        }
        Value::Array(items) => items.iter_mut().for_each(timeless),
        _ => {}
    }
}

/// bob claims `src/**`; carol waits for `a.md` (alice holds it) until the returned guard goes.
fn claim_and_wait(env: &Env) -> Killed {
    env.agent("bob")
        .args(["lock", "src/**", "--reason", "refactor"])
        .ok();
    let waiter = Killed(
        env.agent("carol")
            .args(["lock", "a.md", "--wait", "120s"])
            .spawn(),
    );
    eventually("carol waits", || !crate::support::tickets(env).is_empty());
    waiter
}

#[test]
fn api_status_is_the_status_json_document() {
    let env = Env::new();
    env.agent("alice").args(["presence", ".", "Task_1"]).ok();
    env.agent("alice")
        .args(["lock", "a.md", "--reason", "fixing"])
        .ok();
    let _waiter = claim_and_wait(&env);
    let ui = Ui::start(&env);
    let mut served: Value = serde_json::from_str(&ui.get("/api/status").body).unwrap();
    let mut printed: Value = env.cmd().args(["status", "--json"]).ok().json();
    timeless(&mut served);
    timeless(&mut printed);
    assert_eq!(served, printed);
    assert_eq!(
        served["waits"][0]["waits_for"],
        json!(["alice"]),
        "{served:#}"
    );
}

/// A page that lost its stream and comes back with the last id it had is sent every event
/// written meanwhile, once, in order, across a rotation of the log; the stream goes on when
/// the history's folder is removed and made again.
#[test]
fn events_resume_after_the_last_event_id_missing_nothing() {
    let env = Env::new();
    env.write(".coord/config", "history_max_size: 4k\n");
    let ui = Ui::start(&env);
    let cycle = |file: &str| {
        env.agent("alice").args(["lock", file]).ok();
        env.agent("alice").args(["unlock", file]).ok();
    };
    cycle("first.md");
    let mut sse = Sse::open(&ui, "since=1h", None);
    let (first_id, first) = sse.next();
    let (last_id, last) = sse.next();
    assert_ne!(first_id, last_id);
    assert!(
        first.contains("\"lock_taken\"") && last.contains("\"lock_released\""),
        "{last}"
    );
    drop(sse);
    // Meanwhile: enough events that the log is rotated (at 2 KiB).
    let rotated = env.path(".coord/history/events.1.jsonl");
    let inode = || {
        std::fs::metadata(&rotated)
            .ok()
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
    };
    let before = inode();
    let mut n = 0;
    while n < 4 || inode() == before {
        cycle(&format!("f{n}.md"));
        n += 1;
        assert!(n < 200, "the log was never rotated");
    }
    let log = log_json(&env, &[]);
    let last = parse(&last);
    let at = log
        .iter()
        .position(|e| *e == last)
        .expect("the last event seen is still kept");
    let missed = &log[at + 1..];
    assert_eq!(missed.len(), 2 * n);
    let mut again = Sse::open(&ui, "since=1h", Some(&last_id));
    let got: Vec<Value> = missed.iter().map(|_| parse(&again.next().1)).collect();
    assert_eq!(got, missed);
    // The history's folder removed: the next event is still sent.
    std::fs::remove_dir_all(env.path(".coord/history")).unwrap();
    cycle("after.md");
    assert!(again.next().1.contains("after.md"));
}

#[test]
fn sigterm_and_sigint_end_it_with_0_and_it_writes_nothing() {
    let env = Env::new();
    env.agent("alice")
        .args(["lock", "a.md", "--reason", "<script>x</script>"])
        .ok();
    env.write("b.md", b"\xff\xfe not utf-8");
    let before = env.snapshot();
    for sig in [rustix::process::Signal::TERM, rustix::process::Signal::INT] {
        let mut ui = Ui::start(&env);
        for path in ["/", "/page.js", "/page.css", "/api/status", "/nope"] {
            ui.get(path);
        }
        let mut sse = Sse::open(&ui, "since=1h", None);
        assert!(sse.next().1.contains("lock_taken"));
        assert_eq!(ui.signal(sig), Some(0), "{sig:?}");
    }
    assert_eq!(env.snapshot(), before);
}

// --- in a real browser ---

/// Headless Chromium driven through chromedriver's WebDriver API.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// `None` (and the reason printed) when Chromium or chromedriver is not installed.
    fn start() -> Option<Browser> {
        for tool in ["chromium", "chromedriver"] {
            if !crate::views::completions::have(tool) {
                eprintln!(
                    "skipped: `{tool}` is not installed (apt-get install chromium chromium-driver)"
                );
                return None;
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        eventually("chromedriver is up", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1300,1000",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", b._profile.path().display()));
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": "/usr/bin/chromium", "args": args}}}});
        let made = b.call("POST", "/session", &caps);
        b.session = made["sessionId"].as_str().expect("a session").to_string();
        Some(b)
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = body.to_string();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        let r = http(self.port, req.as_bytes());
        let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("{}", r.body));
        v["value"].clone()
    }

    fn open(&self, url: &str) {
        self.call(
            "POST",
            &format!("/session/{}/url", self.session),
            &json!({"url": url}),
        );
    }

    fn js(&self, script: &str) -> Value {
        let path = format!("/session/{}/execute/sync", self.session);
        self.call("POST", &path, &json!({"script": script, "args": []}))
    }

    /// The visible text of the element `id`.
    fn text(&self, id: &str) -> String {
        let script = format!(
            "const e = document.getElementById('{id}'); return e && !e.hidden ? e.innerText : '';"
        );
        self.js(&script).as_str().unwrap_or_default().to_string()
    }

    #[track_caller]
    fn shows(&self, id: &str, needles: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = self.text(id);
            if needles.iter().all(|n| text.contains(n)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "#{id} never showed {needles:?}; it shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            // Best effort (this may run while a failed test unwinds): ends Chromium too.
            let req = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                self.session, self.port
            );
            let _ = try_http(self.port, req.as_bytes());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// An agent whose client waits for its user (Claude Code's permission prompt, through the hook).
fn needs_its_user(env: &Env) {
    let cwd = env.root().display().to_string();
    let sid = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50";
    for payload in [
        json!({"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
        json!({"session_id": sid, "cwd": cwd, "hook_event_name": "Notification",
               "message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"}),
    ] {
        env.cmd()
            .args(["hook", "claude"])
            .stdin(payload.to_string())
            .ok();
    }
}

/// The page after its scripts ran shows the agents (the one waiting for its user first), a
/// lock, a claim, a waiting agent and its holder; hostile names and values are shown as text;
/// a lock taken after the page loaded appears without a reload.
#[test]
fn the_page_in_a_browser_shows_who_holds_and_who_waits_live() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let env = Env::new();
    env.agent("alice")
        .args(["presence", ".", "<img src=x onerror=window.pwned=1>"])
        .ok();
    env.agent("alice")
        .args([
            "lock",
            "a.md",
            "--reason",
            "<script>window.pwned=2</script>",
        ])
        .ok();
    let _waiter = claim_and_wait(&env);
    needs_its_user(&env);
    // Hand-made and hostile: a presence with bytes that are not UTF-8 and lines, one too large.
    env.write(
        ".dave_presence",
        b"Agent: Dave\nstatus: ACTIVE\nworking_on: \xff\xfe\n",
    );
    env.write(
        ".eve_presence",
        format!("Agent: Eve\ncurrent_file: {}\n", "x".repeat(100_000)),
    );
    env.write("<b>bold</b>.md", "");
    env.agent("erin").args(["lock", "<b>bold</b>.md"]).ok();
    let ui = Ui::start(&env);
    browser.open(&ui.url());
    browser.shows(
        "needs",
        &[
            "claude-7684f1ed",
            "Claude needs your permission to use Bash",
        ],
    );
    browser.shows("agents", &["alice", "bob", "carol", "dave"]);
    browser.shows("unreadable", &[".eve_presence", "larger than"]);
    let agents = browser.text("agents");
    let row = |name: &str| agents.lines().position(|l| l.starts_with(name));
    assert!(
        row("claude-7684f1ed") < row("alice"),
        "the one waiting for its user first:\n{agents}"
    );
    browser.shows(
        "locks",
        &[
            "a.md", "alice", "LIVE", "src/**", "claim", "bob", "refactor",
        ],
    );
    browser.shows("waits", &["carol", "a.md", "alice"]);
    // Shown as text, never run as markup.
    browser.shows(
        "locks",
        &["<script>window.pwned=2</script>", "<b>bold</b>.md"],
    );
    browser.shows("agents", &["<img src=x onerror=window.pwned=1>"]);
    let found = browser.js(
        "return [window.pwned === undefined, document.scripts.length, document.images.length, document.querySelectorAll('b').length]",
    );
    assert_eq!(found, json!([true, 1, 0, 0]));
    // Live: a lock taken now appears without a reload.
    browser.js("window.loadedOnce = 42; return 0");
    env.agent("frank")
        .args(["lock", "late.md", "--reason", "taken after the load"])
        .ok();
    browser.shows("locks", &["late.md", "frank", "taken after the load"]);
    browser.shows("timeline", &["late.md"]);
    browser.shows("recent", &["frank locked `late.md`"]);
    assert_eq!(
        browser.js("return window.loadedOnce"),
        json!(42),
        "the page was reloaded"
    );
}
