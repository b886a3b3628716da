//! `kernels`: lock and download compute kernels hosted on the Hugging Face Hub.
//!
//! Data flow:
//!
//! ```text
//! pyproject.toml ──manifest──▶ Manifest ──resolver (hub API)──▶ Resolution
//!        ──lockfile──▶ kernels.lock ──download (hub resolve + cache)──▶ HF cache
//! ```
//!
//! `kernels serve` ([`server`]) is a read-only Hub-compatible server over a mirror
//! directory; the tests and the README demo run everything against it.

pub mod build_variant;
pub mod cache;
pub mod cli;
pub mod download;
pub mod fs;
pub mod hash;
pub mod hub;
pub mod lock_check;
pub mod lock_conflict;
pub mod lockfile;
pub mod locking;
pub mod manifest;
pub mod profile;
pub mod repo_id;
pub mod requirement;
pub mod resolver;
pub mod server;
pub mod settings;
pub mod sticky;
pub mod variant;
pub mod verify;
pub mod wheel;
