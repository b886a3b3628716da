//! The `python-depends` allow-list: which names a variant's `metadata.json`
//! may list under `python-depends`, and which Python package (and module)
//! each stands for.
//!
//! The table is the one shipped with reference 0.17.2
//! (`kernels/python_depends.json`): names valid for every backend, then names
//! valid for one backend only. The runtime refuses a variant that lists a
//! name outside the table for its backend, and one whose package's module is
//! not importable; a package without a module (oneDNN's, which installs only
//! native libraries) is never checked for importability.
//!
//! ```
//! use kernels_types::python_depends::{lookup, ALL_MODULES};
//! let tvm = lookup("tvm-ffi", "cuda").unwrap();
//! assert_eq!(tvm.package, "apache-tvm-ffi");
//! assert_eq!(tvm.module, Some("tvm_ffi"));
//! assert!(lookup("nvidia-cutlass-dsl", "rocm").is_none());
//! assert!(lookup("not-a-dependency", "cuda").is_none());
//! assert!(ALL_MODULES.contains(&"cutlass"));
//! ```

/// One allowed `python-depends` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PythonDependency {
    /// The name as `metadata.json` lists it, e.g. `tvm-ffi`.
    pub name: &'static str,
    /// The backend it is allowed for (`metadata.json` `backend.type` names,
    /// e.g. `cuda`), `None` for every backend.
    pub backend: Option<&'static str>,
    /// The Python distribution that provides it, e.g. `apache-tvm-ffi`.
    pub package: &'static str,
    /// The module that must be importable, e.g. `tvm_ffi`; `None` for a
    /// package without Python code.
    pub module: Option<&'static str>,
}

const fn dep(
    name: &'static str,
    backend: Option<&'static str>,
    package: &'static str,
    module: Option<&'static str>,
) -> PythonDependency {
    PythonDependency {
        name,
        backend,
        package,
        module,
    }
}

/// The allow-list of reference 0.17.2, general names first.
pub const ALLOWED: &[PythonDependency] = &[
    dep("einops", None, "einops", Some("einops")),
    dep("helion", None, "helion", Some("helion")),
    dep("tvm-ffi", None, "apache-tvm-ffi", Some("tvm_ffi")),
    dep(
        "nvidia-cutlass-dsl",
        Some("cuda"),
        "nvidia-cutlass-dsl",
        Some("cutlass"),
    ),
    dep("nki", Some("neuron"), "nki", Some("nki")),
    dep("onednn", Some("xpu"), "onednn-devel", None),
];

/// Every module of [`ALLOWED`], in table order: what a probe of the
/// project's Python asks to be importable.
pub const ALL_MODULES: &[&str] = &["einops", "helion", "tvm_ffi", "cutlass", "nki"];

/// The entry for `name` when a variant of `backend` (a `backend.type` name
/// such as `cuda`) may list it: a general name first, then one of that
/// backend. `None` when the runtime refuses the name for that backend.
pub fn lookup(name: &str, backend: &str) -> Option<&'static PythonDependency> {
    ALLOWED
        .iter()
        .filter(|d| d.name == name)
        .find(|d| d.backend.is_none_or(|b| b == backend))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_of_the_table_is_probed() {
        let modules: Vec<&str> = ALLOWED.iter().filter_map(|d| d.module).collect();
        assert_eq!(modules, ALL_MODULES);
    }

    #[test]
    fn backend_names_are_only_allowed_for_their_backend() {
        assert_eq!(lookup("nki", "neuron").unwrap().package, "nki");
        assert!(lookup("nki", "cuda").is_none());
        assert_eq!(lookup("onednn", "xpu").unwrap().module, None);
        assert_eq!(lookup("einops", "metal").unwrap().backend, None);
    }
}
