//! `kernels serve`.
//!
//! Output contract (tests and scripts rely on it): the first stdout line is
//! the Hub endpoint URL (e.g. `http://127.0.0.1:41234`), flushed at once; one
//! status line on stderr names the number of repositories, the mirror and the
//! CDN URL. The server runs until SIGINT or SIGTERM.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::server;

/// Arguments of `kernels serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Mirror directory to serve (the layout of `kernels/`).
    pub mirror_dir: PathBuf,
    /// Address to bind the Hub listener to.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port of the Hub listener; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Port of the LFS CDN listener on `localhost`; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    pub cdn_port: u16,
    /// Tree listing page size (tests).
    #[arg(long, hide = true)]
    pub page_size: Option<usize>,
    /// Serve the `/__fixture/` request log and fault-injection routes (tests).
    #[arg(long, hide = true)]
    pub test_control: bool,
    /// Let the CDN accept requests that carry `Authorization` (tests).
    #[arg(long, hide = true)]
    pub cdn_allow_auth: bool,
}

/// Runs the server until interrupted.
pub fn run(args: ServeArgs, quiet: bool) -> miette::Result<ExitCode> {
    let options = server::ServeOptions {
        mirror_dir: args.mirror_dir,
        host: args.host,
        port: args.port,
        cdn_port: args.cdn_port,
        page_size: args.page_size,
        test_control: args.test_control,
        cdn_allow_auth: args.cdn_allow_auth,
    };
    let runtime = super::runtime()?;
    let result = runtime.block_on(server::serve(options, |endpoints, mirror| {
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
        Err(server::ServeError::Io(err)) => {
            Err(super::InternalError(format!("the server failed: {err}")).into())
        }
        Err(err) => Err(err.into()),
    }
}
