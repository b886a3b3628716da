//! Integration tests for `kernels serve`.
