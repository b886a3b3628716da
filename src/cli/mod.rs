//! Command-line interface: clap definitions and dispatch only.
//!
//! Each subcommand lives in its own module with an `Args` struct and a `run`
//! function that translates arguments into library calls and prints results.
//! Output rules: data on stdout, status and progress on stderr.

mod download;
mod lock;
mod serve;
mod to_wheel;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::settings::Settings;

/// Lock and download compute kernels from the Hugging Face Hub.
#[derive(Debug, Parser)]
#[command(name = "kernels", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,

    /// Print only errors.
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Download the kernels pinned in `kernels.lock` into the Hugging Face cache.
    Download(download::DownloadArgs),
    /// Resolve `[tool.kernels.dependencies]` and write `kernels.lock`.
    Lock(lock::LockArgs),
    /// Serve a mirror directory over the Hugging Face Hub HTTP API.
    Serve(serve::ServeArgs),
    /// Build Python wheels from the build variants of a kernel snapshot.
    ToWheel(to_wheel::ToWheelArgs),
    /// Re-hash the kernels pinned in `kernels.lock` in the cache; no network.
    Verify(verify::VerifyArgs),
}

/// Marks an error as a bug or environment failure: the process exits with 2
/// instead of 1.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("internal error: {0}")]
#[diagnostic(code(kernels::internal))]
pub struct InternalError(pub String);

/// Parses the command line, runs the command and maps the outcome to an exit code:
/// 0 success, 1 user error or stale state, 2 internal error.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = Settings::from_env();
    let result = match cli.command {
        Command::Download(args) => download::run(args, &settings, cli.quiet),
        Command::Lock(args) => lock::run(args, &settings, cli.quiet),
        Command::Serve(args) => serve::run(args, cli.quiet),
        Command::ToWheel(args) => to_wheel::run(args, &settings, cli.quiet),
        Command::Verify(args) => verify::run(args, &settings, cli.quiet),
    };
    match result {
        Ok(code) => code,
        Err(report) => {
            let internal = report.downcast_ref::<InternalError>().is_some();
            eprintln!("{report:?}");
            ExitCode::from(if internal { 2 } else { 1 })
        }
    }
}

/// Builds the tokio runtime used by the network commands.
pub(crate) fn runtime() -> miette::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| InternalError(format!("cannot start the async runtime: {err}")).into())
}
