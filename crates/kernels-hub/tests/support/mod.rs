//! A scripted HTTP/1.1 listener for client tests: every request is recorded
//! byte for byte, and a closure decides the answer from the request line.

#![allow(dead_code)] // each test binary uses a part of it

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How to answer one request.
pub enum Reply {
    /// Head (status line and headers, without the blank line) and a body sent
    /// with `Content-Length`.
    Full(String, Vec<u8>),
    /// Head, then the body bytes forever (no length, connection close framing).
    Endless(String),
    /// Head, then one byte every `Duration`, forever.
    Trickle(String, Duration),
}

/// A listener on loopback recording every request it received.
pub struct Listener {
    /// `http://127.0.0.1:<port>` or `http://localhost:<port>`.
    pub base: String,
    log: Arc<Mutex<Vec<u8>>>,
}

impl Listener {
    /// Starts a listener on `host` (`127.0.0.1` or `localhost`) answering with `reply(path)`.
    pub async fn start(
        host: &str,
        reply: impl Fn(&str) -> Reply + Send + Sync + 'static,
    ) -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let reply = Arc::new(reply);
        let shared = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let log = shared.clone();
                let reply = reply.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, log, &*reply).await;
                });
            }
        });
        Listener {
            base: format!("http://{host}:{port}"),
            log,
        }
    }

    /// Every byte received so far.
    pub fn received(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }
}

async fn serve(
    mut socket: TcpStream,
    log: Arc<Mutex<Vec<u8>>>,
    reply: &(dyn Fn(&str) -> Reply + Send + Sync),
) -> std::io::Result<()> {
    loop {
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") {
            if socket.read(&mut byte).await? == 0 {
                return Ok(());
            }
            request.push(byte[0]);
        }
        log.lock().unwrap().extend_from_slice(&request);
        let text = String::from_utf8_lossy(&request).into_owned();
        let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
        match reply(&path) {
            Reply::Full(head, body) => {
                let head = format!("{head}\r\ncontent-length: {}\r\n\r\n", body.len());
                socket.write_all(head.as_bytes()).await?;
                socket.write_all(&body).await?;
            }
            Reply::Endless(head) => {
                socket
                    .write_all(format!("{head}\r\nconnection: close\r\n\r\n").as_bytes())
                    .await?;
                let chunk = vec![b'x'; 64 << 10];
                loop {
                    socket.write_all(&chunk).await?;
                }
            }
            Reply::Trickle(head, every) => {
                socket
                    .write_all(format!("{head}\r\nconnection: close\r\n\r\n").as_bytes())
                    .await?;
                loop {
                    socket.write_all(b" ").await?;
                    tokio::time::sleep(every).await;
                }
            }
        }
    }
}

/// A JSON answer.
pub fn json(status: &str, extra_headers: &str, body: &str) -> Reply {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-type: application/json");
    if !extra_headers.is_empty() {
        head.push_str("\r\n");
        head.push_str(extra_headers);
    }
    Reply::Full(head, body.as_bytes().to_vec())
}
