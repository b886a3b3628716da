//! `kernels download`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::settings::Settings;

/// Arguments of `kernels download`.
#[derive(Debug, clap::Args)]
pub struct DownloadArgs {
    /// Project directory holding `kernels.lock`.
    #[arg(default_value = ".")]
    pub project_dir: PathBuf,
}

pub fn run(_args: DownloadArgs, _settings: &Settings, _quiet: bool) -> miette::Result<ExitCode> {
    Err(super::InternalError("download: not implemented".into()).into())
}
