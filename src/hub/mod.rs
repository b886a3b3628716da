//! Hugging Face Hub HTTP API: wire types shared by the client ([`client`]) and
//! by `kernels serve`, and the client itself.

pub mod client;
pub mod error;
pub mod retry;
pub mod types;

pub use client::HubClient;
pub use error::{HubError, Target};
pub use retry::RetryPolicy;
