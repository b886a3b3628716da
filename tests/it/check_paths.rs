//! Issue 39 item 2: one list of variant checks, applied alike on the three
//! paths a placed variant goes through: online (a first `kernels download`
//! into an empty cache), warm (a second `kernels download` over a cache that
//! holds the variant already: no listing needed) and offline
//! (`kernels download --offline`, `kernels verify`).
//!
//! Each planted input (an altered file, an extra file, a signer the policy
//! refuses, an unsigned variant under `--require-signed`, archs that miss
//! the target, a signer that differs from the recorded provenance) is
//! served by the mirror and, for the warm and offline paths, put in a cache
//! the way another tool would have (`huggingface_hub` writing blobs and
//! links, or this tool under a setting that accepts it). Every path must give
//! the same verdict: exit 1 and the same error code; offline, where a cache
//! problem is reported as `kernels::download::not_cached` listing the
//! problems, the problem kind `kernels verify --format json` names must be
//! the same check. And no path links anything of the refused variant: the
//! empty cache of the online path has no snapshot entry for it afterwards,
//! and the other caches are left exactly as they were.

use std::path::{Path, PathBuf};
use std::process::Output;

use kernels_test_support::sigstore::variant::{metadata_json, sample_files};
use kernels_test_support::sigstore::{TestIdentity, TestSigstore};
use kernels_test_support::world::{MirrorFile, arch_variant};
use kernels_test_support::{self as common, TOKEN, TestContext, assert_ok, stderr};
use serde_json::Value;

const VARIANT: &str = "torch-cpu";
const SHA: &str = "9999999999999999999999999999999999999999";

/// The check an error code or a `kernels verify` problem kind belongs to.
fn check_of(code: &str) -> &'static str {
    match code {
        "kernels::download::digest_mismatch" | "digest" => "digest",
        "kernels::download::signature" => "signature",
        "kernels::download::unfit" | "refused" => "fit",
        "kernels::download::variant_mismatch"
        | "kernels::download::listing_mismatch"
        | "variant_hash" => "lock-hash",
        "kernels::download::unlisted_file" | "unvouched" | "pin_mismatch" => "vouch",
        "kernels::provenance::changed" => "provenance",
        other => panic!("no check for `{other}`"),
    }
}

/// One planted input: the project, the served repository, the variant the
/// checks refuse and the arguments that refuse it.
struct Planted<'a> {
    p: &'a TestContext,
    repo: &'a str,
    sha: &'a str,
    variant: String,
    /// Arguments of `download` (and `verify`, without `trust`).
    select: Vec<String>,
    /// Arguments of `download` only (`--trust-root`, `--require-signed`).
    trust: Vec<String>,
}

impl Planted<'_> {
    /// `kernels <args>` in the project with `cache` as the Hub cache.
    fn run(&self, cache: &Path, args: &[&str]) -> Output {
        let mut cmd = self.p.kernels();
        cmd.args(args)
            .env("HF_HUB_CACHE", cache)
            .env("HF_HOME", cache.join("hf-home"))
            .env("HF_TOKEN", TOKEN);
        cmd.output().unwrap()
    }

    /// `kernels download <project> --format json` with the refusing arguments.
    fn download(&self, cache: &Path, extra: &[&str]) -> Output {
        let project = self.p.project.display().to_string();
        let mut args = vec!["download", project.as_str(), "--format", "json"];
        args.extend(self.select.iter().map(String::as_str));
        args.extend(self.trust.iter().map(String::as_str));
        args.extend_from_slice(extra);
        self.run(cache, &args)
    }

    /// The check `kernels verify --format json` names for the variant.
    fn verify_check(&self, cache: &Path) -> (Option<i32>, Vec<&'static str>) {
        let project = self.p.project.display().to_string();
        let mut args = vec!["verify", project.as_str(), "--format", "json"];
        args.extend(self.select.iter().map(String::as_str));
        let out = self.run(cache, &args);
        let doc = json(&out);
        let mut checks: Vec<&'static str> = doc["kernels"][0]["problems"]
            .as_array()
            .unwrap_or_else(|| panic!("no problems: {doc}"))
            .iter()
            .map(|p| check_of(p["problem"].as_str().unwrap()))
            .collect();
        checks.dedup();
        (out.status.code(), checks)
    }

    /// The snapshot of the planted commit in `cache`: each entry with what
    /// it is (a link and its target, or a file and its bytes).
    fn snapshot(&self, cache: &Path) -> Vec<(String, String)> {
        let dir = cache.join(format!("kernels--{}", self.repo.replace('/', "--")));
        let root = dir.join("snapshots").join(self.sha);
        if !root.exists() {
            return Vec::new();
        }
        let mut out: Vec<(String, String)> = walkdir::WalkDir::new(&root)
            .sort_by_file_name()
            .into_iter()
            .map(Result::unwrap)
            .filter(|e| !e.file_type().is_dir())
            .map(|e| {
                let rel = e.path().strip_prefix(&root).unwrap().display().to_string();
                let what = match fs_err::read_link(e.path()) {
                    Ok(target) => format!("-> {}", target.display()),
                    Err(_) => format!("{:?}", fs_err::read(e.path()).unwrap()),
                };
                (rel, what)
            })
            .collect();
        out.sort();
        out
    }

    /// Runs the three paths (`placed`: a cache that holds the planted
    /// variant) and requires one verdict of `code`.
    fn assert_one_verdict(&self, placed: &Path, code: &str) {
        // Online, into an empty cache.
        let fresh = self.p.tmp.path().join(format!("fresh-{}", self.variant));
        let online = verdict(&self.download(&fresh, &[]));
        assert_eq!(online, (Some(1), code.to_owned()), "online");
        let prefix = format!("build/{}/", self.variant);
        let linked: Vec<_> = self
            .snapshot(&fresh)
            .into_iter()
            .filter(|(path, _)| path.starts_with(&prefix))
            .collect();
        assert!(linked.is_empty(), "online linked {linked:?}");

        // Warm: the cache holds the variant.
        let before = self.snapshot(placed);
        assert!(
            before.iter().any(|(path, _)| path.starts_with(&prefix)),
            "the planted variant is not in the cache: {before:?}"
        );
        let warm = verdict(&self.download(placed, &[]));
        assert_eq!(warm, online, "warm");
        assert_eq!(self.snapshot(placed), before, "warm changed the snapshot");

        // Offline, the same cache.
        let (exit, offline) = verdict(&self.download(placed, &["--offline"]));
        assert_eq!(exit, Some(1), "offline: {offline}");
        let offline_checks = if offline == "kernels::download::not_cached" {
            let (exit, checks) = self.verify_check(placed);
            assert_eq!(exit, Some(1), "verify");
            checks
        } else {
            vec![check_of(&offline)]
        };
        assert_eq!(offline_checks, [check_of(code)], "offline: {offline}");
        assert_eq!(
            self.snapshot(placed),
            before,
            "offline changed the snapshot"
        );
    }
}

/// Exit code and the error code of a `--format json` document: the first
/// failed kernel's, else the run's.
fn verdict(out: &Output) -> (Option<i32>, String) {
    let doc = json(out);
    let code = doc["failed"][0]["code"]
        .as_str()
        .or_else(|| doc["error"]["code"].as_str())
        .unwrap_or("(none)");
    (out.status.code(), code.to_owned())
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

/// Places `files` of `repo`@`sha` in `cache` as `huggingface_hub` does:
/// blobs named by their etag, relative links in the snapshot.
fn place_like_the_hub(cache: &Path, repo: &str, sha: &str, files: &[MirrorFile]) {
    let dir = cache.join(format!("kernels--{}", repo.replace('/', "--")));
    fs_err::create_dir_all(dir.join("blobs")).unwrap();
    for file in files {
        fs_err::write(dir.join("blobs").join(file.etag()), &file.content).unwrap();
        let link = dir.join("snapshots").join(sha).join(&file.path);
        fs_err::create_dir_all(link.parent().unwrap()).unwrap();
        let up = "../".repeat(file.path.matches('/').count() + 2);
        std::os::unix::fs::symlink(format!("{up}blobs/{}", file.etag()), &link).unwrap();
    }
}

/// The unsigned `torch-cpu` variant with a metadata digest.
fn with_digest() -> Vec<MirrorFile> {
    let files = sample_files();
    let mut out: Vec<MirrorFile> = files
        .iter()
        .map(|(path, content)| MirrorFile {
            path: format!("build/{VARIANT}/{path}"),
            content: content.clone(),
        })
        .collect();
    out.push(MirrorFile {
        path: format!("build/{VARIANT}/metadata.json"),
        content: metadata_json("planted", &files, true),
    });
    out
}

/// A context serving `files` as `acme/planted`@[`SHA`], its variant-hash
/// lock written, the test Sigstore's root in `<project>/trusted_root.json`.
fn serving(sigstore: &TestSigstore, files: &[MirrorFile]) -> TestContext {
    let p = TestContext::with_generated_mirror(
        |mirror| common::write_repo(mirror, "acme/planted", SHA, files),
        &[],
    );
    sigstore.write_trusted_root(&p.project.join("trusted_root.json"));
    p.lock_a(&[("acme/planted", SHA, files)]);
    p
}

fn planted<'a>(p: &'a TestContext, trust: &[&str]) -> Planted<'a> {
    let root = p.project.join("trusted_root.json").display().to_string();
    let mut all = vec!["--trust-root".to_owned(), root];
    all.extend(trust.iter().map(|s| (*s).to_owned()));
    Planted {
        p,
        repo: "acme/planted",
        sha: SHA,
        variant: VARIANT.to_owned(),
        select: vec!["--all-variants".to_owned()],
        trust: all,
    }
}

/// A cache beside the project's holding `files` placed by another tool.
fn placed_cache(p: &TestContext, files: &[MirrorFile]) -> PathBuf {
    let cache = p.tmp.path().join("placed");
    place_like_the_hub(&cache, "acme/planted", SHA, files);
    cache
}

#[test]
fn an_altered_file_gets_one_verdict_on_every_path() {
    let mut files = with_digest();
    let so = files.iter_mut().find(|f| f.path.ends_with(".so")).unwrap();
    so.content[100] ^= 1;
    let p = serving(&TestSigstore::new(), &files);
    let placed = placed_cache(&p, &files);
    planted(&p, &[]).assert_one_verdict(&placed, "kernels::download::digest_mismatch");
}

#[test]
fn an_extra_file_gets_one_verdict_on_every_path() {
    let mut files = with_digest();
    files.push(MirrorFile {
        path: format!("build/{VARIANT}/planted.py"),
        content: b"raise SystemExit('planted')\n".to_vec(),
    });
    let p = serving(&TestSigstore::new(), &files);
    let placed = placed_cache(&p, &files);
    planted(&p, &[]).assert_one_verdict(&placed, "kernels::download::digest_mismatch");
}

#[test]
fn a_signer_the_policy_refuses_gets_one_verdict_on_every_path() {
    let sigstore = TestSigstore::new();
    let identity = TestIdentity::custom(
        "acme/other-ci",
        ".github/workflows/build.yaml@refs/heads/main",
    );
    let files = sigstore.signed_mirror_files("planted", VARIANT, &sample_files(), &identity);
    let p = serving(&sigstore, &files);
    let placed = placed_cache(&p, &files);
    planted(&p, &[]).assert_one_verdict(&placed, "kernels::download::signature");
}

#[test]
fn an_unsigned_variant_under_require_signed_gets_one_verdict_on_every_path() {
    let files = with_digest();
    let p = serving(&TestSigstore::new(), &files);
    // Accepted without `--require-signed`: this tool placed it.
    let placed = p.tmp.path().join("placed");
    let lax = planted(&p, &[]);
    assert_ok(&lax.download(&placed, &[]));
    planted(&p, &["--require-signed"]).assert_one_verdict(&placed, "kernels::download::signature");
}

#[test]
fn a_signer_that_differs_from_the_recorded_one_gets_one_verdict_on_every_path() {
    let sigstore = TestSigstore::new();
    let signed = |workflow: &str| {
        let identity = TestIdentity::kernels_community(workflow);
        sigstore.signed_mirror_files("planted", VARIANT, &sample_files(), &identity)
    };
    // First downloaded signed by `build.yaml`: kernels.lock.provenance
    // records that signer.
    let first = serving(&sigstore, &signed("build"));
    let recorded = first.tmp.path().join("first-cache");
    assert_ok(&planted(&first, &[]).download(&recorded, &[]));
    let side_file = fs_err::read(first.project.join("kernels.lock.provenance")).unwrap();
    // The same commit now served (and cached) signed by `build-mac.yaml`.
    let files = signed("build-mac");
    let p = serving(&sigstore, &files);
    fs_err::write(p.project.join("kernels.lock.provenance"), &side_file).unwrap();
    let placed = placed_cache(&p, &files);
    planted(&p, &[]).assert_one_verdict(&placed, "kernels::provenance::changed");
    // The record is unchanged.
    assert_eq!(
        fs_err::read(p.project.join("kernels.lock.provenance")).unwrap(),
        side_file
    );
}

#[test]
fn archs_that_miss_the_target_get_one_verdict_on_every_path() {
    let p = crate::fit::context();
    crate::fit::project(&p, &["acme/archs-only"], crate::fit::NINE);
    // `--all-variants` reports the misfit and places the variant.
    assert_ok(&p.download(&["--all-variants"]));
    let variant = arch_variant();
    let planted = Planted {
        p: &p,
        repo: "acme/archs-only",
        sha: crate::fit::SHA,
        variant: variant.clone(),
        select: vec!["--variant".to_owned(), variant],
        trust: Vec::new(),
    };
    planted.assert_one_verdict(&p.cache, "kernels::download::unfit");
}

#[test]
fn a_file_planted_before_the_first_download_refuses_the_variant_before_any_link() {
    // A file planted in the variant directory before the first download (the
    // listing does not have it): the variant is refused before this run
    // links any of its files.
    let p = TestContext::world();
    p.lock_b(&[("acme/relu", common::RELU_SHA)]);
    let dir = p.repo_dir("kernel", "acme/relu");
    let planted = dir
        .join("snapshots")
        .join(common::RELU_SHA)
        .join("build/torch-cpu/__init__.py");
    fs_err::create_dir_all(planted.parent().unwrap()).unwrap();
    fs_err::write(&planted, b"raise SystemExit(\"planted\")\n").unwrap();
    let out = p.download(&["--variant", "torch-cpu", "--format", "json"]);
    assert_eq!(
        verdict(&out),
        (Some(1), "kernels::download::unlisted_file".to_owned())
    );
    assert_eq!(
        common::snapshot_paths(&dir, common::RELU_SHA),
        ["build/torch-cpu/__init__.py"]
    );
    // Without the planted file the variant is placed.
    fs_err::remove_file(&planted).unwrap();
    assert_ok(&p.download(&["--variant", "torch-cpu"]));
    assert!(!common::snapshot_paths(&dir, common::RELU_SHA).is_empty());
}
