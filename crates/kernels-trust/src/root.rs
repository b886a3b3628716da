//! The Sigstore trust root: the Fulcio CAs, CT logs and Rekor logs that a
//! signature bundle must chain to, in the Sigstore `trusted_root.json` format.

use std::path::{Path, PathBuf};

use sigstore_verify::trust_root::{SIGSTORE_PRODUCTION_TRUSTED_ROOT, TrustedRoot};

/// Largest trust-root file read, in bytes (the production root is ~7 KiB).
pub const MAX_TRUST_ROOT_BYTES: u64 = 1024 * 1024;

/// A trust root and where it came from.
#[derive(Debug, Clone)]
pub struct TrustRoot {
    root: TrustedRoot,
    origin: TrustRootOrigin,
}

/// Where a [`TrustRoot`] came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustRootOrigin {
    /// The public-good Sigstore production root embedded in this binary (the
    /// root sigstore-python ships; the reference refreshes it online, this
    /// tool never does).
    Production,
    /// A `trusted_root.json` file (`--trust-root` / `[tool.kernels] trust-root`).
    File(PathBuf),
}

/// A trust-root file that cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum TrustRootError {
    /// The file cannot be read.
    #[error("cannot read the trust root `{}`", path.display())]
    #[diagnostic(code(kernels::trust::root_unreadable))]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_TRUST_ROOT_BYTES`].
    #[error("the trust root `{}` is {size} bytes, more than a trusted_root.json can be ({MAX_TRUST_ROOT_BYTES})", path.display())]
    #[diagnostic(code(kernels::trust::root_too_large))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    /// The file is not a Sigstore trusted root.
    #[error("`{origin}` is not a Sigstore trusted root: {reason}")]
    #[diagnostic(
        code(kernels::trust::root_invalid),
        help(
            "pass the trusted_root.json of your Sigstore instance (the `trustedRoot` of its TUF repository)"
        )
    )]
    Invalid {
        /// The file, or "the embedded production root".
        origin: String,
        /// What the parser said.
        reason: String,
    },
}

impl TrustRoot {
    /// The embedded Sigstore production root.
    pub fn production() -> TrustRoot {
        let root = TrustedRoot::from_json(SIGSTORE_PRODUCTION_TRUSTED_ROOT)
            .expect("the embedded production trust root parses");
        TrustRoot {
            root,
            origin: TrustRootOrigin::Production,
        }
    }

    /// Read a `trusted_root.json` file (at most [`MAX_TRUST_ROOT_BYTES`]).
    pub fn from_file(path: &Path) -> Result<TrustRoot, TrustRootError> {
        let read_error = |source| TrustRootError::Read {
            path: path.to_path_buf(),
            source,
        };
        let size = fs_err::metadata(path).map_err(read_error)?.len();
        if size > MAX_TRUST_ROOT_BYTES {
            return Err(TrustRootError::TooLarge {
                path: path.to_path_buf(),
                size,
            });
        }
        let text = fs_err::read_to_string(path).map_err(read_error)?;
        let root = TrustedRoot::from_json(&text).map_err(|e| TrustRootError::Invalid {
            origin: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(TrustRoot {
            root,
            origin: TrustRootOrigin::File(path.to_path_buf()),
        })
    }

    /// Where this root came from.
    pub fn origin(&self) -> &TrustRootOrigin {
        &self.origin
    }

    pub(crate) fn sigstore(&self) -> &TrustedRoot {
        &self.root
    }
}
