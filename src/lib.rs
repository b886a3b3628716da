//! `kernels`: lock and download compute kernels hosted on the Hugging Face Hub.
//!
//! Layers, top to bottom; each uses only the ones of a lower rank (the table
//! of `docs/architecture.md`, which `tests/layers.rs` checks):
//!
//! ```text
//! 6  cli/       the clap tree and dispatch; commands over a shared use-case layer
//!               (cli/project/); arguments, settings (the only environment reader),
//!               printing, progress, JSON documents
//! 5  check/     kernels check         benchmark/  kernels benchmark
//!    signatures/ verify --signatures · verify-signature · audit (over kernels-trust)
//!    wheel/     to-wheel              mirror/     kernels mirror
//!    export/    kernels export (SBOM) info/       kernels info
//! 4  install/   plan · fetch · engine · warm check · verify · dry-run · explain
//! 3  variant/   variant selection and environment detection
//! 2  lock/      manifest · requirement · resolver · project locking · freshness ·
//!               conflict · target-runtime policy · formats · provenance
//! 1  abi/       ABI fit of compiled files (ELF/Mach-O symbol versions)
//!    kernels-cache, kernels-hub, kernels-trust, kernels-serve   (crates/)
//! 0  kernels-types, kernels-fs                                  (crates/)
//! ```

pub mod abi;
pub mod benchmark;
pub mod check;
pub mod cli;
pub mod export;
pub mod info;
pub mod install;
pub mod local;
pub mod lock;
pub mod mirror;
pub mod signatures;
pub mod variant;
pub mod wheel;
