//! Git remotes for the tests, on 127.0.0.1 only: a folder of bare repositories served by
//! `git daemon --enable=receive-pack`, and by `git http-backend` (smart HTTP, what hosts
//! serve) behind a small HTTP server written here, optionally asking for Basic credentials.
//! Each server stops (its processes ended by pid) when dropped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `git daemon` serving every repository under a folder.
pub struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    /// Serve `base` (`git://127.0.0.1:PORT/NAME.git` for `base/NAME.git`); `None` (said on
    /// stderr) when `git daemon` cannot be started here.
    pub fn start(base: &Path) -> Option<Daemon> {
        for _ in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .ok()?
                .local_addr()
                .ok()?
                .port();
            let mut child = Command::new("git")
                .args([
                    "daemon",
                    "--reuseaddr",
                    "--export-all",
                    "--enable=receive-pack",
                    "--listen=127.0.0.1",
                    &format!("--port={port}"),
                    &format!("--base-path={}", base.display()),
                ])
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // `git daemon` runs `git-daemon` as a child of its own: a group of their own
                // lets both be stopped (killing `git` alone left `git-daemon` serving).
                .process_group(0)
                .spawn()
                .ok()?;
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(Daemon { child, port });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop_group(&mut child);
        }
        eprintln!("skipped: `git daemon` cannot be started on 127.0.0.1 here");
        None
    }

    /// The URL of repository `name` (`r.git`).
    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        stop_group(&mut self.child);
    }
}

/// Stop `child` and every process of its group (it leads one: `process_group(0)`).
fn stop_group(child: &mut Child) {
    if let Some(pgid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `git http-backend` behind a loopback HTTP server, one thread a connection.
pub struct Http {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Http {
    /// Serve the repositories under `base` (`http://127.0.0.1:PORT/NAME.git`); with `auth`
    /// (`user:password`), every request without those Basic credentials gets 401.
    pub fn start(base: &Path, auth: Option<&str>) -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let base = base.to_path_buf();
        let expected = auth.map(|a| format!("Basic {}", base64(a.as_bytes())));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let base = base.clone();
                let expected = expected.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &base, expected.as_deref());
                });
            }
        });
        Http { port, stop }
    }

    /// The URL of repository `name`, with `userinfo` (`user:password@`) when given.
    pub fn url(&self, name: &str, userinfo: &str) -> String {
        format!("http://{userinfo}127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One request: read it, hand it to `git http-backend` as CGI, write back what it said.
fn serve(conn: TcpStream, base: &Path, auth: Option<&str>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    if let Some(expected) = auth
        && headers.get("authorization").map(String::as_str) != Some(expected)
    {
        out.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )?;
        return Ok(());
    }
    let body = if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        dechunk(&mut reader)?
    } else {
        let n: usize = headers
            .get("content-length")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let mut b = vec![0; n];
        reader.read_exact(&mut b)?;
        b
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut cgi = Command::new("git");
    cgi.arg("http-backend")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", base)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", "tester")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (header, var) in [
        ("content-type", "CONTENT_TYPE"),
        ("git-protocol", "GIT_PROTOCOL"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
    ] {
        if let Some(v) = headers.get(header) {
            cgi.env(var, v);
        }
    }
    let mut child = cgi.spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut output = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut output)?;
    let _ = feeder.join();
    let _ = child.wait();
    let split = output
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| output.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (head, payload) = match split {
        Some((i, n)) => (
            String::from_utf8_lossy(&output[..i]).into_owned(),
            &output[i + n..],
        ),
        None => (String::new(), &output[..]),
    };
    let mut status = "200 OK".to_string();
    let mut response = String::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_string(),
            Some(_) => response.push_str(&format!("{}\r\n", h.trim_end())),
            None => {}
        }
    }
    out.write_all(
        format!(
            "HTTP/1.1 {status}\r\n{response}Content-Length: {}\r\nConnection: close\r\n\r\n",
            payload.len()
        )
        .as_bytes(),
    )?;
    out.write_all(payload)?;
    out.flush()
}

/// A chunked request body, decoded.
fn dechunk(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size)?;
        let n =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        if n == 0 {
            let mut end = String::new();
            r.read_line(&mut end)?;
            return Ok(body);
        }
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk)?;
        body.extend_from_slice(&chunk[..n]);
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A bare repository `name` made under `base`.
pub fn bare(base: &Path, name: &str) -> PathBuf {
    let path = base.join(name);
    let out = crate::rigs::git(base)
        .args(["init", "-q", "--bare"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "git init --bare: {out:?}");
    path
}

#[test]
fn base64_is_the_standard_one() {
    assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"a"), "YQ==");
}
