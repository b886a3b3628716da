//! The Hugging Face Hub HTTP client of `kernels`: one client ([`HubClient`]), one
//! retry and deadline policy ([`RetryPolicy`]) used by every request, and the
//! errors a Hub exchange can end with ([`HubError`]). The JSON shapes live in
//! [`kernels_types::wire`], shared with `kernels serve`.

pub mod auth;
pub mod client;
pub mod error;
pub mod ratelimit;
pub mod retry;

pub use auth::TokenSource;
pub use client::{ClientConfig, HubClient, NetworkConfig, RetryNotice};
pub use error::{HubError, Target};
/// The Hub API's JSON shapes (re-exported from [`kernels_types::wire`]).
pub use kernels_types::wire as types;
pub use ratelimit::{EventSink, HubEvent, RateLimit};
pub use retry::RetryPolicy;
