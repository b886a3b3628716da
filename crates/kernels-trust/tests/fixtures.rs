//! `verify_variant` on every fixture of the test Sigstore
//! (`kernels_test_support::sigstore`): each gets the outcome reference
//! 0.17.2 gives it, and none panics.

use std::path::{Path, PathBuf};

use kernels_test_support::sigstore::variant::{self, BUNDLE_FILE, METADATA_FILE};
use kernels_test_support::sigstore::{BundleVersion, SignOptions, TestIdentity, TestSigstore};
use kernels_trust::{Outcome, SignerPolicy, TrustRoot, verify_variant};

fn root_of(sigstore: &TestSigstore, dir: &Path) -> TrustRoot {
    let path = dir.join("trusted_root.json");
    sigstore.write_trusted_root(&path);
    TrustRoot::from_file(&path).expect("the test trust root parses")
}

fn written(sigstore: &TestSigstore, dir: &Path) -> Vec<(String, &'static str, PathBuf)> {
    let mut all = sigstore.fixtures();
    all.extend(sigstore.policy_fixtures());
    variant::write_fixtures(&all, &dir.join("variants"))
}

#[test]
fn every_fixture_gets_the_reference_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore, dir.path());
    let policy = SignerPolicy::reference_default();
    let fixtures = written(&sigstore, dir.path());
    assert!(fixtures.len() >= 25, "{} fixtures", fixtures.len());
    let wrong: Vec<String> = fixtures
        .iter()
        .filter_map(|(name, expected, path)| {
            let outcome = verify_variant(path, &root, &policy);
            (outcome.name() != *expected)
                .then(|| format!("{name}: expected {expected}, got {outcome:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn success_names_the_signer_and_its_log_entry() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::root_only();
    let root = root_of(&sigstore, dir.path());
    let identity = TestIdentity::kernels_community("build-mac");
    for version in BundleVersion::ALL {
        let files = sigstore.signed_variant(
            "torch-cpu",
            &variant::sample_files(),
            &identity,
            SignOptions::version(version),
        );
        let path = dir.path().join(format!("{version:?}"));
        variant::write_dir(&path, &files);
        let Outcome::Success(signer) =
            verify_variant(&path, &root, &SignerPolicy::reference_default())
        else {
            panic!(
                "{version:?}: {:?}",
                verify_variant(&path, &root, &SignerPolicy::reference_default())
            );
        };
        assert_eq!(signer.issuer, "https://token.actions.githubusercontent.com");
        assert_eq!(
            signer.source_repository.as_deref(),
            Some("https://github.com/huggingface/kernels-community")
        );
        assert_eq!(
            signer.workflow.as_deref(),
            Some(identity.build_signer_uri.as_str())
        );
        assert_eq!(
            signer.workflow_commit.as_deref(),
            Some(identity.build_signer_digest.as_str())
        );
        assert!(signer.log_index.is_some_and(|i| i >= 100_000), "{signer:?}");
    }
}

#[test]
fn a_custom_signer_passes_only_the_policy_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore, dir.path());
    let identity = TestIdentity::custom("acme/kernels", ".github/workflows/ci.yml@refs/tags/v1");
    let path = dir.path().join("acme");
    let options = SignOptions::version(BundleVersion::V0_3);
    variant::write_dir(
        &path,
        &sigstore.signed_variant("acme", &variant::sample_files(), &identity, options),
    );
    let default = verify_variant(&path, &root, &SignerPolicy::reference_default());
    assert_eq!(
        default.name(),
        "SignatureVerificationFailure",
        "{default:?}"
    );
    let mut policy = SignerPolicy::reference_default();
    policy.rules.push(kernels_trust::SignerRule {
        source_repository: identity.source_repository_uri.clone(),
        workflows: vec![identity.build_signer_uri.clone()],
    });
    let custom = verify_variant(&path, &root, &policy);
    assert_eq!(custom.name(), "Success", "{custom:?}");
}

#[test]
fn test_bundles_do_not_verify_against_the_production_root() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let fixtures = written(&sigstore, dir.path());
    let (_, _, good) = fixtures
        .iter()
        .find(|(name, ..)| name == "good-v0.3")
        .unwrap();
    let outcome = verify_variant(
        good,
        &TrustRoot::production(),
        &SignerPolicy::reference_default(),
    );
    assert_eq!(
        outcome.name(),
        "SignatureVerificationFailure",
        "{outcome:?}"
    );
}

#[test]
fn another_test_sigstore_is_another_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ours = TestSigstore::new();
    let theirs = TestSigstore::new();
    let root = root_of(&ours, dir.path());
    let path = dir.path().join("theirs");
    let options = SignOptions::version(BundleVersion::V0_2);
    let identity = TestIdentity::kernels_community("build");
    variant::write_dir(
        &path,
        &theirs.signed_variant("theirs", &variant::sample_files(), &identity, options),
    );
    let outcome = verify_variant(&path, &root, &SignerPolicy::reference_default());
    assert_eq!(
        outcome.name(),
        "SignatureVerificationFailure",
        "{outcome:?}"
    );
}

#[test]
fn a_signing_time_outside_the_root_fails() {
    let dir = tempfile::tempdir().unwrap();
    // 2024-06-01: before every validFor of the test root.
    let sigstore = TestSigstore::new().with_signing_time(1_717_243_200);
    let root = root_of(&sigstore, dir.path());
    let path = dir.path().join("early");
    let identity = TestIdentity::kernels_community("build");
    let options = SignOptions::version(BundleVersion::V0_3);
    variant::write_dir(
        &path,
        &sigstore.signed_variant("early", &variant::sample_files(), &identity, options),
    );
    let outcome = verify_variant(&path, &root, &SignerPolicy::reference_default());
    assert_eq!(
        outcome.name(),
        "SignatureVerificationFailure",
        "{outcome:?}"
    );
}

#[test]
fn the_fixture_files_are_what_their_names_say() {
    let sigstore = TestSigstore::new();
    let fixtures = sigstore.fixtures();
    let has = |name: &str, file: &str| {
        let fixture = fixtures.iter().find(|f| f.name == name).unwrap();
        fixture.files.iter().any(|(path, _)| path == file)
    };
    assert!(!has("bundle-missing", BUNDLE_FILE));
    assert!(has("bundle-missing", METADATA_FILE));
    assert!(!has("metadata-missing", METADATA_FILE));
    assert!(has("metadata-missing", BUNDLE_FILE));
    let huge = fixtures.iter().find(|f| f.name == "bundle-huge").unwrap();
    let (_, bytes) = huge.files.iter().find(|(p, _)| p == BUNDLE_FILE).unwrap();
    assert!(bytes.len() > kernels_trust::signature::MAX_BUNDLE_BYTES);
}

/// The failures fail at the check their name says, not at an unrelated one.
#[test]
fn each_failure_names_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore, dir.path());
    let causes = [
        ("bundle-unknown-media-type", "media type"),
        ("bundle-huge", "more than 262144"),
        (
            "identity-other-repository",
            "https://github.com/acme/kernels",
        ),
        ("identity-other-workflow", "release.yaml"),
        ("identity-other-branch", "refs/heads/dev"),
        ("identity-other-issuer", "https://accounts.google.com"),
        ("signature-wrong", "signature invalid"),
        ("signature-flipped", "signature invalid"),
        ("certificate-other-ca", "UnknownIssuer"),
        (
            "metadata-changed-after-signing",
            "does not match artifact hash",
        ),
    ];
    let fixtures = written(&sigstore, dir.path());
    for (name, cause) in causes {
        let (_, _, path) = fixtures.iter().find(|(n, ..)| n == name).unwrap();
        let outcome = verify_variant(path, &root, &SignerPolicy::reference_default());
        let reason = match &outcome {
            Outcome::SignatureBundleInvalid(reason)
            | Outcome::SignatureVerificationFailure(reason) => reason,
            other => panic!("{name}: {other:?}"),
        };
        assert!(
            reason.contains(cause),
            "{name}: `{reason}` does not mention `{cause}`"
        );
    }
}

/// Any one changed byte of a good bundle is refused (never a panic, never a
/// pass): every 5th position of the text, replaced by another character.
#[test]
fn a_changed_bundle_byte_never_passes() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore, dir.path());
    let metadata = variant::metadata_json("one-byte", &variant::sample_files(), true);
    let bundle = sigstore.sign(&metadata, &TestIdentity::kernels_community("build"));
    let policy = SignerPolicy::reference_default();
    kernels_trust::verify_bundle(&metadata, bundle.as_bytes(), &root, &policy)
        .expect("the good bundle verifies");
    // The signer name of the checkpoint's signature line is not signed, and
    // neither verifier compares it with anything (only the key hint counts).
    let name_start = bundle.find("\u{2014} ").expect("a signed checkpoint") + "\u{2014} ".len();
    let name_end = name_start
        + bundle[name_start..]
            .find(' ')
            .expect("a signature after the name");
    let mut passed = Vec::new();
    for i in (0..bundle.len()).step_by(5) {
        let mut bytes = bundle.clone().into_bytes();
        if bytes[i].is_ascii_whitespace() || (name_start..name_end).contains(&i) {
            continue;
        }
        bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
        if kernels_trust::verify_bundle(&metadata, &bytes, &root, &policy).is_ok() {
            passed.push((
                i,
                String::from_utf8_lossy(&bytes[i.saturating_sub(20)..(i + 20).min(bytes.len())])
                    .into_owned(),
            ));
        }
    }
    assert!(passed.is_empty(), "{passed:#?}");
}

/// The mirror helper writes a variant that verifies where it lands.
#[test]
fn a_signed_variant_written_into_a_mirror_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore, dir.path());
    let mirror = dir.path().join("mirror");
    let fixtures = sigstore.fixtures();
    let unsigned = fixtures
        .iter()
        .find(|f| f.name == "bundle-missing")
        .unwrap();
    let files = unsigned.mirror_files("torch-cpu");
    assert!(files.iter().all(|f| f.path.starts_with("build/torch-cpu/")));
    kernels_test_support::write_repo(&mirror, "acme/signed_ops", &"f".repeat(40), &files);
    let commit = mirror.join("repos/kernels/acme/signed_ops/commits/c1/tree/build/torch-cpu");
    let outcome = verify_variant(&commit, &root, &SignerPolicy::reference_default());
    assert_eq!(outcome.name(), "SignatureBundleMissing", "{outcome:?}");
    let identity = TestIdentity::kernels_community("build");
    let variant_dir = sigstore.write_signed_variant_into_mirror(
        &mirror,
        "acme/signed_ops",
        "c1",
        "torch29-cxx11-cu128-x86_64-linux",
        &variant::sample_files(),
        &identity,
    );
    assert!(variant_dir.ends_with("commits/c1/tree/build/torch29-cxx11-cu128-x86_64-linux"));
    let outcome = verify_variant(&variant_dir, &root, &SignerPolicy::reference_default());
    assert_eq!(outcome.name(), "Success", "{outcome:?}");
    let metadata = fs_err::read_to_string(variant_dir.join(METADATA_FILE)).unwrap();
    assert!(metadata.contains("\"name\": \"signed-ops\""), "{metadata}");
}

#[test]
fn the_default_policy_is_the_reference_0_19_one_with_kernels_community_rs() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root = root_of(&sigstore, dir.path());
    let options = SignOptions::version(BundleVersion::V0_3);
    for (workflow, expected) in [
        ("build.yaml", "Success"),
        ("build-mac.yaml", "SignatureVerificationFailure"),
    ] {
        let identity = TestIdentity::custom(
            "huggingface/kernels-community-rs",
            &format!(".github/workflows/{workflow}@refs/heads/main"),
        );
        let path = dir.path().join(workflow);
        variant::write_dir(
            &path,
            &sigstore.signed_variant("rs", &variant::sample_files(), &identity, options),
        );
        let outcome = verify_variant(&path, &root, &SignerPolicy::reference_default());
        assert_eq!(outcome.name(), expected, "{workflow}: {outcome:?}");
    }
}
