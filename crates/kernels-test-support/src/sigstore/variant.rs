//! Signed variant directories: `metadata.json` with the `digest` of the
//! files (kernel-builder's rule: every file but the top-level
//! `metadata.json` / `metadata.json.sigstore`, `__pycache__/` and `*.pyc`;
//! sha256, standard base64), its bundle, and the fixture set (one variant
//! per outcome of reference 0.17.2's `verify_variant`).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

use super::{BundleVersion, GITHUB_ISSUER, SignOptions, TestIdentity, TestSigstore, corrupt};
use crate::MirrorFile;

/// The metadata file of a variant.
pub const METADATA_FILE: &str = "metadata.json";
/// The signature bundle of a variant.
pub const BUNDLE_FILE: &str = "metadata.json.sigstore";

/// The kernel name in the fixtures' metadata.
pub const KERNEL_NAME: &str = "signed-kernel";

/// A variant's files: `/`-separated path relative to the variant → content.
pub type Files = Vec<(String, Vec<u8>)>;

/// Whether kernel-builder leaves `path` out of the digest.
fn excluded(path: &str) -> bool {
    path == METADATA_FILE
        || path == BUNDLE_FILE
        || path.ends_with(".pyc")
        || path.split('/').any(|part| part == "__pycache__")
}

/// A small built variant: Python files, a shared object and bytecode.
pub fn sample_files() -> Files {
    vec![
        ("__init__.py".into(), b"from ._ops import ops\n".to_vec()),
        (
            "_ops.py".into(),
            b"import torch\nops = torch.ops._signed_kernel\n".to_vec(),
        ),
        ("_signed_kernel.abi3.so".into(), crate::so_bytes(22, 4_000)),
        (
            "layers/__init__.py".into(),
            b"class Layer:\n    pass\n".to_vec(),
        ),
        (
            "__pycache__/__init__.cpython-312.pyc".into(),
            b"bytecode".to_vec(),
        ),
    ]
}

/// `metadata.json` (pretty, newline-terminated) for kernel `name` with the
/// fields kernel-builder 0.16+ writes (`name`, `id`, `version`, `license`,
/// `python-depends`, `backend`) and the sha256 digest of `files`, or without
/// a digest when `with_digest` is false.
pub fn metadata_json(name: &str, files: &[(String, Vec<u8>)], with_digest: bool) -> Vec<u8> {
    let digest: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .filter(|(path, _)| !excluded(path))
        .map(|(path, content)| {
            (
                path.clone(),
                STANDARD.encode(Sha256::digest(content)).into(),
            )
        })
        .collect();
    let mut doc = serde_json::json!({
        "name": name,
        "id": format!("_{}_cpu_{}", name.replace('-', "_"), "5e1f7a9"),
        "version": 1,
        "license": "apache-2.0",
        "python-depends": [],
        "backend": {"type": "cpu"},
    });
    if with_digest {
        doc["digest"] = serde_json::json!({"algorithm": "sha256", "files": digest});
    }
    format!("{doc:#}\n").into_bytes()
}

/// [`metadata_json`] of the fixtures without its `id` line: signed metadata
/// that a signing kernel-builder never writes.
fn metadata_without_id() -> Vec<u8> {
    let text = String::from_utf8(metadata_json(KERNEL_NAME, &sample_files(), true)).expect("UTF-8");
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| !line.contains("\"id\""))
        .collect();
    format!("{}\n", kept.join("\n")).into_bytes()
}

/// Write `files` under `dir`.
pub fn write_dir(dir: &Path, files: &[(String, Vec<u8>)]) {
    for (path, content) in files {
        let path = dir.join(path);
        fs_err::create_dir_all(path.parent().expect("a file has a folder")).expect("create folder");
        fs_err::write(path, content).expect("write a variant file");
    }
}

fn set(files: &mut Files, path: &str, content: Vec<u8>) {
    files.retain(|(p, _)| p != path);
    files.push((path.to_string(), content));
}

fn remove(files: &mut Files, path: &str) {
    files.retain(|(p, _)| p != path);
}

impl TestSigstore {
    /// `files` plus `metadata.json` (with their digest; `name` is the
    /// kernel's, a valid kernel name) and its bundle for `identity`, made as
    /// `options` say.
    pub fn signed_variant(
        &self,
        name: &str,
        files: &[(String, Vec<u8>)],
        identity: &TestIdentity,
        options: SignOptions,
    ) -> Files {
        let metadata = metadata_json(name, files, true);
        let bundle = self.sign_with(&metadata, identity, options);
        let mut out = files.to_vec();
        set(&mut out, METADATA_FILE, metadata);
        set(&mut out, BUNDLE_FILE, bundle.into_bytes());
        out
    }

    /// [`TestSigstore::signed_variant`] (bundle v0.3) of kernel `name` as
    /// mirror files under `build/<variant>/`, for [`crate::write_repo`].
    pub fn signed_mirror_files(
        &self,
        name: &str,
        variant: &str,
        files: &[(String, Vec<u8>)],
        identity: &TestIdentity,
    ) -> Vec<MirrorFile> {
        let options = SignOptions::version(BundleVersion::V0_3);
        self.signed_variant(name, files, identity, options)
            .into_iter()
            .map(|(path, content)| MirrorFile {
                path: format!("build/{variant}/{path}"),
                content,
            })
            .collect()
    }

    /// Write a signed `build/<variant>` into commit `commit_label` of
    /// `repo` (`owner/name`) in the mirror copy `mirror` (the layout of
    /// `docs/mirror-format.md`: `repos/kernels/<repo>/commits/<label>/tree`).
    /// The commit must exist; the variant's files are replaced. The
    /// metadata's `name` is the repository's name. Returns the directory.
    pub fn write_signed_variant_into_mirror(
        &self,
        mirror: &Path,
        repo: &str,
        commit_label: &str,
        variant: &str,
        files: &[(String, Vec<u8>)],
        identity: &TestIdentity,
    ) -> PathBuf {
        let commit = mirror
            .join("repos/kernels")
            .join(repo)
            .join("commits")
            .join(commit_label);
        assert!(
            commit.join("commit.toml").is_file(),
            "{} is not a commit of the mirror",
            commit.display()
        );
        let dir = commit.join("tree/build").join(variant);
        if dir.exists() {
            fs_err::remove_dir_all(&dir).expect("remove the old variant");
        }
        let options = SignOptions::version(BundleVersion::V0_3);
        let name = repo.rsplit('/').next().unwrap_or(repo).replace('_', "-");
        write_dir(&dir, &self.signed_variant(&name, files, identity, options));
        dir
    }
}

/// One variant directory and the outcome reference 0.17.2's `verify_variant`
/// gives it under `SignerPolicy::reference_default` and this test root.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Directory name, unique within the set.
    pub name: String,
    /// The outcome's name (`Success`, `SignatureBundleMissing`, …).
    pub expected: &'static str,
    /// The variant's files.
    pub files: Files,
}

impl Fixture {
    /// The fixture's files as mirror files under `build/<variant>/`, for
    /// [`crate::write_repo`].
    pub fn mirror_files(&self, variant: &str) -> Vec<MirrorFile> {
        self.files
            .iter()
            .map(|(path, content)| MirrorFile {
                path: format!("build/{variant}/{path}"),
                content: content.clone(),
            })
            .collect()
    }
}

impl TestSigstore {
    /// Every fixture: each outcome, each bundle version, each way to break
    /// a signature. Files come from [`sample_files`].
    pub fn fixtures(&self) -> Vec<Fixture> {
        let mut out = self.good_fixtures();
        out.extend(self.bundle_fixtures());
        out.extend(self.shape_fixtures());
        out.extend(self.metadata_fixtures());
        out.extend(self.signature_fixtures());
        out
    }

    fn fixture(
        &self,
        name: &str,
        expected: &'static str,
        identity: &TestIdentity,
        options: SignOptions,
    ) -> Fixture {
        Fixture {
            name: name.to_string(),
            expected,
            files: self.signed_variant(KERNEL_NAME, &sample_files(), identity, options),
        }
    }

    fn good_fixtures(&self) -> Vec<Fixture> {
        let build = TestIdentity::kernels_community("build");
        let mut out: Vec<Fixture> = BundleVersion::ALL
            .iter()
            .map(|&version| {
                let name = match version {
                    BundleVersion::V0_1 => "good-v0.1",
                    BundleVersion::V0_2 => "good-v0.2",
                    BundleVersion::V0_3 => "good-v0.3",
                    BundleVersion::V0_3Alternate => "good-v0.3-alternate",
                };
                self.fixture(name, "Success", &build, SignOptions::version(version))
            })
            .collect();
        for workflow in ["build-mac", "build-windows", "sign-old-builds"] {
            let identity = TestIdentity::kernels_community(workflow);
            let options = SignOptions::version(BundleVersion::V0_3);
            out.push(self.fixture(&format!("good-{workflow}"), "Success", &identity, options));
        }
        out
    }

    /// A good v0.3 fixture whose files `change` edits afterwards.
    fn changed(
        &self,
        name: &str,
        expected: &'static str,
        change: impl FnOnce(&mut Files),
    ) -> Fixture {
        let identity = TestIdentity::kernels_community("build");
        let mut fixture = self.fixture(
            name,
            expected,
            &identity,
            SignOptions::version(BundleVersion::V0_3),
        );
        change(&mut fixture.files);
        fixture
    }

    fn bundle_text(files: &Files) -> String {
        let (_, bytes) = files
            .iter()
            .find(|(p, _)| p == BUNDLE_FILE)
            .expect("a signed variant");
        String::from_utf8(bytes.clone()).expect("TestSigstore writes UTF-8")
    }

    fn bundle_fixtures(&self) -> Vec<Fixture> {
        let invalid = "SignatureBundleInvalid";
        let rewrite = |name: &str, f: fn(&str) -> String| {
            self.changed(name, invalid, |files| {
                let text = f(&TestSigstore::bundle_text(files));
                set(files, BUNDLE_FILE, text.into_bytes());
            })
        };
        vec![
            self.changed("bundle-missing", "SignatureBundleMissing", |files| {
                remove(files, BUNDLE_FILE)
            }),
            rewrite("bundle-truncated", corrupt::truncated),
            rewrite("bundle-not-json", |_| corrupt::not_json()),
            rewrite("bundle-unknown-media-type", corrupt::unknown_media_type),
            rewrite("bundle-huge", corrupt::huge),
            self.changed("bundle-empty", invalid, |files| {
                set(files, BUNDLE_FILE, Vec::new())
            }),
        ]
    }

    /// A good fixture of `version` whose bundle text `f` rewrites.
    fn rebundled(
        &self,
        name: &str,
        expected: &'static str,
        version: BundleVersion,
        f: fn(&str) -> String,
    ) -> Fixture {
        let identity = TestIdentity::kernels_community("build");
        let mut fixture = self.fixture(name, expected, &identity, SignOptions::version(version));
        let text = f(&TestSigstore::bundle_text(&fixture.files));
        set(&mut fixture.files, BUNDLE_FILE, text.into_bytes());
        fixture
    }

    /// Bundles that parse as JSON but break a rule of their version's shape
    /// or have a key outside the bundle schema (sigstore-python refuses them
    /// while reading: SignatureBundleInvalid),
    /// and log proofs that do not verify (SignatureVerificationFailure).
    fn shape_fixtures(&self) -> Vec<Fixture> {
        use BundleVersion::{V0_1, V0_2, V0_3};
        let invalid = "SignatureBundleInvalid";
        let failure = "SignatureVerificationFailure";
        vec![
            self.rebundled(
                "shape-v0.1-no-promise",
                invalid,
                V0_1,
                corrupt::without_inclusion_promise,
            ),
            self.rebundled(
                "shape-v0.1-no-proof",
                invalid,
                V0_1,
                corrupt::without_inclusion_proof,
            ),
            self.rebundled(
                "shape-v0.2-no-proof",
                invalid,
                V0_2,
                corrupt::without_inclusion_proof,
            ),
            self.rebundled(
                "shape-v0.3-no-proof",
                invalid,
                V0_3,
                corrupt::without_inclusion_proof,
            ),
            self.rebundled(
                "shape-v0.3-no-promise",
                invalid,
                V0_3,
                corrupt::without_inclusion_promise,
            ),
            self.rebundled(
                "shape-no-tlog-entry",
                invalid,
                V0_3,
                corrupt::without_tlog_entries,
            ),
            self.rebundled(
                "shape-two-tlog-entries",
                invalid,
                V0_3,
                corrupt::two_tlog_entries,
            ),
            self.rebundled(
                "shape-v0.3-chain",
                invalid,
                V0_3,
                corrupt::certificate_as_chain,
            ),
            self.rebundled(
                "shape-no-media-type",
                invalid,
                V0_1,
                corrupt::without_media_type,
            ),
            self.rebundled(
                "shape-unknown-key",
                invalid,
                V0_3,
                corrupt::misspelled_message_digest,
            ),
            self.rebundled(
                "log-wrong-set",
                failure,
                V0_3,
                corrupt::wrong_signed_entry_timestamp,
            ),
            self.rebundled(
                "log-wrong-checkpoint",
                failure,
                V0_2,
                corrupt::wrong_checkpoint_signature,
            ),
        ]
    }

    fn metadata_fixtures(&self) -> Vec<Fixture> {
        let build = TestIdentity::kernels_community("build");
        let resign = |name: &str, expected: &'static str, metadata: Vec<u8>| {
            let mut files = sample_files();
            let bundle = self.sign(&metadata, &build);
            set(&mut files, METADATA_FILE, metadata);
            set(&mut files, BUNDLE_FILE, bundle.into_bytes());
            Fixture {
                name: name.to_string(),
                expected,
                files,
            }
        };
        vec![
            self.changed("metadata-missing", "MetadataMissing", |files| {
                remove(files, METADATA_FILE)
            }),
            resign(
                "metadata-not-json",
                "MetadataInvalid",
                b"{\"version\": 1,\n".to_vec(),
            ),
            resign("metadata-no-id", "MetadataInvalid", metadata_without_id()),
            resign(
                "digest-missing",
                "DigestMissing",
                metadata_json(KERNEL_NAME, &sample_files(), false),
            ),
            self.changed("so-byte-changed", "DigestVerificationFailure", |files| {
                let so = files
                    .iter_mut()
                    .find(|(p, _)| p.ends_with(".so"))
                    .expect("a .so");
                so.1[100] ^= 0x01;
            }),
            self.changed("file-added", "DigestVerificationFailure", |files| {
                set(files, "extra.py", b"import os\n".to_vec());
            }),
            self.changed("file-removed", "DigestVerificationFailure", |files| {
                remove(files, "layers/__init__.py");
            }),
            self.changed("pycache-added", "Success", |files| {
                set(
                    files,
                    "layers/__pycache__/__init__.cpython-312.pyc",
                    b"more bytecode".to_vec(),
                );
            }),
        ]
    }

    fn signature_fixtures(&self) -> Vec<Fixture> {
        let failure = "SignatureVerificationFailure";
        let v03 = SignOptions::version(BundleVersion::V0_3);
        let other_repo = TestIdentity::custom(
            "acme/kernels",
            ".github/workflows/build.yaml@refs/heads/main",
        );
        let other_workflow = TestIdentity::kernels_community("release");
        let other_branch = TestIdentity::custom(
            "huggingface/kernels-community",
            ".github/workflows/build.yaml@refs/heads/dev",
        );
        let other_issuer =
            TestIdentity::kernels_community("build").with_issuer("https://accounts.google.com");
        let build = TestIdentity::kernels_community("build");
        vec![
            self.fixture("identity-other-repository", failure, &other_repo, v03),
            self.fixture("identity-other-workflow", failure, &other_workflow, v03),
            self.fixture("identity-other-branch", failure, &other_branch, v03),
            self.fixture("identity-other-issuer", failure, &other_issuer, v03),
            self.fixture(
                "signature-wrong",
                failure,
                &build,
                SignOptions {
                    wrong_signature: true,
                    ..v03
                },
            ),
            self.fixture(
                "certificate-other-ca",
                failure,
                &build,
                SignOptions {
                    foreign_ca: true,
                    ..v03
                },
            ),
            self.fixture(
                "certificate-odd-critical-extension",
                failure,
                &build,
                SignOptions {
                    odd_critical_extension: true,
                    ..v03
                },
            ),
            self.changed("signature-flipped", failure, |files| {
                let text = corrupt::flipped_signature(&TestSigstore::bundle_text(files));
                set(files, BUNDLE_FILE, text.into_bytes());
            }),
            self.changed("metadata-changed-after-signing", failure, |files| {
                let (_, metadata) = files
                    .iter_mut()
                    .find(|(p, _)| p == METADATA_FILE)
                    .expect("metadata");
                let text = String::from_utf8(metadata.clone()).expect("UTF-8 metadata");
                *metadata = text.replace("apache-2.0", "mit").into_bytes();
            }),
        ]
    }

    /// One fixture per claim of the reference's signer policy that is
    /// absent or differs while every other claim is accepted: the legacy
    /// issuer `.1.1` of another provider, absent, or DER-encoded (the
    /// reference reads its raw bytes), and no issuer `.1.8`, build signer
    /// `.1.9` or source repository `.1.12`. sigstore-python refuses each
    /// (`SignatureVerificationFailure`). Kept out of [`TestSigstore::fixtures`],
    /// whose Rekor log indices tests depend on.
    pub fn policy_fixtures(&self) -> Vec<Fixture> {
        let failure = "SignatureVerificationFailure";
        let v03 = SignOptions::version(BundleVersion::V0_3);
        let build = TestIdentity::kernels_community("build");
        let google = "https://accounts.google.com";
        let legacy_other = build.clone().with_legacy_issuer(Some(google.as_bytes()));
        let legacy_absent = build.clone().with_legacy_issuer(None);
        let mut legacy_der = vec![0x0c, GITHUB_ISSUER.len() as u8];
        legacy_der.extend_from_slice(GITHUB_ISSUER.as_bytes());
        let legacy_as_der = build.clone().with_legacy_issuer(Some(&legacy_der));
        let mut out = vec![
            self.fixture("identity-legacy-issuer-other", failure, &legacy_other, v03),
            self.fixture(
                "identity-legacy-issuer-absent",
                failure,
                &legacy_absent,
                v03,
            ),
            self.fixture("identity-legacy-issuer-der", failure, &legacy_as_der, v03),
        ];
        for (n, field) in [
            (8, "issuer"),
            (9, "build-signer"),
            (12, "source-repository"),
        ] {
            let identity = build.clone().without_extension(n);
            let name = format!("identity-{field}-absent");
            out.push(self.fixture(&name, failure, &identity, v03));
        }
        out
    }
}

/// Write every fixture into its own directory under `dir`; returns
/// `(name, expected outcome, directory)` in order.
pub fn write_fixtures(fixtures: &[Fixture], dir: &Path) -> Vec<(String, &'static str, PathBuf)> {
    fixtures
        .iter()
        .map(|fixture| {
            let path = dir.join(&fixture.name);
            write_dir(&path, &fixture.files);
            (fixture.name.clone(), fixture.expected, path)
        })
        .collect()
}
