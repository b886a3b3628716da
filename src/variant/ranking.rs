//! Ranking: the order in which each target runtime prefers a kernel's build
//! variants for a torch environment ([`VariantPreference`]).

use super::environment::{TorchEnv, major_minor};
use super::rules::{Generation, VariantRules};
use crate::lock::profile::VariantPreference;
use kernels_types::variant_name::{
    ArchVariant, Backend, BuildVariant, CxxAbi, Framework, Grammar, MinorVersion, VariantKind,
};

mod v019;

/// The legacy variant every torch environment accepts last.
pub const UNIVERSAL: &str = "torch-universal";

/// Sort key of an accepted variant in the resolver's order (smaller first):
/// the reference's sort tuple, padded with zeros.
pub(super) type RankKey = [i64; 8];

impl TorchEnv {
    /// The reference ≤0.12 preference order: arch, noarch, universal; without
    /// `noarch` (releases before the December 2025 back-port) arch, universal.
    pub fn preference(&self, noarch: bool) -> Vec<String> {
        let mut order = vec![self.arch_variant()];
        if noarch {
            order.push(self.noarch_variant());
        }
        order.push(UNIVERSAL.to_owned());
        order
    }

    /// The names of this environment's own builds, best first, as the
    /// runtime of `rules` ranks them (`kernels env`'s `Preferred` row): up to
    /// 0.18 [`TorchEnv::preference`]; from 0.19 the dotted arch name for the
    /// target's Python first (`cpython-<target>-abi3`, `abi3t` on a
    /// free-threaded Python, 3.9 when the target's Python is not known),
    /// then the legacy arch name (not on a free-threaded Python), the noarch
    /// name (`torch-cann` for Ascend) and `torch-universal`. Without torch
    /// (MLX-only, [`TorchEnv::no_torch`]): the noarch name, the MLX name and
    /// `torch-universal`.
    pub fn preferred(&self, rules: VariantRules, noarch: bool) -> Vec<String> {
        if !rules.generation.reads_dotted_names() {
            return self.preference(noarch);
        }
        let generation = rules.generation;
        if self.no_torch {
            // Without torch only noarch builds of the backend (and tvm-ffi
            // arch builds, named by no single version here) are selectable.
            let backend = self.noarch_backend_for(generation);
            let mut order = vec![format!("torch-{backend}")];
            if self.mlx {
                order.push(format!("mlx-{backend}"));
            }
            order.push(UNIVERSAL.to_owned());
            return order;
        }
        let (major, minor, abi) = match self.python {
            Some(p) if p.free_threaded => (p.version.0, p.version.1, "abi3t"),
            Some(p) => (p.version.0, p.version.1, "abi3"),
            None => (3, 9, "abi3"),
        };
        let os = self.os();
        let tag = if os == "linux" {
            if self.cxx11_abi { "-cxx11" } else { "-cxx98" }
        } else {
            ""
        };
        let dotted = format!(
            "torch-{}.{}{tag}-{}-cpython-{major}.{minor}-{abi}-{}-{os}",
            self.major,
            self.minor,
            self.backend_for(generation).dotted(),
            self.cpu()
        );
        let mut order: Vec<String> = Vec::new();
        let free_threaded = self.python.is_some_and(|p| p.free_threaded);
        if !free_threaded || (major, minor) >= (3, 15) {
            order.push(dotted);
        }
        if !free_threaded {
            order.push(self.arch_variant_with(self.backend_for(generation)));
        }
        order.push(format!("torch-{}", self.noarch_backend_for(generation)));
        order.push(UNIVERSAL.to_owned());
        order
    }

    /// The exact names a reference ≤0.12 tries, in order, under
    /// `preference` ([`TorchEnv::preference`], with the arch name of
    /// runtimes before 0.11 for [`VariantPreference::ExactBefore011`]); `None`
    /// when that runtime cannot name any variant for this torch (CPU-only
    /// torch before 0.11). The resolver preferences give `None` as well.
    pub fn exact_candidates(&self, preference: VariantPreference) -> Option<Vec<String>> {
        match preference {
            VariantPreference::Exact { noarch } => Some(self.preference(noarch)),
            VariantPreference::ExactBefore011 { noarch } => {
                let mut order = vec![self.arch_variant_before_0_11()?];
                if noarch {
                    order.push(self.noarch_variant());
                }
                order.push(UNIVERSAL.to_owned());
                Some(order)
            }
            _ => None,
        }
    }

    /// The variants the reference resolver (0.13+) accepts for this
    /// environment, best first, under `rules` (a [`VariantPreference`] alone
    /// gives the rules up to 0.17; [`VariantRules`] with a 0.18 or 0.19
    /// generation adds theirs). [`VariantPreference::Exact`] is treated as
    /// 0.15+. Equal ranks keep the order of `variants` (the reference leaves
    /// them unordered).
    pub fn resolve<'a>(
        &self,
        variants: &'a [BuildVariant],
        rules: impl Into<VariantRules>,
    ) -> Vec<&'a BuildVariant> {
        let rules = rules.into();
        let mut ranked: Vec<(RankKey, &BuildVariant)> = variants
            .iter()
            .filter_map(|v| self.rank(v, rules).map(|key| (key, v)))
            .collect();
        ranked.sort_by_key(|(key, _)| *key);
        ranked.into_iter().map(|(_, v)| v).collect()
    }

    /// The sort key of `variant` if this environment accepts it under `rules`.
    fn rank(&self, variant: &BuildVariant, rules: VariantRules) -> Option<RankKey> {
        if rules.generation.reads_dotted_names() {
            return self.rank_v019(variant).ok();
        }
        // Up to 0.18 only legacy names are read: a dotted arch name is a
        // noarch name for a backend no torch has, SDK and MLX names do not
        // parse, and `torch-cann` is not Ascend's noarch (`torch-npu`).
        if variant.grammar() == Grammar::Dotted {
            return None;
        }
        let preference = rules.preference;
        let newer = preference != VariantPreference::Resolver;
        let metal26 = preference == VariantPreference::ResolverMetalMacos26;
        let pad = |(a, b, c, d): (u8, i64, i64, i64)| [i64::from(a), b, c, d, 0, 0, 0, 0];
        match variant.kind() {
            VariantKind::Arch(arch) => {
                if metal26
                    && arch.backend == Backend::Metal
                    && self.macos().is_none_or(|v| v < (26, 0))
                {
                    return None;
                }
                // 0.15–0.18 drop every arch build on a free-threaded Python
                // before 3.15 (`_is_unsupported_free_threaded_build` of
                // `variants.py`, there since 0.15.2, the 0.15 line modelled).
                if matches!(
                    preference,
                    VariantPreference::ResolverStableAbi | VariantPreference::ResolverMetalMacos26
                ) && self
                    .python
                    .is_some_and(|p| p.free_threaded && p.version < (3, 15))
                {
                    return None;
                }
                self.rank_arch(arch, newer, rules.generation).map(pad)
            }
            VariantKind::Universal => Some(pad((3, 0, 0, 1))),
            VariantKind::Noarch(backend) => (backend.as_str()
                == self.noarch_backend_for(rules.generation))
            .then_some(pad((3, 0, 0, 0))),
            _ => None,
        }
    }

    fn rank_arch(
        &self,
        arch: &ArchVariant,
        newer: bool,
        generation: Generation,
    ) -> Option<(u8, i64, i64, i64)> {
        if arch.cpu.as_str() != self.cpu() || arch.os.as_str() != self.os() {
            return None;
        }
        let torch = MinorVersion::new(self.major, self.minor);
        let (framework, abi_major, abi_minor) = match arch.framework {
            Framework::Torch(version) => {
                if version != torch || !self.cxx_tag_fits(arch.cxx_abi) {
                    return None;
                }
                let tagged = i64::from(newer && arch.cxx_abi.is_some());
                (1, 0, tagged)
            }
            Framework::TorchStableAbi(version) => {
                if !newer || version > torch {
                    return None;
                }
                (0, -i64::from(version.major), -i64::from(version.minor))
            }
            Framework::TvmFfi(version) => {
                let env = self.tvm_ffi.as_deref().and_then(major_minor)?;
                if version != MinorVersion::new(env.0, env.1) {
                    return None;
                }
                (2, 0, 0)
            }
        };
        if self.backend_refusal(arch.backend, generation).is_some() {
            return None;
        }
        let backend_minor = arch.backend.version().map_or(0, |v| -i64::from(v.minor));
        // 0.15+ ranks tvm-ffi level with noarch variants, 0.13 before them.
        let framework = if framework == 2 && newer {
            3
        } else {
            framework
        };
        Some((framework, abi_major, abi_minor, backend_minor))
    }

    /// Whether a Torch build's cxx tag suits this torch: untagged always,
    /// tagged only on Linux with the same ABI (the environment has no ABI
    /// tag off Linux).
    pub(super) fn cxx_tag_fits(&self, tag: Option<CxxAbi>) -> bool {
        let Some(tag) = tag else {
            return true;
        };
        let env_tag = if self.cxx11_abi {
            CxxAbi::Cxx11
        } else {
            CxxAbi::Cxx98
        };
        self.os() == "linux" && tag == env_tag
    }

    /// Why a build for `backend` does not suit this environment's backend
    /// under `generation`'s rules, `None` when it does: CUDA (and from 0.18
    /// ROCm) of the same major with a minor up to the environment's, any
    /// other backend exactly.
    pub(super) fn backend_refusal(
        &self,
        backend: Backend,
        generation: Generation,
    ) -> Option<String> {
        let env = self.backend_for(generation);
        let lower_minor = |v: MinorVersion, e: MinorVersion, name: &str| {
            if v.major != e.major {
                Some(format!("{name} {v}, another major version than {e}"))
            } else if v.minor > e.minor {
                Some(format!("{name} {v} is newer than {e}"))
            } else {
                None
            }
        };
        match (backend, env) {
            (Backend::Cuda(v), Backend::Cuda(e)) => lower_minor(v, e, "CUDA"),
            (Backend::Rocm(v), Backend::Rocm(e)) if generation >= Generation::V018 => {
                lower_minor(v, e, "ROCm")
            }
            (backend, env) if backend.to_string() != env.to_string() => {
                Some(format!("built for {backend}, not {env}"))
            }
            _ => None,
        }
    }
}

/// Why one available variant was, or was not, taken for an environment
/// (`kernels download --explain`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VariantVerdict {
    /// The variant directory name.
    pub name: String,
    /// Whether it is the one chosen.
    pub chosen: bool,
    /// Why it was not chosen (`None` for the chosen one).
    pub reason: Option<String>,
    /// Its place among the variants this environment accepts (0: the chosen
    /// one), `None` when it does not accept it (`kernels variants`'
    /// `compatible`).
    #[serde(skip)]
    pub rank: Option<usize>,
}

impl TorchEnv {
    /// Every name of `available` with the chosen one marked and a reason for
    /// every other, for this environment under `rules`.
    pub fn explain(
        &self,
        available: &std::collections::BTreeSet<String>,
        rules: impl Into<VariantRules>,
    ) -> Vec<VariantVerdict> {
        let rules = rules.into();
        let preference = rules.preference;
        let variants: Vec<BuildVariant> =
            available.iter().map(|n| BuildVariant::parse(n)).collect();
        let accepted: Vec<String> = match preference {
            VariantPreference::Exact { noarch } => self
                .preference(noarch)
                .into_iter()
                .filter(|v| available.contains(v))
                .collect(),
            _ => self
                .resolve(&variants, rules)
                .iter()
                .map(|v| v.name().to_owned())
                .collect(),
        };
        let chosen = accepted.first().cloned();
        variants
            .iter()
            .map(|variant| {
                let name = variant.name().to_owned();
                let reason = if Some(&name) == chosen.as_ref() {
                    None
                } else if accepted.contains(&name) {
                    Some(format!(
                        "matches, but `{}` ranks first",
                        chosen.clone().unwrap_or_default()
                    ))
                } else {
                    Some(self.mismatch(variant, rules))
                };
                VariantVerdict {
                    chosen: reason.is_none(),
                    rank: accepted.iter().position(|a| *a == name),
                    name,
                    reason,
                }
            })
            .collect()
    }

    /// The first property of `variant` that this environment does not have.
    fn mismatch(&self, variant: &BuildVariant, rules: VariantRules) -> String {
        if rules.generation.reads_dotted_names() {
            return self
                .rank_v019(variant)
                .err()
                .unwrap_or_else(|| "ranked after the variants that match".to_owned());
        }
        if variant.is_known() && variant.grammar() == Grammar::Dotted {
            return "a name of the kernels 0.19 grammar; this runtime reads legacy names only"
                .to_owned();
        }
        let preference = rules.preference;
        let exact = matches!(preference, VariantPreference::Exact { .. });
        let arch = match variant.kind() {
            VariantKind::Unknown => return variant.problem().unwrap_or_default(),
            VariantKind::Mlx(_) | VariantKind::Sdk(_) => {
                return "a kernels 0.19 variant; this runtime reads legacy names only".to_owned();
            }
            VariantKind::Universal => return "ranked after the variants that match".to_owned(),
            VariantKind::Noarch(backend) => {
                return if exact && backend.as_str() == self.noarch_backend() {
                    "this runtime does not try noarch variants".to_owned()
                } else {
                    format!("for {}, not {}", backend.as_str(), self.noarch_backend())
                };
            }
            VariantKind::Arch(arch) => arch,
        };
        let (cpu, os) = (self.cpu(), self.os());
        if arch.cpu.as_str() != cpu || arch.os.as_str() != os {
            return format!(
                "built for {}-{}, not {cpu}-{os}",
                arch.cpu.as_str(),
                arch.os.as_str()
            );
        }
        if let Some(reason) = self.framework_mismatch(arch, preference) {
            return reason;
        }
        if !exact && let Some(reason) = self.backend_refusal(arch.backend, rules.generation) {
            return reason;
        }
        self.backend_mismatch(arch.backend, exact)
    }

    /// [`TorchEnv::mismatch`] for the framework part of an arch variant built
    /// for this CPU and OS: the torch (or stable-ABI floor, or tvm-ffi)
    /// version, then the C++ ABI tag. `None` when they match.
    fn framework_mismatch(
        &self,
        arch: &ArchVariant,
        preference: VariantPreference,
    ) -> Option<String> {
        let exact = matches!(preference, VariantPreference::Exact { .. });
        let torch = MinorVersion::new(self.major, self.minor);
        match arch.framework {
            Framework::Torch(version) if version != torch => {
                return Some(format!("built for torch {version}, not {torch}"));
            }
            Framework::TorchStableAbi(version) if version > torch => {
                return Some(format!(
                    "needs torch {version} or newer (stable ABI), not {torch}"
                ));
            }
            Framework::TorchStableAbi(_) if exact || preference == VariantPreference::Resolver => {
                return Some("stable-ABI variants are read from kernels 0.15 on".to_owned());
            }
            Framework::TvmFfi(version) => {
                let env = self.tvm_ffi.as_deref().and_then(major_minor);
                if env != Some((version.major, version.minor)) {
                    return Some(format!("needs tvm-ffi {version}"));
                }
            }
            _ => {}
        }
        let tag = arch.cxx_abi?;
        let env_tag = if self.cxx11_abi {
            CxxAbi::Cxx11
        } else {
            CxxAbi::Cxx98
        };
        (tag != env_tag).then(|| format!("{} ABI, torch has {}", tag.as_str(), env_tag.as_str()))
    }

    /// [`TorchEnv::mismatch`] for the backend of an arch variant whose other
    /// parts match: how it differs from this environment's backend (`exact`:
    /// an exact-name runtime, ≤0.12, which takes only the same CUDA version).
    fn backend_mismatch(&self, backend: Backend, exact: bool) -> String {
        match (backend, self.backend()) {
            (Backend::Cuda(v), Backend::Cuda(env)) if v.major != env.major => {
                format!("CUDA {v}, another major version than {env}")
            }
            (Backend::Cuda(v), Backend::Cuda(env)) if v.minor > env.minor => {
                format!("CUDA {v} is newer than {env}")
            }
            (Backend::Cuda(v), Backend::Cuda(env)) if exact && v != env => {
                format!("CUDA {v}: this runtime takes only the exact CUDA {env}")
            }
            (backend, env) if backend.to_string() != env.to_string() => {
                format!("built for {backend}, not {env}")
            }
            _ => "not an exact name this runtime tries".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::variant::VariantSelection;
    use crate::variant::testing::env;
    use kernels_types::repo_id::RepoId;

    /// The names `env` accepts among `names` under `preference`, best first.
    fn ranked(env: &TorchEnv, preference: VariantPreference, names: &[&str]) -> Vec<String> {
        let variants: Vec<BuildVariant> = names.iter().map(|n| BuildVariant::parse(n)).collect();
        env.resolve(&variants, preference)
            .iter()
            .map(|v| v.name().to_owned())
            .collect()
    }

    fn linux(major: u32, minor: u32, cuda: Option<&str>) -> TorchEnv {
        TorchEnv {
            major,
            minor,
            ..env(cuda, "Linux", "x86_64")
        }
    }

    #[test]
    fn resolver_accepts_older_cuda_minors_of_the_same_major() {
        let names = [
            "torch-universal",
            "torch-cuda",
            "torch29-cxx11-cu118-x86_64-linux",
            "torch29-cxx11-cu126-x86_64-linux",
            "torch29-cxx11-cu128-x86_64-linux",
            "torch29-cxx11-cu128-aarch64-linux",
            "torch29-cxx11-cu130-x86_64-linux",
            "torch28-cxx11-cu128-x86_64-linux",
            "torch29-metal-aarch64-darwin",
        ];
        for preference in [
            VariantPreference::Resolver,
            VariantPreference::ResolverStableAbi,
        ] {
            // CUDA 12.9: 12.8 and 12.6 qualify (higher minor first); 11.8 and
            // 13.0 do not, nor other Torch versions, CPUs or systems.
            assert_eq!(
                ranked(&linux(2, 9, Some("12.9")), preference, &names),
                [
                    "torch29-cxx11-cu128-x86_64-linux",
                    "torch29-cxx11-cu126-x86_64-linux",
                    "torch-cuda",
                    "torch-universal"
                ]
            );
            assert_eq!(
                ranked(&linux(2, 9, Some("13.0")), preference, &names)[0],
                "torch29-cxx11-cu130-x86_64-linux"
            );
        }
        // The exact order (≤0.12) has no fallback: CUDA 12.9 gets the noarch
        // build (and the universal one, which the reference downloads too).
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = names.map(String::from).into();
        let pick = |preference: VariantPreference| {
            VariantSelection::Detected {
                env: Box::new(linux(2, 9, Some("12.9"))),
                rules: preference.into(),
            }
            .choose(&id, &crate::variant::testing::commit(), &available)
            .unwrap()
        };
        assert_eq!(
            pick(VariantPreference::Exact { noarch: true }),
            ["torch-cuda", "torch-universal"]
        );
        assert_eq!(
            pick(VariantPreference::ResolverStableAbi),
            ["torch29-cxx11-cu128-x86_64-linux"]
        );
    }

    #[test]
    fn resolver_needs_exact_rocm_and_xpu_versions_and_the_cxx_tag() {
        let names = [
            "torch-universal",
            "torch-cuda",
            "torch-rocm",
            "torch-xpu",
            "torch28-cxx11-rocm63-x86_64-linux",
            "torch28-cxx11-rocm64-x86_64-linux",
            "torch28-cxx11-xpu20251-x86_64-linux",
            "torch28-cxx98-cu126-x86_64-linux",
        ];
        let rocm = |hip: &str| TorchEnv {
            hip: Some(hip.to_owned()),
            ..linux(2, 8, None)
        };
        assert_eq!(
            ranked(
                &rocm("6.4.43482-0f2d60242"),
                VariantPreference::ResolverStableAbi,
                &names
            ),
            [
                "torch28-cxx11-rocm64-x86_64-linux",
                "torch-rocm",
                "torch-universal"
            ]
        );
        assert_eq!(
            ranked(&rocm("6.2.1"), VariantPreference::Resolver, &names),
            ["torch-rocm", "torch-universal"]
        );
        let xpu = |v: &str| TorchEnv {
            xpu: Some(v.to_owned()),
            ..linux(2, 8, None)
        };
        // `torch.version.xpu` `20250001` is oneAPI 2025.0, `20250101` 2025.1.
        assert_eq!(
            ranked(
                &xpu("20250001"),
                VariantPreference::ResolverStableAbi,
                &names
            ),
            ["torch-xpu", "torch-universal"]
        );
        assert_eq!(
            ranked(&xpu("20250101"), VariantPreference::Resolver, &names)[0],
            "torch28-cxx11-xpu20251-x86_64-linux"
        );
        // A cxx98 build only suits a torch without the C++11 ABI.
        let cuda = linux(2, 8, Some("12.6"));
        assert_eq!(
            ranked(&cuda, VariantPreference::ResolverStableAbi, &names),
            ["torch-cuda", "torch-universal"]
        );
        let old_abi = TorchEnv {
            cxx11_abi: false,
            ..cuda
        };
        assert_eq!(
            ranked(&old_abi, VariantPreference::Resolver, &names)[0],
            "torch28-cxx98-cu126-x86_64-linux"
        );
    }

    #[test]
    fn stable_abi_and_tagless_variants_from_0_15() {
        let names = [
            "torch-cuda",
            "torch210-cxx11-cu130-x86_64-linux",
            "torch210-cu126-x86_64-linux",
            "torch-stable-abi29-cu130-x86_64-linux",
            "torch-stable-abi29-cu128-x86_64-linux",
            "torch-stable-abi210-cu128-x86_64-linux",
            "torch-stable-abi211-cu130-x86_64-linux",
        ];
        let env = linux(2, 10, Some("13.0"));
        // 0.15+: stable ABI up to the torch version first (newest ABI first),
        // then tagless before cxx-tagged Torch builds, then noarch.
        assert_eq!(
            ranked(&env, VariantPreference::ResolverStableAbi, &names),
            [
                "torch-stable-abi29-cu130-x86_64-linux",
                "torch210-cxx11-cu130-x86_64-linux",
                "torch-cuda"
            ]
        );
        let env = linux(2, 10, Some("12.8"));
        assert_eq!(
            ranked(&env, VariantPreference::ResolverStableAbi, &names),
            [
                "torch-stable-abi210-cu128-x86_64-linux",
                "torch-stable-abi29-cu128-x86_64-linux",
                "torch210-cu126-x86_64-linux",
                "torch-cuda"
            ]
        );
        // 0.13–0.14 do not know stable-ABI names; tags do not rank.
        assert_eq!(
            ranked(&env, VariantPreference::Resolver, &names),
            ["torch210-cu126-x86_64-linux", "torch-cuda"]
        );
        let tags = [
            "torch210-cxx11-cu128-x86_64-linux",
            "torch210-cu126-x86_64-linux",
        ];
        assert_eq!(
            ranked(&env, VariantPreference::ResolverStableAbi, &tags),
            [
                "torch210-cu126-x86_64-linux",
                "torch210-cxx11-cu128-x86_64-linux"
            ]
        );
        assert_eq!(
            ranked(&env, VariantPreference::Resolver, &tags),
            [
                "torch210-cxx11-cu128-x86_64-linux",
                "torch210-cu126-x86_64-linux"
            ]
        );
    }

    #[test]
    fn tvm_ffi_noarch_universal_and_unknown_names() {
        let names = [
            "torch-universal",
            "torch-cpu",
            "torch-cuda",
            "torch-ext",
            "tvm-ffi01-cu128-x86_64-linux",
            "tvm-ffi02-cu128-x86_64-linux",
            "torch27-cxx11-cu128-x86_64-linux",
        ];
        let plain = linux(2, 7, Some("12.8"));
        let with_tvm = TorchEnv {
            tvm_ffi: Some("0.1.9".to_owned()),
            ..plain.clone()
        };
        for preference in [
            VariantPreference::Resolver,
            VariantPreference::ResolverStableAbi,
        ] {
            assert_eq!(
                ranked(&with_tvm, preference, &names),
                [
                    "torch27-cxx11-cu128-x86_64-linux",
                    "tvm-ffi01-cu128-x86_64-linux",
                    "torch-cuda",
                    "torch-universal"
                ]
            );
            assert_eq!(
                ranked(&plain, preference, &names),
                [
                    "torch27-cxx11-cu128-x86_64-linux",
                    "torch-cuda",
                    "torch-universal"
                ]
            );
        }
        let cpu = linux(2, 7, None);
        assert_eq!(
            ranked(&cpu, VariantPreference::ResolverStableAbi, &names),
            ["torch-cpu", "torch-universal"]
        );
        // `torch-ext` is never chosen, only skipped.
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = ["torch-ext", "torch-universal"].map(String::from).into();
        let selection = VariantSelection::Detected {
            env: Box::new(cpu),
            rules: VariantPreference::Resolver.into(),
        };
        assert_eq!(
            selection
                .choose(&id, &crate::variant::testing::commit(), &available)
                .unwrap(),
            ["torch-universal"]
        );
        let only_junk: BTreeSet<String> = ["torch-ext".to_owned()].into();
        let err = selection
            .choose(&id, &crate::variant::testing::commit(), &only_junk)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("torch 2.7") && err.contains("torch-ext"),
            "{err}"
        );
    }

    #[test]
    fn macos_and_windows_in_the_resolver() {
        let names = [
            "torch27-cxx11-metal-aarch64-darwin",
            "torch27-metal-aarch64-darwin",
            "torch-metal",
            "torch27-cu128-x86_64-windows",
        ];
        let mac = TorchEnv {
            mps: true,
            ..env(None, "Darwin", "arm64")
        };
        // A cxx-tagged macOS build has an ABI tag the environment lacks.
        assert_eq!(
            ranked(&mac, VariantPreference::ResolverStableAbi, &names),
            ["torch27-metal-aarch64-darwin", "torch-metal"]
        );
        let win = env(Some("12.9"), "Windows", "AMD64");
        assert_eq!(
            ranked(&win, VariantPreference::Resolver, &names),
            ["torch27-cu128-x86_64-windows"]
        );
        assert_eq!(win.describe(), "torch 2.7, CUDA 12.9, x86_64-windows");
        assert_eq!(
            linux(2, 10, Some("12.8")).describe(),
            "torch 2.10 (cxx11 ABI), CUDA 12.8, x86_64-linux"
        );
    }
}
