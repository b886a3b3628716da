//! Making text from a server (messages, paths, URLs) safe to print: control
//! characters are shown, not executed, and the secrets of a URL (the password of
//! its user info, the query of a signed URL) are removed.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is: C0 and C1 control characters,
/// DEL, and the Unicode bidirectional overrides and isolates (which reorder what
/// follows them).
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character written as a Rust-style escape (`\n`,
/// `\t`, `\u{1b}`), so that an ANSI sequence or a carriage return is shown instead
/// of acting on the terminal. Borrowed when nothing needs escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_unless(text, |_| false)
}

/// [`escape`] for text of several lines (a message, a table row): line feeds
/// and tabs are kept, every other unsafe character (ESC, CR, the bidirectional
/// overrides) is escaped. The rule of every line the CLI prints.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_unless(text, |c| matches!(c, '\n' | '\t'))
}

/// `text` with the unsafe characters that `keep` does not keep escaped.
fn escape_unless(text: &str, keep: fn(char) -> bool) -> Cow<'_, str> {
    let must_escape = |c: char| is_unsafe(c) && !keep(c);
    if !text.chars().any(must_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if must_escape(c) {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Query parameters that make a URL a bearer credential (S3, CloudFront, GCS,
/// Azure SAS, generic signatures).
const SIGNED: &[&str] = &[
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "signature",
    "sig",
    "key-pair-id",
    "policy",
    "se",
    "sv",
];

/// `name` with its `%XX` escapes decoded (invalid escapes kept as they are),
/// so that `X%2DAmz%2DSignature` is recognised as `X-Amz-Signature`.
fn percent_decoded(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_signed_query(query: &str) -> bool {
    query.split(['&', ';']).any(|pair| {
        let name = percent_decoded(pair.split('=').next().unwrap_or(""));
        let name = name.trim();
        SIGNED.iter().any(|s| name.eq_ignore_ascii_case(s))
    })
}

/// Where the user info of `rest` (a URL after its `://`) ends: the last `@`
/// of the authority. A password with an unencoded `/`, `?` or `#` ends the
/// authority early (`u:pa/ss@host` is no valid URL, but still the user's
/// secret): when the authority then looks like `user:pass` (a colon not
/// followed by a port number), the user info runs to the last `@` of `rest`.
fn userinfo_end(rest: &str) -> Option<usize> {
    let authority = &rest[..rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len())];
    if let Some(at) = authority.rfind('@') {
        return Some(at);
    }
    let (_, after_colon) = authority.split_once(':')?;
    let is_port = after_colon.bytes().all(|b| b.is_ascii_digit());
    if authority.starts_with('[') || is_port {
        return None;
    }
    rest.rfind('@')
}

/// Writes the scheme and the redacted user info of `url` (one URL, from its
/// scheme on) to `out`: the password replaced by `***` (`http://user:***`), or
/// the whole user info when it has no password (a bare user name may be a
/// token: `http://***`). Returns the rest of `url` (from the `@` on), or
/// `None` (nothing written) when `url` has no user info.
fn redact_userinfo<'a>(url: &'a str, out: &mut String) -> Option<&'a str> {
    let scheme_end = url.find("://")? + 3;
    let at = scheme_end + userinfo_end(&url[scheme_end..])?;
    out.push_str(&url[..scheme_end]);
    match url[scheme_end..at].split_once(':') {
        Some((user, _password)) => {
            out.push_str(user);
            out.push_str(":***");
        }
        None => out.push_str("***"),
    }
    Some(&url[at..])
}

/// `url` (one URL) with its secrets removed: the user info's password
/// ([`redact_userinfo`]) and the query of a signed URL (replaced by `?…`).
/// Returns whether anything changed.
fn redact_url(url: &str, out: &mut String) -> bool {
    let (rest, mut changed) = match redact_userinfo(url, out) {
        Some(rest) => (rest, true),
        None => (url, false),
    };
    let (base, query) = match rest.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (rest, None),
    };
    out.push_str(base);
    if let Some(query) = query {
        let (query_only, _fragment) = query.split_once('#').unwrap_or((query, ""));
        if is_signed_query(query_only) {
            out.push_str("?…");
            changed = true;
        } else {
            out.push('?');
            out.push_str(query);
        }
    }
    changed
}

/// `text` with the secrets of every URL in it removed: the password of a URL's
/// user info (`http://user:pass@host` becomes `http://user:***@host`; a user
/// name alone becomes `***`) and the query string of a signed URL (one carrying
/// `X-Amz-Signature`, `Signature`, `sig`, …, also percent-encoded) replaced by
/// `?…`. Other URLs and text are kept. The one redaction rule of every message,
/// log line and setting that shows a URL (an `HF_ENDPOINT`, a request, a
/// redirect).
pub fn redact(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(start) = find_url(rest) {
        let (before, url_and_more) = rest.split_at(start);
        out.push_str(before);
        let end = url_and_more
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')'))
            .unwrap_or(url_and_more.len());
        // Sentence punctuation right after a URL is not part of it.
        let end = url_and_more[..end]
            .trim_end_matches(['.', ',', ':', ';'])
            .len();
        changed |= redact_url(&url_and_more[..end], &mut out);
        rest = &url_and_more[end..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

fn find_url(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    match (lower.find("https://"), lower.find("http://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// [`redact`] then [`escape`]: the form of any server-supplied text or URL in a
/// message or log line.
pub fn safe(text: &str) -> String {
    escape(&redact(text)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown() {
        assert_eq!(escape("plain ü"), "plain ü");
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("x\r\nDownloaded"), "x\\r\\nDownloaded");
        assert_eq!(escape("t\u{7}\u{9b}"), "t\\u{7}\\u{9b}");
        assert_eq!(escape("\u{202e}evil"), "\\u{202e}evil");
        assert!(matches!(escape("ok"), Cow::Borrowed(_)));
        assert_eq!(escape_lines("a\tb\nc\r\u{1b}[1m"), "a\tb\nc\\r\\u{1b}[1m");
        assert!(matches!(escape_lines("two\nlines"), Cow::Borrowed(_)));
    }

    #[test]
    fn signed_queries_are_removed() {
        let url = "https://cdn-lfs.hf.co/repos/ab/cd?X-Amz-Algorithm=AWS4&X-Amz-Signature=deadbeef&X-Amz-Expires=3600";
        let text = format!("HTTP 403 from {url}: denied");
        assert_eq!(
            redact(&text),
            "HTTP 403 from https://cdn-lfs.hf.co/repos/ab/cd?…: denied"
        );
        let cf = "see <https://x.cloudfront.net/a?Expires=1&Signature=s&Key-Pair-Id=k>";
        assert_eq!(redact(cf), "see <https://x.cloudfront.net/a?…>");
        let plain = "http://h/api/x?recursive=true&expand=false";
        assert_eq!(redact(plain), plain);
        assert_eq!(redact("no url? no"), "no url? no");
        assert_eq!(
            safe("\u{1b}]0;title\u{7} https://a/b?sig=1"),
            "\\u{1b}]0;title\\u{7} https://a/b?…"
        );
    }

    #[test]
    fn percent_encoded_signed_names_are_removed() {
        let url = "https://cdn/x?X%2DAmz%2DSignature=abc&X-Amz-Expires=1";
        assert_eq!(redact(url), "https://cdn/x?…");
        assert_eq!(redact("https://cdn/x?%73ig=abc"), "https://cdn/x?…");
        assert_eq!(redact("https://h/x?q=%2"), "https://h/x?q=%2");
    }

    #[test]
    fn user_info_loses_its_password() {
        assert_eq!(
            redact("cannot reach http://u:secret@127.0.0.1:1/api (refused)"),
            "cannot reach http://u:***@127.0.0.1:1/api (refused)"
        );
        assert_eq!(
            redact("HTTPS://hf_token@hub.local"),
            "HTTPS://***@hub.local"
        );
        assert_eq!(
            redact("https://u:p%40ss@h/a?X-Amz-Signature=1"),
            "https://u:***@h/a?…"
        );
        assert_eq!(redact("http://h/a@b and mail@x"), "http://h/a@b and mail@x");
        assert_eq!(redact("http://h:80/a@b"), "http://h:80/a@b");
        assert_eq!(redact("http://[::1]/a:b@c"), "http://[::1]/a:b@c");
        assert_eq!(
            redact("HF_ENDPOINT=http://u:s/e#c?r@127.0.0.1:1 is invalid"),
            "HF_ENDPOINT=http://u:***@127.0.0.1:1 is invalid"
        );
        assert_eq!(safe("http://u:s\u{1b}@h"), "http://u:***@h");
        assert!(matches!(redact("http://h/x"), Cow::Borrowed(_)));
    }
}
