//! Command-line interface: clap definitions and dispatch only.
//!
//! Each subcommand lives in its own module with an `Args` struct and a `run`
//! function that translates arguments into library calls and prints results.
//! Output rules: data on stdout, status and progress on stderr.

mod download;
mod lock;
mod reference;
mod serve;
mod to_wheel;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::settings::{LockFlags, Settings};

/// Lock and download compute kernels from the Hugging Face Hub.
#[derive(Debug, Parser)]
#[command(name = "kernels", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,

    #[command(flatten)]
    global: GlobalArgs,
}

/// Options every subcommand accepts (`kernels <command> --help` lists them).
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Print more detail, for example every entry `kernels lock --check` looked at.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Require an up-to-date lock: fail, without changing anything, when
    /// `kernels.lock` is missing or when resolving `pyproject.toml` again would change
    /// it. Also set by a true `KERNELS_LOCKED`.
    #[arg(long, global = true, conflicts_with = "frozen")]
    pub locked: bool,

    /// Use `kernels.lock` as it is: no check that it still matches `pyproject.toml`,
    /// and no update of it; fail when it is missing. Also set by a true
    /// `KERNELS_FROZEN` (which `kernels lock --check` ignores).
    #[arg(long, global = true)]
    pub frozen: bool,

    /// Make no network request: use only local files and the Hub cache. Also set by
    /// a true `KERNELS_OFFLINE` or `HF_HUB_OFFLINE`.
    #[arg(long, global = true)]
    pub offline: bool,

    /// When to colour diagnostics (`auto` follows the terminal and `NO_COLOR`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Output format of the data printed on stdout (schemas in docs/json-output.md).
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// `--color` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Human-readable text.
    Text,
    /// One JSON document on stdout.
    Json,
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
    /// Print a shell completion script on stdout.
    Completions(CompletionsArgs),
    /// Print the Markdown command-line reference (docs/cli.md) on stdout.
    #[command(hide = true)]
    GenerateCliReference,
}

/// Arguments of `kernels completions`.
#[derive(Debug, clap::Args)]
struct CompletionsArgs {
    /// The shell to generate the script for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// The clap command tree (for completions, the reference and tests).
pub fn command() -> clap::Command {
    Cli::command()
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
    let mut cli = Cli::parse();
    install_report_handler(cli.global.color);
    let mut settings = Settings::from_env();
    settings.offline |= cli.global.offline;
    cli.global.offline = settings.offline;
    let env = LockFlags::from_env();
    if !cli.global.frozen {
        cli.global.locked |= env.locked;
    }
    if !cli.global.locked {
        cli.global.frozen |= env.frozen;
    }
    let global = cli.global;
    let quiet = global.quiet;
    let result = match cli.command {
        Command::Download(args) => {
            lock::ensure_locked(&args.project_dir, args.repo_type.into(), &settings, &global)
                .and_then(|()| download::run(args, &settings, quiet))
        }
        Command::Lock(args) => lock::run(args, &settings, &global),
        Command::Serve(args) => serve::run(args, quiet),
        Command::ToWheel(args) => to_wheel::run(args, &settings, quiet),
        Command::Completions(args) => {
            clap_complete::generate(
                args.shell,
                &mut command(),
                "kernels",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::GenerateCliReference => {
            print!("{}", reference::markdown(&command()));
            Ok(ExitCode::SUCCESS)
        }
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

/// Configures how diagnostics are drawn: graphical, coloured per `--color`
/// (`auto` leaves the decision to the terminal and `NO_COLOR`).
fn install_report_handler(color: ColorChoice) {
    let _ = miette::set_hook(Box::new(move |_| {
        let opts = miette::MietteHandlerOpts::new();
        let opts = match color {
            ColorChoice::Auto => opts,
            ColorChoice::Always => opts.color(true),
            ColorChoice::Never => opts.color(false),
        };
        Box::new(opts.build())
    }));
}

/// Builds the tokio runtime used by the network commands.
pub(crate) fn runtime() -> miette::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| InternalError(format!("cannot start the async runtime: {err}")).into())
}
