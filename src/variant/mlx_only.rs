//! MLX-only environments: an interpreter without torch where MLX reports a
//! Metal device. Reference 0.19 (`_internals/backends.py` `_backend`, the
//! branch without torch) selects variants for it with the Metal backend:
//! `mlx-metal` and the other noarch builds of Metal, tvm-ffi builds, SDKs;
//! never a torch build. Earlier runtimes need torch to select anything.

use serde::Deserialize;

use super::environment::{PythonTarget, TorchEnv};
use super::rules::Generation;

/// What the interpreter probe reports when `import torch` fails but
/// `mlx.core.metal.is_available()` is true: the platform facts that
/// 0.19's variant checks read without torch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MlxMetal {
    /// `platform.system()`, `Darwin` on a Mac.
    pub system: String,
    /// `platform.machine()`, `arm64` on Apple silicon.
    pub machine: String,
    /// `platform.mac_ver()[0]` (`None` when empty); Metal arch builds need 26.
    #[serde(default)]
    pub mac_version: Option<String>,
    /// `tvm_ffi.__version__` when the `tvm_ffi` module is importable.
    #[serde(default)]
    pub tvm_ffi: Option<String>,
}

impl MlxMetal {
    /// The environment a runtime of `generation` selects for, with the
    /// interpreter's `python`: a [`TorchEnv`] without torch
    /// ([`TorchEnv::no_torch`]), Metal as its backend and MLX importable.
    /// `None` before 0.19, whose runtimes select nothing without torch.
    pub fn env(&self, generation: Generation, python: Option<PythonTarget>) -> Option<TorchEnv> {
        (generation >= Generation::V019).then(|| TorchEnv {
            major: 0,
            minor: 0,
            cuda: None,
            hip: None,
            xpu: None,
            mps: true,
            neuron: false,
            cxx11_abi: false,
            tvm_ffi: self.tvm_ffi.clone(),
            system: self.system.clone(),
            machine: self.machine.clone(),
            mac_version: self.mac_version.clone(),
            rocm: None,
            accelerator: None,
            tpu_backend: false,
            cann: None,
            mlx: true,
            python,
            no_torch: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::profile::VariantPreference;
    use crate::variant::VariantRules;
    use crate::variant::VariantSelection;
    use std::collections::BTreeSet;

    fn mac(mac_version: &str) -> MlxMetal {
        MlxMetal {
            system: "Darwin".into(),
            machine: "arm64".into(),
            mac_version: Some(mac_version.into()),
            tvm_ffi: None,
        }
    }

    fn chosen(env: TorchEnv, names: &[&str]) -> Vec<String> {
        let available: BTreeSet<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let selection = VariantSelection::Detected {
            env: Box::new(env),
            rules: VariantRules {
                preference: VariantPreference::ResolverMetalMacos26,
                generation: Generation::V019,
            },
        };
        let id = "acme/mlx".parse().unwrap();
        let commit = "c".repeat(40).parse().unwrap();
        selection.select(&id, &commit, &available).unwrap().variants
    }

    #[test]
    fn only_0_19_selects_without_torch_and_never_a_torch_build() {
        let python = Some(PythonTarget {
            version: (3, 12),
            free_threaded: false,
        });
        assert_eq!(mac("26.1").env(Generation::V018, python), None);
        let env = mac("26.1").env(Generation::V019, python).unwrap();
        assert!(
            env.describe().starts_with("no torch (MLX), "),
            "{}",
            env.describe()
        );
        let names = [
            "torch-2.9-metal-cpython-3.9-abi3-aarch64-darwin",
            "torch-stable-abi-2.9-metal-cpython-3.9-abi3-aarch64-darwin",
            "torch29-metal-aarch64-darwin",
            "mlx-metal",
            "torch-cpu",
        ];
        assert_eq!(chosen(env, &names), ["mlx-metal"]);
    }
}
