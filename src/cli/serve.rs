//! `kernels serve`.
//!
//! Output contract (tests and scripts rely on it): the first stdout line is
//! the Hub endpoint URL (e.g. `http://127.0.0.1:41234`), flushed at once; one
//! status line on stderr names the number of repositories, the mirror and the
//! CDN URL. The server runs until SIGINT or SIGTERM; SIGHUP reloads the
//! mirror (one stderr line says whether that worked) and reopens the access log.

use super::printer::Printer;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Mirror layout, shown by `kernels serve --help`.
const LAYOUT_HELP: &str = r#"Mirror layout:
  <MIRROR_DIR>/orgs/<org>.toml        fullname, trusted_kernel_publisher
  <MIRROR_DIR>/repos/<kernels|models>/<owner>/<name>/repo.toml
    commits = ["c1", "c2"]            commit folders, oldest first
    [branches] main = "c2"            branch -> commit label or 40-hex sha
    [tags] "v1.0.0" = "c1"            also [converts] and [pull_requests]
    also_serve_as = ["model"]         also answer on /api/models/...
    private, allowed_tokens           hidden unless a listed token is sent
    gated = "auto" | "manual"         downloads need a listed token
    default_branch = "main"
    lfs = ["*.so"]                    default: filter=lfs lines of .gitattributes
    [synthetic]                       "c1:big.bin" = { size = N, seed = S, lfs = true }
  .../commits/<label>/commit.toml     optional: sha, title, date (UTC, ...Z)
  .../commits/<label>/tree/...        the files of that commit

The first line on stdout is the URL of the Hub listener (HF_ENDPOINT on this
machine). Symbolic links in the mirror must stay inside it. SIGHUP reloads the
mirror without dropping connections (a failed reload keeps the old one) and
reopens the access log; --watch also reloads when repositories, refs or commits
change."#;

/// Arguments of `kernels serve`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = LAYOUT_HELP)]
pub struct ServeArgs {
    /// Mirror directory to serve (the layout of `kernels/`).
    pub mirror_dir: PathBuf,
    /// Address to bind the Hub listener to.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port of the Hub listener; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Port of the LFS CDN listener; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    pub cdn_port: u16,
    /// Host name of the LFS CDN listener, bound and used in LFS redirects
    /// [default: localhost, or 127.0.0.1 when --host is localhost]. It must be a
    /// different host name from the one clients use for the Hub.
    #[arg(long)]
    pub cdn_host: Option<String>,
    /// Tree listing page size (tests).
    #[arg(long, hide = true)]
    pub page_size: Option<usize>,
    /// Serve the `/__fixture/` request log and fault-injection routes (tests).
    #[arg(long, hide = true)]
    pub test_control: bool,
    /// Let the CDN accept requests that carry `Authorization` (tests).
    #[arg(long, hide = true)]
    pub cdn_allow_auth: bool,
    /// Answer non-LFS downloads with a relative 307 to /api/resolve-cache/ (tests).
    #[arg(long, hide = true)]
    pub resolve_cache: bool,
    /// Base URL clients reach the Hub listener at (e.g. behind a proxy), used
    /// in absolute URLs such as the next-page `Link` [default: the listener's
    /// own URL]. The request's `Host` header is never used.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Base URL clients reach the LFS CDN listener at, used in LFS redirects
    /// [default: the CDN listener's own URL].
    #[arg(long, value_name = "URL")]
    pub cdn_public_url: Option<String>,
    /// Write an access log in the Combined Log Format to PATH (appending), or
    /// to stderr with `-`.
    #[arg(long, value_name = "PATH")]
    pub access_log: Option<String>,
    /// Seconds a client has to send a whole request head once it has started.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    pub header_timeout: Duration,
    /// Seconds a connection may stay open without a request (keep-alive), or
    /// without progress on its response.
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_secs)]
    pub idle_timeout: Duration,
    /// Open connections over both listeners. At the cap the longest-idle
    /// connection is closed; when none is idle, new ones get `503` with
    /// `Retry-After`. Lowered to fit the open-file limit.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// `Retry-After` seconds of the `503` beyond the connection cap.
    #[arg(long, value_name = "SECS", default_value_t = 1)]
    pub retry_after: u64,
    /// Reload the mirror when a repository, ref or commit is added, removed
    /// or changed (polled; SIGHUP reloads in any case).
    #[arg(long)]
    pub watch: bool,
    /// Seconds between two looks at the mirror with `--watch`.
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = parse_secs, requires = "watch")]
    pub watch_interval: Duration,
}

/// A positive number of seconds, fractions allowed.
fn parse_secs(value: &str) -> Result<Duration, String> {
    let secs: f64 = value
        .parse()
        .map_err(|_| format!("`{value}` is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 * 365.0 {
        return Err(format!("`{value}` must be a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The server options `args` ask for.
fn options(args: ServeArgs) -> kernels_serve::ServeOptions {
    kernels_serve::ServeOptions {
        mirror_dir: args.mirror_dir,
        host: args.host,
        port: args.port,
        cdn_port: args.cdn_port,
        cdn_host: args.cdn_host,
        page_size: args.page_size,
        test_control: args.test_control,
        cdn_allow_auth: args.cdn_allow_auth,
        resolve_cache: args.resolve_cache,
        public_url: args.public_url,
        cdn_public_url: args.cdn_public_url,
        limits: kernels_serve::Limits {
            header_timeout: args.header_timeout,
            idle_timeout: args.idle_timeout,
            max_connections: args.max_connections as usize,
            retry_after: args.retry_after,
        },
        access_log: args
            .access_log
            .as_deref()
            .map(kernels_serve::AccessLogTarget::parse),
        watch: args.watch.then_some(args.watch_interval),
    }
}

/// `repository` or `repositories`.
fn repositories(n: usize) -> &'static str {
    if n == 1 { "repository" } else { "repositories" }
}

/// Runs the server until interrupted.
pub fn run(args: ServeArgs, printer: &Printer) -> miette::Result<ExitCode> {
    let reload_printer = printer.clone();
    let on_reload = move |event: kernels_serve::ReloadEvent| match event {
        kernels_serve::ReloadEvent::Reloaded { repos } => {
            reload_printer.status(format_args!(
                "Reloaded the mirror: serving {repos} {}",
                repositories(repos)
            ));
        }
        kernels_serve::ReloadEvent::Failed(err) => {
            reload_printer.error(format_args!(
                "warning: reloading the mirror failed; still serving the previous one\n{:?}",
                miette::Report::new(err)
            ));
        }
    };
    let runtime = super::project::client::runtime()?;
    let result = runtime.block_on(kernels_serve::serve(
        options(args),
        |endpoints, mirror| {
            // A closed stdout must not stop the server; the URL is also on stderr.
            printer.data_lenient(&endpoints.hub_local);
            let n = mirror.repos.len();
            let public =
                if endpoints.hub != endpoints.hub_local || endpoints.cdn != endpoints.cdn_local {
                    format!("; public URLs {} and {}", endpoints.hub, endpoints.cdn)
                } else {
                    String::new()
                };
            printer.status(format_args!(
                "Serving {n} {} from {} at {} (LFS CDN {}{public}); press Ctrl-C to stop",
                repositories(n),
                mirror.root.display(),
                endpoints.hub_local,
                endpoints.cdn_local
            ));
        },
        on_reload,
    ));
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(kernels_serve::ServeError::Io(err)) => {
            Err(super::project::client::InternalError(format!("the server failed: {err}")).into())
        }
        Err(err) => Err(err.into()),
    }
}
