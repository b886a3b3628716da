//! What a kernel variant proves about itself, checked offline.
//!
//! Since reference 0.16, a variant's `metadata.json` carries a `digest` of
//! every other file of the variant ([`digest`]), and the kernels-community CI
//! signs the raw `metadata.json` bytes with Sigstore
//! (`metadata.json.sigstore`, [`signature`]). Whether a signer is accepted is
//! [`policy`]; the trust root the certificates chain to is [`root`]; the
//! combined verdict for one variant directory, with the reference's outcome
//! names, is [`outcome`].
//!
//! Nothing here touches the network: the production trust root is embedded,
//! and a private one is read from a file.

pub mod digest;
pub mod outcome;
pub mod policy;
pub mod root;
mod shape;
pub mod signature;

pub use digest::{DigestProblem, check_variant, hash_variant};
pub use outcome::{Outcome, verify_variant};
pub use policy::{SignerPolicy, SignerRule};
pub use root::{TrustRoot, TrustRootError};
pub use signature::{SignatureFailure, SignerIdentity, claimed_signer, verify_bundle};

/// The signature bundle's file name inside a variant directory.
pub const BUNDLE_FILE: &str = "metadata.json.sigstore";

/// The metadata file's name inside a variant directory.
pub const METADATA_FILE: &str = "metadata.json";
