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
        let invalid = |reason: String| TrustRootError::Invalid {
            origin: path.display().to_string(),
            reason,
        };
        let root = TrustedRoot::from_json(&text).map_err(|e| invalid(e.to_string()))?;
        usable(&root).map_err(invalid)?;
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

/// The only trusted-root media type sigstore-python 4.5.1 (the verifier of
/// reference 0.17.2) reads.
pub const TRUSTED_ROOT_MEDIA_TYPE: &str =
    "application/vnd.dev.sigstore.trustedroot+json;version=0.1";

/// Whether `root` can verify anything, as sigstore-python 4.5.1 decides
/// (`sigstore.models.TrustedRoot` and `Verifier`): its media type is
/// [`TRUSTED_ROOT_MEDIA_TYPE`], it has at least one certificate authority and
/// every authority has a certificate that parses as DER X.509, and it has at
/// least one transparency log (Rekor) and one certificate transparency log.
/// Errors: what is missing, in words.
fn usable(root: &TrustedRoot) -> Result<(), String> {
    if root.media_type != TRUSTED_ROOT_MEDIA_TYPE {
        return Err(format!(
            "its mediaType is `{}`, not `{TRUSTED_ROOT_MEDIA_TYPE}`",
            root.media_type
        ));
    }
    if root.certificate_authorities.is_empty() {
        return Err("it has no certificate authority (`certificateAuthorities`)".to_owned());
    }
    for (index, authority) in root.certificate_authorities.iter().enumerate() {
        let certificates = &authority.cert_chain.certificates;
        if certificates.is_empty() {
            return Err(format!(
                "certificate authority {index} (`{}`) has no certificate",
                authority.uri
            ));
        }
        for certificate in certificates {
            sigstore_verify::crypto::x509::parse_certificate_info(&certificate.raw_bytes)
                .map_err(|err| {
                    format!(
                        "a certificate of certificate authority {index} (`{}`) is not DER X.509: {err}",
                        authority.uri
                    )
                })?;
        }
    }
    if root.tlogs.is_empty() {
        return Err("it has no transparency log (`tlogs`)".to_owned());
    }
    if root.ctlogs.is_empty() {
        return Err("it has no certificate transparency log (`ctlogs`)".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<TrustRoot, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trusted_root.json");
        fs_err::write(&path, text).unwrap();
        TrustRoot::from_file(&path).map_err(|err| match err {
            TrustRootError::Invalid { reason, .. } => reason,
            other => other.to_string(),
        })
    }

    /// A change to a trusted root's JSON.
    type Edit = fn(&mut serde_json::Value);

    /// The production root with `edit` applied to its JSON.
    fn edited(edit: impl Fn(&mut serde_json::Value)) -> String {
        let mut root: serde_json::Value =
            serde_json::from_str(SIGSTORE_PRODUCTION_TRUSTED_ROOT).unwrap();
        edit(&mut root);
        root.to_string()
    }

    #[test]
    fn the_production_root_is_usable() {
        assert!(read(SIGSTORE_PRODUCTION_TRUSTED_ROOT).is_ok());
    }

    #[test]
    fn roots_without_a_ca_or_a_log_are_refused() {
        let err = read(r#"{"mediaType": "x"}"#).unwrap_err();
        assert!(err.contains("mediaType is `x`"), "{err}");
        let cases: [(&str, Edit); 5] = [
            ("no certificate authority", |r| {
                r["certificateAuthorities"] = serde_json::json!([]);
            }),
            ("has no certificate", |r| {
                r["certificateAuthorities"][0]["certChain"]["certificates"] = serde_json::json!([]);
            }),
            ("is not DER X.509", |r| {
                r["certificateAuthorities"][0]["certChain"]["certificates"][0]["rawBytes"] =
                    serde_json::json!("AAAA");
            }),
            ("no transparency log", |r| {
                r.as_object_mut().unwrap().remove("tlogs");
            }),
            ("no certificate transparency log", |r| {
                r["ctlogs"] = serde_json::json!([]);
            }),
        ];
        for (expected, edit) in cases {
            let err = read(&edited(edit)).unwrap_err();
            assert!(err.contains(expected), "{expected}: {err}");
        }
    }
}
