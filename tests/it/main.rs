//! Integration tests: the real `kernels` binary against `kernels serve` on loopback,
//! and against the pinned Python reference where an issue asks for parity.

mod auth;
mod cli;
mod concurrency;
#[cfg(unix)]
mod crash;
mod download;
mod env;
mod faults;
mod flags;
mod json;
mod lock;
mod lock_files;
mod matrix;
mod messages;
mod precommit;
mod profiles;
mod readme;
mod serve;
mod snapshots_cli;
mod sticky;
mod terminal;
mod to_wheel;
mod verify;
