//! The Hugging Face Hub HTTP client of `kernels`: one client ([`HubClient`]) for
//! the API calls and the file downloads ([`HubClient::download_blob`], into a
//! [`BlobSink`] the caller provides), one retry and deadline policy
//! ([`RetryPolicy`], [`RetryState`], [`RetryNotice`]) used by every request,
//! and the errors a Hub exchange can end with ([`HubError`], [`TransportError`]).
//! No type of the HTTP library is part of its API. The JSON shapes live in
//! [`kernels_types::wire`], shared with `kernels serve`.

pub mod auth;
pub mod client;
pub mod download;
pub mod error;
mod fallback;
pub mod ratelimit;
pub mod retry;
pub mod transport;

pub use auth::TokenSource;
pub use client::{ClientConfig, HubClient, NetworkConfig};
pub use download::{BlobError, BlobRequest, BlobSink, BlobWrite, Downloaded};
pub use error::{HubError, Target};
/// The Hub API's JSON shapes (re-exported from [`kernels_types::wire`]).
pub use kernels_types::wire as types;
pub use ratelimit::{EventSink, HubEvent, RateLimit};
pub use retry::{RetryNotice, RetryPolicy, RetryState};
pub use transport::{TransportError, TransportKind};
