//! Every gate that answers "is this lock right for this project and its
//! runtime?" answers it the same way: `kernels lock --check` online and
//! `--offline`, `kernels lock --locked`, `kernels download` (plain,
//! `--locked`, `--offline`), `kernels verify`, and the entries of the
//! pre-commit hooks in `.pre-commit-hooks.yaml`, each over the same states
//! (fresh, stale, a lock in a format the installed runtime cannot read, a
//! changed target runtime, no Hub). Every state is rebuilt for every gate.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels_test_support::{self as common, Server};

const PROJECT: &str = "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n";

/// One state of a project: its `pyproject.toml` when locked, the edit made
/// after locking, and the installed runtime (a fake `VIRTUAL_ENV`).
#[derive(Clone, Copy, Debug)]
enum State {
    /// Locked and downloaded; nothing changed.
    Fresh,
    /// A dependency added after locking (a change the offline check proves;
    /// a changed requirement is proven only online).
    Stale,
    /// A variant-hash lock, and kernels 0.17.2 (which reads only the
    /// KernelLocks format) installed in `VIRTUAL_ENV`.
    WrongFormat,
    /// `target-runtime` under `[tool.kernels]` changed from 0.16.2 to 0.17.2.
    RuntimeChanged,
    /// Fresh, but the Hub is unreachable and `HF_HUB_OFFLINE=1`.
    Offline,
}

/// What a gate must answer in a state.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Exit 0 and the lock unchanged.
    Pass,
    /// The gate locked again (it may: `kernels lock`, `kernels download`),
    /// exit 0, and the lock changed.
    Relocked,
    /// Exit 1 with this diagnostic code (or text), whose fix names this command.
    Fails(&'static str, &'static str),
}

/// The gates: their name and arguments (the project directory is appended).
fn gates() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = [
        ("lock --check", vec!["lock", "--check"]),
        (
            "lock --check --offline",
            vec!["lock", "--check", "--offline"],
        ),
        ("lock --locked", vec!["lock", "--locked"]),
        ("download", vec!["download", "--all-variants"]),
        (
            "download --locked",
            vec!["download", "--all-variants", "--locked"],
        ),
        (
            "download --offline",
            vec!["download", "--all-variants", "--offline"],
        ),
        ("verify", vec!["verify", "--all-variants"]),
    ]
    .into_iter()
    .map(|(name, args)| {
        (
            name.to_owned(),
            args.into_iter().map(String::from).collect(),
        )
    })
    .collect();
    // The hooks as published: their `entry:` lines.
    let hooks = fs_err::read_to_string(common::repo_root().join(".pre-commit-hooks.yaml")).unwrap();
    let entries: Vec<&str> = hooks
        .lines()
        .filter_map(|l| l.trim().strip_prefix("entry: "))
        .collect();
    assert_eq!(entries.len(), 2, "{hooks}");
    for entry in entries {
        let mut words = entry.split_whitespace();
        assert_eq!(words.next(), Some("kernels"), "{entry}");
        out.push((format!("hook `{entry}`"), words.map(String::from).collect()));
    }
    out
}

/// The verdict every gate must give in `state`.
fn expected(state: State, gate: &str) -> Verdict {
    let hook_lock = gate == "hook `kernels lock`";
    let stale = |gate: &str| match gate {
        "download" | "hook `kernels lock`" => Verdict::Relocked,
        "lock --check" | "lock --check --offline" => {
            Verdict::Fails("is not up to date", "kernels lock")
        }
        g if g.starts_with("hook `kernels lock --check") => {
            Verdict::Fails("is not up to date", "kernels lock")
        }
        "lock --locked" | "download --locked" => {
            Verdict::Fails("kernels::lock::locked", "kernels lock")
        }
        _ => Verdict::Fails("kernels::lock::stale", "kernels lock"),
    };
    match state {
        State::Fresh => Verdict::Pass,
        State::Offline if hook_lock => Verdict::Fails("offline", "--check"),
        State::Offline => Verdict::Pass,
        State::Stale | State::RuntimeChanged => stale(gate),
        State::WrongFormat => Verdict::Fails(
            "kernels::profile::runtime_cannot_read_lock",
            "kernels lock --target-runtime 0.17.2",
        ),
    }
}

/// A fake Python environment with `kernels` `version` installed (only its
/// `dist-info/METADATA`, which is how the runtime is found).
fn fake_env(prefix: &Path, version: &str) {
    let dist = prefix.join(format!(
        "lib/python3.12/site-packages/kernels-{version}.dist-info"
    ));
    fs_err::create_dir_all(&dist).unwrap();
    fs_err::write(
        dist.join("METADATA"),
        format!("Metadata-Version: 2.4\nName: kernels\nVersion: {version}\n\n"),
    )
    .unwrap();
}

struct Setup {
    _dir: tempfile::TempDir,
    project: PathBuf,
    cache: PathBuf,
    venv: Option<PathBuf>,
    offline: bool,
}

impl Setup {
    /// `kernels ARGS PROJECT` in this state, with no `python3` on PATH.
    fn run(&self, server: &Server, args: &[String]) -> Output {
        let endpoint = if self.offline {
            "http://127.0.0.1:9"
        } else {
            server.endpoint.as_str()
        };
        let mut cmd: Command = common::kernels(endpoint, &self.cache);
        cmd.env("PATH", self.cache.join("empty-path"));
        if let Some(venv) = &self.venv {
            cmd.env("VIRTUAL_ENV", venv);
        }
        if self.offline {
            cmd.env("HF_HUB_OFFLINE", "1");
        }
        cmd.args(args).arg(&self.project).output().unwrap()
    }

    fn lock_text(&self) -> String {
        fs_err::read_to_string(self.project.join("kernels.lock")).unwrap()
    }
}

/// Builds `state` from scratch: lock and download, then the change.
fn setup(server: &Server, state: State) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let cache = dir.path().join("cache");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::create_dir_all(cache.join("empty-path")).unwrap();
    let runtime = |v: &str| format!("{PROJECT}[tool.kernels]\ntarget-runtime = \"{v}\"\n\n");
    let head = match state {
        State::RuntimeChanged => runtime("0.16.2"),
        _ => PROJECT.to_owned(),
    };
    let deps = |n: u32| -> String {
        format!("{head}[tool.kernels.dependencies]\n\"kernels-test/versions\" = {n}\n")
    };
    fs_err::write(project.join("pyproject.toml"), deps(2)).unwrap();
    let mut setup = Setup {
        _dir: dir,
        project,
        cache,
        venv: None,
        offline: false,
    };
    // The wrong-format state needs a variant-hash lock (a first lock with no
    // runtime found is for the newest runtime, which 0.17.2 reads).
    let lock = match state {
        State::WrongFormat => vec!["lock", "--target-runtime", "0.16.2"],
        _ => vec!["lock"],
    };
    for args in [lock, vec!["download", "--all-variants"]] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        common::assert_ok(&setup.run(server, &args));
    }
    match state {
        State::Fresh => {}
        State::Stale => fs_err::write(
            setup.project.join("pyproject.toml"),
            deps(2) + "\"kernels-community/relu\" = 1\n",
        )
        .unwrap(),
        State::WrongFormat => {
            let venv = setup.cache.join("venv");
            fake_env(&venv, "0.17.2");
            setup.venv = Some(venv);
        }
        State::RuntimeChanged => {
            let text = fs_err::read_to_string(setup.project.join("pyproject.toml")).unwrap();
            fs_err::write(
                setup.project.join("pyproject.toml"),
                text.replace("0.16.2", "0.17.2"),
            )
            .unwrap();
        }
        State::Offline => setup.offline = true,
    }
    setup
}

fn transcript(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn every_gate_gives_one_verdict_per_state() {
    let server = Server::bundled();
    let states = [
        State::Fresh,
        State::Stale,
        State::WrongFormat,
        State::RuntimeChanged,
        State::Offline,
    ];
    let mut wrong = Vec::new();
    for state in states {
        for (gate, args) in gates() {
            let setup = setup(&server, state);
            let before = setup.lock_text();
            let output = setup.run(&server, &args);
            let after = setup.lock_text();
            let text = transcript(&output);
            let ok = match expected(state, &gate) {
                Verdict::Pass => output.status.success() && before == after,
                Verdict::Relocked => output.status.success() && before != after,
                Verdict::Fails(code, fix) => {
                    output.status.code() == Some(1)
                        && text.contains(code)
                        && text.contains(fix)
                        && before == after
                }
            };
            if !ok {
                wrong.push(format!(
                    "{state:?} / {gate}: expected {:?}\n{text}",
                    expected(state, &gate)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The fix that the wrong-format verdict names works: after it, every gate
/// passes with the runtime still installed.
#[test]
fn the_wrong_format_fix_works() {
    let server = Server::bundled();
    let setup = setup(&server, State::WrongFormat);
    let fix: Vec<String> = ["lock", "--target-runtime", "0.17.2"]
        .map(String::from)
        .to_vec();
    common::assert_ok(&setup.run(&server, &fix));
    for (gate, args) in gates() {
        let output = setup.run(&server, &args);
        assert!(
            output.status.success(),
            "{gate} after the fix:\n{}",
            transcript(&output)
        );
    }
}

/// The wrong-format fix when `pyproject.toml` has a requirement the found
/// runtime does not read (a specifier string, which 0.17 refuses): the help
/// names the edit first, and the edit plus the command it names work.
#[test]
fn the_wrong_format_fix_names_the_requirement_edit() {
    let server = Server::bundled();
    let setup = setup(&server, State::Fresh);
    let manifest = setup.project.join("pyproject.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(&manifest, text.replace("= 2", "= \">=0.1.0,<0.2\"")).unwrap();
    // A runtime that reads version specifiers writes the variant-hash lock.
    let lock = ["lock", "--target-runtime", "0.13.0"]
        .map(String::from)
        .to_vec();
    common::assert_ok(&setup.run(&server, &lock));
    let venv = setup.cache.join("venv");
    fake_env(&venv, "0.17.2");
    let setup = Setup {
        venv: Some(venv),
        ..setup
    };
    let check = ["lock", "--check", "--offline"].map(String::from).to_vec();
    let text = transcript(&setup.run(&server, &check));
    assert!(text.contains("runtime_cannot_read_lock"), "{text}");
    assert!(
        text.contains("first change the requirement of `kernels-test/versions`"),
        "{text}"
    );
    let fix = ["lock", "--target-runtime", "0.17.2"]
        .map(String::from)
        .to_vec();
    // Without the edit, the named command fails on the requirement ...
    assert_eq!(setup.run(&server, &fix).status.code(), Some(1));
    // ... with it, it works, and the gates pass.
    fs_err::write(&manifest, text_with_integer(&manifest)).unwrap();
    common::assert_ok(&setup.run(&server, &fix));
    common::assert_ok(&setup.run(&server, &check));
}

fn text_with_integer(manifest: &Path) -> String {
    fs_err::read_to_string(manifest)
        .unwrap()
        .replace("\">=0.1.0,<0.2\"", "1")
}

/// `kernels download` without a lock locks first (as `uv sync`), unless
/// `--frozen`, `--locked` or offline, which fail naming `kernels lock`.
#[test]
fn download_creates_a_missing_lock() {
    let server = Server::bundled();
    let setup = setup(&server, State::Fresh);
    let lock = setup.project.join("kernels.lock");
    let download = |extra: &[&str]| {
        let mut args = vec!["download".to_owned(), "--all-variants".to_owned()];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        setup.run(&server, &args)
    };
    for (flag, code) in [
        ("--frozen", "kernels::download::no_lock"),
        ("--locked", "kernels::lock::locked"),
        ("--offline", "kernels::download::no_lock"),
    ] {
        fs_err::remove_file(&lock).unwrap_or_default();
        let output = download(&[flag]);
        let text = transcript(&output);
        assert_eq!(output.status.code(), Some(1), "{flag}: {text}");
        assert!(
            text.contains(code) && text.contains("kernels lock"),
            "{flag}: {text}"
        );
        assert!(!lock.exists(), "{flag}");
    }
    let output = download(&[]);
    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("no ") && text.contains("locking"), "{text}");
    assert!(lock.is_file(), "{text}");
    common::assert_ok(&setup.run(&server, &["lock".into(), "--check".into()]));
}

/// One integrity policy: an unsigned variant is accepted with a note by
/// `download`, `verify --signatures` and `audit` alike, and refused by all
/// three under `require-signed = true`; `verify-signature` keeps the
/// reference's exit 1 for it and says how that differs.
#[test]
fn unsigned_gets_one_verdict_from_every_integrity_gate() {
    let server = Server::bundled();
    let setup = setup(&server, State::Fresh);
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let gates = [
        args(&["download", "--all-variants"]),
        args(&["verify", "--signatures", "--all-variants"]),
        args(&["audit"]),
    ];
    let verify_signature = || {
        let mut cmd: Command = common::kernels(&server.endpoint, &setup.cache);
        cmd.env("PATH", setup.cache.join("empty-path"))
            .current_dir(&setup.project)
            .args([
                "verify-signature",
                "kernels-test/versions",
                "2",
                "--all-variants",
            ])
            .output()
            .unwrap()
    };
    for gate in &gates {
        let output = setup.run(&server, gate);
        assert!(output.status.success(), "{gate:?}: {}", transcript(&output));
    }
    let output = verify_signature();
    let text = transcript(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("accept it with a note unless `require-signed"),
        "{text}"
    );

    let manifest = setup.project.join("pyproject.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(
        &manifest,
        text.replace(
            "[tool.kernels.dependencies]",
            "[tool.kernels]\nrequire-signed = true\n\n[tool.kernels.dependencies]",
        ),
    )
    .unwrap();
    for gate in &gates {
        let output = setup.run(&server, gate);
        let text = transcript(&output);
        assert_eq!(output.status.code(), Some(1), "{gate:?}: {text}");
        assert!(text.contains("require"), "{gate:?}: {text}");
    }
    let output = verify_signature();
    let text = transcript(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(!text.contains("accept it with a note"), "{text}");
}

/// A requirement edited after locking that the cache cannot judge (a
/// variant-hash lock, and a cache without the refs of the locked commit):
/// online, `kernels download` asks the Hub, locks again and downloads what
/// the new lock names; offline it uses the lock as it is (as every offline
/// gate accepts it), says so once, and records no ref from the edited
/// requirement. An entry the Hub finds unchanged is left as it is.
#[test]
fn download_relocks_a_requirement_the_cache_cannot_judge() {
    let server = Server::bundled();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let cache = dir.path().join("cache");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::create_dir_all(cache.join("empty-path")).unwrap();
    let manifest = project.join("pyproject.toml");
    let deps = |n: u32| {
        format!(
            "{PROJECT}[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n\"kernels-test/versions\" = {n}\n"
        )
    };
    fs_err::write(&manifest, deps(2)).unwrap();
    let mut setup = Setup {
        _dir: dir,
        project,
        cache,
        venv: None,
        offline: false,
    };
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let forget_refs = |setup: &Setup| {
        let refs = setup.cache.join("kernels--kernels-test--versions/refs");
        fs_err::remove_dir_all(&refs).unwrap_or_default();
    };
    common::assert_ok(&setup.run(&server, &args(&["lock"])));
    assert!(
        setup.lock_text().trim_start().starts_with('['),
        "variant-hash lock"
    );

    // Unchanged: the Hub says the lock is right; nothing is locked again.
    forget_refs(&setup);
    let before = setup.lock_text();
    let output = setup.run(&server, &args(&["download", "--all-variants"]));
    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    assert!(!text.contains("locking again"), "{text}");
    assert_eq!(before, setup.lock_text());

    forget_refs(&setup);
    fs_err::write(&manifest, deps(1)).unwrap();
    setup.offline = true;
    // Offline nothing decides: the lock is used as it is (as `lock --check
    // --offline` accepts it), said once, and the edited requirement's ref is
    // not recorded from it (no `refs/v1` naming v2's commit).
    let output = setup.run(&server, &args(&["download", "--all-variants", "--offline"]));
    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(
        text.matches("the cache cannot tell whether").count(),
        1,
        "{text}"
    );
    assert!(
        !setup
            .cache
            .join("kernels--kernels-test--versions/refs/v1")
            .exists(),
        "{text}"
    );
    assert_eq!(before, setup.lock_text());

    setup.offline = false;
    let output = setup.run(&server, &args(&["download", "--all-variants"]));
    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("locking again before `kernels download`"),
        "{text}"
    );
    assert_ne!(before, setup.lock_text());
    assert!(
        text.contains("Downloaded kernels-test/versions v1"),
        "{text}"
    );
    common::assert_ok(&setup.run(&server, &args(&["lock", "--check"])));
    common::assert_ok(&setup.run(&server, &args(&["lock", "--check", "--offline"])));
}
