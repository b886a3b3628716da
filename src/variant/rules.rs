//! Rules: which variant-selection rules a target runtime applies, as a value
//! derived from its version ([`VariantRules`]): the preference order of the
//! profile ([`VariantPreference`]) and the runtime generation
//! ([`Generation`] of the profile) that adds what 0.18 and 0.19 changed.

pub use crate::lock::profile::Generation;
use crate::lock::profile::{Profile, RuntimeVersion, VariantPreference};

/// How the target runtime selects among a kernel's variants.
///
/// ```
/// use kernels::lock::profile::{RuntimeVersion, VariantPreference};
/// use kernels::variant::{Generation, VariantRules};
/// let rules = VariantRules::new(
///     VariantPreference::ResolverMetalMacos26,
///     Some(RuntimeVersion::new(0, 19, 1)),
/// );
/// assert_eq!(rules.generation, Generation::V019);
/// let old: VariantRules = VariantPreference::ResolverStableAbi.into();
/// assert_eq!(old.generation, Generation::BeforeKernelLocks);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VariantRules {
    /// The profile's preference order (exact names or the resolver).
    pub preference: VariantPreference,
    /// What 0.18 and 0.19 add; always [`Generation::BeforeKernelLocks`] with an
    /// exact-name or pre-0.17 resolver preference.
    pub generation: Generation,
}

impl VariantRules {
    /// The rules of a runtime version with its profile's preference.
    pub fn new(preference: VariantPreference, runtime: Option<RuntimeVersion>) -> Self {
        let generation = match preference {
            VariantPreference::ResolverMetalMacos26 => runtime
                .map_or(Generation::V017, Generation::of)
                .max(Generation::V017),
            _ => Generation::BeforeKernelLocks,
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
    /// The preference's rules for an unnamed runtime of its line (a 0.17+
    /// resolver preference gets the 0.17 rules).
    fn from(preference: VariantPreference) -> Self {
        VariantRules::new(preference, None)
    }
}
