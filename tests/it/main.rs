//! Integration tests: the real `kernels` binary against `kernels serve` on loopback,
//! and against the pinned Python reference where an issue asks for parity.

mod auth;
#[cfg(unix)]
mod cache_env;
mod cli;
mod concurrency;
#[cfg(unix)]
mod crash;
mod download;
mod environment;
mod faults;
mod fuzz;
#[cfg(target_os = "linux")]
mod hostile;
mod lock;
mod lock_files;
mod matrix;
mod oauth;
mod precommit;
mod profiles;
mod serve;
mod snapshots_cli;
mod sticky;
mod tls;
mod to_wheel;
mod verify;
