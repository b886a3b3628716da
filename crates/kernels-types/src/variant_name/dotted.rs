//! The dotted variant grammar that reference 0.19 reads beside the legacy one
//! (`kernels/_internals/variants.py` `parse_variant`, `parse_sdk_variant`;
//! `backends.py` `parse_backend`):
//!
//! | kind | shape |
//! |---|---|
//! | Torch arch | `torch-X.Y[-cxx11\|-cxx98]-{backend}-cpython-X.Y-{abi}-{cpu}-{os}` |
//! | Torch stable ABI | `torch-stable-abi-X.Y-{backend}-cpython-X.Y-{abi}-{cpu}-{os}` |
//! | tvm-ffi arch | `tvm-ffi-X.Y-{backend}-cpython-X.Y-{abi}-{cpu}-{os}` |
//! | MLX noarch | `mlx-{backend}` (`mlx-metal`) |
//! | SDK | `sdk`, `sdk-{backend}`, `sdk-cpython-X.Y-{abi}-{cpu}-{os}`, `sdk-{backend}-cpython-X.Y-{abi}-{cpu}-{os}` |
//!
//! `{backend}` is `cuda-X.Y`, `rocm-X.Y`, `xpu-X.Y`, `cann-X.Y` (dotted
//! versions), or the versionless `cpu`, `metal`, `neuron`, `tpu`. `{abi}` is
//! `abi3` or `abi3t`; `abi3t` needs a minimum Python of 3.15 or newer.
//!
//! Every function returns why a name is refused, for the one line that says
//! it is skipped.

use super::{ArchVariant, Cpu, Grammar, NOT_A_NAME, Os};
use super::{
    Backend, CxxAbi, Framework, MinorVersion, NoarchBackend, PythonAbi, PythonTag, SdkVariant,
    VariantKind,
};

/// Parses a name of the dotted grammar; the error says what is wrong.
pub(super) fn parse(name: &str) -> Result<VariantKind, String> {
    let parts: Vec<&str> = name.split('-').collect();
    let starts_digit = |s: &str| s.starts_with(|c: char| c.is_ascii_digit());
    match parts.as_slice() {
        ["sdk", rest @ ..] => parse_sdk(rest).map(VariantKind::Sdk),
        ["mlx", first, ..] if !starts_digit(first) => {
            let backend = parts[1..].join("-");
            NoarchBackend::parse(&backend)
                .map(VariantKind::Mlx)
                .ok_or_else(|| format!("unknown MLX backend `{backend}`"))
        }
        ["torch", "stable", "abi", version, rest @ ..] => {
            let framework = Framework::TorchStableAbi(dotted_version("torch stable ABI", version)?);
            parse_arch(framework, None, rest)
        }
        ["torch", version, tag, rest @ ..]
            if starts_digit(version) && matches!(*tag, "cxx11" | "cxx98") =>
        {
            let abi = if *tag == "cxx11" {
                CxxAbi::Cxx11
            } else {
                CxxAbi::Cxx98
            };
            let framework = Framework::Torch(dotted_version("torch", version)?);
            parse_arch(framework, Some(abi), rest)
        }
        ["torch", version, rest @ ..] if starts_digit(version) => {
            let framework = Framework::Torch(dotted_version("torch", version)?);
            parse_arch(framework, None, rest)
        }
        ["tvm", "ffi", version, rest @ ..] if starts_digit(version) => {
            let framework = Framework::TvmFfi(dotted_version("tvm-ffi", version)?);
            parse_arch(framework, None, rest)
        }
        _ => Err(NOT_A_NAME.to_owned()),
    }
}

/// `X.Y` with decimal digits on both sides.
fn dotted_version(what: &str, text: &str) -> Result<MinorVersion, String> {
    let parsed = text.split_once('.').and_then(|(major, minor)| {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        (digits(major) && digits(minor))
            .then(|| Some(MinorVersion::new(major.parse().ok()?, minor.parse().ok()?)))
            .flatten()
    });
    parsed.ok_or_else(|| format!("{what} version `{text}` is not `MAJOR.MINOR`"))
}

/// `{backend}-cpython-X.Y-{abi}-{cpu}-{os}` after an arch framework.
fn parse_arch(
    framework: Framework,
    cxx_abi: Option<CxxAbi>,
    rest: &[&str],
) -> Result<VariantKind, String> {
    let (rest, cpu, os) = split_system(rest)?;
    let Some(at) = rest.iter().position(|p| *p == "cpython") else {
        return Err("no Python part (`cpython-X.Y-abi3`) before the CPU and OS".to_owned());
    };
    let python = parse_python(&rest[at..])?;
    if at == 0 {
        return Err("no backend before the Python part".to_owned());
    }
    let backend = parse_backend(&rest[..at])?;
    Ok(VariantKind::Arch(ArchVariant {
        framework,
        cxx_abi,
        backend,
        python,
        grammar: Grammar::Dotted,
        cpu,
        os,
    }))
}

/// The last two parts as CPU and OS, and what comes before them.
fn split_system<'a>(parts: &'a [&'a str]) -> Result<(&'a [&'a str], Cpu, Os), String> {
    let [rest @ .., cpu, os] = parts else {
        return Err("no CPU and OS at the end".to_owned());
    };
    let cpu = match *cpu {
        "x86_64" => Cpu::X86_64,
        "aarch64" => Cpu::Aarch64,
        other => {
            return Err(format!(
                "unknown CPU `{other}` (expected x86_64 or aarch64)"
            ));
        }
    };
    let os = match *os {
        "linux" => Os::Linux,
        "darwin" => Os::Darwin,
        "windows" => Os::Windows,
        other => {
            return Err(format!(
                "unknown OS `{other}` (expected linux, darwin or windows)"
            ));
        }
    };
    Ok((rest, cpu, os))
}

/// `cpython-X.Y-{abi}`, exactly three parts.
fn parse_python(parts: &[&str]) -> Result<PythonTag, String> {
    let ["cpython", version, abi] = parts else {
        return Err(format!(
            "Python part `{}` is not `cpython-X.Y-abi3` or `cpython-X.Y-abi3t`",
            parts.join("-")
        ));
    };
    let min = dotted_version("Python", version)?;
    let abi = match *abi {
        "abi3" => PythonAbi::Abi3,
        "abi3t" => PythonAbi::Abi3t,
        other => {
            return Err(format!(
                "unknown Python ABI `{other}` (expected abi3 or abi3t)"
            ));
        }
    };
    if abi == PythonAbi::Abi3t && min < PythonTag::ABI3T_MIN {
        return Err(format!(
            "abi3t needs Python {} or newer, the name says {min}",
            PythonTag::ABI3T_MIN
        ));
    }
    Ok(PythonTag { min, abi })
}

/// A dotted backend: `cuda-12.8`, `rocm-7.2`, `xpu-2025.3`, `cann-8.2`, or
/// `cpu`, `metal`, `neuron`, `tpu`.
fn parse_backend(parts: &[&str]) -> Result<Backend, String> {
    let backend = match parts {
        ["cpu"] => Backend::Cpu,
        ["metal"] => Backend::Metal,
        ["neuron"] => Backend::Neuron,
        ["tpu"] => Backend::Tpu,
        [family @ ("cuda" | "rocm" | "xpu" | "cann"), version] => {
            let v = dotted_version(family, version)?;
            match *family {
                "cuda" => Backend::Cuda(v),
                "rocm" => Backend::Rocm(v),
                "xpu" => Backend::Xpu(Some(v)),
                _ => Backend::Cann(v),
            }
        }
        _ => return Err(format!("unknown backend `{}`", parts.join("-"))),
    };
    Ok(backend)
}

/// The parts after `sdk`.
fn parse_sdk(rest: &[&str]) -> Result<SdkVariant, String> {
    if rest.contains(&"cpython") {
        let (rest, cpu, os) = split_system(rest)?;
        let Some(at) = rest.iter().position(|p| *p == "cpython") else {
            return Err("an SDK's Python part must come before the CPU and OS".to_owned());
        };
        let python = parse_python(&rest[at..])?;
        let backend = match &rest[..at] {
            [] => None,
            backend => Some(parse_backend(backend)?),
        };
        return Ok(SdkVariant::Compiled {
            backend,
            python,
            cpu,
            os,
        });
    }
    match rest {
        [] => Ok(SdkVariant::Bare),
        [backend] => NoarchBackend::parse(backend)
            .map(SdkVariant::Backend)
            .ok_or_else(|| format!("unknown SDK backend `{backend}`")),
        _ => {
            Err("an SDK with a backend version needs a Python part (`cpython-X.Y-abi3`)".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::BuildVariant;
    use super::*;

    fn kind(name: &str) -> VariantKind {
        *BuildVariant::parse(name).kind()
    }

    fn arch(name: &str) -> ArchVariant {
        match kind(name) {
            VariantKind::Arch(arch) => arch,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn py(major: u32, minor: u32, abi: PythonAbi) -> PythonTag {
        PythonTag {
            min: MinorVersion::new(major, minor),
            abi,
        }
    }

    #[test]
    fn torch_arch_names() {
        let v = arch("torch-2.12-cxx11-cuda-12.8-cpython-3.9-abi3-x86_64-linux");
        assert_eq!(v.framework, Framework::Torch(MinorVersion::new(2, 12)));
        assert_eq!(v.cxx_abi, Some(CxxAbi::Cxx11));
        assert_eq!(v.backend, Backend::Cuda(MinorVersion::new(12, 8)));
        assert_eq!(v.python, PythonTag::LEGACY);
        assert_eq!(v.grammar, Grammar::Dotted);
        assert_eq!((v.cpu, v.os), (Cpu::X86_64, Os::Linux));

        let v = arch("torch-2.10-cxx98-rocm-7.14-cpython-3.12-abi3-x86_64-linux");
        assert_eq!(v.cxx_abi, Some(CxxAbi::Cxx98));
        assert_eq!(v.backend, Backend::Rocm(MinorVersion::new(7, 14)));
        assert_eq!(v.python, py(3, 12, PythonAbi::Abi3));

        let v = arch("torch-2.11-metal-cpython-3.10-abi3-aarch64-darwin");
        assert_eq!(
            (v.cxx_abi, v.backend, v.os),
            (None, Backend::Metal, Os::Darwin)
        );
        let v = arch("torch-2.13-cpu-cpython-3.15-abi3t-x86_64-linux");
        assert_eq!(v.python, py(3, 15, PythonAbi::Abi3t));
        assert_eq!(
            arch("torch-2.12-xpu-2025.3-cpython-3.9-abi3-x86_64-windows").backend,
            Backend::Xpu(Some(MinorVersion::new(2025, 3)))
        );
        assert_eq!(
            arch("torch-2.9-cann-8.2-cpython-3.9-abi3-aarch64-linux").backend,
            Backend::Cann(MinorVersion::new(8, 2))
        );
        assert_eq!(
            arch("torch-2.12-neuron-cpython-3.9-abi3-x86_64-linux").backend,
            Backend::Neuron
        );
        assert_eq!(
            arch("torch-2.12-tpu-cpython-3.9-abi3-x86_64-linux").backend,
            Backend::Tpu
        );
    }

    #[test]
    fn stable_abi_and_tvm_ffi_names() {
        let v = arch("torch-stable-abi-2.11-cuda-13.0-cpython-3.9-abi3-aarch64-linux");
        assert_eq!(
            v.framework,
            Framework::TorchStableAbi(MinorVersion::new(2, 11))
        );
        assert_eq!(v.cxx_abi, None);
        assert_eq!(v.cpu, Cpu::Aarch64);
        let v = arch("tvm-ffi-0.1-cuda-12.8-cpython-3.10-abi3-x86_64-linux");
        assert_eq!(v.framework, Framework::TvmFfi(MinorVersion::new(0, 1)));
        assert_eq!(v.python.min, MinorVersion::new(3, 10));
    }

    #[test]
    fn sdk_mlx_and_cann_names() {
        assert_eq!(kind("sdk"), VariantKind::Sdk(SdkVariant::Bare));
        assert_eq!(
            kind("sdk-cuda"),
            VariantKind::Sdk(SdkVariant::Backend(NoarchBackend::Cuda))
        );
        assert_eq!(
            kind("sdk-cpython-3.12-abi3-x86_64-linux"),
            VariantKind::Sdk(SdkVariant::Compiled {
                backend: None,
                python: py(3, 12, PythonAbi::Abi3),
                cpu: Cpu::X86_64,
                os: Os::Linux,
            })
        );
        assert_eq!(
            kind("sdk-cuda-12.8-cpython-3.12-abi3-x86_64-linux"),
            VariantKind::Sdk(SdkVariant::Compiled {
                backend: Some(Backend::Cuda(MinorVersion::new(12, 8))),
                python: py(3, 12, PythonAbi::Abi3),
                cpu: Cpu::X86_64,
                os: Os::Linux,
            })
        );
        assert_eq!(kind("mlx-metal"), VariantKind::Mlx(NoarchBackend::Metal));
        assert_eq!(kind("torch-cann"), VariantKind::Noarch(NoarchBackend::Cann));
        for name in [
            "sdk",
            "mlx-metal",
            "torch-cann",
            "torch-2.12-cpu-cpython-3.9-abi3-x86_64-linux",
        ] {
            assert_eq!(
                BuildVariant::parse(name).grammar(),
                Grammar::Dotted,
                "{name}"
            );
            assert_eq!(BuildVariant::parse(name).to_string(), name);
        }
        assert_eq!(
            BuildVariant::parse("torch212-cxx11-cu128-x86_64-linux").grammar(),
            Grammar::Legacy
        );
    }

    #[test]
    fn malformed_names_say_what_is_wrong() {
        let problem = |name: &str| {
            let v = BuildVariant::parse(name);
            assert_eq!(v.kind(), &VariantKind::Unknown, "{name}");
            v.problem().unwrap()
        };
        for (name, says) in [
            (
                "torch-2.12-cuda-12.8-cpython-3.9-abi4-x86_64-linux",
                "unknown Python ABI `abi4`",
            ),
            (
                "torch-2.12-cuda-12.8-cpython-3.14-abi3t-x86_64-linux",
                "abi3t needs Python 3.15",
            ),
            ("torch-2.12-cuda-12.8-x86_64-linux", "no Python part"),
            (
                "torch-2.12-cuda-12.8-cpython-3-abi3-x86_64-linux",
                "Python version `3`",
            ),
            (
                "torch-2.12-cuda-12.8-cpython-3.9-x86_64-linux",
                "Python part `cpython-3.9`",
            ),
            (
                "torch-2.12-cuda-12.8-cpython-3.9-abi3-riscv64-linux",
                "unknown CPU `riscv64`",
            ),
            (
                "torch-2.12-cuda-12.8-cpython-3.9-abi3-x86_64-freebsd",
                "unknown OS `freebsd`",
            ),
            (
                "torch-2.12-cuda-cpython-3.9-abi3-x86_64-linux",
                "unknown backend `cuda`",
            ),
            (
                "torch-2.12-cu128-cpython-3.9-abi3-x86_64-linux",
                "unknown backend `cu128`",
            ),
            ("torch-2.12-cpython-3.9-abi3-x86_64-linux", "no backend"),
            (
                "torch-2.x-cuda-12.8-cpython-3.9-abi3-x86_64-linux",
                "torch version `2.x`",
            ),
            (
                "torch-212-cuda-12.8-cpython-3.9-abi3-x86_64-linux",
                "torch version `212`",
            ),
            (
                "torch-stable-abi-2-cuda-12.8-cpython-3.9-abi3-x86_64-linux",
                "stable ABI version",
            ),
            ("sdk-cuda-12.8", "needs a Python part"),
            ("sdk-gpu", "unknown SDK backend `gpu`"),
            (
                "sdk-cuda-12.8-cpython-3.12-abi3-x86_64",
                "unknown CPU `abi3`",
            ),
            ("mlx-cuda-x", "unknown MLX backend `cuda-x`"),
            ("csrc", "not a build-variant name"),
        ] {
            let got = problem(name);
            assert!(got.contains(says), "{name}: {got}");
        }
        // Legacy names that fail stay plain.
        assert_eq!(problem("torch-ext"), "not a build-variant name");
        assert_eq!(
            problem("torch27-cxx14-cu126-x86_64-linux"),
            "not a build-variant name"
        );
    }
}
