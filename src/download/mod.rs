//! TODO(owner): download.
