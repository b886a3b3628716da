//! Verification receipts: a warm no-op `kernels download` makes no request
//! with either lock format and hashes only files that changed since their
//! full check; `kernels verify` never trusts a receipt; huggingface_hub's
//! cache scan and deletion live with the receipts folder.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kernels_test_support::world::*;
use kernels_test_support::{self as common, TestContext};

/// The `-v` line of the warm check: (blobs hashed, files trusted).
fn hashed_and_trusted(out: &std::process::Output) -> Option<(usize, usize)> {
    let err = stderr(out);
    // Finding the `-v` line to parse its numbers, not asserting output.
    let line = err.lines().find(|l| l.contains("by their receipt"))?;
    let number = |after: &str| -> usize {
        let rest = &line[line.find(after).unwrap() + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    Some((number("hashing "), number("trusting ")))
}

/// The blob of the CUDA variant's shared object of `acme/relu`.
fn cuda_so(world: &TestContext) -> (PathBuf, MirrorFile) {
    let files = variants(&relu_files()).remove("torch-cuda").unwrap();
    let so = files.into_iter().find(|f| f.lfs()).unwrap();
    let blob = world
        .repo_dir("kernel", "acme/relu")
        .join("blobs")
        .join(so.etag());
    (blob, so)
}

/// Sets the modification time of `path` a minute ahead (content unchanged).
fn touch(path: &Path) {
    let file = fs_err::File::options().append(true).open(path).unwrap();
    let later = SystemTime::now() + Duration::from_secs(60);
    file.file().set_modified(later).unwrap();
}

/// Flips one byte of `path` in place (same size, same inode).
fn corrupt(path: &Path) {
    let mut bytes = fs_err::read(path).unwrap();
    bytes[100] ^= 0xff;
    fs_err::write(path, &bytes).unwrap();
}

/// Requests other than the tree listing and refs of `acme/relu`.
fn fetches(log: &[serde_json::Value]) -> usize {
    log.iter()
        .filter(|r| {
            let path = r["path"].as_str().unwrap_or_default();
            // A substring check on a logged request's path, not on output.
            !path.contains("/tree/") && !path.ends_with("/refs")
        })
        .count()
}

#[test]
fn warm_no_op_makes_no_request_and_hashes_nothing_with_either_lock_format() {
    for format in ["variant-hash", "KernelLocks"] {
        let world = TestContext::world();
        match format {
            "variant-hash" => world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]),
            _ => world.lock_b(&[("acme/relu", RELU_SHA)]),
        }
        assert_ok(&world.download(&["--variant", "torch-cuda"]));
        let receipts = world
            .repo_dir("kernel", "acme/relu")
            .join(".kernels-receipts")
            .join(RELU_SHA);
        assert!(receipts.join("torch-cuda.json").is_file(), "{format}");
        assert!(receipts.join("listing.json").is_file(), "{format}");

        world.reset();
        let out = world.download(&["-v", "--variant", "torch-cuda"]);
        assert_ok(&out);
        assert_eq!(
            world.requests().len(),
            0,
            "{format}: {:#?}",
            world.requests()
        );
        // __init__.py, _ops.abi3.so and metadata.json: none read again.
        assert_eq!(
            hashed_and_trusted(&out),
            Some((0, 3)),
            "{format}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_touched_file_is_hashed_again_and_a_changed_one_repaired() {
    let world = TestContext::world();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let (blob, so) = cuda_so(&world);

    // Touched, content unchanged: that one blob is hashed, nothing requested,
    // and its receipt is renewed.
    touch(&blob);
    world.reset();
    let out = world.download(&["-v", "--variant", "torch-cuda"]);
    assert_ok(&out);
    assert_eq!(hashed_and_trusted(&out), Some((1, 2)), "{}", stderr(&out));
    assert!(world.requests().is_empty(), "{:#?}", world.requests());
    let out = world.download(&["-v", "--variant", "torch-cuda"]);
    assert_eq!(hashed_and_trusted(&out), Some((0, 3)), "{}", stderr(&out));

    // Changed in place: hashed, found wrong, fetched again as without receipts.
    corrupt(&blob);
    world.reset();
    let out = world.download(&["-v", "--variant", "torch-cuda"]);
    assert_ok(&out);
    assert_eq!(hashed_and_trusted(&out), Some((1, 2)), "{}", stderr(&out));
    assert_eq!(cdn_requests(&world.requests()).len(), 1);
    assert_eq!(fs_err::read(&blob).unwrap(), so.content);
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert!(world.requests().is_empty(), "{:#?}", world.requests());
}

#[test]
fn kernel_locks_kernels_list_the_commit_again_when_a_file_changed() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA)]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let (blob, so) = cuda_so(&world);

    // Nothing but a receipt says what the variant holds: a touched file
    // sends the kernel online (listed, re-hashed, nothing fetched).
    touch(&blob);
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let log = world.requests();
    assert!(!log.is_empty() && fetches(&log) == 0, "{log:#?}");
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert!(world.requests().is_empty(), "{:#?}", world.requests());

    // A replaced blob (new inode) with other content is fetched again.
    let mut bytes = so.content.clone();
    bytes[7] ^= 1;
    fs_err::remove_file(&blob).unwrap();
    fs_err::write(&blob, &bytes).unwrap();
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert_eq!(cdn_requests(&world.requests()).len(), 1);
    assert_eq!(fs_err::read(&blob).unwrap(), so.content);

    // A file removed from the variant: not complete, listed and linked again.
    let init = world
        .repo_dir("kernel", "acme/relu")
        .join("snapshots")
        .join(RELU_SHA)
        .join("build/torch-cuda/relu/__init__.py");
    fs_err::remove_file(&init).unwrap();
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert!(!world.requests().is_empty());
    assert!(init.is_file());
}

#[test]
fn verify_rehashes_what_a_receipt_vouches_for() {
    let world = TestContext::world();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let (blob, _) = cuda_so(&world);
    corrupt(&blob);
    // A receipt forged to vouch for the corrupted blob's new stamp: the
    // download trusts it (that is what a receipt is for) …
    let receipt = world
        .repo_dir("kernel", "acme/relu")
        .join(".kernels-receipts")
        .join(RELU_SHA)
        .join("torch-cuda.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&fs_err::read(&receipt).unwrap()).unwrap();
    let entry = &mut json["files"]["build/torch-cuda/relu/_ops.abi3.so"]["stamp"];
    let meta = fs_err::metadata(&blob).unwrap();
    {
        use std::os::unix::fs::MetadataExt;
        entry["mtime_ns"] = (meta.mtime() * 1_000_000_000 + meta.mtime_nsec()).into();
        entry["ctime_ns"] = (meta.ctime() * 1_000_000_000 + meta.ctime_nsec()).into();
    }
    fs_err::write(&receipt, serde_json::to_vec(&json).unwrap()).unwrap();
    let out = world.download(&["-v", "--variant", "torch-cuda"]);
    assert_eq!(hashed_and_trusted(&out), Some((0, 3)), "{}", stderr(&out));
    // … `kernels verify` does not.
    // "… so its content is corrupt".
    kernels_test_support::snapshot!(
        "receipt_forged_verify",
        world.verify(&["--variant", "torch-cuda"])
    );
}

#[test]
fn huggingface_hub_scans_and_deletes_a_cache_with_receipts() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA)]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let script = r#"
import sys
from huggingface_hub import scan_cache_dir
# The runtime's own receipts folder (written by kernels 0.18+ at its first
# load, and by our download for a 0.18/0.19 target) is the one warning.
def warnings(info):
    return [w for w in info.warnings if ".verified-kernels" not in str(w)]
info = scan_cache_dir(sys.argv[1])
assert not warnings(info), info.warnings
(repo,) = info.repos
(rev,) = repo.revisions
print(repo.repo_id, repo.repo_type, rev.commit_hash, rev.nb_files)
info.delete_revisions(rev.commit_hash).execute()
info = scan_cache_dir(sys.argv[1])
assert not warnings(info), info.warnings
print(sum(len(r.revisions) for r in info.repos))
"#;
    let out = common::python("hub-2.4.0", &world.server.endpoint, &world.cache)
        .arg("-c")
        .arg(script)
        .arg(&world.cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout, format!("acme/relu kernel {RELU_SHA} 3\n0\n"));
    assert!(!world.repo_dir("kernel", "acme/relu").exists());
    // huggingface_hub removes the folder of a repository left without a
    // revision, receipts included; the kernel is fetched again in full.
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert_eq!(cdn_requests(&world.requests()).len(), 1);
    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert!(world.requests().is_empty(), "{:#?}", world.requests());
}
