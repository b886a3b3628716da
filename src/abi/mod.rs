//! The ABI fit of a variant's compiled files (ELF and Mach-O shared
//! objects) for the images a project declares: the glibc floor of a Linux
//! image (`manylinux_2_28`), the macOS minimum of a Mac one.
//!
//! The symbol-version and minimum-OS rules are those of kernel-builder's
//! `check-abi`, through the crates.io crate `kernel-abi-check` (its
//! manylinux policy table: the `GLIBC`, `GLIBCXX`, `CXXABI`, … versions each
//! `manylinux_X_Y` allows). A file without a symbol table (stripped) is read
//! from its `.gnu.version_r` needs instead, for the `GLIBC_X.Y` versions
//! alone. Python abi3 and torch stable-ABI findings are warnings, and only
//! where the variant's name or the file's name claims that ABI: the runtime
//! loads such a file on the Python and torch it was built for.
//!
//! Nothing here reads a file system but [`host_glibc`]; callers hand over
//! the bytes.

mod elf;

use std::fmt;

use kernel_abi_check::{
    MacOSViolation, ManylinuxViolation, PythonAbiViolation, TorchStableAbiViolation, Version,
};
use kernels_types::variant_name::{BuildVariant, Framework, Grammar, PythonAbi};
use object::Object;

pub use elf::host_glibc;

/// An image a project's compiled kernels must load on: its glibc floor
/// and/or its macOS minimum, from `[tool.kernels] manylinux`/`macos-min`,
/// a `[[tool.kernels.targets]]` entry or `--manylinux`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageTarget {
    /// `manylinux_X_Y`: the image's glibc `(X, Y)`.
    pub manylinux: Option<(u32, u32)>,
    /// The macOS minimum `(major, minor)`.
    pub macos: Option<(u32, u32)>,
}

impl ImageTarget {
    /// Whether it names neither a glibc nor a macOS floor.
    pub fn is_empty(&self) -> bool {
        self.manylinux.is_none() && self.macos.is_none()
    }
}

impl fmt::Display for ImageTarget {
    /// `manylinux_2_28`, `macOS 11.0`, or both joined by ` + `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some((x, y)) = self.manylinux {
            parts.push(format!("manylinux_{x}_{y}"));
        }
        if let Some((x, y)) = self.macos {
            parts.push(format!("macOS {x}.{y}"));
        }
        f.write_str(&parts.join(" + "))
    }
}

/// Parses a glibc floor: `manylinux_2_28`, `2.28`, or the legacy aliases
/// `manylinux2014` (2.17), `manylinux2010` (2.12), `manylinux1` (2.5).
///
/// # Errors
/// Anything else, with what is expected.
pub fn parse_manylinux(text: &str) -> Result<(u32, u32), String> {
    let text = text.trim();
    let alias = match text {
        "manylinux2014" => Some((2, 17)),
        "manylinux2010" => Some((2, 12)),
        "manylinux1" => Some((2, 5)),
        _ => None,
    };
    if let Some(version) = alias {
        return Ok(version);
    }
    let dotted = match text.strip_prefix("manylinux_") {
        Some(rest) => rest.replacen('_', ".", 1),
        None => text.to_owned(),
    };
    let mut parts = dotted.split('.');
    match (
        parts.next().and_then(|p| p.parse().ok()),
        parts.next().and_then(|p| p.parse().ok()),
        parts.next(),
    ) {
        (Some(major), Some(minor), None) => Ok((major, minor)),
        _ => Err(format!(
            "`{text}` is not a manylinux target such as `manylinux_2_28` (or the glibc version `2.28`)"
        )),
    }
}

/// Why an image could not load a compiled file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbiProblem {
    /// A symbol version above what the image's glibc family provides.
    Needs {
        /// The symbol, when the file names it (a stripped file does not).
        symbol: Option<String>,
        /// The version it needs: `GLIBC_2.34`.
        version: String,
        /// The image.
        target: ImageTarget,
        /// The lowest manylinux that provides it, when a glibc version.
        fits: Option<(u32, u32)>,
    },
    /// A Mach-O file built for a newer macOS than the image.
    MacosMinimum {
        /// The file's minimum, `13.0`.
        built_for: String,
        /// The image.
        target: ImageTarget,
    },
    /// A Mach-O file that records no minimum macOS.
    MacosUnknown {
        /// The image.
        target: ImageTarget,
    },
    /// A file of another CPU architecture than its variant's.
    Arch {
        /// The file's architecture, `aarch64`.
        found: String,
        /// The variant's, `x86_64`.
        expected: String,
    },
    /// Not a shared object that can be read: truncated, not ELF/Mach-O, or
    /// an architecture the policy does not know.
    Unreadable {
        /// What it is, as one line.
        what: String,
    },
}

impl fmt::Display for AbiProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiProblem::Needs {
                symbol,
                version,
                target,
                fits,
            } => {
                match symbol {
                    Some(symbol) => write!(f, "needs `{symbol}@{version}`")?,
                    None => write!(f, "needs `{version}`")?,
                }
                write!(f, ", which {target} does not provide")?;
                if let Some((x, y)) = fits {
                    write!(f, " (manylinux_{x}_{y} or newer would)")?;
                }
                Ok(())
            }
            AbiProblem::MacosMinimum { built_for, target } => write!(
                f,
                "is built for macOS {built_for} or newer, above {target} (macOS {built_for} would fit)"
            ),
            AbiProblem::MacosUnknown { target } => write!(
                f,
                "records no minimum macOS, so it cannot be shown to load on {target}"
            ),
            AbiProblem::Arch { found, expected } => {
                write!(
                    f,
                    "is built for {found}, not {expected} as its variant says"
                )
            }
            AbiProblem::Unreadable { what } => f.write_str(what),
        }
    }
}

/// An ABI the file's or variant's name claims but the file does not keep to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbiWarning {
    /// A Python symbol outside the limited API (abi3), or newer than the
    /// Python the name claims.
    Abi3 {
        /// The symbol.
        symbol: String,
        /// `not in the limited API` or `added in Python 3.10`.
        why: String,
    },
    /// A torch symbol outside the stable ABI, or newer than the claimed
    /// torch.
    TorchStable {
        /// The symbol (demangled).
        symbol: String,
        /// `not in the stable ABI` or `added in torch 2.10`.
        why: String,
    },
}

impl fmt::Display for AbiWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiWarning::Abi3 { symbol, why } => {
                write!(f, "claims Python abi3 but uses `{symbol}` ({why})")
            }
            AbiWarning::TorchStable { symbol, why } => {
                write!(f, "claims the torch stable ABI but uses `{symbol}` ({why})")
            }
        }
    }
}

/// The verdict on one compiled file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileVerdict {
    /// Why a target image could not load it; empty when every one can.
    pub problems: Vec<AbiProblem>,
    /// Claimed ABIs it does not keep to.
    pub warnings: Vec<AbiWarning>,
}

/// At most this many symbols are named per file and target; the rest are
/// counted in the last.
const MAX_NAMED: usize = 3;

/// Whether `path` (a repository path) with first bytes `head` is a compiled
/// file to check: ELF or Mach-O by its magic, or named `*.so`/`*.dylib`
/// (whatever it holds: a `.so` that is not a shared object is reported).
pub fn is_compiled(path: &str, head: &[u8]) -> bool {
    // Universal (fat) Mach-O shares `cafebabe` with Java class files: only
    // by name (`.so`, `.dylib`) is such a file checked.
    const MAGICS: [[u8; 4]; 5] = [
        *b"\x7fELF",
        [0xfe, 0xed, 0xfa, 0xce],
        [0xfe, 0xed, 0xfa, 0xcf],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xcf, 0xfa, 0xed, 0xfe],
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    let by_name = name.ends_with(".so") || name.contains(".so.") || name.ends_with(".dylib");
    by_name || head.get(..4).is_some_and(|h| MAGICS.iter().any(|m| m == h))
}

/// Checks one compiled file of `variant` against every image of `targets`.
/// `path` is the file's repository path (its name decides an abi3 claim).
/// Never fails: a file that cannot be read is an [`AbiProblem::Unreadable`].
pub fn check_file(path: &str, bytes: &[u8], variant: &str, targets: &[ImageTarget]) -> FileVerdict {
    let mut verdict = FileVerdict::default();
    let file = match object::File::parse(bytes) {
        Ok(file) => file,
        Err(err) => {
            verdict.problems.push(AbiProblem::Unreadable {
                what: unreadable(bytes, &err.to_string()),
            });
            return verdict;
        }
    };
    let build = BuildVariant::parse(variant);
    let arch = build.arch();
    if let Some(expected) = arch.map(|a| a.cpu.as_str())
        && let Some(found) = arch_name(file.architecture())
        && found != expected
    {
        verdict.problems.push(AbiProblem::Arch {
            found: found.to_owned(),
            expected: expected.to_owned(),
        });
        return verdict;
    }
    for target in targets {
        match file.format() {
            object::BinaryFormat::Elf => {
                if let Some(glibc) = target.manylinux {
                    verdict
                        .problems
                        .extend(manylinux_problems(&file, bytes, glibc, *target));
                }
            }
            object::BinaryFormat::MachO => {
                if let Some(macos) = target.macos {
                    verdict
                        .problems
                        .extend(macos_problems(&file, macos, *target));
                }
            }
            _ => {}
        }
    }
    verdict.problems.dedup();
    let claims_abi3 = path.contains(".abi3.")
        || arch.is_some_and(|a| a.grammar == Grammar::Dotted && a.python.abi == PythonAbi::Abi3);
    if claims_abi3 {
        let min = arch.map_or((3, 9), |a| (a.python.min.major, a.python.min.minor));
        verdict.warnings.extend(abi3_warnings(&file, min));
    }
    if let Some(Framework::TorchStableAbi(torch)) = arch.map(|a| a.framework) {
        verdict
            .warnings
            .extend(torch_warnings(&file, (torch.major, torch.minor)));
    }
    verdict
}

/// One line for bytes `object` cannot parse: truncated ELF/Mach-O or not one.
fn unreadable(bytes: &[u8], err: &str) -> String {
    let head = bytes.get(..4).unwrap_or(bytes);
    if head == b"\x7fELF" {
        format!("is a truncated or malformed ELF file ({err})")
    } else if bytes.len() < 4 {
        format!("is not a shared object ({} bytes)", bytes.len())
    } else {
        "is not an ELF or Mach-O shared object".to_owned()
    }
}

/// The CPU as variant names write it; `None` for one they do not name.
fn arch_name(arch: object::Architecture) -> Option<&'static str> {
    match arch {
        object::Architecture::X86_64 => Some("x86_64"),
        object::Architecture::Aarch64 => Some("aarch64"),
        object::Architecture::I386 => Some("i686"),
        object::Architecture::Arm => Some("arm"),
        object::Architecture::PowerPc64 => Some("ppc64"),
        object::Architecture::S390x => Some("s390x"),
        object::Architecture::Riscv64 => Some("riscv64"),
        _ => None,
    }
}

/// The symbol versions of an ELF file above what `manylinux_<glibc>`
/// allows: by the crate's policy through the symbol table, else (a
/// stripped file, a manylinux newer than the policy knows) the `GLIBC_X.Y`
/// needs of `.gnu.version_r`.
fn manylinux_problems(
    file: &object::File<'_>,
    bytes: &[u8],
    glibc: (u32, u32),
    target: ImageTarget,
) -> Vec<AbiProblem> {
    let name = format!("manylinux_{}_{}", glibc.0, glibc.1);
    let has_symtab = file.section_by_name(".symtab").is_some();
    let checked = has_symtab
        .then(|| {
            kernel_abi_check::check_manylinux(
                &name,
                file.architecture(),
                file.endianness(),
                file.symbols(),
            )
        })
        .and_then(Result::ok);
    let mut problems: Vec<AbiProblem> = match checked {
        Some(violations) => violations
            .into_iter()
            .map(|ManylinuxViolation::Symbol { name, dep, version }| {
                let fits = glibc_fits(&dep, &version);
                AbiProblem::Needs {
                    symbol: Some(name),
                    version: format!("{dep}_{version}"),
                    target,
                    fits,
                }
            })
            .collect(),
        None => match elf::needed_versions(bytes) {
            Ok(needs) => needs
                .into_iter()
                .filter(|v| {
                    glibc_fits("GLIBC", v.strip_prefix("GLIBC_").unwrap_or("")) > Some(glibc)
                })
                .map(|version| AbiProblem::Needs {
                    symbol: None,
                    fits: glibc_fits("GLIBC", version.strip_prefix("GLIBC_").unwrap_or("")),
                    version,
                    target,
                })
                .collect(),
            Err(what) => vec![AbiProblem::Unreadable { what }],
        },
    };
    shorten(&mut problems);
    problems
}

/// Keeps the highest version of each family and [`MAX_NAMED`] problems.
fn shorten(problems: &mut Vec<AbiProblem>) {
    let key = |p: &AbiProblem| match p {
        AbiProblem::Needs { version, .. } => {
            let (family, number) = version.split_once('_').unwrap_or((version, ""));
            let parts: Vec<u32> = number.split('.').filter_map(|n| n.parse().ok()).collect();
            (family.to_owned(), std::cmp::Reverse(parts))
        }
        _ => (String::new(), std::cmp::Reverse(Vec::new())),
    };
    problems.sort_by_key(key);
    problems.truncate(MAX_NAMED);
}

/// The manylinux that provides `GLIBC_<version>`: `(2, 34)` for `2.34`.
fn glibc_fits(dep: &str, version: &str) -> Option<(u32, u32)> {
    if dep != "GLIBC" {
        return None;
    }
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// A Mach-O file's minimum macOS above `macos`, or none recorded.
fn macos_problems(
    file: &object::File<'_>,
    macos: (u32, u32),
    target: ImageTarget,
) -> Vec<AbiProblem> {
    let version = Version::from(vec![macos.0 as usize, macos.1 as usize]);
    match kernel_abi_check::check_macos(file, &version) {
        Ok(violations) => violations
            .into_iter()
            .map(|v| match v {
                MacOSViolation::IncompatibleMinOS { version } => AbiProblem::MacosMinimum {
                    built_for: version.to_string(),
                    target,
                },
                MacOSViolation::MissingMinOS => AbiProblem::MacosUnknown { target },
            })
            .collect(),
        Err(err) => vec![AbiProblem::Unreadable {
            what: format!("has unreadable Mach-O load commands ({err})"),
        }],
    }
}

/// The abi3 findings of a file that claims the limited API of Python `min`.
fn abi3_warnings(file: &object::File<'_>, min: (u32, u32)) -> Vec<AbiWarning> {
    let version = Version::from(vec![min.0 as usize, min.1 as usize]);
    let found = kernel_abi_check::check_python_abi(&version, file.format(), file.symbols());
    let mut warnings: Vec<AbiWarning> = found
        .into_iter()
        .flatten()
        .map(|v| match v {
            PythonAbiViolation::IncompatibleAbi3Symbol { name, added } => AbiWarning::Abi3 {
                symbol: name,
                why: format!("added in Python {added}"),
            },
            PythonAbiViolation::NonAbi3Symbol { name } => AbiWarning::Abi3 {
                symbol: name,
                why: "not in the limited API".to_owned(),
            },
        })
        .collect();
    warnings.truncate(MAX_NAMED);
    warnings
}

/// The stable-ABI findings of a file that claims torch `torch`'s stable ABI.
fn torch_warnings(file: &object::File<'_>, torch: (u32, u32)) -> Vec<AbiWarning> {
    let version = Version::from(vec![torch.0 as usize, torch.1 as usize]);
    let found = kernel_abi_check::check_torch_stable_abi(&version, file.format(), file.symbols());
    let mut warnings: Vec<AbiWarning> = found
        .into_iter()
        .flatten()
        .map(|v| match v {
            TorchStableAbiViolation::IncompatibleStableAbiSymbol { name, added } => {
                AbiWarning::TorchStable {
                    symbol: name,
                    why: format!("added in torch {added}"),
                }
            }
            TorchStableAbiViolation::NonStableAbiSymbol { name } => AbiWarning::TorchStable {
                symbol: name,
                why: "not in the stable ABI".to_owned(),
            },
        })
        .collect();
    warnings.truncate(MAX_NAMED);
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manylinux_names_parse() {
        assert_eq!(parse_manylinux("manylinux_2_28"), Ok((2, 28)));
        assert_eq!(parse_manylinux("2.39"), Ok((2, 39)));
        assert_eq!(parse_manylinux("manylinux2014"), Ok((2, 17)));
        assert!(parse_manylinux("musllinux_1_2").is_err());
        assert!(parse_manylinux("2.x").is_err());
    }

    #[test]
    fn bad_input_is_one_line_never_a_panic() {
        let target = [ImageTarget {
            manylinux: Some((2, 28)),
            macos: None,
        }];
        let variant = "torch28-cxx11-cu128-x86_64-linux";
        let text = check_file("build/v/_ops.so", b"not a shared object", variant, &target);
        assert_eq!(
            text.problems[0].to_string(),
            "is not an ELF or Mach-O shared object"
        );
        let truncated = check_file("build/v/_ops.so", b"\x7fELF\x02\x01", variant, &target);
        assert!(
            truncated.problems[0]
                .to_string()
                .starts_with("is a truncated or malformed ELF file"),
            "{:?}",
            truncated.problems
        );
        assert!(is_compiled("build/v/_ops.abi3.so", b""));
        assert!(is_compiled("build/v/libx.so.1", b""));
        assert!(!is_compiled("build/v/__init__.py", b"impo"));
        assert!(is_compiled("build/v/blob", b"\x7fELF"));
    }

    #[test]
    fn the_fix_names_the_manylinux_that_fits() {
        let problem = AbiProblem::Needs {
            symbol: Some("pthread_create".into()),
            version: "GLIBC_2.34".into(),
            target: ImageTarget {
                manylinux: Some((2, 28)),
                macos: None,
            },
            fits: glibc_fits("GLIBC", "2.34"),
        };
        assert_eq!(
            problem.to_string(),
            "needs `pthread_create@GLIBC_2.34`, which manylinux_2_28 does not provide (manylinux_2_34 or newer would)"
        );
    }
}
