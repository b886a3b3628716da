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
    edit(bundle, |v| {
        let signature = v["messageSignature"]["signature"]
            .as_str()
            .expect("a signature");
        v["messageSignature"]["signature"] = Value::from(flip_base64(signature));
    })
}

/// Parse a bundle made by `TestSigstore`, change it with `f`, print it.
fn edit(bundle: &str, f: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(bundle).expect("a bundle made by TestSigstore");
    f(&mut value);
    format!("{value:#}\n")
}

fn first_entry(value: &mut Value) -> &mut serde_json::Map<String, Value> {
    value["verificationMaterial"]["tlogEntries"][0]
        .as_object_mut()
        .expect("a tlog entry")
}

/// `bundle` without the tlog entry's `inclusionProof` (only the SET is left).
pub fn without_inclusion_proof(bundle: &str) -> String {
    edit(bundle, |v| {
        first_entry(v).remove("inclusionProof");
    })
}

/// `bundle` without the tlog entry's `inclusionPromise` (the SET).
pub fn without_inclusion_promise(bundle: &str) -> String {
    edit(bundle, |v| {
        first_entry(v).remove("inclusionPromise");
    })
}

/// `bundle` with no tlog entry at all.
pub fn without_tlog_entries(bundle: &str) -> String {
    edit(bundle, |v| {
        v["verificationMaterial"]["tlogEntries"] = Value::Array(Vec::new());
    })
}

/// `bundle` with its tlog entry listed twice.
pub fn two_tlog_entries(bundle: &str) -> String {
    edit(bundle, |v| {
        let entry = v["verificationMaterial"]["tlogEntries"][0].clone();
        v["verificationMaterial"]["tlogEntries"] = Value::Array(vec![entry.clone(), entry]);
    })
}

/// A v0.3 `bundle` whose leaf is given as an `x509CertificateChain`, the
/// v0.1/v0.2 shape that v0.3 forbids.
pub fn certificate_as_chain(bundle: &str) -> String {
    edit(bundle, |v| {
        let material = v["verificationMaterial"].as_object_mut().expect("material");
        let leaf = material.remove("certificate").expect("a v0.3 bundle");
        material.insert(
            "x509CertificateChain".into(),
            serde_json::json!({"certificates": [leaf]}),
        );
    })
}

/// `bundle` with the Rekor signed entry timestamp replaced by the
/// checkpoint's signature bytes (a valid signature over other data).
pub fn wrong_signed_entry_timestamp(bundle: &str) -> String {
    edit(bundle, |v| {
        let entry = first_entry(v);
        let set = entry["inclusionPromise"]["signedEntryTimestamp"].clone();
        let other = flip_base64(set.as_str().expect("a SET"));
        entry["inclusionPromise"]["signedEntryTimestamp"] = Value::from(other);
    })
}

/// `bundle` with one character of the checkpoint's signature line changed.
pub fn wrong_checkpoint_signature(bundle: &str) -> String {
    edit(bundle, |v| {
        let entry = first_entry(v);
        let envelope = entry["inclusionProof"]["checkpoint"]["envelope"]
            .as_str()
            .expect("a checkpoint")
            .to_string();
        let (note, signature_line) = envelope.split_once("\n\n").expect("a signed note");
        let (name_part, sig) = signature_line
            .trim_end()
            .rsplit_once(' ')
            .expect("a signature");
        let changed = format!("{note}\n\n{name_part} {}\n", flip_base64(sig));
        entry["inclusionProof"]["checkpoint"]["envelope"] = Value::from(changed);
    })
}

/// `b64` with one character in its middle changed to another base64 letter.
fn flip_base64(b64: &str) -> String {
    let mut chars: Vec<char> = b64.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// `bundle` without its `mediaType` key.
pub fn without_media_type(bundle: &str) -> String {
    edit(bundle, |v| {
        v.as_object_mut()
            .expect("a bundle object")
            .remove("mediaType");
    })
}

/// `bundle` with its `messageDigest` under another key (the digest is
/// optional; the unknown key is what differs).
pub fn misspelled_message_digest(bundle: &str) -> String {
    edit(bundle, |v| {
        let signature = v["messageSignature"]
            .as_object_mut()
            .expect("a message signature");
        let digest = signature.remove("messageDigest").expect("a message digest");
        signature.insert("messageDigst".into(), digest);
    })
}
