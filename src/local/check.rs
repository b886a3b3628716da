//! A local build checked as a published one is: for each variant its
//! `metadata.json`, the fit rules ([`kernels_types::fit::check`]: archs,
//! `kernels-minver`, `python-depends`), the digest its `metadata.json`
//! records (a build without one is unsigned and unchecked, never treated as
//! verified), and for the zip layout (`"build-layout": "zip"`, reference
//! 0.19.1 `importer.py`) the archive `<id>.zip` opened and its
//! `__init__.py` found.

use std::path::{Path, PathBuf};

use kernels_types::fit::FitContext;
use kernels_types::metadata::Metadata;

use super::{LocalBuild, LocalVariant};

/// What the digest of `metadata.json` says about a variant's files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DigestState {
    /// Every file matches (this many recorded).
    Verified {
        /// Files the digest records.
        files: usize,
    },
    /// Files differ from the digest: one line each.
    Mismatch {
        /// What differs.
        problems: Vec<String>,
    },
    /// `metadata.json` records no digest: nothing to check.
    Absent,
    /// The files could not be hashed.
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// One variant of a local build, checked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VariantCheck {
    /// The variant.
    pub variant: LocalVariant,
    /// Whether the runtime would load it in the environment checked for.
    pub chosen: bool,
    /// Why its `metadata.json` cannot be read, if so (the runtime refuses it).
    pub metadata_error: Option<String>,
    /// Why the runtime would refuse it for the targets.
    pub refusals: Vec<String>,
    /// What the runtime would warn about.
    pub warnings: Vec<String>,
    /// The digest check.
    pub digest: DigestState,
    /// For the zip layout, the archive (`Ok`) or why it cannot be imported.
    pub archive: Option<Result<PathBuf, String>>,
}

impl VariantCheck {
    /// Whether nothing is wrong with it (an absent digest is not wrong).
    pub fn ok(&self) -> bool {
        self.metadata_error.is_none()
            && self.refusals.is_empty()
            && !matches!(
                self.digest,
                DigestState::Mismatch { .. } | DigestState::Unreadable { .. }
            )
            && !matches!(self.archive, Some(Err(_)))
    }
}

/// Checks every variant of `build` against `context`; `chosen` is the
/// variant the runtime loads here, when known.
pub fn check_build(
    build: &LocalBuild,
    chosen: Option<&LocalVariant>,
    context: &FitContext<'_>,
) -> Vec<VariantCheck> {
    build
        .variants()
        .into_iter()
        .map(|variant| {
            let is_chosen = chosen.is_some_and(|c| c.dir == variant.dir);
            check_variant(variant, is_chosen, context)
        })
        .collect()
}

/// Checks one variant of a build against `context` (its `metadata.json`,
/// the fit rules, the digest, the zip layout's archive); `chosen` says
/// whether it is the one the runtime loads for the targets checked.
pub fn check_variant(
    variant: LocalVariant,
    chosen: bool,
    context: &FitContext<'_>,
) -> VariantCheck {
    let mut out = VariantCheck {
        chosen,
        metadata_error: None,
        refusals: Vec::new(),
        warnings: Vec::new(),
        digest: DigestState::Absent,
        archive: None,
        variant,
    };
    let path = out.variant.dir.join("metadata.json");
    let bytes = match fs_err::read(&path) {
        Ok(bytes) => bytes,
        Err(err) => {
            out.metadata_error = Some(err.to_string());
            return out;
        }
    };
    let metadata = match Metadata::from_slice(&bytes) {
        Ok(metadata) => metadata,
        Err(err) => {
            out.metadata_error = Some(format!("{}: {err}", path.display()));
            return out;
        }
    };
    let fit = kernels_types::fit::check(&metadata, context);
    out.refusals = fit.refusals.iter().map(ToString::to_string).collect();
    out.warnings = fit.warnings.iter().map(ToString::to_string).collect();
    out.digest = digest_state(&out.variant.dir, &metadata);
    out.archive = zip_layout(&bytes).map(|id| check_archive(&out.variant.dir, &id));
    out
}

fn digest_state(dir: &Path, metadata: &Metadata) -> DigestState {
    let Some(digest) = &metadata.digest else {
        return DigestState::Absent;
    };
    match kernels_trust::digest::check_variant(dir, digest) {
        Ok(problems) if problems.is_empty() => DigestState::Verified {
            files: digest.files.len(),
        },
        Ok(problems) => DigestState::Mismatch {
            problems: problems.iter().map(ToString::to_string).collect(),
        },
        Err(err) => DigestState::Unreadable {
            reason: err.to_string(),
        },
    }
}

/// The `id` of a `metadata.json` that says `"build-layout": "zip"` (the
/// archive is `<id>.zip`); `None` for the files layout.
pub fn zip_layout(metadata: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(metadata).ok()?;
    if value.get("build-layout")?.as_str()? != "zip" {
        return None;
    }
    Some(value.get("id")?.as_str()?.to_owned())
}

/// `<dir>/<id>.zip` opened as a zip archive holding `__init__.py` (what the
/// runtime executes), or one line naming the archive and what is wrong.
pub fn check_archive(dir: &Path, id: &str) -> Result<PathBuf, String> {
    let archive = dir.join(format!("{id}.zip"));
    let file = fs_err::File::open(&archive)
        .map_err(|err| format!("kernel archive {}: {err}", archive.display()))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|err| format!("corrupt kernel archive {}: {err}", archive.display()))?;
    if zip.by_name("__init__.py").is_err() {
        return Err(format!(
            "kernel archive {} has no __init__.py at its root",
            archive.display()
        ));
    }
    Ok(archive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_archive_is_one_line_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        fs_err::write(tmp.path().join("_k_1.zip"), b"not a zip").unwrap();
        let err = check_archive(tmp.path(), "_k_1").unwrap_err();
        assert!(
            err.starts_with("corrupt kernel archive ") && err.contains("_k_1.zip"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        assert_eq!(
            zip_layout(br#"{"id": "_k_1", "build-layout": "zip"}"#).as_deref(),
            Some("_k_1")
        );
        assert_eq!(zip_layout(br#"{"id": "_k_1"}"#), None);
    }
}
