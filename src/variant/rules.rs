//! Rules: which variant-selection rules a target runtime applies, as a value
//! derived from its version ([`VariantRules`]): the preference order of the
//! profile ([`VariantPreference`]) and the runtime generation
//! ([`RuntimeGeneration`]) that adds what 0.18 and 0.19 changed.

use crate::lock::profile::{Profile, RuntimeVersion, VariantPreference};

/// The runtime releases whose variant rules differ beyond
/// [`VariantPreference`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuntimeGeneration {
    /// Reference 0.17 and older (and the default profile): the rules of the
    /// [`VariantPreference`] alone; legacy names only; ROCm needs the exact
    /// version, read from `torch.version.hip`; Ascend's noarch is `torch-npu`.
    UpTo017,
    /// Reference 0.18: a lower ROCm minor of the same major is accepted (as
    /// for CUDA), the ROCm version is `torch.version.rocm` (else `hip`), and
    /// TPU is `torch.accelerator.current_accelerator().type == "tpu"`.
    V018,
    /// Reference 0.19: 0.18 plus the dotted grammar, SDK and MLX variants,
    /// the Python part checked against the target's Python, the 0.19 order
    /// (`variants.py` `_sort_variants`), `rocm714` read as ROCm 7.14, and
    /// Ascend's noarch `torch-cann`.
    V019,
}

impl RuntimeGeneration {
    /// The generation of a runtime version; `None` (no runtime known) is
    /// [`RuntimeGeneration::UpTo017`]. Releases newer than 0.19 get the 0.19
    /// rules (the newest modelled).
    pub fn of(runtime: Option<RuntimeVersion>) -> Self {
        match runtime {
            Some(v) if v.major > 0 || v.minor >= 19 => RuntimeGeneration::V019,
            Some(v) if v.minor >= 18 => RuntimeGeneration::V018,
            _ => RuntimeGeneration::UpTo017,
        }
    }

    /// Whether dotted, SDK and MLX names are read (0.19+).
    pub fn reads_dotted_names(self) -> bool {
        self >= RuntimeGeneration::V019
    }
}

/// How the target runtime selects among a kernel's variants.
///
/// ```
/// use kernels::lock::profile::{RuntimeVersion, VariantPreference};
/// use kernels::variant::{RuntimeGeneration, VariantRules};
/// let rules = VariantRules::new(
///     VariantPreference::ResolverMetalMacos26,
///     Some(RuntimeVersion::new(0, 19, 1)),
/// );
/// assert_eq!(rules.generation, RuntimeGeneration::V019);
/// let old: VariantRules = VariantPreference::ResolverStableAbi.into();
/// assert_eq!(old.generation, RuntimeGeneration::UpTo017);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VariantRules {
    /// The profile's preference order (exact names or the resolver).
    pub preference: VariantPreference,
    /// What 0.18 and 0.19 add; always [`RuntimeGeneration::UpTo017`] with an
    /// exact-name or pre-0.17 resolver preference.
    pub generation: RuntimeGeneration,
}

impl VariantRules {
    /// The rules of a runtime version with its profile's preference.
    pub fn new(preference: VariantPreference, runtime: Option<RuntimeVersion>) -> Self {
        let generation = match preference {
            VariantPreference::ResolverMetalMacos26 => RuntimeGeneration::of(runtime),
            _ => RuntimeGeneration::UpTo017,
        };
        VariantRules {
            preference,
            generation,
        }
    }

    /// The rules of `profile`'s target runtime.
    pub fn of_profile(profile: &Profile) -> Self {
        VariantRules::new(profile.variant_preference, profile.runtime)
    }
}

impl From<VariantPreference> for VariantRules {
    /// The preference's rules without what 0.18 and 0.19 add.
    fn from(preference: VariantPreference) -> Self {
        VariantRules {
            preference,
            generation: RuntimeGeneration::UpTo017,
        }
    }
}
