//! Signatures of kernel variants (issue 22): `kernels verify-signature`
//! against the project's Hub server with the test Sigstore, agreeing with
//! reference 0.17.2's own command given the same trusted root; `kernels
//! verify --signatures` and `kernels audit` offline from the cache; the
//! `[tool.kernels]` trust settings and their errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use kernels_test_support::sigstore::variant::{Fixture, metadata_json, sample_files};
use kernels_test_support::sigstore::{TestIdentity, TestSigstore};
use kernels_test_support::{self as common, MirrorFile, TestContext, assert_ok, snapshot, stderr};

/// Every fixture of the test Sigstore whose metadata.json the reference
/// can read, one variant each, at branch `v1`.
const FIXTURES: &str = "acme/fixtures";
/// The fixtures whose metadata.json is missing or unreadable.
const BAD_METADATA: &str = "acme/bad-metadata";
/// A kernel to download: signed (dirty build), unsigned, and signed by a
/// company workflow only `[tool.kernels.signers]` accepts.
const CACHED: &str = "acme/cached";

const SIGNED: &str = "torch-cpu";
const UNSIGNED: &str = "torch-universal";
const COMPANY: &str = "torch29-cxx11-cpu-x86_64-linux";
const COMPANY_WORKFLOW: &str =
    "https://github.com/acme/kernel-ci/.github/workflows/build.yaml@refs/heads/main";

fn sha(repo: &str) -> String {
    let letter = match repo {
        FIXTURES => "f",
        BAD_METADATA => "b",
        _ => "c",
    };
    letter.repeat(40)
}

/// Whether a fixture's metadata.json is missing or does not parse: the
/// reference's `--all-variants` reads every variant's metadata to lock the
/// kernel before it verifies anything, and stops with a traceback.
fn bad_metadata(fixture: &Fixture) -> bool {
    matches!(fixture.expected, "MetadataInvalid" | "MetadataMissing")
}

/// A valid, distinct build-variant name per fixture index (the reference
/// skips directories whose name is not one).
fn variant_name(i: usize) -> String {
    const CUDA: [&str; 9] = [
        "118", "120", "121", "122", "124", "126", "128", "129", "130",
    ];
    format!("torch2{}-cxx11-cu{}-x86_64-linux", 7 + i / 9, CUDA[i % 9])
}

fn under(variant: &str, files: Vec<(String, Vec<u8>)>) -> Vec<MirrorFile> {
    files
        .into_iter()
        .map(|(path, content)| MirrorFile {
            path: format!("build/{variant}/{path}"),
            content,
        })
        .collect()
}

/// The files of [`CACHED`].
fn cached_files(sigstore: &TestSigstore) -> Vec<MirrorFile> {
    let files = sample_files();
    let mut metadata: serde_json::Value =
        serde_json::from_slice(&metadata_json("cached", &files, true)).unwrap();
    metadata["provenance"] = serde_json::json!({
        "kernel-builder": {"version": "0.17.0", "commit": "ab".repeat(20), "dirty": true},
        "kernel": {"commit": "cd".repeat(20), "dirty": false},
    });
    let metadata = format!("{metadata:#}\n").into_bytes();
    let bundle = sigstore.sign(&metadata, &TestIdentity::kernels_community("build"));
    let mut signed = files.clone();
    signed.push(("metadata.json".into(), metadata));
    signed.push(("metadata.json.sigstore".into(), bundle.into_bytes()));
    let mut unsigned = files.clone();
    unsigned.push((
        "metadata.json".into(),
        metadata_json("cached", &files, true),
    ));
    let company = TestIdentity::custom(
        "acme/kernel-ci",
        ".github/workflows/build.yaml@refs/heads/main",
    );
    let mut out = under(SIGNED, signed);
    out.extend(under(UNSIGNED, unsigned));
    out.extend(sigstore.signed_mirror_files("cached", COMPANY, &files, &company));
    out
}

fn write_mirror(mirror: &Path, sigstore: &TestSigstore, fixtures: &[Fixture]) {
    let files = |bad: bool| -> Vec<MirrorFile> {
        fixtures
            .iter()
            .enumerate()
            .filter(|(_, f)| bad_metadata(f) == bad)
            .flat_map(|(i, f)| f.mirror_files(&variant_name(i)))
            .collect()
    };
    let repos = [
        (FIXTURES, files(false)),
        (BAD_METADATA, files(true)),
        (CACHED, cached_files(sigstore)),
    ];
    for (repo, files) in repos {
        common::write_repo(mirror, repo, &sha(repo), &files);
        let toml = mirror.join("repos/kernels").join(repo).join("repo.toml");
        let text = fs_err::read_to_string(&toml).unwrap();
        fs_err::write(
            &toml,
            text.replace("main = \"c1\"", "main = \"c1\"\nv1 = \"c1\""),
        )
        .unwrap();
    }
    fs_err::create_dir_all(mirror.join("orgs")).unwrap();
    fs_err::write(
        mirror.join("orgs/acme.toml"),
        "fullname = \"Acme\"\ntrusted_kernel_publisher = true\n",
    )
    .unwrap();
}

/// A server with both kernels, the test trusted root at
/// `<project>/trusted_root.json`, and the fixtures.
fn context() -> (TestContext, Vec<Fixture>) {
    let sigstore = TestSigstore::new();
    let fixtures = sigstore.fixtures();
    let p = TestContext::with_generated_mirror(|m| write_mirror(m, &sigstore, &fixtures), &[]);
    sigstore.write_trusted_root(&p.project.join("trusted_root.json"));
    (p, fixtures)
}

fn root(p: &TestContext) -> String {
    p.project.join("trusted_root.json").display().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Per variant, the lines of its block (`✅ name: …` / `❌ name: …` and
/// what follows until the next block).
fn blocks(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        let start = line
            .strip_prefix("✅ ")
            .or_else(|| line.strip_prefix("❌ "));
        if let Some(name) = start.and_then(|rest| rest.split(':').next()) {
            current = Some(name.to_owned());
        }
        if let Some(name) = &current {
            out.entry(name.clone()).or_default().push(line.to_owned());
        }
    }
    out
}

/// The reference's `kernels verify-signature ARGS` with the test root.
fn reference(p: &TestContext, args: &[&str]) -> Output {
    let scratch = p.project.join("reference-cache");
    common::python("kernels-0.17.2", p.endpoint(), &scratch)
        // With telemetry off, 0.17.2 sends a user agent ending in `; `,
        // which the HTTP client refuses before any request.
        .env_remove("HF_HUB_DISABLE_TELEMETRY")
        .arg(common::repo_root().join("tests/python/verify_signature_cli.py"))
        .arg(root(p))
        .arg("verify-signature")
        .args(args)
        .output()
        .expect("run the reference's Python")
}

fn ours(p: &TestContext, args: &[&str]) -> Output {
    p.kernels()
        .arg("verify-signature")
        .args(args)
        .args(["--trust-root", &root(p)])
        .output()
        .unwrap()
}

/// The status line the reference prints for a fixture's expected outcome.
fn expected_line(variant: &str, outcome: &str) -> String {
    let what = match outcome {
        "Success" => return format!("✅ {variant}: kernel metadata is correctly signed"),
        "SignatureBundleMissing" => "cannot verify kernel integrity, signature not found",
        "SignatureBundleInvalid" => "cannot verify kernel integrity, invalid signature bundle:",
        "MetadataInvalid" => "cannot verify kernel integrity, invalid metadata:",
        "MetadataMissing" | "DigestMissing" => {
            "cannot verify kernel integrity, metadata does not have a digest"
        }
        "DigestVerificationFailure" => "kernel integrity check failed",
        "SignatureVerificationFailure" => "metadata signature verification failed:",
        other => panic!("unknown outcome {other}"),
    };
    format!("❌ {variant}: {what}")
}

#[test]
fn verify_signature_agrees_with_the_reference_on_every_fixture() {
    let (p, fixtures) = context();
    for flags in [
        &["--all-variants"][..],
        &["--all-variants", "--filter-unsigned", "--filter-no-digest"][..],
    ] {
        let args: Vec<&str> = [FIXTURES, "1"]
            .into_iter()
            .chain(flags.iter().copied())
            .collect();
        let (ours, theirs) = (ours(&p, &args), reference(&p, &args));
        let (ours_text, theirs_text) = (stdout(&ours), stdout(&theirs));
        assert_eq!(ours.status.code(), Some(1), "{ours_text}{}", stderr(&ours));
        assert_eq!(
            theirs.status.code(),
            ours.status.code(),
            "{}",
            stderr(&theirs)
        );
        let (ours_blocks, theirs_blocks) = (blocks(&ours_text), blocks(&theirs_text));
        let names: Vec<&String> = ours_blocks.keys().collect();
        assert_eq!(
            names,
            theirs_blocks.keys().collect::<Vec<_>>(),
            "{flags:?}: {}",
            stderr(&theirs)
        );
        let filtered = flags.len() > 1;
        for (i, fixture) in fixtures
            .iter()
            .enumerate()
            .filter(|(_, f)| !bad_metadata(f))
        {
            let variant = variant_name(i);
            let skipped = filtered
                && matches!(
                    fixture.expected,
                    "SignatureBundleMissing" | "MetadataMissing" | "DigestMissing"
                );
            let Some(lines) = ours_blocks.get(&variant) else {
                assert!(skipped, "{}: no line in\n{ours_text}", fixture.name);
                continue;
            };
            assert!(!skipped, "{}: not skipped", fixture.name);
            let want = expected_line(&variant, fixture.expected);
            assert_eq!(lines[0], want, "{}", fixture.name);
            assert_eq!(
                theirs_blocks[&variant][0], want,
                "{}: reference",
                fixture.name
            );
            if fixture.expected == "DigestVerificationFailure" {
                // The violations are printed alike, line for line.
                assert_eq!(lines, &theirs_blocks[&variant], "{}", fixture.name);
            }
        }
    }
}

#[test]
fn verify_signature_names_unreadable_metadata_where_the_reference_stops() {
    let (p, fixtures) = context();
    let args = [BAD_METADATA, "1", "--all-variants"];
    let (ours, theirs) = (ours(&p, &args), reference(&p, &args));
    assert_eq!(ours.status.code(), Some(1));
    assert_eq!(theirs.status.code(), Some(1));
    // Stays a substring check: the reference's Python traceback, which names its files.
    assert!(stderr(&theirs).contains("metadata"), "{}", stderr(&theirs));
    let ours_blocks = blocks(&stdout(&ours));
    let bad: Vec<(usize, &Fixture)> = fixtures
        .iter()
        .enumerate()
        .filter(|(_, f)| bad_metadata(f))
        .collect();
    assert!(!bad.is_empty());
    assert_eq!(ours_blocks.len(), bad.len(), "{}", stdout(&ours));
    for (i, fixture) in bad {
        let variant = variant_name(i);
        assert_eq!(
            ours_blocks[&variant][0],
            expected_line(&variant, fixture.expected),
            "{}",
            fixture.name
        );
    }
}

#[test]
fn verify_signature_checks_the_variant_for_the_environment_and_exits_0_when_signed() {
    let (p, _) = context();
    let env = [
        "--cpu",
        "--torch-version",
        "2.9",
        "--os",
        "linux",
        "--arch",
        "x86_64",
    ];
    let mut args = vec![CACHED, "1"];
    args.extend(env);
    // The best variant for CPU torch 2.9 is the company-signed one: refused
    // by the default policy, accepted once its workflow is a signer.
    let out = ours(&p, &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        blocks(&stdout(&out)).keys().collect::<Vec<_>>(),
        vec![COMPANY],
        "{}",
        stdout(&out)
    );
    p.write(
        "pyproject.toml",
        &format!("[tool.kernels.signers]\n\"acme\" = [\"{COMPANY_WORKFLOW}\"]\n"),
    );
    let out = ours(&p, &args);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!("✅ {COMPANY}: kernel metadata is correctly signed\n")
    );
    // Without the test root, the production root refuses the test CA.
    // "❌ … metadata signature verification failed" for the signed variant.
    snapshot!(
        "signatures_production_root",
        p.run(&["verify-signature", CACHED, "1", "--all-variants"]),
        LOG_ID
    );
    // Nothing entered the cache.
    assert!(!p.repo_dir("kernel", CACHED).exists());
}

/// The test Sigstore's log key is made fresh each run, and so is its id.
const LOG_ID: &[(&str, &str)] = &[(r"log ID [A-Za-z0-9+/]+=*", "log ID [LOG-ID]")];

/// A project locking [`CACHED`], downloaded with every variant.
fn downloaded(signers: bool) -> TestContext {
    let (p, _) = context();
    let signers = if signers {
        format!("\n[tool.kernels.signers]\n\"acme/cached\" = [\"{COMPANY_WORKFLOW}\"]\n")
    } else {
        String::new()
    };
    p.write(
        "pyproject.toml",
        &format!(
            "[project]\nname = \"demo\"\n\n[tool.kernels]\ntrust-root = \"trusted_root.json\"\n\n[tool.kernels.dependencies]\n\"{CACHED}\" = 1\n{signers}"
        ),
    );
    p.lock_b(&[(CACHED, &sha(CACHED))]);
    assert_ok(&p.download(&["--frozen", "--all-variants"]));
    p
}

fn verify_signatures(p: &TestContext, args: &[&str]) -> Output {
    p.verify(&[&["--frozen", "--all-variants", "--signatures"], args].concat())
}

/// The cached variant directory `variant` of [`CACHED`].
fn cached_variant(p: &TestContext, variant: &str) -> PathBuf {
    p.repo_dir("kernel", CACHED)
        .join("snapshots")
        .join(sha(CACHED))
        .join("build")
        .join(variant)
}

#[test]
fn verify_signatures_follows_the_project_policy_offline() {
    let p = downloaded(true);
    // The kernels-community and company workflows as signers, the unsigned
    // variant accepted: 2 signed, 1 unsigned.
    snapshot!("signatures_verify_policy", verify_signatures(&p, &[]));

    // Air-gapped: no Hub at all.
    let offline = p
        .kernels()
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_ENDPOINT", common::NO_HUB)
        .args(["verify", "--frozen", "--all-variants", "--signatures"])
        .arg(&p.project)
        .output()
        .unwrap();
    assert_ok(&offline);

    // `--require-signed` refuses the unsigned variant.
    let out = verify_signatures(&p, &["--require-signed"]);
    snapshot!("signatures_verify_require_signed", out);

    // JSON: one document, the reference's outcome names.
    let out = verify_signatures(&p, &["--format", "json"]);
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["command"], "verify --signatures");
    let variants = &doc["kernels"][0]["variants"];
    let outcomes: Vec<(&str, &str)> = variants
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["outcome"].as_str().unwrap(),
                v["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("Success", "accepted"),
            ("SignatureBundleMissing", "unsigned"),
            ("Success", "accepted")
        ]
    );
    assert_eq!(
        variants[0]["signer"]["workflow"],
        "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main"
    );
}

#[test]
fn a_changed_byte_or_another_signer_is_refused_without_require_signed() {
    // Downloaded while the company workflow was an accepted signer (download
    // refuses a signer the policy does not accept), then taken out.
    let p = downloaded(true);
    let pyproject = p.read("pyproject.toml");
    let without = pyproject.split("\n[tool.kernels.signers]").next().unwrap();
    p.write("pyproject.toml", without);
    // Without the company workflow among the signers, its variant is refused.
    snapshot!("signatures_signer_not_accepted", verify_signatures(&p, &[]));

    // A byte of the signed variant's shared object changed in the cache.
    let so = cached_variant(&p, SIGNED).join("_signed_kernel.abi3.so");
    let mut bytes = fs_err::read(&so).unwrap();
    bytes[10] ^= 1;
    fs_err::remove_file(&so).unwrap();
    fs_err::write(&so, bytes).unwrap();
    // DigestVerificationFailure naming the shared object.
    snapshot!("signatures_changed_byte", verify_signatures(&p, &[]));
    let audit = p.run(&["audit", "--format", "json"]);
    assert_eq!(audit.status.code(), Some(1));
}

#[test]
fn audit_reports_signer_digest_provenance_and_publisher() {
    let p = downloaded(true);
    let out = p.run(&["audit"]);
    assert_ok(&out);
    snapshot!("signatures_audit_text", out);
    let out = p.run(&["audit", "--format", "json"]);
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["command"], "audit");
    let kernel = &doc["kernels"][0];
    assert_eq!(kernel["repo_type"], "kernel");
    assert_eq!(kernel["publisher"], "unknown");
    let signed = &kernel["variants"][0];
    assert_eq!(signed["variant"], SIGNED);
    assert_eq!(signed["outcome"], "Success");
    assert_eq!(signed["digest"], true);
    assert_eq!(signed["dirty"], true);
    assert!(signed["signer"]["log_index"].is_u64(), "{signed}");
    assert!(signed["signer"]["workflow_commit"].is_string(), "{signed}");
    assert_eq!(kernel["variants"][1]["dirty"], serde_json::Value::Null);
    assert_eq!(kernel["variants"][1]["digest"], true);

    // `require-signed = true` in pyproject.toml refuses the unsigned variant.
    let text = p.read("pyproject.toml").replace(
        "trust-root = \"trusted_root.json\"",
        "trust-root = \"trusted_root.json\"\nrequire-signed = true\ntrust = [\"acme/cached\"]",
    );
    p.write("pyproject.toml", &text);
    let out = p.run(&["audit", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kernels"][0]["publisher"], "allow-listed");
    assert_eq!(doc["kernels"][0]["variants"][1]["verdict"], "refused");

    // The same kernel cached as a model-type repository.
    let kernel_dir = p.repo_dir("kernel", CACHED);
    fs_err::rename(&kernel_dir, p.repo_dir("model", CACHED)).unwrap();
    let out = p.run(&["audit", "--format", "json", "--trust-root", &root(&p)]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kernels"][0]["repo_type"], "model", "{doc}");
}

#[test]
fn trust_settings_errors_name_the_file_the_key_and_the_fix() {
    let (p, _) = context();
    p.lock_b(&[(CACHED, &sha(CACHED))]);
    for (name, settings) in [
        (
            "signatures_setting_require_signed",
            "require-signed = \"yes\"\n",
        ),
        (
            "signatures_setting_signer",
            "[tool.kernels.signers]\n\"acme\" = [\"https://github.com/acme/ci/build.yaml\"]\n",
        ),
    ] {
        p.write("pyproject.toml", &format!("[tool.kernels]\n{settings}"));
        snapshot!(name, p.run(&["audit"]));
    }
    p.write(
        "pyproject.toml",
        "[tool.kernels]\ntrust-root = \"missing.json\"\n",
    );
    snapshot!("signatures_setting_trust_root", p.run(&["audit"]));
    snapshot!(
        "signatures_trust_root_flag",
        p.run(&["audit", "--trust-root", "elsewhere.json"])
    );
}

/// A trust root of the wrong shape (`{"mediaType": "x"}`: no CA, no log, no
/// CT log) is refused when it is read, as sigstore-python refuses it, never
/// blamed on a bundle: `download`, `verify --signatures` and
/// `verify-signature` give the same error, `kernels::trust::root_setting`,
/// naming the `[tool.kernels] trust-root` key (or `--trust-root`).
#[test]
fn a_trust_root_of_the_wrong_shape_is_refused_naming_the_setting() {
    let p = downloaded(true);
    let good = p.read("trusted_root.json");
    p.write("trusted_root.json", r#"{"mediaType": "x"}"#);
    let runs = [
        (
            "download",
            p.run(&["download", "--frozen", "--all-variants"]),
        ),
        (
            "verify_signatures",
            p.run(&["verify", "--frozen", "--all-variants", "--signatures"]),
        ),
        (
            "verify_signature",
            p.run(&["verify-signature", CACHED, "1", "--all-variants"]),
        ),
    ];
    for (name, out) in runs {
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        // kernels::trust::root_setting, naming `key` and "mediaType is `x`".
        let snap = format!("trust_root_wrong_shape_{name}");
        snapshot!(snap.as_str(), out);
    }
    // A root without a transparency log, given on the command line.
    let mut root: serde_json::Value = serde_json::from_str(&good).unwrap();
    root.as_object_mut().unwrap().remove("tlogs");
    p.write("no_tlog.json", &root.to_string());
    let out = p.run(&[
        "download",
        "--frozen",
        "--all-variants",
        "--trust-root",
        "no_tlog.json",
    ]);
    // "the trust root named by --trust-root cannot be used": no transparency log.
    snapshot!("trust_root_no_tlog_flag", out);
}
