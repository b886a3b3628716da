//! `kernels lock` and the readers facing files named `kernels.lock` that are
//! not what they should be: a checksum list (never replaced without
//! `--force`), a lock with a UTF-8 byte order mark (named, and replaced).

use std::process::Output;

use kernels_test_support::{self as common, TestContext};

const PROJECT: &str = "kernels-tests-layer_locking-97dab31e";
/// A real public project's `kernels.lock` was a `sha1sum` list.
const CHECKSUMS: &str = "3f786850e387550fdab836ed7e6dc881de23001b  build/torch-universal/relu/__init__.py\n\
                         89e6c98d92887913cadf06b2adb97f26cde4849b  build/torch-universal/relu/layers.py\n";

/// Runs `kernels <args> .` in the project, so messages name `./kernels.lock`.
fn run_here(context: &TestContext, args: &[&str]) -> Output {
    context.kernels().args(args).arg(".").output().unwrap()
}

fn rendered(output: &Output) -> String {
    format!(
        "exit code: {}\n--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn lock_refuses_to_replace_a_checksum_list_without_force() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    let lock = context.project.join("kernels.lock");
    fs_err::write(&lock, CHECKSUMS).unwrap();

    let output = run_here(&context, &["lock"]);
    insta::assert_snapshot!(rendered(&output), @r"
    exit code: 1
    --- stderr
    kernels::lock::not_ours

      × refusing to replace ./kernels.lock: it is not a kernels lock file (it looks like a checksum list (`<hex digest>  <file name>` lines), not JSON)
      help: move it away, or run `kernels lock --force` to replace it with a lock file
    ");
    assert_eq!(fs_err::read_to_string(&lock).unwrap(), CHECKSUMS);
    // `-U` does not get around it either.
    let output = run_here(&context, &["lock", "--upgrade"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(fs_err::read_to_string(&lock).unwrap(), CHECKSUMS);

    let output = run_here(&context, &["lock", "--force"]);
    assert!(output.status.success(), "{}", rendered(&output));
    assert!(
        kernels::lock::format::Lockfile::read(&lock).is_ok(),
        "--force did not write a lock"
    );
}

#[test]
fn a_byte_order_mark_is_named_and_lock_writes_the_file_again() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    let lock = context.project.join("kernels.lock");
    let real = fs_err::read_to_string(
        common::repo_root()
            .join("fixtures/projects")
            .join(PROJECT)
            .join("kernels.lock.real"),
    )
    .unwrap();
    fs_err::write(&lock, format!("\u{feff}{real}")).unwrap();

    // Neither runtime reads it (0.1.7–0.16 `json.load`: "Unexpected UTF-8
    // BOM"; 0.17: "expected value at line 1 column 1"), so neither do we.
    let output = run_here(&context, &["verify"]);
    insta::assert_snapshot!(rendered(&output), @r"
    exit code: 1
    --- stderr
    kernels::lockfile::bom

      × ./kernels.lock starts with a UTF-8 byte order mark (BOM), which no kernels runtime reads
      help: save the file as UTF-8 without BOM, or run `kernels lock` to write it again
    ");

    // `kernels lock` replaces it: it is a lock, only its encoding is wrong.
    let output = run_here(&context, &["lock"]);
    assert!(output.status.success(), "{}", rendered(&output));
    let text = fs_err::read_to_string(&lock).unwrap();
    assert!(text.starts_with('['), "{text:?}");
}
