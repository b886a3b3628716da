//! Hugging Face Hub HTTP API: wire types shared by the client ([`client`]) and
//! by `kernels serve`, and the client itself.

pub mod types;
