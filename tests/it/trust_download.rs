//! What `download` and `verify` accept into and from the cache beyond the
//! Hub's bytes: a variant's Sigstore signature (checked before anything of
//! the variant is linked, on the warm path and offline), what vouches for a
//! variant the lock pins no hash for (a planted directory is refused), and
//! the signer remembered in `kernels.lock.provenance` (trust on first use).
//!
//! The signatures are real bundles of the test Sigstore
//! ([`kernels_test_support::sigstore::TestSigstore`]), verified against its
//! trusted root given with `--trust-root`.

use std::path::{Path, PathBuf};
use std::process::Output;

use kernels_test_support::sigstore::variant::sample_files;
use kernels_test_support::sigstore::{TestIdentity, TestSigstore};
use kernels_test_support::{
    self as common, MirrorFile, NO_HUB, TOKEN, TestContext, assert_ok, snapshot, snapshot_paths,
    stderr,
};

const VARIANT: &str = "torch-cpu";

/// Commit of `acme/<name>`: the kernel's letter repeated.
fn sha(name: &str) -> String {
    let letter = match name {
        "signed" => 'a',
        "so-changed" => 'b',
        "unsigned" => 'c',
        "other-ci" => 'd',
        _ => 'e',
    };
    letter.to_string().repeat(40)
}

/// The served files of `acme/<name>`, one `torch-cpu` variant: signed by
/// `workflow` of kernels-community (accepted by the default policy), then
/// changed as the name says.
fn served(sigstore: &TestSigstore, name: &str, workflow: &str) -> Vec<MirrorFile> {
    let identity = match name {
        "other-ci" => TestIdentity::custom(
            "acme/other-ci",
            ".github/workflows/build.yaml@refs/heads/main",
        ),
        _ => TestIdentity::kernels_community(workflow),
    };
    if name == "unsigned" {
        return sample_files()
            .into_iter()
            .map(|(path, content)| MirrorFile {
                path: format!("build/{VARIANT}/{path}"),
                content,
            })
            .collect();
    }
    let mut files = sigstore.signed_mirror_files(name, VARIANT, &sample_files(), &identity);
    if name == "so-changed" {
        let so = files.iter_mut().find(|f| f.path.ends_with(".so")).unwrap();
        so.content[100] ^= 1;
    }
    files
}

const KERNELS: &[&str] = &["signed", "so-changed", "unsigned", "other-ci"];

/// A server over every kernel of [`KERNELS`], signed by `workflow`; the
/// test Sigstore's trusted root written to `<project>/trusted_root.json`.
fn context(sigstore: &TestSigstore, workflow: &str) -> TestContext {
    let p = TestContext::with_generated_mirror(
        |mirror| {
            for name in KERNELS {
                let files = served(sigstore, name, workflow);
                common::write_repo(mirror, &format!("acme/{name}"), &sha(name), &files);
            }
        },
        &[],
    );
    sigstore.write_trusted_root(&p.project.join("trusted_root.json"));
    p
}

fn root(p: &TestContext) -> String {
    p.project.join("trusted_root.json").display().to_string()
}

/// `kernels download <project> --trust-root <root> <args>`.
fn download(p: &TestContext, args: &[&str]) -> Output {
    let root = root(p);
    let mut all = vec!["--trust-root", root.as_str()];
    all.extend_from_slice(args);
    p.download(&all)
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out))
}

/// The test Sigstore signs with fresh keys each run: the id of its log key,
/// and the size of a signature bundle (a signature's length varies by a byte
/// or two), vary from run to run.
const FRESH_KEYS: &[(&str, &str)] = &[
    (r"log ID [A-Za-z0-9+/]+=*", "log ID [LOG-ID]"),
    (r"\b\d+(\.\d+)? (B|KiB|MiB)\b", "[SIZE]"),
];

/// Exit 1 (in the snapshot `name` of the whole output).
fn assert_refused(name: &str, out: &Output) {
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    snapshot!(name, out, FRESH_KEYS);
}

fn repo_dir(p: &TestContext, name: &str) -> PathBuf {
    p.repo_dir("kernel", &format!("acme/{name}"))
}

/// No file of `acme/<name>` is linked in its snapshot.
fn assert_nothing_linked(p: &TestContext, name: &str) {
    let dir = repo_dir(p, name);
    let snapshot = dir.join("snapshots").join(sha(name));
    assert!(
        !snapshot.exists() || snapshot_paths(&dir, &sha(name)).is_empty(),
        "{name}: linked {:?}",
        snapshot_paths(&dir, &sha(name))
    );
}

fn provenance(p: &TestContext) -> serde_json::Value {
    let text = fs_err::read_to_string(p.project.join("kernels.lock.provenance")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_changed_byte_in_a_signed_so_is_refused_and_nothing_is_cached() {
    let sigstore = TestSigstore::new();
    let p = context(&sigstore, "build");
    p.lock_b(&[("acme/so-changed", &sha("so-changed"))]);
    let out = download(&p, &["--all-variants"]);
    // kernels::download::signature: variant `torch-cpu` of
    // acme/so-changed@bbbbbbb fails (DigestVerificationFailure), naming the .so.
    assert_refused("so_changed", &out);
    let dir = repo_dir(&p, "so-changed");
    assert_nothing_linked(&p, "so-changed");
    let so = served(&sigstore, "so-changed", "build")
        .into_iter()
        .find(|f| f.path.ends_with(".so"))
        .unwrap();
    assert!(
        !dir.join("blobs").join(so.etag()).exists(),
        "the .so was kept"
    );
    assert!(!p.project.join("kernels.lock.provenance").exists());
    // JSON: the failure's code and the outcome.
    let out = download(&p, &["--all-variants", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["failed"][0]["code"], "kernels::download::signature",
        "{doc}"
    );
}

#[test]
fn a_signed_variant_is_recorded_verified_warm_and_offline_and_air_gapped() {
    let sigstore = TestSigstore::new();
    let p = context(&sigstore, "build");
    p.lock_b(&[("acme/signed", &sha("signed"))]);
    let out = download(&p, &["--all-variants", "--format", "json"]);
    assert_ok(&out);
    // No note about unsigned variants.
    snapshot!("signed_download_json_stderr", stderr(&out), FRESH_KEYS);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let signature = &doc["kernels"][0]["signatures"][0];
    assert_eq!(signature["variant"], VARIANT, "{doc}");
    assert_eq!(signature["outcome"], "Success", "{doc}");
    let workflow = "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main";
    assert_eq!(signature["signer"]["workflow"], workflow, "{doc}");
    // The side file: sorted, the signer and the files hash.
    let recorded = provenance(&p);
    let entry = &recorded["kernels"]["acme/signed"][sha("signed")][VARIANT];
    assert_eq!(entry["signer"]["workflow"], workflow, "{recorded}");
    assert!(
        entry["files"].as_str().unwrap().starts_with("sha256-"),
        "{recorded}"
    );
    assert!(entry["signer"]["rekor-log-index"].is_u64(), "{recorded}");
    let before = fs_err::read(p.project.join("kernels.lock.provenance")).unwrap();
    assert_ok(&download(&p, &["--all-variants"]));
    assert_eq!(
        before,
        fs_err::read(p.project.join("kernels.lock.provenance")).unwrap()
    );

    // Air-gapped: no Hub, HF_HUB_OFFLINE=1.
    let root = root(&p);
    let offline = |args: &[&str]| {
        let mut cmd = p.kernels();
        cmd.args(args)
            .env("HF_ENDPOINT", NO_HUB)
            .env("HF_HUB_OFFLINE", "1");
        cmd.output().unwrap()
    };
    let project = p.project.display().to_string();
    assert_ok(&offline(&["verify", &project, "--all-variants"]));
    let out = offline(&[
        "download",
        &project,
        "--all-variants",
        "--trust-root",
        &root,
    ]);
    assert_ok(&out);
    snapshot!("signed_download_air_gapped", out, FRESH_KEYS);
    // Offline, the signature is checked against the given root: the
    // production root does not know the test CA.
    let out = offline(&["download", &project, "--all-variants"]);
    assert_refused("production_root_offline", &out);
}

#[test]
fn a_signer_the_policy_does_not_accept_is_refused() {
    let sigstore = TestSigstore::new();
    let p = context(&sigstore, "build");
    p.lock_b(&[("acme/other-ci", &sha("other-ci"))]);
    let out = download(&p, &["--all-variants"]);
    // SignatureVerificationFailure, naming https://github.com/acme/other-ci.
    assert_refused("signer_not_accepted", &out);
    assert_nothing_linked(&p, "other-ci");
}

#[test]
fn unsigned_is_one_note_and_refused_when_signatures_are_required() {
    let sigstore = TestSigstore::new();
    let p = context(&sigstore, "build");
    p.lock_b(&[
        ("acme/unsigned", &sha("unsigned")),
        ("acme/signed", &sha("signed")),
    ]);
    let out = download(&p, &["--all-variants"]);
    assert_ok(&out);
    let notes: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.starts_with("note:"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        notes,
        ["note: unsigned variants (no metadata.json.sigstore): acme/unsigned@ccccccc (torch-cpu)"],
        "{}",
        stderr(&out)
    );
    let out = download(&p, &["--all-variants", "--require-signed"]);
    // variant `torch-cpu` of acme/unsigned@ccccccc: SignatureBundleMissing.
    assert_refused("unsigned_required", &out);
    // Offline too.
    let out = download(&p, &["--all-variants", "--require-signed", "--offline"]);
    assert_refused("unsigned_required_offline", &out);
}

#[test]
fn the_same_commit_signed_by_another_identity_fails_naming_both() {
    let sigstore = TestSigstore::new();
    let first = context(&sigstore, "build");
    first.lock_b(&[("acme/signed", &sha("signed"))]);
    assert_ok(&download(&first, &["--all-variants"]));
    // Another server with the same commit, signed by another workflow the
    // default policy accepts as well, downloaded into a fresh cache (another
    // machine with the project's kernels.lock.provenance; the first cache is
    // complete and its receipts spare it any request).
    let second = context(&sigstore, "build-mac");
    let mut cmd = common::kernels(second.endpoint(), &second.cache);
    let project = first.project.display().to_string();
    let root = root(&first);
    cmd.args([
        "download",
        &project,
        "--all-variants",
        "--trust-root",
        &root,
    ])
    .env("HF_TOKEN", TOKEN);
    let out = cmd.output().unwrap();
    // kernels::provenance::changed, naming both workflows.
    assert_refused("provenance_changed", &out);
    // The record is unchanged.
    let recorded = provenance(&first);
    let entry = &recorded["kernels"]["acme/signed"][sha("signed")][VARIANT];
    assert!(
        entry["signer"]["workflow"]
            .as_str()
            .unwrap()
            .ends_with("build.yaml@refs/heads/main"),
        "{recorded}"
    );
}

/// Plants `build/<variant>/__init__.py` (a regular file) in the cached
/// snapshot of `acme/relu` of the acme world.
fn plant(p: &TestContext, variant: &str) -> PathBuf {
    let dir = repo_dir(p, "relu")
        .join("snapshots")
        .join(common::RELU_SHA)
        .join("build")
        .join(variant);
    fs_err::create_dir_all(&dir).unwrap();
    let path = dir.join("__init__.py");
    let _ = fs_err::remove_file(&path);
    fs_err::write(&path, b"raise SystemExit(\"planted\")\n").unwrap();
    path
}

fn remove(path: &Path) {
    fs_err::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_planted_variant_is_refused_with_either_lock_format() {
    let p = TestContext::world();
    let relu = common::relu_files();
    let cpu = ["--variant", "torch-cpu"];
    // KernelLocks: the lock pins no hash, relu has no digest; download
    // records the files hash in kernels.lock.provenance.
    p.lock_b(&[("acme/relu", common::RELU_SHA)]);
    assert_ok(&p.download(&cpu));
    assert!(p.project.join("kernels.lock.provenance").is_file());
    assert_ok(&p.verify(&cpu));
    // A variant directory nothing vouches for.
    let planted = plant(&p, "torch-universal");
    // Each: "variant `torch-universal` has nothing that vouches", naming
    // build/torch-universal/__init__.py.
    for (name, out) in [
        ("planted_universal_verify", p.verify(&["--all-variants"])),
        (
            "planted_universal_verify_signatures",
            p.verify(&["--all-variants", "--signatures"]),
        ),
        (
            "planted_universal_download_offline",
            p.download(&["--all-variants", "--offline"]),
        ),
    ] {
        assert_refused(name, &out);
    }
    // The repair named is one that works: an online download of a complete
    // cache fetches nothing, so the directory is to be removed first.
    // `rm -r …/build/torch-universal`, not "repair the cache with".
    assert_refused("planted_universal_repair", &p.verify(&["--all-variants"]));
    remove(&planted);
    assert_ok(&p.verify(&["--all-variants", "--signatures"]));
    // A file planted into the recorded variant: the recorded hash differs.
    let planted = plant(&p, "torch-cpu");
    // Each: "kernels.lock.provenance pins its files", naming
    // build/torch-cpu/__init__.py.
    for (name, out) in [
        ("planted_file_verify", p.verify(&cpu)),
        (
            "planted_file_download_offline",
            p.download(&["--offline", "--variant", "torch-cpu"]),
        ),
    ] {
        assert_refused(name, &out);
    }
    fs_err::remove_file(&planted).unwrap();
    // Without the side file nothing vouches for the downloaded variant
    // either, offline; online the listing does, and it is recorded again.
    fs_err::remove_file(p.project.join("kernels.lock.provenance")).unwrap();
    // "has nothing that vouches", naming build/torch-cpu/relu/__init__.py.
    assert_refused("without_side_file_verify", &p.verify(&cpu));
    assert_ok(&p.download(&cpu));
    assert_ok(&p.verify(&cpu));
    // Online, a file the listing does not have is refused, naming it.
    let extra = plant(&p, "torch-cpu");
    // kernels::download::unlisted_file, naming build/torch-cpu/__init__.py.
    assert_refused("unlisted_file_download", &p.download(&cpu));
    fs_err::remove_file(&extra).unwrap();

    // Variant hashes: the planted directory is no locked variant.
    p.lock_a(&[("acme/relu", common::RELU_SHA, &relu)]);
    assert_ok(&p.download(&cpu));
    let planted = plant(&p, "torch-planted");
    // "variant `torch-planted` is in the cached snapshot but not in kernels.lock".
    assert_refused("planted_variant_not_locked", &p.verify(&cpu));
    remove(&planted);
    assert_ok(&p.verify(&cpu));
}

#[test]
fn lock_check_reads_the_side_file_offline() {
    let p = TestContext::world().with_pyproject(
        // The acme builds predate metadata.json: a variant-hash lock (≤0.16).
        "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n\"acme/relu\" = { revision = \"main\" }\n",
    );
    p.run_ok(&["lock"]);
    p.run_ok(&["lock", "--check", "--offline"]);
    p.write(
        "kernels.lock.provenance",
        "{\"version\": 1, \"kernels\": []}\n",
    );
    // kernels::provenance::invalid: "is not a kernels.lock.provenance file".
    snapshot!(
        "invalid_side_file_lock_check",
        p.run(&["lock", "--check", "--offline"]),
        FRESH_KEYS
    );
}

#[test]
fn the_warm_path_checks_the_signature_without_a_request() {
    let sigstore = TestSigstore::new();
    // Signed once: the lock hashes exactly the served bundle.
    let files = served(&sigstore, "signed", "build");
    let p = TestContext::with_generated_mirror(
        |mirror| common::write_repo(mirror, "acme/signed", &sha("signed"), &files),
        &["--test-control"],
    );
    sigstore.write_trusted_root(&p.project.join("trusted_root.json"));
    p.lock_a(&[("acme/signed", &sha("signed"), &files)]);
    assert_ok(&download(&p, &["--all-variants"]));
    // Complete in the cache: no listing, but the bundle is verified, here
    // against the production root, which does not know the test CA.
    let out = p.download(&["--all-variants"]);
    assert_refused("warm_production_root", &out);
    // The variant-hash lock pins the files, so the side file has the
    // signed variant only.
    let recorded = provenance(&p);
    assert!(recorded["kernels"]["acme/signed"][sha("signed")][VARIANT]["signer"].is_object());
    assert_ok(&download(&p, &["--all-variants"]));
}

#[test]
fn a_legacy_issuer_of_another_provider_is_refused_as_the_reference_refuses_it() {
    // Issuer `.1.8` GitHub Actions, legacy issuer `.1.1` Google: the
    // reference's policy checks both (crates/kernels-trust/tests/agreement.rs
    // compares sigstore-python's verdict on such bytes).
    let sigstore = TestSigstore::new();
    let identity = TestIdentity::kernels_community("build")
        .with_legacy_issuer(Some(b"https://accounts.google.com"));
    let files = sigstore.signed_mirror_files("legacy", VARIANT, &sample_files(), &identity);
    let p = TestContext::with_generated_mirror(
        |mirror| common::write_repo(mirror, "acme/legacy", &sha("legacy"), &files),
        &[],
    );
    sigstore.write_trusted_root(&p.project.join("trusted_root.json"));
    p.lock_b(&[("acme/legacy", &sha("legacy"))]);
    let out = download(&p, &["--all-variants"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("SignatureVerificationFailure")
            && said.contains("legacy issuer (1.3.6.1.4.1.57264.1.1) `https://accounts.google.com`"),
        "{said}"
    );
    assert_nothing_linked(&p, "legacy");
}
