//! The 0.19 resolver (`kernels/_internals/variants.py` `_check_variants`,
//! `_sort_variants`): both grammars, SDK and MLX variants, the Python part
//! checked against the target's Python. Its order, best first:
//!
//! 0. Torch stable-ABI arch builds (newest ABI first);
//! 1. Torch arch builds (untagged before cxx-tagged);
//! 2. tvm-ffi arch builds;
//! 3. compiled SDKs (a backend's before the backend-agnostic one);
//! 4. noarch builds (`torch-<backend>`, `mlx-<backend>`), then `torch-universal`;
//! 5. `sdk-<backend>`;
//! 6. `sdk`.
//!
//! Within a group: the newest compatible backend minor first, then `abi3`
//! before `abi3t`, then the higher minimum Python first. A legacy name and the
//! dotted name of the same build rank equal (the legacy grammar implies
//! `cpython-3.9-abi3`); the reference leaves such ties in the arbitrary order of a Python set,
//! here they keep the listing order (name order for a commit).

use super::RankKey;
use crate::variant::environment::{TorchEnv, major_minor};
use crate::variant::rules::Generation;
use kernels_types::variant_name::{
    ArchVariant, Backend, BuildVariant, Framework, Grammar, MinorVersion, PythonAbi, PythonTag,
    SdkVariant, VariantKind,
};

const GENERATION: Generation = Generation::V019;

impl TorchEnv {
    /// The 0.19 sort key of `variant`, or why this environment refuses it.
    pub(super) fn rank_v019(&self, variant: &BuildVariant) -> Result<RankKey, String> {
        let noarch = self.noarch_backend_for(GENERATION);
        match variant.kind() {
            VariantKind::Unknown => Err(variant.problem().unwrap_or_default()),
            VariantKind::Arch(arch) => self.rank_arch_v019(arch),
            VariantKind::Sdk(sdk) => self.rank_sdk(sdk),
            VariantKind::Universal => Ok([4, 0, 0, 1, 0, 0, 0, 0]),
            VariantKind::Noarch(backend) if backend.as_str() == noarch => {
                Ok([4, 0, 0, 0, 0, 0, 0, 0])
            }
            VariantKind::Mlx(_) if !self.mlx => Err("MLX is not installed".to_owned()),
            VariantKind::Mlx(backend) if backend.as_str() == noarch => Ok([4, 0, 0, 0, 0, 0, 0, 0]),
            VariantKind::Noarch(backend) | VariantKind::Mlx(backend) => {
                Err(format!("for {}, not {noarch}", backend.as_str()))
            }
        }
    }

    fn rank_arch_v019(&self, arch: &ArchVariant) -> Result<RankKey, String> {
        self.python_refusal(&arch.python)
            .or_else(|| self.system_refusal(arch.cpu.as_str(), arch.os.as_str()))
            .map_or(Ok(()), Err)?;
        if self.no_torch && !matches!(arch.framework, Framework::TvmFfi(_)) {
            return Err("a torch build, and torch is not installed".to_owned());
        }
        let torch = MinorVersion::new(self.major, self.minor);
        let (framework, a, b) = match arch.framework {
            Framework::Torch(version) if version != torch => {
                return Err(format!("built for torch {version}, not {torch}"));
            }
            Framework::Torch(_) if !self.cxx_tag_fits(arch.cxx_abi) => {
                let tag = arch.cxx_abi.map_or("", |t| t.as_str());
                return Err(if self.os() == "linux" {
                    format!("{tag} ABI, torch has the other one")
                } else {
                    format!("{tag} ABI tag, which only Linux torch has")
                });
            }
            Framework::Torch(_) => (1, 0, i64::from(arch.cxx_abi.is_some())),
            Framework::TorchStableAbi(version) if version > torch => {
                return Err(format!(
                    "needs torch {version} or newer (stable ABI), not {torch}"
                ));
            }
            Framework::TorchStableAbi(v) => (0, -i64::from(v.major), -i64::from(v.minor)),
            Framework::TvmFfi(version) => {
                let env = self.tvm_ffi.as_deref().and_then(major_minor);
                if env != Some((version.major, version.minor)) {
                    return Err(format!("needs tvm-ffi {version}"));
                }
                (2, 0, 0)
            }
        };
        let backend = backend_as_read(arch.backend, arch.grammar)?;
        self.backend_or_metal_refusal(backend).map_or(Ok(()), Err)?;
        let [abi, py_major, py_minor] = python_order(&arch.python);
        Ok([
            framework,
            a,
            b,
            backend_order(backend),
            abi,
            py_major,
            py_minor,
            0,
        ])
    }

    fn rank_sdk(&self, sdk: &SdkVariant) -> Result<RankKey, String> {
        match sdk {
            SdkVariant::Bare => Ok([6, 0, 0, 0, 0, 0, 0, 0]),
            SdkVariant::Backend(backend) => {
                let env = self.noarch_backend_for(GENERATION);
                if backend.as_str() == env {
                    Ok([5, 0, 0, 0, 0, 0, 0, 0])
                } else {
                    Err(format!("for {}, not {env}", backend.as_str()))
                }
            }
            SdkVariant::Compiled {
                backend,
                python,
                cpu,
                os,
            } => {
                self.python_refusal(python)
                    .or_else(|| self.system_refusal(cpu.as_str(), os.as_str()))
                    .map_or(Ok(()), Err)?;
                let order = match backend {
                    None => 1,
                    Some(backend) => {
                        self.backend_or_metal_refusal(*backend)
                            .map_or(Ok(()), Err)?;
                        backend_order(*backend)
                    }
                };
                let [abi, py_major, py_minor] = python_order(python);
                Ok([3, 0, 0, order, abi, py_major, py_minor, 0])
            }
        }
    }

    /// Why the target's Python cannot load a build with this Python part;
    /// `None` when it can or the target's Python is not known.
    pub(in crate::variant) fn python_refusal(&self, tag: &PythonTag) -> Option<String> {
        let target = self.python?;
        if tag.abi == PythonAbi::Abi3 && target.free_threaded {
            return Some("abi3 build, but the target Python is free-threaded (needs abi3t)".into());
        }
        let (major, minor) = target.version;
        (MinorVersion::new(major, minor) < tag.min).then(|| {
            format!(
                "needs Python {} or newer, the target has {major}.{minor}",
                tag.min
            )
        })
    }

    fn system_refusal(&self, cpu: &str, os: &str) -> Option<String> {
        let (env_cpu, env_os) = (self.cpu(), self.os());
        (cpu != env_cpu || os != env_os)
            .then(|| format!("built for {cpu}-{os}, not {env_cpu}-{env_os}"))
    }

    /// [`TorchEnv::backend_refusal`] under 0.19, and Metal builds below macOS 26.
    fn backend_or_metal_refusal(&self, backend: Backend) -> Option<String> {
        if matches!(backend, Backend::Xpu(None)) {
            return Some("`xpu` without a version is not read by kernels 0.19".to_owned());
        }
        self.backend_refusal(backend, GENERATION).or_else(|| {
            let below_26 = self.macos().is_none_or(|v| v < (26, 0));
            (backend == Backend::Metal && below_26)
                .then(|| "Metal builds need macOS 26 or newer".to_owned())
        })
    }
}

/// The backend as 0.19 reads it: the legacy `rocm714` is ROCm 7.14 (up to
/// 0.18 it was 71.4; 0.19's legacy ROCm pattern special-cases exactly this
/// tag).
fn backend_as_read(backend: Backend, grammar: Grammar) -> Result<Backend, String> {
    match (backend, grammar) {
        (Backend::Rocm(v), Grammar::Legacy) if v == MinorVersion::new(71, 4) => {
            Ok(Backend::Rocm(MinorVersion::new(7, 14)))
        }
        (Backend::Xpu(None), _) => {
            Err("`xpu` without a version is not read by kernels 0.19".into())
        }
        _ => Ok(backend),
    }
}

/// Higher backend minors first for versioned backends (CUDA, ROCm, XPU, CANN).
fn backend_order(backend: Backend) -> i64 {
    backend.version().map_or(0, |v| -i64::from(v.minor))
}

/// `abi3` before `abi3t`, then the higher minimum Python first.
fn python_order(tag: &PythonTag) -> [i64; 3] {
    let abi = match tag.abi {
        PythonAbi::Abi3 => 0,
        PythonAbi::Abi3t => 1,
    };
    [abi, -i64::from(tag.min.major), -i64::from(tag.min.minor)]
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use crate::variant::TorchEnv;
    use crate::variant::testing::env;
    use kernels_types::variant_name::BuildVariant;

    fn linux(cuda: Option<&str>, python: (u32, u32), free_threaded: bool) -> TorchEnv {
        linux_py(cuda, Some((python, free_threaded)))
    }

    const MIXED: &[&str] = &[
        "sdk",
        "sdk-cuda",
        "sdk-cpu",
        "sdk-cpython-3.9-abi3-x86_64-linux",
        "sdk-cuda-12.4-cpython-3.9-abi3-x86_64-linux",
        "torch-universal",
        "torch-cuda",
        "mlx-metal",
        "tvm-ffi-0.1-cuda-12.6-cpython-3.9-abi3-x86_64-linux",
        "torch27-cxx11-cu126-x86_64-linux",
        "torch-2.7-cxx11-cuda-12.6-cpython-3.11-abi3-x86_64-linux",
        "torch-2.7-cuda-12.4-cpython-3.9-abi3-x86_64-linux",
        "torch-2.7-cuda-12.8-cpython-3.9-abi3-x86_64-linux",
        "torch-stable-abi-2.6-cuda-12.6-cpython-3.9-abi3-x86_64-linux",
        "torch-stable-abi26-cu124-x86_64-linux",
        "torch-stable-abi-2.7-cuda-12.4-cpython-3.13-abi3-x86_64-linux",
    ];

    #[test]
    fn the_0_19_order_over_both_grammars() {
        let env = TorchEnv {
            tvm_ffi: Some("0.1.3".into()),
            ..linux(Some("12.6"), (3, 12), false)
        };
        assert_eq!(
            ranked(&env, 19, MIXED),
            [
                // Stable ABI, newest ABI first; cpython-3.13 is too new.
                "torch-stable-abi-2.6-cuda-12.6-cpython-3.9-abi3-x86_64-linux",
                "torch-stable-abi26-cu124-x86_64-linux",
                // Untagged before tagged, then the newest CUDA minor.
                "torch-2.7-cuda-12.4-cpython-3.9-abi3-x86_64-linux",
                "torch-2.7-cxx11-cuda-12.6-cpython-3.11-abi3-x86_64-linux",
                "torch27-cxx11-cu126-x86_64-linux",
                "tvm-ffi-0.1-cuda-12.6-cpython-3.9-abi3-x86_64-linux",
                // A backend's compiled SDK before the backend-agnostic one.
                "sdk-cuda-12.4-cpython-3.9-abi3-x86_64-linux",
                "sdk-cpython-3.9-abi3-x86_64-linux",
                "torch-cuda",
                "torch-universal",
                "sdk-cuda",
                "sdk",
            ]
        );
        // 0.18 and 0.17 read the legacy names only.
        for minor in [17, 18] {
            assert_eq!(
                ranked(&env, minor, MIXED),
                [
                    "torch-stable-abi26-cu124-x86_64-linux",
                    "torch27-cxx11-cu126-x86_64-linux",
                    "torch-cuda",
                    "torch-universal",
                ],
                "0.{minor}"
            );
        }
    }

    #[test]
    fn the_python_part_is_checked_against_the_target() {
        let names = [
            "torch-2.7-cpu-cpython-3.9-abi3-x86_64-linux",
            "torch-2.7-cpu-cpython-3.12-abi3-x86_64-linux",
            "torch-2.7-cpu-cpython-3.15-abi3t-x86_64-linux",
            "torch-2.7-cpu-cpython-3.16-abi3t-x86_64-linux",
            "torch27-cpu-x86_64-linux",
        ];
        // abi3 before abi3t, then the higher minimum Python first; the legacy
        // name is cpython-3.9-abi3 (same rank: listing order).
        assert_eq!(
            ranked(&linux(None, (3, 15), false), 19, &names),
            [
                "torch-2.7-cpu-cpython-3.12-abi3-x86_64-linux",
                "torch-2.7-cpu-cpython-3.9-abi3-x86_64-linux",
                "torch27-cpu-x86_64-linux",
                "torch-2.7-cpu-cpython-3.15-abi3t-x86_64-linux",
            ]
        );
        assert_eq!(
            ranked(&linux(None, (3, 11), false), 19, &names),
            [
                "torch-2.7-cpu-cpython-3.9-abi3-x86_64-linux",
                "torch27-cpu-x86_64-linux",
            ]
        );
        // Free-threaded: abi3 is refused, legacy names included.
        assert_eq!(
            ranked(&linux(None, (3, 16), true), 19, &names),
            [
                "torch-2.7-cpu-cpython-3.16-abi3t-x86_64-linux",
                "torch-2.7-cpu-cpython-3.15-abi3t-x86_64-linux",
            ]
        );
        // Not known: not checked.
        let unknown = env(None, "Linux", "x86_64");
        assert_eq!(ranked(&unknown, 19, &names).len(), 5);
        let refusal = linux(None, (3, 11), false)
            .rank_v019(&BuildVariant::parse(names[1]))
            .unwrap_err();
        assert_eq!(refusal, "needs Python 3.12 or newer, the target has 3.11");
    }

    #[test]
    fn rocm_minor_fallback_from_0_18_and_rocm714_in_0_19() {
        let names = [
            "torch27-cxx11-rocm71-x86_64-linux",
            "torch27-cxx11-rocm72-x86_64-linux",
            "torch27-cxx11-rocm74-x86_64-linux",
            "torch27-cxx11-rocm714-x86_64-linux",
            "torch-2.7-cxx11-rocm-7.14-cpython-3.9-abi3-x86_64-linux",
            "torch-rocm",
        ];
        let rocm = |hip: &str, rocm: Option<&str>| TorchEnv {
            hip: Some(hip.to_owned()),
            rocm: rocm.map(str::to_owned),
            ..env(None, "Linux", "x86_64")
        };
        // `torch.version.rocm` 7.3 (hip 6.5): 0.17 reads hip only.
        let env73 = rocm("6.5.1-abc", Some("7.3.0"));
        assert_eq!(ranked(&env73, 17, &names), ["torch-rocm"]);
        for minor in [18, 19] {
            assert_eq!(
                ranked(&env73, minor, &names),
                [
                    "torch27-cxx11-rocm72-x86_64-linux",
                    "torch27-cxx11-rocm71-x86_64-linux",
                    "torch-rocm"
                ]
            );
        }
        let env714 = rocm("7.14.0", None);
        assert_eq!(
            ranked(&env714, 18, &names)[0],
            "torch27-cxx11-rocm74-x86_64-linux"
        );
        // The legacy and the dotted name of one build tie (listing order).
        assert_eq!(
            ranked(&env714, 19, &names)[..2],
            [
                "torch27-cxx11-rocm714-x86_64-linux",
                "torch-2.7-cxx11-rocm-7.14-cpython-3.9-abi3-x86_64-linux",
            ]
        );
    }

    #[test]
    fn cann_tpu_and_mlx_by_runtime() {
        let cann = TorchEnv {
            cann: Some("8.2".into()),
            ..env(None, "Linux", "aarch64")
        };
        let names = ["torch-npu", "torch-cann", "sdk-cann", "torch-universal"];
        assert_eq!(ranked(&cann, 18, &names), ["torch-npu", "torch-universal"]);
        assert_eq!(
            ranked(&cann, 19, &names),
            ["torch-cann", "torch-universal", "sdk-cann"]
        );
        let tpu = TorchEnv {
            accelerator: Some("tpu".into()),
            ..env(None, "Linux", "x86_64")
        };
        let names = ["torch-tpu", "torch-cpu"];
        assert_eq!(ranked(&tpu, 17, &names), ["torch-cpu"]);
        assert_eq!(ranked(&tpu, 18, &names), ["torch-tpu"]);
        let mac = |mlx: bool| TorchEnv {
            mps: true,
            mlx,
            mac_version: Some("26.1".into()),
            ..env(None, "Darwin", "arm64")
        };
        let names = [
            "mlx-metal",
            "torch-2.7-metal-cpython-3.9-abi3-aarch64-darwin",
        ];
        assert_eq!(
            ranked(&mac(true), 19, &names),
            [
                "torch-2.7-metal-cpython-3.9-abi3-aarch64-darwin",
                "mlx-metal"
            ]
        );
        assert_eq!(
            ranked(&mac(false), 19, &names),
            ["torch-2.7-metal-cpython-3.9-abi3-aarch64-darwin"]
        );
        let old_mac = TorchEnv {
            mac_version: Some("15.5".into()),
            ..mac(true)
        };
        assert_eq!(ranked(&old_mac, 19, &names), ["mlx-metal"]);
    }
}

#[cfg(test)]
mod preferred_tests {
    use super::tests_support::*;

    #[test]
    fn env_lists_the_dotted_name_first_from_0_19() {
        let env = linux_py(Some("12.8"), Some(((3, 12), false)));
        assert_eq!(
            env.preferred(rules(19), true),
            [
                "torch-2.7-cxx11-cuda-12.8-cpython-3.12-abi3-x86_64-linux",
                "torch27-cxx11-cu128-x86_64-linux",
                "torch-cuda",
                "torch-universal"
            ]
        );
        assert_eq!(
            env.preferred(rules(18), true),
            [
                "torch27-cxx11-cu128-x86_64-linux",
                "torch-cuda",
                "torch-universal"
            ]
        );
        // Free-threaded: abi3t only from 3.15, and no legacy (abi3) name.
        let ft = linux_py(None, Some(((3, 15), true)));
        assert_eq!(
            ft.preferred(rules(19), true),
            [
                "torch-2.7-cxx11-cpu-cpython-3.15-abi3t-x86_64-linux",
                "torch-cpu",
                "torch-universal"
            ]
        );
        // Each preferred name is accepted by the 0.19 ranking, in this order.
        let names: Vec<String> = env.preferred(rules(19), true);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(ranked(&env, 19, &refs), names);
    }
}

#[cfg(test)]
mod tests_support {
    use crate::lock::profile::{RuntimeVersion, VariantPreference};
    use crate::variant::TorchEnv;
    use crate::variant::environment::PythonTarget;
    use crate::variant::rules::VariantRules;
    use crate::variant::testing::env;
    use kernels_types::variant_name::BuildVariant;

    pub(super) fn rules(minor: u64) -> VariantRules {
        VariantRules::new(
            VariantPreference::ResolverMetalMacos26,
            Some(RuntimeVersion::new(0, minor, 0)),
        )
    }

    pub(super) fn ranked(env: &TorchEnv, minor: u64, names: &[&str]) -> Vec<String> {
        let variants: Vec<BuildVariant> = names.iter().map(|n| BuildVariant::parse(n)).collect();
        env.resolve(&variants, rules(minor))
            .iter()
            .map(|v| v.name().to_owned())
            .collect()
    }

    pub(super) fn linux_py(cuda: Option<&str>, python: Option<((u32, u32), bool)>) -> TorchEnv {
        TorchEnv {
            python: python.map(|(version, free_threaded)| PythonTarget {
                version,
                free_threaded,
            }),
            ..env(cuda, "Linux", "x86_64")
        }
    }
}
