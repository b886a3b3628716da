//! `kernels serve`.
//!
//! Output contract (tests and scripts rely on it): the first stdout line is
//! the Hub endpoint URL (e.g. `http://127.0.0.1:41234`), flushed at once; one
//! status line on stderr names the number of repositories, the mirror and the
//! CDN URL. The server runs until SIGINT or SIGTERM.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

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

The first line on stdout is the Hub URL to use as HF_ENDPOINT."#;

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
}

/// Runs the server until interrupted.
pub fn run(args: ServeArgs, quiet: bool) -> miette::Result<ExitCode> {
    let options = kernels_serve::ServeOptions {
        mirror_dir: args.mirror_dir,
        host: args.host,
        port: args.port,
        cdn_port: args.cdn_port,
        cdn_host: args.cdn_host,
        page_size: args.page_size,
        test_control: args.test_control,
        cdn_allow_auth: args.cdn_allow_auth,
        resolve_cache: args.resolve_cache,
    };
    let runtime = super::runtime()?;
    let result = runtime.block_on(kernels_serve::serve(options, |endpoints, mirror| {
        let mut stdout = std::io::stdout().lock();
        // A closed stdout must not stop the server; the URL is also on stderr.
        let _ = writeln!(stdout, "{}", endpoints.hub);
        let _ = stdout.flush();
        if !quiet {
            let n = mirror.repos.len();
            eprintln!(
                "Serving {n} {} from {} at {} (LFS CDN {}); press Ctrl-C to stop",
                if n == 1 { "repository" } else { "repositories" },
                mirror.root.display(),
                endpoints.hub,
                endpoints.cdn
            );
        }
    }));
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(kernels_serve::ServeError::Io(err)) => {
            Err(super::InternalError(format!("the server failed: {err}")).into())
        }
        Err(err) => Err(err.into()),
    }
}
