//! `kernels verify`.

mod local;
mod signatures;

use std::path::Path;
use std::process::ExitCode;

use super::json::{ErrorDoc, JudgedDoc, ProblemDoc, VerifiedDoc, VerifyDoc};
use super::printer::Printer;
use super::progress::{first_fitting, human_bytes, line_width, plural};
use super::project::profile::other_folder_note;
use crate::cli::settings::Settings;
use crate::install::verify::{KernelVerification, Problem, verify_kernels_fit};

use super::args::SelectArgs;
use super::project::read::{read_lock, shell_path};

/// Arguments of `kernels verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: super::args::ProjectArgs,

    /// Which variants to check (the same selection as `kernels download`).
    #[command(flatten)]
    pub select: SelectArgs,

    /// Output format (on stdout): every problem as a line, or one JSON document.
    #[arg(long, value_enum, default_value_t = super::args::OutputFormat::Text)]
    pub format: super::args::OutputFormat,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::args::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::args::CacheArgs,

    /// Verify the Sigstore signature and digest of each selected cached
    /// variant instead of re-hashing against the lock: one line per variant
    /// with the reference's outcome name; exit 1 on an invalid signature,
    /// metadata or digest, on an unsigned variant with `--require-signed`,
    /// and on a kernel not in the cache. Offline.
    #[arg(long)]
    pub signatures: bool,

    /// `--trust-root`, `--require-signed` (with `--signatures`).
    #[command(flatten)]
    pub trust: super::args::TrustArgs,
}

/// `kernels verify` found differences between the lock and the cache.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} in {kernels} of {}: the cache does not match kernels.lock", plural(*problems, "problem"), plural(*total, "kernel"))]
#[diagnostic(code(kernels::verify::failed))]
struct VerifyFailed {
    problems: usize,
    kernels: usize,
    total: usize,
    #[help]
    help: String,
}

/// `kernels verify` as the command line runs it: the offline stale-lock gate
/// ([`super::project::stale::ensure_current`]; `verify` makes no request), then
/// [`run`]; with `--format json`, a failed gate still prints one document.
pub fn run_checked(
    mut args: VerifyArgs,
    settings: &Settings,
    global: &super::GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    // `KERNELS_FROZEN` counts as `--frozen` from here on.
    args.lock_mode.frozen = global.frozen;
    if let Some(build) = local::local_build(&args.project.project_dir) {
        return local::run(&build?, &args, printer);
    }
    let json = args.format == super::args::OutputFormat::Json;
    super::project::stale::ensure_current_offline(
        "verify",
        &args.project.project_dir,
        super::project::stale::LockTarget {
            runtime: args.select.runtime.version(),
            repo_type: args.select.repo.repo_type.map(Into::into),
        },
        settings,
        global,
        printer,
        |report| {
            if json {
                print_failure(settings, printer, report);
            }
        },
    )?;
    run(args, settings, printer)
}

/// Re-hashes what the lock selects in the cache without any request. Every
/// problem is printed on stdout as `owner/name@abcdef1: <problem>`; a summary
/// line per verified kernel goes to stderr. Exit 0 when everything verifies,
/// 1 on any difference.
pub fn run(args: VerifyArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let json = args.format == super::args::OutputFormat::Json;
    let printer = &printer.quiet_if(json);
    let fail_json = |report: &miette::Report| {
        if json {
            print_failure(settings, printer, report);
        }
    };
    let read = read_project_lock(&args, settings, printer).inspect_err(fail_json)?;
    let cache = settings.cache();
    let checks = check_kernels(&cache, &read, &args.project.project_dir).inspect_err(fail_json)?;
    // A bundle proves nothing about an unsigned variant's files: a variant
    // nothing vouches for (a planted directory) fails `--signatures` as it
    // fails the plain check, with the plain report.
    let unvouched = checks
        .iter()
        .flat_map(|c| &c.problems)
        .any(|p| matches!(p, Problem::Unvouched { .. } | Problem::PinMismatch { .. }));
    if args.signatures && !unvouched {
        return signatures::run(
            &read,
            &args.project.project_dir,
            &args.trust,
            json,
            settings,
            printer,
        );
    }
    if json {
        let judged = judged_doc(&args.project.project_dir, &read.selection);
        return Ok(print_json(settings, printer, &checks, judged));
    }
    super::project::fit::print_fits(
        printer,
        &read.fit,
        &read.selection,
        checks.iter().map(|c| (c.label(), &c.fit)),
    );
    print_other_folder_notes(&cache, read.repo_type, &checks, printer);
    let snapshot = |check: &KernelVerification| {
        cache
            .repo(&check.repo_id, read.repo_type)
            .snapshot_dir(check.commit.as_str())
    };
    print_text(&args, printer, &checks, &snapshot)
}

/// With several `[[tool.kernels.targets]]` in the project's
/// `pyproject.toml`, which environment `selection` judged and the declared
/// targets (the JSON of the note the text output prints once); `None`
/// otherwise.
fn judged_doc(
    project_dir: &Path,
    selection: &crate::variant::VariantSelection,
) -> Option<JudgedDoc> {
    let tool = crate::lock::manifest::ToolSettings::read(project_dir)
        .ok()
        .flatten()?;
    let manifest = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
    let note = crate::lock::manifest::ToolSettings::several_targets_note(Some(&tool), &manifest)?;
    let (envs, _) = super::project::declared::declared_envs(&tool, &manifest);
    Some(JudgedDoc {
        environment: match selection {
            crate::variant::VariantSelection::Detected { env, .. } => Some(env.describe()),
            _ => None,
        },
        declared_targets: envs
            .iter()
            .map(|env| format!("{} ({})", env.key, env.label))
            .collect(),
        note,
    })
}

/// The project's lock as `kernels verify` reads it: for the project's
/// interpreter (its modules and probe receipts), `--frozen` kept.
fn read_project_lock(
    args: &VerifyArgs,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<super::project::read::LockRead> {
    let python = super::project::read::lock_reader_python(&args.project.project_dir, settings);
    read_lock(
        &args.project.project_dir,
        &args.select,
        &python,
        printer,
        args.lock_mode.frozen,
    )
}

/// Every locked kernel checked in the cache: its files and fit, what vouches
/// for each variant (signature, receipt, `kernels.lock.provenance` pins).
/// Errors: a variant whose files or signer differ from
/// `kernels.lock.provenance` (linked by an older version of this tool).
fn check_kernels(
    cache: &kernels_cache::HubCache,
    read: &super::project::read::LockRead,
    project_dir: &Path,
) -> miette::Result<Vec<KernelVerification>> {
    let mut checks = verify_kernels_fit(
        cache,
        read.repo_type,
        &read.kernels,
        &read.selection,
        Some(&read.fit),
    );
    let pins = crate::install::check::provenance::file_pins(project_dir);
    crate::install::vouch::check(cache, read.repo_type, &read.kernels, &mut checks, &pins);
    // A variant whose files or signer differ from kernels.lock.provenance
    // (linked by an older version of this tool) fails both forms.
    if let Some(recorded) = crate::install::check::provenance::Recorded::read(project_dir) {
        crate::install::check::provenance::check_cache(cache, read.repo_type, &checks, &recorded)
            .map_err(miette::Report::new)?;
    }
    Ok(checks)
}

/// `note: …` for each kernel missing from the cache that another cache
/// folder (another repository type) holds.
fn print_other_folder_notes(
    cache: &kernels_cache::HubCache,
    repo_type: kernels_types::wire::RepoType,
    checks: &[KernelVerification],
    printer: &Printer,
) {
    for check in checks {
        let missing = check
            .problems
            .iter()
            .any(|p| matches!(p, Problem::NotCached { .. }));
        let note = missing
            .then(|| other_folder_note(cache, repo_type, &check.repo_id, &check.commit))
            .flatten();
        if let Some(note) = note {
            printer.status(format_args!("note: {note}"));
        }
    }
}

/// What repairs the cache, gathered from the problems of a verification:
/// `kernels download` for what it fixes (`fixable`), `kernels lock` for
/// variants without a hash (`needs_lock`), the removal of a variant whose
/// metadata.json cannot be read (`invalid`), and for each cached variant the
/// target runtime would load and refuse (`refused`, its directories) their
/// removal: `kernels download` leaves a complete variant directory in place,
/// and the runtime takes the best one it finds. So for a variant whose files
/// differ from its metadata.json digest (`tampered`): removed, then
/// downloaded. A locked commit without builds (`no_builds`) needs another
/// version.
#[derive(Default)]
struct Repairs {
    fixable: bool,
    needs_lock: bool,
    invalid: bool,
    no_builds: bool,
    refused: Vec<std::path::PathBuf>,
    tampered: Vec<std::path::PathBuf>,
    /// Variants nothing vouches for, or whose files differ from the hash
    /// kernels.lock.provenance records: removed, then downloaded (an online
    /// download of a complete cache fetches nothing).
    unvouched: Vec<std::path::PathBuf>,
    /// What would fit, for kernels none of whose locked variants suits the
    /// environment (no download helps them).
    nothing_fits: Vec<String>,
}

impl Repairs {
    /// Notes what repairs `problem`, found in the snapshot `snapshot`.
    fn record(&mut self, problem: &Problem, snapshot: &Path) {
        let unfit = match problem {
            Problem::Refused { variant, .. } => {
                self.refused.push(snapshot.join("build").join(variant));
                true
            }
            Problem::InvalidMetadata { .. } => {
                self.invalid = true;
                true
            }
            Problem::Digest { variant, .. } => {
                let dir = snapshot.join("build").join(variant);
                if !self.tampered.contains(&dir) {
                    self.tampered.push(dir);
                }
                true
            }
            Problem::Unvouched { variant, .. } | Problem::PinMismatch { variant, .. } => {
                let dir = snapshot.join("build").join(variant);
                if !self.unvouched.contains(&dir) {
                    self.unvouched.push(dir);
                }
                true
            }
            Problem::NoBuildVariants => {
                self.no_builds = true;
                true
            }
            Problem::NothingFits { help, .. } => {
                if !self.nothing_fits.contains(help) {
                    self.nothing_fits.push(help.clone());
                }
                true
            }
            _ => false,
        };
        self.fixable |= problem.fixed_by_download();
        self.needs_lock |= !problem.fixed_by_download() && !unfit;
    }

    /// The error's help: one paragraph per kind of repair, in a fixed order.
    fn help(&self, args: &VerifyArgs) -> String {
        let mut help = Vec::new();
        if self.fixable {
            help.push(format!(
                "repair the cache with:\n\n    kernels download {}{}",
                shell_path(&args.project.project_dir),
                args.select.flags()
            ));
        }
        if self.needs_lock {
            help.push("variants without a hash need `kernels lock` first".to_owned());
        }
        if !self.refused.is_empty() {
            let dirs: Vec<String> = self.refused.iter().map(|d| shell_path(d)).collect();
            help.push(format!(
                "the target runtime would load a cached variant and refuse it: remove it so that the runtime takes one that fits (`kernels download` places one), or lock a version that has one (`kernels variants REPO --all-versions`):\n\n    rm -r {}",
                dirs.join(" ")
            ));
        }
        if !self.tampered.is_empty() {
            let dirs: Vec<String> = self.tampered.iter().map(|d| shell_path(d)).collect();
            help.push(format!(
                "a cached variant's files are not the ones its metadata.json digest names (changed, added or removed after the build): remove it and run `kernels download` again, which refuses files that do not match:\n\n    rm -r {}",
                dirs.join(" ")
            ));
        }
        if !self.unvouched.is_empty() {
            let dirs: Vec<String> = self.unvouched.iter().map(|d| shell_path(d)).collect();
            help.push(format!(
                "nothing vouches for a cached variant's files, or they are not the ones kernels.lock.provenance recorded: remove it and run `kernels download` online, which fetches it from the Hub's listing if the locked commit has it:\n\n    rm -r {}",
                dirs.join(" ")
            ));
        }
        if self.invalid {
            help.push("a cached variant's metadata.json cannot be read: remove its directory and run `kernels download` again".to_owned());
        }
        help.extend(self.nothing_fits.iter().cloned());
        if self.no_builds {
            help.push("a locked commit without build variants needs another version: lock one that has builds (`kernels variants REPO --all-versions` lists them), or `kernels remove REPO`".to_owned());
        }
        help.join("\n\n")
    }
}

/// The `--format json` document of a verification; exit 1 on any difference.
fn print_json(
    settings: &Settings,
    printer: &Printer,
    checks: &[KernelVerification],
    judged: Option<JudgedDoc>,
) -> ExitCode {
    let ok = checks.iter().all(|c| c.is_ok());
    printer.json(&VerifyDoc {
        schema: 1,
        command: "verify",
        ok,
        cache_dir: &settings.cache_dir,
        kernels: checks.iter().map(verified_doc).collect(),
        warnings: checks
            .iter()
            .flat_map(|c| &c.warnings)
            .map(|w| w.to_string())
            .collect(),
        error: None,
        judged,
    });
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The text report: warnings, notes and one line per verified kernel on
/// stderr, every problem on stdout; the error names the repair command.
fn print_text(
    args: &VerifyArgs,
    printer: &Printer,
    checks: &[KernelVerification],
    snapshot: &dyn Fn(&KernelVerification) -> std::path::PathBuf,
) -> miette::Result<ExitCode> {
    let mut problems = 0;
    let mut failed = 0;
    let mut repairs = Repairs::default();
    for warning in checks.iter().flat_map(|check| &check.warnings) {
        printer.status(format_args!("warning: {warning}"));
    }
    for check in checks {
        if !check.copies.is_empty() {
            printer.status(format_args!(
                "note: {}: {} file(s) are copies instead of links to blobs (verified by content): {}",
                check.label(),
                check.copies.len(),
                check.copies.join(", ")
            ));
        }
        if check.is_ok() {
            printer.status(verified_line(check));
            continue;
        }
        failed += 1;
        for problem in &check.problems {
            problems += 1;
            repairs.record(problem, &snapshot(check));
            printer.data(format_args!("{}: {problem}", check.label()));
        }
    }
    if failed == 0 {
        let files: usize = checks.iter().map(|c| c.file_count()).sum();
        let bytes = kernels_types::size::total(checks.iter().map(|c| c.total_bytes()));
        printer.status(format_args!(
            "Verified {}: {}, {}",
            plural(checks.len(), "kernel"),
            plural(files, "file"),
            human_bytes(bytes)
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let help = repairs.help(args);
    Err(VerifyFailed {
        problems,
        kernels: failed,
        total: checks.len(),
        help,
    }
    .into())
}

/// `Verified owner/name@abcdef1: 2 variants, 7 files, 3.00 MiB`, fitted to
/// the terminal.
fn verified_line(check: &KernelVerification) -> String {
    let (label, size) = (check.label(), human_bytes(check.total_bytes()));
    let variants = plural(check.variants.len(), "variant");
    first_fitting(
        &[
            format!(
                "Verified {label}: {variants}, {}, {size}",
                plural(check.file_count(), "file")
            ),
            format!("Verified {label}: {variants}, {size}"),
            format!("{label}: {size}"),
        ],
        line_width(),
    )
}

/// The `--format json` document of a verification that could not start (the
/// lock stale or missing, torch not found): still one document, the failure
/// typed in `error`.
pub(super) fn print_failure(settings: &Settings, printer: &Printer, report: &miette::Report) {
    printer.json(&VerifyDoc {
        schema: 1,
        command: "verify",
        ok: false,
        cache_dir: &settings.cache_dir,
        kernels: Vec::new(),
        warnings: Vec::new(),
        error: Some(ErrorDoc::of(report)),
        judged: None,
    });
}

/// One verified kernel as typed JSON.
fn verified_doc(check: &KernelVerification) -> VerifiedDoc {
    VerifiedDoc {
        repo_id: check.repo_id.to_string(),
        commit: check.commit.clone(),
        ok: check.is_ok(),
        variants: check.variants.keys().map(ToString::to_string).collect(),
        files: check.file_count(),
        bytes: check.total_bytes(),
        problems: check
            .problems
            .iter()
            .map(|p| ProblemDoc {
                problem: super::json::problem_kind(p),
                message: p.to_string(),
            })
            .collect(),
        fit: super::json::FitDoc::of(&check.fit),
    }
}
