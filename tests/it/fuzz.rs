//! Fuzzing on the stable toolchain (issue 11, item 9): a seeded mutation loop
//! per parser, run as an ordinary test for a fixed time budget, over the
//! committed corpus in `tests/fuzz/corpus/<target>/`. Every input must parse or
//! fail with an error whose diagnostic renders; a panic fails the test and
//! prints the input (escaped) and the seed. Inputs that once panicked live in
//! `tests/fuzz/regressions/` and always run first.
//!
//! `KERNELS_FUZZ_SECONDS` (per target, default 3) and `KERNELS_FUZZ_SEED`
//! make longer local runs possible.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use kernels::lock::format::Lockfile;
use kernels::lock::manifest::Manifest;
use kernels::lock::requirement::{Requirement, select_branch, select_tag};
use kernels_test_support::repo_root;
use kernels_types::variant_name::BuildVariant;
use kernels_types::wire::{GitRefs, RepoInfo, TreeEntry};

fn budget() -> Duration {
    let seconds = std::env::var("KERNELS_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(3.0);
    Duration::from_secs_f64(seconds)
}

fn seed() -> u64 {
    std::env::var("KERNELS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x006b_6572_6e65_6c73)
}

/// Renders a diagnostic the way the CLI does (the renderer must not panic).
fn render(err: &dyn Diagnostic) -> String {
    let mut out = String::new();
    let _ = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .render_report(&mut out, err);
    out
}

/// Tokens that matter to the formats under test.
const TOKENS: &[&str] = &[
    "\"",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "=",
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\0",
    "\u{feff}",
    "..",
    "/",
    "\\",
    "-",
    "~",
    "^",
    "*",
    ">=",
    "<",
    "!=",
    "==",
    "===",
    "~=",
    "v",
    ".",
    "0",
    "1",
    "18446744073709551616",
    "-1",
    "1e999",
    "null",
    "true",
    "[]",
    "{}",
    "\"\"",
    "#",
    "'''",
    "\"\"\"",
    "\u{1b}[2J",
    "é",
    "\u{10ffff}",
    "<<<<<<< HEAD\n",
    "=======\n",
    ">>>>>>> x\n",
    "torch",
    "cxx11",
    "cu",
    "rocm",
    "metal",
    "x86_64",
    "linux",
    "darwin",
    "sha256-",
    "repo_id",
    "repo-id",
    "dependency",
    "lock",
    "commit",
    "variants",
    "hash",
    "revision",
    "version",
    "[tool.kernels.dependencies]",
    "[tool.kernels]",
    "branches",
    "tags",
    "targetCommit",
];

fn mutate(rng: &mut ChaCha8Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let len = data.len();
        let at = if len == 0 {
            0
        } else {
            rng.random_range(0..=len)
        };
        match rng.random_range(0..8) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] ^= 1 << rng.random_range(0..8);
            }
            1 => data.insert(at, rng.random()),
            2 if len > 0 => {
                let end = (at + rng.random_range(1..=16)).min(len);
                data.drain(at.min(end)..end);
            }
            3 | 4 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                data.splice(at..at, token.iter().copied());
            }
            5 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = (start + rng.random_range(1..=64)).min(len);
                let copy = data[start..end].to_vec();
                data.splice(at..at, copy);
            }
            6 => {
                let other = &corpus[rng.random_range(0..corpus.len())];
                if !other.is_empty() {
                    let start = rng.random_range(0..other.len());
                    let end = (start + rng.random_range(1..=128)).min(other.len());
                    data.splice(at..at, other[start..end].iter().copied());
                }
            }
            _ if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] = b"0123456789\"'[]{}:=,.\n"[rng.random_range(0..21)];
            }
            _ => {}
        }
    }
    data.truncate(64 << 10);
    data
}

fn read_dir(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    paths.iter().map(|p| fs_err::read(p).unwrap()).collect()
}

/// Line-oriented corpora (`variant`, `requirement`) give one input per line.
fn corpus(target: &str, by_line: bool) -> Vec<Vec<u8>> {
    let files = read_dir(&repo_root().join("tests/fuzz/corpus").join(target));
    assert!(!files.is_empty(), "no corpus for {target}");
    if !by_line {
        return files;
    }
    files
        .iter()
        .flat_map(|f| {
            f.split(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// Regression inputs: `tests/fuzz/regressions/<target>-*`.
fn regressions(target: &str) -> Vec<Vec<u8>> {
    let dir = repo_root().join("tests/fuzz/regressions");
    let Ok(entries) = fs_err::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{target}-")))
        })
        .collect();
    paths.sort();
    paths.iter().map(|p| fs_err::read(p).unwrap()).collect()
}

/// Runs `check` on the regressions, the corpus, then mutations until the budget ends.
fn fuzz(target: &str, by_line: bool, mut check: impl FnMut(&[u8])) {
    let corpus = corpus(target, by_line);
    let seed = seed()
        ^ target
            .bytes()
            .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut run = |input: &[u8]| {
        if std::panic::catch_unwind(AssertUnwindSafe(|| check(input))).is_err() {
            panic!(
                "fuzz target `{target}` panicked (seed {seed}) on {:?}; add it to tests/fuzz/regressions/{target}-<name>",
                String::from_utf8_lossy(input)
            );
        }
    };
    for input in regressions(target).iter().chain(&corpus) {
        run(input);
    }
    let start = Instant::now();
    let mut count = 0u64;
    while start.elapsed() < budget() {
        let base = &corpus[rng.random_range(0..corpus.len())];
        let input = mutate(&mut rng, base, &corpus);
        run(&input);
        count += 1;
    }
    eprintln!("fuzz {target}: {count} inputs in {:?}", start.elapsed());
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

#[test]
fn fuzz_manifest() {
    fuzz("manifest", false, |input| {
        if let Err(err) = Manifest::parse(&text(input), Path::new("pyproject.toml")) {
            render(&err);
        }
    });
}

#[test]
fn fuzz_lock_formats() {
    let path = Path::new("kernels.lock");
    fuzz("lock", false, |input| {
        match Lockfile::parse(&text(input), path) {
            Ok(lock) => {
                if let Err(err) = lock.locked_kernels(path) {
                    render(&err);
                }
                let _ = lock.to_json();
            }
            Err(err) => {
                render(&err);
            }
        }
    });
}

#[test]
fn fuzz_refs_json() {
    fuzz("refs", false, |input| {
        if let Ok(refs) = serde_json::from_slice::<GitRefs>(input) {
            let _ = select_branch(1, &refs.branches);
            for spec in ["1", ">=0.1", "^0.1"] {
                if let Ok(req) = Requirement::parse_str(spec) {
                    let _ = select_tag(&req, &refs.tags);
                }
            }
        }
    });
}

#[test]
fn fuzz_revision_json() {
    fuzz("revision", false, |input| {
        if let Ok(info) = serde_json::from_slice::<RepoInfo>(input) {
            for sibling in info.siblings.iter().flatten() {
                let _ = kernels_types::repo_path::check(&sibling.rfilename);
            }
        }
    });
}

#[test]
fn fuzz_tree_json() {
    fuzz("tree", false, |input| {
        if let Ok(entries) = serde_json::from_slice::<Vec<TreeEntry>>(input) {
            let _ = kernels_types::repo_path::check_entries(&entries);
        }
    });
}

#[test]
fn fuzz_mirror_repo_toml() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repos/kernels/acme/relu");
    for commit in ["c1", "c2"] {
        let tree = repo.join("commits").join(commit).join("tree");
        fs_err::create_dir_all(&tree).unwrap();
        fs_err::write(tree.join("a.so"), commit).unwrap();
        fs_err::write(
            repo.join("commits").join(commit).join("commit.toml"),
            format!("sha = \"{}\"\ntitle = \"t\"\n", commit.repeat(20)),
        )
        .unwrap();
    }
    let toml = repo.join("repo.toml");
    fuzz("repo_toml", false, |input| {
        fs_err::write(&toml, input).unwrap();
        if let Err(err) = kernels_serve::Mirror::load(tmp.path()) {
            render(&err);
        }
    });
}

#[test]
fn fuzz_variant_names() {
    fuzz("variant", true, |input| {
        let name = text(input);
        let variant = BuildVariant::parse(&name);
        let _ = (
            variant.is_known(),
            variant.arch(),
            variant.lenient_noarch_backend(),
        );
        let _ = name.parse::<BuildVariant>();
    });
}

#[test]
fn fuzz_requirement_specifiers() {
    fuzz("requirement", true, |input| {
        if let Ok(req) = Requirement::parse_str(&text(input)) {
            let _ = req.to_string();
        }
    });
}

/// A 24 MB lock on one line with a syntax error at its end: the diagnostic
/// shows a window of the line (it used to panic in the renderer after printing
/// all of it).
#[test]
fn one_line_lock_of_24_mb_is_clipped_in_diagnostics() {
    let entry = format!(
        "{{\"repo_id\":\"acme/relu\",\"sha\":\"{}\",\"variants\":{{}}}},",
        "1".repeat(40)
    );
    let mut text = String::from("[");
    while text.len() < 24_000_000 {
        text.push_str(&entry);
    }
    text.push_str("{\"repo_id\":}]");
    let err = Lockfile::parse(&text, Path::new("kernels.lock")).unwrap_err();
    let out = render(&err);
    assert!(out.len() < 4_000, "{} bytes rendered", out.len());
    kernels_test_support::snapshot!("huge_lock_parse_error", out);

    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("kernels.lock"), &text).unwrap();
    fs_err::write(
        dir.path().join("pyproject.toml"),
        "[tool.kernels.dependencies]\n\"acme/relu\" = 1\n",
    )
    .unwrap();
    let out = kernels_test_support::kernels_scrubbed()
        .arg("verify")
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", dir.path().join("cache"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.len() < 4_000, "{} bytes on stderr", err.len());
}
