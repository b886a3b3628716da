//! Integration tests: the real `kernels` binary against `kernels serve` on loopback,
//! and against the pinned Python reference where an issue asks for parity.

// Tests may print their own diagnostics; the product prints through its Printer.
#![allow(clippy::disallowed_macros)]

mod abi;
mod add;
mod auth;
mod bench_help;
mod benchmark;
mod breaking;
#[cfg(unix)]
mod cache_env;
mod cache_ls_json;
mod check;
#[cfg(unix)]
mod check_paths;
mod cli;
mod coexistence;
mod concurrency;
mod conformance;
mod cooldown;
#[cfg(unix)]
mod crash;
mod declared_builds;
mod describe_api;
mod digest;
mod doc_shell;
#[cfg(target_os = "linux")]
mod docker_recipe;
mod docs_blocks;
mod download;
mod edges;
mod env;
mod environment;
mod export;
mod faults;
mod fit;
mod fit_display;
mod flags;
#[cfg(unix)]
mod fleet;
mod fuzz;
mod gates;
mod grammar;
mod hints;
#[cfg(target_os = "linux")]
mod hostile;
mod info;
mod inspect;
#[cfg(unix)]
mod interpreter_runtime;
mod json;
mod local_build;
mod local_dev;
mod lock;
mod lock_files;
mod lock_messages;
mod matrix;
mod messages;
mod mirror;
mod model_shutdown;
mod oauth;
mod precommit;
mod profiles;
mod provenance;
mod readme;
mod receipts;
mod requirement_forms;
mod runtime_era;
mod runtime_offline;
mod runtime_receipts;
mod serve;
mod signatures;
mod snapshots_cli;
mod sticky;
#[cfg(unix)]
mod targets;
mod terminal;
mod tls;
mod to_wheel;
mod trust_download;
mod variants;
mod verify;
