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

    /// Also log what happens (requests, retries, checks) on stderr; `-vv` for more.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
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
    init_logging(cli.verbose);
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

/// `-v`: debug events of this crate on stderr (`-vv`: trace). Events carry
/// URLs and paths, never request headers, so no token is logged.
fn init_logging(verbose: u8) {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match verbose {
        0 => return,
        1 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let ansi = crate::settings::color_enabled() && std::io::stderr().is_terminal();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false);
    let filter = tracing_subscriber::filter::Targets::new().with_target("kernels", level);
    // Fails only if a subscriber is already set, which `main` never does twice.
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init();
}

/// Builds the tokio runtime used by the network commands.
pub(crate) fn runtime() -> miette::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| InternalError(format!("cannot start the async runtime: {err}")).into())
}
