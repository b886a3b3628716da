//! A hostile front for `kernels serve` (issue 11, item 8): a plain-thread
//! HTTP/1.1 listener that records every byte it receives and, per request,
//! either forwards it to the real server or plays a lie (a gzip bomb, a stalled
//! or endless body, a wrong size, a redirect loop, a poisoned listing, …).
//!
//! The same scripted-listener idea as `crates/kernels-hub/tests/support`, made
//! blocking so that the binary-level tests need no runtime, and with a forward
//! mode so that every request not under attack gets the real answer.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the script sees it.
pub struct Request<'a> {
    /// `GET`, `HEAD`, …
    pub method: &'a str,
    /// The request target (path and query).
    pub path: &'a str,
    /// This listener's own base URL (for loops back to itself).
    pub base: &'a str,
    /// The request body (`Content-Length` framing only).
    pub body: &'a [u8],
}

/// How to answer one request.
pub enum Play {
    /// Pass the request to the upstream server and relay its answer.
    Forward,
    /// Status line plus header lines (no blank line), then `body` framed by
    /// `Content-Length` (unless the head already has one: a wrong size).
    Full(String, Vec<u8>),
    /// The head, then `x` bytes forever (connection-close framing).
    Endless(String),
    /// The head, then one space every `Duration`, forever.
    Trickle(String, Duration),
}

impl Play {
    /// A JSON answer with `status` (e.g. `"404 Not Found"`) and extra header lines.
    pub fn json(status: &str, extra_headers: &str, body: &str) -> Play {
        let mut head = format!("HTTP/1.1 {status}\r\ncontent-type: application/json");
        if !extra_headers.is_empty() {
            head.push_str("\r\n");
            head.push_str(extra_headers.trim_end());
        }
        Play::Full(head, body.as_bytes().to_vec())
    }

    /// A redirect to `location`.
    pub fn redirect(location: &str) -> Play {
        Play::Full(
            format!("HTTP/1.1 302 Found\r\nlocation: {location}"),
            Vec::new(),
        )
    }
}

type Script = dyn Fn(&Request<'_>) -> Play + Send + Sync;

/// A hostile listener on loopback; threads end with the test process.
pub struct Hostile {
    /// `http://<host>:<port>`.
    pub base: String,
    log: Arc<Mutex<Vec<u8>>>,
}

impl Hostile {
    /// Listens on a free loopback port, named `host` in [`Hostile::base`]
    /// (`127.0.0.1` or `localhost`: two origins for one machine), forwarding to
    /// `upstream` (a base URL, or empty for none) what `script` does not attack.
    pub fn start(
        host: &str,
        upstream: &str,
        script: impl Fn(&Request<'_>) -> Play + Send + Sync + 'static,
    ) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let base = format!("http://{host}:{port}");
        let log = Arc::new(Mutex::new(Vec::new()));
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let script: Arc<Script> = Arc::new(script);
        let (shared, me) = (log.clone(), base.clone());
        std::thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(socket) = socket else { return };
                let (log, script, me, upstream) =
                    (shared.clone(), script.clone(), me.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let _ = serve(socket, &log, &*script, &me, &upstream);
                });
            }
        });
        Hostile { base, log }
    }

    /// Every byte received so far, on every connection.
    pub fn received(&self) -> Vec<u8> {
        self.log.lock().unwrap().clone()
    }
}

fn read_head(socket: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if socket.read(&mut byte)? == 0 {
            return Ok(None);
        }
        head.push(byte[0]);
        if head.len() > 1 << 20 {
            return Ok(None);
        }
    }
    Ok(Some(head))
}

fn serve(
    mut socket: TcpStream,
    log: &Mutex<Vec<u8>>,
    script: &Script,
    base: &str,
    upstream: &str,
) -> std::io::Result<()> {
    while let Some(head) = read_head(&mut socket)? {
        log.lock().unwrap().extend_from_slice(&head);
        let text = String::from_utf8_lossy(&head).into_owned();
        let mut words = text.split_whitespace();
        let method = words.next().unwrap_or("GET").to_owned();
        let path = words.next().unwrap_or("/").to_owned();
        let length = text
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0)
            .min(1 << 20);
        let mut body = vec![0; length];
        socket.read_exact(&mut body)?;
        log.lock().unwrap().extend_from_slice(&body);
        let request = Request {
            method: &method,
            path: &path,
            base,
            body: &body,
        };
        match script(&request) {
            Play::Forward => return forward(socket, &text, &body, upstream),
            Play::Full(head, body) => {
                let mut head = head;
                if !head.to_ascii_lowercase().contains("content-length:") {
                    head.push_str(&format!("\r\ncontent-length: {}", body.len()));
                }
                socket.write_all(format!("{head}\r\n\r\n").as_bytes())?;
                if method != "HEAD" {
                    socket.write_all(&body)?;
                }
            }
            Play::Endless(head) => {
                socket.write_all(format!("{head}\r\nconnection: close\r\n\r\n").as_bytes())?;
                let chunk = vec![b'x'; 64 << 10];
                loop {
                    socket.write_all(&chunk)?;
                }
            }
            Play::Trickle(head, every) => {
                socket.write_all(format!("{head}\r\nconnection: close\r\n\r\n").as_bytes())?;
                loop {
                    socket.write_all(b" ")?;
                    std::thread::sleep(every);
                }
            }
        }
    }
    Ok(())
}

/// Relays one request to `upstream` with `Connection: close`, then the answer
/// back until the upstream closes; the client connection is closed after it.
fn forward(mut socket: TcpStream, head: &str, body: &[u8], upstream: &str) -> std::io::Result<()> {
    let mut out = String::new();
    for line in head.trim_end().split("\r\n") {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    let mut up = TcpStream::connect(upstream)?;
    up.write_all(out.as_bytes())?;
    up.write_all(body)?;
    std::io::copy(&mut up, &mut socket)?;
    socket.shutdown(std::net::Shutdown::Both)
}
