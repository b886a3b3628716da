//! One cause, one message: when several kernels fail for the same reason (the
//! Hub unreachable, offline mode, a rejected token, a `--variant` typo), the
//! reason is printed once, naming the kernels (at most three, then "and N
//! more"). Used by `kernels lock` (and `lock --check`, `add`, `remove`, the
//! re-lock of `download`), `kernels download` and the variant explanations.

use std::fmt;

use miette::Diagnostic;

use crate::cli::json::FailureDoc;
use crate::cli::settings::Settings;
use crate::lock::project::{Failure, LockError};
use crate::lock::resolver::ResolveError;
use crate::lock::short_commit::ShortCommitError;
use kernels_hub::HubError;

/// At most this many kernels are named in one message.
const NAMED: usize = 3;

/// What makes two failures the same cause: their diagnostic code and help
/// (the help names the fix, not the kernel).
pub fn cause_key(error: &dyn Diagnostic) -> String {
    let code = error.code().map(|c| c.to_string()).unwrap_or_default();
    let help = error.help().map(|h| h.to_string()).unwrap_or_default();
    if code.is_empty() && help.is_empty() {
        // Nothing to compare: every such failure is its own cause.
        return format!("{:p}", error);
    }
    format!("{code}\n{help}")
}

/// Prints failures of kernels that were looked at one by one (`--dry-run`,
/// `--explain`, `kernels env`), `(label, error)` each: one message per cause
/// naming the kernels; the Hub unreachable is one line naming `endpoint`,
/// with `what` saying what was not done ("not listed").
pub fn print_kernel_failures(
    printer: &crate::cli::printer::Printer,
    failures: Vec<(String, crate::install::DownloadError)>,
    endpoint: &str,
    what: &str,
) {
    use crate::install::DownloadError;
    let mut groups: Vec<(String, Vec<String>, DownloadError)> = Vec::new();
    for (label, error) in failures {
        let key = cause_key(&error);
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, labels, _)) => labels.push(label),
            None => groups.push((key, vec![label], error)),
        }
    }
    for (_, labels, error) in groups {
        let names = name_kernels(&labels);
        let unreachable = match &error {
            DownloadError::Hub(hub) => {
                connect_failure(hub, endpoint).map(|source| root_cause(source))
            }
            _ => None,
        };
        match unreachable {
            Some(cause) => printer.error(format_args!(
                "{:?}",
                miette::Report::new(KernelsUnreachable {
                    endpoint: endpoint.to_owned(),
                    cause,
                    what: what.to_owned(),
                    kernels: names,
                })
            )),
            None => printer.error(format_args!("{names}: {:?}", miette::Report::new(error))),
        }
    }
}

/// The Hub cannot be reached for kernels looked at one by one.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error(
    "cannot reach the Hub at {} ({cause}); {what}: {kernels}",
    kernels_types::text::redact(endpoint)
)]
#[diagnostic(
    code(kernels::hub::unreachable),
    help(
        "check HF_ENDPOINT and the network; offline (`--offline` or HF_HUB_OFFLINE=1) what the cache holds is used instead"
    )
)]
struct KernelsUnreachable {
    endpoint: String,
    cause: String,
    what: String,
    kernels: String,
}

/// `a`, `a, b`, `a, b, c`, `a, b, c and 3 more`.
pub fn name_kernels(labels: &[String]) -> String {
    match labels.len() {
        n if n > NAMED => format!("{} and {} more", labels[..NAMED].join(", "), n - NAMED),
        _ => labels.join(", "),
    }
}

/// The innermost cause of `error`, for "cannot reach the Hub at … (cause)".
pub fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The connection error when `error` is "cannot connect to the endpoint" (a
/// transfer that broke off, or another host, is another cause).
pub fn connect_failure<'a>(
    error: &'a HubError,
    endpoint: &str,
) -> Option<&'a kernels_hub::TransportError> {
    match error {
        HubError::Transport { source, url } if source.is_connect() && url.starts_with(endpoint) => {
            Some(source)
        }
        _ => None,
    }
}

/// `Diagnostic` of a wrapper with an `inner` diagnostic: everything but the
/// message (its `Display`) is the inner one's.
macro_rules! delegate_diagnostic {
    ($wrapper:ty) => {
        impl Diagnostic for $wrapper {
            fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
                self.inner.code()
            }
            fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
                self.inner.help()
            }
            fn url<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
                self.inner.url()
            }
            fn source_code(&self) -> Option<&dyn miette::SourceCode> {
                self.inner.source_code()
            }
            fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
                self.inner.labels()
            }
            fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
                self.inner.related()
            }
            fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
                self.inner.diagnostic_source()
            }
        }
    };
}

/// A diagnostic with its own message in front of another's code, help and
/// causes: `a, b and 4 more: <the first one's error>`.
struct Grouped {
    message: String,
    inner: Box<dyn Diagnostic + Send + Sync>,
}

impl fmt::Debug for Grouped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grouped")
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Grouped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Grouped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

delegate_diagnostic!(Grouped);

/// A lock that failed, as printed (a grouped report), with every dependency
/// that failed as a typed object for `--format json`.
pub struct LockFailed {
    inner: Box<dyn Diagnostic + Send + Sync>,
    /// One `{repo_id, commit: null, code, message}` per dependency that failed.
    pub failed: Vec<FailureDoc>,
}

impl fmt::Debug for LockFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for LockFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl std::error::Error for LockFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

delegate_diagnostic!(LockFailed);

/// The typed failure object of `--format json` (`docs/json-output.md`):
/// nothing is locked yet, so no commit.
fn failure_doc(failure: &Failure) -> FailureDoc {
    FailureDoc::new(&failure.repo_id, None, &failure.error)
}

/// Several causes: a summary with one related diagnostic per cause.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Causes {
    message: String,
    causes: Vec<Box<dyn Diagnostic + Send + Sync>>,
}

impl Diagnostic for Causes {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("kernels::lock::unresolved"))
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(
            self.causes.iter().map(|c| c.as_ref() as &dyn Diagnostic),
        ))
    }
}

/// The Hub cannot be reached at all while locking.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error(
    "cannot reach the Hub at {} ({cause}){what}",
    kernels_types::text::redact(endpoint)
)]
#[diagnostic(
    code(kernels::lock::unreachable),
    help(
        "check HF_ENDPOINT and the network; timeouts are set with HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds)"
    )
)]
struct Unreachable {
    endpoint: String,
    cause: String,
    /// What was not done: `; not resolved: …`.
    what: String,
}

/// The Hub cannot be reached by a command that makes one request.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error(
    "cannot reach the Hub at {} ({cause})",
    kernels_types::text::redact(endpoint)
)]
#[diagnostic(
    code(kernels::hub::unreachable),
    help(
        "check HF_ENDPOINT and the network; timeouts are set with HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds)"
    )
)]
struct HubUnreachable {
    endpoint: String,
    cause: String,
}

/// A Hub error of a command that makes one request (`kernels add` asking
/// for the versions, `kernels versions`): "cannot connect to the endpoint"
/// is one line naming the endpoint and the innermost cause, without the
/// chain of wrappers in between; any other error is returned as it is.
pub fn hub_failure(error: HubError, settings: &Settings) -> miette::Report {
    match connect_failure(&error, &settings.endpoint) {
        Some(source) => miette::Report::new(HubUnreachable {
            endpoint: settings.endpoint.clone(),
            cause: root_cause(source),
        }),
        None => miette::Report::new(error),
    }
}

/// Locking needs the Hub, and this run is offline.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error(
    "offline mode is enabled, and locking asks the Hub for the versions of {kernels}{unchanged}"
)]
#[diagnostic(
    code(kernels::lock::offline),
    help(
        "lock online: drop --offline and unset HF_HUB_OFFLINE, KERNELS_OFFLINE and TRANSFORMERS_OFFLINE; offline, `kernels lock --check --offline` checks the lock against pyproject.toml without resolving"
    )
)]
struct Offline {
    kernels: String,
    unchanged: &'static str,
}

/// The Hub error a lock failure comes from, if any.
fn hub_error(error: &LockError) -> Option<&HubError> {
    match error {
        LockError::Resolve(
            ResolveError::Hub(err) | ResolveError::ShortCommit(ShortCommitError::Hub(err)),
        )
        | LockError::TrustUnknown { source: err, .. } => Some(err),
        _ => None,
    }
}

/// One cause of a lock failure, shared by `group` (never empty): the Hub
/// unreachable or offline once, naming the kernels; a single kernel's error
/// as it is when it names the kernel; else the first error behind the names.
fn one_cause(
    group: Vec<Failure>,
    settings: &Settings,
    top: bool,
) -> Box<dyn Diagnostic + Send + Sync> {
    let unchanged = if top {
        "; kernels.lock was not changed"
    } else {
        ""
    };
    let labels: Vec<String> = group.iter().map(|f| f.repo_id.to_string()).collect();
    let kernels = name_kernels(&labels);
    let first = hub_error(&group[0].error);
    if let Some(source) = first.and_then(|e| connect_failure(e, &settings.endpoint)) {
        return Box::new(Unreachable {
            endpoint: settings.endpoint.clone(),
            cause: root_cause(source),
            what: format!("; not resolved: {kernels}{unchanged}"),
        });
    }
    if let Some(HubError::Offline { .. }) = first {
        return Box::new(Offline { kernels, unchanged });
    }
    let mut group = group;
    let first = group.swap_remove(0);
    let message = first.error.to_string();
    if labels.len() == 1 && message.contains(first.repo_id.as_str()) {
        return Box::new(first.error);
    }
    let message = if top {
        format!("could not resolve {kernels}; kernels.lock was not changed: {message}")
    } else {
        format!("{kernels}: {message}")
    };
    Box::new(Grouped {
        message,
        inner: Box::new(first.error),
    })
}

/// A lock failure as it is printed: failures of several dependencies grouped
/// by cause, each cause once (see the module documentation). Other errors are
/// returned as they are.
pub fn lock_failure(error: LockError, settings: &Settings) -> miette::Report {
    let LockError::Unresolved {
        manifest,
        total,
        failures,
    } = error
    else {
        return miette::Report::new(error);
    };
    let count = failures.len();
    let failed = failures.iter().map(failure_doc).collect();
    let mut groups: Vec<(String, Vec<Failure>)> = Vec::new();
    for failure in failures {
        let key = cause_key(&failure.error);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(failure),
            None => groups.push((key, vec![failure])),
        }
    }
    let inner: Box<dyn Diagnostic + Send + Sync> = if groups.len() == 1 {
        let (_, group) = groups.remove(0);
        one_cause(group, settings, true)
    } else {
        Box::new(Causes {
            message: format!(
                "{count} of the {total} kernels in {manifest} could not be resolved; kernels.lock was not changed"
            ),
            causes: groups
                .into_iter()
                .map(|(_, group)| one_cause(group, settings, false))
                .collect(),
        })
    };
    miette::Report::new(LockFailed { inner, failed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_three_kernels_are_named() {
        let labels = |n: usize| (1..=n).map(|i| format!("k{i}")).collect::<Vec<_>>();
        assert_eq!(name_kernels(&labels(1)), "k1");
        assert_eq!(name_kernels(&labels(3)), "k1, k2, k3");
        assert_eq!(name_kernels(&labels(6)), "k1, k2, k3 and 3 more");
    }
}
