//! `kernels.lock.provenance` as a locked commit's builds evolve (issue 42):
//! each case downloads the project's locked commit from one server into one
//! cache, then the same commit as another server serves it into a fresh
//! cache (another machine with the committed side file). Another run of
//! the same workflow and a signature gained with the same files are
//! accepted; another workflow, other files and a lost signature are refused
//! before anything is linked, until `download --accept-provenance` records
//! them; `verify` then refuses a cache holding what the record no longer
//! names. The signatures are real bundles of the test Sigstore.

use std::process::Output;

use kernels_test_support::sigstore::variant::sample_files;
use kernels_test_support::sigstore::{TestIdentity, TestSigstore};
use kernels_test_support::{
    self as common, MirrorFile, TOKEN, TestContext, assert_ok, snapshot_paths, stderr,
};

const REPO: &str = "acme/evolve";
const SHA: &str = "abababababababababababababababababababab";
const VARIANT: &str = "torch-cpu";

/// The variant signed by kernels-community's `workflow`; with `changed`, one
/// file differs (another build of the same commit).
fn signed(sigstore: &TestSigstore, workflow: &str, changed: bool) -> Vec<MirrorFile> {
    let mut files = sample_files();
    if changed {
        files[0].1.extend_from_slice(b"\n# rebuilt\n");
    }
    let identity = TestIdentity::kernels_community(workflow);
    sigstore.signed_mirror_files("evolve", VARIANT, &files, &identity)
}

/// `files` without the signature bundle.
fn unsigned(files: Vec<MirrorFile>) -> Vec<MirrorFile> {
    files
        .into_iter()
        .filter(|f| !f.path.ends_with(".sigstore"))
        .collect()
}

/// A server of `files` as `acme/evolve` at [`SHA`], with its own cache and a
/// project locking it (`KernelLocks`, so every variant is recorded).
fn server(sigstore: &TestSigstore, files: &[MirrorFile]) -> TestContext {
    let p = TestContext::with_generated_mirror(
        |mirror| common::write_repo(mirror, REPO, SHA, files),
        &[],
    );
    sigstore.write_trusted_root(&p.project.join("trusted_root.json"));
    p.lock_b(&[(REPO, SHA)]);
    p
}

/// `kernels <command> <project of `project`> --all-variants --trust-root …
/// <args>` against the server and cache of `server`.
fn run(project: &TestContext, server: &TestContext, command: &str, args: &[&str]) -> Output {
    let root = project.project.join("trusted_root.json");
    let mut cmd = common::kernels(server.endpoint(), &server.cache);
    cmd.arg(command)
        .arg(&project.project)
        .arg("--all-variants")
        .arg("--trust-root")
        .arg(&root)
        .args(args)
        .env("HF_TOKEN", TOKEN);
    cmd.output().unwrap()
}

fn side_file(p: &TestContext) -> String {
    fs_err::read_to_string(p.project.join("kernels.lock.provenance")).unwrap()
}

fn entry(p: &TestContext) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&side_file(p)).unwrap();
    doc["kernels"][REPO][SHA][VARIANT].clone()
}

/// The files linked in `server`'s cache for the locked commit (none when
/// the snapshot folder does not exist).
fn linked(server: &TestContext) -> Vec<String> {
    let dir = server.repo_dir("kernel", REPO);
    if !dir.join("snapshots").join(SHA).exists() {
        return Vec::new();
    }
    snapshot_paths(&dir, SHA)
}

/// Exit 1 with `kernels::provenance::changed` naming `recorded` and `found`
/// and the command that accepts, and nothing linked in `server`'s cache.
fn assert_refused(out: &Output, server: &TestContext, recorded: &str, found: &str) {
    let text = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("kernels::provenance::changed"), "{text}");
    assert!(
        text.contains(recorded) && text.contains(found),
        "{recorded} / {found}: {text}"
    );
    assert!(
        text.contains("kernels download --accept-provenance acme/evolve"),
        "{text}"
    );
    assert!(linked(server).is_empty(), "linked {:?}", linked(server));
}

#[test]
fn a_new_run_of_the_same_workflow_is_the_same_identity() {
    let sigstore = TestSigstore::new();
    let first = server(&sigstore, &signed(&sigstore, "build", false));
    assert_ok(&run(&first, &first, "download", &[]));
    let before = side_file(&first);
    assert!(before.starts_with("{\n  \"version\": 2,"), "{before}");
    let again = server(&sigstore, &signed(&sigstore, "build", false));
    assert_ok(&run(&first, &again, "download", &[]));
    assert_eq!(side_file(&first), before);
    assert!(!linked(&again).is_empty());
    assert_ok(&run(&first, &again, "verify", &["--signatures"]));
}

#[test]
fn another_workflow_is_refused_unlinked_until_accepted() {
    let sigstore = TestSigstore::new();
    let first = server(&sigstore, &signed(&sigstore, "build", false));
    assert_ok(&run(&first, &first, "download", &[]));
    // build-mac is accepted by the default policy, and still another identity.
    let mac = server(&sigstore, &signed(&sigstore, "build-mac", false));
    let out = run(&first, &mac, "download", &[]);
    assert_refused(&out, &mac, "build.yaml@refs/heads/main", "build-mac.yaml@");
    // The old variant still verifies, with and without signatures.
    assert_ok(&run(&first, &first, "verify", &[]));
    assert_ok(&run(&first, &first, "verify", &["--signatures"]));
    // Only a locked kernel can be accepted.
    let out = run(
        &first,
        &mac,
        "download",
        &["--accept-provenance", "acme/other"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("kernels::download::accept_not_locked"),
        "{}",
        stderr(&out)
    );
    // Accepted after review: linked and recorded.
    let out = run(&first, &mac, "download", &["--accept-provenance", REPO]);
    assert_ok(&out);
    let workflow = entry(&first)["signer"]["workflow"].clone();
    assert!(
        workflow
            .as_str()
            .unwrap()
            .ends_with("build-mac.yaml@refs/heads/main"),
        "{workflow}"
    );
    assert_ok(&run(&first, &mac, "verify", &["--signatures"]));
    // The first cache now holds what the record no longer names (as one an
    // older version of this tool linked would): both forms of verify fail.
    for args in [&[][..], &["--signatures"]] {
        let out = run(&first, &first, "verify", args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("kernels::provenance::changed"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn other_files_for_the_same_commit_are_refused_unlinked() {
    let sigstore = TestSigstore::new();
    let first = server(&sigstore, &signed(&sigstore, "build", false));
    assert_ok(&run(&first, &first, "download", &[]));
    let recorded = entry(&first)["files"].as_str().unwrap().to_owned();
    let rebuilt = server(&sigstore, &signed(&sigstore, "build", true));
    let out = run(&first, &rebuilt, "download", &[]);
    assert_refused(
        &out,
        &rebuilt,
        &format!("files {recorded}"),
        "files sha256-",
    );
    assert_ok(&run(
        &first,
        &rebuilt,
        "download",
        &["--accept-provenance", REPO],
    ));
    assert_ne!(entry(&first)["files"], recorded.as_str());
}

#[test]
fn a_variant_no_longer_signed_is_refused_unlinked() {
    let sigstore = TestSigstore::new();
    let files = signed(&sigstore, "build", false);
    let first = server(&sigstore, &files);
    assert_ok(&run(&first, &first, "download", &[]));
    let stripped = server(&sigstore, &unsigned(files));
    let out = run(&first, &stripped, "download", &[]);
    assert_refused(
        &out,
        &stripped,
        "build.yaml@refs/heads/main",
        "no signature",
    );
    assert_ok(&run(
        &first,
        &stripped,
        "download",
        &["--accept-provenance", REPO],
    ));
    assert!(entry(&first)["signer"].is_null(), "{}", side_file(&first));
}

#[test]
fn an_unsigned_variant_signed_later_with_the_same_files_gains_its_signer() {
    let sigstore = TestSigstore::new();
    let files = signed(&sigstore, "build", false);
    let first = server(&sigstore, &unsigned(files.clone()));
    assert_ok(&run(&first, &first, "download", &[]));
    let recorded = entry(&first);
    assert!(recorded["signer"].is_null(), "{recorded}");
    let later = server(&sigstore, &files);
    assert_ok(&run(&first, &later, "download", &[]));
    let now = entry(&first);
    assert_eq!(now["files"], recorded["files"]);
    assert!(
        now["signer"]["workflow"]
            .as_str()
            .unwrap()
            .ends_with("build.yaml@refs/heads/main"),
        "{now}"
    );
}

#[test]
fn a_version_1_side_file_is_migrated_without_a_change() {
    let sigstore = TestSigstore::new();
    let files = signed(&sigstore, "build", false);
    let first = server(&sigstore, &files);
    assert_ok(&run(&first, &first, "download", &[]));
    let current = side_file(&first);
    // Version 1 hashed the bundle with the files.
    let variant_files = &common::variants(&files)[VARIANT];
    let with_bundle = common::variant_hash(VARIANT, variant_files);
    let files_hash = entry(&first)["files"].as_str().unwrap().to_owned();
    assert_ne!(with_bundle, files_hash);
    let old = current
        .replace("\"version\": 2", "\"version\": 1")
        .replace(&files_hash, &with_bundle);
    fs_err::write(first.project.join("kernels.lock.provenance"), &old).unwrap();
    // verify reads it as it is.
    assert_ok(&run(&first, &first, "verify", &["--signatures"]));
    // A re-signed build of the same workflow: not a change; recorded anew.
    let again = server(&sigstore, &signed(&sigstore, "build", false));
    assert_ok(&run(&first, &again, "download", &[]));
    assert_eq!(side_file(&first), current);
}
