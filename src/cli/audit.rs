//! `kernels audit [PROJECT_DIR]`: the signatures and provenance of every
//! locked kernel in the cache, offline ([`crate::signatures::audit`]).

use std::process::ExitCode;

use kernels_types::wire::RepoType;

use super::args::{CacheArgs, OutputFormat};
use super::args::{ProjectArgs, TrustArgs};
use super::json::{AuditDoc, AuditKernelDoc, AuditVariantDoc, SignatureDoc};
use super::printer::Printer;
use super::progress::plural;
use super::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::manifest::ToolSettings;
use crate::signatures::audit::{KernelAudit, VariantAudit, audit};
use crate::signatures::{Verdict, outcome_detail};

/// Arguments of `kernels audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: ProjectArgs,

    /// `--trust-root`, `--require-signed`.
    #[command(flatten)]
    pub trust: TrustArgs,

    /// Output format on stdout: a block per kernel, or one JSON document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The trust settings refuse a cached variant.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} of {} refused by the project's trust settings", plural(*refused, "variant"), plural(*kernels, "kernel"))]
#[diagnostic(
    code(kernels::audit::refused),
    help(
        "each refused variant is listed above with its outcome: a variant whose signature, metadata or digest fails is not the one its publisher built (remove it from the cache and run `kernels download`); an unsigned one is refused by `require-signed`; a signer that is not accepted can be added under [tool.kernels.signers] in pyproject.toml"
    )
)]
struct AuditRefused {
    refused: usize,
    kernels: usize,
}

/// Runs `kernels audit`: exit 0 when every cached variant is accepted
/// (unsigned ones unless `require-signed`), else exit 1.
pub fn run(args: AuditArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let dir = &args.project.project_dir;
    let lock_path = dir.join(LOCK_FILE_NAME);
    if !lock_path.is_file() {
        return Err(super::project::read::no_lock_error(dir));
    }
    let kernels = Lockfile::read(&lock_path)?.locked_kernels(&lock_path)?;
    let tool = ToolSettings::read(dir)?.unwrap_or_default();
    let trust = args.trust.apply(tool.signing);
    let root = args.trust.root(&trust, dir)?;
    let audits = audit(&settings.cache(), &kernels, &tool.trust, &trust, &root);
    let refused: usize = audits
        .iter()
        .flat_map(|k| &k.variants)
        .filter(|v| v.check.verdict == Verdict::Refused)
        .count();
    if args.format == OutputFormat::Json {
        printer.json(&AuditDoc {
            schema: 1,
            command: "audit",
            ok: refused == 0,
            trust_root: super::json::root_name(root.origin()),
            require_signed: trust.require_signed,
            kernels: audits.iter().map(kernel_doc).collect(),
        });
        return Ok(if refused == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    for kernel in &audits {
        print_kernel(printer, kernel);
    }
    let variants: usize = audits.iter().map(|k| k.variants.len()).sum();
    if refused > 0 {
        let kernels = audits.iter().filter(|k| k.is_refused()).count();
        return Err(AuditRefused { refused, kernels }.into());
    }
    printer.status(format_args!(
        "Audited {} of {}: none refused",
        plural(variants, "cached variant"),
        plural(audits.len(), "locked kernel")
    ));
    Ok(ExitCode::SUCCESS)
}

fn repo_type_name(repo_type: RepoType) -> &'static str {
    match repo_type {
        RepoType::Kernel => "kernel",
        RepoType::Model => "model",
    }
}

/// `owner/name@abcdef1 (kernel repository, publisher unknown)`, then a line
/// per cached variant.
fn print_kernel(printer: &Printer, kernel: &KernelAudit) {
    let label = crate::install::plan::label(&kernel.repo_id, &kernel.commit);
    let publisher = kernel.publisher.name();
    let Some(repo_type) = kernel.repo_type else {
        printer.data(format_args!(
            "{label}: not in the cache (run `kernels download`), publisher {publisher}"
        ));
        return;
    };
    let kind = match repo_type {
        RepoType::Kernel => "kernel repository",
        RepoType::Model => "model-type repository (a models-- cache folder)",
    };
    printer.data(format_args!("{label} ({kind}, publisher {publisher})"));
    for variant in &kernel.variants {
        printer.data(format_args!("  {}", variant_line(variant)));
    }
}

/// `torch-cpu: Success, signed by … (Rekor log index 3); accepted; digest; clean`.
fn variant_line(variant: &VariantAudit) -> String {
    let check = &variant.check;
    let outcome = match outcome_detail(&check.outcome) {
        Some(detail) => format!("{}: {detail}", check.outcome.name()),
        None => check.outcome.name().to_owned(),
    };
    let digest = if variant.digest {
        "digest"
    } else {
        "no digest"
    };
    let dirty = match variant.dirty {
        Some(true) => "dirty build",
        Some(false) => "clean build",
        None => "no provenance",
    };
    format!(
        "{}: {} [{outcome}]; {digest}; {dirty}",
        check.variant,
        check.verdict.name()
    )
}

fn kernel_doc(kernel: &KernelAudit) -> AuditKernelDoc {
    AuditKernelDoc {
        repo_id: kernel.repo_id.to_string(),
        commit: kernel.commit.clone(),
        repo_type: kernel.repo_type.map(repo_type_name),
        publisher: kernel.publisher.name(),
        variants: kernel
            .variants
            .iter()
            .map(|v| AuditVariantDoc {
                signature: SignatureDoc::of(&v.check),
                digest: v.digest,
                dirty: v.dirty,
            })
            .collect(),
    }
}
