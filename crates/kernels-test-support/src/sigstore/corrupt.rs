//! Bundle texts that must not verify, made from a good bundle. Wrong
//! signatures and foreign certificates are made while signing
//! ([`super::SignOptions`]); these only change the text.

use serde_json::Value;

/// A media type no Sigstore client knows.
pub const UNKNOWN_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle+json;version=9.9";

/// Size of [`huge`]'s output, in bytes: above `kernels_trust`'s 256 KiB limit.
pub const HUGE_BYTES: usize = 320 * 1024;

/// The first half of `bundle` (not valid JSON).
pub fn truncated(bundle: &str) -> String {
    let mut end = bundle.len() / 2;
    while !bundle.is_char_boundary(end) {
        end -= 1;
    }
    bundle[..end].to_string()
}

/// Text that is not JSON at all.
pub fn not_json() -> String {
    "this is not a Sigstore bundle\n".to_string()
}

/// `bundle` with its `mediaType` replaced by [`UNKNOWN_MEDIA_TYPE`].
pub fn unknown_media_type(bundle: &str) -> String {
    let mut value: Value = serde_json::from_str(bundle).expect("a bundle made by TestSigstore");
    value["mediaType"] = Value::from(UNKNOWN_MEDIA_TYPE);
    format!("{value:#}\n")
}

/// `bundle` followed by whitespace up to [`HUGE_BYTES`] and a stray `]`: a
/// huge file that no JSON parser accepts either.
pub fn huge(bundle: &str) -> String {
    let mut text = bundle.trim_end().to_string();
    let padding = HUGE_BYTES.saturating_sub(text.len() + 2);
    text.push_str(&" ".repeat(padding));
    text.push_str("]\n");
    text
}

/// `bundle` with one base64 character of its message signature changed, so
/// that the bundle's signature no longer matches its Rekor entry.
pub fn flipped_signature(bundle: &str) -> String {
    let mut value: Value = serde_json::from_str(bundle).expect("a bundle made by TestSigstore");
    let signature = value["messageSignature"]["signature"]
        .as_str()
        .expect("a message signature")
        .to_string();
    let mut chars: Vec<char> = signature.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    value["messageSignature"]["signature"] = Value::from(chars.into_iter().collect::<String>());
    format!("{value:#}\n")
}
