//! `kernels lock`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::settings::Settings;

/// Arguments of `kernels lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Project directory holding `pyproject.toml`.
    #[arg(default_value = ".")]
    pub project_dir: PathBuf,
}

pub fn run(_args: LockArgs, _settings: &Settings, _quiet: bool) -> miette::Result<ExitCode> {
    Err(super::InternalError("lock: not implemented".into()).into())
}
