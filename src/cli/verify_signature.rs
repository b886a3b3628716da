//! `kernels verify-signature REPO VERSION`: reference 0.17.2's command (the
//! same arguments, lines on stdout and exit codes) over
//! [`crate::signatures::remote`]; `--trust-root` and the project's
//! `[tool.kernels]` trust settings on top.

use std::process::ExitCode;

use kernels_trust::Outcome;
use kernels_types::repo_id::RepoId;

use super::args::{EnvArgs, TrustArgs};
use super::printer::Printer;
use super::settings::Settings;
use crate::lock::manifest::ToolSettings;
use crate::lock::profile::VariantPreference;
use crate::signatures::remote::verify_version;
use crate::variant::{ProjectPython, VariantRequest, VariantSelection};

/// Arguments of `kernels verify-signature`.
#[derive(Debug, clap::Args)]
pub struct VerifySignatureArgs {
    /// The kernel repository (`owner/name`).
    #[arg(value_name = "REPO_ID")]
    pub repo_id: RepoId,

    /// The kernel version to verify: the branch `vN`.
    #[arg(value_name = "VERSION")]
    pub version: u64,

    /// Verify every build variant, not only the one for this environment.
    #[arg(long)]
    pub all_variants: bool,

    /// Skip unsigned variants instead of failing on them (unless
    /// `--require-signed` or `require-signed = true`). Without it an unsigned
    /// variant fails this command (exit 1), as in the reference's
    /// `kernels verify-signature`; `download`, `verify --signatures` and
    /// `audit` accept it with a note unless signatures are required.
    #[arg(long)]
    pub filter_unsigned: bool,

    /// Skip variants whose metadata has no digest (or no `metadata.json`)
    /// instead of failing on them.
    #[arg(long)]
    pub filter_no_digest: bool,

    /// `--trust-root`, `--require-signed`.
    #[command(flatten)]
    pub trust: TrustArgs,

    /// The environment the variant is chosen for, instead of asking torch.
    #[command(flatten)]
    pub env: EnvArgs,
}

/// Runs `kernels verify-signature`: one line per variant on stdout, exit 1
/// when any is not correctly signed (skipped ones aside).
pub fn run(
    args: VerifySignatureArgs,
    project_dir: &std::path::Path,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let tool = ToolSettings::read(project_dir)?.unwrap_or_default();
    let trust = args.trust.apply(tool.signing);
    let root = args.trust.root(&trust, project_dir)?;
    let policy = trust.policy_for(&args.repo_id);
    let selection = if args.all_variants {
        VariantSelection::All
    } else {
        let python =
            ProjectPython::for_project(project_dir, super::settings::virtual_env().as_deref());
        VariantRequest::Detect.resolve_with(
            &python,
            VariantPreference::ResolverMetalMacos26.into(),
            &args.env.overrides(),
        )?
    };
    let client =
        super::project::client::client_showing_retries(settings, printer, printer.lines_mode())?;
    let scratch = tempfile::tempdir().map_err(|err| {
        super::project::client::InternalError(format!("cannot create a scratch directory: {err}"))
    })?;
    let check = super::project::client::runtime()?.block_on(verify_version(
        &client,
        &args.repo_id,
        args.version,
        &selection,
        (&root, &policy),
        scratch.path(),
    ))?;
    let skip_unsigned = args.filter_unsigned && !trust.require_signed;
    let mut failed = false;
    let mut unsigned_failed = false;
    for (variant, outcome) in &check.variants {
        if let Some((text, ok)) = lines(variant, outcome, skip_unsigned, args.filter_no_digest) {
            printer.data(text);
            failed |= !ok;
            unsigned_failed |= matches!(outcome, Outcome::SignatureBundleMissing);
        }
    }
    if unsigned_failed && !trust.require_signed {
        printer.status(format_args!(
            "note: an unsigned variant fails `kernels verify-signature` (the reference's exit code; `--filter-unsigned` skips it), while `kernels download`, `kernels verify --signatures` and `kernels audit` accept it with a note unless `require-signed = true` (or `--require-signed`) is set"
        ));
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The reference's lines for one variant and whether it passed; `None` when
/// the variant is skipped (`--filter-unsigned`, `--filter-no-digest`).
fn lines(
    variant: &str,
    outcome: &Outcome,
    skip_unsigned: bool,
    skip_no_digest: bool,
) -> Option<(String, bool)> {
    let failed = |what: &str| Some((format!("❌ {variant}: {what}"), false));
    match outcome {
        Outcome::Success(_) => Some((
            format!("✅ {variant}: kernel metadata is correctly signed"),
            true,
        )),
        Outcome::SignatureBundleMissing if skip_unsigned => None,
        Outcome::SignatureBundleMissing => {
            failed("cannot verify kernel integrity, signature not found")
        }
        Outcome::SignatureBundleInvalid(reason) => failed(&format!(
            "cannot verify kernel integrity, invalid signature bundle:\n{reason}"
        )),
        Outcome::MetadataInvalid(reason) => failed(&format!(
            "cannot verify kernel integrity, invalid metadata:\n{reason}"
        )),
        Outcome::MetadataMissing | Outcome::DigestMissing if skip_no_digest => None,
        Outcome::MetadataMissing | Outcome::DigestMissing => {
            failed("cannot verify kernel integrity, metadata does not have a digest")
        }
        Outcome::DigestVerificationFailure(problems) => {
            let mut text = "kernel integrity check failed".to_owned();
            for problem in problems {
                text.push('\n');
                text.push_str(&problem.to_string());
            }
            failed(&text)
        }
        Outcome::SignatureVerificationFailure(reason) => failed(&format!(
            "metadata signature verification failed:\n{reason}"
        )),
    }
}
