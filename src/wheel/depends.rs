//! The dependencies a kernel's `metadata.json` declares, as `Requires-Dist`
//! lines of one variant's wheel.
//!
//! Fields, by era of the kernel builder:
//!
//! * `python-depends` (every era): a list of dependency *keys*, checked by the
//!   runtime against its `python_depends.json` table (general keys, then the
//!   keys of the variant's backend). A key is mostly the PyPI name; the table
//!   maps the others (`tvm-ffi` → `apache-tvm-ffi`, `onednn` → `onednn-devel`).
//! * `python-depends-backends` (current builders): backend type → keys, only
//!   needed on that backend.
//! * `kernel-depends` (0.17): other Hub kernels, `{"repo-id", "version"}` or
//!   `{"repo-id", "revision"}`; a versioned one becomes a requirement on the
//!   wheel `kernels to-wheel` builds for it (`<name>==<N>.*`), a revision one
//!   cannot be expressed and gets a note.
//!
//! Markers: a compiled wheel's platform tag already limits where it installs,
//! so its requirements carry none. A `py3-none-any` wheel of a noarch variant
//! installs anywhere, so its backend-specific dependencies get the
//! `sys_platform` marker of the platforms that backend runs on. A universal
//! wheel has no backend: backend-specific dependencies are left out with a note.

use std::collections::BTreeMap;
use std::fmt;

use kernels_types::variant_name::{BuildVariant, NoarchBackend, VariantKind};

/// Fields of `metadata.json` that are read or knowingly ignored; any other
/// field gets a [`WheelNote::UnknownField`].
pub(super) const KNOWN_FIELDS: &[&str] = &[
    "name",
    "id",
    "version",
    "license",
    "upstream",
    "source",
    "backend",
    "digest",
    "provenance",
    "kernels-minver",
    "python-depends",
    "python-depends-backends",
    "kernel-depends",
];

/// Dependency keys whose PyPI name differs, and the backend a key belongs to
/// when the runtime's table lists it only for one backend (kernels 0.17
/// `python_depends.json`).
const KEYS: &[(&str, &str, Option<&str>)] = &[
    ("einops", "einops", None),
    ("helion", "helion", None),
    ("tvm-ffi", "apache-tvm-ffi", None),
    ("nvidia-cutlass-dsl", "nvidia-cutlass-dsl", Some("cuda")),
    ("nki", "nki", Some("neuron")),
    ("onednn", "onednn-devel", Some("xpu")),
];

/// Something about a variant's metadata that did not make it into the wheel
/// as it is; the command line shows these, the wheel is still built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WheelNote {
    /// A `metadata.json` field this version does not know; it is ignored.
    UnknownField {
        /// The variant.
        variant: String,
        /// The field name.
        field: String,
    },
    /// A backend-specific dependency of a universal variant: a wheel for every
    /// backend cannot say which one needs it.
    BackendDependencyLeftOut {
        /// The variant.
        variant: String,
        /// The PyPI name.
        dependency: String,
        /// The backend type it is declared for.
        backend: String,
    },
    /// A `kernel-depends` entry pinned to a revision: no wheel version follows.
    RevisionKernelDependency {
        /// The variant.
        variant: String,
        /// The kernel depended on.
        repo_id: String,
        /// Its revision.
        revision: String,
    },
    /// A dependency entry that is not a Python project name; it is ignored.
    BadDependency {
        /// The variant.
        variant: String,
        /// The entry as written.
        entry: String,
    },
}

impl WheelNote {
    /// The variant the note is about.
    pub fn variant(&self) -> &str {
        match self {
            WheelNote::UnknownField { variant, .. }
            | WheelNote::BackendDependencyLeftOut { variant, .. }
            | WheelNote::RevisionKernelDependency { variant, .. }
            | WheelNote::BadDependency { variant, .. } => variant,
        }
    }

    /// The note without the variant, so that equal notes of several variants
    /// can be shown once.
    pub fn message(&self) -> String {
        match self {
            WheelNote::UnknownField { field, .. } => {
                format!("metadata.json field `{field}` is not known to this version; ignored")
            }
            WheelNote::BackendDependencyLeftOut {
                dependency,
                backend,
                ..
            } => format!(
                "`{dependency}` is only needed on {backend} and a universal wheel cannot tell the backend; \
                 not declared, install it yourself where needed"
            ),
            WheelNote::RevisionKernelDependency {
                repo_id, revision, ..
            } => format!(
                "kernel dependency `{repo_id}` at revision `{revision}` has no wheel version; \
                 not declared, build and install its wheel yourself"
            ),
            WheelNote::BadDependency { entry, .. } => {
                format!("dependency `{entry}` is not a Python project name; ignored")
            }
        }
    }
}

impl fmt::Display for WheelNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.variant(), self.message())
    }
}

/// A `kernel-depends` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelDepend {
    /// `{"repo-id", "version": N}`.
    Version {
        /// The kernel.
        repo_id: String,
        /// Its major version (branch `vN`).
        version: u64,
    },
    /// `{"repo-id", "revision": "…"}`.
    Revision {
        /// The kernel.
        repo_id: String,
        /// The revision.
        revision: String,
    },
}

/// The dependency fields of one `metadata.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Depends {
    /// `python-depends`.
    pub python: Vec<String>,
    /// `python-depends-backends`: backend type → keys.
    pub python_backends: BTreeMap<String, Vec<String>>,
    /// `kernel-depends`.
    pub kernels: Vec<KernelDepend>,
}

impl Depends {
    /// Reads the dependency fields; a field of the wrong shape is an error.
    pub(super) fn from_value(value: &serde_json::Value) -> Result<Self, String> {
        let strings = |v: &serde_json::Value, what: &str| -> Result<Vec<String>, String> {
            let items = v
                .as_array()
                .ok_or_else(|| format!("`{what}` is not a list of strings"))?;
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("`{what}` is not a list of strings"))
                })
                .collect()
        };
        let mut depends = Depends::default();
        if let Some(v) = value.get("python-depends").filter(|v| !v.is_null()) {
            depends.python = strings(v, "python-depends")?;
        }
        if let Some(v) = value
            .get("python-depends-backends")
            .filter(|v| !v.is_null())
        {
            let map = v
                .as_object()
                .ok_or("`python-depends-backends` is not an object of backend → list of strings")?;
            for (backend, keys) in map {
                let what = format!("python-depends-backends.{backend}");
                depends
                    .python_backends
                    .insert(backend.clone(), strings(keys, &what)?);
            }
        }
        if let Some(v) = value.get("kernel-depends").filter(|v| !v.is_null()) {
            let bad = || {
                "`kernel-depends` entries must be {\"repo-id\", \"version\"} or {\"repo-id\", \"revision\"}".to_owned()
            };
            for entry in v.as_array().ok_or_else(bad)? {
                let repo_id = entry
                    .get("repo-id")
                    .and_then(|r| r.as_str())
                    .ok_or_else(bad)?
                    .to_owned();
                let dep = match (entry.get("version"), entry.get("revision")) {
                    (Some(version), None) => KernelDepend::Version {
                        repo_id,
                        version: version.as_u64().ok_or_else(bad)?,
                    },
                    (None, Some(revision)) => KernelDepend::Revision {
                        repo_id,
                        revision: revision.as_str().ok_or_else(bad)?.to_owned(),
                    },
                    _ => return Err(bad()),
                };
                depends.kernels.push(dep);
            }
        }
        Ok(depends)
    }

    /// The `Requires-Dist` values for `variant` (after its framework
    /// requirement), with the notes about what was left out.
    pub fn requirements(&self, variant: &BuildVariant) -> (Vec<String>, Vec<WheelNote>) {
        let backend = variant_backend(variant);
        let noarch = matches!(variant.kind(), VariantKind::Noarch(_));
        let mut out: Vec<String> = Vec::new();
        let mut notes = Vec::new();
        let push = |requirement: String, out: &mut Vec<String>| {
            if !out.contains(&requirement) {
                out.push(requirement);
            }
        };
        let mut add_key = |key: &str, declared_for: Option<&str>, out: &mut Vec<String>| {
            let (name, table_backend) = KEYS
                .iter()
                .find(|(k, _, _)| *k == key)
                .map_or((key, None), |(_, name, backend)| (*name, *backend));
            if !is_project_name(name) {
                notes.push(WheelNote::BadDependency {
                    variant: variant.name().to_owned(),
                    entry: key.to_owned(),
                });
                return;
            }
            let needs = declared_for.or(table_backend);
            match (needs, backend) {
                (None, _) => push(name.to_owned(), out),
                (Some(needed), None) => notes.push(WheelNote::BackendDependencyLeftOut {
                    variant: variant.name().to_owned(),
                    dependency: name.to_owned(),
                    backend: needed.to_owned(),
                }),
                (Some(needed), Some(ours)) if needed != ours => {}
                (Some(needed), Some(_)) => match platform_marker(needed).filter(|_| noarch) {
                    Some(marker) => push(format!("{name}; {marker}"), out),
                    None => push(name.to_owned(), out),
                },
            }
        };
        for key in &self.python {
            // `python-depends` of a variant lists what that variant needs;
            // a backend-only key is declared for the variant's own backend.
            let declared = backend.filter(|_| {
                KEYS.iter()
                    .any(|(k, _, b)| *k == key.as_str() && b.is_some())
            });
            add_key(key, declared, &mut out);
        }
        for (declared, keys) in &self.python_backends {
            for key in keys {
                add_key(key, Some(declared.as_str()), &mut out);
            }
        }
        for dep in &self.kernels {
            match dep {
                KernelDepend::Version { repo_id, version } => {
                    let name = repo_id.rsplit('/').next().unwrap_or(repo_id);
                    if is_project_name(name) {
                        push(format!("{name}=={version}.*"), &mut out);
                    } else {
                        notes.push(WheelNote::BadDependency {
                            variant: variant.name().to_owned(),
                            entry: repo_id.clone(),
                        });
                    }
                }
                KernelDepend::Revision { repo_id, revision } => {
                    notes.push(WheelNote::RevisionKernelDependency {
                        variant: variant.name().to_owned(),
                        repo_id: repo_id.clone(),
                        revision: revision.clone(),
                    });
                }
            }
        }
        (out, notes)
    }
}

/// The backend type (`metadata.json` `backend.type` spelling) of a variant.
fn variant_backend(variant: &BuildVariant) -> Option<&'static str> {
    match variant.kind() {
        VariantKind::Arch(arch) => Some(arch.backend.family()),
        VariantKind::Noarch(backend) => Some(match backend {
            NoarchBackend::Npu => "cann",
            other => other.as_str(),
        }),
        VariantKind::Universal | VariantKind::Unknown => None,
    }
}

/// Where a backend runs, as a PEP 508 marker (none for CPU: everywhere).
fn platform_marker(backend: &str) -> Option<&'static str> {
    match backend {
        "cuda" | "xpu" => Some(r#"sys_platform == "linux" or sys_platform == "win32""#),
        "rocm" | "cann" | "neuron" | "tpu" => Some(r#"sys_platform == "linux""#),
        "metal" => Some(r#"sys_platform == "darwin""#),
        _ => None,
    }
}

/// A PEP 508 project name: ASCII letters and digits, with `-`, `_`, `.`
/// inside.
fn is_project_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depends(json: &str) -> Depends {
        Depends::from_value(&serde_json::from_str(json).unwrap()).unwrap()
    }

    fn reqs(json: &str, variant: &str) -> (Vec<String>, Vec<WheelNote>) {
        depends(json).requirements(&BuildVariant::parse(variant))
    }

    #[test]
    fn maps_keys_to_pypi_names_per_variant() {
        let json = r#"{"python-depends": ["einops", "tvm-ffi", "nvidia-cutlass-dsl"]}"#;
        let (arch, notes) = reqs(json, "torch210-cxx11-cu128-x86_64-linux");
        assert_eq!(arch, ["einops", "apache-tvm-ffi", "nvidia-cutlass-dsl"]);
        assert!(notes.is_empty());
        let (noarch, _) = reqs(json, "torch-cuda");
        assert_eq!(
            noarch,
            [
                "einops",
                "apache-tvm-ffi",
                r#"nvidia-cutlass-dsl; sys_platform == "linux" or sys_platform == "win32""#
            ]
        );
    }

    #[test]
    fn backend_field_selects_the_variants_backend() {
        let json = r#"{"python-depends": ["einops"],
            "python-depends-backends": {"cuda": ["nvidia-cutlass-dsl"], "xpu": ["onednn"]}}"#;
        assert_eq!(
            reqs(json, "torch29-cxx11-xpu20252-x86_64-linux").0,
            ["einops", "onednn-devel"]
        );
        assert_eq!(reqs(json, "torch-metal").0, ["einops"]);
        let (universal, notes) = reqs(json, "torch-universal");
        assert_eq!(universal, ["einops"]);
        assert_eq!(notes.len(), 2);
        assert!(notes[0].message().contains("nvidia-cutlass-dsl"));
    }

    #[test]
    fn kernel_depends_and_bad_entries() {
        let json = r#"{"python-depends": ["bad name"], "kernel-depends": [
            {"repo-id": "kernels-test/versions", "version": 2},
            {"repo-id": "kernels-test/other", "revision": "main"}]}"#;
        let (out, notes) = reqs(json, "torch-universal");
        assert_eq!(out, ["versions==2.*"]);
        assert_eq!(notes.len(), 2);
        assert!(Depends::from_value(&serde_json::json!({"python-depends": "einops"})).is_err());
        assert!(
            Depends::from_value(&serde_json::json!({"kernel-depends": [{"repo-id": "a/b"}]}))
                .is_err()
        );
    }
}
