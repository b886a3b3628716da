//! The one fit policy builder ([`crate::variant::FitPolicy`]) of `kernels
//! download`, `verify`, `env` and `download --explain`: the targets from `--cuda-capability` /
//! `--rocm-arch`, else `[tool.kernels]`, else the GPU torch sees (the one
//! probe of the project's Python, which also says which allow-listed modules
//! it imports when asked to); the target runtime's release for
//! `kernels-minver`; the declared images of the ABI check and the ABI
//! verdict that `kernels variants` and `kernels info` read from the cache.

pub mod add;
pub mod lock;

use std::path::Path;

use kernels_types::fit::Target;

use crate::abi::ImageTarget;
use crate::cli::json::AbiVerdictDoc;
use crate::cli::printer::Printer;
use crate::install::check::abi::{file_verdicts, placed_files};
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::lock::profile::RuntimeVersion;
use crate::variant::{FitPolicy, PythonProbe, Targets, VariantSelection};

/// The policy of a command: `flags` first, then the manifest's targets
/// (`[tool.kernels]` with the path of its `pyproject.toml`), then the GPU of
/// `probe` (the project's Python, asked once per command; `None`: not asked,
/// and without flags or manifest targets they are "not checked"). The
/// probe's modules count for `python-depends` only when it was asked about
/// every module of the allow-list
/// ([`kernels_types::python_depends::ALL_MODULES`]), so a probe that was not
/// asked never makes a package look missing. `runtime` is the target
/// runtime's release, for `kernels-minver`.
pub fn policy(
    flags: &[Target],
    manifest: Option<(&[Target], &Path)>,
    probe: Option<&PythonProbe>,
    runtime: Option<RuntimeVersion>,
) -> FitPolicy {
    FitPolicy {
        targets: Targets::resolve(flags, manifest, probe.map(|p| &p.device)),
        runtime: runtime.map(FitPolicy::runtime_release),
        modules: probe
            .filter(|p| {
                kernels_types::python_depends::ALL_MODULES
                    .iter()
                    .all(|m| p.modules.contains_key(*m))
            })
            .map(|p| p.modules.clone()),
        images: Vec::new(),
    }
}

/// The policy of a command in `project_dir`, reading its `[tool.kernels]`
/// targets ([`policy`]); an unreadable `pyproject.toml` counts as declaring
/// none (the command reports it elsewhere).
pub fn for_project(
    project_dir: &Path,
    flags: &[Target],
    probe: Option<&PythonProbe>,
    runtime: Option<RuntimeVersion>,
) -> FitPolicy {
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let declared = ToolSettings::read(project_dir)
        .ok()
        .flatten()
        .map(|t| t.targets)
        .unwrap_or_default();
    policy(
        flags,
        Some((&declared, manifest_path.as_path())),
        probe,
        runtime,
    )
}

/// The fit lines of a command, per kernel (`label`, its fit): each skipped
/// candidate as a note, each variant taken that the runtime would refuse
/// (`--all-variants`) and each runtime warning as a warning; then, once, the
/// `Target GPUs: not checked (…)` line when a variant declares archs that
/// could not be checked.
pub fn print_fits<'a>(
    printer: &Printer,
    policy: &FitPolicy,
    selection: &VariantSelection,
    fits: impl Iterator<Item = (String, &'a crate::install::fit::KernelFit)>,
) {
    let taken = *selection == VariantSelection::All;
    let mut unchecked = false;
    for (label, fit) in fits {
        unchecked |= fit.archs_unchecked;
        for refused in &fit.refused {
            let reasons: Vec<String> = refused
                .refusals
                .iter()
                .map(|r| format!("{}: {r}", r.rule()))
                .collect();
            if taken {
                printer.status(format_args!(
                    "warning: {label}: variant {} is in the cache, but the target runtime would refuse to load it: {}",
                    refused.variant,
                    reasons.join("; ")
                ));
            } else {
                printer.status(format_args!(
                    "note: {label}: skipped variant {} (the target runtime would refuse to load it: {})",
                    refused.variant,
                    reasons.join("; ")
                ));
            }
        }
        for warning in &fit.warnings {
            printer.status(format_args!(
                "warning: {label}: variant {}: {}",
                warning.variant, warning.warning
            ));
        }
        for variant in &fit.shadowing {
            printer.status(format_args!(
                "warning: {label}: build/{variant} is in the cached snapshot: the runtime takes it before the variant chosen and refuses it; remove that directory"
            ));
        }
    }
    if unchecked {
        printer.status(format_args!("Target GPUs: {}", policy.targets));
    }
}

/// The images whose ABI every compiled file is checked against: the
/// `--manylinux` flag when given (`host`: this machine's glibc, read without
/// starting Python), else `manylinux`/`macos-min` of `[tool.kernels]`, then
/// those of each `[[tool.kernels.targets]]` entry; empty when none names
/// one. Errors: a flag that is neither `host` nor a manylinux target, or a
/// host whose glibc cannot be read.
pub fn images(project_dir: &Path, flag: Option<&str>) -> miette::Result<Vec<ImageTarget>> {
    if let Some(flag) = flag {
        let glibc = if flag == "host" {
            crate::abi::host_glibc().map_err(|why| {
                miette::miette!(
                    code = "kernels::abi::host",
                    help =
                        "name the image's glibc instead, for example `--manylinux manylinux_2_28`",
                    "--manylinux host: {why}"
                )
            })?
        } else {
            crate::abi::parse_manylinux(flag).map_err(|why| {
                miette::miette!(
                    code = "kernels::abi::manylinux",
                    help = "pass `--manylinux manylinux_2_28` (the image's glibc) or `--manylinux host` (this machine's)",
                    "--manylinux: {why}"
                )
            })?
        };
        return Ok(vec![ImageTarget {
            manylinux: Some(glibc),
            macos: None,
        }]);
    }
    let Some(tool) = ToolSettings::read(project_dir).ok().flatten() else {
        return Ok(Vec::new());
    };
    let mut images = vec![tool.image];
    images.extend(tool.declared.iter().map(|t| ImageTarget {
        manylinux: t.manylinux,
        macos: t.macos,
    }));
    images.retain(|i| !i.is_empty());
    images.sort();
    images.dedup();
    Ok(images)
}

/// The one line naming what the ABI check of compiled files covers, or
/// that it is not checked and how to make it.
pub fn images_line(images: &[ImageTarget]) -> String {
    if images.is_empty() {
        return "ABI of compiled files: not checked (no image declared: set `manylinux = \"manylinux_2_28\"` under [tool.kernels] or pass `--manylinux`)".to_owned();
    }
    let names: Vec<String> = images.iter().map(ToString::to_string).collect();
    format!("ABI of compiled files: checked for {}", names.join(", "))
}

/// The ABI verdict on the compiled files of `variant` under `root` (a
/// cached snapshot, or a local kernel repository holding `build/`) for
/// `images`, read from those files alone: "not checked" when `root` holds
/// none of them ([`placed_files`]: not downloaded, or only the
/// `metadata.json` that `kernels lock` links). `None` when no image is
/// declared.
pub fn variant_abi(root: &Path, variant: &str, images: &[ImageTarget]) -> Option<AbiVerdictDoc> {
    if images.is_empty() {
        return None;
    }
    let verdicts = placed_files(root, variant).map(|files| file_verdicts(&files, images));
    let mut doc = AbiVerdictDoc {
        images: images.iter().map(ToString::to_string).collect(),
        checked: verdicts.is_some(),
        fits: None,
        refusals: Vec::new(),
        warnings: Vec::new(),
    };
    if let Some(verdicts) = verdicts {
        for (_, file, verdict) in verdicts {
            let named = |what: String| format!("`{file}` {what}");
            doc.refusals
                .extend(verdict.problems.iter().map(|p| named(p.to_string())));
            doc.warnings
                .extend(verdict.warnings.iter().map(|w| named(w.to_string())));
        }
        doc.fits = Some(doc.refusals.is_empty());
    }
    Some(doc)
}

/// An [`AbiVerdictDoc`] as text: `fits manylinux_2_28`, `refused for
/// manylinux_2_28: <each file>`, or `not checked for manylinux_2_28
/// (compiled files not in the cache)`; then each warning.
pub fn abi_text(doc: &AbiVerdictDoc) -> String {
    let images = doc.images.join(", ");
    let mut text = match doc.fits {
        None => format!("not checked for {images} (compiled files not in the cache)"),
        Some(true) => format!("fits {images}"),
        Some(false) => format!("refused for {images}: {}", doc.refusals.join("; ")),
    };
    for warning in &doc.warnings {
        text.push_str(&format!("; warning: {warning}"));
    }
    text
}

/// The `Target GPUs` value (`kernels env`, and `-v` of the commands that
/// read the lock): with GPUs from
/// `pyproject.toml`, each named with where it is declared (`[tool.kernels]
/// `cuda-capabilities``, `[[tool.kernels.targets]] targets[2]`), consecutive
/// ones of one source together; else as every command says it (the flags,
/// the GPU torch sees, not checked).
pub fn attributed_gpus(targets: &Targets, tool: Option<&ToolSettings>) -> String {
    let (crate::variant::TargetSource::Manifest(path), Some(tool)) = (&targets.source, tool) else {
        return targets.to_string();
    };
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (index, target) in targets.list.iter().enumerate() {
        let origin = tool.gpu_origin(index);
        match groups.last_mut() {
            Some((last, list)) if *last == origin => list.push(target.to_string()),
            _ => groups.push((origin, vec![target.to_string()])),
        }
    }
    groups
        .iter()
        .map(|(origin, list)| format!("{} (from {origin} of {})", list.join(", "), path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}
