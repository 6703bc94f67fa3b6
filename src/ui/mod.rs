//! `coord ui`: a small HTTP server on 127.0.0.1 for the humans watching (contract §14): one
//! page, `/api/status` (the `coord status --json` document) and `/api/events` (the history as
//! Server-Sent Events, see [`events`]).
//!
//! Invariants:
//!
//! - **Only for the one who started it.** Every request carries the token printed with the
//!   address (in the query, or in the cookie the page's answer sets) and a `Host` of
//!   `127.0.0.1:PORT` or `localhost:PORT`, else it gets 403: another site's page cannot read it,
//!   not even through a name of its own pointed at 127.0.0.1 (DNS rebinding).
//! - **Read-only.** No request writes a byte in the workspace: the status is a look
//!   ([`crate::status::document`]), the events are read ([`crate::history::Tail`]).
//! - **Bounded, never brought down.** At most [`MAX_CONNECTIONS`] at once (503 beyond), a
//!   request head of at most [`MAX_HEAD`] bytes read within [`READ_TIMEOUT`], no body; a reader
//!   that stalls is dropped after [`WRITE_TIMEOUT`]. A request that does not parse gets 400, a
//!   method other than GET 405, an unknown path 404. Nothing a client sends can panic it.
//! - **Plain threads.** A thread per connection on the standard library's `TcpListener`: a few
//!   pages and GET requests without bodies need no async runtime and no HTTP crate.
//!
//! The page (`page.html`, `page.css`, `page.js`, compiled in) loads nothing from the network
//! and puts text from the workspace into the document with `textContent` only.

pub mod events;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections served at once; one more gets 503.
pub const MAX_CONNECTIONS: usize = 64;

/// The largest request head (request line and headers) read.
pub const MAX_HEAD: usize = 16 * 1024;

/// How long a client may take to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a write may stall (a page that stopped reading its events).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one status document answers every page: a burst of events seen by five pages is
/// one look at the workspace, not five per event.
const STATUS_FRESH: Duration = Duration::from_millis(200);

const PAGE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Makes the `coord status --json` document.
type StatusFn = dyn Fn() -> String + Send + Sync;

/// The server of one `coord ui`.
pub struct Server {
    root: PathBuf,
    port: u16,
    token: String,
    status: Box<StatusFn>,
    last: Mutex<Option<(Instant, Arc<String>)>>,
    open: AtomicUsize,
}

/// A request's head, as far as the server reads it.
#[derive(Debug, Default)]
struct Request {
    method: String,
    path: String,
    query: String,
    host: Option<String>,
    cookies: Vec<String>,
    last_event_id: Option<String>,
}

/// A connection's place among the [`MAX_CONNECTIONS`], given back when dropped.
struct Slot(Arc<Server>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Server {
    /// A server of the workspace at `root` for a listener on `port`, with a new random token;
    /// `status` makes the `/api/status` document.
    pub fn new(
        root: &Path,
        port: u16,
        status: impl Fn() -> String + Send + Sync + 'static,
    ) -> Server {
        Server {
            root: root.to_path_buf(),
            port,
            token: new_token(),
            status: Box::new(status),
            last: Mutex::new(None),
            open: AtomicUsize::new(0),
        }
    }

    /// The token a request must carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Answer the connections of `listener`, each on a thread of its own, for as long as the
    /// listener accepts.
    pub fn serve(self: Arc<Self>, listener: &TcpListener) {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
            let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
            if self.open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                self.open.fetch_sub(1, Ordering::SeqCst);
                let _ = reply(&mut stream, 503, "text/plain", "", b"busy\n");
                continue;
            }
            let slot = Slot(Arc::clone(&self));
            // A thread that cannot be started drops the slot with the connection.
            let _ = std::thread::Builder::new()
                .name("coord-ui".into())
                .spawn(move || slot.0.handle(stream));
        }
    }

    fn handle(&self, mut stream: TcpStream) {
        let req = match read_head(&mut stream) {
            Ok(req) => req,
            Err(code) => {
                let _ = reply(&mut stream, code, "text/plain", "", b"bad request\n");
                return;
            }
        };
        let code = match self.check(&req) {
            Err(code) => code,
            Ok(()) => match self.answer(&req, &mut stream) {
                Ok(()) => return,
                Err(code) => code,
            },
        };
        let text = match code {
            403 => "forbidden: open the address `coord ui` printed\n",
            404 => "not found\n",
            405 => "only GET\n",
            _ => "bad request\n",
        };
        let allow = if code == 405 { "Allow: GET\r\n" } else { "" };
        let _ = reply(&mut stream, code, "text/plain", allow, text.as_bytes());
    }

    /// The `Host` and the token: 403 unless both are right; then 405 for a method but GET.
    fn check(&self, req: &Request) -> Result<(), u16> {
        let host_ok = req.host.as_deref().is_some_and(|h| {
            let port = format!(":{}", self.port);
            h.strip_suffix(&port)
                .is_some_and(|name| name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost"))
        });
        let cookie = self.cookie_name();
        let token_ok = param(&req.query, "token").is_some_and(|t| same(t, &self.token))
            || req
                .cookies
                .iter()
                .flat_map(|c| c.split(';'))
                .filter_map(|kv| kv.trim().split_once('='))
                .any(|(k, v)| k == cookie && same(v, &self.token));
        match (host_ok && token_ok, req.method == "GET") {
            (false, _) => Err(403),
            (true, false) => Err(405),
            (true, true) => Ok(()),
        }
    }

    /// Per port: two servers on one machine keep their tokens apart.
    fn cookie_name(&self) -> String {
        format!("coord_ui_{}", self.port)
    }

    /// The answer to a request that passed [`Server::check`] (a client gone midway is no
    /// error of the server's); `Err` with the status code of a refusal.
    fn answer(&self, req: &Request, stream: &mut TcpStream) -> Result<(), u16> {
        let _gone = match req.path.as_str() {
            "/" => {
                let cookie = format!(
                    "Set-Cookie: {}={}; Path=/; HttpOnly; SameSite=Strict\r\n",
                    self.cookie_name(),
                    self.token
                );
                reply(stream, 200, "text/html", &cookie, PAGE.as_bytes())
            }
            "/page.css" => reply(stream, 200, "text/css", "", STYLE.as_bytes()),
            "/page.js" => reply(stream, 200, "text/javascript", "", SCRIPT.as_bytes()),
            "/api/status" => reply(
                stream,
                200,
                "application/json",
                "",
                self.status().as_bytes(),
            ),
            "/api/events" => {
                let start =
                    events::Start::of(param(&req.query, "since"), req.last_event_id.as_deref())?;
                events::stream(&self.root, start, stream)
            }
            _ => return Err(404),
        };
        Ok(())
    }

    /// The status document, looked at again once [`STATUS_FRESH`] has passed.
    fn status(&self) -> Arc<String> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, doc)) = last.as_ref()
            && at.elapsed() < STATUS_FRESH
        {
            return Arc::clone(doc);
        }
        let doc = Arc::new((self.status)());
        *last = Some((Instant::now(), Arc::clone(&doc)));
        doc
    }
}

/// 128 random bits as hex, from the kernel (or the process's hashing keys where it has none).
fn new_token() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        bytes[..8].copy_from_slice(&crate::host::random_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&crate::host::random_u64().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equal, in a time that does not tell how much of the token was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The value of `name` in a query string (`a=1&b=2`), as sent.
fn param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Read and parse the request head; the status code of the answer when it cannot be had.
fn read_head(stream: &mut impl Read) -> Result<Request, u16> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let end = head.windows(4).position(|w| w == b"\r\n\r\n");
        if end.unwrap_or(head.len()) > MAX_HEAD {
            return Err(431);
        }
        if let Some(end) = end {
            break end;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(400),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    };
    let text = std::str::from_utf8(&head[..end]).map_err(|_| 400u16)?;
    let mut lines = text.split("\r\n");
    let first: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    let [method, target, version] = first[..] else {
        return Err(400);
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') || method.is_empty() {
        return Err(400);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut req = Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        ..Request::default()
    };
    for line in lines {
        let (name, value) = line.split_once(':').ok_or(400u16)?;
        let value = value.trim().to_string();
        match name.to_ascii_lowercase().as_str() {
            "host" if req.host.is_some() => return Err(400),
            "host" => req.host = Some(value),
            "cookie" => req.cookies.push(value),
            "last-event-id" => req.last_event_id = Some(value),
            _ => {}
        }
    }
    Ok(req)
}

/// Write a whole answer, then close (no keep-alive: one request per connection).
fn reply(
    out: &mut impl Write,
    code: u16,
    kind: &str,
    extra: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {kind}; charset=utf-8\r\nContent-Length: {}\r\n{}{extra}\r\n",
        body.len(),
        HEADERS
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// Sent with every answer: nothing cached, no token in a `Referer`, no framing by another
/// site, nothing loaded but from this server, no type guessed.
const HEADERS: &str = "Cache-Control: no-store\r\nConnection: close\r\nReferrer-Policy: no-referrer\r\n\
X-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: impl AsRef<[u8]>) -> Result<Request, u16> {
        read_head(&mut text.as_ref())
    }

    #[test]
    fn heads_parse_or_get_4xx() {
        let req = head("GET /api/events?since=5m&token=t HTTP/1.1\r\nHost: localhost:1\r\nLast-Event-ID: 1-2-3\r\n\r\n").unwrap();
        assert_eq!(
            (req.path.as_str(), req.query.as_str()),
            ("/api/events", "since=5m&token=t")
        );
        assert_eq!(param(&req.query, "token"), Some("t"));
        assert_eq!(req.last_event_id.as_deref(), Some("1-2-3"));
        for bad in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"GET /\r\n\r\n",
            b"GET http://x/ HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            b"GET /\xff HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(
                head(bad).map(|_| ()),
                Err(400),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD + 10));
        assert_eq!(head(&huge).map(|_| ()), Err(431));
    }

    #[test]
    fn host_and_token_are_checked() {
        let s = Server::new(Path::new("/nonexistent"), 8123, String::new);
        let t = s.token().to_string();
        assert_eq!(t.len(), 32);
        assert_ne!(t, Server::new(Path::new("/"), 1, String::new).token());
        let req = |host: &str, query: String, cookie: &str, method: &str| Request {
            method: method.into(),
            path: "/".into(),
            query,
            host: Some(host.into()),
            cookies: vec![cookie.into()],
            last_event_id: None,
        };
        let q = format!("token={t}");
        assert_eq!(
            s.check(&req("127.0.0.1:8123", q.clone(), "", "GET")),
            Ok(())
        );
        assert_eq!(
            s.check(&req("LocalHost:8123", q.clone(), "", "GET")),
            Ok(())
        );
        let c = format!("a=b; coord_ui_8123={t}");
        assert_eq!(
            s.check(&req("localhost:8123", String::new(), &c, "GET")),
            Ok(())
        );
        assert_eq!(
            s.check(&req("localhost:8123", q.clone(), "", "POST")),
            Err(405)
        );
        for (host, query, cookie) in [
            ("evil.example:8123", q.clone(), ""),
            ("127.0.0.1:8124", q.clone(), ""),
            ("127.0.0.1", q.clone(), ""),
            ("127.0.0.1:8123", String::new(), ""),
            ("127.0.0.1:8123", "token=x".into(), ""),
            ("127.0.0.1:8123", String::new(), &*format!("coord_ui_1={t}")),
        ] {
            assert_eq!(
                s.check(&req(host, query, cookie, "GET")),
                Err(403),
                "{host}"
            );
        }
    }
}
