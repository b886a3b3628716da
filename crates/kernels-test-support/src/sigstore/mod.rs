//! A test Sigstore: a Fulcio CA, a CT log key and a Rekor key of our own, a
//! `trusted_root.json` naming them, and real bundles over `metadata.json`
//! bytes that `kernels_trust` (sigstore-verify) and sigstore-python both
//! verify against that root.
//!
//! - [`TestSigstore::new`] makes the keys (fresh ECDSA P-256 keys, so
//!   signatures differ per run; everything else is fixed: names, serials,
//!   times), with a root and an intermediate CA as the production Fulcio
//!   has; [`TestSigstore::root_only`] issues leaves from the root directly.
//! - [`TestSigstore::trusted_root_json`] / [`TestSigstore::write_trusted_root`]:
//!   the root in the Sigstore format
//!   (`application/vnd.dev.sigstore.trustedroot+json;version=0.1`), every
//!   `validFor` starting at [`VALID_FROM`] with no end.
//! - [`TestSigstore::sign`] (bundle v0.3) and [`TestSigstore::sign_with`]
//!   ([`BundleVersion`], a wrong signature, a leaf from a CA outside the
//!   root, a leaf with an unknown critical extension): a GitHub-Actions-style leaf for a [`TestIdentity`] (Fulcio
//!   extensions `1.3.6.1.4.1.57264.1.1`, `.8`–`.14`, a critical SAN URI of the
//!   workflow, code-signing EKU, one embedded precertificate SCT signed by
//!   the CT key), a message signature over the bytes, and a hashedrekord
//!   0.0.1 tlog entry with a signed entry timestamp and an inclusion proof
//!   (a five-leaf tree) with a signed checkpoint.
//! - [`corrupt`]: bundle texts that must not verify; [`variant`]: signed
//!   variant directories and mirror files, and the fixture set every
//!   verifier is checked on.
//!
//! Construction: certificates are made by `rcgen` (CA signing, custom
//! extensions), raw signatures by `ring`, and the precertificate TBS is
//! checked with `x509-cert` exactly as sigstore-verify rebuilds it; the only
//! hand-built encodings are the TLS structures of RFC 6962 (the SCT list),
//! the SAN's GeneralNames wrapper and the JSON texts, whose formats are
//! those of Fulcio, Rekor v1 and the Sigstore bundle/trusted-root protobuf
//! JSON.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use time::OffsetDateTime;

pub mod corrupt;
mod pki;
mod rekor;
pub mod variant;

use pki::{Ca, Key, LeafRequest};

/// Unix time every `validFor` of the trusted root and every CA starts at
/// (2025-01-01T00:00:00Z).
pub const VALID_FROM: i64 = 1_735_689_600;

/// Default signing (Rekor integrated) time: 2025-06-01T12:00:00Z.
pub const SIGNING_TIME: i64 = 1_748_779_200;

/// The OIDC issuer of GitHub Actions.
pub const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// The Sigstore bundle media types a signer has written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleVersion {
    /// `application/vnd.dev.sigstore.bundle+json;version=0.1`: certificate
    /// chain, SET required (sigstore-python 1.x, cosign 2.0).
    V0_1,
    /// `application/vnd.dev.sigstore.bundle+json;version=0.2`: certificate
    /// chain, inclusion proof with checkpoint required (sigstore-python 2.x).
    V0_2,
    /// `application/vnd.dev.sigstore.bundle.v0.3+json`: one leaf
    /// `certificate` (sigstore-python 3.x and later, cosign 2.4+).
    V0_3,
    /// `application/vnd.dev.sigstore.bundle+json;version=0.3`: the v0.3 shape
    /// under the older-style media type name, which both verifiers accept.
    V0_3Alternate,
}

impl BundleVersion {
    /// Every version, oldest first.
    pub const ALL: [BundleVersion; 4] = [
        BundleVersion::V0_1,
        BundleVersion::V0_2,
        BundleVersion::V0_3,
        BundleVersion::V0_3Alternate,
    ];

    /// The `mediaType` value.
    pub fn media_type(self) -> &'static str {
        match self {
            BundleVersion::V0_1 => "application/vnd.dev.sigstore.bundle+json;version=0.1",
            BundleVersion::V0_2 => "application/vnd.dev.sigstore.bundle+json;version=0.2",
            BundleVersion::V0_3 => "application/vnd.dev.sigstore.bundle.v0.3+json",
            BundleVersion::V0_3Alternate => "application/vnd.dev.sigstore.bundle+json;version=0.3",
        }
    }
}

/// Who a test certificate is issued to: the claims of a GitHub Actions
/// workload identity, as Fulcio writes them into the leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestIdentity {
    /// OIDC issuer (extensions `.1.1` and `.1.8`).
    pub issuer: String,
    /// Source repository URI (`.1.12`), `https://github.com/<owner>/<repo>`.
    pub source_repository_uri: String,
    /// Build signer URI (`.1.9`): the workflow with its ref.
    pub build_signer_uri: String,
    /// Build signer digest (`.1.10`, also the source digest `.1.13`): a commit sha.
    pub build_signer_digest: String,
    /// The SAN URI (the workflow, as for GitHub Actions).
    pub san_uri: String,
    /// The raw bytes of the legacy issuer extension `.1.1` (Fulcio writes
    /// the issuer's UTF-8, not DER); `None` leaves the extension out.
    pub legacy_issuer: Option<Vec<u8>>,
    /// Fulcio extensions (`.1.<n>`: 8, 9, 12, …) left out of the leaf.
    pub omitted: Vec<u64>,
}

impl TestIdentity {
    /// A kernels-community workflow at `refs/heads/main`: `workflow` is the
    /// file stem (`build`, `build-mac`, `build-windows`, `sign-old-builds`
    /// are the ones `SignerPolicy::reference_default` accepts).
    pub fn kernels_community(workflow: &str) -> TestIdentity {
        TestIdentity::custom(
            "huggingface/kernels-community",
            &format!(".github/workflows/{workflow}.yaml@refs/heads/main"),
        )
    }

    /// The workflow `workflow_ref` (`.github/workflows/<file>@<ref>`) of the
    /// GitHub repository `repo` (`owner/name`), issued by GitHub Actions.
    pub fn custom(repo: &str, workflow_ref: &str) -> TestIdentity {
        let repository = format!("https://github.com/{repo}");
        let signer = format!("{repository}/{workflow_ref}");
        let digest: String = Sha256::digest(signer.as_bytes())[..20]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        TestIdentity {
            issuer: GITHUB_ISSUER.to_string(),
            source_repository_uri: repository,
            build_signer_uri: signer.clone(),
            build_signer_digest: digest,
            san_uri: signer,
            legacy_issuer: Some(GITHUB_ISSUER.as_bytes().to_vec()),
            omitted: Vec::new(),
        }
    }

    /// The same identity from another OIDC issuer (both issuer extensions).
    pub fn with_issuer(mut self, issuer: &str) -> TestIdentity {
        self.issuer = issuer.to_string();
        self.legacy_issuer = Some(issuer.as_bytes().to_vec());
        self
    }

    /// The same identity with `bytes` as the legacy issuer extension `.1.1`
    /// (`None`: without it), the issuer `.1.8` unchanged.
    pub fn with_legacy_issuer(mut self, bytes: Option<&[u8]>) -> TestIdentity {
        self.legacy_issuer = bytes.map(<[u8]>::to_vec);
        self
    }

    /// The same identity without the Fulcio extension `.1.<n>`.
    pub fn without_extension(mut self, n: u64) -> TestIdentity {
        self.omitted.push(n);
        self
    }
}

/// How [`TestSigstore::sign_with`] signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignOptions {
    /// The bundle media type and shape.
    pub version: BundleVersion,
    /// Sign other bytes than the artifact (the digest, the Rekor entry and
    /// everything else still name the artifact): the signature is wrong.
    pub wrong_signature: bool,
    /// Issue the leaf from a CA that is not in the trusted root (the SCT and
    /// the Rekor entry are still by the trusted keys).
    pub foreign_ca: bool,
    /// Give the leaf a critical extension no verifier knows.
    pub odd_critical_extension: bool,
}

impl SignOptions {
    /// A correct bundle of `version`.
    pub fn version(version: BundleVersion) -> SignOptions {
        SignOptions {
            version,
            wrong_signature: false,
            foreign_ca: false,
            odd_critical_extension: false,
        }
    }
}

/// The test Sigstore instance; see the module docs.
pub struct TestSigstore {
    root: Ca,
    intermediate: Option<Ca>,
    foreign: Ca,
    ct: Key,
    rekor: Key,
    signing_time: i64,
    next_index: std::cell::Cell<u64>,
}

fn datetime(unix: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(unix).expect("a valid unix time")
}

impl TestSigstore {
    /// A root and an intermediate CA; leaves come from the intermediate.
    pub fn new() -> TestSigstore {
        TestSigstore::make(true)
    }

    /// Only a root CA; leaves come from it directly.
    pub fn root_only() -> TestSigstore {
        TestSigstore::make(false)
    }

    fn make(with_intermediate: bool) -> TestSigstore {
        let from = datetime(VALID_FROM);
        let root = pki::root_ca("kernels-test fulcio root", from);
        let intermediate = with_intermediate
            .then(|| pki::intermediate_ca(&root, "kernels-test fulcio intermediate", from));
        TestSigstore {
            foreign: pki::root_ca("kernels-test other fulcio", from),
            root,
            intermediate,
            ct: Key::generate(),
            rekor: Key::generate(),
            signing_time: SIGNING_TIME,
            next_index: std::cell::Cell::new(0),
        }
    }

    /// Sign at `unix` seconds instead of [`SIGNING_TIME`] (must lie after
    /// [`VALID_FROM`] and before now for a bundle to verify).
    pub fn with_signing_time(mut self, unix: i64) -> TestSigstore {
        self.signing_time = unix;
        self
    }

    /// The trusted root naming this instance's CA chain, CT log key and
    /// Rekor key, as pretty JSON.
    pub fn trusted_root_json(&self) -> String {
        let valid_for = json!({"start": "2025-01-01T00:00:00Z"});
        let public_key = |key: &Key| {
            json!({
                "rawBytes": STANDARD.encode(&key.spki),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": valid_for,
            })
        };
        let log = |url: &str, key: &Key| {
            json!({
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": public_key(key),
                "logId": {"keyId": STANDARD.encode(key.log_id())},
            })
        };
        let chain: Vec<Value> = self
            .intermediate
            .iter()
            .chain([&self.root])
            .map(|ca| json!({"rawBytes": STANDARD.encode(ca.der())}))
            .collect();
        let root = json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log("https://rekor.kernels-test.invalid", &self.rekor)],
            "certificateAuthorities": [{
                "subject": {"organization": "kernels-test", "commonName": "kernels-test fulcio"},
                "uri": "https://fulcio.kernels-test.invalid",
                "certChain": {"certificates": chain},
                "validFor": valid_for,
            }],
            "ctlogs": [log("https://ctfe.kernels-test.invalid", &self.ct)],
            "timestampAuthorities": [],
        });
        format!("{root:#}\n")
    }

    /// Write [`TestSigstore::trusted_root_json`] to `path`.
    pub fn write_trusted_root(&self, path: &Path) {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).expect("create the trust root's folder");
        }
        fs_err::write(path, self.trusted_root_json()).expect("write the trust root");
    }

    /// A v0.3 bundle (JSON text) over `metadata` for `identity`.
    pub fn sign(&self, metadata: &[u8], identity: &TestIdentity) -> String {
        self.sign_with(
            metadata,
            identity,
            SignOptions::version(BundleVersion::V0_3),
        )
    }

    /// A bundle over `metadata` for `identity`, made as `options` say.
    pub fn sign_with(
        &self,
        metadata: &[u8],
        identity: &TestIdentity,
        options: SignOptions,
    ) -> String {
        let index = self.next_index.get();
        self.next_index.set(index + 1);
        let key = Key::generate();
        let issuer = if options.foreign_ca {
            &self.foreign
        } else {
            self.intermediate.as_ref().unwrap_or(&self.root)
        };
        let serial_seed = format!("leaf {index} {}", identity.build_signer_uri);
        let leaf = pki::issue_leaf(
            issuer,
            &self.ct,
            &LeafRequest {
                identity,
                key: &key,
                not_before: datetime(self.signing_time - 30),
                not_after: datetime(self.signing_time + 570),
                serial_seed: serial_seed.as_bytes(),
                odd_critical_extension: options.odd_critical_extension,
            },
        );
        let signature = if options.wrong_signature {
            key.sign(&[metadata, b"\nnot what was signed"].concat())
        } else {
            key.sign(metadata)
        };
        let digest = Sha256::digest(metadata);
        let entry = rekor::LoggedEntry {
            body: rekor::hashedrekord_body(&signature, &leaf, &digest),
            integrated_time: self.signing_time,
            log_index: 100_000 + index,
        };
        let bundle = bundle_json(
            options.version,
            &leaf,
            rekor::tlog_entry(&self.rekor, &entry),
            &digest,
            &signature,
        );
        format!("{bundle:#}\n")
    }
}

impl Default for TestSigstore {
    fn default() -> TestSigstore {
        TestSigstore::new()
    }
}

/// The bundle JSON of `version` around its parts.
fn bundle_json(
    version: BundleVersion,
    leaf: &[u8],
    tlog_entry: Value,
    digest: &[u8],
    signature: &[u8],
) -> Value {
    let leaf = json!({"rawBytes": STANDARD.encode(leaf)});
    let mut material = match version {
        BundleVersion::V0_1 | BundleVersion::V0_2 => {
            json!({"x509CertificateChain": {"certificates": [leaf]}})
        }
        BundleVersion::V0_3 | BundleVersion::V0_3Alternate => json!({"certificate": leaf}),
    };
    material["tlogEntries"] = json!([tlog_entry]);
    json!({
        "mediaType": version.media_type(),
        "verificationMaterial": material,
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": STANDARD.encode(digest)},
            "signature": STANDARD.encode(signature),
        },
    })
}
