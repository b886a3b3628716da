//! Metadata rules of each runtime era checked live against the pinned
//! references (issue 42 item 4): the same `metadata.json` bytes go through
//! 0.16.2's, 0.17.2's and 0.19.1's metadata parser and arch check (the stub
//! torch with a ROCm `gfx90a:sramecc+:xnack-` device) and through ours
//! (`kernels_types`): `null` where a list is required is malformed, and a
//! ROCm build's archs are compared as the runtime compares them (feature
//! flags stripped from the device's arch only).

use kernels_types::fit::{FitContext, Target, check};
use kernels_types::metadata::Metadata;

/// The device of the stub torch, with its feature flags.
const DEVICE: &str = "gfx90a:sramecc+:xnack-";

/// Cases: (name, metadata.json, our verdict and every era's).
fn cases() -> Vec<(&'static str, String)> {
    let rocm = |archs: &str, extra: &str| {
        format!(
            r#"{{"name": "relu", "id": "relu", "version": 1, "license": "apache-2.0", "python-depends": []{extra}, "backend": {{"type": "rocm", "archs": [{archs}]}}}}"#
        )
    };
    vec![
        ("rocm-plain", rocm(r#""gfx90a""#, "")),
        ("rocm-build-flags", rocm(r#""gfx90a:xnack+""#, "")),
        (
            "rocm-build-flags-other",
            rocm(r#""gfx90a:xnack-", "gfx942""#, ""),
        ),
        (
            "python-depends-null",
            rocm(r#""gfx90a""#, "").replace(r#""python-depends": []"#, r#""python-depends": null"#),
        ),
        (
            "name-null",
            rocm(r#""gfx90a""#, "").replace(r#""name": "relu""#, r#""name": null"#),
        ),
        (
            "id-null",
            rocm(r#""gfx90a""#, "").replace(r#""id": "relu""#, r#""id": null"#),
        ),
        (
            "version-null",
            rocm(r#""gfx90a""#, "").replace(r#""version": 1"#, r#""version": null"#),
        ),
        (
            "license-null",
            rocm(r#""gfx90a""#, "").replace(r#""license": "apache-2.0""#, r#""license": null"#),
        ),
        (
            "backend-null",
            r#"{"name": "relu", "id": "relu", "version": 1, "license": "apache-2.0", "python-depends": [], "backend": null}"#
                .to_owned(),
        ),
    ]
}

/// Our verdict: `invalid`, `refused` or `fits`.
fn ours(text: &str) -> &'static str {
    let Ok(metadata) = Metadata::from_slice(text.as_bytes()) else {
        return "invalid";
    };
    let targets = [Target::rocm(DEVICE).unwrap()];
    let context = FitContext {
        targets: &targets,
        ..FitContext::default()
    };
    if check(&metadata, &context).fits() {
        "fits"
    } else {
        "refused"
    }
}

/// The reference's verdict on each text, in order.
fn theirs(env: &str, texts: &[String]) -> Vec<String> {
    let (data, archs) = match env {
        "kernels-0.16.2" => ("kernels_data", "kernels.archs"),
        "kernels-0.17.2" => ("kernels._rust", "kernels.archs"),
        _ => ("kernels._rust", "kernels._internals.archs"),
    };
    let script = format!(
        "import sys\n\
         from {data} import Metadata\n\
         from {archs} import _check_arch_incompatibility\n\
         for text in sys.argv[1:]:\n    \
             try:\n        m = Metadata.from_bytes(text.encode())\n    \
             except Exception:\n        print('invalid'); continue\n    \
             try:\n        _check_arch_incompatibility(m, 'torch-rocm'); print('fits')\n    \
             except RuntimeError:\n        print('refused')\n"
    );
    let scratch = tempfile::tempdir().unwrap();
    let out = kernels_test_support::python(env, "http://127.0.0.1:9", scratch.path())
        .env("HF_HUB_OFFLINE", "1")
        .env(
            "PYTHONPATH",
            kernels_test_support::repo_root().join("tests/python/stub_torch"),
        )
        .env("STUB_TORCH_HIP", "6.3.42131")
        .env("STUB_TORCH_ROCM", "6.3")
        .env("STUB_TORCH_GCN_ARCH", DEVICE)
        .arg("-c")
        .arg(script)
        .args(texts)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{env}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn metadata_rules_agree_with_every_era_live() {
    let cases = cases();
    let texts: Vec<String> = cases.iter().map(|(_, text)| text.clone()).collect();
    let mine: Vec<&str> = texts.iter().map(|t| ours(t)).collect();
    assert_eq!(
        mine,
        [
            "fits", "refused", "refused", "invalid", "invalid", "invalid", "invalid", "invalid",
            "invalid"
        ]
    );
    for env in ["kernels-0.16.2", "kernels-0.17.2", "kernels-0.19.1"] {
        let reference = theirs(env, &texts);
        for ((name, _), (ours, theirs)) in cases.iter().zip(mine.iter().zip(&reference)) {
            assert_eq!(ours, theirs, "{env}: {name}");
        }
        assert_eq!(reference.len(), cases.len(), "{env}: {reference:?}");
    }
}

/// What `env` does when loading a variant whose `kernels-minver` is
/// `minver`: `warns` (0.16.2's `minver.py`), `refused` (the
/// `MinverValidator` of 0.17.2 and later) or `loads`.
fn reference_minver(env: &str, minver: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let variant = dir.path().join("torch-rocm");
    fs_err::create_dir_all(&variant).unwrap();
    let text = format!(
        r#"{{"name": "relu", "id": "relu", "version": 1, "license": "apache-2.0", "python-depends": [], "backend": {{"type": "cpu"}}, "kernels-minver": "{minver}"}}"#
    );
    fs_err::write(variant.join("metadata.json"), &text).unwrap();
    let script = match env {
        "kernels-0.16.2" => {
            "import sys, pathlib, warnings\n\
             from kernels_data import Metadata\n\
             from kernels.minver import _warn_if_below_minver\n\
             p = pathlib.Path(sys.argv[1])\n\
             m = Metadata.from_bytes((p / 'metadata.json').read_bytes())\n\
             with warnings.catch_warnings(record=True) as w:\n    \
                 warnings.simplefilter('always'); _warn_if_below_minver(m, p)\n\
             print('warns' if w else 'loads')\n"
        }
        _ => {
            "import sys, pathlib\n\
             from kernels._rust import Metadata\n\
             try:\n    from kernels._internals.validate import MinverValidator\n\
             except ImportError:\n    from kernels.validate import MinverValidator\n\
             p = pathlib.Path(sys.argv[1])\n\
             m = Metadata.from_bytes((p / 'metadata.json').read_bytes())\n\
             try:\n    MinverValidator().validate_metadata(metadata=m, variant=p.name); print('loads')\n\
             except RuntimeError:\n    print('refused')\n"
        }
    };
    let out = kernels_test_support::python(env, "http://127.0.0.1:9", dir.path())
        .env("HF_HUB_OFFLINE", "1")
        .arg("-c")
        .arg(script)
        .arg(&variant)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{env}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn minver_warns_before_0_17_and_refuses_from_it_live() {
    let metadata =
        Metadata::from_slice(br#"{"python-depends": [], "kernels-minver": "0.18.0"}"#).unwrap();
    for (env, runtime) in [
        ("kernels-0.16.2", "0.16.2"),
        ("kernels-0.17.2", "0.17.2"),
        ("kernels-0.19.1", "0.19.1"),
    ] {
        let fit = check(
            &metadata,
            &FitContext {
                runtime: Some(runtime.parse().unwrap()),
                ..FitContext::default()
            },
        );
        let ours = match (fit.fits(), fit.warnings.is_empty()) {
            (false, _) => "refused",
            (true, false) => "warns",
            (true, true) => "loads",
        };
        assert_eq!(ours, reference_minver(env, "0.18.0"), "{env}");
    }
}

/// `kernels-minver` values and what 0.16.2 makes of each: read as dotted
/// numbers of any count, or ignored when it cannot read them.
const MINVERS: &[&str] = &[
    "0.18.0",
    "0.17",
    "0.16.2.1",
    "0.16",
    "v0.17",
    "0.17.0rc1",
    " 0.18 ",
];

/// Our verdict through the binary: a project targeting 0.16.2 locks and
/// downloads a kernel whose only variant declares each `kernels-minver`, then
/// verifies it and describes it with `kernels info --target-runtime 0.16.2`
/// (online and `--offline`; any of them failing or finding the metadata
/// invalid is the verdict): `warns` (downloaded, the minver warning printed), `loads`
/// (downloaded, no warning) or `refused`.
fn ours_through_the_binary() -> Vec<String> {
    let repos: Vec<String> = (0..MINVERS.len())
        .map(|i| format!("acme/minver-{i}"))
        .collect();
    let p = kernels_test_support::TestContext::with_generated_mirror(
        |mirror| {
            for (repo, minver) in repos.iter().zip(MINVERS) {
                let metadata = format!(
                    r#"{{"name": "fit", "id": "_fit_3333333", "version": 1, "license": "apache-2.0", "python-depends": [], "backend": {{"type": "cpu"}}, "kernels-minver": "{minver}"}}"#
                );
                crate::fit::write_kernel(mirror, repo, &[("torch-cpu".to_owned(), metadata)]);
            }
        },
        &["--test-control"],
    )
    .with_stub_torch();
    repos
        .iter()
        .map(|repo| {
            p.write(
                "pyproject.toml",
                &format!(
                    "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.16.2\"\ntrust = [\"{repo}\"]\n\n[tool.kernels.dependencies]\n\"{repo}\" = 1\n"
                ),
            );
            p.run_ok(&["lock"]);
            let out = p.download(&[]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let verify = p.run(&["verify"]);
            if out.status.success() && !verify.status.success() {
                return format!("verify failed: {}", String::from_utf8_lossy(&verify.stderr));
            }
            // `kernels info` reads the metadata as 0.16.2 does, from the Hub
            // and from the cache alone.
            for offline in [false, true] {
                let mut args = vec!["info", repo.as_str(), "--target-runtime", "0.16.2"];
                if offline {
                    args.push("--offline");
                }
                let info = p.run(&args);
                let info_err = String::from_utf8_lossy(&info.stderr);
                if !info.status.success() || info_err.contains("invalid") {
                    return format!("info {args:?}: {info_err}");
                }
            }
            match (out.status.success(), stderr.contains("loads it with a warning")) {
                (false, _) => format!("refused: {stderr}"),
                (true, true) => "warns".to_owned(),
                (true, false) => "loads".to_owned(),
            }
        })
        .collect()
}

/// `kernels info --target-runtime 0.16.2 DIR` on a local build whose one
/// variant declares each `kernels-minver`: `invalid` when it warns that the
/// metadata is invalid, else `read`; without `--target-runtime` (the current
/// runtime) a value that is no `X.Y.Z` stays invalid.
fn info_through_the_binary(runtime: Option<&str>) -> Vec<String> {
    let p = kernels_test_support::TestContext::new();
    MINVERS
        .iter()
        .enumerate()
        .map(|(i, minver)| {
            let dir = format!("k{i}");
            p.write(
                &format!("{dir}/build/torch-cpu/metadata.json"),
                &format!(
                    r#"{{"name": "fit", "id": "_fit_3333333", "version": 1, "license": "apache-2.0", "python-depends": [], "backend": {{"type": "cpu"}}, "kernels-minver": "{minver}"}}"#
                ),
            );
            let mut args = vec!["info", dir.as_str()];
            if let Some(runtime) = runtime {
                args.extend(["--target-runtime", runtime]);
            }
            let out = p.run(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("invalid") { "invalid" } else { "read" }.to_owned()
        })
        .collect()
}

#[test]
fn info_reads_minver_as_the_target_runtime_does() {
    // 0.16.2 reads every one of them (it ignores what it cannot parse).
    assert_eq!(info_through_the_binary(Some("0.16.2")), ["read"; 7]);
    assert_eq!(
        info_through_the_binary(None),
        [
            "read", "invalid", "invalid", "invalid", "invalid", "invalid", "invalid"
        ]
    );
}

#[test]
fn minver_before_0_17_is_read_as_0_16_2_reads_it_through_the_binary_live() {
    let ours = ours_through_the_binary();
    let theirs: Vec<String> = MINVERS
        .iter()
        .map(|minver| reference_minver("kernels-0.16.2", minver))
        .collect();
    assert_eq!(ours, theirs);
    assert_eq!(
        theirs,
        [
            "warns", "warns", "warns", "loads", "loads", "loads", "warns"
        ]
    );
}

#[test]
fn null_where_the_runtime_needs_a_value_names_the_file_and_key() {
    for key in ["name", "id", "version", "license", "backend"] {
        let text = format!(r#"{{"python-depends": [], "{key}": null}}"#);
        let err =
            Metadata::from_slice_for(text.as_bytes(), Some("0.16.2".parse().unwrap())).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("`{key}` is `null`; the runtime needs a value there")
        );
    }
}
