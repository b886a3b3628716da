//! `kernels download --with-benchmarks` and `kernels benchmark`: against a
//! generated mirror whose pure-Python kernels compute with the stub torch's
//! list-backed tensors, and whose `benchmarks/` scripts follow the protocol
//! of reference 0.17.2's `kernels.benchmark.Benchmark`.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, TestContext, snapshot};

use crate::local_build::{Layout, LocalBuild, RELU};
use serde_json::Value;

/// Filters for the timings of a benchmark table: the means (`0.0123`), the
/// speed-ups (`1.23x (1.20-1.26)`, a bound `inf` when an interval reaches
/// zero), and the padding that aligns them (its width
/// follows the numbers).
const TIMINGS: &[(&str, &str)] = &[
    (
        r"\b\d+\.\d{2}x \((\d+\.\d{2}|inf|NaN)-(\d+\.\d{2}|inf|NaN)\)",
        "[SPEED-UP]",
    ),
    (r"\b\d+\.\d{4}\b", "[MS]"),
    (
        r"\b(faster|slower|not significant|undecided)\b",
        "[VERDICT]",
    ),
    (r"(\S)  +", "$1  "),
];

/// [`TIMINGS`], and the sample count of a run whose rounds go on until its
/// speed-ups are decided (the default `--budget`).
const TIMINGS_ROUNDS: &[(&str, &str)] = &[
    (
        r"\b\d+\.\d{2}x \((\d+\.\d{2}|inf|NaN)-(\d+\.\d{2}|inf|NaN)\)",
        "[SPEED-UP]",
    ),
    (r"\b\d+\.\d{4}\b", "[MS]"),
    (
        r"\b(faster|slower|not significant|undecided)\b",
        "[VERDICT]",
    ),
    (r"(\S)  +", "$1  "),
    (r"±\[MS\]  \d+  ", "±[MS]  [N]  "),
];

/// A `torch-cpu` variant of `acme/<name>` whose `relu(out, x)` writes
/// `x.relu()` times `factor` into `out` (a factor other than 1 is a wrong
/// kernel), and `files` beside `build/` (path, text), as commit `c1` on
/// branches `main` and `v1`.
fn write_kernel(mirror: &Path, name: &str, sha: char, factor: &str, files: &[(&str, &str)]) {
    let repo = mirror.join("repos/kernels/acme").join(name);
    write_commit(&repo, "c1", sha, name, factor, files);
    fs_err::write(
        repo.join("repo.toml"),
        "commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
    )
    .unwrap();
}

/// Commit `label` of the repository at `repo` (see [`write_kernel`]).
fn write_commit(
    repo: &Path,
    label: &str,
    sha: char,
    name: &str,
    factor: &str,
    files: &[(&str, &str)],
) {
    let tree = repo.join("commits").join(label).join("tree");
    let variant = tree.join("build/torch-cpu");
    fs_err::create_dir_all(&variant).unwrap();
    fs_err::write(
        variant.join("__init__.py"),
        format!("def relu(out, x):\n    out.copy_(x.relu() * {factor})\n    return out\n"),
    )
    .unwrap();
    fs_err::write(
        variant.join("metadata.json"),
        format!("{{\"name\": \"{name}\", \"id\": \"_{name}_cpu\", \"version\": 1, \"license\": \"mit\", \"python-depends\": [], \"backend\": {{\"type\": \"cpu\"}}}}\n"),
    )
    .unwrap();
    for (path, text) in files {
        let path = tree.join(path);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
    fs_err::write(
        repo.join("commits").join(label).join("commit.toml"),
        format!(
            "sha = \"{}\"\ntitle = \"Build\"\n",
            sha.to_string().repeat(40)
        ),
    )
    .unwrap();
}

/// A `relu` whose import defines the op `_ns_same::relu`: a local build of
/// it has the same op namespace as the Hub build.
const SAME_NAMESPACE: &str = "import torch\ntorch.library.define(\"_ns_same::relu\", \"(Tensor x) -> Tensor\")\n\n\ndef relu(out, x):\n    out.copy_(x.relu())\n    return out\n";

/// Two workloads that match (`relu` with the shared setup, `wide` with its
/// own) and one without `verify_*`.
const GOOD: &str = r#"
import torch
from kernels.benchmark import Benchmark


class ReluBenchmark(Benchmark):
    seed = 7

    def setup(self):
        self.x = torch.randn(4, 8, device=self.device, dtype=torch.float32)
        self.out = torch.empty_like(self.x)

    def setup_wide(self):
        self.x = torch.randn(2, 64, device=self.device, dtype=torch.float16)
        self.out = torch.empty_like(self.x)

    def benchmark_relu(self):
        self.kernel.relu(self.out, self.x)

    def verify_relu(self):
        return torch.relu(self.x)

    def benchmark_wide(self):
        self.kernel.relu(self.out, self.x)

    def verify_wide(self):
        return torch.relu(self.x)

    def benchmark_unchecked(self):
        self.kernel.relu(self.out, self.x)
"#;

/// A mismatch, a workload that raises, one that hangs, and one after them.
const BAD: &str = r#"
import time
import torch
from kernels.benchmark import Benchmark


class Bad(Benchmark):
    def setup(self):
        self.x = torch.randn(4, 4, device=self.device)
        self.out = torch.empty_like(self.x)

    def benchmark_a_wrong(self):
        self.kernel.relu(self.out, self.x)

    def verify_a_wrong(self):
        return torch.relu(self.x) * 2

    def benchmark_b_raises(self):
        raise ValueError("no such op on this device")

    def benchmark_c_hangs(self):
        time.sleep(600)

    def benchmark_d_after(self):
        self.kernel.relu(self.out, self.x)

    def verify_d_after(self):
        return torch.relu(self.x)
"#;

/// Workloads whose times the script sets: `clear`, 1 ms against a 20 ms
/// reference (decided at once), and `even`, each of it and its reference
/// alternately 0 and 10 ms (interleaved, so each sees the same machine load:
/// an interval around 1 that narrows to ±5% only after about 1500 calls).
const TIMED: &str = r#"
import time
import torch
from kernels.benchmark import Benchmark


class Timed(Benchmark):
    def setup(self):
        self.x = torch.randn(2, 2, device=self.device)
        self.out = torch.empty_like(self.x)
        self.calls = 0
        self.reference_calls = 0

    def benchmark_clear(self):
        self.kernel.relu(self.out, self.x)
        time.sleep(0.001)

    def verify_clear(self):
        time.sleep(0.02)
        return torch.relu(self.x)

    def benchmark_even(self):
        self.kernel.relu(self.out, self.x)
        self.calls += 1
        time.sleep(0.01 if self.calls % 2 else 0)

    def verify_even(self):
        self.reference_calls += 1
        time.sleep(0.01 if self.reference_calls % 2 else 0)
        return torch.relu(self.x)
"#;

/// `acme/good` (benchmarks and a `tests/` file; a v2 off by a factor 2),
/// `acme/bad`, `acme/plain` (none), `acme/wrong` (the GOOD script against a
/// kernel off by a factor 3).
fn mirror(mirror: &Path) {
    fs_err::create_dir_all(mirror.join("orgs")).unwrap();
    fs_err::write(
        mirror.join("orgs/acme.toml"),
        "fullname = \"Acme\"\ntrusted_kernel_publisher = true\n",
    )
    .unwrap();
    write_kernel(
        mirror,
        "good",
        '1',
        "1",
        &[
            ("benchmarks/benchmark_relu.py", GOOD),
            ("benchmarks/helpers.py", "SIZE = 4\n"),
            ("tests/test_relu.py", "def test_relu():\n    pass\n"),
        ],
    );
    write_kernel(
        mirror,
        "bad",
        '2',
        "1",
        &[("benchmarks/benchmark_bad.py", BAD)],
    );
    write_kernel(mirror, "plain", '3', "1", &[]);
    write_kernel(
        mirror,
        "timed",
        '7',
        "1",
        &[("benchmarks/benchmark_timed.py", TIMED)],
    );
    write_kernel(
        mirror,
        "wrong",
        '4',
        "3",
        &[("benchmarks/benchmark_relu.py", GOOD)],
    );
    // `acme/ns`: the GOOD script, its kernel defining the op `_ns_same::relu`.
    write_kernel(
        mirror,
        "ns",
        '8',
        "1",
        &[
            ("benchmarks/benchmark_relu.py", GOOD),
            ("build/torch-cpu/__init__.py", SAME_NAMESPACE),
        ],
    );
    // `acme/gpu`: the GOOD script, its one variant a CUDA build.
    write_kernel(
        mirror,
        "gpu",
        '6',
        "1",
        &[("benchmarks/benchmark_relu.py", GOOD)],
    );
    let build = mirror.join("repos/kernels/acme/gpu/commits/c1/tree/build");
    let cuda = build.join("torch27-cxx11-cu126-x86_64-linux");
    fs_err::rename(build.join("torch-cpu"), &cuda).unwrap();
    let metadata = fs_err::read_to_string(cuda.join("metadata.json")).unwrap();
    fs_err::write(
        cuda.join("metadata.json"),
        metadata.replace("\"type\": \"cpu\"", "\"type\": \"cuda\""),
    )
    .unwrap();
    // `acme/good` v2: commit 5555… on branches `v2` and `main`, off by a factor 2.
    let good = mirror.join("repos/kernels/acme/good");
    let script = [("benchmarks/benchmark_relu.py", GOOD)];
    write_commit(&good, "c2", '5', "good", "2", &script);
    fs_err::write(
        good.join("repo.toml"),
        "commits = [\"c1\", \"c2\"]\n\n[branches]\nmain = \"c2\"\nv1 = \"c1\"\nv2 = \"c2\"\n",
    )
    .unwrap();
}

/// A locked and downloaded (with benchmarks) project depending on
/// `acme/<name>` = 1 for each of `kernels`, its Python the reference
/// environment `venv` with the stub torch.
fn project(kernels: &[&str], venv: &str) -> TestContext {
    project_with(kernels, venv, &[])
}

/// [`project`] with the variables `env` set for every command.
fn project_with(kernels: &[&str], venv: &str, env: &[(&str, &str)]) -> TestContext {
    let deps: String = kernels
        .iter()
        .map(|k| format!("\"acme/{k}\" = 1\n"))
        .collect();
    let context = TestContext::with_generated_mirror(mirror, &[]).with_pyproject(&format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n{deps}"
    ));
    let mut context = context
        .with_stub_torch_copy()
        .with_env("VIRTUAL_ENV", common::pyref_root().join(venv));
    for (name, value) in env {
        context = context.with_env(name, value);
    }
    context.run_ok(&["lock"]);
    context.run_ok(&["download", "--with-benchmarks"]);
    context
}

/// `kernels benchmark ARGS` without a Hub (it never makes a request), one
/// timing round per workload (`--budget 0`) unless ARGS name a budget.
fn benchmark(context: &TestContext, args: &[&str]) -> Output {
    let mut command = context.kernels_without_hub();
    command.arg("benchmark").args(args);
    if !args.contains(&"--budget") {
        command.args(["--budget", "0"]);
    }
    command.output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "{err}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The workloads of kernel `index` of a JSON document, by `Class.method`.
fn workloads(doc: &Value, index: usize) -> Vec<(String, &Value)> {
    doc["kernels"][index]["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let name = format!(
                "{}.{}",
                w["class"].as_str().unwrap(),
                w["method"].as_str().unwrap()
            );
            (name, w)
        })
        .collect()
}

#[test]
fn download_with_benchmarks_places_the_benchmarks_and_tests_folders() {
    let context = project(&["good", "plain"], "kernels-0.17.2");
    let snapshot = context
        .cache
        .join("kernels--acme--good/snapshots")
        .join("1".repeat(40));
    for path in [
        "benchmarks/benchmark_relu.py",
        "benchmarks/helpers.py",
        "tests/test_relu.py",
    ] {
        let file = snapshot.join(path);
        assert!(
            fs_err::symlink_metadata(&file)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{path}"
        );
        assert!(fs_err::read_to_string(&file).unwrap().len() > 5, "{path}");
    }
    // Without the flag, nothing beside build/ is fetched.
    let plain = TestContext::with_generated_mirror(mirror, &[])
        .with_pyproject(
            "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = 1\n",
        )
        .with_stub_torch();
    plain.run_ok(&["lock"]);
    // Nothing is said about benchmarks/.
    snapshot!("download_without_benchmarks", plain.run_ok(&["download"]));
    let bare = plain
        .cache
        .join("kernels--acme--good/snapshots")
        .join("1".repeat(40));
    assert!(bare.join("build/torch-cpu/__init__.py").exists());
    assert!(!bare.join("benchmarks").exists());
    assert!(!bare.join("tests").exists());
    // A second run finds them in place.
    // `good` has 3 files from benchmarks/ and tests/, `plain` neither folder.
    snapshot!(
        "download_with_benchmarks_again",
        context.run_ok(&["download", "--with-benchmarks"])
    );
}

#[test]
fn benchmark_runs_every_workload_checks_it_and_names_the_mechanism() {
    let context = project(&["good", "plain"], "kernels-0.17.2");
    let out = benchmark(&context, &["--iterations", "7", "--warmup", "2"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let relu = row("ReluBenchmark.relu");
    assert_eq!(&relu[1..3], ["4x8", "float32"], "{relu:?}");
    assert_eq!(relu.last().unwrap(), "match");
    let wide = row("ReluBenchmark.wide");
    assert_eq!(&wide[1..3], ["2x64", "float16"], "{wide:?}");
    assert!(row("ReluBenchmark.unchecked").ends_with(&["no".to_owned(), "verify".to_owned()]));
    // The table of `good`, `plain` without benchmarks; the mechanism (wall
    // clock, 7 iterations after 2 warm-up) and the tally.
    snapshot!("benchmark_good_and_plain", out, TIMINGS);
}

#[test]
fn benchmark_json_has_the_machine_the_statistics_and_the_speed_up() {
    let context = project(&["good"], "kernels-0.17.2");
    let out = benchmark(&context, &["--format", "json", "--iterations", "20"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["command"], "benchmark");
    assert_eq!(doc["timing"], "wall_clock");
    assert_eq!(doc["iterations"], 20);
    assert_eq!(doc["warmup"], 10);
    assert_eq!(doc["machine"]["device"], "cpu");
    assert_eq!(doc["machine"]["torch"], "2.7.0");
    assert!(doc["machine"]["gpu"].is_null());
    let (name, relu) = &workloads(&doc, 0)[0];
    assert_eq!(name, "ReluBenchmark.relu");
    assert_eq!(relu["status"], "timed");
    assert_eq!(relu["match"], serde_json::json!([true]));
    assert_eq!(relu["max_abs_diff"], serde_json::json!([0.0]));
    let ours = &relu["ours"];
    assert_eq!(ours["iterations"], 20);
    let f = |v: &Value| v.as_f64().unwrap();
    assert!(f(&ours["min_ms"]) <= f(&ours["q1_ms"]) && f(&ours["q1_ms"]) <= f(&ours["q3_ms"]));
    assert!(f(&ours["q3_ms"]) <= f(&ours["max_ms"]));
    assert!((f(&ours["iqr_ms"]) - (f(&ours["q3_ms"]) - f(&ours["q1_ms"]))).abs() < 1e-9);
    assert!(
        f(&ours["ci_low_ms"]) <= f(&ours["mean_ms"])
            && f(&ours["mean_ms"]) <= f(&ours["ci_high_ms"])
    );
    let reference = f(&relu["reference"]["mean_ms"]);
    let speed_up = &relu["speed_up"];
    assert!((f(&speed_up["ratio"]) - reference / f(&ours["mean_ms"])).abs() < 1e-9);
    assert!((f(&speed_up["low"]) - reference / f(&ours["ci_high_ms"])).abs() < 1e-9);
}

#[test]
fn benchmark_exits_1_naming_the_mismatch_and_goes_on_after_errors_and_hangs() {
    let context = project(&["bad", "good"], "kernels-0.17.2");
    let out = benchmark(
        &context,
        &["--format", "json", "--iterations", "3", "--time-limit", "3"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc = json(&out);
    let bad = workloads(&doc, 0);
    let names: Vec<&str> = bad.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["Bad.a_wrong", "Bad.b_raises", "Bad.c_hangs", "Bad.d_after"]
    );
    assert_eq!(bad[0].1["match"], serde_json::json!([false]));
    assert_eq!(bad[1].1["status"], "failed");
    let raised = bad[1].1["error"].to_string();
    // Stays a substring check: a Python traceback, its frames naming files and lines.
    assert!(
        raised.contains("ValueError: no such op on this device"),
        "{raised}"
    );
    assert_eq!(bad[2].1["status"], "timed_out");
    assert_eq!(bad[3].1["match"], serde_json::json!([true]));
    // The kernel after the hang ran in a new interpreter.
    assert_eq!(workloads(&doc, 1).len(), 3);
    // kernels::benchmark::failed: 1 mismatch (Bad.a_wrong), 2 failed
    // (Bad.b_raises, Bad.c_hangs).
    snapshot!("benchmark_bad_stderr", text(&out.stderr), TIMINGS);
}

#[test]
fn benchmark_names_only_the_kernels_asked_for_and_works_without_a_runtime() {
    // The Python of kernels 0.11.3 has no `kernels.benchmark`: the driver's
    // stand-in class lets the script import.
    let context = project(&["wrong", "good"], "kernels-0.11.3");
    // Only `wrong`, its two checked workloads a MISMATCH, named on stderr.
    snapshot!(
        "benchmark_wrong_only",
        benchmark(&context, &["acme/wrong", "--iterations", "2"]),
        TIMINGS
    );
    snapshot!("benchmark_not_locked", benchmark(&context, &["acme/other"]));
}

#[test]
fn benchmark_against_times_the_newer_version_in_the_same_run() {
    let context = project(&["good"], "kernels-0.17.2");
    // With a Hub: the candidate (v2, the newest; v1 is what is locked) is
    // downloaded with its benchmarks, then both run in one interpreter.
    let out = context
        .kernels()
        .args([
            "benchmark",
            "--against",
            "--iterations",
            "4",
            "--budget",
            "0",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc = json(&out);
    let kernel = &doc["kernels"][0];
    assert_eq!(kernel["commit"], "1".repeat(40));
    assert_eq!(kernel["candidate"]["label"], "v2 (5555555)");
    assert_eq!(kernel["candidate"]["commit"], "5".repeat(40));
    let (name, relu) = &workloads(&doc, 0)[0];
    assert_eq!(name, "ReluBenchmark.relu");
    // The locked version matches its reference, the candidate (x2) does not.
    assert_eq!(relu["match"], serde_json::json!([true, false]));
    assert_eq!(relu["ours"]["iterations"], 4);
    assert_eq!(relu["candidate"]["iterations"], 4);
    let f = |v: &Value| v.as_f64().unwrap();
    let ratio = f(&relu["ours"]["mean_ms"]) / f(&relu["candidate"]["mean_ms"]);
    assert!((f(&relu["candidate_speed_up"]["ratio"]) - ratio).abs() < 1e-9);
    // 2 workloads not matching their verify_*.
    snapshot!("benchmark_against_json_stderr", text(&out.stderr), TIMINGS);
    // Text: the line naming the candidate and one ratio line per workload.
    let out = context
        .kernels()
        .args([
            "benchmark",
            "--against",
            "2",
            "--iterations",
            "2",
            "--budget",
            "0",
        ])
        .output()
        .unwrap();
    snapshot!("benchmark_against_text", out, TIMINGS);
}

#[test]
fn benchmark_without_torch_says_it_needs_torch_not_flags_it_lacks() {
    let context = project(&["good"], "kernels-0.17.2");
    let no_torch = context.tmp.path().join("no_torch");
    fs_err::create_dir_all(no_torch.join("torch")).unwrap();
    fs_err::write(
        no_torch.join("torch/__init__.py"),
        "raise ImportError('no torch here')\n",
    )
    .unwrap();
    let out = context
        .kernels_without_hub()
        .arg("benchmark")
        .env("PYTHONPATH", &no_torch)
        .output()
        .unwrap();
    // kernels::benchmark::no_torch, suggesting no `--torch-version`.
    snapshot!("benchmark_no_torch", out);
}

#[test]
fn outdated_benchmark_times_each_outdated_kernel_against_its_candidate() {
    let context = project(&["good"], "kernels-0.17.2");
    // v1 is locked and v2 is newer: the table, then one run of both.
    let out = context
        .kernels()
        .args(["outdated", "--benchmark"])
        .output()
        .unwrap();
    // The candidate (x2) does not match its reference: named, exit 1.
    snapshot!("outdated_benchmark", out, TIMINGS_ROUNDS);
}

#[test]
fn benchmark_version_runs_another_version_than_the_locked_one() {
    let context = project(&["good"], "kernels-0.17.2");
    let out = context
        .kernels()
        .args([
            "benchmark",
            "acme/good",
            "--version",
            "2",
            "--iterations",
            "2",
            "--budget",
            "0",
        ])
        .output()
        .unwrap();
    // acme/good@5555555 fetched with its benchmarks, a MISMATCH.
    snapshot!("benchmark_version_2", out, TIMINGS);
    let out = context
        .kernels()
        .args(["benchmark", "acme/good", "--version", "7"])
        .output()
        .unwrap();
    snapshot!("benchmark_no_such_version", out);
}

#[test]
fn benchmark_names_a_kernel_that_is_not_in_the_cache() {
    let context = TestContext::with_generated_mirror(mirror, &[])
        .with_pyproject(
            "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = 1\n",
        )
        .with_stub_torch();
    context.run_ok(&["lock"]);
    // Named on stdout and in the error, with `kernels download --with-benchmarks`.
    snapshot!("benchmark_not_in_cache", benchmark(&context, &[]));
}

#[test]
fn benchmark_times_with_cuda_events_when_torch_sees_a_cuda_gpu() {
    // The stub torch reports a CUDA GPU; its events are wall-clock backed.
    let gpu = [
        ("STUB_TORCH_CUDA", "12.6"),
        ("STUB_TORCH_CAPABILITY", "9.0"),
        ("STUB_TORCH_DEVICE_NAME", "Stub H100"),
        ("STUB_TORCH_PEAK_BYTES", "4096"),
    ];
    let context = project_with(&["gpu"], "kernels-0.17.2", &gpu);
    let out = benchmark(&context, &["--format", "json", "--iterations", "3"]);
    let doc = json(&out);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(doc["timing"], "cuda_event");
    assert_eq!(doc["machine"]["device"], "cuda");
    assert_eq!(doc["machine"]["gpu"], "Stub H100");
    assert_eq!(doc["machine"]["capability"], "9.0");
    assert_eq!(doc["machine"]["cuda"], "12.6");
    let (_, relu) = &workloads(&doc, 0)[0];
    assert_eq!(relu["match"], serde_json::json!([true]));
    assert_eq!(relu["leaked_bytes"], 0);
    // Peak memory per call, ours and the reference's (`verify_relu`).
    assert_eq!(
        relu["peak_bytes"],
        serde_json::json!({"ours": 4096, "reference": 4096, "candidate": null})
    );
    let table = benchmark(&context, &["--iterations", "3"]);
    assert!(
        text(&table.stdout)
            .contains("peak CUDA memory per call: ours 4.00 KiB, reference 4.00 KiB"),
        "{}",
        text(&table.stdout)
    );
}

/// Issue 44: `--against PATH` times the locked version against a local
/// build (here kernel-builder's `build/torch-cpu`, a correct `relu`), with
/// the locked version's workloads, offline.
#[test]
fn benchmark_against_a_local_build_times_it_beside_the_locked_version() {
    let context = project(&["good"], "kernels-0.17.2");
    let dev = context.tmp.path().join("good-dev");
    LocalBuild::new("good", "_good_cpu_dev")
        .file("__init__.py", RELU)
        .write(&dev, Layout::Build);
    let dev_arg = dev.display().to_string();
    let out = benchmark(
        &context,
        &[
            "acme/good",
            "--against",
            &dev_arg,
            "--iterations",
            "3",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let kernel = &doc["kernels"][0];
    assert_eq!(
        kernel["candidate"]["label"],
        format!("local build {dev_arg}")
    );
    let (name, relu) = &workloads(&doc, 0)[0];
    assert_eq!(name, "ReluBenchmark.relu");
    assert_eq!(relu["match"], serde_json::json!([true, true]));
    assert_eq!(relu["candidate"]["iterations"], 3);
    // A `pyproject.toml` path source is timed beside the locked version
    // without `--against`.
    context.write(
        "pyproject.toml",
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = { path = \"../good-dev\", version = 1 }\n",
    );
    let out = benchmark(&context, &["--iterations", "2", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(
        doc["kernels"][0]["candidate"]["label"],
        "local build ../good-dev (pyproject.toml path)"
    );
    // A bare word is neither a version nor a path.
    let out = benchmark(&context, &["acme/good", "--against", "good-dev"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("write `./good-dev`"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 41 item 2: a zip-layout variant (`"build-layout": "zip"`, the
/// package in `<id>.zip`) is benchmarked; here a local build given as its
/// variant directory.
#[test]
fn benchmark_loads_a_zip_layout_variant() {
    let context = project(&["good"], "kernels-0.17.2");
    let variant = LocalBuild::new("good", "_good_zip")
        .zipped("__init__.py", RELU)
        .write(
            &context.tmp.path().join("zip-dev/torch-cpu"),
            Layout::Variant,
        );
    let dir = variant.display().to_string();
    let out = benchmark(
        &context,
        &[
            "acme/good",
            "--against",
            &dir,
            "--iterations",
            "2",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let (_, relu) = &workloads(&doc, 0)[0];
    assert_eq!(relu["match"], serde_json::json!([true, true]));
}

/// Issue 43 item 4: rounds go on until the speed-up's interval excludes 1
/// or lies within ±5%, or the budget runs out; "not significant" is never
/// said of an interval that is wider.
#[test]
fn benchmark_repeats_rounds_until_the_speed_up_is_decided_or_the_budget_runs_out() {
    let context = project(&["timed"], "kernels-0.17.2");
    let args = ["--iterations", "4", "--warmup", "1", "--format", "json"];
    let out = benchmark(&context, &[&args[..], &["--budget", "2"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["budget_s"], 2.0);
    let found = workloads(&doc, 0);
    let (name, clear) = &found[0];
    assert_eq!(name, "Timed.clear");
    let f = |v: &Value| v.as_f64().unwrap();
    // Decided: the interval lies above 1.
    assert_eq!(clear["speed_up"]["verdict"], "faster", "{clear}");
    assert!(f(&clear["speed_up"]["low"]) > 1.0, "{clear}");
    let (name, even) = &found[1];
    assert_eq!(name, "Timed.even");
    // The budget ran out with the interval holding 1 and wider than ±5%:
    // undecided, after more than one round, every round's calls counted.
    let speed = &even["speed_up"];
    assert_eq!(speed["verdict"], "undecided", "{even}");
    assert!(f(&speed["low"]) < 1.0 && f(&speed["high"]) > 1.0, "{even}");
    assert!(f(&speed["high"]) > 1.05 * f(&speed["ratio"]), "{even}");
    let rounds = even["rounds"].as_u64().unwrap();
    assert!(rounds > 1, "{even}");
    assert_eq!(even["ours"]["iterations"].as_u64().unwrap(), 4 * rounds);
    assert_eq!(
        even["reference"]["iterations"].as_u64().unwrap(),
        4 * rounds
    );
    // `--budget 0`: one round; the table names the verdict beside the
    // interval and the budget in its heading.
    let out = benchmark(&context, &["--iterations", "4", "--warmup", "1"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let even = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Timed.even"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        even.contains("  4  ") && even.contains("undecided"),
        "{even}"
    );
    assert!(!stdout.contains("not significant"), "{stdout}");
    assert!(
        stderr.contains("rounds of 4 iterations after 1 warm-up, one round"),
        "{stderr}"
    );
}

/// Issue 44 item 3: `--against PATH` reports the difference in peak
/// memory of the local build from the locked version, in text and JSON.
#[test]
fn benchmark_against_a_local_build_reports_the_peak_memory_difference() {
    let gpu = [
        ("STUB_TORCH_CUDA", "12.6"),
        ("STUB_TORCH_CAPABILITY", "9.0"),
        ("STUB_TORCH_PEAK_BYTES", "4096"),
    ];
    let context = project_with(&["gpu"], "kernels-0.17.2", &gpu);
    let dev = context.tmp.path().join("gpu-dev");
    // The local build needs 2 KiB more at its peak.
    LocalBuild::new("gpu", "_gpu_dev")
        .variant("torch27-cxx11-cu126-x86_64-linux")
        .backend(r#"{"type": "cuda"}"#)
        .file(
            "__init__.py",
            "import torch\n\ndef relu(out, x):\n    torch.cuda.stub_peak_extra = 2048\n    out.copy_(x.relu())\n    return out\n",
        )
        .write(&dev, Layout::Build);
    let dev_arg = dev.display().to_string();
    let args = ["acme/gpu", "--against", &dev_arg, "--iterations", "2"];
    let out = benchmark(&context, &[&args[..], &["--format", "json"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let (_, relu) = &workloads(&doc, 0)[0];
    assert_eq!(
        relu["peak_bytes"],
        serde_json::json!({"ours": 4096, "reference": 4096, "candidate": 6144})
    );
    assert_eq!(relu["candidate_peak_diff_bytes"], 2048);
    assert!(relu["candidate_speed_up"]["verdict"].is_string(), "{relu}");
    let out = benchmark(&context, &args);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("peak CUDA memory per call: ours 4.00 KiB, reference 4.00 KiB, candidate 6.00 KiB (+2.00 KiB)"),
        "{stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("ReluBenchmark.relu: locked"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.ends_with(", match, peak memory +2.00 KiB"), "{line}");
}

/// Issue 44: `kernels benchmark PATH` runs a local build's own
/// `benchmarks/` against the variant the runtime would load here, without
/// the lock; a path is told from `owner/name` by its form.
#[test]
fn benchmark_path_runs_a_local_builds_own_benchmarks() {
    let context = project(&["good"], "kernels-0.17.2");
    let dev = context.tmp.path().join("good-dev");
    LocalBuild::new("good", "_good_cpu_dev")
        .file("__init__.py", RELU)
        .write(&dev, Layout::Build);
    let scripts = dev.join("benchmarks");
    fs_err::create_dir_all(&scripts).unwrap();
    fs_err::write(scripts.join("benchmark_relu.py"), GOOD).unwrap();
    let dev_arg = dev.display().to_string();
    let out = benchmark(
        &context,
        &[&dev_arg, "--iterations", "2", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let kernel = &doc["kernels"][0];
    assert_eq!(kernel["path"], dev_arg.as_str());
    assert_eq!(kernel["repo_id"], Value::Null);
    assert_eq!(kernel["variant"], "torch-cpu");
    let (name, relu) = &workloads(&doc, 0)[0];
    assert_eq!(name, "ReluBenchmark.relu");
    assert_eq!(relu["match"], serde_json::json!([true]));
    // Its `build/` and its variant directory find the same scripts.
    for given in [dev.join("build"), dev.join("build/torch-cpu")] {
        let out = benchmark(
            &context,
            &[&given.display().to_string(), "--iterations", "1"],
        );
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            stdout.contains(&format!("{} (torch-cpu)", given.display())),
            "{stdout}"
        );
    }
    // A relative path (from the project directory) starts with `.`; a bare
    // word is a repository id, refused with the path's spelling.
    let out = benchmark(&context, &["../good-dev", "--iterations", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("../good-dev (torch-cpu)"),
        "{}",
        text(&out.stdout)
    );
    let out = benchmark(&context, &["good-dev"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("write `./good-dev`"),
        "{}",
        text(&out.stderr)
    );
    // With a repository it is refused.
    let out = benchmark(&context, &["acme/good", &dev_arg]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("a local build is benchmarked alone"),
        "{}",
        text(&out.stderr)
    );
}

/// `kernels benchmark PATH` on bad input: one error naming the path and the
/// fix.
#[test]
fn benchmark_path_names_a_missing_path_a_build_without_a_variant_here_or_without_benchmarks() {
    let context = project(&["good"], "kernels-0.17.2");
    let base = context.tmp.path();
    let error = |path: &Path| {
        let out = benchmark(&context, &[&path.display().to_string()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
        text(&out.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let missing = base.join("nowhere");
    let stderr = error(&missing);
    assert!(
        stderr.contains(&format!("{} does not exist", missing.display())),
        "{stderr}"
    );
    // A directory in no layout the runtime accepts.
    let empty = base.join("src-only");
    fs_err::create_dir_all(empty.join("csrc")).unwrap();
    let stderr = error(&empty);
    assert!(
        stderr.contains(&format!("{} holds no build variant", empty.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("point at a kernel-builder output"),
        "{stderr}"
    );
    // A CUDA-only build under this CPU torch.
    let cuda = base.join("cuda-dev");
    LocalBuild::new("good", "_good_cuda_dev")
        .variant("torch27-cxx11-cu126-x86_64-linux")
        .backend(r#"{"type": "cuda"}"#)
        .file("__init__.py", RELU)
        .write(&cuda, Layout::Build);
    let stderr = error(&cuda);
    assert!(
        stderr.contains("no variant for this environment"),
        "{stderr}"
    );
    assert!(
        stderr.contains("torch27-cxx11-cu126-x86_64-linux"),
        "{stderr}"
    );
    assert!(
        stderr.contains("build the kernel for this environment"),
        "{stderr}"
    );
    // A build without benchmarks/.
    let bare = base.join("bare-dev");
    LocalBuild::new("good", "_good_bare")
        .file("__init__.py", RELU)
        .write(&bare, Layout::Build);
    let stderr = error(&bare);
    assert!(
        stderr.contains("no benchmarks/benchmark*.py in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("benchmarks/benchmark_<name>.py"),
        "{stderr}"
    );
}

/// Issue 44: a local build with the op namespace of the locked Hub build
/// cannot be loaded in the same process (torch aborts; the stub with
/// `STUB_TORCH_DUPLICATE_OPS=abort` does the same): `--against PATH` times
/// it in an interpreter of its own, interleaved, with the same report.
#[test]
fn benchmark_against_a_local_build_of_the_same_op_namespace_times_it_apart() {
    let abort = [("STUB_TORCH_DUPLICATE_OPS", "abort")];
    let context = project_with(&["ns"], "kernels-0.17.2", &abort);
    let dev = context.tmp.path().join("ns-dev");
    LocalBuild::new("ns", "_ns_same")
        .file("__init__.py", SAME_NAMESPACE)
        .write(&dev, Layout::Build);
    let dev_arg = dev.display().to_string();
    let args = ["acme/ns", "--against", &dev_arg, "--iterations", "3"];
    let out = benchmark(&context, &[&args[..], &["--format", "json"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["kernels"][0]["load_error"], Value::Null, "{doc}");
    let found = workloads(&doc, 0);
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "ReluBenchmark.relu",
            "ReluBenchmark.unchecked",
            "ReluBenchmark.wide"
        ]
    );
    let (_, relu) = &found[0];
    assert_eq!(relu["match"], serde_json::json!([true, true]));
    assert_eq!(relu["ours"]["iterations"], 3);
    assert_eq!(relu["candidate"]["iterations"], 3);
    assert!(relu["candidate_speed_up"]["verdict"].is_string(), "{relu}");
    // Without `verify_*` neither side has a match.
    assert_eq!(found[1].1["match"], Value::Null);
    // The text report is the one of a candidate in the same process.
    let out = benchmark(&context, &args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("against local build {dev_arg} (torch-cpu): its speed over the locked version's, same run, interleaved")),
        "{stdout}"
    );
    assert!(stdout.contains("ReluBenchmark.relu: locked "), "{stdout}");
    // A candidate that fails in its interpreter fails the workload, named.
    LocalBuild::new("ns", "_ns_same")
        .file(
            "__init__.py",
            "def relu(out, x):\n    raise ValueError(\"dev build broken\")\n",
        )
        .write(&dev, Layout::Build);
    let out = benchmark(&context, &[&args[..], &["--format", "json"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let (_, relu) = &workloads(&doc, 0)[0];
    assert_eq!(relu["status"], "failed", "{relu}");
    let error = relu["error"].to_string();
    assert!(
        error.contains("candidate (own interpreter): ValueError: dev build broken"),
        "{error}"
    );
}

/// A local-build candidate that hangs in its own interpreter is ended with
/// the driver (`--time-limit`): each workload is timed out, the next one
/// goes on, and no interpreter of it is left running.
#[cfg(target_os = "linux")]
#[test]
fn benchmark_against_a_hanging_local_build_leaves_no_interpreter_behind() {
    let context = project(&["good"], "kernels-0.17.2");
    let dev = context.tmp.path().join("slow-dev");
    LocalBuild::new("good", "_good_slow")
        .file(
            "__init__.py",
            "import time\n\n\ndef relu(out, x):\n    time.sleep(600)\n",
        )
        .write(&dev, Layout::Build);
    let dev_arg = dev.display().to_string();
    let args = [
        "acme/good",
        "--against",
        &dev_arg,
        "--iterations",
        "1",
        "--time-limit",
        "2",
        "--format",
        "json",
    ];
    let out = benchmark(&context, &args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc = json(&out);
    let statuses: Vec<&str> = workloads(&doc, 0)
        .iter()
        .map(|(_, w)| w["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["timed_out"; 3], "{doc}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let cache = format!("HF_HUB_CACHE={}", context.cache.display());
    let left: Vec<String> = fs_err::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let environ = fs_err::read(entry.path().join("environ")).ok()?;
            let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
            let has = |var: &str| vars.contains(&var.as_bytes());
            (has("KERNELS_BENCHMARK_WORKER=1") && has(&cache))
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect();
    assert!(left.is_empty(), "worker interpreters left: {left:?}");
}
