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

use kernels_types::metadata::{BackendType, DependencyVersion, KernelDependency};
use kernels_types::variant_name::{BuildVariant, NoarchBackend, SdkVariant, VariantKind};

use crate::wheel::report::WheelNote;

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

/// The dependency fields of one `metadata.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Depends {
    /// `python-depends`.
    pub python: Vec<String>,
    /// `python-depends-backends`: backend type → keys.
    pub python_backends: BTreeMap<BackendType, Vec<String>>,
    /// `kernel-depends`.
    pub kernels: Vec<KernelDependency>,
}

impl Depends {
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
            match &dep.version {
                DependencyVersion::Version(version) => {
                    let name = dep.repo_id.name();
                    if is_project_name(name) {
                        push(format!("{name}=={version}.*"), &mut out);
                    } else {
                        notes.push(WheelNote::BadDependency {
                            variant: variant.name().to_owned(),
                            entry: dep.repo_id.to_string(),
                        });
                    }
                }
                DependencyVersion::Revision(revision) => {
                    notes.push(WheelNote::RevisionKernelDependency {
                        variant: variant.name().to_owned(),
                        repo_id: dep.repo_id.to_string(),
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
        VariantKind::Noarch(backend) | VariantKind::Mlx(backend) => Some(match backend {
            NoarchBackend::Npu => "cann",
            other => other.as_str(),
        }),
        VariantKind::Sdk(SdkVariant::Backend(backend)) => Some(match backend {
            NoarchBackend::Npu => "cann",
            other => other.as_str(),
        }),
        VariantKind::Sdk(SdkVariant::Compiled {
            backend: Some(backend),
            ..
        }) => Some(backend.family()),
        VariantKind::Sdk(_) | VariantKind::Universal | VariantKind::Unknown => None,
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
        crate::wheel::KernelMetadata::from_json(json)
            .unwrap()
            .depends
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
        let (out, notes) = reqs(
            r#"{"kernel-depends": [{"repo-id": "kernels-test/-dashed", "version": 1}]}"#,
            "torch-cpu",
        );
        assert!(out.is_empty());
        assert_eq!(
            notes[0].message(),
            "dependency `kernels-test/-dashed` is not a Python project name; ignored"
        );
    }
}
