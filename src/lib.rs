//! `kernels`: lock and download compute kernels hosted on the Hugging Face Hub.
//!
//! Layers, top to bottom; each uses only the ones below it (see
//! `docs/architecture.md`):
//!
//! ```text
//! cli/       arguments, settings (the only environment reader), printing, progress
//! wheel/     to-wheel            mirror/    kernels mirror    check/   kernels check
//! info/      kernels info       export/  kernels export (SBOM)
//! signatures/  verify-signature · verify --signatures · audit (over kernels-trust)
//! install/   plan · fetch · engine · warm check · verify · dry-run · explain
//! variant/   variant selection and environment detection
//! lock/      manifest · requirement · resolver · project locking · freshness ·
//!            conflict · target-runtime policy · formats
//! kernels-cache, kernels-hub, kernels-serve, kernels-trust, kernels-types   (crates/)
//! ```

pub mod check;
pub mod cli;
pub mod export;
pub mod info;
pub mod install;
pub mod lock;
pub mod mirror;
pub mod signatures;
pub mod variant;
pub mod wheel;
