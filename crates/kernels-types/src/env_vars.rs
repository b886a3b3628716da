//! The names of the environment variables the `kernels` command line reads.
//!
//! Only the CLI's settings layer (`src/cli/settings.rs`) reads the environment;
//! it re-exports [`ENV_VARS`], and a unit test there fails when `src/cli/` reads a
//! name missing here. The list lives in this crate, below the product, so that the
//! test harness (`kernels-test-support`) clears exactly these names for every
//! spawned binary without depending on the product crate.

/// Every environment variable the `kernels` command line reads: the Hub
/// endpoint, tokens and OIDC, trust roots and proxies, cache locations, offline
/// switches, timeouts and retries, lock flags, the project's virtual
/// environment, colour and progress, and `PATH` (to find Python). No
/// duplicates; order is the order of the settings layer.
pub const ENV_VARS: &[&str] = &[
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN",
    "HF_OIDC_RESOURCE",
    "HF_OIDC_ID_TOKEN",
    "GITHUB_ACTIONS",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "HF_DEVICE_CODE_OAUTH_CLIENT_ID",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "HOME",
    "XDG_CACHE_HOME",
    "HF_HOME",
    "KERNELS_CACHE",
    "HF_HUB_DISABLE_SYMLINKS",
    "KERNELS_TEST_ASSUME_NO_FLOCK",
    "KERNELS_TEST_SYMLINK_ERRNO",
    "HF_KERNELS_CACHE",
    "KERNELS_API_TIMEOUT",
    "KERNELS_MAX_RATE_LIMIT_WAIT",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "KERNELS_OFFLINE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HUB_ETAG_TIMEOUT",
    "HF_HUB_DOWNLOAD_TIMEOUT",
    "KERNELS_STALL_TIMEOUT",
    "KERNELS_MAX_RETRIES",
    "KERNELS_LOCKED",
    "KERNELS_FROZEN",
    "VIRTUAL_ENV",
    "NO_COLOR",
    "PATH",
    "SOURCE_DATE_EPOCH",
    "HF_HUB_DISABLE_PROGRESS_BARS",
    "UNSTABLE_KERNELS_ALL_LATEST",
    "LOCAL_KERNELS",
];

#[cfg(test)]
mod tests {
    use super::ENV_VARS;

    #[test]
    fn names_are_unique_and_upper_or_lower_snake_case() {
        let mut names = ENV_VARS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENV_VARS.len());
        for name in ENV_VARS {
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
        }
    }
}
