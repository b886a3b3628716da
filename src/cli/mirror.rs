//! `kernels mirror`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::printer::Printer;
use super::progress::human_bytes;
use crate::cli::settings::Settings;
use crate::mirror::{DEFAULT_CONCURRENCY, MirrorSource, RepoSpec, mirror};
use kernels_hub::HubClient;

/// Arguments of `kernels mirror`.
#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    /// A project directory (holding `kernels.lock`; default `.`), or one or more
    /// repositories as `owner/name` or `owner/name@REVISION` (a branch, tag or
    /// commit; default: the default branch).
    #[arg(value_name = "PROJECT_DIR|REPO[@REVISION]")]
    pub sources: Vec<String>,

    /// The mirror directory to write: new, empty, or a mirror written earlier
    /// (only commits it does not hold yet are fetched). (Old spelling: `--out`.)
    #[arg(long = "output", short = 'o', alias = "out", value_name = "DIR")]
    pub out: PathBuf,

    /// With repositories: mirror every branch and tag (each at its commit).
    #[arg(long)]
    pub all_refs: bool,

    /// Maximum number of files downloaded at the same time.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
enum MirrorCliError {
    #[error("`{0}` is neither a project directory nor a repository: {1}")]
    #[diagnostic(
        code(kernels::mirror::bad_source),
        help("pass a directory holding kernels.lock, or repositories as `owner/name[@REVISION]`")
    )]
    BadSource(String, String),

    #[error("--all-refs applies to named repositories, not to a project")]
    #[diagnostic(
        code(kernels::mirror::all_refs_project),
        help(
            "a project's mirror holds what its lock pins; name repositories to mirror all their refs"
        )
    )]
    AllRefsWithProject,
}

fn is_project(path: &Path) -> bool {
    path.join(crate::lock::format::LOCK_FILE_NAME).is_file()
        || path
            .join(crate::lock::manifest::MANIFEST_FILE_NAME)
            .is_file()
}

fn source(args: &MirrorArgs) -> miette::Result<MirrorSource> {
    let project = match args.sources.as_slice() {
        [] => Some(PathBuf::from(".")),
        [one] if is_project(Path::new(one)) => Some(PathBuf::from(one)),
        _ => None,
    };
    if let Some(dir) = project {
        if args.all_refs {
            return Err(MirrorCliError::AllRefsWithProject.into());
        }
        return Ok(MirrorSource::Project(dir));
    }
    let repos = args
        .sources
        .iter()
        .map(|s| {
            s.parse::<RepoSpec>()
                .map_err(|err| MirrorCliError::BadSource(s.clone(), err))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(MirrorSource::Repos {
        repos,
        all_refs: args.all_refs,
    })
}

/// Writes the mirror; one line per repository on stderr.
pub fn run(args: MirrorArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let source = source(&args)?;
    let client = HubClient::new(&settings.client_config(printer))?;
    let runtime = super::project::client::runtime()?;
    let reports = runtime.block_on(mirror(&client, &source, &args.out, args.concurrency.max(1)))?;
    for report in &reports {
        printer.status(format_args!(
            "Mirrored {} ({}): {} new commit(s), {} kept, {} ref(s); fetched {} file(s), {}",
            report.repo_id,
            report.repo_type.as_str(),
            report.new_commits,
            report.kept_commits,
            report.refs,
            report.fetched_files,
            human_bytes(report.fetched_bytes)
        ));
    }
    printer.status(format_args!("Mirror written to {}", args.out.display()));
    Ok(ExitCode::SUCCESS)
}
