//! Command-line interface: the clap tree and dispatch only.
//!
//! Each subcommand lives in its own module (a private `mod` here) with an
//! `Args` struct and a `run` function that translates arguments into library
//! calls and prints results; commands never import each other: what several
//! share is the use-case layer [`project`] (locking, the lock read, the target
//! runtime, the Hub client). Output rules: data on stdout, status and
//! progress on stderr, all through the one [`printer::Printer`] that [`main`]
//! builds from the arguments; `--format json` documents are the types of
//! [`json`]; flags shared by several commands are the groups of [`args`].

mod add;
pub mod args;
mod audit;
mod benchmark;
mod cache;
mod check;
mod describe_api;
mod download;
mod env;
mod export;
mod info;
pub mod json;
mod lock;
mod mirror;
pub mod printer;
pub mod progress;
pub mod project;
mod reference;
mod serve;
pub mod settings;
mod to_wheel;
mod tree;
mod variants;
mod verify;
mod verify_signature;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cli::args::{LockModeArgs, project_dir};
use crate::cli::printer::{Printer, PrinterOptions};
use crate::cli::project::client::InternalError;
use crate::cli::settings::{LockFlags, Settings};

/// Lock and download compute kernels from the Hugging Face Hub.
#[derive(Debug, Parser)]
#[command(
    name = "kernels",
    // Says which `kernels` answered: the Python runtime has a `kernels`
    // command too (README.md, Usage: the table of which command survives).
    version = concat!(env!("CARGO_PKG_VERSION"), " (Rust lockfile tool)"),
    about,
    after_long_help = ENVIRONMENT_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,

    #[command(flatten)]
    global: GlobalArgs,
}

/// Options every subcommand accepts (`kernels <command> --help` lists them).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Also log what happens (requests, retries, checks) on stderr; `-vv` for more.
    /// `kernels lock --check -v` also lists every entry it looked at.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// `--locked` of the command, or a true `KERNELS_LOCKED` (set by [`main`]).
    #[arg(skip)]
    pub locked: bool,

    /// `--frozen` of the command, or a true `KERNELS_FROZEN` (set by [`main`]).
    #[arg(skip)]
    pub frozen: bool,

    /// When to colour diagnostics (`auto` follows the terminal and `NO_COLOR`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// The project directory (holding `pyproject.toml` and `kernels.lock`), for
    /// commands that take one. Default: the nearest directory from the current
    /// one upwards whose `pyproject.toml` has `[tool.kernels]`.
    #[arg(long, global = true, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// The environment section of `kernels --help`.
const ENVIRONMENT_HELP: &str = "\
Environment variables:
  HF_ENDPOINT              Hub URL (default https://huggingface.co)
  HF_TOKEN                 Hub token; also HUGGING_FACE_HUB_TOKEN,
                           HF_TOKEN_PATH
  HF_HUB_DISABLE_IMPLICIT_TOKEN
                           Send no token
  HF_OIDC_RESOURCE         Exchange a CI id token (HF_OIDC_ID_TOKEN)
                           for a Hub token
  SSL_CERT_FILE            Extra CA certificates; also SSL_CERT_DIR,
                           REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE
  HTTPS_PROXY              Proxy; also HTTP_PROXY, ALL_PROXY, NO_PROXY
                           (and lower case)
  KERNELS_CACHE            The hub cache (as --cache-dir); old name
                           HF_KERNELS_CACHE
  HF_HUB_DISABLE_SYMLINKS  Copies instead of links in snapshots
  HF_HUB_CACHE             The hub cache when KERNELS_CACHE is unset
  HF_HOME                  Default cache $HF_HOME/hub, token $HF_HOME/token
  HF_HUB_OFFLINE           No network (as --offline); also KERNELS_OFFLINE
  HF_HUB_ETAG_TIMEOUT      Seconds to connect and get headers (default 10)
  HF_HUB_DOWNLOAD_TIMEOUT  Seconds between received bytes (default 10)
  KERNELS_STALL_TIMEOUT    Seconds without body bytes before a retry
  KERNELS_MAX_RETRIES      Retries after a transient failure (default 5)
  KERNELS_API_TIMEOUT      Seconds for one whole API exchange (default 60)
  KERNELS_MAX_RATE_LIMIT_WAIT
                           Longest wait the Hub may ask for (default 300)
  KERNELS_LOCKED           As --locked
  KERNELS_FROZEN           As --frozen
  HF_HUB_DISABLE_PROGRESS_BARS
                           As --no-progress
  NO_COLOR                 No colour
  VIRTUAL_ENV              The Python environment torch is detected in
  SOURCE_DATE_EPOCH        File times in wheels built by to-wheel; the
                           creation time of kernels export
  UNSTABLE_KERNELS_ALL_LATEST
                           Read by the runtime (0.19+): newest vN loaded
  LOCAL_KERNELS            Read by the runtime: local folders loaded;
                           env, check and download note either one";

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

#[derive(Debug, Subcommand)]
enum Command {
    /// Add a kernel to `[tool.kernels.dependencies]` and lock it.
    Add(add::AddArgs),
    /// Remove kernels from `[tool.kernels.dependencies]` and from `kernels.lock`.
    Remove(add::RemoveArgs),
    /// Resolve `[tool.kernels.dependencies]` and write `kernels.lock`.
    Lock(lock::LockArgs),
    /// Download the kernels pinned in `kernels.lock` into the Hugging Face cache.
    Download(download::DownloadArgs),
    /// Import every locked kernel through the project's Python, offline, from the cache.
    ///
    /// After `kernels download`: per kernel, whether it loaded, the variant
    /// directory it loaded from and the ops it registered; through the
    /// installed `kernels` runtime's `load_kernel` when it reads the lock,
    /// else directly from the variant. Exit 1 with the Python error when one
    /// fails to import, or when one is not in the cache.
    Check(check::CheckArgs),
    /// Re-hash the kernels pinned in `kernels.lock` in the cache; no network.
    ///
    /// With `--signatures`, verify the Sigstore signature and digest of every
    /// cached variant of each locked kernel instead (offline).
    Verify(verify::VerifyArgs),
    /// Show the environment variants are chosen for, and where each value came from.
    ///
    /// In a project with a `kernels.lock`, also the variant each locked kernel
    /// gets and why every other is rejected (as `kernels download --explain`).
    Env(env::EnvCmdArgs),
    /// Show each dependency with its locked version, and what it depends on.
    Tree(tree::TreeArgs),
    /// List locked kernels with a newer compatible or newer overall version.
    ///
    /// Exit 0 when every kernel was checked (outdated or not); exit 1 when the
    /// refs of any could not be read: those are "not checked", never "up to
    /// date", and each cause is named once.
    Outdated(tree::OutdatedArgs),
    /// Describe a kernel, and whether each of its build variants fits the targets.
    ///
    /// From the Hub, the cache (offline) or a local path: what reference
    /// 0.17.2's `kernels info` prints, then each build variant with its
    /// backend, archs and fit for `--cuda-capability`, `--rocm-arch` and
    /// `--target-runtime`.
    Info(info::InfoArgs),
    /// Show a kernel version's build variants, which ones each environment can load, and why not.
    ///
    /// As reference 0.19.1's `kernels variants`: the newest version (or
    /// `--version N|latest`, `--all-versions`, `--revision R`), each build
    /// variant compatible or not (with the reason), and the one preferred.
    /// Beyond it: for every `[[tool.kernels.targets]]` entry of the project,
    /// unless the environment flags name one.
    Variants(variants::VariantsArgs),
    /// List a kernel's public functions and layers from its `symbols.json`, without importing it.
    ///
    /// As reference 0.19.1's `kernels describe-api`: the variant this
    /// environment prefers (as `kernels variants` marks it) of the newest
    /// version, `--version N` or `--revision R`, or of a local kernel
    /// directory; `--json` prints the whole `symbols.json` with `repo_id`,
    /// `revision` (or `path`) and `variant`.
    DescribeApi(describe_api::DescribeApiArgs),
    /// Deprecated (as in reference 0.19.1): use `kernels variants --all-versions`.
    ///
    /// Lists a kernel's versions (`vN` branches and release tags) with their
    /// build variants and whether one matches this environment.
    Versions(variants::VersionsArgs),
    /// Run the benchmarks shipped with the locked kernels, offline, from the cache.
    ///
    /// After `kernels download --with-benchmarks`: every `benchmark_*` method
    /// of the `kernels.benchmark.Benchmark` classes in each kernel's
    /// `benchmarks/benchmark*.py`, through the project's Python, against the
    /// locked variant: checked against its `verify_*` result, timed against it
    /// (CUDA events on a CUDA device, else the wall clock). Exit 1 when a
    /// workload does not match, fails, or takes longer than `--time-limit`.
    Benchmark(benchmark::BenchmarkArgs),
    /// Audit the signatures and provenance of every locked kernel in the cache; no network.
    ///
    /// Per locked kernel and cached variant (as `npm audit signatures`): the
    /// signature outcome and signer, whether metadata.json has a digest, the
    /// dirty flags of its provenance, the publisher's trust as far as known
    /// offline, and kernels cached as model-type repositories. Exit 1 when
    /// the project's trust settings refuse any variant.
    Audit(audit::AuditArgs),
    /// Fetch a kernel version's build variants from the Hub and verify their signatures.
    ///
    /// As reference 0.17.2's `kernels verify-signature`: version N is the
    /// branch `vN`; the variant for this environment, or every variant with
    /// `--all-variants`. One line per variant; exit 1 when any is not
    /// correctly signed by an accepted signer. The files are fetched into a
    /// scratch directory, never into the cache.
    VerifySignature(verify_signature::VerifySignatureArgs),
    /// Write a software bill of materials (CycloneDX, SPDX or JSON) of what `kernels.lock` pins.
    ///
    /// One component per build variant of each locked commit: repository,
    /// commit, variant, package URL, the variant hash of a variant-hash lock,
    /// and from each variant's `metadata.json` (read from the cache, else
    /// from the Hub) license, upstream and source URLs, builder provenance
    /// and dirty flag. Deterministic: a rerun writes the same bytes.
    Export(export::ExportArgs),
    /// Build Python wheels from the build variants of a kernel snapshot.
    ToWheel(to_wheel::ToWheelArgs),
    /// Write a mirror directory of what a project locks, or of named repositories.
    Mirror(mirror::MirrorArgs),
    /// Serve a mirror directory over the Hugging Face Hub HTTP API.
    Serve(serve::ServeArgs),
    /// Show where the cache is, list it, and prune leftovers.
    Cache(cache::CacheCmdArgs),
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
    let mut cli = Cli::command();
    for sub in cli.get_subcommands_mut() {
        *sub = short_version_only(std::mem::take(sub));
    }
    cli
}

/// `cmd` and its subcommands with `-V` as their only version flag: the
/// program's version, as `kernels -V` (and the top-level `--version`) print
/// it. `--version` of a subcommand is the reference's kernel version where
/// the reference has one (`info`, `benchmark`, …) and an unknown argument
/// everywhere else, so that it never means two things (issue 45).
fn short_version_only(cmd: clap::Command) -> clap::Command {
    let mut cmd = cmd
        .disable_version_flag(true)
        .version(env!("CARGO_PKG_VERSION"))
        .arg(
            clap::Arg::new("program_version")
                .short('V')
                .action(clap::ArgAction::Version)
                .help("Print the version of kernels"),
        );
    for sub in cmd.get_subcommands_mut() {
        *sub = short_version_only(std::mem::take(sub));
    }
    cmd
}

/// Parses the command line, runs the command and maps the outcome to an exit code:
/// 0 success, 1 user error or stale state, 2 internal error.
pub fn main() -> ExitCode {
    let mut cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|err| err.exit());
    install_report_handler(cli.global.color);
    let mut settings = Settings::from_env();
    let (lock_mode, cache, no_progress) = match &cli.command {
        Command::Download(a) => (a.lock_mode, Some(&a.cache), a.progress.no_progress),
        Command::Lock(a) => (a.lock_mode, Some(&a.cache), a.progress.no_progress),
        Command::Verify(a) => (a.lock_mode, Some(&a.cache), false),
        Command::Check(a) => (a.lock_mode, Some(&a.cache), false),
        Command::Benchmark(a) => (a.lock_mode, Some(&a.cache), false),
        Command::ToWheel(a) => (a.lock_mode, Some(&a.cache), a.progress.no_progress),
        Command::Cache(a) => (LockModeArgs::default(), Some(&a.cache), false),
        Command::Env(a) => (LockModeArgs::default(), Some(&a.cache), false),
        Command::Info(a) => (LockModeArgs::default(), Some(&a.cache), false),
        Command::Export(a) => (LockModeArgs::default(), Some(&a.cache), false),
        Command::Audit(a) => (LockModeArgs::default(), Some(&a.cache), false),
        _ => (LockModeArgs::default(), None, false),
    };
    if let Some(dir) = cache.and_then(|c| c.cache_dir.clone()) {
        // The same path as `KERNELS_CACHE` (clap reads it too) keeps that
        // source; otherwise the flag chose it.
        if settings.cache_dir != dir {
            settings.cache_dir_source = "--cache-dir";
        }
        settings.cache_dir = dir;
    }
    cli.global.locked = lock_mode.locked;
    cli.global.frozen = lock_mode.frozen;
    let printer = Printer::new(PrinterOptions {
        quiet: cli.global.quiet,
        verbosity: cli.global.verbose,
        color: settings::color_enabled(),
        no_progress: no_progress || settings.no_progress,
    });
    init_logging(&printer);
    // Given on the command line (not through the environment): for `to-wheel`,
    // `--locked`/`--frozen` also say "build from the project's lock".
    let explicit_lock_mode = if cli.global.locked {
        Some(to_wheel::FromLock::Locked)
    } else if cli.global.frozen {
        Some(to_wheel::FromLock::Frozen)
    } else {
        None
    };
    let env = LockFlags::from_env();
    if !cli.global.frozen {
        cli.global.locked |= env.locked;
    }
    if !cli.global.locked {
        cli.global.frozen |= env.frozen;
    }
    let global = cli.global;
    // HF_ENDPOINT and the proxies, checked before any command uses them.
    let urls = settings.check_urls().map_err(miette::Report::from);
    for note in &settings.notes {
        printer.status(format_args!("note: {note}"));
    }
    match urls.and_then(|()| {
        dispatch(
            cli.command,
            &settings,
            &global,
            &printer,
            explicit_lock_mode,
        )
    }) {
        Ok(code) => code,
        Err(report) => {
            let internal = report.downcast_ref::<InternalError>().is_some();
            printer.error(format_args!("{report:?}"));
            ExitCode::from(if internal { 2 } else { 1 })
        }
    }
}

/// Runs `cmd` with the settings, the global arguments and the printer of
/// this run.
fn dispatch(
    cmd: Command,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
    explicit_lock_mode: Option<to_wheel::FromLock>,
) -> miette::Result<ExitCode> {
    match cmd {
        Command::Add(args) => {
            add::run_add(args, &project_dir(None, global)?, settings, global, printer)
        }
        Command::Remove(args) => {
            add::run_remove(args, &project_dir(None, global)?, settings, global, printer)
        }
        Command::Tree(mut args) => {
            args.project.resolve(global)?;
            tree::run_tree(args, settings, global, printer)
        }
        Command::Outdated(args) => outdated(args, settings, global, printer),
        Command::Variants(a) => {
            variants::run_variants(a, &project_dir(None, global)?, settings, printer)
        }
        Command::DescribeApi(a) => {
            describe_api::run(a, &project_dir(None, global)?, settings, printer)
        }
        Command::Versions(a) => {
            variants::run_versions(a, &project_dir(None, global)?, settings, printer)
        }
        Command::Download(mut args) => {
            args.project.resolve(global)?;
            download::run_checked(args, settings, global, printer)
        }
        Command::Env(mut args) => {
            args.project.resolve(global)?;
            env::run(args, settings, printer)
        }
        Command::Export(mut args) => {
            args.project.resolve(global)?;
            export::run(args, settings, printer)
        }
        Command::Cache(args) => cache::run(args, settings, printer),
        Command::Info(args) => info::run(args, &project_dir(None, global)?, settings, printer),
        Command::Mirror(args) => mirror::run(args, settings, printer),
        Command::Lock(mut args) => {
            args.project.resolve(global)?;
            lock::run(args, settings, global, printer)
        }
        Command::Serve(args) => serve::run(args, printer),
        Command::ToWheel(args) => {
            to_wheel::run(args, explicit_lock_mode, settings, global, printer)
        }
        Command::Verify(mut args) => {
            args.project.resolve(global)?;
            verify::run_checked(args, settings, global, printer)
        }
        Command::Check(mut args) => {
            args.project.resolve(global)?;
            check::run_checked(args, settings, global, printer)
        }
        Command::VerifySignature(args) => {
            let dir = project_dir(None, global)?;
            verify_signature::run(args, &dir, settings, printer)
        }
        Command::Audit(mut args) => {
            args.project.resolve(global)?;
            audit::run(args, settings, printer)
        }
        Command::Benchmark(args) => benchmark::run_checked(args, settings, global, printer),
        Command::Completions(args) => completions(args.shell, printer),
        Command::GenerateCliReference => {
            printer.data_raw(reference::markdown(&command()));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `kernels completions SHELL`: the script for `shell` on stdout.
fn completions(shell: clap_complete::Shell, printer: &Printer) -> miette::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "kernels", &mut script);
    printer.data_raw(String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// `kernels outdated`, then, with `--benchmark` and outdated kernels, `kernels
/// benchmark` of those against the versions they could move to.
fn outdated(
    mut args: tree::OutdatedArgs,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    args.project.resolve(global)?;
    let project = args.project.clone();
    match tree::run_outdated(args, settings, global, printer)? {
        tree::Outdated::Done(code) => Ok(code),
        tree::Outdated::Benchmark(repos) => {
            benchmark::run_against(repos, &project, settings, global, printer)
        }
    }
}

/// Configures how diagnostics are drawn: graphical, coloured per `--color`
/// (`auto` leaves the decision to the terminal and `NO_COLOR`).
fn install_report_handler(color: ColorChoice) {
    let _ = miette::set_hook(Box::new(move |_| {
        // Never wrap: hints hold commands that must stay pasteable.
        let opts = miette::MietteHandlerOpts::new().wrap_lines(false);
        let opts = match color {
            ColorChoice::Auto => opts,
            ColorChoice::Always => opts.color(true),
            ColorChoice::Never => opts.color(false),
        };
        Box::new(opts.build())
    }));
}

/// `-v`: debug events of this crate on stderr (`-vv`: trace). Events carry
/// URLs and paths, never request headers, so no token is logged.
fn init_logging(printer: &Printer) {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match printer.verbosity() {
        0 => return,
        1 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let ansi = printer.color() && std::io::stderr().is_terminal();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(printer.log_writer())
        .with_ansi(ansi)
        .with_target(false);
    let filter = tracing_subscriber::filter::Targets::new().with_target("kernels", level);
    // Fails only if a subscriber is already set, which `main` never does twice.
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init();
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_environment_help_names_every_variable_a_user_sets() {
        // Read for their usual meaning, or spellings documented beside another name.
        let implied = [
            "HOME",
            "PATH",
            "XDG_CACHE_HOME",
            "HUGGINGFACE_HUB_CACHE",
            "HUGGING_FACE_HUB_TOKEN",
            "HF_TOKEN_PATH",
            "TRANSFORMERS_OFFLINE",
            "KERNELS_OFFLINE",
            "HF_OIDC_ID_TOKEN",
            "GITHUB_ACTIONS",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "HF_DEVICE_CODE_OAUTH_CLIENT_ID",
            "SSL_CERT_DIR",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
            "NO_PROXY",
            "no_proxy",
            "HF_KERNELS_CACHE",
            // Test-only switches, documented in docs/testing.md.
            "KERNELS_TEST_ASSUME_NO_FLOCK",
            "KERNELS_TEST_SYMLINK_ERRNO",
        ];
        for name in super::settings::ENV_VARS {
            assert!(
                implied.contains(name)
                    || super::ENVIRONMENT_HELP
                        .lines()
                        .any(|l| l.trim_start().split(' ').next() == Some(name)),
                "`kernels --help` does not list {name}"
            );
        }
    }
}
