//! The declared targets of a project: `[[tool.kernels.targets]]` in
//! `pyproject.toml`, one table per environment the project's kernels must
//! load in.
//!
//! ```toml
//! [[tool.kernels.targets]]
//! torch = "2.8"                # MAJOR.MINOR
//! backend = "cuda-12.8"        # cuda-X.Y, rocm-X.Y, xpu-YYYY.N, cann-X.Y, metal, cpu, tpu
//! python = "3.12"              # MAJOR.MINOR
//! free-threaded = false        # a free-threaded (no-GIL) interpreter
//! os = "linux"                 # linux, darwin, windows
//! arch = "x86_64"              # x86_64, aarch64
//! cxx-abi = "cxx11"            # cxx11, cxx98 (Linux torch builds)
//! cuda-capabilities = ["9.0"]  # the GPUs of this environment
//! rocm-archs = ["gfx942"]
//! manylinux = "manylinux_2_28" # glibc floor of the image (or "2.28")
//! macos-min = "11.0"           # macOS floor (also `macos`)
//! ```
//!
//! Every key is optional. Each command takes a value from, in order: its flag
//! (`--torch-version`, `--cuda-version`, …, `--python-version`,
//! `--free-threaded`), the declared table, what the project's interpreter
//! reports, and for the Python version the lower bound of `[project]
//! requires-python`; a value none of them gives is not checked
//! (`crate::variant::python_target` for the Python part).
//!
//! `manylinux` and `macos-min` are the image a target's compiled files
//! must load on: `download` checks every ELF/Mach-O file of the chosen
//! variants against them ([`crate::abi`]).

use std::fmt;
use std::ops::Range;

use kernels_types::fit::{Capability, Target};
use kernels_types::variant_name::MinorVersion;
use toml_edit::{Item, TableLike, Value};

/// The key of the declared targets under `[tool.kernels]`.
pub const TARGETS_KEY: &str = "targets";

/// A Python `MAJOR.MINOR` version, e.g. `3.12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonVersion {
    /// `3`.
    pub major: u32,
    /// `12`.
    pub minor: u32,
}

impl PythonVersion {
    /// Parses `3.12` (a patch part, `3.12.4`, is accepted and dropped).
    ///
    /// # Errors
    /// Anything else, with what is expected.
    pub fn parse(text: &str) -> Result<PythonVersion, String> {
        let (major, minor) = major_minor(text).ok_or_else(|| {
            format!("`{text}` is not a Python version MAJOR.MINOR such as `3.12`")
        })?;
        if major != 3 {
            return Err(format!(
                "`{text}` is not a Python 3 version (MAJOR.MINOR such as `3.12`)"
            ));
        }
        Ok(PythonVersion { major, minor })
    }
}

/// Serialized as its text, `"3.12"`.
impl serde::Serialize for PythonVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// `X.Y` or `X.Y.Z` → `(X, Y)`; `None` for anything else.
fn major_minor(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    match parts.next() {
        None => Some((major, minor)),
        Some(patch) if patch.parse::<u32>().is_ok() && parts.next().is_none() => {
            Some((major, minor))
        }
        Some(_) => None,
    }
}

/// The accelerator of a declared target, as 0.19 names backends in variant
/// names (`cuda-12.8`, `rocm-7.2`, `cpu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeclaredBackend {
    /// `cuda-X.Y`.
    Cuda(MinorVersion),
    /// `rocm-X.Y`.
    Rocm(MinorVersion),
    /// `xpu-YYYY.N` (Intel oneAPI).
    Xpu(MinorVersion),
    /// `cann-X.Y` (Huawei Ascend).
    Cann(MinorVersion),
    /// `metal` (Apple silicon).
    Metal,
    /// `cpu`: no accelerator.
    Cpu,
    /// `tpu` (Google TPU).
    Tpu,
}

/// The backend names [`DeclaredBackend::parse`] knows, for messages.
const BACKENDS: &str = "`cuda-X.Y`, `rocm-X.Y`, `xpu-YYYY.N`, `cann-X.Y`, `metal`, `cpu`, `tpu`";

impl DeclaredBackend {
    /// Parses `cuda-12.8`, `rocm-7.2`, `xpu-2025.1`, `cann-8.1`, `metal`,
    /// `cpu` or `tpu`.
    ///
    /// # Errors
    /// An unknown backend, a missing or malformed version, or a version on a
    /// backend that has none.
    pub fn parse(text: &str) -> Result<DeclaredBackend, String> {
        let (name, version) = match text.split_once('-') {
            Some((name, version)) => (name, Some(version)),
            None => (text, None),
        };
        let versioned = |make: fn(MinorVersion) -> DeclaredBackend| match version {
            Some(v) => major_minor(v)
                .map(|(major, minor)| make(MinorVersion::new(major, minor)))
                .ok_or_else(|| format!("`{text}`: `{v}` is not a version MAJOR.MINOR")),
            None => Err(format!(
                "`{text}` needs its version, for example `{name}-{}`",
                example_version(name)
            )),
        };
        let bare = |backend: DeclaredBackend| match version {
            None => Ok(backend),
            Some(_) => Err(format!(
                "`{text}`: `{name}` takes no version, write `{name}`"
            )),
        };
        match name {
            "cuda" => versioned(DeclaredBackend::Cuda),
            "rocm" => versioned(DeclaredBackend::Rocm),
            "xpu" => versioned(DeclaredBackend::Xpu),
            "cann" => versioned(DeclaredBackend::Cann),
            "metal" => bare(DeclaredBackend::Metal),
            "cpu" => bare(DeclaredBackend::Cpu),
            "tpu" => bare(DeclaredBackend::Tpu),
            _ => Err(format!("`{text}` is not a backend (known: {BACKENDS})")),
        }
    }
}

/// A version to show in the fix for a versioned backend named without one.
fn example_version(name: &str) -> &'static str {
    match name {
        "cuda" => "12.8",
        "rocm" => "7.2",
        "xpu" => "2025.1",
        _ => "8.1",
    }
}

impl fmt::Display for DeclaredBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeclaredBackend::Cuda(v) => write!(f, "cuda-{v}"),
            DeclaredBackend::Rocm(v) => write!(f, "rocm-{v}"),
            DeclaredBackend::Xpu(v) => write!(f, "xpu-{v}"),
            DeclaredBackend::Cann(v) => write!(f, "cann-{v}"),
            DeclaredBackend::Metal => f.write_str("metal"),
            DeclaredBackend::Cpu => f.write_str("cpu"),
            DeclaredBackend::Tpu => f.write_str("tpu"),
        }
    }
}

/// One `[[tool.kernels.targets]]` table: an environment the project's kernels
/// must load in. Absent keys are `None` (or empty): the flag, the project's
/// interpreter or the default decides them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredTarget {
    /// `torch = "2.8"`: `(major, minor)`.
    pub torch: Option<(u32, u32)>,
    /// `backend = "cuda-12.8"`.
    pub backend: Option<DeclaredBackend>,
    /// `python = "3.12"`.
    pub python: Option<PythonVersion>,
    /// `free-threaded = true`.
    pub free_threaded: Option<bool>,
    /// `os = "linux"` (`linux`, `darwin`, `windows`).
    pub os: Option<String>,
    /// `arch = "x86_64"` (`x86_64`, `aarch64`).
    pub arch: Option<String>,
    /// `cxx-abi = "cxx11"`: `Some(true)` for cxx11, `Some(false)` for cxx98.
    pub cxx11_abi: Option<bool>,
    /// `cuda-capabilities` then `rocm-archs`: this environment's GPUs.
    pub gpus: Vec<Target>,
    /// `manylinux = "manylinux_2_28"` (or `"2.28"`): the glibc floor,
    /// `(major, minor)`.
    pub manylinux: Option<(u32, u32)>,
    /// `macos-min = "11.0"` (or `macos`): the macOS floor, `(major, minor)`.
    pub macos: Option<(u32, u32)>,
}

impl DeclaredTarget {
    /// The command-line flags that select this environment for one run
    /// (`--torch-version 2.8 --cuda-version 12.8 --python-version 3.12`), or
    /// `None` when it names no torch or a backend no flag selects (CANN, TPU).
    pub fn selecting_flags(&self) -> Option<String> {
        let (major, minor) = self.torch?;
        let backend = match self.backend.as_ref()? {
            DeclaredBackend::Cuda(v) => format!("--cuda-version {v}"),
            DeclaredBackend::Rocm(v) => format!("--rocm-version {v}"),
            DeclaredBackend::Xpu(v) => format!("--xpu-version {v}"),
            DeclaredBackend::Metal => "--metal".to_owned(),
            DeclaredBackend::Cpu => "--cpu".to_owned(),
            DeclaredBackend::Cann(_) | DeclaredBackend::Tpu => return None,
        };
        let mut flags = format!("--torch-version {major}.{minor} {backend}");
        if let Some(python) = &self.python {
            flags.push_str(&format!(" --python-version {python}"));
        }
        Some(flags)
    }
}

/// A key of a declared target that cannot be used: where it is, what is
/// wrong, and the fix. The manifest reader turns it into its diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetProblem {
    /// The key as the message names it: `targets`, `targets[2].backend`.
    pub key: String,
    /// Byte range of the value in the file, when known.
    pub span: Option<Range<usize>>,
    /// What is wrong.
    pub what: String,
    /// How to fix it.
    pub help: String,
}

/// The keys a declared target may hold.
const TARGET_KEYS: &[&str] = &[
    "torch",
    "backend",
    "python",
    "free-threaded",
    "os",
    "arch",
    "cxx-abi",
    "cuda-capabilities",
    "rocm-archs",
    "manylinux",
    "macos",
    "macos-min",
];

/// Parses `[tool.kernels] targets`: an array of tables (`[[tool.kernels.targets]]`)
/// or an inline array of inline tables.
///
/// # Errors
/// The first problem found (not an array of tables, an unknown key, a value
/// of the wrong type, an unknown backend, a malformed version).
pub fn parse_targets(item: &Item) -> Result<Vec<DeclaredTarget>, TargetProblem> {
    let not_tables = || {
        TargetProblem {
        key: TARGETS_KEY.to_owned(),
        span: item.span(),
        what: "expected an array of tables".to_owned(),
        help: "declare each environment as a `[[tool.kernels.targets]]` table, for example `torch = \"2.8\"` and `backend = \"cuda-12.8\"` under it".to_owned(),
    }
    };
    let tables: Vec<&dyn TableLike> = match item {
        Item::ArrayOfTables(array) => array.iter().map(|t| t as &dyn TableLike).collect(),
        Item::Value(Value::Array(array)) => array
            .iter()
            .map(|v| v.as_inline_table().map(|t| t as &dyn TableLike))
            .collect::<Option<_>>()
            .ok_or_else(not_tables)?,
        _ => return Err(not_tables()),
    };
    tables
        .into_iter()
        .enumerate()
        .map(|(index, table)| parse_target(index + 1, table))
        .collect()
}

/// One declared target being read: the `index`-th (from 1) table of the file.
struct Keys<'t> {
    index: usize,
    table: &'t dyn TableLike,
}

impl<'t> Keys<'t> {
    /// The problem of `key`, pointing at `item`.
    fn problem(&self, key: &str, item: Option<&Item>, what: String, help: &str) -> TargetProblem {
        TargetProblem {
            key: format!("{TARGETS_KEY}[{}].{key}", self.index),
            span: item.and_then(Item::span),
            what,
            help: help.to_owned(),
        }
    }

    /// Fails on the first key a target does not take.
    fn known_keys(&self) -> Result<(), TargetProblem> {
        let Some((key, item)) = self.table.iter().find(|(k, _)| !TARGET_KEYS.contains(k)) else {
            return Ok(());
        };
        let known = TARGET_KEYS.join("`, `");
        let help = match crate::lock::manifest::did_you_mean(key, TARGET_KEYS) {
            Some(best) => format!("did you mean `{best}`? A target takes `{known}`"),
            None => format!("remove the key; a target takes `{known}`"),
        };
        let span = self.table.get_key_value(key).and_then(|(k, _)| k.span());
        Err(TargetProblem {
            span: span.or_else(|| item.span()),
            ..self.problem(key, None, "unknown key".to_owned(), &help)
        })
    }

    /// The string value of `key` with its item; `None` when absent.
    fn string(&self, key: &str, help: &str) -> Result<Option<(&'t str, &'t Item)>, TargetProblem> {
        let Some(item) = self.table.get(key) else {
            return Ok(None);
        };
        match item.as_str() {
            Some(value) => Ok(Some((value, item))),
            None => Err(self.problem(
                key,
                Some(item),
                format!(
                    "expected a string, found {}",
                    crate::lock::manifest::type_name(item)
                ),
                help,
            )),
        }
    }

    /// A `MAJOR.MINOR` string of `what` (`torch`, `manylinux`, `macOS`).
    fn version(
        &self,
        key: &str,
        what: &str,
        example: &str,
    ) -> Result<Option<(u32, u32)>, TargetProblem> {
        let help =
            format!("write the {what} version as MAJOR.MINOR, for example `{key} = \"{example}\"`");
        let Some((value, item)) = self.string(key, &help)? else {
            return Ok(None);
        };
        major_minor(value).map(Some).ok_or_else(|| {
            self.problem(
                key,
                Some(item),
                format!("`{value}` is not a {what} version MAJOR.MINOR"),
                &help,
            )
        })
    }

    /// A string that `parse` reads.
    fn parsed<T>(
        &self,
        key: &str,
        help: &str,
        parse: fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, TargetProblem> {
        let Some((value, item)) = self.string(key, help)? else {
            return Ok(None);
        };
        parse(value)
            .map(Some)
            .map_err(|what| self.problem(key, Some(item), what, help))
    }

    /// A string that must be one of `allowed`.
    fn choice(&self, key: &str, allowed: &[&str]) -> Result<Option<String>, TargetProblem> {
        let help = format!(
            "write one of `{}`, for example `{key} = \"{}\"`",
            allowed.join("`, `"),
            allowed[0]
        );
        let Some((value, item)) = self.string(key, &help)? else {
            return Ok(None);
        };
        if allowed.contains(&value) {
            Ok(Some(value.to_owned()))
        } else {
            Err(self.problem(key, Some(item), format!("unknown value `{value}`"), &help))
        }
    }

    /// `free-threaded`: a boolean.
    fn free_threaded(&self) -> Result<Option<bool>, TargetProblem> {
        let Some(item) = self.table.get("free-threaded") else {
            return Ok(None);
        };
        item.as_bool().map(Some).ok_or_else(|| {
            self.problem(
                "free-threaded",
                Some(item),
                format!(
                    "expected `true` or `false`, found {}",
                    crate::lock::manifest::type_name(item)
                ),
                "write `free-threaded = true` for a free-threaded (no-GIL) Python, else leave it out",
            )
        })
    }

    /// `cuda-capabilities` then `rocm-archs`.
    fn gpus(&self) -> Result<Vec<Target>, TargetProblem> {
        let mut gpus = Vec::new();
        for (key, help) in [
            (
                "cuda-capabilities",
                "list CUDA compute capabilities as strings, for example `cuda-capabilities = [\"9.0\"]`",
            ),
            (
                "rocm-archs",
                "list ROCm GPU archs, for example `rocm-archs = [\"gfx942\"]`",
            ),
        ] {
            let Some(item) = self.table.get(key) else {
                continue;
            };
            let fail = |what: String| self.problem(key, Some(item), what, help);
            let array = item.as_array().ok_or_else(|| {
                fail(format!(
                    "expected an array of strings, found {}",
                    crate::lock::manifest::type_name(item)
                ))
            })?;
            for value in array {
                let text = value
                    .as_str()
                    .ok_or_else(|| fail("expected strings".to_owned()))?;
                let target = if key == "rocm-archs" {
                    Target::rocm(text).map_err(|err| err.to_string())
                } else {
                    text.parse::<Capability>()
                        .map(Target::Cuda)
                        .map_err(|err| err.to_string())
                };
                gpus.push(target.map_err(|err| fail(format!("`{text}`: {err}")))?);
            }
        }
        Ok(gpus)
    }
}

/// One declared target, the `index`-th (from 1) in the file.
fn parse_target(index: usize, table: &dyn TableLike) -> Result<DeclaredTarget, TargetProblem> {
    let keys = Keys { index, table };
    keys.known_keys()?;
    Ok(DeclaredTarget {
        torch: keys.version("torch", "torch", "2.8")?,
        backend: keys.parsed(
            "backend",
            &format!("write one of {BACKENDS}, for example `backend = \"cuda-12.8\"`"),
            DeclaredBackend::parse,
        )?,
        python: keys.parsed(
            "python",
            "write the Python version as MAJOR.MINOR, for example `python = \"3.12\"`",
            PythonVersion::parse,
        )?,
        free_threaded: keys.free_threaded()?,
        os: keys.choice("os", &["linux", "darwin", "windows"])?,
        arch: keys.choice("arch", &["x86_64", "aarch64"])?,
        cxx11_abi: keys
            .choice("cxx-abi", &["cxx11", "cxx98"])?
            .map(|abi| abi == "cxx11"),
        gpus: keys.gpus()?,
        manylinux: keys.parsed(
            "manylinux",
            "write the image's manylinux target, for example `manylinux = \"manylinux_2_28\"` (or its glibc, `\"2.28\"`)",
            crate::abi::parse_manylinux,
        )?,
        macos: match keys.version("macos-min", "macOS", "11.0")? {
            Some(min) => Some(min),
            None => keys.version("macos", "macOS", "26.0")?,
        },
    })
}

impl DeclaredTarget {
    /// The backend when it is one that [`DeclaredTarget::overrides`] cannot
    /// select for (`tpu`, `cann-X.Y`).
    pub fn unselectable_backend(&self) -> Option<DeclaredBackend> {
        self.backend
            .filter(|b| matches!(b, DeclaredBackend::Cann(_) | DeclaredBackend::Tpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(toml: &str) -> Result<Vec<DeclaredTarget>, TargetProblem> {
        // `Document` keeps the spans that errors point at.
        let doc = toml_edit::Document::parse(toml).unwrap();
        parse_targets(&doc.as_item()["tool"]["kernels"][TARGETS_KEY])
    }

    #[test]
    fn parses_every_key() {
        let parsed = targets(
            r#"
[[tool.kernels.targets]]
torch = "2.8"
backend = "cuda-12.8"
python = "3.12"
free-threaded = true
os = "linux"
arch = "x86_64"
cxx-abi = "cxx98"
cuda-capabilities = ["9.0"]
rocm-archs = ["gfx942"]
manylinux = "manylinux_2_28"
macos = "26.0"

[[tool.kernels.targets]]
backend = "metal"
manylinux = "2.39"
macos-min = "11.0"
"#,
        )
        .unwrap();
        assert_eq!(parsed.len(), 2);
        let first = &parsed[0];
        assert_eq!(first.torch, Some((2, 8)));
        assert_eq!(
            first.backend,
            Some(DeclaredBackend::Cuda(MinorVersion::new(12, 8)))
        );
        assert_eq!(
            first.python,
            Some(PythonVersion {
                major: 3,
                minor: 12
            })
        );
        assert_eq!(first.free_threaded, Some(true));
        assert_eq!(first.cxx11_abi, Some(false));
        assert_eq!(first.gpus.len(), 2);
        assert_eq!(
            (first.manylinux, first.macos),
            (Some((2, 28)), Some((26, 0)))
        );
        let overrides = crate::variant::EnvOverrides::of_declared(first);
        assert_eq!(overrides.cuda.as_deref(), Some("12.8"));
        assert_eq!(overrides.torch, Some((2, 8)));
        assert!(crate::variant::EnvOverrides::of_declared(&parsed[1]).metal);
        assert_eq!(
            (parsed[1].manylinux, parsed[1].macos),
            (Some((2, 39)), Some((11, 0)))
        );
        let inline = targets("[tool.kernels]\ntargets = [{ backend = \"cpu\" }]\n").unwrap();
        assert_eq!(inline[0].backend, Some(DeclaredBackend::Cpu));
    }

    #[test]
    fn bad_values_name_the_key_and_the_fix() {
        let bad = |toml: &str| targets(toml).unwrap_err();
        let unknown = bad("[[tool.kernels.targets]]\nbackend = \"cuda12\"\n");
        assert_eq!(unknown.key, "targets[1].backend");
        assert!(unknown.what.contains("not a backend"), "{}", unknown.what);
        assert!(unknown.span.is_some());
        let versionless = bad("[[tool.kernels.targets]]\nbackend = \"rocm\"\n");
        assert!(
            versionless.what.contains("`rocm-7.2`"),
            "{}",
            versionless.what
        );
        let torch = bad("[[tool.kernels.targets]]\ntorch = \"2.x\"\n");
        assert_eq!(torch.key, "targets[1].torch");
        let python = bad("[[tool.kernels.targets]]\n[[tool.kernels.targets]]\npython = 3.12\n");
        assert_eq!(python.key, "targets[2].python");
        assert!(python.what.contains("a float"), "{}", python.what);
        let key = bad("[[tool.kernels.targets]]\npyton = \"3.12\"\n");
        assert!(key.help.contains("did you mean `python`"), "{}", key.help);
        let table = bad("[tool.kernels]\ntargets = \"cuda\"\n");
        assert_eq!(table.key, "targets");
        assert!(DeclaredBackend::parse("cpu-1.0").is_err());
        assert!(PythonVersion::parse("2.7").is_err());
    }
}
