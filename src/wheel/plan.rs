//! Planning the wheels of one snapshot ([`plan_wheels`]: every check
//! happens before anything is written) and writing them in parallel
//! ([`build_wheels`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_types::variant_name::BuildVariant;

use crate::wheel::archive;
use crate::wheel::error::WheelError;
use crate::wheel::report::{Plan, PlannedWheel, WheelNote};
use crate::wheel::source::Snapshot;
use crate::wheel::spec::{Kernel, KernelMetadata, WheelOptions, WheelSpec};

/// Writes `wheels` into `out_dir` (which must exist) on up to `jobs` threads
/// and returns each wheel's path or error, in the order given. Every wheel is
/// written atomically, so a failure leaves no partial file; the other wheels
/// are still written.
pub fn build_wheels(
    wheels: &[&PlannedWheel],
    out_dir: &Path,
    jobs: usize,
) -> Vec<Result<PathBuf, WheelError>> {
    use rayon::prelude::*;

    let build_all = || -> Vec<Result<PathBuf, WheelError>> {
        wheels
            .par_iter()
            .map(|wheel| wheel.build(out_dir))
            .collect()
    };
    match rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.clamp(1, wheels.len().max(1)))
        .build()
    {
        Ok(pool) => pool.install(build_all),
        // No thread could be started: build on this one.
        Err(_) => wheels.iter().map(|wheel| wheel.build(out_dir)).collect(),
    }
}

/// Plans one wheel per variant of `snapshot`.
///
/// `selection` lists variant names to build; empty means every directory in
/// `build/`, silently skipping names that are not build variants (such as a
/// stray `torch-ext`, reported in [`Plan::skipped`]). An explicitly selected
/// variant that is missing or unsupported is an error. All checks (names,
/// package layout, file paths, `metadata.json` and its digest of the
/// variant's files, duplicate file names) happen
/// here, so a failing run writes nothing.
pub fn plan_wheels(
    kernel: &Kernel,
    snapshot: &Snapshot,
    selection: &[String],
    options: &WheelOptions,
) -> Result<Plan, WheelError> {
    let (chosen, skipped) = choose_variants(snapshot, selection)?;
    let mut by_file: BTreeMap<String, String> = BTreeMap::new();
    let mut wheels = Vec::new();
    let mut notes = Vec::new();
    for variant in chosen {
        let spec = WheelSpec::new(kernel, &variant, options)?;
        if let Some(first) = by_file.insert(spec.file_name(), variant.name().to_owned()) {
            return Err(WheelError::DuplicateWheel {
                file: spec.file_name(),
                first,
                second: variant.name().to_owned(),
            });
        }
        let wheel = plan_variant(kernel, snapshot, variant, spec, options, &mut notes)?;
        wheels.push(wheel);
    }
    Ok(Plan {
        wheels,
        skipped,
        notes,
    })
}

/// The variants to build, in name order, and (without a `selection`) the
/// directories skipped because they are no build variant.
fn choose_variants(
    snapshot: &Snapshot,
    selection: &[String],
) -> Result<(Vec<BuildVariant>, Vec<BuildVariant>), WheelError> {
    let available = snapshot.variants()?;
    let mut skipped = Vec::new();
    let chosen: Vec<BuildVariant> = if selection.is_empty() {
        let (known, unknown): (Vec<_>, Vec<_>) =
            available.into_iter().partition(BuildVariant::is_known);
        skipped = unknown;
        known
    } else {
        let mut chosen = Vec::new();
        for name in selection {
            let Some(variant) = available.iter().find(|v| v.name() == name) else {
                return Err(WheelError::NoSuchVariant {
                    variant: name.clone(),
                    build_dir: snapshot.build_dir().to_path_buf(),
                    available: available
                        .iter()
                        .map(BuildVariant::name)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            if !chosen.contains(variant) {
                chosen.push(variant.clone());
            }
        }
        chosen.sort_by(|a, b| a.name().cmp(b.name()));
        chosen
    };
    if chosen.is_empty() {
        return Err(WheelError::NoVariants {
            build_dir: snapshot.build_dir().to_path_buf(),
        });
    }
    Ok((chosen, skipped))
}

/// The wheel of one variant whose `spec` is known: its files, and the
/// `METADATA` text from its `metadata.json` (what the wheel cannot carry is
/// added to `notes`).
fn plan_variant(
    kernel: &Kernel,
    snapshot: &Snapshot,
    variant: BuildVariant,
    spec: WheelSpec,
    options: &WheelOptions,
    notes: &mut Vec<WheelNote>,
) -> Result<PlannedWheel, WheelError> {
    let package = kernel.package_dir();
    let dir = snapshot.build_dir().join(variant.name());
    let zip_id = fs_err::read(dir.join("metadata.json"))
        .ok()
        .and_then(|bytes| crate::local::check::zip_layout(&bytes));
    let root = if zip_id.is_some() || dir.join("__init__.py").is_file() {
        dir.clone()
    } else {
        dir.join(&package)
    };
    if !root.is_dir() {
        return Err(WheelError::NoPackage {
            variant: variant.name().to_owned(),
            dir,
            package,
        });
    }
    let entries = match &zip_id {
        Some(id) => archive::collect_zip(&dir, id, &package, snapshot.trust_root())?,
        None => archive::collect(&root, &package, snapshot.trust_root())?,
    };
    let mut extra = read_kernel_metadata(&dir.join("metadata.json"))?;
    if let Some(expected) = &extra.digest {
        let problems = crate::install::digest::check_dir(&dir, expected);
        if !problems.is_empty() {
            return Err(WheelError::Digest {
                variant: variant.name().to_owned(),
                dir,
                problems,
            });
        }
    }
    notes.extend(
        extra
            .unknown_fields
            .iter()
            .map(|field| WheelNote::UnknownField {
                variant: variant.name().to_owned(),
                field: field.clone(),
            }),
    );
    let (requires, dependency_notes) = extra.depends.requirements(&variant);
    extra.requires = without_framework(requires, spec.requires_dist.as_deref());
    notes.extend(dependency_notes);
    let metadata = spec.metadata_text(kernel.repo_id(), variant.name(), &extra);
    Ok(PlannedWheel {
        variant,
        spec,
        metadata,
        entries,
        epoch: options.source_date_epoch,
    })
}

/// `requires` without the variant's framework project: the framework
/// requirement (`torch==2.10.*`) is more precise than a bare `torch` in
/// `python-depends`.
fn without_framework(requires: Vec<String>, framework: Option<&str>) -> Vec<String> {
    let name_of = |r: &str| {
        r.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    let framework = framework.map(name_of);
    requires
        .into_iter()
        .filter(|r| framework.as_deref() != Some(name_of(r).as_str()))
        .collect()
}

/// The `metadata.json` of a variant as `METADATA` needs it; a variant without
/// one has none of its fields.
fn read_kernel_metadata(path: &Path) -> Result<KernelMetadata, WheelError> {
    if !path.is_file() {
        return Ok(KernelMetadata::default());
    }
    let text = fs_err::read_to_string(path)?;
    KernelMetadata::from_json(&text).map_err(|problem| WheelError::BadMetadata {
        path: path.to_path_buf(),
        problem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_requirement_replaces_a_bare_one() {
        let requires = vec![
            "torch".to_owned(),
            "einops".to_owned(),
            "Torch>=2".to_owned(),
        ];
        assert_eq!(
            without_framework(requires.clone(), Some("torch==2.10.*")),
            ["einops"]
        );
        assert_eq!(without_framework(requires.clone(), None), requires);
    }
}
