//! Integration tests for `kernels lock`.
