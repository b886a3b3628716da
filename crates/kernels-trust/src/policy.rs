//! Which signers are accepted: the OIDC issuer and, per source repository,
//! the workflows allowed to sign.

/// The OIDC issuer of GitHub Actions workload identities.
pub const GITHUB_ACTIONS_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// The accepted signers: a signature is accepted when its certificate was
/// issued for [`SignerPolicy::issuer`] and matches any one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerPolicy {
    /// The required OIDC issuer, in both the legacy extension
    /// 1.3.6.1.4.1.57264.1.1 and extension .1.8.
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
    /// The reference's `DEFAULT_POLICY` (0.18.3 and 0.19.1): kernels-community's
    /// `build.yaml`, `build-mac.yaml`, `build-windows.yaml` and
    /// `sign-old-builds.yaml` workflows, and kernels-community-rs's
    /// `build.yaml`, each at `refs/heads/main`. 0.17.2 had only the
    /// kernels-community rule; the newer, larger policy is applied to every
    /// target runtime (docs/signatures.md).
    pub fn reference_default() -> SignerPolicy {
        let rule = |repository: &str, names: &[&str]| SignerRule {
            source_repository: repository.to_string(),
            workflows: names
                .iter()
                .map(|name| format!("{repository}/.github/workflows/{name}.yaml@refs/heads/main"))
                .collect(),
        };
        SignerPolicy {
            issuer: GITHUB_ACTIONS_ISSUER.to_string(),
            rules: vec![
                rule(
                    "https://github.com/huggingface/kernels-community",
                    &["build", "build-mac", "build-windows", "sign-old-builds"],
                ),
                rule(
                    "https://github.com/huggingface/kernels-community-rs",
                    &["build"],
                ),
            ],
        }
    }

    /// Whether a verified leaf certificate (`der`) satisfies the policy, as
    /// the reference's policy (`AllOf` of sigstore-python's `OIDCIssuer`,
    /// `OIDCIssuerV2`, `OIDCSourceRepositoryURI` and an `AnyOf` of
    /// `OIDCBuildSignerURI`) decides: every claim must be present and equal
    /// ([`Claims`]); the error names the first claim that is not. Where the
    /// reference raises something other than a verification error (a legacy
    /// issuer that is not UTF-8, a claim that is not a DER UTF8String), the
    /// signature is refused as well.
    pub fn check(&self, der: &[u8]) -> Result<(), String> {
        let claims = Claims::from_der(der)?;
        let none = |claim: &Result<String, String>| claim.as_deref().unwrap_or("(none)").to_owned();
        let issuer = none(&claims.issuer);
        if issuer != self.issuer {
            return Err(format!(
                "certificate issuer `{issuer}` is not `{}`",
                self.issuer
            ));
        }
        match &claims.legacy_issuer {
            Ok(legacy) if *legacy == self.issuer => {}
            Ok(legacy) => {
                return Err(format!(
                    "certificate legacy issuer (1.3.6.1.4.1.57264.1.1) `{legacy}` is not `{}`",
                    self.issuer
                ));
            }
            Err(why) => {
                return Err(format!(
                    "certificate legacy issuer (1.3.6.1.4.1.57264.1.1): {why}"
                ));
            }
        }
        let repository = none(&claims.source_repository);
        let signer = none(&claims.build_signer);
        let accepted = self
            .rules
            .iter()
            .any(|rule| rule.source_repository == repository && rule.workflows.contains(&signer));
        if accepted {
            Ok(())
        } else {
            Err(format!(
                "signer `{signer}` of source repository `{repository}` is not an accepted signer"
            ))
        }
    }
}

/// The Fulcio claims the policy reads from a leaf certificate, each as
/// sigstore-python reads it, or why it cannot be read (absent, or not
/// decodable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// `1.3.6.1.4.1.57264.1.1`: the extension's raw bytes as UTF-8 (not DER).
    pub legacy_issuer: Result<String, String>,
    /// `.1.8`: a DER UTF8String.
    pub issuer: Result<String, String>,
    /// `.1.12`: a DER UTF8String.
    pub source_repository: Result<String, String>,
    /// `.1.9`: a DER UTF8String.
    pub build_signer: Result<String, String>,
}

impl Claims {
    /// The claims of the DER certificate `der`. Errors: a certificate that
    /// does not parse.
    pub fn from_der(der: &[u8]) -> Result<Claims, String> {
        use x509_cert::der::Decode as _;
        let certificate = x509_cert::Certificate::from_der(der)
            .map_err(|e| format!("the signing certificate does not parse: {e}"))?;
        let extensions = certificate.tbs_certificate.extensions.unwrap_or_default();
        let raw = |n: u32| -> Result<Vec<u8>, String> {
            let oid = format!("1.3.6.1.4.1.57264.1.{n}");
            extensions
                .iter()
                .find(|e| e.extn_id.to_string() == oid)
                .map(|e| e.extn_value.as_bytes().to_vec())
                .ok_or_else(|| format!("the certificate has no extension {oid}"))
        };
        let utf8 = |bytes: Vec<u8>| {
            String::from_utf8(bytes).map_err(|_| "the value is not UTF-8".to_owned())
        };
        let der_string = |n: u32| {
            raw(n).and_then(|bytes| {
                x509_cert::der::asn1::Utf8StringRef::from_der(&bytes)
                    .map(|s| s.as_str().to_owned())
                    .map_err(|e| format!("the value is not a DER UTF8String: {e}"))
            })
        };
        Ok(Claims {
            legacy_issuer: raw(1).and_then(utf8),
            issuer: der_string(8),
            source_repository: der_string(12),
            build_signer: der_string(9),
        })
    }
}
