//! The variants of a directory holding `build/<variant>/`: a local kernel
//! repository (what kernel-builder's `build-and-copy` writes), or a snapshot
//! in the Hub cache.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use kernels_types::metadata::{KernelsVersion, Metadata};

use super::{InfoError, KernelInfo, MetadataState, Origin};

/// `path` as Python's `pathlib.Path` writes it, which is how reference 0.17.2
/// prints `Path:`: `.` components and repeated or trailing separators
/// dropped (`./relu/` → `relu`), `.` for nothing left.
///
/// ```
/// use kernels::info::display_path;
/// assert_eq!(display_path("./relu/"), "relu");
/// assert_eq!(display_path("/tmp//k/./relu"), "/tmp/k/relu");
/// assert_eq!(display_path("../relu"), "../relu");
/// assert_eq!(display_path("."), ".");
/// ```
pub fn display_path(path: &str) -> String {
    let kept: PathBuf = Path::new(path)
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if kept.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        kept.display().to_string()
    }
}

/// Describes the variants under `<dir>/build/`, each with its
/// `build/<variant>/metadata.json`, as `origin`. With `inside` (a cache's
/// repository folder), a `metadata.json` whose real path leaves the cache is
/// not read. A missing `build/` describes no variant. Each `metadata.json` is
/// parsed as `runtime` reads it ([`Metadata::from_slice_for`]: before 0.17 an
/// unreadable `kernels-minver` is ignored); `None`: as the current runtime.
///
/// # Errors
/// [`InfoError::Io`] when `build/` exists but cannot be listed.
pub fn describe_dir(
    dir: &Path,
    origin: Origin,
    inside: Option<&kernels_cache::RepoCache>,
    runtime: Option<KernelsVersion>,
) -> Result<KernelInfo, InfoError> {
    let build = super::build_dir(dir);
    let entries = match fs_err::read_dir(&build) {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => {
            return Ok(KernelInfo::from_dirs(origin, [], Vec::new()));
        }
        Err(source) => {
            return Err(InfoError::Io {
                path: build,
                source,
            });
        }
    };
    let mut dirs = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        // As `Path.is_dir()`: links to directories count.
        if !fs_err::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            skipped.push(entry.file_name().to_string_lossy().into_owned());
            continue;
        };
        let metadata = read_metadata(&entry.path().join("metadata.json"), inside, runtime);
        dirs.push((name, metadata));
    }
    Ok(KernelInfo::from_dirs(origin, dirs, skipped))
}

/// One variant's `metadata.json`, parsed as `runtime` reads it.
fn read_metadata(
    path: &Path,
    inside: Option<&kernels_cache::RepoCache>,
    runtime: Option<KernelsVersion>,
) -> MetadataState {
    if inside.is_some_and(|repo| path.exists() && !repo.resolves_inside(path)) {
        return MetadataState::Invalid(format!(
            "{} leads outside the cache; not read",
            path.display()
        ));
    }
    match fs_err::read(path) {
        Ok(body) => match Metadata::from_slice_for(&body, runtime) {
            Ok(metadata) => MetadataState::Read(Box::new(metadata)),
            Err(problem) => MetadataState::Invalid(problem.to_string()),
        },
        Err(err) if err.kind() == ErrorKind::NotFound => MetadataState::Missing,
        Err(err) => MetadataState::Invalid(err.to_string()),
    }
}

/// Describes a local kernel directory in the layouts the runtime accepts
/// ([`crate::local::layout`]): `build/<variant>/` first (as [`describe_dir`],
/// the layout kernel-builder writes and reference 0.17.2's `info` reads),
/// else variant directories at its root, else the directory itself as one
/// variant with its `metadata.json`. No variant in any layout describes none.
///
/// # Errors
/// [`InfoError::Io`] when `build/` exists but cannot be listed.
pub fn describe_local(
    dir: &Path,
    origin: Origin,
    runtime: Option<KernelsVersion>,
) -> Result<KernelInfo, InfoError> {
    let info = describe_dir(dir, origin.clone(), None, runtime)?;
    if !info.variants.is_empty() {
        return Ok(info);
    }
    let Ok(build) = crate::local::LocalBuild::open(dir, "kernels info PATH") else {
        return Ok(info);
    };
    let dirs: Vec<(String, MetadataState)> = build
        .variants()
        .into_iter()
        .filter(|v| v.layout != crate::local::LocalLayout::Build)
        .map(|v| {
            let metadata = read_metadata(&v.dir.join("metadata.json"), None, runtime);
            (v.name, metadata)
        })
        .collect();
    if dirs.is_empty() {
        return Ok(info);
    }
    Ok(KernelInfo::from_dirs(origin, dirs, Vec::new()))
}
