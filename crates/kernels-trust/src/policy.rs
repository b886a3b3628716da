//! Which signers are accepted: the OIDC issuer and, per source repository,
//! the workflows allowed to sign.

use sigstore_verify::crypto::CertificateInfo;

/// The OIDC issuer of GitHub Actions workload identities.
pub const GITHUB_ACTIONS_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// The accepted signers: a signature is accepted when its certificate was
/// issued for [`SignerPolicy::issuer`] and matches any one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerPolicy {
    /// The required OIDC issuer (Fulcio extension 1.3.6.1.4.1.57264.1.8).
    pub issuer: String,
    /// Accepted (source repository, signer workflows) pairs.
    pub rules: Vec<SignerRule>,
}

/// One accepted source repository and the workflows that may sign for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerRule {
    /// Source repository URI (extension .1.12), e.g.
    /// `https://github.com/huggingface/kernels-community`.
    pub source_repository: String,
    /// Build-signer URIs (extension .1.9), e.g.
    /// `https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main`.
    pub workflows: Vec<String>,
}

impl SignerPolicy {
    /// Reference 0.17.2's `DEFAULT_POLICIES`: kernels-community's
    /// `build.yaml`, `build-mac.yaml`, `build-windows.yaml` and
    /// `sign-old-builds.yaml` workflows at `refs/heads/main`.
    pub fn reference_default() -> SignerPolicy {
        let repository = "https://github.com/huggingface/kernels-community";
        let workflows = ["build", "build-mac", "build-windows", "sign-old-builds"]
            .iter()
            .map(|name| format!("{repository}/.github/workflows/{name}.yaml@refs/heads/main"))
            .collect();
        SignerPolicy {
            issuer: GITHUB_ACTIONS_ISSUER.to_string(),
            rules: vec![SignerRule {
                source_repository: repository.to_string(),
                workflows,
            }],
        }
    }

    /// Whether a verified certificate's claims satisfy the policy; the error
    /// says which claim did not match.
    pub fn check(&self, certificate: &CertificateInfo) -> Result<(), String> {
        let issuer = certificate.issuer.as_deref().unwrap_or("(none)");
        if issuer != self.issuer {
            return Err(format!(
                "certificate issuer `{issuer}` is not `{}`",
                self.issuer
            ));
        }
        let claims = &certificate.ci_claims;
        let repository = claims.source_repository_uri.as_deref().unwrap_or("(none)");
        let signer = claims.build_signer_uri.as_deref().unwrap_or("(none)");
        let accepted = self.rules.iter().any(|rule| {
            rule.source_repository == repository && rule.workflows.iter().any(|w| w == signer)
        });
        if accepted {
            Ok(())
        } else {
            Err(format!(
                "signer `{signer}` of source repository `{repository}` is not an accepted signer"
            ))
        }
    }
}
