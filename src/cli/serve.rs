//! `kernels serve`.

use std::path::PathBuf;
use std::process::ExitCode;

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
}

pub fn run(_args: ServeArgs) -> miette::Result<ExitCode> {
    Err(super::InternalError("serve: not implemented".into()).into())
}
