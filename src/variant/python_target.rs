//! The Python a project's kernels must load in (version and free-threaded
//! build), which runtime 0.19 selects variants on (`cpython-X.Y-abi3|abi3t`).
//!
//! The version is taken from the first of: `--python-version`, `python` of the
//! declared target (`[[tool.kernels.targets]]`,
//! [`crate::lock::declared`]), what the project's interpreter reports
//! (`sys.version_info`), the lower bound of `[project] requires-python`; else
//! it is not checked. Free-threaded: `--free-threaded`, then the declared
//! target's `free-threaded`, then the interpreter's `Py_GIL_DISABLED`; else a
//! build with the GIL (what `requires-python` cannot say).

use std::fmt;
use std::path::{Path, PathBuf};

use super::environment::InterpreterPython;
use crate::lock::declared::{DeclaredTarget, PythonVersion};

/// Where [`PythonTarget::version`] came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
pub enum PythonSource {
    /// `--python-version` (and `--free-threaded`).
    Flag,
    /// `python` of the declared target in this `pyproject.toml`.
    Declared(PathBuf),
    /// The project's interpreter.
    Interpreter(PathBuf),
    /// The lower bound of `requires-python` in this `pyproject.toml`.
    RequiresPython(PathBuf),
    /// None of them: not checked.
    NotChecked,
}

/// The target's Python.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PythonTarget {
    /// `MAJOR.MINOR`; `None` when not checked.
    pub version: Option<PythonVersion>,
    /// A free-threaded (no-GIL) build.
    pub free_threaded: bool,
    /// Where the version came from.
    pub source: PythonSource,
}

/// What [`PythonTarget::resolve`] chooses from, highest precedence first.
#[derive(Debug, Clone, Copy, Default)]
pub struct PythonInputs<'a> {
    /// `--python-version`.
    pub flag: Option<PythonVersion>,
    /// `--free-threaded`.
    pub flag_free_threaded: bool,
    /// The declared target and its `pyproject.toml`.
    pub declared: Option<(&'a DeclaredTarget, &'a Path)>,
    /// The project's interpreter (when it was asked) and what it reported.
    pub interpreter: Option<(&'a Path, InterpreterPython)>,
    /// `[project] requires-python`'s lower bound and its `pyproject.toml`.
    pub requires_python: Option<(PythonVersion, &'a Path)>,
}

impl PythonTarget {
    /// The target's Python by the precedence of the module docs.
    pub fn resolve(inputs: &PythonInputs<'_>) -> PythonTarget {
        let declared = inputs.declared.filter(|(t, _)| t.python.is_some());
        let interpreter = inputs.interpreter.map(|(path, found)| {
            (
                PythonVersion {
                    major: found.major,
                    minor: found.minor,
                },
                found.free_threaded,
                path,
            )
        });
        let (version, source) = if let Some(flag) = inputs.flag {
            (Some(flag), PythonSource::Flag)
        } else if let Some((target, path)) = declared {
            (target.python, PythonSource::Declared(path.to_owned()))
        } else if let Some((version, _, path)) = interpreter {
            (Some(version), PythonSource::Interpreter(path.to_owned()))
        } else if let Some((floor, path)) = inputs.requires_python {
            (Some(floor), PythonSource::RequiresPython(path.to_owned()))
        } else {
            (None, PythonSource::NotChecked)
        };
        let free_threaded = inputs.flag_free_threaded
            || inputs
                .declared
                .and_then(|(t, _)| t.free_threaded)
                .or(interpreter.map(|(_, free, _)| free))
                .unwrap_or(false);
        PythonTarget {
            version,
            free_threaded,
            source,
        }
    }

    /// Whether the version is known.
    pub fn is_checked(&self) -> bool {
        self.version.is_some()
    }
}

impl fmt::Display for PythonTarget {
    /// `3.12 (from --python-version)`, `3.13, free-threaded (from
    /// [[tool.kernels.targets]] of pyproject.toml)`, `3.11 (.venv/bin/python)`,
    /// `3.10 (lower bound of requires-python in pyproject.toml)`, or
    /// `not checked (…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(version) = self.version else {
            return f.write_str(
                "not checked (no --python-version, `python` in [[tool.kernels.targets]], project interpreter or `requires-python` in [project])",
            );
        };
        write!(f, "{version}")?;
        if self.free_threaded {
            f.write_str(", free-threaded")?;
        }
        match &self.source {
            PythonSource::Flag => f.write_str(" (from --python-version)"),
            PythonSource::Declared(path) => {
                write!(f, " (from [[tool.kernels.targets]] of {})", path.display())
            }
            PythonSource::Interpreter(python) => write!(f, " ({})", python.display()),
            PythonSource::RequiresPython(path) => write!(
                f,
                " (lower bound of `requires-python` in {})",
                path.display()
            ),
            PythonSource::NotChecked => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(minor: u32) -> PythonVersion {
        PythonVersion { major: 3, minor }
    }

    #[test]
    fn flag_then_table_then_interpreter_then_requires_python() {
        let path = Path::new("pyproject.toml");
        let declared = DeclaredTarget {
            python: Some(py(12)),
            free_threaded: Some(true),
            ..DeclaredTarget::default()
        };
        let found = InterpreterPython {
            major: 3,
            minor: 11,
            free_threaded: false,
        };
        let all = PythonInputs {
            flag: Some(py(13)),
            flag_free_threaded: false,
            declared: Some((&declared, path)),
            interpreter: Some((Path::new(".venv/bin/python"), found)),
            requires_python: Some((py(10), path)),
        };
        let flag = PythonTarget::resolve(&all);
        assert_eq!(
            (flag.version, &flag.source),
            (Some(py(13)), &PythonSource::Flag)
        );
        // The declared build stays free-threaded unless the flag says so.
        assert!(flag.free_threaded);
        let table = PythonTarget::resolve(&PythonInputs { flag: None, ..all });
        assert_eq!(table.version, Some(py(12)));
        assert_eq!(
            table.to_string(),
            "3.12, free-threaded (from [[tool.kernels.targets]] of pyproject.toml)"
        );
        let interpreter = PythonTarget::resolve(&PythonInputs {
            flag: None,
            declared: None,
            ..all
        });
        assert_eq!(interpreter.to_string(), "3.11 (.venv/bin/python)");
        let floor = PythonTarget::resolve(&PythonInputs {
            flag: None,
            declared: None,
            interpreter: None,
            ..all
        });
        assert_eq!(
            floor.to_string(),
            "3.10 (lower bound of `requires-python` in pyproject.toml)"
        );
        let none = PythonTarget::resolve(&PythonInputs::default());
        assert!(!none.is_checked());
        assert!(none.to_string().starts_with("not checked ("));
    }
}
