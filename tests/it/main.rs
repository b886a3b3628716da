//! Integration tests: the real `kernels` binary against `kernels serve` on loopback,
//! and against the pinned Python reference where an issue asks for parity.

mod add;
mod auth;
mod cli;
mod common;
mod concurrency;
#[cfg(unix)]
mod crash;
mod download;
mod faults;
mod inspect;
mod lock;
mod matrix;
mod precommit;
mod profiles;
mod serve;
mod sticky;
mod to_wheel;
mod verify;
