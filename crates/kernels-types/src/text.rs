//! Making text from a server (messages, paths, URLs) safe to print: control
//! characters are shown, not executed, and the query of a signed URL is removed.

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
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
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

fn is_signed_query(query: &str) -> bool {
    query.split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or("");
        SIGNED.iter().any(|s| name.eq_ignore_ascii_case(s))
    })
}

/// `text` with the query string of every signed URL in it (one carrying
/// `X-Amz-Signature`, `Signature`, `sig`, …) replaced by `?…`. Other URLs and
/// text are kept.
pub fn redact_signed_urls(text: &str) -> Cow<'_, str> {
    if !text.contains('?') {
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
        let url = &url_and_more[..end];
        match url.split_once('?') {
            Some((base, query)) => {
                let (query, fragment) = query.split_once('#').unwrap_or((query, ""));
                if is_signed_query(query) {
                    out.push_str(base);
                    out.push_str("?…");
                    changed = true;
                } else {
                    out.push_str(base);
                    out.push('?');
                    out.push_str(query);
                    if !fragment.is_empty() {
                        out.push('#');
                        out.push_str(fragment);
                    }
                    if url.ends_with('#') && fragment.is_empty() {
                        out.push('#');
                    }
                }
            }
            None => out.push_str(url),
        }
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

/// [`redact_signed_urls`] then [`escape`]: the form of any server-supplied text
/// in a message or log line.
pub fn safe(text: &str) -> String {
    escape(&redact_signed_urls(text)).into_owned()
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
    }

    #[test]
    fn signed_queries_are_removed() {
        let url = "https://cdn-lfs.hf.co/repos/ab/cd?X-Amz-Algorithm=AWS4&X-Amz-Signature=deadbeef&X-Amz-Expires=3600";
        let text = format!("HTTP 403 from {url}: denied");
        assert_eq!(
            redact_signed_urls(&text),
            "HTTP 403 from https://cdn-lfs.hf.co/repos/ab/cd?…: denied"
        );
        let cf = "see <https://x.cloudfront.net/a?Expires=1&Signature=s&Key-Pair-Id=k>";
        assert_eq!(redact_signed_urls(cf), "see <https://x.cloudfront.net/a?…>");
        let plain = "http://h/api/x?recursive=true&expand=false";
        assert_eq!(redact_signed_urls(plain), plain);
        assert_eq!(redact_signed_urls("no url? no"), "no url? no");
        assert_eq!(
            safe("\u{1b}]0;title\u{7} https://a/b?sig=1"),
            "\\u{1b}]0;title\\u{7} https://a/b?…"
        );
    }
}
