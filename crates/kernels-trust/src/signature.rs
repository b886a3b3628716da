//! A Sigstore bundle over the raw `metadata.json` bytes, verified offline:
//! the bundle parsed, the Fulcio chain and its SCT, the Rekor entry, the
//! signature over the artifact (all by `sigstore-verify`, see
//! `docs/decisions/0002-sigstore-verify.md`), then the signer against a
//! [`SignerPolicy`].

use sigstore_verify::types::Bundle;
use sigstore_verify::{VerificationPolicy, Verifier};

use crate::policy::SignerPolicy;
use crate::root::TrustRoot;
use crate::shape;

/// Largest bundle read, in bytes (real bundles are 5–10 KiB).
pub const MAX_BUNDLE_BYTES: usize = 256 * 1024;

/// Who signed: the claims of the verified Fulcio certificate and the Rekor
/// entry that logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerIdentity {
    /// OIDC issuer (extension .1.8).
    pub issuer: String,
    /// Source repository URI (.1.12), when the certificate has one.
    pub source_repository: Option<String>,
    /// Build-signer (workflow) URI with its ref (.1.9).
    pub workflow: Option<String>,
    /// Commit of the signing workflow (.1.10).
    pub workflow_commit: Option<String>,
    /// Rekor log index of the first transparency-log entry.
    pub log_index: Option<u64>,
}

/// Why a bundle did not prove the artifact, split as the reference's
/// outcomes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureFailure {
    /// The bundle cannot be read as a Sigstore bundle
    /// (`SignatureBundleInvalid`).
    BundleInvalid(String),
    /// The bundle parsed but does not verify, or its signer is not accepted
    /// (`SignatureVerificationFailure`).
    VerificationFailure(String),
}

/// Verify `bundle` (the bytes of `metadata.json.sigstore`) over `artifact`
/// (the raw `metadata.json` bytes) against `root` and `policy`.
pub fn verify_bundle(
    artifact: &[u8],
    bundle: &[u8],
    root: &TrustRoot,
    policy: &SignerPolicy,
) -> Result<SignerIdentity, SignatureFailure> {
    if bundle.len() > MAX_BUNDLE_BYTES {
        return Err(SignatureFailure::BundleInvalid(format!(
            "the bundle is {} bytes, more than {MAX_BUNDLE_BYTES}",
            bundle.len()
        )));
    }
    let text = std::str::from_utf8(bundle)
        .map_err(|e| SignatureFailure::BundleInvalid(format!("not UTF-8: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| SignatureFailure::BundleInvalid(format!("not JSON: {e}")))?;
    shape::check_keys(&value).map_err(SignatureFailure::BundleInvalid)?;
    let parsed =
        Bundle::from_json(text).map_err(|e| SignatureFailure::BundleInvalid(e.to_string()))?;
    shape::check_bundle(&parsed).map_err(SignatureFailure::BundleInvalid)?;
    let verifier = Verifier::new(root.sigstore())
        .map_err(|e| SignatureFailure::VerificationFailure(e.to_string()))?;
    let result = verifier
        .verify(artifact, &parsed, &VerificationPolicy::any_identity())
        .map_err(|e| SignatureFailure::VerificationFailure(e.to_string()))?;
    let certificate = result.certificate().ok_or_else(|| {
        SignatureFailure::VerificationFailure("the bundle has no signing certificate".into())
    })?;
    let leaf = parsed.signing_certificate().ok_or_else(|| {
        SignatureFailure::VerificationFailure("the bundle has no signing certificate".into())
    })?;
    policy
        .check(leaf.as_bytes())
        .map_err(SignatureFailure::VerificationFailure)?;
    Ok(identity(certificate, &parsed))
}

/// The signer a bundle's certificate names, *without verifying anything*:
/// for comparing a cached variant with the signer recorded for it where no
/// signature is checked (`kernels verify` without `--signatures`). `None`
/// when the bundle or its certificate cannot be read.
pub fn claimed_signer(bundle: &[u8]) -> Option<SignerIdentity> {
    if bundle.len() > MAX_BUNDLE_BYTES {
        return None;
    }
    let parsed = Bundle::from_json(std::str::from_utf8(bundle).ok()?).ok()?;
    let der = parsed.signing_certificate()?;
    let certificate = sigstore_verify::crypto::parse_certificate_info(der).ok()?;
    Some(identity(&certificate, &parsed))
}

fn identity(
    certificate: &sigstore_verify::crypto::CertificateInfo,
    bundle: &Bundle,
) -> SignerIdentity {
    let claims = &certificate.ci_claims;
    SignerIdentity {
        issuer: certificate.issuer.clone().unwrap_or_default(),
        source_repository: claims.source_repository_uri.clone(),
        workflow: claims.build_signer_uri.clone(),
        workflow_commit: claims.build_signer_digest.clone(),
        log_index: bundle
            .verification_material
            .tlog_entries
            .first()
            .map(|entry| entry.log_index.get()),
    }
}
