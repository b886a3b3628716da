//! Integration tests: the real `kernels` binary against `kernels serve` on loopback,
//! and against the pinned Python reference where an issue asks for parity.

mod auth;
mod common;
mod concurrency;
mod download;
mod lock;
mod serve;
mod to_wheel;
mod verify;
