//! The shape rules sigstore-python (reference 0.17.2) applies while reading
//! a bundle, before any cryptography, so that a bundle breaking one is
//! `SignatureBundleInvalid` here as there, not a verification failure or a
//! pass: a `mediaType`, no key outside the Sigstore bundle schema
//! (protobuf-specs `sigstore_bundle.proto` and the messages it uses, in their
//! JSON names), and the rules of [`check_bundle`].

use serde_json::Value;
use sigstore_verify::types::{Bundle, MediaType};

/// The keys each object of a bundle may have, by its path from the top
/// (`[]` steps into array elements).
const SCHEMA: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "mediaType",
            "verificationMaterial",
            "messageSignature",
            "dsseEnvelope",
        ],
    ),
    (
        "verificationMaterial",
        &[
            "publicKey",
            "x509CertificateChain",
            "certificate",
            "tlogEntries",
            "timestampVerificationData",
        ],
    ),
    ("verificationMaterial.publicKey", &["hint"]),
    (
        "verificationMaterial.x509CertificateChain",
        &["certificates"],
    ),
    (
        "verificationMaterial.x509CertificateChain.certificates[]",
        &["rawBytes"],
    ),
    ("verificationMaterial.certificate", &["rawBytes"]),
    (
        "verificationMaterial.tlogEntries[]",
        &[
            "logIndex",
            "logId",
            "kindVersion",
            "integratedTime",
            "inclusionPromise",
            "inclusionProof",
            "canonicalizedBody",
        ],
    ),
    ("verificationMaterial.tlogEntries[].logId", &["keyId"]),
    (
        "verificationMaterial.tlogEntries[].kindVersion",
        &["kind", "version"],
    ),
    (
        "verificationMaterial.tlogEntries[].inclusionPromise",
        &["signedEntryTimestamp"],
    ),
    (
        "verificationMaterial.tlogEntries[].inclusionProof",
        &["logIndex", "rootHash", "treeSize", "hashes", "checkpoint"],
    ),
    (
        "verificationMaterial.tlogEntries[].inclusionProof.checkpoint",
        &["envelope"],
    ),
    (
        "verificationMaterial.timestampVerificationData",
        &["rfc3161Timestamps"],
    ),
    (
        "verificationMaterial.timestampVerificationData.rfc3161Timestamps[]",
        &["signedTimestamp"],
    ),
    ("messageSignature", &["messageDigest", "signature"]),
    ("messageSignature.messageDigest", &["algorithm", "digest"]),
    ("dsseEnvelope", &["payload", "payloadType", "signatures"]),
    ("dsseEnvelope.signatures[]", &["sig", "keyid"]),
];

/// Whether the bundle JSON `value` has a `mediaType` and only keys of the
/// schema; the error names the first unknown key by its path.
pub(crate) fn check_keys(value: &Value) -> Result<(), String> {
    if value.get("mediaType").is_none_or(|m| !m.is_string()) {
        return Err("the bundle has no `mediaType`".into());
    }
    walk(value, "")
}

fn walk(value: &Value, path: &str) -> Result<(), String> {
    match value {
        Value::Array(items) => {
            let inner = format!("{path}[]");
            items.iter().try_for_each(|item| walk(item, &inner))
        }
        Value::Object(map) => {
            let Some((_, allowed)) = SCHEMA.iter().find(|(p, _)| *p == path) else {
                return Ok(());
            };
            for (key, child) in map {
                if !allowed.contains(&key.as_str()) {
                    let shown = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    return Err(format!("unknown key `{shown}` in the bundle"));
                }
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(child, &child_path)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The rules a bundle must follow before any signature is checked, as
/// sigstore-python (reference 0.17.2) applies them while reading it, so that
/// breaking one is `SignatureBundleInvalid` here too: the rules of its media
/// type (`sigstore_bundle::validate_bundle`: a v0.1 SET, a v0.2+ inclusion
/// proof, a v0.3 single certificate, parseable checkpoints), exactly one
/// transparency-log entry, an inclusion proof even in v0.1, and from v0.2 on
/// a SET or a signed timestamp.
pub(crate) fn check_bundle(bundle: &Bundle) -> Result<(), String> {
    sigstore_verify::bundle::validate_bundle(bundle).map_err(|e| e.to_string())?;
    let material = &bundle.verification_material;
    let [entry] = material.tlog_entries.as_slice() else {
        return Err(format!(
            "expected exactly one transparency log entry, found {}",
            material.tlog_entries.len()
        ));
    };
    if entry.inclusion_proof.is_none() {
        return Err("the transparency log entry has no inclusion proof".into());
    }
    let timestamps = &material.timestamp_verification_data.rfc3161_timestamps;
    if bundle.media_type != MediaType::Bundle0_1
        && entry.inclusion_promise.is_none()
        && timestamps.is_empty()
    {
        return Err("the bundle has neither an inclusion promise nor a signed timestamp".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Result<(), String> {
        check_keys(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn schema_keys_pass_and_others_are_named() {
        let good = r#"{"mediaType": "m", "verificationMaterial": {"certificate": {"rawBytes": "AA=="},
            "tlogEntries": [{"logIndex": "1", "inclusionProof": {"checkpoint": {"envelope": "e"}}}]},
            "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": ""}, "signature": ""}}"#;
        assert_eq!(keys(good), Ok(()));
        let nested = good.replace(r#""envelope": "e""#, r#""envelope": "e", "note": 1"#);
        assert_eq!(
            keys(&nested),
            Err("unknown key `verificationMaterial.tlogEntries[].inclusionProof.checkpoint.note` in the bundle".into())
        );
        let top = good.replace(
            r#""mediaType": "m","#,
            r#""mediaType": "m", "extra": true,"#,
        );
        assert_eq!(keys(&top), Err("unknown key `extra` in the bundle".into()));
        let untyped = good.replace(r#""mediaType": "m","#, "");
        assert_eq!(keys(&untyped), Err("the bundle has no `mediaType`".into()));
        assert!(keys("[]").is_err());
    }
}
