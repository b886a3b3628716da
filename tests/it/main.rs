//! Integration tests: the real `kernels` binary against `kernels serve` on loopback,
//! and against the pinned Python reference where an issue asks for parity.

mod common;
mod download;
mod lock;
mod matrix;
mod serve;
mod to_wheel;
