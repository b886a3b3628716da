//! The async runtime and the Hub client of a command: retries shown as
//! status lines ([`client_showing_retries`]) or drawn by a command's own
//! progress ([`retry_observer`]); [`InternalError`], the failure (exit 2) of
//! what no user can fix.

use kernels_hub::HubClient;

use crate::cli::printer::Printer;
use crate::cli::progress::{Progress, ProgressMode};
use crate::cli::settings::Settings;

/// Marks an error as a bug or environment failure: the process exits with 2
/// instead of 1.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("internal error: {0}")]
#[diagnostic(code(kernels::internal))]
pub struct InternalError(pub String);

/// The error of building the Hub client: a token that cannot be sent is the
/// user's to fix (exit 1, naming where the token came from); anything else
/// (the TLS set-up) is internal.
pub fn client_error(err: kernels_hub::HubError) -> miette::Report {
    match err {
        err @ kernels_hub::HubError::InvalidToken { .. } => err.into(),
        err => InternalError(format!("cannot build the HTTP client: {err}")).into(),
    }
}

/// Builds the tokio runtime used by the network commands.
pub fn runtime() -> miette::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| InternalError(format!("cannot start the async runtime: {err}")).into())
}

/// The Hub client of a command that shows its retries as plain status lines
/// on stderr in `mode` ([`ProgressMode::Lines`], or [`ProgressMode::Quiet`]
/// for none); `kernels download` draws them with its own progress through
/// [`retry_observer`].
///
/// # Errors
/// The HTTP client cannot be built (a bad CA bundle or proxy setting).
pub fn client_showing_retries(
    settings: &Settings,
    printer: &Printer,
    mode: ProgressMode,
) -> miette::Result<HubClient> {
    let lines = Progress::new(printer, mode);
    Ok(HubClient::new(&settings.client_config(printer))
        .map_err(client_error)?
        .with_retry_observer(retry_observer(&lines, &settings.endpoint)))
}

/// Shows the Hub client's retries of metadata requests as status lines: one
/// per retry round (kernels are listed in parallel and fail together), naming
/// the endpoint.
pub fn retry_observer(
    progress: &Progress,
    endpoint: &str,
) -> impl Fn(&kernels_hub::RetryNotice) + Send + Sync + 'static {
    let progress = progress.clone();
    let endpoint = kernels_types::text::redact(endpoint).into_owned();
    let shown = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    move |notice| {
        use std::sync::atomic::Ordering;
        if shown.fetch_max(notice.attempt, Ordering::Relaxed) >= notice.attempt {
            return;
        }
        progress.line(&crate::cli::progress::retry_line(&endpoint, notice));
    }
}
