//! The access log (`kernels serve --access-log PATH|-`): one line per
//! request in the Combined Log Format (the Common Log Format plus the
//! quoted `Referer` and `User-Agent`), as Apache's `combined` and nginx's
//! default `log_format` write it:
//!
//! ```text
//! 127.0.0.1 - - [21/May/2025:10:00:00 +0000] "GET /api/kernels/acme/relu/refs HTTP/1.1" 200 312 "-" "kernels/0.1.0"
//! ```
//!
//! Times are UTC. The user field is always `-`: tokens are never logged.
//! Quotes, backslashes and bytes outside printable ASCII inside quoted fields
//! are written as `\xHH`. Lines are written by one thread; when it falls
//! behind by more than [`QUEUE`] lines, new lines are dropped rather than
//! slowing requests down.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::SystemTime;

/// Lines queued for the writer thread before new ones are dropped.
const QUEUE: usize = 16 * 1024;

/// Where the access log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLogTarget {
    /// Standard error (`-`).
    Stderr,
    /// A file, opened for appending (created if missing).
    File(PathBuf),
}

impl AccessLogTarget {
    /// `-` is standard error, anything else a file path.
    pub fn parse(value: &str) -> AccessLogTarget {
        if value == "-" {
            AccessLogTarget::Stderr
        } else {
            AccessLogTarget::File(PathBuf::from(value))
        }
    }
}

enum Message {
    Line(String),
    /// Reopen the file (after log rotation; sent on SIGHUP).
    Reopen,
}

/// A running access log.
#[derive(Debug, Clone)]
pub(crate) struct AccessLog {
    tx: mpsc::SyncSender<Message>,
}

fn open(target: &AccessLogTarget) -> std::io::Result<Box<dyn Write + Send>> {
    Ok(match target {
        AccessLogTarget::Stderr => Box::new(std::io::stderr()),
        AccessLogTarget::File(path) => Box::new(std::io::BufWriter::new(
            fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?,
        )),
    })
}

impl AccessLog {
    /// Opens the target (failing now if it cannot be opened) and starts the writer thread.
    pub(crate) fn start(target: AccessLogTarget) -> std::io::Result<AccessLog> {
        let mut out = open(&target)?;
        let (tx, rx) = mpsc::sync_channel::<Message>(QUEUE);
        std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut next = Some(first);
                    while let Some(message) = next.take() {
                        match message {
                            Message::Line(line) => {
                                let _ = out.write_all(line.as_bytes());
                            }
                            Message::Reopen => {
                                let _ = out.flush();
                                match open(&target) {
                                    Ok(new) => out = new,
                                    Err(err) => {
                                        tracing::warn!("cannot reopen the access log: {err}")
                                    }
                                }
                            }
                        }
                        next = rx.try_recv().ok();
                    }
                    // Flush whenever the queue is empty: lines appear promptly
                    // at low load and in batches under load.
                    let _ = out.flush();
                }
            })?;
        Ok(AccessLog { tx })
    }

    /// Queues one line (dropped if the writer is too far behind).
    pub(crate) fn write(&self, line: String) {
        let _ = self.tx.try_send(Message::Line(line));
    }

    /// Reopens the log file, for log rotation.
    pub(crate) fn reopen(&self) {
        let _ = self.tx.try_send(Message::Reopen);
    }
}

/// What the log needs of a request, taken when it arrives.
#[derive(Debug)]
pub(crate) struct Entry {
    peer: SocketAddr,
    time: SystemTime,
    request_line: String,
    referer: String,
    user_agent: String,
}

impl Entry {
    pub(crate) fn new<B>(peer: SocketAddr, req: &axum::http::Request<B>) -> Entry {
        let target = req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().path(), |pq| pq.as_str());
        let header = |name: axum::http::header::HeaderName| {
            req.headers()
                .get(name)
                .map_or_else(|| "-".to_owned(), |v| escape(v.as_bytes()))
        };
        Entry {
            peer,
            time: SystemTime::now(),
            request_line: format!(
                "{} {} {:?}",
                escape(req.method().as_str().as_bytes()),
                escape(target.as_bytes()),
                req.version()
            ),
            referer: header(axum::http::header::REFERER),
            user_agent: header(axum::http::header::USER_AGENT),
        }
    }

    /// The finished line, with the status and the body bytes sent.
    pub(crate) fn line(&self, status: u16, bytes: u64) -> String {
        let bytes = if bytes == 0 {
            "-".to_owned()
        } else {
            bytes.to_string()
        };
        format!(
            "{} - - [{}] \"{}\" {status} {bytes} \"{}\" \"{}\"\n",
            self.peer.ip(),
            clf_time(self.time),
            self.request_line,
            self.referer,
            self.user_agent
        )
    }
}

/// Printable ASCII except `"` and `\` as is, everything else as `\xHH`.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// `dd/Mon/yyyy:HH:MM:SS +0000`.
fn clf_time(time: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{day:02}/{}/{year:04}:{:02}:{:02}:{:02} +0000",
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month 1–12, day 1–31), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_clf_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_747_821_600);
        assert_eq!(clf_time(t), "21/May/2025:10:00:00 +0000");
        assert_eq!(
            clf_time(SystemTime::UNIX_EPOCH),
            "01/Jan/1970:00:00:00 +0000"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(clf_time(leap), "29/Feb/2000:00:00:00 +0000");
    }

    #[test]
    fn lines_are_combined_format() {
        let req = axum::http::Request::builder()
            .method("GET")
            .uri("/a%2Fb?x=1")
            .header(
                "user-agent",
                axum::http::HeaderValue::from_bytes(b"evil \"agent\" \xe9").unwrap(),
            )
            .body(())
            .unwrap();
        let mut entry = Entry::new("10.0.0.7:5555".parse().unwrap(), &req);
        entry.time = SystemTime::UNIX_EPOCH;
        assert_eq!(
            entry.line(200, 12),
            "10.0.0.7 - - [01/Jan/1970:00:00:00 +0000] \"GET /a%2Fb?x=1 HTTP/1.1\" 200 12 \"-\" \"evil \\x22agent\\x22 \\xE9\"\n"
        );
        assert!(entry.line(304, 0).contains("\" 304 - \""));
    }
}
