//! Integration tests for `kernels download`.
