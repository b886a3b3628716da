//! The layouts of a local kernel directory that the runtime accepts
//! (reference 0.19.1 `resolver.py`, `resolve_local_kernel`), tried in its
//! order: variant directories at the path's root, then under its `build/`
//! (kernel-builder's output), and, when neither has a variant for the
//! environment, the path itself as one variant directory when it holds a
//! `metadata.json`.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use kernels_types::variant_name::BuildVariant;

use super::LocalError;
use crate::variant::{TorchEnv, VariantRules};

/// Where a local variant directory sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalLayout {
    /// `<path>/<variant>/`.
    Root,
    /// `<path>/build/<variant>/`.
    Build,
    /// `<path>` is the variant directory.
    Variant,
}

impl LocalLayout {
    /// In words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            LocalLayout::Root => "at the path's root",
            LocalLayout::Build => "under build/",
            LocalLayout::Variant => "the path itself",
        }
    }
}

/// One variant directory of a local build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocalVariant {
    /// The variant's name (the directory's name).
    pub name: String,
    /// The directory.
    pub dir: PathBuf,
    /// Where it sits.
    pub layout: LocalLayout,
}

/// The variant directories found in a local kernel directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalBuild {
    /// The directory as given.
    pub path: PathBuf,
    /// Variant names at the root.
    root: BTreeSet<String>,
    /// Variant names under `build/`.
    build: BTreeSet<String>,
    /// Whether the path has a `metadata.json` of its own.
    own_metadata: bool,
}

impl LocalBuild {
    /// Lists `path`; `source_name` says where the path was given, for errors.
    ///
    /// # Errors
    /// [`LocalError::Missing`] when `path` does not exist,
    /// [`LocalError::NoVariant`] when no layout holds a variant,
    /// [`LocalError::Io`] when it cannot be listed.
    pub fn open(path: &Path, source_name: &str) -> Result<Self, LocalError> {
        let io = |source| LocalError::Io {
            source_name: source_name.to_owned(),
            path: path.to_owned(),
            source,
        };
        match fs_err::metadata(path) {
            Err(err) if err.kind() == ErrorKind::NotFound => {
                return Err(LocalError::Missing {
                    source_name: source_name.to_owned(),
                    path: path.to_owned(),
                });
            }
            Err(err) => return Err(io(err)),
            Ok(_) => {}
        }
        let mut skipped = Vec::new();
        let root = variant_dirs(path, &mut skipped).map_err(io)?;
        let build = variant_dirs(&path.join("build"), &mut skipped).map_err(io)?;
        let own_metadata = path.join("metadata.json").is_file();
        if root.is_empty() && build.is_empty() && !own_metadata {
            skipped.retain(|n| n != "build");
            let names = if skipped.is_empty() {
                String::new()
            } else {
                format!("; not variant names: {}", skipped.join(", "))
            };
            return Err(LocalError::NoVariant {
                source_name: source_name.to_owned(),
                path: path.to_owned(),
                names,
            });
        }
        Ok(LocalBuild {
            path: path.to_owned(),
            root,
            build,
            own_metadata,
        })
    }

    /// Every variant directory, the root's first, then `build/`'s, or the
    /// path itself when neither has one.
    pub fn variants(&self) -> Vec<LocalVariant> {
        let mut out: Vec<LocalVariant> = self
            .root
            .iter()
            .map(|n| self.variant(n, LocalLayout::Root))
            .chain(
                self.build
                    .iter()
                    .map(|n| self.variant(n, LocalLayout::Build)),
            )
            .collect();
        if out.is_empty() && self.own_metadata {
            out.push(self.variant("", LocalLayout::Variant));
        }
        out
    }

    /// The variant the runtime loads for `env` under `rules`: the best of
    /// the root's, else of `build/`'s, else the path itself when it has a
    /// `metadata.json`; `None` when none applies (the runtime raises
    /// `FileNotFoundError`).
    pub fn choose(&self, env: &TorchEnv, rules: VariantRules) -> Option<LocalVariant> {
        for (names, layout) in [
            (&self.root, LocalLayout::Root),
            (&self.build, LocalLayout::Build),
        ] {
            let parsed: Vec<BuildVariant> = names.iter().map(|n| BuildVariant::parse(n)).collect();
            if let Some(best) = env.resolve(&parsed, rules).first() {
                return Some(self.variant(best.name(), layout));
            }
        }
        self.own_metadata
            .then(|| self.variant("", LocalLayout::Variant))
    }

    fn variant(&self, name: &str, layout: LocalLayout) -> LocalVariant {
        match layout {
            LocalLayout::Root => LocalVariant {
                name: name.to_owned(),
                dir: self.path.join(name),
                layout,
            },
            LocalLayout::Build => LocalVariant {
                name: name.to_owned(),
                dir: self.path.join("build").join(name),
                layout,
            },
            LocalLayout::Variant => LocalVariant {
                name: dir_name(&self.path),
                dir: self.path.clone(),
                layout,
            },
        }
    }
}

/// The name of a directory given as a path (`.` and `..` resolved
/// when the path can be made canonical).
pub fn dir_name(path: &Path) -> String {
    let real = fs_err::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    real.file_name().map_or_else(
        || real.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The names of the directories of `dir` that are build-variant names (as
/// the runtime's `get_variants_local`: links to directories count, a
/// directory that cannot be listed has none); other names go to `skipped`.
fn variant_dirs(dir: &Path, skipped: &mut Vec<String>) -> std::io::Result<BTreeSet<String>> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(BTreeSet::new());
        }
        Err(err) => return Err(err),
    };
    let mut names = BTreeSet::new();
    for entry in entries {
        let entry = entry?;
        if !fs_err::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if BuildVariant::parse(&name).is_known() {
            names.insert(name);
        } else {
            skipped.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch_variant(dir: &Path) {
        fs_err::create_dir_all(dir).unwrap();
        fs_err::write(dir.join("metadata.json"), "{}").unwrap();
    }

    #[test]
    fn each_layout_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        touch_variant(&base.join("built/build/torch-cpu"));
        touch_variant(&base.join("flat/torch-cpu"));
        touch_variant(&base.join("one/torch-cpu"));
        let built = LocalBuild::open(&base.join("built"), "t").unwrap();
        assert_eq!(built.variants()[0].layout, LocalLayout::Build);
        let flat = LocalBuild::open(&base.join("flat"), "t").unwrap();
        assert_eq!(flat.variants()[0].layout, LocalLayout::Root);
        let one = LocalBuild::open(&base.join("one/torch-cpu"), "t").unwrap();
        let variant = &one.variants()[0];
        assert_eq!(
            (variant.layout, variant.name.as_str()),
            (LocalLayout::Variant, "torch-cpu")
        );
    }

    #[test]
    fn missing_and_empty_paths_are_errors_naming_them() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = LocalBuild::open(&missing, "LOCAL_KERNELS entry `a/b=nope`").unwrap_err();
        assert!(matches!(err, LocalError::Missing { .. }), "{err}");
        fs_err::create_dir_all(tmp.path().join("src/csrc")).unwrap();
        let err = LocalBuild::open(&tmp.path().join("src"), "e").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("no build variant") && text.contains("csrc"),
            "{text}"
        );
    }
}
