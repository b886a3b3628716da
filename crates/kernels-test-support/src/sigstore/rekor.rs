//! The test Rekor log: hashedrekord 0.0.1 bodies, the signed entry
//! timestamp, an RFC 6962 inclusion proof and its signed checkpoint.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::pki::Key;

/// The checkpoint origin line of the test log (`<host> - <tree id>`, as Rekor v1 writes it).
pub(crate) const ORIGIN: &str = "rekor.kernels-test.invalid - 4242424242424242424";

/// How many leaves the test log's tree has when an entry is logged; the
/// entry is the last one, the others are filler.
const TREE_SIZE: u64 = 5;

/// One logged entry, ready to put into a bundle.
pub(crate) struct LoggedEntry {
    /// Canonical JSON of the hashedrekord body.
    pub(crate) body: Vec<u8>,
    pub(crate) integrated_time: i64,
    pub(crate) log_index: u64,
}

/// The canonical JSON (sorted keys, no spaces) of a hashedrekord 0.0.1 body
/// for `signature` by the certificate `cert_der` over an artifact whose
/// SHA-256 is `artifact_sha256`.
pub(crate) fn hashedrekord_body(
    signature: &[u8],
    cert_der: &[u8],
    artifact_sha256: &[u8],
) -> Vec<u8> {
    let pem_b64 = STANDARD.encode(pem_certificate(cert_der));
    let hex: String = artifact_sha256.iter().map(|b| format!("{b:02x}")).collect();
    let sig_b64 = STANDARD.encode(signature);
    format!(
        concat!(
            r#"{{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{{"data":{{"hash":"#,
            r#"{{"algorithm":"sha256","value":"{}"}}}},"signature":{{"content":"{}","#,
            r#""publicKey":{{"content":"{}"}}}}}}}}"#
        ),
        hex, sig_b64, pem_b64
    )
    .into_bytes()
}

/// PEM of a DER certificate, 64 base64 characters a line, `\n` endings (the
/// form Python's `cryptography` writes, which sigstore-python compares).
pub(crate) fn pem_certificate(der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

/// The Rekor SET: `rekor`'s signature over the RFC 8785 canonical JSON of
/// `{body, integratedTime, logID, logIndex}` (keys in that sorted order).
fn signed_entry_timestamp(rekor: &Key, entry: &LoggedEntry) -> Vec<u8> {
    let log_id: String = rekor.log_id().iter().map(|b| format!("{b:02x}")).collect();
    let payload = format!(
        r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
        STANDARD.encode(&entry.body),
        entry.integrated_time,
        log_id,
        entry.log_index
    );
    rekor.sign(payload.as_bytes())
}

fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(data);
    hasher.finalize().into()
}

fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update([1u8]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The largest power of two smaller than `n` (`n >= 2`).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// RFC 6962 §2.1 Merkle tree hash of `leaves` (leaf hashes).
fn tree_hash(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = split(leaves.len());
    node_hash(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
}

/// RFC 6962 §2.1.1 audit path of leaf `index` in `leaves`.
fn audit_path(index: usize, leaves: &[[u8; 32]]) -> Vec<[u8; 32]> {
    if leaves.len() == 1 {
        return Vec::new();
    }
    let k = split(leaves.len());
    if index < k {
        let mut path = audit_path(index, &leaves[..k]);
        path.push(tree_hash(&leaves[k..]));
        path
    } else {
        let mut path = audit_path(index - k, &leaves[k..]);
        path.push(tree_hash(&leaves[..k]));
        path
    }
}

/// A signed checkpoint (signed note) for a tree of `size` with `root`: the
/// note, a blank line, and `— <name> base64(key hint || signature)`, the key
/// hint being the first four bytes of the log ID.
fn checkpoint(rekor: &Key, size: u64, root: &[u8; 32]) -> String {
    let note = format!("{ORIGIN}\n{size}\n{}\n", STANDARD.encode(root));
    let mut hint_and_sig = rekor.log_id()[..4].to_vec();
    hint_and_sig.extend(rekor.sign(note.as_bytes()));
    let name = ORIGIN.split(' ').next().expect("the origin has a host");
    format!(
        "{note}\n\u{2014} {name} {}\n",
        STANDARD.encode(hint_and_sig)
    )
}

/// The `inclusionProof` of `entry`: the entry is the last leaf of a tree of
/// [`TREE_SIZE`] leaves (the others are filler).
fn inclusion_proof(rekor: &Key, entry: &LoggedEntry) -> Value {
    let mut leaves: Vec<[u8; 32]> = (0..TREE_SIZE - 1)
        .map(|i| leaf_hash(format!("filler {i}").as_bytes()))
        .collect();
    leaves.push(leaf_hash(&entry.body));
    let index = leaves.len() - 1;
    let root = tree_hash(&leaves);
    let hashes: Vec<String> = audit_path(index, &leaves)
        .iter()
        .map(|h| STANDARD.encode(h))
        .collect();
    json!({
        "logIndex": index.to_string(),
        "rootHash": STANDARD.encode(root),
        "treeSize": TREE_SIZE.to_string(),
        "hashes": hashes,
        "checkpoint": {"envelope": checkpoint(rekor, TREE_SIZE, &root)},
    })
}

/// The bundle's `tlogEntries[0]`: kind, log ID, integrated time, SET,
/// inclusion proof with checkpoint, and the canonicalized body.
pub(crate) fn tlog_entry(rekor: &Key, entry: &LoggedEntry) -> Value {
    json!({
        "logIndex": entry.log_index.to_string(),
        "logId": {"keyId": STANDARD.encode(rekor.log_id())},
        "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
        "integratedTime": entry.integrated_time.to_string(),
        "inclusionPromise": {
            "signedEntryTimestamp": STANDARD.encode(signed_entry_timestamp(rekor, entry)),
        },
        "inclusionProof": inclusion_proof(rekor, entry),
        "canonicalizedBody": STANDARD.encode(&entry.body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audit path of every leaf leads back to the tree hash (RFC 6962
    /// §2.1.1, checked by recomputing as a verifier does).
    #[test]
    fn audit_paths_verify() {
        for size in 1..9usize {
            let leaves: Vec<[u8; 32]> = (0..size).map(|i| leaf_hash(&[i as u8])).collect();
            let root = tree_hash(&leaves);
            for index in 0..size {
                let path = audit_path(index, &leaves);
                assert_eq!(
                    recompute(index, size, leaves[index], &path),
                    root,
                    "{index}/{size}"
                );
            }
        }
    }

    /// RFC 9162 §2.1.3.2 inclusion verification.
    fn recompute(index: usize, size: usize, leaf: [u8; 32], path: &[[u8; 32]]) -> [u8; 32] {
        let (mut f_n, mut s_n, mut r) = (index, size - 1, leaf);
        for p in path {
            if f_n % 2 == 1 || f_n == s_n {
                r = node_hash(p, &r);
                while f_n % 2 == 0 && f_n != 0 {
                    f_n >>= 1;
                    s_n >>= 1;
                }
            } else {
                r = node_hash(&r, p);
            }
            f_n >>= 1;
            s_n >>= 1;
        }
        r
    }
}
