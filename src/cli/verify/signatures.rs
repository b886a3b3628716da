//! `kernels verify --signatures`: the Sigstore signature and digest of every
//! cached variant the selection takes of each locked kernel, offline
//! ([`crate::signatures::cached`]), under the project's trust settings.

use std::process::ExitCode;

use crate::cli::json::{SignatureDoc, SignaturesDoc, SignedKernelDoc};
use crate::cli::printer::Printer;
use crate::cli::progress::plural;
use crate::cli::project::read::LockRead;
use crate::cli::settings::Settings;
use crate::install::plan::label;
use crate::lock::manifest::ToolSettings;
use crate::signatures::cached::{VariantCheck, cached_variants, check_variants};
use crate::signatures::{Verdict, outcome_detail};
use kernels_trust::Outcome;

/// The trust settings refuse a cached variant, or a locked kernel has none
/// in the cache.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{refused} of {total} refused by the project's trust settings{missing}")]
#[diagnostic(
    code(kernels::verify::signatures),
    help(
        "a variant whose signature, metadata or digest fails is not what its publisher built: remove it from the cache and run `kernels download`; an unsigned variant is refused by `require-signed`; a signer that is not accepted can be added under [tool.kernels.signers] in pyproject.toml; a kernel not in the cache needs `kernels download` first"
    )
)]
struct SignaturesRefused {
    refused: usize,
    total: String,
    /// `, and N kernels not in the cache`, or nothing.
    missing: String,
}

/// The checks of one locked kernel: `None` when the cache has none of the
/// variants the selection takes.
struct KernelChecks {
    label: String,
    repo_id: String,
    commit: kernels_types::CommitId,
    variants: Option<Vec<VariantCheck>>,
}

/// Verifies the signatures of `read`'s kernels in the cache; one line per
/// variant on stdout (or one JSON document), exit 1 when any is refused.
pub(super) fn run(
    read: &LockRead,
    project_dir: &std::path::Path,
    trust: &crate::cli::args::TrustArgs,
    json: bool,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let tool = ToolSettings::read(project_dir)?.unwrap_or_default();
    let settings_trust = trust.apply(tool.signing);
    let root = trust.root(&settings_trust, project_dir)?;
    let trust = settings_trust;
    let checks = check_kernels(read, &settings.cache(), &trust, &root);
    let variants = checks.iter().flat_map(|c| c.variants.iter().flatten());
    let refused = variants
        .clone()
        .filter(|v| v.verdict == Verdict::Refused)
        .count();
    let missing = checks.iter().filter(|c| c.variants.is_none()).count();
    if json {
        printer.json(&SignaturesDoc {
            schema: 1,
            command: "verify --signatures",
            ok: refused + missing == 0,
            trust_root: crate::cli::json::root_name(root.origin()),
            require_signed: trust.require_signed,
            kernels: checks.iter().map(kernel_doc).collect(),
        });
        return Ok(ExitCode::from(u8::from(refused + missing > 0)));
    }
    for check in &checks {
        print_kernel(printer, check, trust.require_signed);
    }
    let total = variants.clone().count();
    if refused + missing > 0 {
        return Err(SignaturesRefused {
            refused,
            total: format!(
                "{} of {}",
                plural(total, "variant"),
                plural(checks.len(), "kernel")
            ),
            missing: match missing {
                0 => String::new(),
                n => format!(", and {} not in the cache", plural(n, "kernel")),
            },
        }
        .into());
    }
    let signed = variants.filter(|v| v.verdict == Verdict::Accepted).count();
    printer.status(format_args!(
        "Verified signatures of {} of {}: {signed} signed, {} unsigned",
        plural(total, "variant"),
        plural(checks.len(), "kernel"),
        total - signed
    ));
    Ok(ExitCode::SUCCESS)
}

/// The checks of every locked kernel of `read` in `cache`.
fn check_kernels(
    read: &LockRead,
    cache: &kernels_cache::HubCache,
    trust: &crate::lock::trust_settings::TrustSettings,
    root: &kernels_trust::TrustRoot,
) -> Vec<KernelChecks> {
    read.kernels
        .iter()
        .map(|kernel| {
            let repo = cache.repo(&kernel.repo_id, read.repo_type);
            let cached = cached_variants(&repo, &kernel.commit);
            let chosen = read
                .selection
                .select(&kernel.repo_id, &kernel.commit, &cached)
                .map(|choice| choice.variants)
                .unwrap_or_default();
            let variants = (!chosen.is_empty()).then(|| {
                check_variants(&repo, &kernel.repo_id, &kernel.commit, &chosen, trust, root)
            });
            KernelChecks {
                label: label(&kernel.repo_id, &kernel.commit),
                repo_id: kernel.repo_id.to_string(),
                commit: kernel.commit.clone(),
                variants,
            }
        })
        .collect()
}

/// `owner/name@abcdef1 torch-cpu: Success: signed by …`, a line per variant.
fn print_kernel(printer: &Printer, check: &KernelChecks, require_signed: bool) {
    let Some(variants) = &check.variants else {
        printer.data(format_args!(
            "{}: no selected variant in the cache (run `kernels download`)",
            check.label
        ));
        return;
    };
    for variant in variants {
        let detail = match (&variant.outcome, require_signed) {
            (Outcome::SignatureBundleMissing, false) => {
                Some("unsigned, accepted (`require-signed = true` refuses it)".to_owned())
            }
            (Outcome::SignatureBundleMissing, true) => {
                Some("unsigned, refused by require-signed".to_owned())
            }
            (outcome, _) => outcome_detail(outcome),
        };
        let name = variant.outcome.name();
        match detail {
            Some(detail) => printer.data(format_args!(
                "{} {}: {name}: {detail}",
                check.label, variant.variant
            )),
            None => printer.data(format_args!("{} {}: {name}", check.label, variant.variant)),
        }
    }
}

fn kernel_doc(check: &KernelChecks) -> SignedKernelDoc {
    SignedKernelDoc {
        repo_id: check.repo_id.clone(),
        commit: check.commit.clone(),
        variants: check
            .variants
            .iter()
            .flatten()
            .map(SignatureDoc::of)
            .collect(),
    }
}
