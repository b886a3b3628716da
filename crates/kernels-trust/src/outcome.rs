//! One variant directory's verdict, with the reference's outcome names
//! (reference 0.17.2 `VerificationResult`): the bundle is checked before the
//! metadata is parsed (and must have the fields a signing kernel-builder
//! writes), then the digest against the files.

use std::fmt;
use std::path::Path;

use kernels_types::metadata::Metadata;

use crate::digest::{DigestProblem, check_variant};
use crate::policy::SignerPolicy;
use crate::root::TrustRoot;
use crate::signature::{SignatureFailure, SignerIdentity, verify_bundle};
use crate::{BUNDLE_FILE, METADATA_FILE};

/// Largest `metadata.json` read, in bytes.
pub const MAX_METADATA_BYTES: u64 = 4 * 1024 * 1024;

/// A variant's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Signed by an accepted signer, and every file matches the digest.
    Success(SignerIdentity),
    /// No `metadata.json.sigstore`.
    SignatureBundleMissing,
    /// The bundle cannot be parsed.
    SignatureBundleInvalid(String),
    /// No `metadata.json`.
    MetadataMissing,
    /// `metadata.json` does not parse.
    MetadataInvalid(String),
    /// `metadata.json` has no `digest`.
    DigestMissing,
    /// Files differ from the digest.
    DigestVerificationFailure(Vec<DigestProblem>),
    /// The signature does not verify, or its signer is not accepted.
    SignatureVerificationFailure(String),
}

impl Outcome {
    /// The reference's name of the outcome (`Success`, `SignatureBundleMissing`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Success(_) => "Success",
            Outcome::SignatureBundleMissing => "SignatureBundleMissing",
            Outcome::SignatureBundleInvalid(_) => "SignatureBundleInvalid",
            Outcome::MetadataMissing => "MetadataMissing",
            Outcome::MetadataInvalid(_) => "MetadataInvalid",
            Outcome::DigestMissing => "DigestMissing",
            Outcome::DigestVerificationFailure(_) => "DigestVerificationFailure",
            Outcome::SignatureVerificationFailure(_) => "SignatureVerificationFailure",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Verify the variant directory `dir` as the reference's `verify_variant`
/// does, against `root` and `policy`. I/O errors while reading are reported
/// as the outcome of the file they concern.
pub fn verify_variant(dir: &Path, root: &TrustRoot, policy: &SignerPolicy) -> Outcome {
    let bundle_path = dir.join(BUNDLE_FILE);
    if !bundle_path.is_file() {
        return Outcome::SignatureBundleMissing;
    }
    let bundle = match read_bounded(&bundle_path, crate::signature::MAX_BUNDLE_BYTES as u64) {
        Ok(bytes) => bytes,
        Err(reason) => return Outcome::SignatureBundleInvalid(reason),
    };
    let metadata_path = dir.join(METADATA_FILE);
    if !metadata_path.is_file() {
        return Outcome::MetadataMissing;
    }
    let metadata = match read_bounded(&metadata_path, MAX_METADATA_BYTES) {
        Ok(bytes) => bytes,
        Err(reason) => return Outcome::MetadataInvalid(reason),
    };
    let identity = match verify_bundle(&metadata, &bundle, root, policy) {
        Ok(identity) => identity,
        Err(SignatureFailure::BundleInvalid(reason)) => {
            return Outcome::SignatureBundleInvalid(reason);
        }
        Err(SignatureFailure::VerificationFailure(reason)) => {
            return Outcome::SignatureVerificationFailure(reason);
        }
    };
    let parsed = match Metadata::from_slice(&metadata).map_err(|e| e.to_string()) {
        Ok(parsed) => parsed,
        Err(reason) => return Outcome::MetadataInvalid(reason),
    };
    if let Err(reason) = require_signed_fields(&parsed) {
        return Outcome::MetadataInvalid(reason);
    }
    let Some(digest) = parsed.digest else {
        return Outcome::DigestMissing;
    };
    match check_variant(dir, &digest) {
        Ok(problems) if problems.is_empty() => Outcome::Success(identity),
        Ok(problems) => Outcome::DigestVerificationFailure(problems),
        Err(e) => {
            Outcome::DigestVerificationFailure(vec![DigestProblem::Unreadable(e.to_string())])
        }
    }
}

/// The fields every `metadata.json` written by a signing kernel-builder
/// (0.16 and later) has, and that reference 0.17.2's metadata parser
/// requires before it looks at the digest: `name`, `id`, `version`,
/// `license`. Older metadata without them is never signed.
fn require_signed_fields(metadata: &Metadata) -> Result<(), String> {
    let missing = [
        ("name", metadata.name.is_none()),
        ("id", metadata.id.is_none()),
        ("version", metadata.version.is_none()),
        ("license", metadata.license.is_none()),
    ]
    .into_iter()
    .find_map(|(field, missing)| missing.then_some(field));
    match missing {
        Some(field) => Err(format!("missing field `{field}`")),
        None => Ok(()),
    }
}

fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let size = fs_err::metadata(path).map_err(|e| e.to_string())?.len();
    if size > limit {
        return Err(format!(
            "{} is {size} bytes, more than {limit}",
            path.display()
        ));
    }
    fs_err::read(path).map_err(|e| e.to_string())
}
