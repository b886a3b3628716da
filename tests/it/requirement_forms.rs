//! A `[tool.kernels.dependencies]` value the target runtime does not read is
//! reported by `kernels lock` (and the offline `kernels lock --check`), naming
//! the runtime and the form it reads: an error when the runtime reads integers
//! only (0.14+) and the value is a string, a warning otherwise. The reference's
//! own `kernels lock` was run on the same forms: 0.13.0 warns about a PEP 440
//! string and fails on `^0.1` and on tables; 0.16.2 and 0.17.2 fail on every
//! string and table.

use std::process::Output;

use kernels_test_support::{Server, TestContext, snapshot};

/// A context over `server` whose project depends on `deps`.
fn context(server: Server, deps: &str) -> TestContext {
    TestContext::with_server(server).with_pyproject(&format!("[tool.kernels.dependencies]\n{deps}"))
}

/// Runs `kernels <args> .` in the project, so messages name `./pyproject.toml`.
fn run_here(context: &TestContext, args: &[&str]) -> Output {
    context.kernels().args(args).arg(".").output().unwrap()
}

#[test]
fn lock_rejects_a_specifier_for_an_integers_only_runtime() {
    let context = context(
        Server::bundled(),
        "\"kernels-test/versions\" = \">=1.0,<2\"\n",
    );
    for runtime in ["0.16.2", "0.17.2"] {
        let output = run_here(&context, &["lock", "--target-runtime", runtime]);
        snapshot!(format!("lock_specifier_{runtime}"), output);
        assert!(!context.project.join("kernels.lock").exists());
        // The offline check fails the same way.
        let output = run_here(
            &context,
            &["lock", "--check", "--offline", "--target-runtime", runtime],
        );
        snapshot!(format!("lock_check_offline_specifier_{runtime}"), output);
    }
    context.write(
        "pyproject.toml",
        "[tool.kernels.dependencies]\n\"kernels-test/versions\" = \"^2.1\"\n",
    );
    let output = run_here(&context, &["lock", "--target-runtime", "0.14.0"]);
    snapshot!("lock_cargo_style_0.14.0", output);
}

#[test]
fn lock_warns_about_forms_the_runtime_deprecates_or_cannot_read() {
    let context = TestContext::new();
    let cases = [
        ("0.13.0", "\"kernels-test/versions\" = \">=0.1\"\n"),
        ("0.13.0", "\"kernels-test/versions\" = \"^0.1\"\n"),
        ("0.10.5", "\"kernels-test/versions\" = \"~0.1.0\"\n"),
        ("0.10.5", "\"kernels-test/versions\" = 1\n"),
        ("0.16.2", "\"kernels-test/versions\" = { version = 1 }\n"),
        (
            "0.16.2",
            "\"kernels-test/versions\" = { revision = \"v0.1.1\" }\n",
        ),
    ];
    let mut text = String::new();
    for (runtime, deps) in cases {
        context.write(
            "pyproject.toml",
            &format!("[tool.kernels.dependencies]\n{deps}"),
        );
        // Each case locks from scratch.
        let _ = fs_err::remove_file(context.project.join("kernels.lock"));
        let output = run_here(&context, &["lock", "--target-runtime", runtime]);
        assert!(output.status.success(), "{output:?}");
        assert!(context.project.join("kernels.lock").exists());
        let warnings: Vec<_> = String::from_utf8_lossy(&output.stderr)
            .lines()
            .filter(|l| {
                // Selecting the lines compared below, not asserting output.
                l.starts_with("warning: `kernels-test/versions`") && !l.contains("is available")
            })
            .map(str::to_owned)
            .collect();
        text.push_str(&format!("--- {runtime}: {deps}{}\n", warnings.join("\n")));
    }
    // The offline check repeats no warning (`kernels lock` says it when it
    // writes the lock): its first line is the finding.
    context.write(
        "pyproject.toml",
        "[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=0.1\"\n",
    );
    fs_err::remove_file(context.project.join("kernels.lock")).unwrap();
    let output = run_here(
        &context,
        &["lock", "--check", "--offline", "--target-runtime", "0.13.0"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    text.push_str(&format!(
        "--- lock --check --offline, 0.13.0:\n{}\n",
        stderr.lines().next().unwrap_or("")
    ));
    snapshot!("lock_requirement_warnings", text);
}
